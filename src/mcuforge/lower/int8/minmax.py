"""Elementwise maximum and minimum of int8 tensors (arm_maximum_s8 / arm_minimum_s8), and clamp by tensor
bounds as a maximum (``min=``) then a minimum (``max=``). The kernels do not requantize: the quantizer gives
every operand and the output one quantization. A constant operand quantized otherwise is requantized here,
at compile time; an activation quantized otherwise runs the op in fp32 (the reason says so)."""

from __future__ import annotations

import numpy as np
from torch import fx

from ...ir import QParams
from ...kernels.quant_utils import dequantize_per_tensor, quantize_per_tensor
from ...quantize.patterns import CLAMP_TENSOR_OPS, MAXIMUM_OPS, MINIMUM_OPS
from ..builder import GraphBuilder, node_shape, qparams_of
from .common import NotInt8, arg, int8_input, int8_lowering, output_quantize
from .elementwise import BROADCAST, _broadcast_operand, _stored_shape

PRECISION = ("int8; both inputs and the output share one quantization (no requantization); a constant "
             "operand quantized otherwise is requantized at compile time")
MAX_RANK = 4  # cmsis_nn_dims: N, H, W, C


def _operand(b: GraphBuilder, x: object, qout: QParams, kind: str) -> str:
    """The int8 tensor behind ``x``, checked: int8 with the output's quantization, or a constant (which
    :func:`_requantized` then brings to it)."""
    src = int8_input(b, x)
    t = b.tensors[src]
    if t.dtype != "int8":
        raise NotInt8(f"{kind} of {t.dtype} values has no kernel")
    if t.qparams != qout and not t.is_constant:
        raise NotInt8(f"input quantization {t.qparams} differs from the output's {qout} ({kind} does not "
                      "requantize)")
    return src


def _requantized(b: GraphBuilder, src: str, qout: QParams) -> str:
    """A constant operand in the output's quantization: quantize(dequantize(code)), as PT2E's fp32 route
    would compute it, once at compile time."""
    t = b.tensors[src]
    if t.qparams == qout:
        return src
    real = dequantize_per_tensor(t.data, t.qparams.scale, t.qparams.zero_point)
    data = quantize_per_tensor(real, qout.scale, qout.zero_point)
    return b.add_tensor(f"{src}_requantized", t.shape, "int8", qparams=qout, data=data, layout=t.layout)


def _layout(operands: list[tuple[int, str, bool]], out_rank: int, kind: str) -> str:
    """The stored layout the op runs in (elementwise's rule) from its operands' (rank, layout, is constant);
    raises before anything is emitted if one operand cannot be brought to it."""
    layouts = {layout for _rank, layout, constant in operands if not constant}
    layout = "nhwc" if "nhwc" in layouts and out_rank == 4 else "plain"
    if layout == "nhwc" and any(rank < out_rank and not constant for rank, _layout, constant in operands):
        raise NotInt8(f"{kind} with a non-constant of another rank: unsupported broadcast")
    return layout


def _emit(b: GraphBuilder, kind: str, a: str, c: str, out_shape: tuple[int, ...], layout: str, qout: QParams,
          out_base: str, nodes: list[fx.Node]) -> str:
    """One maximum_s8 / minimum_s8 op of ``a`` and ``c`` (checked); returns its output tensor."""
    a, c = (_broadcast_operand(b, _requantized(b, s, qout), len(out_shape), layout, nodes) for s in (a, c))
    out = b.add_tensor(out_base, _stored_shape(out_shape, layout), "int8", qparams=qout, layout=layout)
    b.add_op(kind, [a, c], [out], nodes=nodes)
    return out


def _check_rank(out_shape: tuple[int, ...], kind: str) -> None:
    if len(out_shape) > MAX_RANK:
        raise NotInt8(f"{kind} of rank {len(out_shape)}: CMSIS-NN's kernel takes rank <= {MAX_RANK} (N, H, W, C)")


@int8_lowering(MAXIMUM_OPS | MINIMUM_OPS, kernels="maximum_s8 / minimum_s8", precision=PRECISION,
               constraints=f"torch.maximum / minimum, max / min of two tensors, fmax / fmin, clamp_min / clamp_max "
                           f"by a tensor; rank <= 4; {BROADCAST}")
def lower_minmax(b: GraphBuilder, node: fx.Node) -> None:
    kind = "maximum_s8" if node.target in MAXIMUM_OPS else "minimum_s8"
    out_shape = node_shape(node)
    _check_rank(out_shape, kind)
    _act, q = output_quantize(node, fuse=False)
    qout = qparams_of(q)
    a, c = (_operand(b, x, qout, kind) for x in node.args[:2])
    layout = _layout([(len(b.tensors[s].shape), b.tensors[s].layout, b.tensors[s].is_constant) for s in (a, c)],
                     len(out_shape), kind)
    b.env[q] = _emit(b, kind, a, c, out_shape, layout, qout, q.name, [node])


@int8_lowering(CLAMP_TENSOR_OPS, kernels="maximum_s8 then minimum_s8", precision=PRECISION,
               constraints=f"clamp with tensor bounds: min= a maximum_s8, max= a minimum_s8 (both: the two, in "
                           f"torch's order); rank <= 4; {BROADCAST}")
def lower_clamp_tensor(b: GraphBuilder, node: fx.Node) -> None:
    x, lo, hi = node.args[0], arg(node, 1, "min", None), arg(node, 2, "max", None)
    if lo is None and hi is None:
        raise NotInt8("clamp without bounds")
    out_shape = node_shape(node)
    _check_rank(out_shape, "clamp")
    _act, q = output_quantize(node, fuse=False)
    qout = qparams_of(q)
    src = _operand(b, x, qout, "clamp")
    steps = [(kind, _operand(b, bound, qout, "clamp")) for kind, bound in (("maximum_s8", lo), ("minimum_s8", hi))
             if bound is not None]
    # Check both steps' layouts before emitting: the first step's output (shape of x and its bound
    # broadcast) is the second's non-constant operand.
    t = b.tensors[src]
    current = (len(t.shape), t.layout, t.is_constant)
    plans = []
    for kind, bound in steps:
        bt = b.tensors[bound]
        bound_shape = node_shape(lo if kind == "maximum_s8" else hi)
        step_rank = max(current[0], len(bound_shape))
        layout = _layout([current, (len(bt.shape), bt.layout, bt.is_constant)], step_rank, "clamp")
        plans.append(layout)
        current = (step_rank, layout, False)
    first_shape = tuple(np.broadcast_shapes(node_shape(x), node_shape(lo if lo is not None else hi)))
    for i, ((kind, bound), layout) in enumerate(zip(steps, plans, strict=True)):
        last = i == len(steps) - 1
        shape = out_shape if last else first_shape
        src = _emit(b, kind, src, bound, shape, layout, qout, q.name if last else f"{q.name}_lower", [node])
    b.env[q] = src
