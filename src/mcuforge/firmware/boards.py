"""The emulated boards: one QEMU machine per Cortex-M target, with its memory map and clock.

Addresses and clocks were checked on QEMU 7.2 against its machine models (mps2-an385/386/500/505, mps3-an547): a wrong
address hangs QEMU silently, so these are facts, not guesses.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..targets import get_target


@dataclass(frozen=True)
class Board:
    target: str
    machine: str  # qemu-system-arm -M
    code: int  # where the firmware's code and read-only data live
    code_bytes: int
    ram: int  # .data, .bss and the stack
    ram_bytes: int
    heap: int  # where the firmware reads the program, the inputs and the arena into at run time
    heap_bytes: int
    clock_hz: int  # the processor clock that SysTick counts (CLKSOURCE = 1)
    uart: int  # UART0, a CMSDK APB UART (QEMU -serial), at the address the firmware reaches it by
    # RAM regions a program split across regions (mcuforge.regions) may use on this board, by the names of its
    # preset: (name, address, bytes); address 0: the firmware's heap (the memory it reads the program into)
    regions: tuple[tuple[str, int, int], ...] = ()

    @property
    def instructions_per_tick(self) -> float:
        """With ``-icount shift=0`` one instruction is 1 ns of virtual time: one SysTick period is
        this many instructions, which is the resolution of every measured count."""
        return 1e9 / self.clock_hz


MB = 1 << 20
KB = 1 << 10
STACK_BYTES = 64 * KB  # the firmware's stack: measured by its high-water mark, never assumed

# RAM: .data/.bss/stack in the first 1 MB of the board's SRAM; the rest (or the M55's DDR, its SRAM
# being only 4 MB) holds the program, the inputs, the arena and the trace buffer.
BOARDS: dict[str, Board] = {
    b.target: b
    for b in (
        Board("cortex-m3", "mps2-an385", 0x00000000, 4 * MB, 0x21000000, 1 * MB, 0x21100000, 15 * MB, 25_000_000,
              0x40004000),
        # AN386's SSRAM2/3 (4 MB at 0x20000000) is free of the firmware: a second RAM region.
        Board("cortex-m4", "mps2-an386", 0x00000000, 4 * MB, 0x21000000, 1 * MB, 0x21100000, 15 * MB, 25_000_000,
              0x40004000, (("SSRAM23", 0x20000000, 4 * MB), ("PSRAM", 0, 15 * MB))),
        Board("cortex-m7", "mps2-an500", 0x00000000, 4 * MB, 0x20000000, 1 * MB, 0x20100000, 3 * MB, 25_000_000,
              0x40004000),
        # The M33 board boots secure: code, RAM and UART0 at their secure aliases (UART0 is 0x40200000).
        Board("cortex-m33", "mps2-an505", 0x10000000, 4 * MB, 0x38000000, 1 * MB, 0x38100000, 3 * MB, 20_000_000,
              0x50200000),
        # The M55's ITCM is 512 KB: only the firmware's code goes there; models go to the DDR. It boots
        # secure too: UART0 (0x49303000) at its secure alias.
        # Its DTCM, SRAM and the ISRAM past the firmware's first 1 MB are free of the firmware: RAM regions.
        Board("cortex-m55", "mps3-an547", 0x00000000, 512 * KB, 0x21000000, 1 * MB, 0x60000000, 64 * MB, 32_000_000,
              0x59303000, (("DTCM", 0x20000000, 512 * KB), ("SRAM", 0x01000000, 2 * MB),
                           ("ISRAM", 0x21100000, 3 * MB), ("DDR", 0, 64 * MB))),
    )
}


def get_board(target: str) -> Board:
    """The QEMU board that emulates ``target``; a clear error names the targets that have one."""
    get_target(target)  # unknown names get the targets module's message
    try:
        return BOARDS[target]
    except KeyError:
        raise ValueError(f"target {target!r} has no emulated board in QEMU; boards exist for: "
                         f"{', '.join(BOARDS)}") from None
