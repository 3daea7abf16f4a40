"""The common shape of a per-core timing model, and costing of blocks, segments and runs with it.

A core's model (:mod:`.v6m`, :mod:`.v7m`, :mod:`.m7`, :mod:`.v8m`) costs a translation block: the
straight-line instruction sequence QEMU executed as a unit, which ends at a branch. It returns the
cycles of one execution that falls through (a conditional branch not taken) and the extra cycles
when the block is left by a taken branch (the pipeline refill). The plugin's counts then give each
segment's cycles: runs x fall-through cycles + taken exits x refill (a block QEMU ended without a
branch is costed with the one after it: :mod:`.estimate`). Everything here is an
ESTIMATE of the core's cycles, never a measurement (docs/cycles.md says what each table rests on).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .isa import Insn

#: Classes of data-processing instructions (their result register can feed a load's address).
DATA_PROCESSING = frozenset({"alu", "mul", "mla", "mull", "mlal", "div"})


@dataclass(frozen=True)
class Memory:
    """Memory timing of a board (zero wait states by default, as the QEMU boards' SRAM/TCM).

    ``fetch_wait_states``: cycles added to every pipeline refill (a taken branch fetches its target
    from memory with wait states). A flash behind a prefetch buffer and instruction cache (ST's ART
    accelerator) hides them for loops that fit its cache: give 0 then (docs/cycles.md, "Memory").
    ``load_wait_states``: cycles added to every data load (constants read from a slow memory)."""

    fetch_wait_states: int = 0
    load_wait_states: int = 0


ZERO_WAIT = Memory()  # the QEMU boards' memories: no wait states


@dataclass(frozen=True)
class Core:
    """A core's timing model: ``cost_block(insns, memory) -> (fall-through cycles, taken extra)``."""

    name: str
    cost_block: Callable[[Sequence[Insn], Memory], tuple[float, float]]
    refill: int  # the taken-branch pipeline refill its table assumes (P)
    sources: str  # where its numbers come from (docs/cycles.md cites the sections)


def loads_count(insns: Sequence[Insn]) -> int:
    """Data loads in a block (each pays the board's load wait states)."""
    n = 0
    for i in insns:
        if i.cls in ("load", "fp_load", "mve_load"):
            n += 1
        elif i.cls in ("load_d",):
            n += 2
        elif i.cls in ("ldm", "fp_ldm"):
            n += i.count
    return n
