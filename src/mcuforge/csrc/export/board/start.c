/* Start-up for the QEMU MPS2/MPS3 board of this export: vector table, .data/.bss set-up, FPU
 * enable, newlib semihosting (printf reaches the host), then main(). On a real board, use the
 * vendor's start-up file and linker script instead. */
#include <stdint.h>

extern int main(void);
extern void exit(int);
extern void initialise_monitor_handles(void);
extern uint32_t _estack, _sidata, _sdata, _edata, _sbss, _ebss;

void Reset_Handler(void);
void Default_Handler(void);
void Default_Handler(void) { for (;;) {} }
/* The SysTick timer of a TRACE=uart TIMER=systick|icount build (mcuforge/board/timer.c) defines it. */
void SysTick_Handler(void) __attribute__((weak, alias("Default_Handler")));

__attribute__((section(".isr_vector"), used))
static const void *const vectors[16] = {
    &_estack, Reset_Handler, Default_Handler, Default_Handler, Default_Handler, Default_Handler,
    Default_Handler, 0, 0, 0, 0, Default_Handler, Default_Handler, 0, Default_Handler, SysTick_Handler,
};

void Reset_Handler(void) {
    uint32_t *src = &_sidata, *dst = &_sdata;
    while (dst < &_edata) *dst++ = *src++;
    for (dst = &_sbss; dst < &_ebss;) *dst++ = 0;
#if defined(__ARM_FP) || defined(__ARM_FEATURE_MVE)
    *(volatile uint32_t *)0xE000ED88u |= (0xFu << 20); /* CPACR: CP10, CP11 full access */
    __asm__ volatile("dsb\n isb");
#endif
    initialise_monitor_handles();
    exit(main());
}

/* newlib's init/fini hooks, unused here */
void _init(void) {}
void _fini(void) {}
