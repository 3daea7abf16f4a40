"""Convolutions: conv2d / depthwise conv2d, conv1d (as a 2-D conv with H = 1), transposed conv2d."""

from __future__ import annotations

import numpy as np
from torch import fx

from ...quantize.patterns import CONV1D_OPS, CONV2D_OPS, TRANSPOSE_CONV_OPS
from ..builder import GraphBuilder, node_shape
from .common import (
    NotInt8,
    arg,
    emit_weighted_op,
    int8_input,
    int8_lowering,
    nhwc,
    output_quantize,
    pair,
    weights,
)

CONV_PRECISION = "int8 activations (per tensor), int8 symmetric weights per output channel, int32 bias"
# With quantization="w4a8" the weights are int4 ([-7, 7], packed two per byte): the s4 kinds.
CONV_S4_PRECISION = (CONV_PRECISION + " (a8w8); quantization=\"w4a8\": int4 symmetric weights per output channel, "
                     "packed two per byte, an int16 bias where it fits and 16-bit multipliers (a8w4)")


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
               out_shape_nhwc: tuple[int, ...], bits: int = 8) -> tuple[fx.Node, str]:
    """Checks, then emits conv2d_s8 / depthwise_conv2d_s8 (``bits`` 4: conv2d_s4 / depthwise_conv2d_s4) on
    the NHWC form of ``src`` (``to_nhwc`` converts it, emitting ops only after every check passed);
    returns the pattern's output ``quantize`` node and the NHWC output tensor."""
    act, q = output_quantize(node)
    kernel = (weight_oihw.shape[2], weight_oihw.shape[3])
    padding = _padding(padding_arg, kernel, dilation)
    out_channels = weight_oihw.shape[0]
    depthwise = groups > 1 and groups == in_channels and out_channels % in_channels == 0
    # Any other groups: conv2d_s8 as arm_convolve_s8 takes it (input channels = groups x filter channels).
    attrs: dict[str, object] = {"stride": list(stride), "padding": list(padding), "dilation": list(dilation)}
    if depthwise:
        weight = np.transpose(weight_oihw, (1, 2, 3, 0))  # (C*M, 1, KH, KW) -> (1, KH, KW, C*M)
        attrs["depth_multiplier"] = out_channels // in_channels
    else:
        weight = np.transpose(weight_oihw, (0, 2, 3, 1))  # OIHW -> OHWI, I = in_channels / groups
    kind = ("depthwise_conv2d" if depthwise else "conv2d") + ("_s4" if bits == 4 else "_s8")
    out = emit_weighted_op(b, node, act, q, kind, src, to_nhwc, weight, scales, bias, out_shape_nhwc, "nhwc", attrs)
    return q, out


def _single(value: object) -> int:
    return int(value) if isinstance(value, int) else int(list(value)[0])  # type: ignore[arg-type]


@int8_lowering(CONV2D_OPS, kernels="conv2d_s8 / depthwise_conv2d_s8 (int4 weights: conv2d_s4 / depthwise_conv2d_s4)",
               precision=CONV_S4_PRECISION,
               constraints="any groups (depthwise when groups = in channels, any depth multiplier); padding='same' "
                           "only with odd dilated kernels; fused ReLU/ReLU6/hardtanh/clamp")
def lower_conv2d(b: GraphBuilder, node: fx.Node) -> None:
    x = node.args[0]
    src = int8_input(b, x)
    wq = weights(b, node.args[1])
    q, out = _emit_conv(b, node, src, lambda nodes: b.as_layout(src, "nhwc", nodes), wq.data, wq.scales,
                        arg(node, 2, "bias", None), pair(arg(node, 3, "stride", 1)), arg(node, 4, "padding", 0),
                        pair(arg(node, 5, "dilation", 1)), int(arg(node, 6, "groups", 1)), node_shape(x)[1],
                        nhwc(node_shape(node)), wq.bits)
    b.env[q] = out


@int8_lowering(CONV1D_OPS, kernels="conv2d_s8 / depthwise_conv2d_s8 (int4 weights: conv2d_s4 / depthwise_conv2d_s4)",
               precision=CONV_S4_PRECISION,
               constraints="run as a 2-D conv with H = 1 on the (N, 1, L, C) view; any groups (depthwise when "
                           "groups = in channels); fused ReLU/ReLU6/hardtanh/clamp")
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
                        (n, 1, length, c_out), wq.bits)
    b.env[q] = b.from_rows(out, [node])


@int8_lowering(TRANSPOSE_CONV_OPS, kernels="transpose_conv2d_s8", precision=CONV_PRECISION + " (a8w8, also under "
               "quantization=\"w4a8\": CMSIS-NN has no s4 transposed convolution)",
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
    weight = np.transpose(wq.data, (1, 2, 3, 0))  # (Cin, O, KH, KW) -> OHWI
    b.env[q] = emit_weighted_op(b, node, act, q, "transpose_conv2d_s8", src,
                                lambda nodes: b.as_layout(src, "nhwc", nodes), weight, wq.scales,
                                arg(node, 2, "bias", None), nhwc(node_shape(node)), "nhwc",
                                {"stride": list(stride), "padding": list(padding)})

