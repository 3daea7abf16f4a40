"""``lstm_s8``: one LSTM layer over a whole sequence, CMSIS-NN's ``arm_lstm_unidirectional_s8`` (TFLite's
8x8_16 integer LSTM: int8 input, output and weights, int32 bias, int16 gates and cell state).

Gates in torch's order (i, f, g, o); weights stacked as (4 H, I) and (4 H, H), per-tensor scales per gate
matrix. From the zero state, for every step t of the (N, T, I) input, each gate k is
``arm_nn_lstm_calculate_gate_s8_s16``:

    pre = clamp16(requantize(W_ih[k] x_t + input_bias[k], input_multiplier[k], input_shift[k]))
    pre = clamp16(pre + requantize(W_hh[k] h_{t-1} + hidden_bias[k], hidden_multiplier[k], hidden_shift[k]))
    (the sum an int32, wrapping as on the core)
    gate = activation_s16(pre, left_shift=0)           sigmoid for i, f, o; tanh for g (Q3.12 in, Q0.15 out)

(the hidden term is skipped at t = 0, where there is no hidden state), then (``arm_nn_lstm_step_s8``)

    c = clamp16(requantize(f * c, forget_to_cell_multiplier, forget_to_cell_shift))
    c = clamp(c + requantize(i * g, input_to_cell_multiplier, input_to_cell_shift), -cell_clip, cell_clip)
    h_t = clamp8(requantize(o * tanh_s16(c, left_shift=cell_scale_power + 12), output_multiplier,
                            output_shift) + output_offset)

``input_bias`` holds the input zero point (bias - zp_x * row sums of W_ih), ``hidden_bias`` the output's
(-zp_h * row sums of W_hh): the products are of raw int8 codes, as CMSIS-NN's effective biases make them.
The cell state has scale 2^cell_scale_power (cell_scale_power in [-43, 2]). Products and sums are int32
(wrapping, as in C). Vectorized over the batch; the input terms of every step are computed at once (they do
not depend on the state).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import jit
from .lut_s16 import ACTIVATION_MIN_LEFT_SHIFT, activation_s16
from .quant_s16 import INT16_MAX, INT16_MIN
from .quant_utils import check_int8, requantize, wrap_int32

#: cell_scale_power range: the tanh of the cell state is arm_nn_activation_s16 with left shift power + 12,
#: which takes -31 .. 14 (a negative one a rounding right shift: 2^-14 and 2^-15 are common cell scales).
CELL_SCALE_POWER_MIN, CELL_SCALE_POWER_MAX = ACTIVATION_MIN_LEFT_SHIFT - 12, 2
#: Scalar parameters of lstm_s8 (the op's attributes besides the per-gate lists).
SCALAR_PARAMS = ("forget_to_cell_multiplier", "forget_to_cell_shift", "input_to_cell_multiplier",
                 "input_to_cell_shift", "output_multiplier", "output_shift", "output_offset", "cell_scale_power",
                 "cell_clip")
GATE_PARAMS = ("input_multipliers", "input_shifts", "hidden_multipliers", "hidden_shifts")


class FixedRequant:
    """``arm_nn_requantize`` (quant_utils.requantize) of int32 values with fixed parameters, in fewer passes:
    the wrapping left shift, ``(x * m + 2^30) >> 31`` in int64, then the divide by 2^right rounded half away
    from zero as ``(y + 2^(right - 1) - (y < 0 and right > 0)) >> right``. A multiplier of INT32_MIN (whose
    doubling high multiply can overflow) takes quant_utils.requantize itself."""

    def __init__(self, multiplier: object, shift: object) -> None:
        self.multiplier = np.asarray(multiplier, np.int64)
        shift = np.asarray(shift, np.int64)
        self.shift = shift
        self.left = np.maximum(shift, 0)
        self.right = np.maximum(-shift, 0)
        self.half = (np.int64(1) << self.right) >> 1
        self.rounds = (self.right > 0).astype(np.int64)
        self.exact = not np.any(self.multiplier == -(2**31))

    def columns(self, size: int) -> np.ndarray:
        """(3, size) int64: the multiplier, left and right shift of each of ``size`` values (jit's loops)."""
        return np.stack([np.broadcast_to(v, (size,)) for v in (self.multiplier, self.left, self.right)])

    def __call__(self, x: np.ndarray) -> np.ndarray:
        if not self.exact:
            return requantize(x, self.multiplier, self.shift).astype(np.int64)
        x = np.asarray(x, np.int64)
        if np.any(self.left):
            x = wrap_int32(x << self.left).astype(np.int64)
        y = (x * self.multiplier + (1 << 30)) >> 31
        return (y + self.half - (y < 0) * self.rounds) >> self.right


@dataclass
class Layer:
    """A recurrent layer's constants, checked, in the forms the step loop reads (lstm_s8, gru_s8)."""

    kind: str
    hidden: int
    features: int
    wx: np.ndarray  # (I, gates H) float32 or float64 (dot_weights): exact BLAS dot products
    wh: np.ndarray  # (H, gates H), C order
    bx: np.ndarray  # int64 (gates H)
    bh: np.ndarray
    rq_x: FixedRequant  # per column: gate k's multiplier and shift over its H columns
    rq_h: FixedRequant
    scalars: dict[str, int]

    def check_input(self, x: np.ndarray) -> np.ndarray:
        """The int8 (N, T, I) input, checked (C-contiguous, as the compiled loops read it)."""
        x = check_int8("x", x, 3)
        if x.shape[2] != self.features:
            raise ValueError(f"{self.kind}: input has {x.shape[2]} features, the weights take {self.features}")
        return np.ascontiguousarray(x)

    def input_dots(self, x: np.ndarray) -> np.ndarray:
        """W_ih x_t of every step at once (they do not depend on the state), (N T, gates H) float64 integers."""
        return x.reshape(-1, self.features).astype(self.wx.dtype) @ self.wx

    def jit_operands(self) -> tuple[np.ndarray, ...]:
        """The compiled layer loops' operands after the input dot products: the recurrent weights (C order), the
        biases, the per-column requantization of the input and hidden terms."""
        columns = self.bx.size
        return (self.wh, self.bx, self.bh, self.rq_x.columns(columns),
                self.rq_h.columns(columns))

    def input_terms(self, x: np.ndarray) -> np.ndarray:
        """clamp16(requantize(W_ih x_t + input_bias)) of every step at once: (N, T, gates H) int64; the int32
        sum wraps as in C."""
        x = self.check_input(x)
        acc = wrap_int32(self.input_dots(x).astype(np.int64) + self.bx)
        return np.clip(self.rq_x(acc), INT16_MIN, INT16_MAX).reshape(*x.shape[:2], -1)

    def hidden_terms(self, h: np.ndarray) -> np.ndarray:
        """requantize(W_hh h + hidden_bias), the int32 sum wrapping, int64 values."""
        return self.rq_h(wrap_int32((h.astype(self.wh.dtype) @ self.wh).astype(np.int64) + self.bh))


#: Deepest dot product of int8 vectors with int8 weights that float32 holds exactly: every partial sum is an
#: integer of magnitude at most depth * 2^14 <= 2^24, whatever order BLAS adds in.
FLOAT32_EXACT_DEPTH = 1 << 10


def dot_weights(w: np.ndarray, vector_bits: int) -> np.ndarray:
    """The int8 weights ``w`` (rows, depth) transposed for BLAS dot products with vectors of ``vector_bits``-bit
    integers, exact: float32 for int8 vectors up to FLOAT32_EXACT_DEPTH deep (faster), else float64 (|sum| <=
    depth * 2^22 < 2^53 for int16 vectors)."""
    exact32 = vector_bits == 8 and w.shape[1] <= FLOAT32_EXACT_DEPTH
    return np.ascontiguousarray(w.T, np.float32 if exact32 else np.float64)


def prepare_layer(kind: str, gates: int, w_ih: np.ndarray, w_hh: np.ndarray, input_bias: np.ndarray,
                  hidden_bias: np.ndarray, params: dict[str, object], scalar_names: tuple[str, ...],
                  state_bits: int = 8) -> Layer:
    """Check the operands of a recurrent kind with ``gates`` gates (weights (gates H, I) and (gates H, H), int32
    biases of gates H, the per-gate lists, the shifts in [-31, 30] and the output offset) into a Layer; the
    hidden state the recurrent weights multiply is an int8 or int16 vector (``state_bits``)."""
    w_ih = check_int8("w_ih", w_ih, 2)
    w_hh = check_int8("w_hh", w_hh, 2)
    input_bias, hidden_bias = np.asarray(input_bias), np.asarray(hidden_bias)
    params = dict(params)
    gate = {name: np.asarray(params.pop(name), np.int64) for name in GATE_PARAMS}
    p = {name: int(params.pop(name)) for name in scalar_names}  # type: ignore[call-overload]
    if params:
        raise TypeError(f"{kind}: unknown parameters {sorted(params)}")
    hidden = w_hh.shape[1]
    if w_ih.shape[0] != gates * hidden or w_hh.shape != (gates * hidden, hidden):
        raise ValueError(f"{kind}: weights must be ({gates}H, I) and ({gates}H, H), got {w_ih.shape} and "
                         f"{w_hh.shape}")
    for name, bias in (("input_bias", input_bias), ("hidden_bias", hidden_bias)):
        if bias.shape != (gates * hidden,) or bias.dtype != np.int32:
            raise ValueError(f"{kind}: {name} must be int32 of shape ({gates * hidden},), got {bias.dtype} "
                             f"{bias.shape}")
    for name, values in gate.items():
        if values.shape != (gates,):
            raise ValueError(f"{kind}: {name} must hold {gates} values (one per gate), got shape {values.shape}")
        if name.endswith("shifts") and np.any((values < -31) | (values > 30)):
            raise ValueError(f"{kind}: {name} must be in [-31, 30], got {values.tolist()}")
    for name in (n for n in scalar_names if n.endswith("_shift")):
        if not -31 <= p[name] <= 30:
            raise ValueError(f"{kind}: {name} must be in [-31, 30], got {p[name]}")
    if not -128 <= p["output_offset"] <= 127:
        raise ValueError(f"{kind}: output_offset must be in [-128, 127], got {p['output_offset']}")
    per_column = {name: np.repeat(values, hidden) for name, values in gate.items()}
    return Layer(kind, hidden, w_ih.shape[1], dot_weights(w_ih, 8), dot_weights(w_hh, state_bits),
                 input_bias.astype(np.int64), hidden_bias.astype(np.int64),
                 FixedRequant(per_column["input_multipliers"], per_column["input_shifts"]),
                 FixedRequant(per_column["hidden_multipliers"], per_column["hidden_shifts"]), p)


def activation_tables(*left_shifts_and_functions: tuple[int, str]) -> list[np.ndarray]:
    """arm_nn_activation_s16 of every int16 code, read by index (code + 32768): one take per activation."""
    codes = np.arange(INT16_MIN, INT16_MAX + 1, dtype=np.int16)
    return [activation_s16(codes, left_shift=shift, function=fn).astype(np.int64)
            for shift, fn in left_shifts_and_functions]


def prepare_lstm_s8(w_ih: np.ndarray, w_hh: np.ndarray, input_bias: np.ndarray, hidden_bias: np.ndarray,
                    **params: object) -> Callable[[np.ndarray], np.ndarray]:
    """Check the layer's constants once; returns ``run(x)``: int8 (N, T, I) -> int8 (N, T, H)."""
    layer = prepare_layer("lstm_s8", 4, w_ih, w_hh, input_bias, hidden_bias, params, SCALAR_PARAMS)
    p, hidden = layer.scalars, layer.hidden
    if not CELL_SCALE_POWER_MIN <= p["cell_scale_power"] <= CELL_SCALE_POWER_MAX:
        raise ValueError(f"lstm_s8: cell_scale_power must be in [{CELL_SCALE_POWER_MIN}, {CELL_SCALE_POWER_MAX}], "
                         f"got {p['cell_scale_power']}")
    if not 1 <= p["cell_clip"] <= INT16_MAX:
        raise ValueError(f"lstm_s8: cell_clip must be in [1, {INT16_MAX}], got {p['cell_clip']}")
    rq_f = FixedRequant(p["forget_to_cell_multiplier"], p["forget_to_cell_shift"])
    rq_i = FixedRequant(p["input_to_cell_multiplier"], p["input_to_cell_shift"])
    rq_o = FixedRequant(p["output_multiplier"], p["output_shift"])
    tables = activation_tables((0, "sigmoid"), (0, "tanh"), (p["cell_scale_power"] + 12, "tanh"))
    sigmoid, tanh, tanh_cell = tables
    clip, offset = p["cell_clip"], p["output_offset"]
    compiled = (*layer.jit_operands(), np.stack([rq.columns(1)[:, 0] for rq in (rq_f, rq_i, rq_o)]),
                np.stack(tables).astype(np.int16), clip, offset)

    def run(x: np.ndarray) -> np.ndarray:
        if jit.ENABLED:  # the same arithmetic, one compiled loop
            x = layer.check_input(x)
            out = np.empty((*x.shape[:2], hidden), np.int8)
            h = np.zeros((x.shape[0], hidden), layer.wh.dtype)  # the previous step's output
            jit.lstm_layer(layer.input_dots(x), h, *compiled, out)
            return out
        pre_x = layer.input_terms(x) - INT16_MIN  # as table indices
        n, steps, _ = pre_x.shape
        out = np.empty((n, steps, hidden), np.int8)
        cell = np.zeros((n, hidden), np.int64)
        h = None
        for t in range(steps):
            idx = pre_x[:, t]
            if h is not None:  # no hidden term at step 0: there is no hidden state yet
                idx = np.clip(wrap_int32(idx + INT16_MIN + layer.hidden_terms(h)), INT16_MIN, INT16_MAX) - INT16_MIN
            i, f, o = (sigmoid[idx[:, k * hidden:(k + 1) * hidden]] for k in (0, 1, 3))
            g = tanh[idx[:, 2 * hidden:3 * hidden]]
            cell = np.clip(rq_f(f * cell), INT16_MIN, INT16_MAX)
            cell = np.clip(wrap_int32(cell + rq_i(i * g)), -clip, clip)
            h = np.clip(rq_o(o * tanh_cell[cell - INT16_MIN]) + offset, -128, 127).astype(np.int8)
            out[:, t] = h
        return out

    return run


def lstm_s8(x: np.ndarray, w_ih: np.ndarray, w_hh: np.ndarray, input_bias: np.ndarray, hidden_bias: np.ndarray,
            **params: object) -> np.ndarray:
    """One LSTM layer (``arm_lstm_unidirectional_s8``, batch first): int8 (N, T, I) -> int8 (N, T, H).

    Parameters: ``input_multipliers``, ``input_shifts``, ``hidden_multipliers``, ``hidden_shifts`` (4 values
    each, gates i, f, g, o) and the scalars of ``SCALAR_PARAMS`` (see the module docstring)."""
    return prepare_lstm_s8(w_ih, w_hh, input_bias, hidden_bias, **params)(x)
