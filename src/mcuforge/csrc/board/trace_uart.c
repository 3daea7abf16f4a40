/* The UART trace sink (mf_trace_uart.h): a ring buffer between the trace records and a UART. */
#include "mf_trace_uart.h"

#include <string.h>

static uint32_t used(const mf_trace_uart *u) { return u->head - u->tail; }

uint32_t mf_trace_uart_poll(mf_trace_uart *u) {
    uint32_t moved = 0;
    while (used(u) > 0 && !u->failed) {
        const uint32_t at = u->tail % u->capacity;
        uint32_t run = u->capacity - at; /* contiguous bytes up to the end of the ring */
        if (run > used(u)) run = used(u);
        const size_t took = u->uart_write(u->uart, u->ring + at, run);
        const uint32_t n = took < run ? (uint32_t)took : run;
        u->tail += n;
        u->bytes_sent += n;
        moved += n;
        if (n < run) break; /* the UART is full for now */
    }
    return moved;
}

/* Waits for the UART to take at least one byte; gives up (failed) after `patience` idle polls. */
static int wait_for_uart(mf_trace_uart *u) {
    for (uint32_t idle = 0; !u->failed; idle++) {
        if (mf_trace_uart_poll(u) > 0) return 1;
        if (idle >= u->patience) u->failed = 1;
    }
    return 0;
}

static void uart_sink_write(void *user, const uint8_t *bytes, size_t n) {
    mf_trace_uart *u = (mf_trace_uart *)user;
    while (n > 0) {
        uint32_t room = u->capacity - used(u);
        if (room == 0 && (u->failed || !wait_for_uart(u))) {
            u->bytes_lost += (uint32_t)n;
            return;
        }
        room = u->capacity - used(u);
        const uint32_t at = u->head % u->capacity;
        uint32_t take = u->capacity - at; /* contiguous room up to the end of the ring */
        if (take > room) take = room;
        if (take > n) take = (uint32_t)n;
        memcpy(u->ring + at, bytes, take);
        u->head += take;
        bytes += take;
        n -= take;
    }
    mf_trace_uart_poll(u); /* out as it comes */
}

/* Room for nbytes now (wait 0), or go ahead and let the writes wait (wait 1). */
static int uart_sink_reserve(void *user, size_t nbytes, int wait) {
    mf_trace_uart *u = (mf_trace_uart *)user;
    if (u->failed) return 0;
    mf_trace_uart_poll(u);
    if (wait) return 1;
    return nbytes <= (size_t)(u->capacity - used(u));
}

void mf_trace_uart_init(mf_trace_uart *u, mf_uart_write_fn write, void *uart, uint8_t *ring,
                        uint32_t capacity, uint64_t (*now)(void *user), uint8_t time_unit, uint8_t full) {
    memset(u, 0, sizeof *u);
    u->uart_write = write;
    u->uart = uart;
    u->ring = ring;
    u->capacity = capacity;
    u->patience = MF_TRACE_UART_PATIENCE;
    u->sink.write = uart_sink_write;
    u->sink.reserve = uart_sink_reserve;
    u->sink.now = now;
    u->sink.user = u;
    u->sink.time_unit = time_unit;
    u->sink.full = full;
}

int mf_trace_uart_flush(mf_trace_uart *u) {
    while (used(u) > 0) {
        if (!wait_for_uart(u)) return -1;
    }
    return u->failed ? -1 : 0;
}
