"""int16 activations by table: ``lut_s16`` (any elementwise function, a 513-entry int16 table with linear
interpolation, built at compile time for the op's quantization) and ``sigmoid_s16`` / ``tanh_s16``
(CMSIS-NN's ``arm_nn_activation_s16``: a fixed 256-entry sigmoid table, inputs in Q3.12 shifted left by
``left_shift``, outputs Q0.15), the gate activations of CMSIS-NN's int16 recurrent kernels.

``lut_s16`` interpolates as ``arm_softmax_s16`` does (``table_lookup_s16``): entry i is the function at
input code ``-32768 + 128 * i``, the low 7 bits of the code interpolate. ``make_lut_s16`` samples the
function there (TFLite's ``gen_lut`` with the segment ends on exact codes), so the table is
``round(f(scale_in * code) / scale_out)`` at every 128th code, with gen_lut's midpoint correction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .quant_s16 import LUT_S16_ENTRIES, check_int16, gen_lut_s16, table_lookup_s16

if TYPE_CHECKING:  # torch builds tables (compile time) only
    import torch


def make_lut_s16(
    fn: Callable[[torch.Tensor], torch.Tensor], *, input_scale: float, output_scale: float
) -> np.ndarray:
    """The int16[513] table of ``fn`` for symmetric int16 input and output quantization: ``gen_lut_s16`` of
    ``fn`` (evaluated by torch in float64) over [-32768, 32768] * input_scale, scaled by 1 / output_scale."""
    for name, scale in (("input_scale", input_scale), ("output_scale", output_scale)):
        if not np.isfinite(scale) or scale <= 0:
            raise ValueError(f"make_lut_s16: {name} must be finite and positive, got {scale!r}")
    import torch

    def evaluate(points: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            y = fn(torch.from_numpy(points))
        if not isinstance(y, torch.Tensor) or y.shape != points.shape:
            raise ValueError("make_lut_s16: fn must map a float64 tensor to a tensor of the same shape")
        return y.to(torch.float64).numpy()

    limit = 32768.0 * float(input_scale)
    return gen_lut_s16(evaluate, -limit, limit, 1.0 / float(output_scale))


def lut_s16(x: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Interpolated table activation: ``table_lookup_s16(x, table)``, x int16 of any shape, table
    int16[513]. Returns int16."""
    x = check_int16("x", x, None)
    return prepare_lut_s16(table)(x)


