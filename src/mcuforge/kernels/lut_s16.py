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


#: Entries of CMSIS-NN's ``sigmoid_table_uint16`` that are one above sigmoid(i / 24) * 65536 rounded to
#: nearest. Arm's table is tuned, not a rounding of one formula: 44 of its 256 entries sit one LSB higher
#: (most where the sigmoid bends most and linear interpolation between entries falls below the curve,
#: and the last, 65535, so that the top segment meets the saturation value), with no rule that a closed
#: form reproduces (no rounding mode, float width or sampling offset does; see docs/numerics.md). mcuforge
#: derives the table from the definition plus these one-LSB corrections, and tests/test_cmsis_nn_s16.py
#: reads Arm's table from a CMSIS-NN tree to check that the result is the same, entry for entry.
CMSIS_NN_SIGMOID_BUMPS = (4, 8, 12, 14, 15, 16, 17, 19, 20, 21, 22, 25, 27, 28, 29, 30, 31, 33, 34, 35, 37, 39,
                          40, 41, 43, 44, 45, 46, 49, 50, 54, 62, 63, 64, 66, 82, 86, 93, 100, 103, 112, 116,
                          135, 255)


def _sigmoid_table() -> np.ndarray:
    """CMSIS-NN's Q0.16 sigmoid table: sigmoid(i / 24) * 65536 for i = 0..255, rounded to nearest, plus one
    at the entries of ``CMSIS_NN_SIGMOID_BUMPS`` (the top entry becomes 65535; none exceeds it)."""
    i = np.arange(256, dtype=np.float64)
    table = np.floor(65536.0 / (1.0 + np.exp(-i / 24.0)) + 0.5).astype(np.int64)
    table[list(CMSIS_NN_SIGMOID_BUMPS)] += 1
    assert table.max() <= 0xFFFF
    return table.astype(np.uint16)


#: The 256-entry Q0.16 sigmoid table of ``sigmoid_s16`` / ``tanh_s16`` (= CMSIS-NN's sigmoid_table_uint16; the
#: C kernels hold the same values, tests/test_c_kernels_s16.py compares them through every input code).
SIGMOID_TABLE_U16 = _sigmoid_table()
#: Left shift range of ``activation_s16`` (arm_nn_activation_s16): up to 14 ``x * (3 << left_shift)`` stays
#: within int32; a negative one is a rounding right shift of ``3 x`` (half up), valid down to -31.
ACTIVATION_MIN_LEFT_SHIFT, ACTIVATION_MAX_LEFT_SHIFT = -31, 14


def activation_s16(x: np.ndarray, *, left_shift: int, function: str) -> np.ndarray:
    """``arm_nn_activation_s16``: sigmoid (``function="sigmoid"``) or tanh of int16 x, Q0.15 out.

    ``v = x * (3 << left_shift)`` (so a Q3.12 input with left_shift 0 reads the table at 24 * real), or for a
    negative left_shift ``v = (3 x + 2^(n - 1)) >> n`` with n = -left_shift (a right shift rounding half up);
    ``u = |v|``; sigmoid: ``h = u >> 9``, tanh: ``h = u >> 8`` (tanh(x) = 2 sigmoid(2x) - 1). For h >= 255
    the result saturates, else ``r = (T[h] << k) + frac * (T[h+1] - T[h])`` (k = 9 or 8, frac the low k bits
    of u). Sigmoid: ``(v >= 0 ? r + 2^9 : 2^25 - r + 2^9 - 1) >> 10``; tanh: ``(v >= 0 ? r - 2^23 + 2^7 :
    2^23 - r + 2^7 - 1) >> 8``, then the int16 cast (the C code's uint32 arithmetic wraps the same way).
    """
    x = check_int16("x", x, None)
    if function not in ("sigmoid", "tanh"):
        raise ValueError(f"activation_s16: function must be 'sigmoid' or 'tanh', got {function!r}")
    if (not isinstance(left_shift, int | np.integer)
            or not ACTIVATION_MIN_LEFT_SHIFT <= left_shift <= ACTIVATION_MAX_LEFT_SHIFT):
        raise ValueError(f"activation_s16: left_shift must be an int in [{ACTIVATION_MIN_LEFT_SHIFT}, "
                         f"{ACTIVATION_MAX_LEFT_SHIFT}], got {left_shift!r}")
    sigmoid = function == "sigmoid"
    k = 9 if sigmoid else 8
    if left_shift >= 0:
        v = x.astype(np.int64) * (3 << int(left_shift))
    else:
        n = -int(left_shift)
        v = (x.astype(np.int64) * 3 + (1 << (n - 1))) >> n
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

