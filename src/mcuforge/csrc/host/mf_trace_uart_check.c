/*
 * mf_trace_uart_check: the UART trace sink (board/trace_uart.c) on the host, with a fake UART that
 * is as slow as asked, for the sanitizer tests (host only).
 *
 *     mf_trace_uart_check PROGRAM OUT RING_BYTES TAKE EVERY RUNS FULL DEAD_AFTER PATIENCE
 *
 * Runs PROGRAM RUNS times (zero inputs) traced through an mf_trace_uart with a ring of RING_BYTES.
 * The fake UART takes up to TAKE bytes at every EVERY-th poll (a FIFO that empties between polls;
 * the sink polls at each record), and none at all once DEAD_AFTER bytes went out (0: never dies). OUT receives the bytes the UART took. Prints
 * one line: "records=<written> dropped=<records> sent=<bytes> lost=<bytes> failed=<0|1>
 * end=<mf_trace_end status> flush=<0|-1> invoke=<status>". Exit status 0 unless an error outside
 * the sink (reading the program, loading it).
 */
#define _POSIX_C_SOURCE 200112L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcuforge.h"
#include "mf_host_file.h"
#include "mf_trace_uart.h"

uint64_t mf_host_now_ns(void *user);

typedef struct {
    unsigned char *out;
    size_t sent, capacity;
    unsigned long take, every, polls, dead_after;
} fake_uart;

/* Up to `take` bytes per `every` calls, none after `dead_after` bytes: a UART slower than the ops. */
static size_t fake_uart_write(void *uart, const uint8_t *bytes, size_t n) {
    fake_uart *f = (fake_uart *)uart;
    if (n == 0 || (f->dead_after && f->sent >= f->dead_after)) return 0;
    if (++f->polls % f->every != 0) return 0;
    size_t k = n < f->take ? n : f->take;
    if (f->dead_after && f->sent + k > f->dead_after) k = f->dead_after - f->sent;
    while (f->sent + k > f->capacity) {
        size_t grown = f->capacity ? 2 * f->capacity : 4096;
        unsigned char *p = realloc(f->out, grown);
        if (p == NULL) return 0;
        f->out = p;
        f->capacity = grown;
    }
    memcpy(f->out + f->sent, bytes, k);
    f->sent += k;
    return k;
}

int main(int argc, char **argv) {
    if (argc != 10) {
        fprintf(stderr, "usage: mf_trace_uart_check PROGRAM OUT RING_BYTES TAKE EVERY RUNS FULL DEAD_AFTER "
                        "PATIENCE\n");
        return 100;
    }
    size_t size = 0;
    unsigned char *data = read_file(argv[1], &size);
    if (!data || size == 0) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        return 101;
    }
    const uint32_t ring_bytes = (uint32_t)strtoul(argv[3], NULL, 10);
    fake_uart uart = {NULL, 0, 0, strtoul(argv[4], NULL, 10), strtoul(argv[5], NULL, 10), 0,
                      strtoul(argv[8], NULL, 10)};
    const unsigned long runs = strtoul(argv[6], NULL, 10);
    if (uart.every == 0) uart.every = 1;
    if (uart.take == 0) uart.take = 1;

    mf_program prog;
    mf_status s = mf_program_load(&prog, data, size);
    if (s != MF_OK) {
        fprintf(stderr, "load: %s\n", mf_status_name(s));
        return 102;
    }
    size_t arena_size = mf_program_arena_bytes(&prog);
    unsigned char *arena = alloc16(arena_size);
    if (arena == NULL) return 103;
    /* The ring exactly as large as asked: ASan reports any byte written past it. */
    uint8_t *ring = malloc(ring_bytes ? ring_bytes : 1);
    mf_context ctx;
    s = mf_init(&ctx, &prog, arena, arena_size);
    for (uint32_t i = 0; s == MF_OK && i < mf_program_input_count(&prog); i++) {
        mf_tensor_info info;
        mf_program_input(&prog, i, &info);
        unsigned char *zeros = calloc(info.nbytes ? info.nbytes : 1, 1);
        s = mf_set_input(&ctx, i, zeros, info.nbytes);
        free(zeros);
    }
    if (s != MF_OK || ring == NULL) {
        fprintf(stderr, "init: %s\n", mf_status_name(s));
        return 104;
    }

    static mf_trace_uart sink;
    mf_trace_uart_init(&sink, fake_uart_write, &uart, ring, ring_bytes, mf_host_now_ns, 0,
                       (uint8_t)strtoul(argv[7], NULL, 10));
    sink.patience = (uint32_t)strtoul(argv[9], NULL, 10);
    mf_status begin = mf_trace_begin(&sink.sink, &ctx);
    mf_status invoke = MF_OK;
    for (unsigned long r = 0; begin == MF_OK && r < runs && invoke == MF_OK; r++) invoke = mf_invoke(&ctx, &sink.sink);
    mf_status end = begin == MF_OK ? mf_trace_end(&sink.sink) : begin;
    int flush = mf_trace_uart_flush(&sink);

    FILE *out = fopen(argv[2], "wb");
    if (out) {
        if (uart.sent) fwrite(uart.out, 1, uart.sent, out);
        fclose(out);
    }
    printf("records=%u dropped=%u sent=%u lost=%u failed=%u end=%d flush=%d invoke=%d\n",
           (unsigned)sink.sink.record_count, (unsigned)sink.sink.dropped_records, (unsigned)sink.bytes_sent,
           (unsigned)sink.bytes_lost, (unsigned)sink.failed, (int)end, flush, (int)invoke);
    free(uart.out);
    free(ring);
    free(arena);
    free(data);
    return 0;
}
