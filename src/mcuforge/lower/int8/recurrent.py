"""LSTM and GRU layers (``mcuforge.lstm_op``) as one lstm_s8 / gru_s8 op: CMSIS-NN's
arm_lstm_unidirectional_s8 with TFLite's 8x8_16 integer LSTM recipe, and a GRU in the same style (its
hidden state int16 Q0.15, which needs no calibration: |h| <= 1 from the zero state).

The pattern is ``lstm_cell_states -> quantize (int16) -> dequantize -> lstm -> quantize (int8)``, both ops
reading the same int8 input. The lowering runs at the cell-states node (the first of the two) and maps the
whole pattern to one op. Scales: input and hidden state (= output) int8 as calibrated; weights symmetric
int8 per gate matrix (the kernel takes one multiplier per gate and matrix); bias int32 at input scale x
weight scale; gate pre-activations int16 Q3.12 (scale 2^-12, the input of arm_nn_activation_s16); gates
Q0.15; the cell state int16 at the calibrated power-of-two scale 2^p (the quantizer gives p in [-12, 2];
lstm_s8 takes [-43, 2]).

Accuracy: an LSTM layer's error is set by its int8 input and its int8 hidden state fed back every step; the
int16 gates and cell state and the per-gate weights cost little (``benchmarks/recurrent_error.py`` measures
each on kws_lstm). CMSIS-NN's int16 LSTM (arm_lstm_unidirectional_s16) is what would remove those two.
"""

from __future__ import annotations

import math

import numpy as np
from torch import fx

from ...ir import kernel_scratch_bytes
from ...kernels.lstm import CELL_SCALE_POWER_MAX, CELL_SCALE_POWER_MIN
from ...kernels.quant_s16 import INT16_MAX
from ...kernels.quant_utils import quantize_multiplier
from ...lstm_op import GRU_OPS, LSTM_CELL_STATE_OPS, LSTM_OPS
from ..builder import GraphBuilder, get_attr_value, is_dq, is_q, node_shape, qparams_of
from .common import NotInt8, int8_input, int8_lowering, output_quantize

#: Scale of the gates' int16 pre-activations: Q3.12, arm_nn_activation_s16's input at left shift 0.
GATE_INPUT_SCALE = 2.0**-12
Q15 = 2.0**-15


def _layer_of(cells: fx.Node) -> tuple[fx.Node, fx.Node]:
    """(the cell states' int16 quantize node, the lstm node reading them through a dequantize)."""
    users = list(cells.users)
    if len(users) != 1 or not is_q(users[0]):
        raise NotInt8("its cell states are not quantized")
    q_cells = users[0]
    readers = [u for dq in q_cells.users for u in (dq.users if is_dq(dq) else [dq])]
    if not all(is_dq(dq) for dq in q_cells.users) or len(readers) != 1 or readers[0].target not in LSTM_OPS:
        raise NotInt8("its cell states are read beyond the layer (c_n is computed only by the fp32 layer)")
    return q_cells, readers[0]


