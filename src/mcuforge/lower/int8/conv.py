"""Convolutions: conv2d / depthwise conv2d, conv1d (as a 2-D conv with H = 1), transposed conv2d."""

from __future__ import annotations

import numpy as np
from torch import fx

from ...quantize.patterns import CONV1D_OPS, CONV2D_OPS, TRANSPOSE_CONV_OPS
from ..builder import GraphBuilder, node_shape, qparams_of
from .common import (
    NotInt8,
    activation_range,
    arg,
    bias_int32,
    fuse,
    int8_input,
    int8_lowering,
    nhwc,
    output_quantize,
    pair,
    requant_constants,
    requant_params,
    weights,
)

CONV_PRECISION = "int8 activations (per tensor), int8 symmetric weights per output channel, int32 bias"


def _padding(padding_arg: object, kernel: tuple[int, int], dilation: tuple[int, int]) -> tuple[int, int]:
    if not isinstance(padding_arg, str):
        return pair(padding_arg)
    if padding_arg == "valid":
        return 0, 0
    # "same": symmetric only when the dilated kernel is odd.
    eff = (dilation[0] * (kernel[0] - 1), dilation[1] * (kernel[1] - 1))
    if eff[0] % 2 or eff[1] % 2:
        raise NotInt8("padding='same' with an even kernel needs asymmetric padding")
    return eff[0] // 2, eff[1] // 2


def _emit_conv(b: GraphBuilder, node: fx.Node, src: str, to_nhwc, weight_oihw: np.ndarray, scales: np.ndarray,
               bias: object, stride, padding_arg, dilation, groups: int, in_channels: int,
               out_shape_nhwc: tuple[int, ...]) -> tuple[fx.Node, str]:
    """Checks, then emits conv2d_s8 / depthwise_conv2d_s8 on the NHWC form of ``src`` (``to_nhwc``
    converts it, emitting ops only after every check passed); returns the pattern's output
    ``quantize`` node and the NHWC output tensor."""
    act, q = output_quantize(node)
    kernel = (weight_oihw.shape[2], weight_oihw.shape[3])
    padding = _padding(padding_arg, kernel, dilation)
    qin, qout = b.tensors[src].qparams, qparams_of(q)
    out_channels = weight_oihw.shape[0]
    depthwise = groups > 1 and groups == in_channels and out_channels % in_channels == 0
    if groups != 1 and not depthwise:
        raise NotInt8(f"grouped conv (groups={groups}) has no int8 kernel yet")
    bias_int = bias_int32(b, bias, qin.scale, scales)
    requant = requant_params(qin.scale, scales, qout.scale)
    nodes = fuse(b, node, act)
    x_nhwc = to_nhwc(nodes)
    base = q.name
    if depthwise:
        weight = np.transpose(weight_oihw, (1, 2, 3, 0))  # (C*M, 1, KH, KW) -> (1, KH, KW, C*M)
    else:
        weight = np.transpose(weight_oihw, (0, 2, 3, 1))  # OIHW -> OHWI
    w_name = b.constant(f"{base}_weight", weight)
    bias_name = b.constant(f"{base}_bias", bias_int)
    mult, shift = requant_constants(b, base, requant)
    act_min, act_max = activation_range(act, qout)
    out = b.add_tensor(base, out_shape_nhwc, "int8", qparams=qout, layout="nhwc")
    attrs = {"input_offset": -qin.zero_point, "output_offset": qout.zero_point, "stride": list(stride),
             "padding": list(padding), "dilation": list(dilation)}
    if depthwise:
        attrs["depth_multiplier"] = out_channels // in_channels
    attrs.update(act_min=act_min, act_max=act_max)
    kind = "depthwise_conv2d_s8" if depthwise else "conv2d_s8"
    b.add_op(kind, [x_nhwc, w_name, bias_name, mult, shift], [out], attrs, nodes=nodes)
    return q, out


def _single(value: object) -> int:
    return int(value) if isinstance(value, int) else int(list(value)[0])  # type: ignore[arg-type]


@int8_lowering(CONV2D_OPS, kernels="conv2d_s8 / depthwise_conv2d_s8", precision=CONV_PRECISION,
               constraints="groups 1 or depthwise (groups = in channels, any depth multiplier); padding='same' "
                           "only with odd dilated kernels; fused ReLU/ReLU6/hardtanh/clamp")
