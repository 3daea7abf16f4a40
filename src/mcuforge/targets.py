"""Cortex-M targets: the features that pick a kernel implementation, and the QEMU board of each."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    name: str
    id: int  # stable number stored in the program file
    isa: str  # "scalar" | "dsp" | "mve": which optimized kernel path the C runtime uses
    fpu: str  # "none" | "sp" | "dp"
    gcc_flags: tuple[str, ...]
    qemu_machine: str | None  # None: no emulated board in QEMU

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

TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("cortex-m0plus", 1, "scalar", "none", ("-mcpu=cortex-m0plus", "-mfloat-abi=soft"), None),
        Target("cortex-m3", 2, "scalar", "none", ("-mcpu=cortex-m3", "-mfloat-abi=soft"), "mps2-an385"),
        Target("cortex-m4", 3, "dsp", "sp",
               ("-mcpu=cortex-m4", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"), "mps2-an386"),
        Target("cortex-m7", 4, "dsp", "dp",
               ("-mcpu=cortex-m7", "-mfloat-abi=hard", "-mfpu=fpv5-d16"), "mps2-an500"),
        Target("cortex-m33", 5, "dsp", "sp",
               ("-mcpu=cortex-m33", "-mfloat-abi=hard", "-mfpu=fpv5-sp-d16"), "mps2-an505"),
        Target("cortex-m55", 6, "mve", "sp", ("-mcpu=cortex-m55", "-mfloat-abi=hard"), "mps3-an547"),
        Target("cortex-m85", 7, "mve", "dp", ("-mcpu=cortex-m85", "-mfloat-abi=hard"), None),
    )
}

TARGET_BY_ID = {t.id: t for t in TARGETS.values()}


def get_target(name: str) -> Target:
    """The target called ``name``; a clear error lists the known ones."""
    try:
        return TARGETS[name]
    except KeyError:
        raise ValueError(f"unknown target {name!r}; known targets: {', '.join(TARGETS)}") from None
