/* The Arm CMSDK APB UART (the UARTs of the MPS2/MPS3 boards and their QEMU models): transmit only,
 * no interrupts, as a mf_trace_uart's write function. */
#ifndef MF_CMSDK_UART_H
#define MF_CMSDK_UART_H

#include <stddef.h>
#include <stdint.h>

/* Enables the transmitter of the UART at `base` with baud rate divider `bauddiv` (>= 16: the
 * peripheral clock / the baud rate). */
void mf_cmsdk_uart_init(uintptr_t base, uint32_t bauddiv);

/* mf_uart_write_fn: `uart` is the base address; takes bytes while the transmit buffer has room. */
size_t mf_cmsdk_uart_write(void *uart, const uint8_t *bytes, size_t n);

#endif /* MF_CMSDK_UART_H */
