"""Converters of the int16-activation, int4-weight and recurrent op kinds to CMSIS-NN calls
(``c/cases_s16.c``); see :mod:`.ops`.

Where mcuforge stores narrower parameters than CMSIS-NN takes they are widened to the exact int32 values they
stand for: the s4 kinds' compact int16 bias and 16-bit multipliers (``m`` is the Q31 multiplier ``m << 16``,
docs/format.md), every int8 shift. Kinds or forms without a CMSIS-NN counterpart raise NotImplementedError:
a grouped conv2d_s16 (arm_convolve_s16 has no groups), a per-channel fully_connected_s16 or fully_connected_s4
(CMSIS-NN's are per tensor), gru_s8 (CMSIS-NN has no GRU), lut_s16 / clamp_s16 / the converting kinds.
"""

from __future__ import annotations

import numpy as np

from ..ir import Graph, Op
from ..kernels.int4 import S4_HALVES, pack_int4, unpack_int4_halves, widened_multipliers
from .harness import Case
from .ops import converts, output_tensor, per_channel
from .ops_s8 import batch_matmul_operands

I8, I16 = np.dtype(np.int8), np.dtype(np.int16)
#: torch's gate order (i, f, g, o) -> CMSIS-NN's (forget, input, cell, output)
LSTM_GATE_ORDER = (1, 0, 2, 3)


def _bias(bias: np.ndarray | None, channels: int, dtype: type) -> tuple[np.ndarray, int]:
    if bias is None:
        return np.zeros(0, dtype), 0
    return np.ascontiguousarray(np.asarray(bias).astype(np.int64).astype(dtype).reshape(channels)), 1


def _per_tensor(values: np.ndarray, what: str) -> int:
    v = np.asarray(values).reshape(-1)
    if not (v == v[0]).all():
        raise NotImplementedError(f"{what}: per-channel parameters; CMSIS-NN's is per tensor")
    return int(v[0])


@converts("conv2d_s16")
def conv2d_s16(graph: Graph, op: Op, values: list, function: str = "mfcmp_conv_wrapper_s16", name: str = "") -> Case:
    """arm_convolve_wrapper_s16 (or ``function``: mfcmp_conv_s16); an int32 bias is its int32-bias form."""
    x, w, bias, mult, shift = values
    a = op.attrs
    out = output_tensor(graph, op)
    n, h, wd, c = x.shape
    oc, kh, kw, fc = w.shape
    if fc != c:
        raise NotImplementedError("conv2d_s16 with groups: arm_convolve_s16 has none")
    int32_bias = bias is not None and np.asarray(bias).dtype == np.int32
    bias, has_bias = _bias(bias, oc, np.int32 if int32_bias else np.int64)
    ints = [n, h, wd, c, oc, kh, kw, out.shape[1], out.shape[2], *a["stride"], *a["padding"], *a["dilation"],
            a["act_min"], a["act_max"], has_bias, int(int32_bias)]
    inputs = [np.ascontiguousarray(x, I16), np.ascontiguousarray(w, I8), bias, per_channel(mult, oc),
              per_channel(shift, oc)]
    return Case(function, [int(v) for v in ints], inputs, tuple(out.shape), I16, name)


@converts("depthwise_conv2d_s16")
def depthwise_conv2d_s16(graph: Graph, op: Op, values: list, function: str = "mfcmp_dw_wrapper_s16",
                         name: str = "") -> Case:
    """arm_depthwise_conv_wrapper_s16 (or ``function``: mfcmp_dw_s16, the generic path)."""
    x, w, bias, mult, shift = values
    a = op.attrs
    out = output_tensor(graph, op)
    n, h, wd, c = x.shape
    _, kh, kw, oc = w.shape
    bias, has_bias = _bias(bias, oc, np.int64)
    ints = [n, h, wd, c, oc, kh, kw, out.shape[1], out.shape[2], a["depth_multiplier"], *a["stride"],
            *a["padding"], *a["dilation"], a["act_min"], a["act_max"], has_bias]
    inputs = [np.ascontiguousarray(x, I16), np.ascontiguousarray(w, I8), bias, per_channel(mult, oc),
              per_channel(shift, oc)]
    return Case(function, [int(v) for v in ints], inputs, tuple(out.shape), I16, name)


