"""Standalone activations: clamps (ReLU, ReLU6, hardtanh, clamp not fused into a producer) and
table activations (sigmoid, tanh, hardswish, ...) as a 256-entry int8 lookup table; on int16 values
(A16W8) sigmoid/tanh as arm_nn_activation_s16 where the scales allow, else an interpolated int16 table."""

from __future__ import annotations

import functools
import math

import torch
from torch import fx

from ...kernels.lut import make_lut_s8
from ...kernels.lut_s16 import ACTIVATION_MAX_LEFT_SHIFT, make_lut_s16
from ...kernels.softmax_s16 import SOFTMAX_S16_OUTPUT_SCALE
from ...quantize.patterns import FUSABLE_ACTIVATIONS, LUT_ACTIVATIONS
from ..builder import GraphBuilder, qparams_of
from .common import NotInt8, activation_range, int8_input, int8_lowering, output_quantize, shared_quant_io
from .s16 import WIDTHS


@int8_lowering(FUSABLE_ACTIVATIONS, kernels="clamp_s8 / clamp_s16",
               precision="int8 (or int16), output shares the input's quantization",
               constraints="only when not fused into the conv / linear / add / mul before it")
def lower_clamp(b: GraphBuilder, node: fx.Node) -> None:
    src, q, qp = shared_quant_io(b, node)
    width = WIDTHS[b.tensors[src].dtype]
    act_min, act_max = activation_range(node, qp, width)
    out = b.like(q.name, src, qparams=qp)
    b.add_op("clamp" + width.suffix, [src], [out], {"act_min": act_min, "act_max": act_max}, nodes=[node])
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


@int8_lowering(LUT_ACTIVATIONS, kernels="lut_s8 (int16: activation_s16 / lut_s16)",
               precision="int8 in and out (own output quantization); table = quantize(op(dequantize(q))) for "
                         "all 256 codes, computed at compile time with torch's fp32 op. int16: sigmoid and tanh "
                         "with a power-of-two input scale 2^(k - 12) and output scale 1/32768 run CMSIS-NN's "
                         "arm_nn_activation_s16 (activation_s16); any other an interpolated int16[513] table "
                         "(lut_s16, TFLite's gen_lut of the op in float64)",
               constraints="sigmoid, tanh, hardswish, hardsigmoid, silu, gelu (exact and tanh), elu, leaky_relu")
def lower_lut(b: GraphBuilder, node: fx.Node) -> None:
    src = int8_input(b, node.args[0])
    _act, q = output_quantize(node, fuse=False)
    qin, qout = b.tensors[src].qparams, qparams_of(q)
    if b.tensors[src].dtype == "int16":
        _lut_s16(b, node, src, q)
        return
    try:
        table = make_lut_s8(op_function(node), input_scale=qin.scale, input_zero_point=qin.zero_point,
                            output_scale=qout.scale, output_zero_point=qout.zero_point)
    except (ValueError, RuntimeError, TypeError) as exc:
        raise NotInt8(f"no lookup table for it: {exc}") from None
    table_name = b.constant(f"{q.name}_table", table)
    out = b.like(q.name, src, qparams=qout)
    b.add_op("lut_s8", [src, table_name], [out], nodes=[node])
    b.env[q] = out


#: activation_s16's "function" attribute of the ops it runs.
ACTIVATION_S16_FUNCTIONS = {torch.ops.aten.sigmoid.default: 0, torch.ops.aten.sigmoid_.default: 0,
                            torch.ops.aten.tanh.default: 1, torch.ops.aten.tanh_.default: 1}


def activation_s16_shift(input_scale: float, output_scale: float) -> int | None:
    """``left_shift`` of arm_nn_activation_s16 when the scales are what it takes (input ``2^(left_shift - 12)``,
    left_shift 0 .. 14; output 1/32768), else None."""
    mantissa, exponent = math.frexp(input_scale)
    if mantissa != 0.5 or output_scale != SOFTMAX_S16_OUTPUT_SCALE:
        return None
    left_shift = exponent - 1 + 12
    return left_shift if 0 <= left_shift <= ACTIVATION_MAX_LEFT_SHIFT else None


def _lut_s16(b: GraphBuilder, node: fx.Node, src: str, q: fx.Node) -> None:
    qin, qout = b.tensors[src].qparams, qparams_of(q)
    if qin.zero_point != 0 or qout.zero_point != 0:
        raise NotInt8(f"int16 quantization {qin} -> {qout} is not symmetric")
    function = ACTIVATION_S16_FUNCTIONS.get(node.target)
    left_shift = activation_s16_shift(qin.scale, qout.scale)
    out = b.like(q.name, src, qparams=qout)
    if function is not None and left_shift is not None:
        b.add_op("activation_s16", [src], [out], {"function": function, "left_shift": left_shift}, nodes=[node])
    else:
        try:
            table = make_lut_s16(op_function(node), input_scale=qin.scale, output_scale=qout.scale)
        except (ValueError, RuntimeError, TypeError) as exc:
            raise NotInt8(f"no lookup table for it: {exc}") from None
        b.add_op("lut_s16", [src, b.constant(f"{q.name}_table", table)], [out], nodes=[node])
    b.env[q] = out
