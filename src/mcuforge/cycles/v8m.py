"""Cortex-M33 (Armv8-M Mainline) and Cortex-M55 (Armv8.1-M with Helium): extrapolated tables.

Arm publishes no per-instruction cycle table for the Cortex-M33; its TRM (ARM 100230, §1.2, §2.1)
describes a three-stage pipeline like the Cortex-M4's with limited dual issue of 16-bit instruction
pairs. The model therefore takes the Cortex-M4 table and rules (:mod:`.v7m`) and issues two adjacent
independent 16-bit data-processing instructions in one cycle.

The Cortex-M55 scalar pipeline is costed the same way (its Software Optimization Guide, Arm 102692,
§3 gives scalar latencies of the same order). Helium (MVE) follows the Armv8.1-M "beat" model (Arm
v8.1-M Architecture Reference Manual, DDI 0553, §B5.2 "Beat-wise execution"; Cortex-M55 TRM 101051
§2.2: a dual-beat implementation, two 32-bit beats per cycle): a 128-bit vector instruction takes 2
cycles, and overlaps by one cycle with the vector instruction before it when they use different
units (load/store, multiply-accumulate, other vector ALU), so an interleaved VLDR/VMLA stream runs
at one instruction per cycle. A scalar instruction between them ends the overlap (a VPT/VPST does
not: 1 cycle). Low-overhead loops: DLS/WLS 1 cycle; a taken LE/LETP costs nothing (the loop end is
handled by the loop logic: no cycle, no refill), a not-taken one 1.
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
                  "Cortex-M4 tables (v7m) + 16-bit dual issue (Cortex-M33 TRM §1.2)")
CORTEX_M55 = Core("cortex-m55", lambda insns, mem: _cost(insns, mem, mve=True), REFILL,
                  "M33-like scalar + Helium beats (Armv8.1-M ARM §B5.2, Cortex-M55 TRM §2.2)")
