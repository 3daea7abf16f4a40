"""One compile, every board: a program compiled for one Cortex-M re-planned for another.

Lowering does not depend on the target except through the scratch buffers the kernels' optimized paths ask
for (:func:`mcuforge.ir.kernel_scratch_bytes`), which the arena plan then places, and the layout of int4
weights: on Helium cores conv2d_s4 and fully_connected_s4 store them as S4_HALVES (with the input offset
folded into the bias where it fits; :func:`mcuforge.kernels.int4.weight_layout`), elsewhere in CMSIS-NN's
packing; and int8 fully connected weights, stored as S8_PAIRS on the DSP cores
(:func:`mcuforge.kernels.fc_pairs.weight_layout_s8`), which retargeting re-lays (the same values). Retargeting
recomputes every op's scratch for the new target and plans the arena again: the result
is the program a compile for that target gives, byte for byte (tests/test_sweep.py checks it against direct
compiles). A program whose int4 weights would take another layout on the new target is refused
(:class:`RetargetError`): the sweep compiles it for that board instead. A sweep so compiles (captures,
calibrates, quantizes) each model variant and precision once for all its boards (once per core family for
int4 weights).
"""

from __future__ import annotations

import copy

from ..api import Program
from ..ir import INT4, RECURRENT_GATES, kernel_scratch_bytes
from ..kernels.fc_pairs import S8_PAIRS, pack_pairs, unpack_pairs, weight_layout_s8
from ..kernels.int4 import weight_layout
from ..plan import IN_PLACE_IF_CHOSEN, choose_free_in_place, trim_optional_scratch
from ..targets import get_target


class RetargetError(ValueError):
    """The program holds something whose target dependence is not known here (an NPU delegate), or that a
    compile for the new target lowers otherwise (int4 weights in another layout)."""


S8_PAIRS_RELAID = ("fully_connected_s8", "fully_connected_per_channel_s8")


def _relay_pairs(weight, op, target) -> None:
    """An int8 fully connected weight in the layout a compile for ``target`` gives (S8_PAIRS on a DSP core)."""
    plain = weight.layout != S8_PAIRS
    wanted = weight_layout_s8(op.kind, weight.shape, target.has_dsp, target.has_mve)
    if op.attrs.get("input_offset", 0) != 0:
        wanted = "plain"
    if weight.layout == wanted:
        return
    values = weight.data if plain else unpack_pairs(weight.data, tuple(weight.shape))
    weight.data = pack_pairs(values) if wanted == S8_PAIRS else values
    weight.layout = wanted


def retarget(prog: Program, target: str) -> Program:
    """``prog`` for ``target``: a copy with its scratch sizes and arena planned for that core."""
    if "+" in target or "+" in str(prog.meta.get("target", "")):
        raise RetargetError("an NPU-partitioned program is compiled per target")
    graph = copy.deepcopy(prog.graph)
    graph.target = target
    for op in graph.ops:
        if op.kind == "delegate":
            raise RetargetError("an NPU-partitioned program is compiled per target")
        if len(op.inputs) > 1 and op.inputs[1] and graph.tensors[op.inputs[1]].dtype == INT4:
            weight = graph.tensors[op.inputs[1]]
            wanted = weight_layout(op.kind, weight.shape, get_target(target).has_mve)
            if weight.layout != wanted:
                raise RetargetError(f"op {op.kind} ({op.outputs[0] if op.outputs else '?'}): its int4 weights are "
                                    f"laid out {weight.layout!r}, a compile for {target} lays them out {wanted!r} "
                                    "(and folds the input offset otherwise): compile for that target")
        if op.kind in S8_PAIRS_RELAID and graph.tensors[op.inputs[1]].is_constant:
            _relay_pairs(graph.tensors[op.inputs[1]], op, get_target(target))
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
        trim_optional_scratch(graph)  # again: within the arena that choice lowered
    meta = {**prog.meta, "target": target}
    return Program(graph, compile_seconds=prog.compile_seconds, meta=meta, reference=prog.reference)