@converts("fully_connected_s16")
def fully_connected_s16(graph: Graph, op: Op, values: list, function: str = "mfcmp_fc_s16", name: str = "") -> Case:
    """arm_fully_connected_s16 (per tensor: length-1 parameters, or equal per-channel ones)."""
    x, w, bias, mult, shift = values
    a = op.attrs
    out = output_tensor(graph, op)
    oc, depth = w.shape
    batches = x.size // depth
    bias, has_bias = _bias(bias, oc, np.int64)
    ints = [batches, depth, oc, _per_tensor(mult, op.kind), _per_tensor(shift, op.kind), a["act_min"], a["act_max"],
            has_bias]
    inputs = [np.ascontiguousarray(x.reshape(batches, depth), I16), np.ascontiguousarray(w, I8), bias]
    return Case(function, [int(v) for v in ints], inputs, tuple(out.shape), I16, name)


@converts("batch_matmul_s16")
def batch_matmul_s16(graph: Graph, op: Op, values: list, function: str = "mfcmp_batch_matmul_s16",
                     name: str = "") -> Case:
    """arm_batch_matmul_s16, its operands laid out as arm_batch_matmul_s8's (:func:`ops_s8.batch_matmul_operands`)."""
    a = op.attrs
    out = output_tensor(graph, op)
    lhs, rhs, lb, rb, (m, k, nn), ob = batch_matmul_operands(values, a, op.kind, "arm_batch_matmul_s16")
    ints = [*lb, m, k, *rb, nn, *ob, a["output_multiplier"], a["output_shift"], a["act_min"], a["act_max"]]
    inputs = [np.ascontiguousarray(lhs, I16).reshape(*lb, m, k), np.ascontiguousarray(rhs, I16).reshape(*rb, nn, k)]
    return Case(function, [int(v) for v in ints], inputs, tuple(out.shape), I16, name)


@converts("avgpool_s16", "maxpool_s16")
def pool_s16(graph: Graph, op: Op, values: list, function: str | None = None, name: str = "") -> Case:
    """arm_avgpool_s16 / arm_max_pool_s16."""
    (x,) = values
    a = op.attrs
    out = output_tensor(graph, op)
    n, h, w, c = x.shape
    function = function or ("mfcmp_avgpool_s16" if op.kind == "avgpool_s16" else "mfcmp_max_pool_s16")
    ints = [n, h, w, c, *a["output_hw"], *a["kernel"], *a["stride"], *a["padding"], a["act_min"], a["act_max"]]
    return Case(function, [int(v) for v in ints], [np.ascontiguousarray(x, I16)], tuple(out.shape), I16, name)


