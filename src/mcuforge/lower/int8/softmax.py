"""Softmax over one dimension that is last in storage (arm_softmax_s8: output scale 1/256, zero
point -128): the last torch dimension, or the channels of an NHWC tensor."""

from __future__ import annotations

from torch import fx

from ...kernels.softmax import MAX_ROW_SIZE, softmax_params
from ...quantize.patterns import SOFTMAX_OPS, SOFTMAX_OUTPUT_SCALE, SOFTMAX_OUTPUT_ZERO_POINT
from ..builder import GraphBuilder, node_shape, qparams_of
from .common import NotInt8, aten, int8_input, int8_lowering, output_quantize, stored_dim


@int8_lowering(SOFTMAX_OPS, kernels="softmax_s8",
               precision="int8 in; int8 out with the fixed quantization scale 1/256, zero point -128",
               constraints=f"over the last dimension (or the channels of a conv output); rows of at most "
                           f"{MAX_ROW_SIZE} elements; no dtype change")
def lower_softmax(b: GraphBuilder, node: fx.Node) -> None:
    src = int8_input(b, node.args[0])
    shape = node_shape(node)
    dim = int(node.args[1]) % len(shape)
    if node.target == aten.softmax.int and len(node.args) > 2 and node.args[2] is not None:
        raise NotInt8("softmax with a dtype argument")
    in_place = stored_dim(b, src, dim) == len(shape) - 1
    if not in_place and dim != len(shape) - 1:
        raise NotInt8(f"softmax over dim {dim}, which is not the last one")
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
