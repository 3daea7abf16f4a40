"""What every int8 lowering shares: the registry (``INT8_LOWERINGS`` + each lowering's doc entry),
the ``NotInt8`` signal, and helpers that read a quantized pattern out of the PT2E graph.

A lowering takes the builder and the pattern's anchor node (e.g. the ``conv2d`` between its
input's ``dequantize`` and its output's ``quantize``). It either emits the int8 op and maps the
output ``quantize`` node to the op's output tensor, or raises :class:`NotInt8` with the reason
*before emitting anything*; the caller then runs the node in fp32.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import torch
from torch import fx

from ...ir import INT4, INT4_WEIGHT_KINDS, QParams, kernel_scratch_bytes
from ...kernels.fc_pairs import S8_PAIRS, pack_pairs, weight_layout_s8
from ...kernels.int4 import (
    S4_HALVES,
    S4_HALVES_KINDS,
    bias16,
    multipliers16,
    pack_int4,
    pack_int4_halves,
    weight_layout,
)
from ...kernels.quant_utils import quantize_multipliers, quantize_per_tensor
from ...quantize.patterns import SPEC_TARGETS
from ...quantize.quantizer import fused_activation
from ...targets import get_target
from ..builder import (
    NCHW_TO_NHWC,
    GraphBuilder,
    QuantizedConstant,
    get_attr_value,
    is_dq,
    is_dq_channel,
    is_q,
    qparams_of,
)
from .s16 import S8, S16, Width, WidthError, bias_int64, s16_kind, s64_requant

aten = torch.ops.aten

Lowering = Callable[[GraphBuilder, fx.Node], None]


class NotInt8(Exception):
    """The pattern cannot run as an int8 kernel; ``str(exc)`` says why."""


@dataclass(frozen=True)
class OpDoc:
    """One row of docs/ops.md: what a lowering produces and when it applies."""

    kernels: str  # op kind(s) emitted, e.g. "conv2d_s8 / depthwise_conv2d_s8"
    precision: str  # what is int8 / int32 and how it is quantized
    constraints: str  # when the int8 kernel applies (otherwise: fp32 fallback with the reason)


# aten op -> lowering function: the one table of what lowers to int8. Filled by @int8_lowering.
INT8_LOWERINGS: dict[object, Lowering] = {}
# lowering function -> its doc entry (the per-op constraints beside each function).
OP_DOCS: dict[Lowering, OpDoc] = {}
# kind -> a function making a small model (and its example inputs) that lowers to it: each kind's fuzz seed
# (mcuforge.fuzz) and the check that the kind is reached from torch (tests/test_kinds.py).
Example = Callable[[], tuple[torch.nn.Module, tuple[torch.Tensor, ...]]]
EXAMPLES: dict[str, Example] = {}


def int8_lowering(targets: Iterable[object] = (), *, kernels: str = "", precision: str, constraints: str = "",
                  kind: str = "", example: Example | None = None) -> Callable[[Lowering], Lowering]:
    """Register ``fn`` as the int8 lowering of every aten op in ``targets``, with its doc row. A lowering to
    one kind may name it instead (``kind=``): its targets are then the kind's spec's ``aten`` ops (which also
    tell the quantizer how to annotate them), and ``example`` its example model."""
    if kind:
        targets, kernels = [*targets, *SPEC_TARGETS.get(kind, ())], kernels or kind
    if not targets or not kernels:
        raise ValueError("int8_lowering: name the aten targets and the kernels, or the kind")

    def register(fn: Lowering) -> Lowering:
        for target in targets:
            INT8_LOWERINGS[target] = fn
        OP_DOCS[fn] = OpDoc(kernels, precision, constraints)
        if example is not None:
            EXAMPLES[kind or kernels] = example
        return fn
    return register


# -- reading the pattern ------------------------------------------------------------------------

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


def arg(node: fx.Node, index: int, name: str, default: object) -> object:
    """Argument ``index`` (positional) or ``name`` (keyword) of ``node``, else ``default``."""
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def pair(value: object) -> tuple[int, int]:
    if isinstance(value, int):
        return value, value
    values = list(value)  # type: ignore[arg-type]
    return (int(values[0]), int(values[0])) if len(values) == 1 else (int(values[0]), int(values[1]))


def nhwc(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(shape[i] for i in NCHW_TO_NHWC)


def stored_dim(b: GraphBuilder, name: str, dim: int) -> int:
    """Where torch's dimension ``dim`` of tensor ``name`` lies in its stored layout."""
    t = b.tensors[name]
    dim = dim % len(t.shape)
    return NCHW_TO_NHWC.index(dim) if t.layout == "nhwc" else dim