def _per_gate_int8(w: np.ndarray, count: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 [-127, 127] weights with one scale per gate's (H, K) block of the (count H, K) matrix."""
    gates = w.reshape(count, -1, w.shape[1]).astype(np.float64)
    peak = np.abs(gates).reshape(count, -1).max(axis=1)
    scales = np.where(peak > 0, peak / 127.0, 1.0)
    q = np.clip(np.round(gates / scales[:, None, None]), -127, 127).astype(np.int8)
    return q.reshape(w.shape), scales


def _wrap32(v: np.ndarray) -> np.ndarray:
    return ((v.astype(np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


def _multiplier(real: float, what: str) -> tuple[int, int]:
    try:
        mult, shift = quantize_multiplier(real)
    except ValueError as exc:
        raise NotInt8(f"{what} scale {real:g} out of range: {exc}") from None
    if not -31 <= shift <= 30:
        raise NotInt8(f"{what} scale {real:g} out of range")
    return mult, shift


@int8_lowering(LSTM_CELL_STATE_OPS, kernels="lstm_s8",
               precision="int8 input and output (hidden state), int8 symmetric weights per gate matrix, int32 bias, "
                         "int16 Q3.12 gate inputs, Q0.15 gates, int16 cell state at a calibrated power-of-two scale",
               constraints="nn.LSTM unidirectional, no projection, zero initial state, c_n unused (mcuforge.lstm_op)")
def lower_lstm(b: GraphBuilder, cells: fx.Node) -> None:
    q_cells, layer = _layer_of(cells)
    x_node, w_ih_node, w_hh_node, bias_node = cells.args
    src = int8_input(b, x_node)
    if b.int8_source(layer.args[0]) != src:
        raise NotInt8("the layer's two ops read different inputs")
    _act, q_out = output_quantize(layer, fuse=False)
    qin, qout, qc = b.tensors[src].qparams, qparams_of(q_out), qparams_of(q_cells)
    if b.tensors[src].dtype != "int8":
        raise NotInt8("its input is not int8")
    power = round(math.log2(qc.scale))
    if 2.0**power != qc.scale or not CELL_SCALE_POWER_MIN <= power <= CELL_SCALE_POWER_MAX or qc.zero_point:
        raise NotInt8(f"cell state scale {qc.scale:g} is not a power of two in "
                      f"[2^{CELL_SCALE_POWER_MIN}, 2^{CELL_SCALE_POWER_MAX}]")
    w_ih, w_hh, bias = (get_attr_value(b.gm, n).double().numpy() for n in (w_ih_node, w_hh_node, bias_node))
    wq_ih, s_ih = _per_gate_int8(w_ih)
    wq_hh, s_hh = _per_gate_int8(w_hh)
    hidden = w_hh.shape[1]
    bias_scale = np.repeat(qin.scale * s_ih, hidden)
    bias_q = np.clip(np.round(bias / bias_scale), -(2**31), 2**31 - 1).astype(np.int64)
    # Effective biases: the products are of raw codes, sum((x - zp) w) = sum(x w) - zp * sum(w).
    input_bias = _wrap32(bias_q - qin.zero_point * wq_ih.astype(np.int64).sum(axis=1))
    hidden_bias = _wrap32(-qout.zero_point * wq_hh.astype(np.int64).sum(axis=1))
    gate_in = [_multiplier(qin.scale * s / GATE_INPUT_SCALE, "input-to-gate") for s in s_ih]
    gate_h = [_multiplier(qout.scale * s / GATE_INPUT_SCALE, "hidden-to-gate") for s in s_hh]
    f2c = _multiplier(Q15, "forget-to-cell")
    i2c = _multiplier(Q15 * Q15 / 2.0**power, "input-to-cell")
    o2h = _multiplier(Q15 * Q15 / qout.scale, "hidden")
    attrs = {
        "input_multipliers": [m for m, _ in gate_in], "input_shifts": [s for _, s in gate_in],
        "hidden_multipliers": [m for m, _ in gate_h], "hidden_shifts": [s for _, s in gate_h],
        "forget_to_cell_multiplier": f2c[0], "forget_to_cell_shift": f2c[1],
        "input_to_cell_multiplier": i2c[0], "input_to_cell_shift": i2c[1],
        "output_multiplier": o2h[0], "output_shift": o2h[1], "output_offset": qout.zero_point,
        "cell_scale_power": power, "cell_clip": INT16_MAX,
    }
    nodes = [cells, q_cells, layer]
    x = b.as_layout(src, "plain", nodes)
    base = q_out.name
    consts = [b.constant(f"{base}_w_ih", wq_ih), b.constant(f"{base}_w_hh", wq_hh),
              b.constant(f"{base}_input_bias", input_bias), b.constant(f"{base}_hidden_bias", hidden_bias)]
    out = b.add_tensor(base, node_shape(q_out), "int8", qparams=qout)
    op = b.add_op("lstm_s8", [x, *consts], [out], attrs, nodes=nodes)
    op.scratch_bytes = kernel_scratch_bytes("lstm_s8", wq_hh.shape, b.target)
    # The cell states are no tensor of the program: nothing reads them but the layer, now one op.
    for node in (cells, q_cells, layer, q_out):
        b.env[node] = out


#: Scale of the GRU's int16 hidden state: Q0.15 (|h| <= 1 from the zero state).
STATE_SCALE = Q15


@int8_lowering(GRU_OPS, kernels="gru_s8",
               precision="int8 input and output, int8 symmetric weights per gate matrix, int32 bias, int16 Q3.12 "
                         "gate inputs, Q0.15 gates, int16 Q0.15 hidden state",
               constraints="nn.GRU unidirectional, zero initial state (mcuforge.lstm_op)")
def lower_gru(b: GraphBuilder, node: fx.Node) -> None:
    x_node, w_ih_node, w_hh_node, b_ih_node, b_hh_node = node.args
    src = int8_input(b, x_node)
    if b.tensors[src].dtype != "int8":
        raise NotInt8("its input is not int8")
    _act, q_out = output_quantize(node, fuse=False)
    qin, qout = b.tensors[src].qparams, qparams_of(q_out)
    w_ih, w_hh, b_ih, b_hh = (get_attr_value(b.gm, n).double().numpy()
                              for n in (w_ih_node, w_hh_node, b_ih_node, b_hh_node))
    hidden = w_hh.shape[1]
    wq_ih, s_ih = _per_gate_int8(w_ih, 3)
    wq_hh, s_hh = _per_gate_int8(w_hh, 3)
    # r and z: both biases in the input term; n: b_hn stays under r, in the hidden term (at its scale).
    bias_x = b_ih + np.concatenate([b_hh[:2 * hidden], np.zeros(hidden)])
    bias_h = np.concatenate([np.zeros(2 * hidden), b_hh[2 * hidden:]])
    q_x = np.clip(np.round(bias_x / np.repeat(qin.scale * s_ih, hidden)), -(2**31), 2**31 - 1).astype(np.int64)
    q_h = np.clip(np.round(bias_h / np.repeat(STATE_SCALE * s_hh, hidden)), -(2**31), 2**31 - 1).astype(np.int64)
    input_bias = _wrap32(q_x - qin.zero_point * wq_ih.astype(np.int64).sum(axis=1))
    gate_in = [_multiplier(qin.scale * s / GATE_INPUT_SCALE, "input-to-gate") for s in s_ih]
    gate_h = [_multiplier(STATE_SCALE * s / GATE_INPUT_SCALE, "hidden-to-gate") for s in s_hh]
    o2h = _multiplier(STATE_SCALE / qout.scale, "hidden")
    attrs = {
        "input_multipliers": [m for m, _ in gate_in], "input_shifts": [s for _, s in gate_in],
        "hidden_multipliers": [m for m, _ in gate_h], "hidden_shifts": [s for _, s in gate_h],
        "output_multiplier": o2h[0], "output_shift": o2h[1], "output_offset": qout.zero_point,
    }
    x = b.as_layout(src, "plain", [node])
    base = q_out.name
    consts = [b.constant(f"{base}_w_ih", wq_ih), b.constant(f"{base}_w_hh", wq_hh),
              b.constant(f"{base}_input_bias", input_bias), b.constant(f"{base}_hidden_bias", _wrap32(q_h))]
    out = b.add_tensor(base, node_shape(q_out), "int8", qparams=qout)
    op = b.add_op("gru_s8", [x, *consts], [out], attrs, nodes=[node])
    op.scratch_bytes = kernel_scratch_bytes("gru_s8", wq_hh.shape, b.target)
    b.env[q_out] = out
