"""Linear layers (constant weights) and batched matmul of two int8 activations (attention)."""

from __future__ import annotations

from torch import fx

from ...ir import Op
from ...kernels.mul import mul_quant_params
from ...quantize.patterns import LINEAR_OPS, MATMUL_OPS
from ..builder import NHWC_TO_NCHW, GraphBuilder, node_shape, qparams_of
from .common import (
    NotInt8,
    activation_range,
    arg,
    emit_weighted_op,
    fuse,
    int8_input,
    int8_lowering,
    output_quantize,
    weights,
)
from .s16 import S8, S16, WidthError, s64_requant, width_of


@int8_lowering(LINEAR_OPS, kernels="fully_connected_per_channel_s8 / fully_connected_s8 (int4 weights: "
               "fully_connected_s4)",
               precision="int8 activations (per tensor), int8 symmetric weights, int32 bias (a8w8): per output "
                         "channel (fully_connected_per_channel_s8) where that lowers the error on its output over "
                         "the calibration inputs "
                         "by at least 0.1 dB, else per tensor (fully_connected_s8); quantization=\"w4a8\": int4 "
                         "symmetric weights, packed two per byte, an int16 bias where it fits and 16-bit "
                         "multipliers, the same choice (a8w4)",
               constraints="constant weight; any leading dims (rows); fused ReLU/ReLU6/hardtanh/clamp")
def lower_linear(b: GraphBuilder, node: fx.Node) -> None:
    x, w = node.args[0], node.args[1]
    bias = arg(node, 2, "bias", None)
    src = int8_input(b, x)
    wq = weights(b, w)
    act, q = output_quantize(node)
    weight, flattened = wq.data, _flattened_nhwc(b, src)
    if flattened is not None:
        # torch flattens (C, H, W); the image is stored (H, W, C). Reordering the weight columns
        # at compile time lets the layer read the stored bytes: no run-time transpose.
        image, (n, h, w_, c) = flattened
        weight = weight.reshape(-1, c, h, w_).transpose(0, 2, 3, 1).reshape(weight.shape[0], -1)

    def convert(nodes: list[fx.Node]) -> str:
        if flattened is None:
            return b.as_layout(src, "plain", nodes)
        return b.reshape(image, (n, h * w_ * c), nodes=nodes)

    kind = "fully_connected_s4" if wq.bits == 4 else "fully_connected_s8"  # or its per-channel form
    b.env[q] = emit_weighted_op(b, node, act, q, kind, src, convert, weight, wq.scales, bias, node_shape(q),
                                "plain", {})


def _producer(b: GraphBuilder, name: str) -> Op | None:
    return next((op for op in reversed(b.ops) if name in op.outputs), None)


def _flattened_nhwc(b: GraphBuilder, name: str) -> tuple[str, tuple[int, int, int, int]] | None:
    """(the NHWC image, its shape) when ``name`` is that image transposed to NCHW and flattened to
    (N, C*H*W) -- the flatten before a classifier head -- else None."""
    reshape = _producer(b, name)
    if reshape is None or reshape.kind != "reshape":
        return None
    transpose = _producer(b, reshape.inputs[0])
    if transpose is None or transpose.kind != "transpose" or list(transpose.attrs["perm"]) != list(NHWC_TO_NCHW):
        return None
    image = b.tensors[transpose.inputs[0]]
    if image.layout != "nhwc" or image.dtype != b.tensors[name].dtype:
        return None
    n, h, w, c = image.shape
    if b.tensors[name].shape != (n, h * w * c):
        return None
    return transpose.inputs[0], (n, h, w, c)


def _transpose_source(b: GraphBuilder, name: str) -> str | None:
    """The input of the int8 transpose that produced ``name`` by swapping its last two dims, if any:
    the matmul then reads it with adj_y (CMSIS's native rhs order) and the transpose is pruned
    when nothing else reads its output."""
    producer = _producer(b, name)
    if producer is None or producer.kind != "transpose":
        return None
    perm = list(producer.attrs["perm"])
    rank = len(perm)
    if rank < 2 or perm != [*range(rank - 2), rank - 1, rank - 2]:
        return None
    return producer.inputs[0]


@int8_lowering(MATMUL_OPS, kernels="batch_matmul_s8",
               precision="int8 operands and output, each with its own per-tensor quantization",
               constraints="both operands are int8 activations of rank >= 2 (batch dims broadcast); "
                           "fused ReLU/ReLU6/hardtanh/clamp")
def lower_matmul(b: GraphBuilder, node: fx.Node) -> None:
    lhs, rhs = int8_input(b, node.args[0]), int8_input(b, node.args[1])
    if len(b.tensors[lhs].shape) < 2 or len(b.tensors[rhs].shape) < 2:
        raise NotInt8("matmul with a 1-D operand (a vector product) has no int8 kernel")
    act, q = output_quantize(node)
    ql, qr, qout = b.tensors[lhs].qparams, b.tensors[rhs].qparams, qparams_of(q)
    try:
        width = width_of(b, lhs, rhs)
        multiplier, shift = mul_quant_params(ql.scale, qr.scale, qout.scale)  # lhs_scale * rhs_scale / out
        if width is S16:
            if {ql.zero_point, qr.zero_point, qout.zero_point} != {0}:
                raise WidthError("int16 matmul operands must be symmetric")
            (multiplier,), (shift,) = s64_requant(([multiplier], [shift]))
    except ValueError as exc:
        raise NotInt8(f"matmul scales out of range: {exc}") from None
    nodes = fuse(b, node, act)
    lhs, rhs = b.as_layout(lhs, "plain", nodes), b.as_layout(rhs, "plain", nodes)
    rhs_t = _transpose_source(b, rhs)
    adj_y = rhs_t is not None
    act_min, act_max = activation_range(act, qout, width)
    out = b.add_tensor(q.name, node_shape(node), width.dtype, qparams=qout)
    attrs = {"output_multiplier": int(multiplier), "output_shift": int(shift), "act_min": act_min, "act_max": act_max,
             "adj_x": 0, "adj_y": int(adj_y)}
    if width is S8:
        attrs = {"lhs_offset": -ql.zero_point, "rhs_offset": -qr.zero_point, "output_offset": qout.zero_point, **attrs}
    b.add_op("batch_matmul" + width.suffix, [lhs, rhs_t if adj_y else rhs], [out], attrs, nodes=nodes)
    b.env[q] = out
