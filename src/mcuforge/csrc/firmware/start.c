/* Start-up for the QEMU MPS2/MPS3 boards: vector table, .data/.bss set-up, FPU enable, main().
 *
 * One source for both users of it:
 * - the test firmware (mcuforge.firmware, built with -DMF_TEST_FIRMWARE=1): a fault or an unexpected
 *   interrupt reports itself over the firmware's semihosting and ends the emulation with a distinct exit
 *   status, so the host sees a clear error instead of a timeout; the free stack is filled to measure its
 *   high-water mark;
 * - an exported C project (mcuforge export-c, board/start.c): newlib's semihosting (printf reaches the
 *   host), faults spin. On a real board, use the vendor's start-up file and linker script instead. */
#include <stdint.h>

#ifdef MF_TEST_FIRMWARE
#include "firmware.h"
#include "semihost.h"
#endif

extern int main(void);
extern uint32_t _estack, _sidata, _sdata, _edata, _sbss, _ebss;

void Reset_Handler(void);

#ifdef MF_TEST_FIRMWARE
extern uint32_t _sstack;
void SysTick_Handler(void); /* the firmware's timer (board/timer.c) */

static void report_fault(const char *what) {
    sh_puts("mcuforge firmware: ");
    sh_puts(what);
    sh_puts("\n");
    sh_exit(FW_EXIT_FAULT);
}

static void HardFault_Handler(void) { report_fault("HardFault"); }
static void MemManage_Handler(void) { report_fault("MemManage fault"); }
static void BusFault_Handler(void) { report_fault("BusFault"); }
static void UsageFault_Handler(void) { report_fault("UsageFault (stack overflow past the limit, or an undefined instruction)"); }
static void Default_Handler(void) { report_fault("unexpected interrupt"); }
#else
extern void exit(int);
extern void initialise_monitor_handles(void);
void Default_Handler(void);
void Default_Handler(void) { for (;;) {} }
/* The SysTick timer of a TRACE=uart TIMER=systick|icount build (mcuforge/board/timer.c) defines it. */
void SysTick_Handler(void) __attribute__((weak, alias("Default_Handler")));
#define HardFault_Handler Default_Handler
#define MemManage_Handler Default_Handler
#define BusFault_Handler Default_Handler
#define UsageFault_Handler Default_Handler
#endif

__attribute__((section(".isr_vector"), used))
static const void *const vectors[16] = {
    &_estack, Reset_Handler, Default_Handler, HardFault_Handler, MemManage_Handler, BusFault_Handler,
    UsageFault_Handler, 0, 0, 0, 0, Default_Handler, Default_Handler, 0, Default_Handler, SysTick_Handler,
};

void Reset_Handler(void) {
    uint32_t *src = &_sidata, *dst = &_sdata;
    while (dst < &_edata) *dst++ = *src++;
    for (dst = &_sbss; dst < &_ebss;) *dst++ = 0;
#if defined(__ARM_FP) || defined(__ARM_FEATURE_MVE)
    *(volatile uint32_t *)0xE000ED88u |= (0xFu << 20); /* CPACR: CP10, CP11 full access */
    __asm__ volatile("dsb\n isb");
#endif
#ifdef MF_TEST_FIRMWARE
    /* Bus, memory and usage faults get their own handlers (and messages). */
    *(volatile uint32_t *)0xE000ED24u |= (7u << 16); /* SHCSR: MEMFAULTENA, BUSFAULTENA, USGFAULTENA */
#if defined(__ARM_ARCH_8M_MAIN__) || defined(__ARM_ARCH_8_1M_MAIN__)
    /* Armv8-M checks the stack limit in hardware: an overflow faults instead of corrupting .bss. */
    __asm__ volatile("msr msplim, %0" : : "r"(&_sstack));
#endif
    /* Fill the free stack (all of it below this frame) to measure its high-water mark later. */
    uint32_t sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    for (dst = &_sstack; (uint32_t)dst < sp - 64u;) *dst++ = FW_STACK_FILL;
    sh_exit(main());
#else
    initialise_monitor_handles();
    exit(main());
#endif
}

#ifndef MF_TEST_FIRMWARE
/* newlib's init/fini hooks, unused here */
void _init(void) {}
void _fini(void) {}
#endif
