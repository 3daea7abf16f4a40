"""Elementwise add and mul of two int8 (or two int16) tensors (or a tensor and a constant / a scalar), with
numpy broadcasting over equally ranked stored shapes (e.g. squeeze-excite: x * s, s (N, C, 1, 1))."""

from __future__ import annotations

import numpy as np
from torch import fx

from ...ir import QParams, kernel_scratch_bytes
from ...kernels.elementwise_s16 import add_s16_params
from ...kernels.mul import mul_quant_params
from ...kernels.quant_utils import add_quant_params
from ...quantize.patterns import ADD_OPS, MUL_OPS, SUB_OPS
from ..builder import NCHW_TO_NHWC, GraphBuilder, node_shape, qparams_of
from .common import NotInt8, activation_range, fuse, int8_input, int8_lowering, output_quantize
from .s16 import S8, S16, Width, WidthError, width_of

BROADCAST = ("shapes broadcast (numpy rules); an operand of lower rank must be a constant unless both "
             "are in torch's own (non-NHWC) order")


def _broadcast_check(b: GraphBuilder, names: list[str], out_rank: int, op: str) -> str:
    """The stored layout the op runs in; raises before anything is emitted if one operand
    cannot be brought to it."""
    layouts = {b.tensors[n].layout for n in names if not b.tensors[n].is_constant}
    layout = "nhwc" if "nhwc" in layouts and out_rank == 4 else "plain"
    for n in names:
        t = b.tensors[n]
        if len(t.shape) < out_rank and not t.is_constant and layout == "nhwc":
            raise NotInt8(f"{op} by a non-constant of another shape: unsupported broadcast")
    return layout


def _broadcast_operand(b: GraphBuilder, name: str, out_rank: int, layout: str, nodes: list[fx.Node]) -> str:
    """``name`` with the output's rank (leading 1s) in ``layout``: constants at compile time,
    activations by a free reshape and, for 4-D tensors, the layout change."""
    t = b.tensors[name]
    shape = (1,) * (out_rank - len(t.shape)) + tuple(t.shape)
    if t.is_constant and len(t.shape) < out_rank:
        data = t.data.reshape(shape)
        if layout == "nhwc":
            data = np.transpose(data, NCHW_TO_NHWC)
        return b.add_tensor(f"{name}_b", data.shape, t.dtype, qparams=t.qparams, data=data, layout=layout)
    if len(t.shape) < out_rank:
        name = b.reshape(name, shape, nodes=nodes)
    return b.as_layout(name, layout, nodes)


def _stored_shape(shape: tuple[int, ...], layout: str) -> tuple[int, ...]:
    return tuple(shape[i] for i in NCHW_TO_NHWC) if layout == "nhwc" else shape


@int8_lowering(ADD_OPS | SUB_OPS, kernels="add_s8 / add_s16",
               precision="int8 inputs and output, each with its own quantization (int16, symmetric: add_s16, "
                         "TFLite's int16 ADD parameters); a - b is a + b with b's multiplier negated",
               constraints=f"alpha = 1; {BROADCAST}; fused ReLU/ReLU6/hardtanh/clamp")
def lower_add(b: GraphBuilder, node: fx.Node) -> None:
    a_node, b_node = node.args[0], node.args[1]
    if node.kwargs.get("alpha", 1) != 1:
        raise NotInt8(f"{node.target.__name__.split('.')[0]} with alpha != 1")
    a_src, b_src = int8_input(b, a_node), int8_input(b, b_node)
    width = operand_width(b, a_src, b_src)
    out_shape = node_shape(node)
    layout = _broadcast_check(b, [a_src, b_src], len(out_shape), "add")
    act, q = output_quantize(node)
    qa, qb, qout = b.tensors[a_src].qparams, b.tensors[b_src].qparams, qparams_of(q)
    try:
        params = (add_s16_params if width is S16 else add_quant_params)(qa.scale, qb.scale, qout.scale)
    except ValueError as exc:
        raise NotInt8(f"add scales out of range: {exc}") from None
    nodes = fuse(b, node, act)
    a_src = _broadcast_operand(b, a_src, len(out_shape), layout, nodes)
    b_src = _broadcast_operand(b, b_src, len(out_shape), layout, nodes)
    act_min, act_max = activation_range(act, qout, width)
    out = b.add_tensor(q.name, _stored_shape(out_shape, layout), width.dtype, qparams=qout, layout=layout)
    b_multiplier = -params["b_multiplier"] if node.target in SUB_OPS else params["b_multiplier"]
    attrs = {"a_multiplier": params["a_multiplier"], "a_shift": params["a_shift"], "b_multiplier": b_multiplier,
             "b_shift": params["b_shift"], "left_shift": params["left_shift"],
             "output_multiplier": params["output_multiplier"], "output_shift": params["output_shift"],
             "act_min": act_min, "act_max": act_max}
    if width is S16:  # symmetric int16: no offsets
        b.add_op("add_s16", [a_src, b_src], [out], attrs, nodes=nodes)
        b.env[q] = out
        return
    attrs = {"a_offset": -qa.zero_point, "a_multiplier": attrs["a_multiplier"], "a_shift": attrs["a_shift"],
             "b_offset": -qb.zero_point, "b_multiplier": b_multiplier, "b_shift": attrs["b_shift"],
             "left_shift": attrs["left_shift"], "output_offset": qout.zero_point,
             "output_multiplier": attrs["output_multiplier"], "output_shift": attrs["output_shift"],
             "act_min": act_min, "act_max": act_max}
    op = b.add_op("add_s8", [a_src, b_src], [out], attrs, nodes=nodes)
    numel = int(np.prod(b.tensors[out].shape))
    if all(int(np.prod(b.tensors[s].shape)) == numel for s in (a_src, b_src)):  # no broadcast: the fast paths
        op.scratch_bytes = kernel_scratch_bytes("add_s8", (), b.target)
    b.env[q] = out


