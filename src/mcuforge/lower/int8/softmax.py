"""Softmax over one dimension that is last in storage (arm_softmax_s8: output scale 1/256, zero
point -128; arm_softmax_s16 for int16: 1/32768, 0): the last torch dimension, or the channels of an NHWC
tensor."""

from __future__ import annotations

from torch import fx

from ...kernels.softmax import MAX_ROW_SIZE, softmax_params
from ...kernels.softmax_s16 import (
    SOFTMAX_S16_MAX_ROW,
    SOFTMAX_S16_OUTPUT_SCALE,
    softmax_s16_params,
    softmax_s16_tables,
)
from ...quantize.patterns import SOFTMAX_OPS, SOFTMAX_OUTPUT_SCALE, SOFTMAX_OUTPUT_ZERO_POINT
from ..builder import GraphBuilder, node_shape, qparams_of
from .common import NotInt8, aten, int8_input, int8_lowering, output_quantize, stored_dim


@int8_lowering(SOFTMAX_OPS, kernels="softmax_s8 / softmax_s16",
               precision="int8 in; int8 out with the fixed quantization scale 1/256, zero point -128 (int16: "
                         "softmax_s16, output scale 1/32768, zero point 0, its exp and 1/(1+x) tables in flash)",
               constraints=f"over the last dimension (or the channels of a conv output); rows of at most "
                           f"{MAX_ROW_SIZE} elements (int16: {SOFTMAX_S16_MAX_ROW}); no dtype change")
def lower_softmax(b: GraphBuilder, node: fx.Node) -> None:
    src = int8_input(b, node.args[0])
    shape = node_shape(node)
    dim = int(node.args[1]) % len(shape)
    if node.target == aten.softmax.int and len(node.args) > 2 and node.args[2] is not None:
        raise NotInt8("softmax with a dtype argument")
    in_place = stored_dim(b, src, dim) == len(shape) - 1
    if not in_place and dim != len(shape) - 1:
        raise NotInt8(f"softmax over dim {dim}, which is not the last one")
    if b.tensors[src].dtype == "int16":
        _softmax_s16(b, node, src, shape[dim], in_place)
        return
    if not 1 <= shape[dim] <= MAX_ROW_SIZE:
        raise NotInt8(f"softmax rows of {shape[dim]} elements (at most {MAX_ROW_SIZE})")
    _act, q = output_quantize(node, fuse=False)
    qin, qout = b.tensors[src].qparams, qparams_of(q)
    if (qout.scale, qout.zero_point) != (SOFTMAX_OUTPUT_SCALE, SOFTMAX_OUTPUT_ZERO_POINT):
        raise NotInt8(f"softmax output quantization {qout} is not (1/256, -128)")
    try:
        multiplier, shift, diff_min = softmax_params(qin.scale)
    except ValueError as exc:
        raise NotInt8(f"softmax input scale out of range: {exc}") from None
    x = src if in_place else b.as_layout(src, "plain", [node])
    out = b.like(q.name, x, qparams=qout)
    b.add_op("softmax_s8", [x], [out], {"multiplier": multiplier, "shift": shift, "diff_min": diff_min},
             nodes=[node])
    b.env[q] = out


def _softmax_s16(b: GraphBuilder, node: fx.Node, src: str, row: int, in_place: bool) -> None:
    if not 1 <= row <= SOFTMAX_S16_MAX_ROW:
        raise NotInt8(f"softmax rows of {row} elements (int16: at most {SOFTMAX_S16_MAX_ROW})")
    _act, q = output_quantize(node, fuse=False)
    qin, qout = b.tensors[src].qparams, qparams_of(q)
    if (qout.scale, qout.zero_point) != (SOFTMAX_S16_OUTPUT_SCALE, 0) or qin.zero_point != 0:
        raise NotInt8(f"int16 softmax quantization {qin} -> {qout} is not symmetric in, (1/32768, 0) out")
    try:
        multiplier, shift = softmax_s16_params(qin.scale)
    except ValueError as exc:
        raise NotInt8(f"softmax input scale out of range: {exc}") from None
    exp_lut, one_by_one = softmax_s16_tables()
    x = src if in_place else b.as_layout(src, "plain", [node])
    out = b.like(q.name, x, qparams=qout)
    # The tables are the same for every softmax: the builder stores them once.
    tables = [b.constant("softmax_s16_exp_lut", exp_lut), b.constant("softmax_s16_one_by_one_lut", one_by_one)]
    b.add_op("softmax_s16", [x, *tables], [out], {"multiplier": multiplier, "shift": shift}, nodes=[node])
    b.env[q] = out
