"""Costing the plugin's counts with a core's timing model: cycles per block, per segment, per span.

The instructions come from the ELF's disassembly (:mod:`.isa`) at the addresses the plugin saw; an
address the ELF does not cover (code outside it) is costed 1 cycle and counted as ``unknown``.

QEMU also ends blocks where the program does not branch: at a 1 KB page end (the code's placement), after
instructions whose effect it folds into the next block's translation (VCTP, VMSR, MSR...), at an icount
budget. Silicon has no such boundary, so a block entered by falling through from such a *cut* block is
costed as the continuation of the straight-line sequence: cost(pred + block) - cost(pred), pred being the
cut predecessor preceded by the sequences that led into it (itself cut blocks' continuations, up to
:data:`MAX_CONTEXT` blocks). The plugin counts those fall-through entries per pair of blocks; other entries
of the same block keep its own cost (docs/cycles.md, "Where QEMU cuts blocks").
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from .isa import Insn, disassemble
from .model import ZERO_WAIT, Core, Memory
from .plugin import Counts, Segment

MODEL_NOTE = "estimate (per-core timing model over QEMU's executed instructions; docs/cycles.md)"


#: Instructions that end a sequence on silicon too: branches (the low-overhead loop's DLS/WLS/LE included),
#: exceptions and serializing instructions (ISB, DSB, SVC, BKPT, MSR...), after which the pipeline restarts.
SEQUENCE_ENDS = frozenset({"branch", "call", "bx", "cbz", "tb", "loop_start", "loop_end", "barrier", "system"})
MAX_CONTEXT = 4  # blocks in a continuation's context (chains of cut blocks are 1-2 long in practice)


@dataclass(frozen=True)
class BlockCost:
    fall_through: float  # cycles of one execution that falls through
    taken_extra: float  # more cycles when it is left by a taken branch
    insns: tuple[Insn, ...]
    #: predecessor id -> cycles of one execution entered by falling through from that cut predecessor
    #: (its continuation cost, replacing ``fall_through`` for those entries)
    after: dict[int, float] = field(default_factory=dict)


def is_cut(insns: Sequence[Insn]) -> bool:
    """A block QEMU ended where silicon goes straight on: its last instruction neither branches nor
    serializes (a page end, an instruction QEMU ends blocks after, an icount budget)."""
    return bool(insns) and insns[-1].cls not in SEQUENCE_ENDS and not insns[-1].writes_pc


def _insn_at(code: dict[int, Insn], address: int, data: bytes) -> Insn:
    found = code.get(address)
    if found is not None and found.size == len(data):
        return found
    return Insn(address, len(data), "?", data.hex(), "unknown")


def block_costs(counts: Counts, elf: str | Path, target: str, core: Core, memory: Memory = ZERO_WAIT
                ) -> dict[int, BlockCost]:
    """Every block's cost under ``core`` (``target``: the architecture the ELF was built for)."""
    code = disassemble(elf, target)
    insns = {bid: tuple(_insn_at(code, address, data) for address, data in block.insns)
             for bid, block in counts.blocks.items()}
    return cost_decoded(counts, insns, core, memory)


def cost_decoded(counts: Counts, insns: dict[int, tuple[Insn, ...]], core: Core, memory: Memory = ZERO_WAIT
                 ) -> dict[int, BlockCost]:
    """:func:`block_costs` of blocks already decoded (block id -> its instructions)."""
    after = _continuations(counts, insns, core, memory)
    costs = {}
    for bid, seq in insns.items():
        fall, taken = core.cost_block(seq, memory) if seq else (0.0, 0.0)
        costs[bid] = BlockCost(fall, taken, seq, after.get(bid, {}))
    return costs


def _continuations(counts: Counts, insns: dict[int, tuple[Insn, ...]], core: Core, memory: Memory
                   ) -> dict[int, dict[int, float]]:
    """block id -> {cut predecessor id: the block's cycles as the continuation of that predecessor}.

    The predecessor's own context is how it was entered: a cut block always falls through to the block at
    its end, so the sequences that led into it (its fall-through entries from cut blocks, recursively, and
    its other entries, which start afresh) lead on into that block in the same proportions. The cost is
    their weighted mean, exact in total over the run."""
    runs: Counter = Counter()
    falls: Counter = Counter()
    for seg in counts.segments:
        for bid, (n, _taken) in seg.counts.items():
            runs[bid] += n
        falls.update(seg.falls)
    cut_preds: dict[int, list[tuple[int, int]]] = {}
    for (a, b), n in falls.items():
        if is_cut(insns[a]) and insns[b]:
            cut_preds.setdefault(b, []).append((a, n))

    @functools.cache
    def contexts(a: int, depth: int) -> tuple[tuple[Fraction, tuple[Insn, ...]], ...]:
        """(share of a's executions, the straight-line sequence that ends with a), over a's entries."""
        if depth >= MAX_CONTEXT or runs[a] == 0:
            return ((Fraction(1), insns[a]),)
        out, fresh = [], runs[a]
        for z, n in cut_preds.get(a, ()):
            fresh -= n
            out += [(w * Fraction(n, runs[a]), prefix + insns[a]) for w, prefix in contexts(z, depth + 1)]
        if fresh > 0:
            out.append((Fraction(fresh, runs[a]), insns[a]))
        return tuple(out)

    after: dict[int, dict[int, float]] = {}
    for b, preds in cut_preds.items():
        for a, _n in preds:
            total = Fraction(0)
            for share, prefix in contexts(a, 1):
                joined, _ = core.cost_block(prefix + insns[b], memory)
                alone, _ = core.cost_block(prefix, memory)
                total += share * Fraction(joined - alone)
            after.setdefault(b, {})[a] = float(total)
    return after


@dataclass
class Span:
    """Estimated cycles and executed instructions of some segments, with the instruction mix."""

    cycles: float = 0.0
    instructions: int = 0
    taken_branches: int = 0
    mix: Counter = field(default_factory=Counter)  # instruction class -> executions
    continued: int = 0  # block executions costed as the continuation of a cut predecessor

    def add(self, other: Span) -> None:
        self.cycles += other.cycles
        self.instructions += other.instructions
        self.taken_branches += other.taken_branches
        self.continued += other.continued
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
        for (source, bid), n in seg.falls.items():
            joined = costs[bid].after.get(source)
            if joined is not None:
                totals[function_at(elf, counts_blocks[bid].pc)] += n * (joined - costs[bid].fall_through)
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
        for (source, bid), n in seg.falls.items():  # entries that continue a cut predecessor's sequence
            joined = costs[bid].after.get(source)
            if joined is not None:
                out.cycles += n * (joined - costs[bid].fall_through)
                out.continued += n
    return out
