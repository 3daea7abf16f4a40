/* Timing sources (mf_timer.h). Board support, not the runtime: it owns SysTick and the DWT. */
#include "mf_timer.h"

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SCB_ICSR (*(volatile uint32_t *)0xE000ED04u)
#define ICSR_PENDSTSET (1u << 26)
#define SYST_RELOAD 0xFFFFFFu
#define SYST_PERIOD (SYST_RELOAD + 1u)

#define DEMCR (*(volatile uint32_t *)0xE000EDFCu)
#define DEMCR_TRCENA (1u << 24)
#define DWT_CTRL (*(volatile uint32_t *)0xE0001000u)
#define DWT_CTRL_CYCCNTENA 1u
#define DWT_CTRL_NOCYCCNT (1u << 25)
#define DWT_CYCCNT (*(volatile uint32_t *)0xE0001004u)

static volatile uint32_t systick_wraps;

void SysTick_Handler(void);
void SysTick_Handler(void) { systick_wraps++; }

void mf_systick_start(void) {
    SYST_CSR = 0;
    SYST_RVR = SYST_RELOAD;
    SYST_CVR = 0; /* any write clears the counter; it reloads on the next tick */
    SYST_CSR = 7; /* enable, interrupt on wrap, processor clock */
    while (SYST_CVR == 0) {}
    systick_wraps = 0;
}

uint64_t mf_systick_ticks(void) {
    uint32_t wraps, value, pending;
    do {
        wraps = systick_wraps;
        value = SYST_CVR;
        pending = SCB_ICSR & ICSR_PENDSTSET;
    } while (wraps != systick_wraps);
    /* A wrap whose interrupt is still pending (possible with interrupts masked): the counter has
     * reloaded, so a value in the upper half belongs to the next period. */
    if (pending && value > SYST_RELOAD / 2u) wraps++;
    return (uint64_t)wraps * SYST_PERIOD + (SYST_RELOAD - value);
}

#if defined(ICOUNT_MUL) && defined(ICOUNT_SHIFT)
/* Instructions per SysTick tick = 1e9 / the SysTick clock = ICOUNT_MUL / 2^ICOUNT_SHIFT (40 at
 * 25 MHz, 50 at 20 MHz, 125/4 at 32 MHz): a multiply and a shift, not a 64-bit division, so that
 * reading the time costs few instructions of the op being timed. */
uint64_t mf_icount_now(void) { return (mf_systick_ticks() * (uint64_t)ICOUNT_MUL) >> ICOUNT_SHIFT; }
#endif

#if MF_TIMER == MF_TIMER_DWT
static uint32_t dwt_last;
static uint64_t dwt_high;
#endif

int mf_timer_start(void) {
#if MF_TIMER == MF_TIMER_DWT
    DEMCR |= DEMCR_TRCENA;
    if (DWT_CTRL & DWT_CTRL_NOCYCCNT) return -1;
    DWT_CYCCNT = 0;
    DWT_CTRL |= DWT_CTRL_CYCCNTENA;
    dwt_last = 0;
    dwt_high = 0;
    return 0;
#elif MF_TIMER == MF_TIMER_SYSTICK || MF_TIMER == MF_TIMER_ICOUNT
    mf_systick_start();
    return 0;
#else
#error "MF_TIMER must be MF_TIMER_DWT, MF_TIMER_SYSTICK or MF_TIMER_ICOUNT"
#endif
}

uint64_t mf_timer_now(void *user) {
    (void)user;
#if MF_TIMER == MF_TIMER_DWT
    const uint32_t now = DWT_CYCCNT;
    if (now < dwt_last) dwt_high += 1ull << 32; /* wrapped since the last read */
    dwt_last = now;
    return dwt_high | now;
#elif MF_TIMER == MF_TIMER_SYSTICK
    return mf_systick_ticks();
#else
#if !defined(ICOUNT_MUL) || !defined(ICOUNT_SHIFT)
#error "MF_TIMER_ICOUNT needs ICOUNT_MUL and ICOUNT_SHIFT (1e9 / the board's SysTick clock)"
#endif
    return mf_icount_now();
#endif
}

uint8_t mf_timer_unit(void) { return MF_TIMER_UNIT; }
