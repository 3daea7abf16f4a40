/* Start-up for the QEMU MPS2/MPS3 boards: vector table, .data/.bss set-up, FPU enable, main().
 * A fault or an unexpected interrupt reports itself over semihosting and ends the emulation
 * with a distinct exit status, so the host sees a clear error instead of a timeout. */
#include <stdint.h>

#include "firmware.h"
#include "semihost.h"

extern int main(void);
extern uint32_t _sstack, _estack, _sidata, _sdata, _edata, _sbss, _ebss;

void Reset_Handler(void);
void SysTick_Handler(void);

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
    /* Bus, memory and usage faults get their own handlers (and messages). */
    *(volatile uint32_t *)0xE000ED24u |= (7u << 16); /* SHCSR: MEMFAULTENA, BUSFAULTENA, USGFAULTENA */
#if defined(__ARM_ARCH_8M_MAIN__) || defined(__ARM_ARCH_8_1M_MAIN__)
    /* Armv8-M checks the stack limit in hardware: an overflow faults instead of corrupting .bss. */
    __asm__ volatile("msr msplim, %0" : : "r"(&_sstack));
#endif
    /* Fill the free stack (all of it below this frame) to measure its high-water mark later. */
    extern uint32_t _sstack;
    uint32_t sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    for (dst = &_sstack; (uint32_t)dst < sp - 64u;) *dst++ = FW_STACK_FILL;
    sh_exit(main());
}
