#include "icount.h"

/* Instructions per SysTick tick = 1e9 / BOARD_HZ = ICOUNT_MUL / 2^ICOUNT_SHIFT (40 at 25 MHz,
 * 50 at 20 MHz, 125/4 at 32 MHz): a multiply and a shift, not a 64-bit division, so that reading
 * the time costs few instructions of the op being timed. */
#if !defined(ICOUNT_MUL) || !defined(ICOUNT_SHIFT)
#error "ICOUNT_MUL and ICOUNT_SHIFT (1e9 / the board's SysTick clock) must be defined per board"
#endif

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SCB_ICSR (*(volatile uint32_t *)0xE000ED04u)
#define ICSR_PENDSTSET (1u << 26)
#define SYST_RELOAD 0xFFFFFFu
#define SYST_PERIOD (SYST_RELOAD + 1u)

static volatile uint32_t systick_wraps;

void SysTick_Handler(void) { systick_wraps++; }

void icount_start(void) {
    SYST_CSR = 0;
    SYST_RVR = SYST_RELOAD;
    SYST_CVR = 0; /* any write clears the counter; it reloads on the next tick */
    SYST_CSR = 7; /* enable, interrupt on wrap, processor clock */
    while (SYST_CVR == 0) {}
    systick_wraps = 0;
}

static uint64_t ticks(void) {
    uint32_t wraps, value, pending;
    do {
        wraps = systick_wraps;
        value = SYST_CVR;
        pending = SCB_ICSR & ICSR_PENDSTSET;
    } while (wraps != systick_wraps);
    /* A wrap whose interrupt is still pending (possible on hardware with interrupts masked):
     * the counter has reloaded, so a value in the upper half belongs to the next period. */
    if (pending && value > SYST_RELOAD / 2u) wraps++;
    return (uint64_t)wraps * SYST_PERIOD + (SYST_RELOAD - value);
}

uint64_t icount_now(void) {
    /* Rounded down at 32 MHz (31.25 per tick); overflows only after hours of virtual time. */
    return (ticks() * (uint64_t)ICOUNT_MUL) >> ICOUNT_SHIFT;
}
