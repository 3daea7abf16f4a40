"""Lowering of quantized patterns to int8 kernels with CMSIS-NN parameters: one function per op.

Each function takes the builder and the pattern's anchor node (e.g. the ``conv2d`` between
its input's ``dequantize`` and its output's ``quantize``). It either emits the int8 op and
maps the output ``quantize`` node to the op's output tensor, or raises :class:`NotInt8`
with the reason; the caller then runs the node in fp32.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import fx

from ..ir import QParams
from ..kernels.quant_utils import add_quant_params, quantize_multipliers, quantize_per_tensor
from ..quantize.patterns import (
    ADD_OPS,
    CONV_OPS,
    DATA_MOVEMENT_OPS,
    FUSABLE_ACTIVATIONS,
    IDENTITY_OPS,
    LINEAR_OPS,
)
from ..quantize.quantizer import fused_activation
from .builder import (
    NCHW_TO_NHWC,
    GraphBuilder,
    get_attr_value,
    is_dq_channel,
    is_q,
    node_shape,
    qparams_of,
)

aten = torch.ops.aten


class NotInt8(Exception):
    """The pattern cannot run as an int8 kernel; ``str(exc)`` says why."""


# -- pattern helpers ---------------------------------------------------------------------------

def int8_input(b: GraphBuilder, x: object) -> str:
    src = b.int8_source(x)
    if src is None:
        raise NotInt8("its input is not int8-quantized")
    return src


def output_quantize(node: fx.Node, fuse: bool = True) -> tuple[fx.Node | None, fx.Node]:
    """(fused activation or None, the ``quantize`` node of the pattern's output)."""
    act = fused_activation(node) if fuse else None
    tail = act or node
    users = list(tail.users)
    if len(users) != 1 or not is_q(users[0]):
        raise NotInt8("its output is used in fp32 (not quantized)")
    return act, users[0]


def _arg(node: fx.Node, index: int, name: str, default: object) -> object:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _pair(value: object) -> tuple[int, int]:
    if isinstance(value, int):
        return value, value
    values = list(value)  # type: ignore[arg-type]
    return (int(values[0]), int(values[0])) if len(values) == 1 else (int(values[0]), int(values[1]))


def activation_range(act: fx.Node | None, qp: QParams) -> tuple[int, int]:
    """activation_min/max of a fused ReLU/hardtanh/clamp in the output's int8 domain.

    The bounds are quantized with the same arithmetic as the output quantize, so clamping
    before or after quantization gives the same bytes."""
    if act is None:
        return -128, 127
    if act.target in (aten.relu.default, aten.relu_.default):
        lo, hi = 0.0, None
    elif act.target == aten.relu6.default:
        lo, hi = 0.0, 6.0
    elif act.target in (aten.hardtanh.default, aten.hardtanh_.default):
        lo, hi = _arg(act, 1, "min_val", -1.0), _arg(act, 2, "max_val", 1.0)
    else:  # clamp
        lo, hi = _arg(act, 1, "min", None), _arg(act, 2, "max", None)

    def q(v: object, default: int) -> int:
        if v is None:
            return default
        return int(quantize_per_tensor(np.array([v], np.float32), qp.scale, qp.zero_point)[0])

    return q(lo, -128), q(hi, 127)


def _same_qparams(b: GraphBuilder, src: str, q: fx.Node) -> QParams:
    qin, qout = b.tensors[src].qparams, qparams_of(q)
    if qin != qout:
        raise NotInt8(f"output quantization {qout} differs from its input's {qin}")
    return qout


def _bias_int32(b: GraphBuilder, bias: object, input_scale: float, weight_scales: np.ndarray) -> np.ndarray:
    """The int32 bias with scale input_scale * weight_scale[c] (quantized here if PT2E left it float)."""
    expected = np.float64(input_scale) * weight_scales.astype(np.float64)
    if bias is None:
        return np.zeros(len(weight_scales), np.int32)
    if is_dq_channel(bias):
        qc = b.quantized_constant(bias)
        if np.allclose(qc.scales, expected, rtol=1e-6, atol=0):
            return qc.data.astype(np.int32)
        real = qc.data.astype(np.float64) * qc.scales
    elif isinstance(bias, fx.Node) and bias.op == "get_attr":
        real = get_attr_value(b.gm, bias).double().numpy()
    else:
        raise NotInt8("its bias is not a constant")
    return np.clip(np.round(real / expected), -(2**31), 2**31 - 1).astype(np.int32)


def _weights(b: GraphBuilder, w: object):
    if not is_dq_channel(w):
        raise NotInt8("its weight is not an int8 constant")
    qc = b.quantized_constant(w)
    if qc.data.dtype != np.int8 or qc.axis != 0:
        raise NotInt8("its weight is not int8 per output channel")
    return qc


def _requant_params(input_scale: float, weight_scales: np.ndarray, output_scale: float):
    """Per-channel (multiplier, shift) for input_scale * weight_scale[c] / output_scale."""
    effective = np.float64(input_scale) * weight_scales.astype(np.float64) / np.float64(output_scale)
    try:
        return quantize_multipliers(effective)
    except ValueError as exc:
        raise NotInt8(f"requantization scale out of range: {exc}") from None


def _requant_constants(b: GraphBuilder, base: str, params) -> tuple[str, str]:
    mult, shift = params
    return (b.constant(f"{base}_multipliers", np.asarray(mult, np.int32)),
            b.constant(f"{base}_shifts", np.asarray(shift, np.int32)))


def _fuse(b: GraphBuilder, node: fx.Node, act: fx.Node | None) -> list[fx.Node]:
    """Mark a fused activation as consumed; returns the pattern's nodes (for debug info)."""
    if act is None:
        return [node]
    b.fused.add(act)
    return [node, act]


def _nhwc(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(shape[i] for i in NCHW_TO_NHWC)


# -- conv2d / depthwise conv2d ------------------------------------------------------------------

def lower_conv2d(b: GraphBuilder, node: fx.Node) -> None:
    x, w = node.args[0], node.args[1]
    bias = _arg(node, 2, "bias", None)
    stride = _pair(_arg(node, 3, "stride", 1))
    padding_arg = _arg(node, 4, "padding", 0)
    dilation = _pair(_arg(node, 5, "dilation", 1))
    groups = int(_arg(node, 6, "groups", 1))
    src = int8_input(b, x)
    wq = _weights(b, w)
    act, q = output_quantize(node)
    kh, kw = wq.data.shape[2], wq.data.shape[3]
    if isinstance(padding_arg, str):
        if padding_arg == "valid":
            padding = (0, 0)
        else:  # "same": symmetric only when the dilated kernel is odd
            eff = (dilation[0] * (kh - 1), dilation[1] * (kw - 1))
            if eff[0] % 2 or eff[1] % 2:
                raise NotInt8("padding='same' with an even kernel needs asymmetric padding")
            padding = (eff[0] // 2, eff[1] // 2)
    else:
        padding = _pair(padding_arg)
    qin, qout = b.tensors[src].qparams, qparams_of(q)
    in_channels = node_shape(x)[1]
    out_channels = wq.data.shape[0]
    depthwise = groups > 1 and groups == in_channels and out_channels % in_channels == 0
    if groups != 1 and not depthwise:
        raise NotInt8(f"grouped conv (groups={groups}) has no int8 kernel yet")
    bias_int = _bias_int32(b, bias, qin.scale, wq.scales)
    requant = _requant_params(qin.scale, wq.scales, qout.scale)
    nodes = _fuse(b, node, act)
    x_nhwc = b.as_layout(src, "nhwc", nodes)
    base = q.name
    if depthwise:
        weight = np.transpose(wq.data, (1, 2, 3, 0))  # (C*M, 1, KH, KW) -> (1, KH, KW, C*M)
    else:
        weight = np.transpose(wq.data, (0, 2, 3, 1))  # OIHW -> OHWI
    w_name = b.constant(f"{base}_weight", weight)
    bias_name = b.constant(f"{base}_bias", bias_int)
    mult, shift = _requant_constants(b, base, requant)
    act_min, act_max = activation_range(act, qout)
    out = b.add_tensor(base, _nhwc(node_shape(q)), "int8", qparams=qout, layout="nhwc")
    attrs = {"input_offset": -qin.zero_point, "output_offset": qout.zero_point, "stride": list(stride),
             "padding": list(padding), "dilation": list(dilation)}
    if depthwise:
        attrs["depth_multiplier"] = out_channels // in_channels
    attrs.update(act_min=act_min, act_max=act_max)
    kind = "depthwise_conv2d_s8" if depthwise else "conv2d_s8"
    b.add_op(kind, [x_nhwc, w_name, bias_name, mult, shift], [out], attrs, nodes=nodes)
    b.env[q] = out


# -- linear ---------------------------------------------------------------------------------------

def lower_linear(b: GraphBuilder, node: fx.Node) -> None:
    x, w = node.args[0], node.args[1]
    bias = _arg(node, 2, "bias", None)
    src = int8_input(b, x)
    wq = _weights(b, w)
    act, q = output_quantize(node)
    qin, qout = b.tensors[src].qparams, qparams_of(q)
    bias_int = _bias_int32(b, bias, qin.scale, wq.scales)
    requant = _requant_params(qin.scale, wq.scales, qout.scale)
    nodes = _fuse(b, node, act)
    x_plain = b.as_layout(src, "plain", nodes)
    base = q.name
    w_name = b.constant(f"{base}_weight", wq.data)
    bias_name = b.constant(f"{base}_bias", bias_int)
    mult, shift = _requant_constants(b, base, requant)
    act_min, act_max = activation_range(act, qout)
    out = b.add_tensor(base, node_shape(q), "int8", qparams=qout)
    attrs = {"input_offset": -qin.zero_point, "output_offset": qout.zero_point,
             "act_min": act_min, "act_max": act_max}
    b.add_op("fully_connected_s8", [x_plain, w_name, bias_name, mult, shift], [out], attrs, nodes=nodes)
    b.env[q] = out


# -- add ------------------------------------------------------------------------------------------

def lower_add(b: GraphBuilder, node: fx.Node) -> None:
    a_node, b_node = node.args[0], node.args[1]
    if node.kwargs.get("alpha", 1) != 1:
        raise NotInt8("add with alpha != 1")
    a_src, b_src = int8_input(b, a_node), int8_input(b, b_node)
    if node_shape(a_node) != node_shape(b_node):
        raise NotInt8(f"broadcasting add {node_shape(a_node)} + {node_shape(b_node)} has no int8 kernel yet")
    act, q = output_quantize(node)
    qa, qb, qout = b.tensors[a_src].qparams, b.tensors[b_src].qparams, qparams_of(q)
    try:
        params = add_quant_params(qa.scale, qb.scale, qout.scale)
    except ValueError as exc:
        raise NotInt8(f"add scales out of range: {exc}") from None
    nodes = _fuse(b, node, act)
    layout = b.tensors[a_src].layout
    a_src, b_src = b.as_layout(a_src, layout, nodes), b.as_layout(b_src, layout, nodes)
    act_min, act_max = activation_range(act, qout)
    out = b.like(q.name, a_src, qparams=qout)
    attrs = {
        "a_offset": -qa.zero_point, "a_multiplier": params["a_multiplier"], "a_shift": params["a_shift"],
        "b_offset": -qb.zero_point, "b_multiplier": params["b_multiplier"], "b_shift": params["b_shift"],
        "left_shift": params["left_shift"], "output_offset": qout.zero_point,
        "output_multiplier": params["output_multiplier"], "output_shift": params["output_shift"],
        "act_min": act_min, "act_max": act_max,
    }
    b.add_op("add_s8", [a_src, b_src], [out], attrs, nodes=nodes)
    b.env[q] = out


# -- pooling --------------------------------------------------------------------------------------

def _pool(b: GraphBuilder, node: fx.Node, kind: str, kernel, stride, padding) -> None:
    src = int8_input(b, node.args[0])
    _act, q = output_quantize(node, fuse=False)
    qp = _same_qparams(b, src, q)
    x = b.as_layout(src, "nhwc", [node])
    out_shape = node_shape(q)
    layout = "nhwc" if len(out_shape) == 4 else "plain"  # mean without keepdim: (N, C), same bytes
    out = b.add_tensor(q.name, _nhwc(out_shape) if layout == "nhwc" else out_shape, "int8", qparams=qp,
                       layout=layout)
    attrs = {"kernel": list(kernel), "stride": list(stride), "padding": list(padding),
             "act_min": -128, "act_max": 127}
    b.add_op(kind, [x], [out], attrs, nodes=[node])
    b.env[q] = out


def lower_max_pool2d(b: GraphBuilder, node: fx.Node) -> None:
    kernel = _pair(node.args[1])
    stride_arg = _arg(node, 2, "stride", [])
    stride = _pair(stride_arg) if stride_arg else kernel
    padding = _pair(_arg(node, 3, "padding", 0))
    if _pair(_arg(node, 4, "dilation", 1)) != (1, 1):
        raise NotInt8("dilated max pooling has no int8 kernel")
    if _arg(node, 5, "ceil_mode", False):
        raise NotInt8("ceil_mode=True pooling has no int8 kernel")
    _pool(b, node, "maxpool_s8", kernel, stride, padding)


def lower_avg_pool2d(b: GraphBuilder, node: fx.Node) -> None:
    kernel = _pair(node.args[1])
    stride_arg = _arg(node, 2, "stride", [])
    stride = _pair(stride_arg) if stride_arg else kernel
    padding = _pair(_arg(node, 3, "padding", 0))
    if _arg(node, 4, "ceil_mode", False):
        raise NotInt8("ceil_mode=True pooling has no int8 kernel")
    if padding != (0, 0) and _arg(node, 5, "count_include_pad", True):
        raise NotInt8("avg pooling with count_include_pad=True over padding (CMSIS-NN averages valid pixels)")
    if _arg(node, 6, "divisor_override", None) is not None:
        raise NotInt8("avg pooling with divisor_override")
    _pool(b, node, "avgpool_s8", kernel, stride, padding)


def lower_adaptive_avg_pool2d(b: GraphBuilder, node: fx.Node) -> None:
    _n, _c, h, w = node_shape(node.args[0])
    oh, ow = _pair(node.args[1])
    if h % oh or w % ow:
        raise NotInt8(f"adaptive avg pool {h}x{w} -> {oh}x{ow} has uneven windows")
    kernel = (h // oh, w // ow)
    _pool(b, node, "avgpool_s8", kernel, kernel, (0, 0))


def lower_mean(b: GraphBuilder, node: fx.Node) -> None:
    shape = node_shape(node.args[0])
    dims = sorted(d % len(shape) for d in node.args[1]) if len(node.args) > 1 else []
    if len(shape) != 4 or dims != [2, 3]:
        raise NotInt8(f"mean over dims {node.args[1] if len(node.args) > 1 else 'all'} (int8 only over H, W)")
    _pool(b, node, "avgpool_s8", (shape[2], shape[3]), (shape[2], shape[3]), (0, 0))


# -- standalone activations, data movement, identities -------------------------------------------

def lower_clamp(b: GraphBuilder, node: fx.Node) -> None:
    src = int8_input(b, node.args[0])
    _act, q = output_quantize(node, fuse=False)
    qp = _same_qparams(b, src, q)
    act_min, act_max = activation_range(node, qp)
    out = b.like(q.name, src, qparams=qp)
    b.add_op("clamp_s8", [src], [out], {"act_min": act_min, "act_max": act_max}, nodes=[node])
    b.env[q] = out


def lower_reshape(b: GraphBuilder, node: fx.Node) -> None:
    src = int8_input(b, node.args[0])
    _act, q = output_quantize(node, fuse=False)
    qp = _same_qparams(b, src, q)
    # An NHWC tensor whose bytes are already in NCHW order (C == 1 or H*W == 1) reshapes as is.
    x = src if b.same_bytes_as_plain(src) else b.as_layout(src, "plain", [node])
    out = b.add_tensor(q.name, node_shape(q), "int8", qparams=qp)
    b.add_op("reshape", [x], [out], nodes=[node])
    b.env[q] = out


def lower_permute(b: GraphBuilder, node: fx.Node) -> None:
    src = int8_input(b, node.args[0])
    _act, q = output_quantize(node, fuse=False)
    qp = _same_qparams(b, src, q)
    x = b.as_layout(src, "plain", [node])
    rank = len(b.tensors[x].shape)
    perm = [int(d) % rank for d in node.args[1]]
    out = b.add_tensor(q.name, node_shape(q), "int8", qparams=qp)
    b.add_op("transpose", [x], [out], {"perm": perm}, nodes=[node])
    b.env[q] = out


def lower_identity(b: GraphBuilder, node: fx.Node) -> None:
    src = int8_input(b, node.args[0])
    _act, q = output_quantize(node, fuse=False)
    _same_qparams(b, src, q)
    b.env[q] = src  # no op: the int8 tensor flows through


INT8_LOWERINGS: dict[object, Callable[[GraphBuilder, fx.Node], None]] = {
    **{t: lower_conv2d for t in CONV_OPS},
    **{t: lower_linear for t in LINEAR_OPS},
    **{t: lower_add for t in ADD_OPS},
    aten.max_pool2d.default: lower_max_pool2d,
    aten.avg_pool2d.default: lower_avg_pool2d,
    aten.adaptive_avg_pool2d.default: lower_adaptive_avg_pool2d,
    aten.mean.dim: lower_mean,
    **{t: lower_clamp for t in FUSABLE_ACTIVATIONS},
    **{t: lower_reshape for t in DATA_MOVEMENT_OPS - {aten.permute.default}},
    aten.permute.default: lower_permute,
    **{t: lower_identity for t in IDENTITY_OPS},
}
