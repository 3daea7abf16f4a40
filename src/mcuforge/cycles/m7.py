"""Cortex-M7 (Armv7E-M, six-stage dual-issue superscalar): an approximation.

Arm publishes no per-instruction cycle table for the Cortex-M7 (its TRM, ARM DDI 0489, chapter 1
"Introduction", describes the pipeline: six stages, in-order, dual issue, a 64-bit path to the TCMs,
branch prediction with a branch target address cache). The pairing rules below are the measured
ones of quinapalus.com's "Cortex-M7 instruction cycle counts, timings, and dual-issue combinations"
(STM32H730, caches on), simplified:

- Two adjacent instructions issue together (one cycle for both) when: the second does not read a
  register the first writes; at most one of them accesses memory; at most one multiplies; neither is
  a multi-cycle instruction (divide, LDM/STM, VDIV) nor writes the PC; and the first is not a branch.
- Single loads, stores, LDRD/STRD 1 cycle (64-bit path); a result of a load used by the next issue
  group stalls 1 cycle. LDM/STM 1 + ceil(N/2).
- MUL/MLA/long multiplies/DSP multiplies 1 cycle issue; SDIV/UDIV 2-12: the model takes 7.
- FPU: VADD/VMUL/VMOV 1, VMLA/VFMA 1 issue (pipelined), VDIV/VSQRT 14.
- A taken branch costs 1 cycle more (predicted; the model has no misprediction: a loop's final exit,
  about 8 cycles on silicon, is not counted, so short loops are under-estimated).
"""

from __future__ import annotations

from collections.abc import Sequence

from .isa import Insn
from .model import Core, Memory, loads_count

REFILL = 1
DIVIDE = 7
MEMORY_CLASSES = frozenset({"load", "store", "load_d", "store_d", "fp_load", "fp_store", "ldm", "stm", "fp_ldm",
                            "fp_stm", "tb"})
MULTIPLY_CLASSES = frozenset({"mul", "mla", "mull", "mlal", "fp_mac"})
SINGLE_ISSUE = frozenset({"div", "ldm", "stm", "fp_ldm", "fp_stm", "fp_div", "tb", "barrier", "system", "it",
                          "unknown"})
BRANCH_CLASSES = frozenset({"branch", "call", "bx", "cbz", "tb"})


def _issue_cycles(insn: Insn) -> int:
    if insn.cls == "div":
        return DIVIDE
    if insn.cls in ("ldm", "stm", "fp_ldm", "fp_stm"):
        return 1 + (insn.count + 1) // 2
    if insn.cls == "fp_div":
        return 14
    if insn.cls == "tb":
        return 3
    return 1


def _pairs(first: Insn, second: Insn) -> bool:
    if first.cls in SINGLE_ISSUE or second.cls in SINGLE_ISSUE or first.writes_pc or first.cls in BRANCH_CLASSES:
        return False
    if first.cls in MEMORY_CLASSES and second.cls in MEMORY_CLASSES:
        return False
    if first.cls in MULTIPLY_CLASSES and second.cls in MULTIPLY_CLASSES:
        return False
    return not set(first.writes) & set(second.reads)


def cost_block(insns: Sequence[Insn], memory: Memory) -> tuple[float, float]:
    cycles = 0
    i = 0
    loaded: set[str] = set()  # registers loaded by the previous issue group
    while i < len(insns):
        group = [insns[i]]
        if i + 1 < len(insns) and _pairs(insns[i], insns[i + 1]):
            group.append(insns[i + 1])
        stall = int(any(set(g.reads) & loaded for g in group))
        cycles += stall + max(_issue_cycles(g) for g in group)
        loaded = {r for g in group if g.cls in ("load", "load_d", "fp_load", "ldm") for r in g.writes}
        i += len(group)
    cycles += loads_count(insns) * memory.load_wait_states
    return float(cycles), float(REFILL + memory.fetch_wait_states)


CORTEX_M7 = Core("cortex-m7", cost_block, REFILL,
                 "Cortex-M7 TRM (DDI 0489) ch. 1 (pipeline); quinapalus.com cm7cycles (measured pairings)")