def quantize_value(value: float, qp: QParams, width: Width = S8) -> int:
    """A float in ``qp``'s int8 (or int16) domain, with the arithmetic of the output quantize."""
    q = quantize_per_tensor(np.array([value], np.float32), qp.scale, qp.zero_point, width.qmin, width.qmax, np.int64)
    return int(q[0])


def activation_range(act: fx.Node | None, qp: QParams, width: Width = S8) -> tuple[int, int]:
    """activation_min/max of a fused ReLU/hardtanh/clamp in the output's int8 (or int16) domain.

    The bounds are quantized with the same arithmetic as the output quantize, so clamping
    before or after quantization gives the same bytes."""
    if act is None:
        return width.qmin, width.qmax
    if act.target in (aten.relu.default, aten.relu_.default):
        lo, hi = 0.0, None
    elif act.target == aten.relu6.default:
        lo, hi = 0.0, 6.0
    elif act.target in (aten.hardtanh.default, aten.hardtanh_.default):
        lo, hi = arg(act, 1, "min_val", -1.0), arg(act, 2, "max_val", 1.0)
    else:  # clamp
        lo, hi = arg(act, 1, "min", None), arg(act, 2, "max", None)
    return ((width.qmin if lo is None else quantize_value(lo, qp, width)),
            (width.qmax if hi is None else quantize_value(hi, qp, width)))


def same_qparams(b: GraphBuilder, src: str, q: fx.Node) -> QParams:
    qin, qout = b.tensors[src].qparams, qparams_of(q)
    if qin != qout:
        raise NotInt8(f"output quantization {qout} differs from its input's {qin}")
    return qout


def shared_quant_io(b: GraphBuilder, node: fx.Node) -> tuple[str, fx.Node, QParams]:
    """For an op whose int8 output shares its input's quantization (data movement, pooling, clamp):
    the int8 tensor of input 0, the output ``quantize`` node and the shared quantization."""
    src = int8_input(b, node.args[0])
    _act, q = output_quantize(node, fuse=False)
    return src, q, same_qparams(b, src, q)


def fuse(b: GraphBuilder, node: fx.Node, act: fx.Node | None) -> list[fx.Node]:
    """Mark a fused activation as consumed; returns the pattern's nodes (for debug info)."""
    if act is None:
        return [node]
    b.fused.add(act)
    return [node, act]


# -- weights, bias, requantization ----------------------------------------------------------------

def bias_int32(b: GraphBuilder, bias: object, input_scale: float, weight_scales: np.ndarray) -> np.ndarray:
    """The int32 bias with scale input_scale * weight_scale[c] (quantized here if PT2E left it float)."""
    expected = np.float64(input_scale) * weight_scales.astype(np.float64)
    if bias is None:
        return np.zeros(len(weight_scales), np.int32)
    if is_dq_channel(bias):
        qc = b.quantized_constant(bias)
        if np.allclose(qc.scales, expected, rtol=1e-6, atol=0):
            return qc.data.astype(np.int32)
        real = qc.data.astype(np.float64) * qc.scales
    elif is_dq(bias) and isinstance(bias.args[0], fx.Node) and bias.args[0].op == "get_attr":
        real = get_attr_value(b.gm, bias.args[0]).double().numpy() * float(bias.args[1])  # per-tensor weights
    elif isinstance(bias, fx.Node) and bias.op == "get_attr":
        real = get_attr_value(b.gm, bias).double().numpy()
    else:
        raise NotInt8("its bias is not a constant")
    return np.clip(np.round(real / expected), -(2**31), 2**31 - 1).astype(np.int32)


def weights(b: GraphBuilder, w: object, axis: int = 0) -> QuantizedConstant:
    """The int8 (or int4-range) symmetric weight behind ``w``, per channel along ``axis``: a per-channel
    dequantize, or a per-tensor one with zero point 0 (its scale then repeated for every channel)."""
    if is_dq(w) and isinstance(w.args[0], fx.Node) and w.args[0].op == "get_attr" and int(w.args[2]) == 0:
        data = get_attr_value(b.gm, w.args[0]).numpy()
        if data.dtype == np.int8 and data.ndim > axis:
            scales = np.full(data.shape[axis], float(w.args[1]), np.float32)
            return QuantizedConstant(data, scales, axis, (int(w.args[3]), int(w.args[4])))
    if not is_dq_channel(w):
        raise NotInt8("its weight is not an int8 constant")
    qc = b.quantized_constant(w)
    if qc.data.dtype != np.int8 or qc.axis != axis:
        raise NotInt8("its weight is not int8 per output channel")
    return qc