def lower_conv2d(b: GraphBuilder, node: fx.Node) -> None:
    x = node.args[0]
    src = int8_input(b, x)
    wq = weights(b, node.args[1])
    q, out = _emit_conv(b, node, src, lambda nodes: b.as_layout(src, "nhwc", nodes), wq.data, wq.scales,
                        arg(node, 2, "bias", None), pair(arg(node, 3, "stride", 1)), arg(node, 4, "padding", 0),
                        pair(arg(node, 5, "dilation", 1)), int(arg(node, 6, "groups", 1)), node_shape(x)[1],
                        nhwc(node_shape(node)))
    b.env[q] = out


@int8_lowering(CONV1D_OPS, kernels="conv2d_s8 / depthwise_conv2d_s8", precision=CONV_PRECISION,
               constraints="run as a 2-D conv with H = 1 on the (N, 1, L, C) view; groups 1 or depthwise; "
                           "fused ReLU/ReLU6/hardtanh/clamp")
def lower_conv1d(b: GraphBuilder, node: fx.Node) -> None:
    """(N, C, L) -> conv over the NHWC view (N, 1, L, C). The output is stored NHWC and its plain
    (N, C, L) form is made only if some consumer needs it (unused conversions are pruned)."""
    x = node.args[0]
    src = int8_input(b, x)
    if len(b.tensors[src].shape) != 3:
        raise NotInt8("conv1d of an unbatched (C, L) input")
    wq = weights(b, node.args[1])
    out_c, in_per_group, k = wq.data.shape
    padding_arg = arg(node, 4, "padding", 0)
    padding = padding_arg if isinstance(padding_arg, str) else (0, _single(padding_arg))
    n, c_out, length = node_shape(node)
    q, out = _emit_conv(b, node, src, lambda nodes: b.as_rows(src, nodes), wq.data.reshape(out_c, in_per_group, 1, k),
                        wq.scales, arg(node, 2, "bias", None), (1, _single(arg(node, 3, "stride", 1))), padding,
                        (1, _single(arg(node, 5, "dilation", 1))), int(arg(node, 6, "groups", 1)), node_shape(x)[1],
                        (n, 1, length, c_out))
    b.env[q] = b.from_rows(out, [node])


@int8_lowering(TRANSPOSE_CONV_OPS, kernels="transpose_conv2d_s8", precision=CONV_PRECISION,
               constraints="groups 1, dilation 1; output_padding < stride; fused ReLU/ReLU6/hardtanh/clamp")
def lower_conv_transpose2d(b: GraphBuilder, node: fx.Node) -> None:
    x = node.args[0]
    src = int8_input(b, x)
    wq = weights(b, node.args[1], axis=1)  # torch: (Cin, Cout, KH, KW), channels on axis 1
    stride = pair(arg(node, 3, "stride", 1))
    padding = pair(arg(node, 4, "padding", 0))
    if int(arg(node, 6, "groups", 1)) != 1:
        raise NotInt8("grouped transposed conv has no int8 kernel")
    if pair(arg(node, 7, "dilation", 1)) != (1, 1):
        raise NotInt8("dilated transposed conv has no int8 kernel")
    act, q = output_quantize(node)
    qin, qout = b.tensors[src].qparams, qparams_of(q)
    bias_int = bias_int32(b, arg(node, 2, "bias", None), qin.scale, wq.scales)
    requant = requant_params(qin.scale, wq.scales, qout.scale)
    nodes = fuse(b, node, act)
    x_nhwc = b.as_layout(src, "nhwc", nodes)
    base = q.name
    w_name = b.constant(f"{base}_weight", np.transpose(wq.data, (1, 2, 3, 0)))  # (Cin, O, KH, KW) -> OHWI
    bias_name = b.constant(f"{base}_bias", bias_int)
    mult, shift = requant_constants(b, base, requant)
    act_min, act_max = activation_range(act, qout)
    out = b.add_tensor(base, nhwc(node_shape(node)), "int8", qparams=qout, layout="nhwc")
    attrs = {"input_offset": -qin.zero_point, "output_offset": qout.zero_point, "stride": list(stride),
             "padding": list(padding), "act_min": act_min, "act_max": act_max}
    b.add_op("transpose_conv2d_s8", [x_nhwc, w_name, bias_name, mult, shift], [out], attrs, nodes=nodes)
    b.env[q] = out

