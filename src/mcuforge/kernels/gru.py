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

from .lstm import FixedRequant
from .lut_s16 import activation_s16
from .quant_s16 import INT16_MAX, INT16_MIN
from .quant_utils import check_int8, wrap_int32

GATE_PARAMS = ("input_multipliers", "input_shifts", "hidden_multipliers", "hidden_shifts")
SCALAR_PARAMS = ("output_multiplier", "output_shift", "output_offset")
#: q15: requantize by 2^-15 (a Q0.15 factor times a value, back to the value's scale).
Q15_MULTIPLIER, Q15_SHIFT = 1 << 30, -14


def _check(hidden: int, w_ih: np.ndarray, w_hh: np.ndarray, input_bias: np.ndarray, hidden_bias: np.ndarray,
           gate: dict[str, np.ndarray], p: dict[str, int]) -> None:
    if w_ih.shape[0] != 3 * hidden or w_hh.shape != (3 * hidden, hidden):
        raise ValueError(f"gru_s8: weights must be (3H, I) and (3H, H), got {w_ih.shape} and {w_hh.shape}")
    for name, bias in (("input_bias", input_bias), ("hidden_bias", hidden_bias)):
        if bias.shape != (3 * hidden,) or bias.dtype != np.int32:
            raise ValueError(f"gru_s8: {name} must be int32 of shape ({3 * hidden},), got {bias.dtype} {bias.shape}")
    for name, values in gate.items():
        if values.shape != (3,):
            raise ValueError(f"gru_s8: {name} must hold 3 values (one per gate), got shape {values.shape}")
        if name.endswith("shifts") and np.any((values < -31) | (values > 30)):
            raise ValueError(f"gru_s8: {name} must be in [-31, 30], got {values.tolist()}")
    if not -31 <= p["output_shift"] <= 30:
        raise ValueError(f"gru_s8: output_shift must be in [-31, 30], got {p['output_shift']}")
    if not -128 <= p["output_offset"] <= 127:
        raise ValueError(f"gru_s8: output_offset must be in [-128, 127], got {p['output_offset']}")


def prepare_gru_s8(w_ih: np.ndarray, w_hh: np.ndarray, input_bias: np.ndarray, hidden_bias: np.ndarray,
                   **params: object) -> Callable[[np.ndarray], np.ndarray]:
    """Check the layer's constants once; returns ``run(x)``: int8 (N, T, I) -> int8 (N, T, H)."""
    w_ih = check_int8("w_ih", w_ih, 2)
    w_hh = check_int8("w_hh", w_hh, 2)
    input_bias, hidden_bias = np.asarray(input_bias), np.asarray(hidden_bias)
    gate = {name: np.asarray(params.pop(name), np.int64) for name in GATE_PARAMS}
    p = {name: int(params.pop(name)) for name in SCALAR_PARAMS}  # type: ignore[call-overload]
    if params:
        raise TypeError(f"gru_s8: unknown parameters {sorted(params)}")
    hidden = w_hh.shape[1]
    _check(hidden, w_ih, w_hh, input_bias, hidden_bias, gate, p)
    # Dot products in float64 (BLAS): exact, |sum| <= K * 32768 * 127 < 2^53.
    wx, wh = w_ih.T.astype(np.float64), w_hh.T.astype(np.float64)
    bx, bh = input_bias.astype(np.int64), hidden_bias.astype(np.int64)
    rq_x = FixedRequant(np.repeat(gate["input_multipliers"], hidden), np.repeat(gate["input_shifts"], hidden))
    rq_h = FixedRequant(np.repeat(gate["hidden_multipliers"], hidden), np.repeat(gate["hidden_shifts"], hidden))
    q15 = FixedRequant(Q15_MULTIPLIER, Q15_SHIFT)
    rq_o = FixedRequant(p["output_multiplier"], p["output_shift"])
    codes = np.arange(INT16_MIN, INT16_MAX + 1, dtype=np.int16)
    sigmoid = activation_s16(codes, left_shift=0, function="sigmoid").astype(np.int64)
    tanh = activation_s16(codes, left_shift=0, function="tanh").astype(np.int64)
    offset = p["output_offset"]
    h2 = 2 * hidden

    def run(x: np.ndarray) -> np.ndarray:
        x = check_int8("x", x, 3)
        if x.shape[2] != w_ih.shape[1]:
            raise ValueError(f"gru_s8: input has {x.shape[2]} features, the weights take {w_ih.shape[1]}")
        n, steps, _ = x.shape
        acc = wrap_int32((x.reshape(n * steps, -1).astype(np.float64) @ wx).astype(np.int64) + bx)
        pre_x = np.clip(rq_x(acc), INT16_MIN, INT16_MAX).reshape(n, steps, 3 * hidden)
        out = np.empty((n, steps, hidden), np.int8)
        h = np.zeros((n, hidden), np.int64)
        for t in range(steps):
            term = rq_h(wrap_int32((h.astype(np.float64) @ wh).astype(np.int64) + bh))
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
