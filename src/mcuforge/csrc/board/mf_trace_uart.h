/* A trace sink for a UART (docs/trace.md, "Over a UART"): the stream goes out as it is written,
 * through a small ring buffer that absorbs the bursts of records between ops. When the UART is
 * slower than the ops and the ring has no room for an op's records, they are dropped, counted and
 * reported in the stream (a DROPPED record); run and stream records wait for room, bounded by
 * `patience`. Nothing here blocks forever or writes past the ring.
 *
 * Plug in a board's UART with one function: `write` hands it bytes and returns how many it took
 * now (0 when its transmit FIFO or holding register is full), without waiting.
 *
 *     static uint8_t ring[2048];
 *     static mf_trace_uart uart;
 *     mf_trace_uart_init(&uart, my_uart_write, NULL, ring, sizeof ring, mf_timer_now, mf_timer_unit(), 0);
 *     mf_trace_begin(&uart.sink, &ctx); mf_invoke(&ctx, &uart.sink); mf_trace_end(&uart.sink);
 *     mf_trace_uart_flush(&uart);  // uart.sink.dropped_records: records dropped
 *
 * Single context: the ring is filled and drained from the code that calls mf_invoke (at each
 * record), not from an interrupt. */
#ifndef MF_TRACE_UART_H
#define MF_TRACE_UART_H

#include <stddef.h>
#include <stdint.h>

#include "mcuforge.h"

/* Hands the UART up to n bytes; returns how many it took, without waiting. */
typedef size_t (*mf_uart_write_fn)(void *uart, const uint8_t *bytes, size_t n);

typedef struct {
    mf_trace_sink sink; /* give &sink to mf_trace_begin, mf_invoke and mf_trace_end */
    mf_uart_write_fn uart_write;
    void *uart;
    uint8_t *ring;
    uint32_t capacity;   /* ring bytes */
    uint32_t head, tail; /* bytes put into / taken out of the ring, free-running (used = head - tail) */
    uint32_t patience;   /* polls in a row that take no byte before a waiting write gives up */
    uint32_t bytes_sent; /* bytes the UART took */
    uint32_t bytes_lost; /* bytes of records cut when the UART stopped taking bytes (then failed) */
    uint32_t failed;     /* the UART took nothing for `patience` polls: the stream stops there */
} mf_trace_uart;

#define MF_TRACE_UART_PATIENCE 1000000u /* default: polls without progress before giving up */

/* `now(user)` is called with `u` as user. `capacity` must be at least 64 bytes (two op records and
 * a DROPPED record). */
void mf_trace_uart_init(mf_trace_uart *u, mf_uart_write_fn write, void *uart, uint8_t *ring,
                        uint32_t capacity, uint64_t (*now)(void *user), uint8_t time_unit, uint8_t full);

/* Moves what the UART takes now from the ring; returns the bytes moved. */
uint32_t mf_trace_uart_poll(mf_trace_uart *u);

/* Sends what is left in the ring, waiting (bounded by patience); 0 when all is out, -1 if failed. */
int mf_trace_uart_flush(mf_trace_uart *u);

#endif /* MF_TRACE_UART_H */
