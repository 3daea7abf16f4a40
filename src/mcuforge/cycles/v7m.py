"""Cortex-M3 and Cortex-M4 (Armv7-M, three-stage pipeline): the Technical Reference Manuals' tables.

Sources (docs/cycles.md cites them): Cortex-M4 TRM r0p1 (ARM DDI 0439B) §3.3.1 Table 3-1
"Cortex-M4 instruction set summary" and §3.3.2 "Load/store timings"; Cortex-M4 TRM §7.2 (FPU) Table
7-1 for the floating-point instructions; Cortex-M3 TRM r2p1 (ARM DDI 0337I) §3.3 Table 3-1 and its
load/store timing notes (the same pipelining rules).

Rules applied (each from the sections above):
- Data processing 1 cycle; a write to the PC adds the refill P.
- Single loads 2 cycles; a single load right after another single load is pipelined (1 cycle)
  unless its address uses the first load's result. A single store with an immediate offset is 1
  cycle; with a register offset 2, 1 right after a load. Nothing pipelines after a store.
- A load or store whose address register was written by the data-processing instruction just before
  it stalls one cycle (no forwarding path to the address generator).
- LDRD/STRD 3 cycles (1 + N, N = 2), not pipelined; LDM/STM/PUSH/POP 1 + N; POP/LDM with the PC
  adds P; LDR PC 2 + P; TBB/TBH 2 (load) + 1 (add) + P.
- Branches 1 cycle, + P when taken (B, BL, BX, CBZ/CBNZ, conditional B). P is 1 to 3 on silicon
  (target alignment and width, early speculation): the model takes P = 2, a taken branch = 3.
- Cortex-M4: MUL/MLA/MLS, the long multiplies and every DSP multiply 1 cycle. Cortex-M3: MLA/MLS
  2; SMULL/UMULL 3-5 and SMLAL/UMLAL 4-7 with early termination on small operands: the model takes
  the top of each range (5, 7), as requantization multiplies by full 31-bit multipliers.
- SDIV/UDIV 2-12, data-dependent (early termination by the quotient's size): the model takes 7.
- IT 1 cycle (the TRM allows folding it into a preceding 16-bit instruction: not modelled).
- FPU (M4): VADD/VSUB/VMUL/VCVT/VMOV/VCMP 1, VMLA/VMLS/VFMA 3, VDIV/VSQRT 14, VLDR 2 (pipelined as
  LDR), VSTR 2, VLDM/VSTM/VPUSH/VPOP 1 + N (N words).
"""

from __future__ import annotations

from collections.abc import Sequence

from .isa import Insn
from .model import DATA_PROCESSING, Core, Memory, loads_count

REFILL = 2  # P
DIVIDE = 7  # SDIV/UDIV: 2-12 on silicon, data-dependent

M4_CYCLES = {
    "alu": 1, "cmp": 1, "mul": 1, "mla": 1, "mull": 1, "mlal": 1, "div": DIVIDE, "nop": 1, "it": 1,
    "barrier": 4, "system": 2, "fp_alu": 1, "fp_mac": 3, "fp_div": 14, "unknown": 1,
}
M3_CYCLES = {**M4_CYCLES, "mla": 2, "mull": 5, "mlal": 7}


def _load_pipelines(prev: Insn | None, insn: Insn) -> bool:
    """A single load/store right after a single load whose result it does not use as its address."""
    return (prev is not None and prev.cls in ("load", "fp_load") and not prev.writes_pc
            and not set(prev.writes) & set(insn.address_regs))


def _address_stall(prev: Insn | None, insn: Insn) -> int:
    return int(prev is not None and prev.cls in DATA_PROCESSING and bool(set(prev.writes) & set(insn.address_regs)))


def insn_cycles(insn: Insn, prev: Insn | None, table: dict[str, int]) -> int:
    """Cycles of one instruction after ``prev`` (in the same block), without any refill."""
    cls = insn.cls
    if cls in ("load", "fp_load"):
        return (1 if _load_pipelines(prev, insn) else 2) + _address_stall(prev, insn)
    if cls in ("store", "fp_store"):
        if cls == "fp_store":
            base = 2
        elif not insn.register_offset:
            base = 1
        else:
            base = 1 if _load_pipelines(prev, insn) else 2
        return base + _address_stall(prev, insn)
    if cls in ("load_d", "store_d"):
        return 3 + _address_stall(prev, insn)
    if cls in ("ldm", "stm", "fp_ldm", "fp_stm"):
        return 1 + insn.count
    if cls in ("branch", "call", "bx", "cbz"):
        return 1
    if cls == "tb":
        return 3
    if cls in ("mve_load", "mve_store", "mve_mac", "mve_alu", "loop_start", "loop_end"):
        return 1  # not in this architecture: objdump decoded data, or another core's code
    return table.get(cls, 1)


def cost_block(insns: Sequence[Insn], memory: Memory, table: dict[str, int], refill: int = REFILL
               ) -> tuple[float, float]:
    """(cycles falling through, extra cycles when left by a taken branch) of one block."""
    cycles = 0
    prev = None
    for insn in insns:
        cycles += insn_cycles(insn, prev, table)
        prev = insn
    cycles += loads_count(insns) * memory.load_wait_states
    taken = refill + memory.fetch_wait_states
    return float(cycles), float(taken)


CORTEX_M4 = Core("cortex-m4", lambda insns, mem: cost_block(insns, mem, M4_CYCLES), REFILL,
                 "Cortex-M4 TRM r0p1 §3.3.1 Table 3-1, §3.3.2; §7.2 Table 7-1 (FPU)")
CORTEX_M3 = Core("cortex-m3", lambda insns, mem: cost_block(insns, mem, M3_CYCLES), REFILL,
                 "Cortex-M3 TRM r2p1 §3.3 Table 3-1 and load/store timings")
