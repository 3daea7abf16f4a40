/* CMSDK APB UART (Arm DDI0479): DATA, STATE (bit 0 TX buffer full), CTRL (bit 0 TX enable),
 * INTSTATUS, BAUDDIV. */
#include "cmsdk_uart.h"

typedef struct {
    volatile uint32_t data;
    volatile uint32_t state;
    volatile uint32_t ctrl;
    volatile uint32_t intstatus;
    volatile uint32_t bauddiv;
} cmsdk_uart_regs;

#define STATE_TX_FULL 1u
#define CTRL_TX_ENABLE 1u

void mf_cmsdk_uart_init(uintptr_t base, uint32_t bauddiv) {
    cmsdk_uart_regs *r = (cmsdk_uart_regs *)base;
    r->bauddiv = bauddiv < 16u ? 16u : bauddiv;
    r->ctrl = CTRL_TX_ENABLE; /* no interrupts: the trace sink polls */
}

size_t mf_cmsdk_uart_write(void *uart, const uint8_t *bytes, size_t n) {
    cmsdk_uart_regs *r = (cmsdk_uart_regs *)uart;
    size_t sent = 0;
    while (sent < n && !(r->state & STATE_TX_FULL)) r->data = bytes[sent++];
    return sent;
}
