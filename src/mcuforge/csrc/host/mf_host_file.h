/* Host-only helpers of the command-line drivers (mf_run.c, mf_trace_uart_check.c): 16-byte aligned
 * buffers, as a program placed in flash would be, and whole files read into them. */
#ifndef MF_HOST_FILE_H
#define MF_HOST_FILE_H

#include <stdio.h>
#include <stdlib.h>

static unsigned char *alloc16(size_t n) {
    void *p = NULL;
    return posix_memalign(&p, 16, n ? n : 16) == 0 ? (unsigned char *)p : NULL;
}

static unsigned char *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = alloc16((size_t)(n > 0 ? n : 0));
    if (buf && n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *size = (size_t)(n > 0 ? n : 0);
    return buf;
}

#endif
