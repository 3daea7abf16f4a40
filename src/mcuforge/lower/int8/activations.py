"""Standalone activations: clamps (ReLU, ReLU6, hardtanh, clamp not fused into a producer) and
table activations (sigmoid, tanh, hardswish, ...) as a 256-entry int8 lookup table."""

from __future__ import annotations

import functools

import torch
from torch import fx

from ...kernels.lut import make_lut_s8
from ...quantize.patterns import FUSABLE_ACTIVATIONS, LUT_ACTIVATIONS
from ..builder import GraphBuilder, qparams_of
from .common import NotInt8, activation_range, int8_input, int8_lowering, output_quantize, shared_quant_io


@int8_lowering(FUSABLE_ACTIVATIONS, kernels="clamp_s8", precision="int8, output shares the input's quantization",
               constraints="only when not fused into the conv / linear / add / mul before it")
def lower_clamp(b: GraphBuilder, node: fx.Node) -> None:
    src, q, qp = shared_quant_io(b, node)
    act_min, act_max = activation_range(node, qp)
    out = b.like(q.name, src, qparams=qp)
    b.add_op("clamp_s8", [src], [out], {"act_min": act_min, "act_max": act_max}, nodes=[node])
    b.env[q] = out


def _functional(target: object) -> object:
    """``aten.hardswish_.default`` -> ``aten.hardswish.default``: a table is built from values, never
    in place."""
    name = target._schema.name.split("::")[1]  # type: ignore[attr-defined]
    if name.endswith("_"):
        return getattr(getattr(torch.ops.aten, name[:-1]), target._overloadname)  # type: ignore[attr-defined]
    return target


def op_function(node: fx.Node):
    """The node's own fp32 definition as a function of its tensor input (other arguments bound)."""
    fn = _functional(node.target)
    return functools.partial(lambda x, args, kwargs: fn(x, *args, **kwargs), args=node.args[1:], kwargs=node.kwargs)


@int8_lowering(LUT_ACTIVATIONS, kernels="lut_s8",
               precision="int8 in and out (own output quantization); table = quantize(op(dequantize(q))) for "
                         "all 256 codes, computed at compile time with torch's fp32 op",
               constraints="sigmoid, tanh, hardswish, hardsigmoid, silu, gelu (exact and tanh), elu, leaky_relu")
def lower_lut(b: GraphBuilder, node: fx.Node) -> None:
    src = int8_input(b, node.args[0])
    _act, q = output_quantize(node, fuse=False)
    qin, qout = b.tensors[src].qparams, qparams_of(q)
    try:
        table = make_lut_s8(op_function(node), input_scale=qin.scale, input_zero_point=qin.zero_point,
                            output_scale=qout.scale, output_zero_point=qout.zero_point)
    except (ValueError, RuntimeError, TypeError) as exc:
        raise NotInt8(f"no lookup table for it: {exc}") from None
    table_name = b.constant(f"{q.name}_table", table)
    out = b.like(q.name, src, qparams=qout)
    b.add_op("lut_s8", [src, table_name], [out], nodes=[node])
    b.env[q] = out
