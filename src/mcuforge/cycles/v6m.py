"""Cortex-M0+ (Armv6-M, two-stage pipeline): the Technical Reference Manual's table.

Source: Cortex-M0+ TRM r0p1 (ARM DDI 0484C) §3.3 "Instruction set summary", Table 3-1 (cycle counts
of the Armv6-M instructions). Rules: data processing 1; MULS 1 (the fast single-cycle multiplier, the
common configuration; the small iterative one takes 32); single loads and stores 2 (no pipelining);
LDM/STM/PUSH/POP 1 + N; POP {..., PC} 3 + N; B 2 when taken, conditional B 1 not taken / 2 taken; BL
3; BX/BLX 2; so the taken-branch refill P = 1 (BL = 2 + P). DMB/DSB/ISB 3, MRS/MSR 3. Armv6-M has no
divide, no DSP, no FPU: such instructions cost 1 (they cannot occur in an M0+ build).
"""

from __future__ import annotations

from collections.abc import Sequence

from .isa import Insn
from .model import Core, Memory, loads_count

REFILL = 1
CYCLES = {"alu": 1, "cmp": 1, "mul": 1, "load": 2, "store": 2, "branch": 1, "cbz": 1, "call": 2, "bx": 1,
          "barrier": 3, "system": 3, "nop": 1, "unknown": 1}


def insn_cycles(insn: Insn) -> int:
    if insn.cls in ("ldm", "stm"):
        return 1 + insn.count + (1 if insn.writes_pc else 0)  # POP {pc}: 3 + N = (1 + N + 1) + P
    if insn.cls in ("load_d", "store_d"):
        return 3
    return CYCLES.get(insn.cls, 1)


def cost_block(insns: Sequence[Insn], memory: Memory) -> tuple[float, float]:
    cycles = sum(insn_cycles(i) for i in insns) + loads_count(insns) * memory.load_wait_states
    return float(cycles), float(REFILL + memory.fetch_wait_states)


CORTEX_M0PLUS = Core("cortex-m0plus", cost_block, REFILL, "Cortex-M0+ TRM r0p1 §3.3 Table 3-1")