def requant_params(input_scale: float, weight_scales: np.ndarray, output_scale: float):
    """Per-channel (multiplier, shift) for input_scale * weight_scale[c] / output_scale."""
    effective = np.float64(input_scale) * weight_scales.astype(np.float64) / np.float64(output_scale)
    try:
        return quantize_multipliers(effective)
    except ValueError as exc:
        raise NotInt8(f"requantization scale out of range: {exc}") from None


def per_tensor_if_uniform(params):
    """(multipliers, shifts) as one pair when every channel has the same (the per-tensor kernels' form:
    the same bits, O - 1 fewer pairs in flash); unchanged otherwise."""
    mult, shift = (np.asarray(p, np.int64) for p in params)
    if mult.size > 1 and (mult == mult[0]).all() and (shift == shift[0]).all():
        return mult[:1], shift[:1]
    return params


def requant_constants(b: GraphBuilder, base: str, params) -> tuple[str, str]:
    """The multipliers (int32, or the s4 kinds' int16) and shifts (int8: every shift is in [-31, 30]) as
    constants."""
    mult, shift = params
    mult = np.asarray(mult)
    return (b.constant(f"{base}_multipliers", mult if mult.dtype == np.int16 else mult.astype(np.int32)),
            b.constant(f"{base}_shifts", np.asarray(shift).astype(np.int8)))


def reads_no_padding(kind: str, attrs: dict[str, object]) -> bool:
    """Every tap of the op reads an input value: a fully connected layer, or a convolution without
    padding (its output size then keeps every window inside the input)."""
    return kind == "fully_connected_s8" or (kind == "conv2d_s8" and list(attrs.get("padding", [1])) == [0, 0])


def fold_input_offset(bias: np.ndarray, weight: np.ndarray, input_offset: int) -> np.ndarray:
    """The bias that makes ``input_offset`` 0: bias + input_offset * sum(weights of the channel), wrapped to
    int32 as the kernels' accumulators wrap. sum((x + off) * w) + bias == sum(x * w) + (bias + off * sum(w))
    holds exactly whenever no tap is padding (``reads_no_padding``), so the op gives the same bytes; the
    kernels then skip the per-tap offset (the MVE paths skip summing the weights at run time)."""
    sums = weight.reshape(weight.shape[0], -1).astype(np.int64).sum(axis=1)
    folded = bias.astype(np.int64) + np.int64(input_offset) * sums
    return ((folded + 2**31) % 2**32 - 2**31).astype(np.int32)


def _isa(target: str) -> tuple[bool, bool]:
    t = get_target(target)
    return t.has_dsp, t.has_mve