def prepare_lut_s16(table: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """``lut_s16`` with its table checked once; for large inputs every code's result is computed once."""
    table = check_int16("table", table, 1)
    if table.shape != (LUT_S16_ENTRIES,):
        raise ValueError(f"lut_s16: table must have shape ({LUT_S16_ENTRIES},), got {table.shape}")
    full: list[np.ndarray] = []

    def run(x: np.ndarray) -> np.ndarray:
        if x.dtype != np.int16:
            raise ValueError(f"x must be a numpy int16 array, got {x.dtype}")
        if x.size < 1 << 16:
            return table_lookup_s16(x, table)
        if not full:  # all 65536 codes, indexed by the code's uint16 bits
            codes = np.arange(1 << 16, dtype=np.uint16).view(np.int16)
            full.append(table_lookup_s16(codes, table))
        return np.take(full[0], x.view(np.uint16))
    return run


# ----------------------------------------------------------------------------------------------------------
# arm_nn_activation_s16
# ----------------------------------------------------------------------------------------------------------


def _sigmoid_table() -> np.ndarray:
    """sigmoid(i / 24) for i = 0..255 in Q0.16, rounded to nearest, capped at 65535.

    CMSIS-NN ships a table of the same definition (``sigmoid_table_uint16``) whose entries are tuned: 43 of
    them are one above this rounding (presumably to offset the chord error of the interpolation). mcuforge
    computes its own from the definition, so ``sigmoid_s16`` / ``tanh_s16`` are arm_nn_activation_s16's
    arithmetic on this table and can differ from a CMSIS-NN build by one LSB where those entries are used.
    """
    i = np.arange(256, dtype=np.float64)
    return np.minimum(np.floor(65536.0 / (1.0 + np.exp(-i / 24.0)) + 0.5), 65535).astype(np.uint16)


#: The 256-entry Q0.16 sigmoid table of ``sigmoid_s16`` / ``tanh_s16`` (the C kernels hold the same values,
#: tests/test_c_kernels_s16.py compares them through every input code).
SIGMOID_TABLE_U16 = _sigmoid_table()
#: Largest ``left_shift`` of ``activation_s16``: ``x * (3 << left_shift)`` stays within int32.
ACTIVATION_MAX_LEFT_SHIFT = 14


def activation_s16(x: np.ndarray, *, left_shift: int, function: str) -> np.ndarray:
    """``arm_nn_activation_s16``: sigmoid (``function="sigmoid"``) or tanh of int16 x, Q0.15 out.

    ``v = x * (3 << left_shift)`` (so a Q3.12 input with left_shift 0 reads the table at 24 * real);
    ``u = |v|``; sigmoid: ``h = u >> 9``, tanh: ``h = u >> 8`` (tanh(x) = 2 sigmoid(2x) - 1). For h >= 255
    the result saturates, else ``r = (T[h] << k) + frac * (T[h+1] - T[h])`` (k = 9 or 8, frac the low k bits
    of u). Sigmoid: ``(v >= 0 ? r + 2^9 : 2^25 - r + 2^9 - 1) >> 10``; tanh: ``(v >= 0 ? r - 2^23 + 2^7 :
    2^23 - r + 2^7 - 1) >> 8``, then the int16 cast (the C code's uint32 arithmetic wraps the same way).
    """
    x = check_int16("x", x, None)
    if function not in ("sigmoid", "tanh"):
        raise ValueError(f"activation_s16: function must be 'sigmoid' or 'tanh', got {function!r}")
    if not isinstance(left_shift, int | np.integer) or not 0 <= left_shift <= ACTIVATION_MAX_LEFT_SHIFT:
        raise ValueError(f"activation_s16: left_shift must be an int in [0, {ACTIVATION_MAX_LEFT_SHIFT}], "
                         f"got {left_shift!r}")
    sigmoid = function == "sigmoid"
    k = 9 if sigmoid else 8
    v = x.astype(np.int64) * (3 << int(left_shift))
    u = np.abs(v)
    h = u >> k
    inside = h < 255
    hc = np.minimum(h, 254)
    ua = SIGMOID_TABLE_U16[hc].astype(np.int64)
    ub = SIGMOID_TABLE_U16[hc + 1].astype(np.int64)
    r = np.where(inside, (ua << k) + (u & ((1 << k) - 1)) * (ub - ua), (0x7FFF << 10) if sigmoid else (0xFFFF << 8))
    if sigmoid:
        out = np.where(v >= 0, r + (1 << 9), (1 << 25) - r + (1 << 9) - 1) >> 10
    else:
        out = np.where(v >= 0, r - (1 << 23) + (1 << 7), (1 << 23) - r + (1 << 7) - 1) >> 8
    return out.astype(np.int16)


def sigmoid_s16(x: np.ndarray, *, left_shift: int = 0) -> np.ndarray:
    """``activation_s16(x, left_shift=left_shift, function="sigmoid")``: Q3.12 in (left_shift 0), Q0.15 out."""
    return activation_s16(x, left_shift=left_shift, function="sigmoid")


def tanh_s16(x: np.ndarray, *, left_shift: int = 0) -> np.ndarray:
    """``activation_s16(x, left_shift=left_shift, function="tanh")``: Q3.12 in (left_shift 0), Q0.15 out."""
    return activation_s16(x, left_shift=left_shift, function="tanh")

