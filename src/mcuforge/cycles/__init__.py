"""Estimated cycles: a per-core timing model over the instructions QEMU executes.

QEMU counts instructions, and instructions are not cycles. A TCG plugin (:mod:`.plugin`) counts each
translation block's executions and taken exits, segmented at op boundaries; the ELF's disassembly
(:mod:`.isa`) gives each block's instructions; a core's timing tables (:mod:`.v6m`, :mod:`.v7m`,
:mod:`.m7`, :mod:`.v8m`, from Arm's Technical Reference Manuals, cited in docs/cycles.md) cost them.
The result is an ESTIMATE of the core's cycles, labelled so wherever it is shown.
"""

from __future__ import annotations

from .m7 import CORTEX_M7
from .model import Core, Memory
from .v6m import CORTEX_M0PLUS
from .v7m import CORTEX_M3, CORTEX_M4
from .v8m import CORTEX_M33, CORTEX_M55

CORES: dict[str, Core] = {c.name: c for c in (CORTEX_M0PLUS, CORTEX_M3, CORTEX_M4, CORTEX_M7, CORTEX_M33,
                                              CORTEX_M55)}


def get_core(name: str) -> Core:
    """The timing model of core ``name`` (cortex-m0plus, m3, m4, m7, m33, m55)."""
    try:
        return CORES[name]
    except KeyError:
        raise ValueError(f"no timing model for {name!r}; models exist for: {', '.join(CORES)}") from None


__all__ = ["CORES", "Core", "Memory", "get_core"]
