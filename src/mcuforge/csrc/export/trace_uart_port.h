/* The UART of the example's trace (trace_uart_port.c): one function to write, one to set it up. */
#ifndef TRACE_UART_PORT_H
#define TRACE_UART_PORT_H

#include <stddef.h>
#include <stdint.h>

void trace_uart_port_init(void);
/* An mf_uart_write_fn: takes up to n bytes now, returns how many; never waits. */
size_t trace_uart_port_write(void *uart, const uint8_t *bytes, size_t n);

#endif