def _broadcast16(value: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """An operand at the output's shape (arm_elementwise_*_s16 take equal sizes; the copy is data movement)."""
    return np.ascontiguousarray(np.broadcast_to(value, shape), I16)


@converts("add_s16")
def add_s16(graph: Graph, op: Op, values: list, function: str = "mfcmp_add_s16", name: str = "") -> Case:
    """arm_elementwise_add_s16, operands broadcast to the output's shape first."""
    a = op.attrs
    shape = tuple(output_tensor(graph, op).shape)
    ints = [int(np.prod(shape)), a["a_multiplier"], a["a_shift"], a["b_multiplier"], a["b_shift"], a["left_shift"],
            a["output_multiplier"], a["output_shift"], a["act_min"], a["act_max"]]
    return Case(function, [int(v) for v in ints], [_broadcast16(v, shape) for v in values], shape, I16, name)


@converts("mul_s16")
def mul_s16(graph: Graph, op: Op, values: list, function: str = "mfcmp_mul_s16", name: str = "") -> Case:
    """arm_elementwise_mul_s16, operands broadcast to the output's shape first."""
    a = op.attrs
    shape = tuple(output_tensor(graph, op).shape)
    ints = [int(np.prod(shape)), a["output_multiplier"], a["output_shift"], a["act_min"], a["act_max"]]
    return Case(function, [int(v) for v in ints], [_broadcast16(v, shape) for v in values], shape, I16, name)


@converts("softmax_s16")
def softmax_s16(graph: Graph, op: Op, values: list, function: str = "mfcmp_softmax_s16", name: str = "") -> Case:
    """arm_softmax_s16 over the last stored axis, with the op's two tables."""
    x, exp_lut, one_by_one = values
    out = output_tensor(graph, op)
    row = x.shape[-1]
    ints = [x.size // row, row, op.attrs["multiplier"], op.attrs["shift"]]
    inputs = [np.ascontiguousarray(x, I16), np.ascontiguousarray(exp_lut, I16), np.ascontiguousarray(one_by_one, I16)]
    return Case(function, [int(v) for v in ints], inputs, tuple(out.shape), I16, name)


@converts("activation_s16")
def activation_s16(graph: Graph, op: Op, values: list, function: str = "mfcmp_activation_s16",
                   name: str = "") -> Case:
    """arm_nn_activation_s16 (function 0 sigmoid, 1 tanh), any left shift it takes (negative ones too)."""
    (x,) = values
    out = output_tensor(graph, op)
    ints = [x.size, op.attrs["left_shift"], op.attrs["function"]]
    return Case(function, [int(v) for v in ints], [np.ascontiguousarray(x, I16)], tuple(out.shape), I16, name)


def _s4_params(bias: np.ndarray | None, mult: np.ndarray, shift: np.ndarray, oc: int
               ) -> tuple[np.ndarray, int, np.ndarray, np.ndarray]:
    """The s4 kinds' parameters as CMSIS-NN takes them: a compact int16 bias widened to int32 (the same values),
    16-bit multipliers to the Q31 ones they stand for (``m << 16``)."""
    b, has_bias = _bias(bias, oc, np.int32)
    return b, has_bias, per_channel(widened_multipliers(np.asarray(mult)), oc), per_channel(shift, oc)


@converts("conv2d_s4")
def conv2d_s4(graph: Graph, op: Op, values: list, function: str = "mfcmp_conv_wrapper_s4", name: str = "") -> Case:
    """arm_convolve_wrapper_s4 (its 1x1 fast, 1x1, 1xN, even (MVE) and generic paths); no groups."""
    x, w, bias, mult, shift = values
    a = op.attrs
    out = output_tensor(graph, op)
    n, h, wd, c = x.shape
    oc, kh, kw, fc = graph.tensors[op.inputs[1]].shape
    if fc != c:
        raise NotImplementedError("conv2d_s4 with groups: arm_convolve_s4 has none")
    bias, has_bias, mults, shifts = _s4_params(bias, mult, shift, oc)
    if graph.tensors[op.inputs[1]].layout == S4_HALVES:  # a Helium program's order: CMSIS-NN's packing of the same
        w = pack_int4(unpack_int4_halves(np.asarray(w).reshape(-1).view(np.uint8), (oc, kh, kw, fc)))
    ints = [n, h, wd, c, oc, kh, kw, out.shape[1], out.shape[2], a["input_offset"], a["output_offset"],
            *a["stride"], *a["padding"], *a["dilation"], a["act_min"], a["act_max"], has_bias]
    inputs = [np.ascontiguousarray(x, I8), np.ascontiguousarray(np.asarray(w).view(I8)), bias, mults, shifts]
    return Case(function, [int(v) for v in ints], inputs, tuple(out.shape), I8, name)


@converts("depthwise_conv2d_s4")
def depthwise_conv2d_s4(graph: Graph, op: Op, values: list, function: str = "mfcmp_dw_wrapper_s4",
                        name: str = "") -> Case:
    """arm_depthwise_conv_wrapper_s4 (its opt path for multiplier 1, batch 1, no dilation; else the generic)."""
    x, w, bias, mult, shift = values
    a = op.attrs
    out = output_tensor(graph, op)
    n, h, wd, c = x.shape
    _, kh, kw, oc = graph.tensors[op.inputs[1]].shape
    bias, has_bias, mults, shifts = _s4_params(bias, mult, shift, oc)
    ints = [n, h, wd, c, oc, kh, kw, out.shape[1], out.shape[2], a["input_offset"], a["output_offset"],
            a["depth_multiplier"], *a["stride"], *a["padding"], *a["dilation"], a["act_min"], a["act_max"],
            has_bias]
    inputs = [np.ascontiguousarray(x, I8), np.ascontiguousarray(np.asarray(w).view(I8)), bias, mults, shifts]
    return Case(function, [int(v) for v in ints], inputs, tuple(out.shape), I8, name)


@converts("fully_connected_s4")
def fully_connected_s4(graph: Graph, op: Op, values: list, function: str = "mfcmp_fc_s4", name: str = "") -> Case:
    """arm_fully_connected_s4 (per tensor: length-1 parameters, or equal per-channel ones)."""
    x, w, bias, mult, shift = values
    a = op.attrs
    out = output_tensor(graph, op)
    oc, depth = graph.tensors[op.inputs[1]].shape
    batches = x.size // depth
    bias, has_bias, mults, shifts = _s4_params(bias, mult, shift, oc)
    ints = [batches, depth, oc, a["input_offset"], a["output_offset"], _per_tensor(mults, op.kind),
            _per_tensor(shifts, op.kind), a["act_min"], a["act_max"], has_bias]
    inputs = [np.ascontiguousarray(x.reshape(batches, depth), I8), np.ascontiguousarray(np.asarray(w).view(I8)),
              bias]
    return Case(function, [int(v) for v in ints], inputs, tuple(out.shape), I8, name)


@converts("lstm_s8")
def lstm_s8(graph: Graph, op: Op, values: list, function: str = "mfcmp_lstm_s8", name: str = "") -> Case:
    """arm_lstm_unidirectional_s8, batch major, from the zero state: each gate's rows of the stacked weights
    and effective biases (the zero points are folded in already: CMSIS-NN's input_offset is then 0)."""
    x, w_ih, w_hh, b_ih, b_hh = values
    a = op.attrs
    out = output_tensor(graph, op)
    batches, steps, size = x.shape
    hidden = w_hh.shape[1]
    ints = [batches, steps, size, hidden, a["forget_to_cell_multiplier"], a["forget_to_cell_shift"],
            a["input_to_cell_multiplier"], a["input_to_cell_shift"], a["cell_clip"], a["cell_scale_power"],
            a["output_multiplier"], a["output_shift"], a["output_offset"]]
    for g in LSTM_GATE_ORDER:
        ints += [a["input_multipliers"][g], a["input_shifts"][g], a["hidden_multipliers"][g], a["hidden_shifts"][g]]

    def gates(v: np.ndarray, dtype: np.dtype) -> np.ndarray:  # the gate blocks of rows in CMSIS-NN's order
        blocks = np.asarray(v).reshape(4, hidden, *np.shape(v)[1:])
        return np.ascontiguousarray(blocks[list(LSTM_GATE_ORDER)], dtype)

    inputs = [np.ascontiguousarray(x, I8), gates(w_ih, I8), gates(b_ih, np.int32), gates(w_hh, I8),
              gates(b_hh, np.int32)]
    return Case(function, [int(v) for v in ints], inputs, tuple(out.shape), I8, name)
