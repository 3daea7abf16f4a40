/* Executed-instruction counter for QEMU's emulated Cortex-M boards.
 *
 * Under `qemu-system-arm -icount shift=0` the virtual clock advances 1 ns per executed
 * instruction. SysTick on the processor clock then ticks every 1e9 / BOARD_HZ
 * instructions, and its interrupt extends the 24-bit down counter to 64 bits. Counts are
 * exact and repeatable to one SysTick period (40 instructions at 25 MHz). */
#ifndef MCUFORGE_FW_ICOUNT_H
#define MCUFORGE_FW_ICOUNT_H

#include <stdint.h>

void icount_start(void);
/* Instructions executed since icount_start(), in multiples of one SysTick period. */
uint64_t icount_now(void);

#endif
