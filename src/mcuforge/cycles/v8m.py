"""Cortex-M33 (Armv8-M Mainline) and Cortex-M55 (Armv8.1-M with Helium): extrapolated tables.

Arm publishes no per-instruction cycle table for the Cortex-M33 or the Cortex-M55 scalar pipeline. The
Cortex-M33 TRM (Arm 100230, chapter 1, "Introduction") describes a three-stage pipeline like the
Cortex-M4's with limited dual issue of 16-bit instruction pairs. The model therefore takes the Cortex-M4
table and rules (:mod:`.v7m`) and issues two adjacent independent 16-bit data-processing instructions in
one cycle; the Cortex-M55's scalar instructions are costed the same way.

Helium (MVE) follows the beat model of Armv8.1-M as the Cortex-M55 implements it (J. Yiu, "Introduction
to the Arm Cortex-M55 Processor", Arm white paper, §4.3.1): a dual-beat implementation, so a 128-bit
vector instruction (four 32-bit beats) takes 2 cycles, and it overlaps with the vector instruction
before it when they use different hardware (load/store, multiply-accumulate, other vector ALU), so an
interleaved VLDR/VMLA stream runs at one instruction per cycle. A scalar instruction between them ends
the overlap (a VPT/VPST does not: 1 cycle). Low-overhead loops: DLS/WLS 1 cycle; a taken LE/LETP costs
nothing (the loop end is handled by the loop logic: no cycle, no refill), a not-taken one 1.
"""

from __future__ import annotations

from collections.abc import Sequence

from .isa import Insn
from .model import Core, Memory, loads_count
from .v7m import M4_CYCLES, REFILL, insn_cycles

DUAL_16 = frozenset({"alu", "cmp"})
MVE_UNIT = {"mve_load": "lsu", "mve_store": "lsu", "mve_mac": "mac", "mve_alu": "alu"}


def _cost(insns: Sequence[Insn], memory: Memory, mve: bool) -> tuple[float, float]:
    cycles = 0
    prev: Insn | None = None
    paired = False  # prev issued together with the one before it
    for insn in insns:
        unit = MVE_UNIT.get(insn.cls) if mve else None
        if unit is not None:
            overlap = prev is not None and MVE_UNIT.get(prev.cls) not in (None, unit)
            cycles += 1 if overlap else 2
            paired = False
        elif insn.cls == "vpt":
            cycles += 1  # VPT/VPST: one cycle; the vector instructions it predicates still overlap
            paired = False
            continue
        elif insn.cls == "loop_end":
            cycles += 1
            paired = False
        elif insn.cls == "loop_start":
            cycles += 1
            paired = False
        elif (not paired and prev is not None and insn.size == 2 and prev.size == 2 and insn.cls in DUAL_16
              and prev.cls in DUAL_16 and not set(prev.writes) & set(insn.reads)):
            paired = True  # issued with prev: no cycle of its own
        else:
            cycles += insn_cycles(insn, prev, M4_CYCLES)
            paired = False
        prev = insn
    cycles += loads_count(insns) * memory.load_wait_states
    last = insns[-1] if insns else None
    if last is not None and last.cls == "loop_end":
        # A taken LE/LETP goes back without a refill, and its own cycle is not spent either.
        return float(cycles), -1.0
    return float(cycles), float(REFILL + memory.fetch_wait_states)


CORTEX_M33 = Core("cortex-m33", lambda insns, mem: _cost(insns, mem, mve=False), REFILL,
                  "Cortex-M4 tables (v7m) + 16-bit dual issue (Cortex-M33 TRM, Arm 100230, ch. 1)")
CORTEX_M55 = Core("cortex-m55", lambda insns, mem: _cost(insns, mem, mve=True), REFILL,
                  "M4 tables + 16-bit dual issue; Helium dual-beat overlap (Yiu, M55 white paper §4.3.1)")