def operand_width(b: GraphBuilder, *names: str) -> Width:
    """The width of an elementwise op's operands; a mix, or an int16 one not symmetric, is NotInt8."""
    try:
        width = width_of(b, *names)
    except WidthError as exc:
        raise NotInt8(str(exc)) from None
    if width is S16 and any(b.tensors[n].qparams.zero_point != 0 for n in names):
        raise NotInt8("an int16 operand with a zero point (s16 kernels are symmetric)")
    return width


def _scalar_operand(b: GraphBuilder, value: float, rank: int, base: str, width: Width) -> str:
    """A scalar factor as an integer constant of ``width``: +-qmax with scale |value| / qmax (exact, zero
    point 0)."""
    if value == 0:
        qp, code = QParams(1.0, 0), 0
    else:
        qp, code = QParams(abs(float(value)) / width.qmax, 0), (width.qmax if value > 0 else -width.qmax)
    return b.add_tensor(f"{base}_factor", (1,) * rank, width.dtype, qparams=qp,
                        data=np.full((1,) * rank, code, np.dtype(width.dtype)))


@int8_lowering(MUL_OPS, kernels="mul_s8 / mul_s16",
               precision="int8 inputs and output, each with its own quantization (int16, symmetric: mul_s16); a "
                         "scalar factor is an int8 (int16) constant +-127 (+-32767) scaled by |factor| / 127 (32767)",
               constraints=f"Tensor * Tensor or Tensor * Scalar; {BROADCAST}; fused ReLU/ReLU6/hardtanh/clamp")
def lower_mul(b: GraphBuilder, node: fx.Node) -> None:
    a_node, b_node = node.args[0], node.args[1]
    a_src = int8_input(b, a_node)
    out_shape = node_shape(node)
    act, q = output_quantize(node)
    if isinstance(b_node, (int, float)):
        b_src = _scalar_operand(b, b_node, len(out_shape), q.name, operand_width(b, a_src))
    else:
        b_src = int8_input(b, b_node)
    width = operand_width(b, a_src, b_src)
    layout = _broadcast_check(b, [a_src, b_src], len(out_shape), "mul")
    qa, qb, qout = b.tensors[a_src].qparams, b.tensors[b_src].qparams, qparams_of(q)
    try:
        multiplier, shift = mul_quant_params(qa.scale, qb.scale, qout.scale)
    except ValueError as exc:
        raise NotInt8(f"mul scales out of range: {exc}") from None
    nodes = fuse(b, node, act)
    a_src = _broadcast_operand(b, a_src, len(out_shape), layout, nodes)
    b_src = _broadcast_operand(b, b_src, len(out_shape), layout, nodes)
    act_min, act_max = activation_range(act, qout, width)
    out = b.add_tensor(q.name, _stored_shape(out_shape, layout), width.dtype, qparams=qout, layout=layout)
    attrs = {"output_multiplier": multiplier, "output_shift": shift, "act_min": act_min, "act_max": act_max}
    if width is S8:
        attrs = {"a_offset": -qa.zero_point, "b_offset": -qb.zero_point, "output_offset": qout.zero_point, **attrs}
    b.add_op("mul" + width.suffix, [a_src, b_src], [out], attrs, nodes=nodes)
    b.env[q] = out
