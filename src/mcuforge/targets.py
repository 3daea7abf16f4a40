"""Cortex-M targets: the features that pick a kernel implementation, the QEMU board of each, and the
memory of the boards a program for it may have to fit (``mcuforge.fit``)."""

from __future__ import annotations

from dataclasses import dataclass

KB = 1 << 10
MB = 1 << 20


@dataclass(frozen=True)
class BoardMemory:
    """What one board offers a program: flash for the program file (its constants are read in place)
    and RAM for the arena. ``flash_bytes`` None: the program is read into the same RAM as the arena
    (the QEMU test firmware loads it over semihosting), so the two share ``ram_bytes``."""

    name: str
    flash_bytes: int | None
    ram_bytes: int
    note: str = ""


@dataclass(frozen=True)
class Target:
    name: str
    id: int  # stable number stored in the program file
    isa: str  # "scalar" | "dsp" | "mve": which optimized kernel path the C runtime uses
    fpu: str  # "none" | "sp" | "dp"
    gcc_flags: tuple[str, ...]
    qemu_machine: str | None  # None: no emulated board in QEMU
    # Boards of this CPU, the reference first: a compiled program must fit it unless the caller names its
    # own part's flash and RAM (compile(flash_bytes=, ram_bytes=)). A CPU spans many parts; these are
    # named boards, not "the" Cortex-M4.
    boards: tuple[BoardMemory, ...] = ()

    @property
    def reference_board(self) -> BoardMemory:
        return self.boards[0]

    @property
    def has_dsp(self) -> bool:
        return self.isa in ("dsp", "mve")

    @property
    def kernel_path(self) -> str:
        """The C kernels this core's build runs: "mve", "dsp", "scalar" (the optimized scalar paths of
        Thumb-2 cores without DSP: csrc/kernels/mf_scalar.h) or "portable" (ARMv6-M)."""
        if self.isa != "scalar":
            return self.isa
        return "portable" if "-mcpu=cortex-m0plus" in self.gcc_flags else "scalar"

    @property
    def has_mve(self) -> bool:
        return self.isa == "mve"


ISA_IDS = {"scalar": 0, "dsp": 1, "mve": 2}

# The QEMU boards' RAM is what the test firmware gives the program, inputs, arena and trace buffer
# (its HEAP region, firmware/boards.py: a test keeps the two equal); the parts' figures are their datasheets'
# on-chip flash and SRAM.
_RP2040 = BoardMemory("Raspberry Pi Pico (RP2040)", 2 * MB, 264 * KB,
                      "external QSPI flash; the RP2040 takes up to 16 MB")
_STM32G0B1 = BoardMemory("STM32G0B1RE", 512 * KB, 144 * KB)
_STM32F207 = BoardMemory("STM32F207ZG", 1 * MB, 128 * KB)
_STM32F429 = BoardMemory("STM32F429ZI (Nucleo-F429ZI)", 2 * MB, 256 * KB, "192 KB SRAM + 64 KB CCM")
_STM32H743 = BoardMemory("STM32H743ZI (Nucleo-H743ZI2)", 2 * MB, 1 * MB, "SRAM over several domains")
_NRF5340 = BoardMemory("nRF5340 (application core)", 1 * MB, 512 * KB)
_ALIF_E3 = BoardMemory("Alif Ensemble E3", 5632 * KB, 13824 * KB, "MRAM as flash; SRAM across the chip")
_RA8M1 = BoardMemory("Renesas RA8M1", 2 * MB, 1 * MB)


def _qemu(machine: str, heap_bytes: int) -> BoardMemory:
    return BoardMemory(f"QEMU {machine}", None, heap_bytes, "the test firmware reads the program into RAM")


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("cortex-m0plus", 1, "scalar", "none", ("-mcpu=cortex-m0plus", "-mfloat-abi=soft"), None,
               (_RP2040, _STM32G0B1)),
        Target("cortex-m3", 2, "scalar", "none", ("-mcpu=cortex-m3", "-mfloat-abi=soft"), "mps2-an385",
               (_qemu("mps2-an385", 15 * MB), _STM32F207)),
        Target("cortex-m4", 3, "dsp", "sp",
               ("-mcpu=cortex-m4", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"), "mps2-an386",
               (_qemu("mps2-an386", 15 * MB), _STM32F429)),
        Target("cortex-m7", 4, "dsp", "dp",
               ("-mcpu=cortex-m7", "-mfloat-abi=hard", "-mfpu=fpv5-d16"), "mps2-an500",
               (_qemu("mps2-an500", 3 * MB), _STM32H743)),
        Target("cortex-m33", 5, "dsp", "sp",
               ("-mcpu=cortex-m33", "-mfloat-abi=hard", "-mfpu=fpv5-sp-d16"), "mps2-an505",
               (_qemu("mps2-an505", 3 * MB), _NRF5340)),
        Target("cortex-m55", 6, "mve", "sp", ("-mcpu=cortex-m55", "-mfloat-abi=hard"), "mps3-an547",
               (_qemu("mps3-an547", 64 * MB), _ALIF_E3)),
        Target("cortex-m85", 7, "mve", "dp", ("-mcpu=cortex-m85", "-mfloat-abi=hard"), None, (_RA8M1,)),
    )
}

TARGET_BY_ID = {t.id: t for t in TARGETS.values()}


def get_target(name: str) -> Target:
    """The target called ``name``; a clear error lists the known ones."""
    try:
        return TARGETS[name]
    except KeyError:
        raise ValueError(f"unknown target {name!r}; known targets: {', '.join(TARGETS)}") from None
