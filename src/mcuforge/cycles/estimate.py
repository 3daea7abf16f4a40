"""Costing the plugin's counts with a core's timing model: cycles per block, per segment, per span.

The instructions come from the ELF's disassembly (:mod:`.isa`) at the addresses the plugin saw; an
address the ELF does not cover (code outside it) is costed 1 cycle and counted as ``unknown``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .isa import Insn, disassemble
from .model import ZERO_WAIT, Core, Memory
from .plugin import Counts, Segment

MODEL_NOTE = "estimate (per-core timing model over QEMU's executed instructions; docs/cycles.md)"


@dataclass(frozen=True)
class BlockCost:
    fall_through: float  # cycles of one execution that falls through
    taken_extra: float  # more cycles when it is left by a taken branch
    insns: tuple[Insn, ...]


def _insn_at(code: dict[int, Insn], address: int, data: bytes) -> Insn:
    found = code.get(address)
    if found is not None and found.size == len(data):
        return found
    return Insn(address, len(data), "?", data.hex(), "unknown")


def block_costs(counts: Counts, elf: str | Path, target: str, core: Core, memory: Memory = ZERO_WAIT
                ) -> dict[int, BlockCost]:
    """Every block's cost under ``core`` (``target``: the architecture the ELF was built for)."""
    code = disassemble(elf, target)
    costs = {}
    for bid, block in counts.blocks.items():
        insns = tuple(_insn_at(code, address, data) for address, data in block.insns)
        fall, taken = core.cost_block(insns, memory) if insns else (0.0, 0.0)
        costs[bid] = BlockCost(fall, taken, insns)
    return costs


@dataclass
class Span:
    """Estimated cycles and executed instructions of some segments, with the instruction mix."""

    cycles: float = 0.0
    instructions: int = 0
    taken_branches: int = 0
    mix: Counter = field(default_factory=Counter)  # instruction class -> executions

    def add(self, other: Span) -> None:
        self.cycles += other.cycles
        self.instructions += other.instructions
        self.taken_branches += other.taken_branches
        self.mix.update(other.mix)


def by_function(segments: Sequence[Segment], costs: dict[int, BlockCost], counts_blocks: dict, elf: str | Path
                ) -> dict[str, float]:
    """Estimated cycles of ``segments`` per ELF function (the function holding each block's start),
    largest first."""
    from .isa import function_at

    totals: Counter = Counter()
    for seg in segments:
        for bid, (runs, taken) in seg.counts.items():
            cost = costs[bid]
            totals[function_at(elf, counts_blocks[bid].pc)] += runs * cost.fall_through + taken * cost.taken_extra
    return dict(totals.most_common())


def span(segments: Sequence[Segment], costs: dict[int, BlockCost], mix: bool = False) -> Span:
    """Cycles and instructions of ``segments`` (``mix``: also count executions per class)."""
    out = Span()
    for seg in segments:
        for bid, (runs, taken) in seg.counts.items():
            cost = costs[bid]
            out.cycles += runs * cost.fall_through + taken * cost.taken_extra
            out.instructions += runs * len(cost.insns)
            out.taken_branches += taken
            if mix:
                for insn in cost.insns:
                    out.mix[insn.cls] += runs
    return out
