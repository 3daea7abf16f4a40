"""``gru_s8``: one GRU layer over a whole sequence, in the style of CMSIS-NN's LSTM (CMSIS-NN has no GRU):
int8 input, output and weights, int32 bias, int16 gates, and an int16 hidden state in Q0.15 (from the
zero state |h| <= 1, so Q0.15 holds it without calibration); the int8 output is that state requantized.

Gates in torch's order (r, z, n); weights (3H, I) and (3H, H), one scale per gate matrix. For every step t
of the (N, T, I) input, with ``q15(v) = requantize(v, 2^30, -14)`` (a rounding shift by 15):

    x_k = clamp16(requantize(W_ih[k] x_t + input_bias[k], input_multiplier[k], input_shift[k]))   (Q3.12)
    h_k = requantize(W_hh[k] h_{t-1} + hidden_bias[k], hidden_multiplier[k], hidden_shift[k])    (Q3.12)
    r, z = sigmoid_s16(clamp16(x_k + h_k)) for k = r, z                                          (Q0.15)
    n = tanh_s16(clamp16(x_n + clamp16(q15(r * clamp16(h_n)))))                                 (Q0.15)
    h_t = clamp16(n + q15(z * (h_{t-1} - n)))                              (1 - z) n + z h, Q0.15
    out_t = clamp8(requantize(h_t, output_multiplier, output_shift) + output_offset)

``input_bias`` holds the input zero point (bias - zp_x * row sums of W_ih); the hidden state has none.
Sums of two terms are int32 (wrapping, as in C); the recurrent dot products of int16 states and int8
weights are int32 accumulations (wrapping). sigmoid_s16 / tanh_s16 are arm_nn_activation_s16.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import jit
from .lstm import FixedRequant, activation_tables, prepare_layer
from .quant_s16 import INT16_MAX, INT16_MIN
from .quant_utils import wrap_int32

SCALAR_PARAMS = ("output_multiplier", "output_shift", "output_offset")
#: q15: requantize by 2^-15 (a Q0.15 factor times a value, back to the value's scale).
Q15_MULTIPLIER, Q15_SHIFT = 1 << 30, -14


def prepare_gru_s8(w_ih: np.ndarray, w_hh: np.ndarray, input_bias: np.ndarray, hidden_bias: np.ndarray,
                   **params: object) -> Callable[[np.ndarray], np.ndarray]:
    """Check the layer's constants once; returns ``run(x)``: int8 (N, T, I) -> int8 (N, T, H)."""
    layer = prepare_layer("gru_s8", 3, w_ih, w_hh, input_bias, hidden_bias, params, SCALAR_PARAMS, state_bits=16)
    p, hidden = layer.scalars, layer.hidden
    q15 = FixedRequant(Q15_MULTIPLIER, Q15_SHIFT)
    rq_o = FixedRequant(p["output_multiplier"], p["output_shift"])
    tables = activation_tables((0, "sigmoid"), (0, "tanh"))
    sigmoid, tanh = tables
    offset, h2 = p["output_offset"], 2 * hidden
    compiled = (*layer.jit_operands(), rq_o.columns(1)[:, 0].copy(), np.stack(tables).astype(np.int16), offset)

    def run(x: np.ndarray) -> np.ndarray:
        if jit.ENABLED:  # the same arithmetic, one compiled loop
            x = layer.check_input(x)
            out = np.empty((*x.shape[:2], hidden), np.int8)
            jit.gru_layer(layer.input_dots(x), *compiled, out)
            return out
        pre_x = layer.input_terms(x)
        n, steps, _ = pre_x.shape
        out = np.empty((n, steps, hidden), np.int8)
        h = np.zeros((n, hidden), np.int64)
        for t in range(steps):
            term = layer.hidden_terms(h)
            rz = sigmoid[np.clip(wrap_int32(pre_x[:, t, :h2] + term[:, :h2]), INT16_MIN, INT16_MAX) - INT16_MIN]
            r, z = rz[:, :hidden], rz[:, hidden:]
            rn = np.clip(q15(r * np.clip(term[:, h2:], INT16_MIN, INT16_MAX)), INT16_MIN, INT16_MAX)
            cand = tanh[np.clip(pre_x[:, t, h2:] + rn, INT16_MIN, INT16_MAX) - INT16_MIN]
            h = np.clip(cand + q15(z * (h - cand)), INT16_MIN, INT16_MAX)
            out[:, t] = np.clip(rq_o(h) + offset, -128, 127)
        return out

    return run


def gru_s8(x: np.ndarray, w_ih: np.ndarray, w_hh: np.ndarray, input_bias: np.ndarray, hidden_bias: np.ndarray,
           **params: object) -> np.ndarray:
    """One GRU layer (batch first, int16 Q0.15 state): int8 (N, T, I) -> int8 (N, T, H). Parameters:
    ``input_multipliers``, ``input_shifts``, ``hidden_multipliers``, ``hidden_shifts`` (3 values each, gates r,
    z, n), ``output_multiplier``, ``output_shift``, ``output_offset`` (see the module docstring)."""
    return prepare_gru_s8(w_ih, w_hh, input_bias, hidden_bias, **params)(x)
