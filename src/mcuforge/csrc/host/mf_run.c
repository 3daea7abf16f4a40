/*
 * mf_run: run a program file from the command line (host only; used by the sanitizer tests).
 *
 *     mf_run PROGRAM OUTPUT [INPUT...]
 *
 * Each INPUT file holds one graph input's bytes (program dtype and layout); OUTPUT receives all
 * graph outputs' bytes, concatenated. Exit status: the mf_status (0 ok); its name and the failing
 * op go to stderr.
 */
#define _POSIX_C_SOURCE 200112L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcuforge.h"
#include "mf_host_file.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: mf_run PROGRAM OUTPUT [INPUT...]\n");
        return 100;
    }
    size_t size;
    unsigned char *data = read_file(argv[1], &size);
    if (!data) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        return 101;
    }
    mf_program prog;
    mf_status s = mf_program_load(&prog, data, size);
    if (s != MF_OK) {
        fprintf(stderr, "load: %s (op %d, tensor %d)\n", mf_status_name(s), (int)prog.error_op,
                (int)prog.error_tensor);
        free(data);
        return (int)s;
    }
    size_t arena_size = mf_program_arena_bytes(&prog);
    unsigned char *arena = alloc16(arena_size);
    mf_context ctx;
    s = mf_init(&ctx, &prog, arena, arena_size);
    for (uint32_t i = 0; s == MF_OK && i < mf_program_input_count(&prog); i++) {
        size_t n = 0;
        unsigned char *in = (int)(3 + i) < argc ? read_file(argv[3 + i], &n) : NULL;
        s = in ? mf_set_input(&ctx, i, in, n) : MF_ERR_ARG;
        free(in);
    }
    if (s == MF_OK) s = mf_invoke(&ctx, NULL);
    if (s == MF_OK) {
        FILE *out = fopen(argv[2], "wb");
        for (uint32_t i = 0; out && i < mf_program_output_count(&prog); i++) {
            size_t n;
            const void *bytes = mf_output(&ctx, i, &n);
            if (n) fwrite(bytes, 1, n, out);
        }
        if (out) fclose(out);
    } else {
        fprintf(stderr, "run: %s (op %d)\n", mf_status_name(s), (int)ctx.error_op);
    }
    free(arena);
    free(data);
    return (int)s;
}
