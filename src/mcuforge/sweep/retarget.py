"""One compile, every board: a program compiled for one Cortex-M re-planned for another.

Lowering does not depend on the target except through the scratch buffers the kernels' optimized paths ask
for (:func:`mcuforge.ir.kernel_scratch_bytes`), which the arena plan then places. Retargeting recomputes
every op's scratch for the new target and plans the arena again: the result is the program a compile for
that target gives, byte for byte (tests/test_sweep.py checks it against direct compiles). A sweep so
compiles (captures, calibrates, quantizes) each model variant and precision once for all its boards.
"""

from __future__ import annotations

import copy

from ..api import Program
from ..ir import RECURRENT_GATES, kernel_scratch_bytes
from ..plan import IN_PLACE_IF_CHOSEN, choose_free_in_place, trim_optional_scratch


class RetargetError(ValueError):
    """The program holds something whose target dependence is not known here (an NPU delegate)."""


def retarget(prog: Program, target: str) -> Program:
    """``prog`` for ``target``: a copy with its scratch sizes and arena planned for that core."""
    if "+" in target or "+" in str(prog.meta.get("target", "")):
        raise RetargetError("an NPU-partitioned program is compiled per target")
    graph = copy.deepcopy(prog.graph)
    graph.target = target
    for op in graph.ops:
        if op.kind == "delegate":
            raise RetargetError("an NPU-partitioned program is compiled per target")
        if op.kind in RECURRENT_GATES:
            op.scratch_bytes = kernel_scratch_bytes(op.kind, graph.tensors[op.inputs[2]].shape, target)
        elif op.kind == "add_s8":
            op.scratch_bytes = kernel_scratch_bytes(op.kind, (), target)
        elif len(op.inputs) > 1 and graph.tensors[op.inputs[1]].is_constant:
            out = graph.tensors[op.outputs[0]].shape if op.outputs else ()
            op.scratch_bytes = kernel_scratch_bytes(op.kind, graph.tensors[op.inputs[1]].shape, target, out, op.attrs)
        elif op.scratch_bytes:
            raise RetargetError(f"op {op.kind} has scratch of unknown origin")
    if "patch_plan" not in prog.meta:  # no budget: the in-place choice is the target's (plan.choose_free_in_place)
        for op in graph.ops:
            op.in_place = op.in_place and op.kind not in IN_PLACE_IF_CHOSEN
    trim_optional_scratch(graph)  # plans the arena, as compile does
    if "patch_plan" not in prog.meta:
        choose_free_in_place(graph)
    meta = {**prog.meta, "target": target}
    return Program(graph, compile_seconds=prog.compile_seconds, meta=meta, reference=prog.reference)