def emit_weighted_op(b: GraphBuilder, node: fx.Node, act: fx.Node | None, q: fx.Node, kind: str, src: str,
                     convert_input: Callable[[list[fx.Node]], str], weight: np.ndarray, weight_scales: np.ndarray,
                     bias: object, out_shape: tuple[int, ...], out_layout: str, attrs: dict[str, object]) -> str:
    """The int8 op of a weighted pattern (conv, depthwise, transposed conv, linear) whose output
    quantize node is ``q`` and fused activation ``act``.

    The int32 bias and the per-channel requantization are computed first (either may raise
    NotInt8); only then is the activation fused, the input converted by ``convert_input`` (which
    may emit layout ops), and the constants and the op emitted. ``attrs`` are the op's own
    attributes; the offsets and the activation range are added here. Returns the output tensor.
    """
    if b.tensors[src].dtype == "int16":
        return _emit_weighted_s16(b, node, act, q, kind, src, convert_input, weight, weight_scales, bias, out_shape,
                                  out_layout, attrs)
    qin, qout = b.tensors[src].qparams, qparams_of(q)
    bias_int = bias_int32(b, bias, qin.scale, weight_scales)
    in_off = -qin.zero_point
    if in_off and reads_no_padding(kind, attrs):
        bias_int, in_off = fold_input_offset(bias_int, weight, in_off), 0
    elif in_off and kind in S4_HALVES_KINDS and reads_no_padding(kind.replace("_s4", "_s8"), attrs) and \
            weight_layout(kind, weight.shape, get_target(b.target).has_mve) == S4_HALVES:
        # Helium's S4_HALVES loops skip summing the weights when the offset is folded; the s4 kinds' bias is int16
        # where every value fits, so fold only where that stays so (or was int32 already): the same flash
        folded = fold_input_offset(bias_int, weight, in_off)
        if bias16(folded) is not None or bias16(bias_int) is None:
            bias_int, in_off = folded, 0
    requant = requant_params(qin.scale, weight_scales, qout.scale)
    nodes = fuse(b, node, act)
    x = convert_input(nodes)
    base = q.name
    if kind in INT4_WEIGHT_KINDS:  # packed two per byte: CMSIS-NN's s4 layout, or on Helium the one its loops read
        layout = weight_layout(kind, weight.shape, get_target(b.target).has_mve)
        packed = pack_int4_halves(weight) if layout == S4_HALVES else pack_int4(weight)
        w_name = b.add_tensor(f"{base}_weight", weight.shape, INT4, data=packed, layout=layout)
    elif in_off == 0 and weight_layout_s8(kind, weight.shape, *_isa(b.target)) == S8_PAIRS:
        # the DSP cores' fully connected loop reads pairs of rows (kernels/fc_pairs.py); the lowering folds the
        # input offset, which those loops require
        w_name = b.add_tensor(f"{base}_weight", weight.shape, "int8", data=pack_pairs(weight), layout=S8_PAIRS)
    else:
        w_name = b.constant(f"{base}_weight", weight)
    if kind in ("fully_connected_s8", "fully_connected_s4"):
        # Per-tensor requantization (arm_fully_connected_s8 / _s4) when every output channel has the same;
        # else per channel: fully_connected_per_channel_s8, or fully_connected_s4 with length-O parameters.
        requant = per_tensor_if_uniform(requant)
        if kind == "fully_connected_s8" and len(requant[0]) > 1:
            kind = "fully_connected_per_channel_s8"
    if kind in INT4_WEIGHT_KINDS:  # the compact per-channel parameters (kernels/int4.py), where they fit
        narrow = bias16(bias_int)
        bias_int = bias_int if narrow is None else narrow
        requant = multipliers16(*requant) or requant
    bias_name = b.constant(f"{base}_bias", bias_int)
    mult, shift = requant_constants(b, base, requant)
    act_min, act_max = activation_range(act, qout)
    out = b.add_tensor(base, out_shape, "int8", qparams=qout, layout=out_layout)
    op = b.add_op(kind, [x, w_name, bias_name, mult, shift], [out],
                  {"input_offset": in_off, "output_offset": qout.zero_point, **attrs,
                   "act_min": act_min, "act_max": act_max}, nodes=nodes)
    op.scratch_bytes = kernel_scratch_bytes(kind, weight.shape, b.target, out_shape, attrs)
    return out


def _emit_weighted_s16(b: GraphBuilder, node: fx.Node, act: fx.Node | None, q: fx.Node, kind_s8: str, src: str,
                       convert_input: Callable[[list[fx.Node]], str], weight: np.ndarray, weight_scales: np.ndarray,
                       bias: object, out_shape: tuple[int, ...], out_layout: str, attrs: dict[str, object]) -> str:
    """``emit_weighted_op`` for an int16 input (A16W8): conv2d_s16 / depthwise_conv2d_s16 / fully_connected_s16,
    an int64 bias, arm_nn_requantize_s64's parameters, no offsets; the same order (checks first)."""
    qin, qout = b.tensors[src].qparams, qparams_of(q)
    try:
        kind = s16_kind(kind_s8)
        if qin.zero_point != 0 or qout.zero_point != 0:
            raise WidthError(f"int16 quantization {qin} -> {qout} is not symmetric")
        bias_int = bias_int64(b, bias, qin.scale, weight_scales)
        mult, shift = s64_requant(requant_params(qin.scale, weight_scales, qout.scale))
    except WidthError as exc:
        raise NotInt8(str(exc)) from None
    nodes = fuse(b, node, act)
    x = convert_input(nodes)
    base = q.name
    w_name = b.constant(f"{base}_weight", weight)
    bias_name = b.add_tensor(f"{base}_bias", bias_int.shape, "int64", data=bias_int)
    mult_name, shift_name = requant_constants(b, base, (mult, shift))
    act_min, act_max = activation_range(act, qout, S16)
    out = b.add_tensor(base, out_shape, "int16", qparams=qout, layout=out_layout)
    op = b.add_op(kind, [x, w_name, bias_name, mult_name, shift_name], [out],
                  {**attrs, "act_min": act_min, "act_max": act_max}, nodes=nodes)
    op.scratch_bytes = kernel_scratch_bytes(kind, weight.shape, b.target, out_shape, attrs)
    return out
