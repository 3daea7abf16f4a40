/* Timing sources for the trace (docs/trace.md, "Time"), one chosen at build time with -DMF_TIMER=:
 *
 *   MF_TIMER_DWT      the DWT cycle counter (CYCCNT): cycles, on the cores that have it (Cortex-M3,
 *                     M4, M7, M33, M55; the default there). Extended to 64 bits by the reads: read it
 *                     at least once per 2^32 cycles (the trace does, at every op).
 *   MF_TIMER_SYSTICK  SysTick on the processor clock: cycles, on every core (the default on M0/M0+,
 *                     which have no CYCCNT). Takes SysTick and its interrupt (SysTick_Handler).
 *   MF_TIMER_ICOUNT   executed instructions under QEMU -icount shift=0 (SysTick scaled by
 *                     ICOUNT_MUL / 2^ICOUNT_SHIFT = 1e9 / the SysTick clock; QEMU's CYCCNT reads 0).
 */
#ifndef MF_TIMER_H
#define MF_TIMER_H

#include <stdint.h>

#define MF_TIMER_DWT 1
#define MF_TIMER_SYSTICK 2
#define MF_TIMER_ICOUNT 3

#ifndef MF_TIMER
#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__) || defined(__ARM_ARCH_8M_MAIN__) || \
    defined(__ARM_ARCH_8_1M_MAIN__)
#define MF_TIMER MF_TIMER_DWT
#else
#define MF_TIMER MF_TIMER_SYSTICK
#endif
#endif

/* mf_trace_sink.time_unit codes. */
enum { MF_TIME_NS = 0, MF_TIME_CYCLES = 1, MF_TIME_INSTRUCTIONS = 2 };

#if MF_TIMER == MF_TIMER_ICOUNT
#define MF_TIMER_UNIT MF_TIME_INSTRUCTIONS
#else
#define MF_TIMER_UNIT MF_TIME_CYCLES
#endif

/* Starts the MF_TIMER source; 0, or -1 when the core has no such counter (DWT without CYCCNT). */
int mf_timer_start(void);
/* Its count since mf_timer_start (the signature of mf_trace_sink.now; `user` is not used). */
uint64_t mf_timer_now(void *user);
/* MF_TIMER_UNIT, for mf_trace_sink.time_unit. */
uint8_t mf_timer_unit(void);

/* SysTick as a 64-bit counter of processor clock ticks (the SYSTICK and ICOUNT sources). */
void mf_systick_start(void);
uint64_t mf_systick_ticks(void);
#if defined(ICOUNT_MUL) && defined(ICOUNT_SHIFT)
/* Instructions under QEMU -icount shift=0, in multiples of one SysTick period. */
uint64_t mf_icount_now(void);
#endif

#endif /* MF_TIMER_H */
