"""Fixed-point helpers of the int16-activation (A16W8) kernels, CMSIS-NN's s16 arithmetic.

- ``reduce_multiplier`` / ``requantize_s64``: CMSIS-NN's ``REDUCE_MULTIPLIER`` and ``arm_nn_requantize_s64``,
  the output stage of the s16 convolutions, fully connected and batch matmul: the int64 accumulator times
  a Q15 multiplier (the Q31 one rounded to 16 bits), shifted right by ``14 - shift`` and cast to int32,
  then one more halving that rounds half up.
- ``table_lookup_s16``: the 513-entry int16 table interpolation of ``arm_softmax_s16`` (and TFLite's
  ``generic_int16_table_lookup``): index = the top 9 bits of the input, the low 7 bits interpolate
  linearly between two entries.
- ``gen_lut_s16``: TFLite's ``gen_lut`` (the exp and 1/(1+x) tables of the s16 softmax, and the tables of
  ``lut_s16``): 512 samples of a function with a half-error midpoint correction, and one end point.

Where the C code relies on 32-bit two's complement wrap-around (the int64 -> int32 cast, the +1 before the
last halving) the numpy code wraps the same way. Activations are int16, symmetric: zero point 0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .quant_utils import INT32_MAX, INT32_MIN, wrap_int32

INT16_MIN, INT16_MAX = -(1 << 15), (1 << 15) - 1
#: Shift range of ``arm_nn_requantize_s64`` (positive = left): its right shift ``14 - shift`` is 0..45. CMSIS-NN
#: documents [-31, 7] and computes any shift up to 14 (a right shift of 0) the same way; mcuforge takes them all.
S64_SHIFT_MIN, S64_SHIFT_MAX = -31, 14
#: The largest shift CMSIS-NN documents for arm_nn_requantize_s64, the most the compiler emits.
S64_SHIFT_DOCUMENTED_MAX = 7
#: |int64 bias| limit of the s16 weighted kernels: the accumulator stays within arm_nn_requantize_s64's
#: documented input range (+-2^47) for any input, so ``acc * reduced_multiplier`` cannot overflow int64.
S64_BIAS_LIMIT = 1 << 46
#: Largest dot-product depth of the s16 weighted kernels: depth * 32768 * 128 <= 2^46.
S16_MAX_DEPTH = 1 << 24
#: Entries of an int16 interpolation table (512 segments of 128 input codes, plus the end point).
LUT_S16_ENTRIES = 513


def reduce_multiplier(multiplier: ArrayLike) -> np.ndarray:
    """``REDUCE_MULTIPLIER``: a Q31 multiplier rounded to Q15, ``(m + 2^15) >> 16``, or 0x7FFF from
    0x7FFF0000 on (where the rounding would reach 2^15). Returns int64 of the same shape."""
    m = np.asarray(multiplier, dtype=np.int64)
    return np.where(m < 0x7FFF0000, (m + (1 << 15)) >> 16, 0x7FFF)


def requantize_s64(acc: ArrayLike, reduced_multiplier: ArrayLike, shift: ArrayLike) -> np.ndarray:
    """``arm_nn_requantize_s64``: ``r = int32((acc * rm) >> (14 - shift))``, then ``int32(r + 1) >> 1``.

    ``acc`` is int64 (|acc| < 2^48 so the product fits), ``rm`` a reduced multiplier (``reduce_multiplier``),
    ``shift`` in [-31, 14] (positive = left), scalars or arrays broadcast against acc (per-channel values
    along its last axis). The net effect is ``acc * rm / 2^(15 - shift)`` rounded half up (toward +inf); the
    two int32 casts wrap as the C code does when the result does not fit. Returns int32.
    """
    s = np.asarray(shift, dtype=np.int64)
    if np.any((s < S64_SHIFT_MIN) | (s > S64_SHIFT_MAX)):
        raise ValueError(f"requantize_s64: shift must be in [{S64_SHIFT_MIN}, {S64_SHIFT_MAX}]")
    product = np.asarray(acc, dtype=np.int64) * np.asarray(reduced_multiplier, dtype=np.int64)
    r = wrap_int32(product >> (14 - s)).astype(np.int64)
    return wrap_int32(r + 1) >> 1


def table_lookup_s16(x: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Interpolated lookup in a 513-entry int16 table, as ``arm_softmax_s16`` does for its exp and 1/(1+x):

    ``index = 256 + (x >> 7)`` (0..511), ``offset = x & 0x7f``, ``slope = int16(t[index + 1] - t[index])``,
    ``delta = int16((slope * offset + 64) >> 7)``, result ``int16(t[index] + delta)`` (the int16 casts wrap
    as C's conversions do). x is int16 (any shape); returns int16.
    """
    x32 = x.astype(np.int32)
    index = 256 + (x32 >> 7)
    offset = x32 & 0x7F
    t = table.astype(np.int32)
    base = t[index]
    slope = (t[index + 1] - base).astype(np.int16).astype(np.int32)
    delta = ((slope * offset + 64) >> 7).astype(np.int16).astype(np.int32)
    return (base + delta).astype(np.int16)


def round_half_away(v: ArrayLike) -> np.ndarray:
    """std::round, elementwise: half away from zero (float64)."""
    v = np.asarray(v, dtype=np.float64)
    return np.copysign(np.floor(np.abs(v) + 0.5), v)


def gen_lut_s16(fn: Callable[[np.ndarray], np.ndarray], input_min: float, input_max: float,
                output_scaling: float = 32768.0, dtype: type[np.floating] = np.float64) -> np.ndarray:
    """TFLite's ``gen_lut``: the int16[513] table of ``fn`` over [input_min, input_max].

    Entry i < 512 samples ``fn(input_min + i * step)`` (step = range / 512) times ``output_scaling``,
    rounded half away from zero, less half the interpolation error at the segment's midpoint (rounded), so
    that linear interpolation between entries errs both ways; entry 512 is ``fn(input_max)``. Every entry
    is clamped to int16. ``fn`` maps an array of ``dtype`` to one of the same dtype, elementwise.

    ``dtype`` is gen_lut's FloatT: float64 is TFLite's ``gen_lut<double>`` (the tables of ``lut_s16``);
    float32 is ``gen_lut<float>``, every step (the sample points, the scaling, the halvings) rounded to
    float32 as C's float arithmetic does: TFLite Micro builds the softmax tables so, and CMSIS-NN's test
    data comes from it (``softmax_s16_tables``).
    """
    f = dtype
    lo, hi = f(input_min), f(input_max)
    step = (hi - lo) / f(512)
    i = np.arange(513).astype(f)
    points = lo + i * step  # sample 512 is the last segment's end, as gen_lut computes it
    points = np.concatenate([points, points[:512] + step / f(2), np.array([hi], dtype=f)])
    values = np.asarray(fn(points))
    if values.shape != points.shape:
        raise ValueError("gen_lut_s16: fn must be elementwise")
    values = values.astype(f) * f(output_scaling)
    samples, midpoints, end = values[:513], values[513:1025], values[1025]

    def rnd(v: np.ndarray) -> np.ndarray:  # std::round; exact in float64 for any float32 or float64 here
        return round_half_away(np.asarray(v, dtype=np.float64)).astype(f)

    sample = rnd(samples[:512])
    midpoint_interp = rnd((samples[1:] + sample) / f(2))
    bias = rnd((midpoint_interp - rnd(midpoints)) / f(2))
    table = np.empty(LUT_S16_ENTRIES, dtype=np.float64)
    table[:512] = sample - bias
    table[512] = rnd(end)
    return np.clip(table, INT16_MIN, INT16_MAX).astype(np.int16)


# ----------------------------------------------------------------------------------------------------------
# Argument checks shared by the s16 kernels
# ----------------------------------------------------------------------------------------------------------


def check_int16(name: str, arr: Any, ndim: int | tuple[int, ...] | None) -> np.ndarray:
    """Return ``arr`` if it is an int16 ndarray of the given rank(s) (None: any), else raise ValueError."""
    if not isinstance(arr, np.ndarray) or arr.dtype != np.int16:
        got = arr.dtype if isinstance(arr, np.ndarray) else type(arr).__name__
        raise ValueError(f"{name} must be a numpy int16 array, got {got}")
    if ndim is not None:
        ndims = (ndim,) if isinstance(ndim, int) else ndim
        if arr.ndim not in ndims:
            raise ValueError(f"{name} must have rank {' or '.join(map(str, ndims))}, got shape {arr.shape}")
    return arr


def check_activation_range_s16(act_min: int, act_max: int) -> None:
    """Require -32768 <= act_min <= act_max <= 32767."""
    if not INT16_MIN <= act_min <= act_max <= INT16_MAX:
        raise ValueError(f"need {INT16_MIN} <= act_min <= act_max <= {INT16_MAX}, got [{act_min}, {act_max}]")


def check_bias_s64(bias: Any, channels: int) -> np.ndarray:
    """The int64 bias of an s16 weighted kernel as int64 (channels,) (zeros for None), |bias| < 2^46."""
    if bias is None:
        return np.zeros(channels, dtype=np.int64)
    if not isinstance(bias, np.ndarray) or bias.dtype != np.int64:
        got = bias.dtype if isinstance(bias, np.ndarray) else type(bias).__name__
        raise ValueError(f"bias must be a numpy int64 array or None, got {got}")
    if bias.shape != (channels,):
        raise ValueError(f"bias must have shape ({channels},), got {bias.shape}")
    if np.any(np.abs(bias) >= S64_BIAS_LIMIT):
        raise ValueError("bias values must be below 2^46 in magnitude")
    return bias


def check_requant_s64(multipliers: ArrayLike, shifts: ArrayLike, channels: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel (length ``channels``) or per-tensor (length 1 / scalar) Q31 multipliers (int32 above
    INT32_MIN, as arm_nn_requantize_s64 documents) and shifts in [-31, 14]; returns (reduced multipliers,
    shifts) as int64 arrays."""
    m = np.atleast_1d(np.asarray(multipliers))
    s = np.atleast_1d(np.asarray(shifts))
    for name, arr in (("multipliers", m), ("shifts", s)):
        if arr.ndim != 1 or arr.shape[0] not in (1, channels) or not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"{name} must be integers of length 1 or {channels}, got {arr.dtype}{list(arr.shape)}")
    m, s = m.astype(np.int64), s.astype(np.int64)
    if np.any((m <= INT32_MIN) | (m > INT32_MAX)):
        raise ValueError("multipliers must be int32 values above -2^31")
    if np.any((s < S64_SHIFT_MIN) | (s > S64_SHIFT_MAX)):
        raise ValueError(f"shifts must be in [{S64_SHIFT_MIN}, {S64_SHIFT_MAX}] (arm_nn_requantize_s64)")
    return reduce_multiplier(m), s


def check_requant_s32(name: str, multiplier: int, shift: int) -> None:
    """A per-tensor ``arm_nn_requantize`` parameter pair: multiplier int32, shift in [-31, 30]."""
    if not isinstance(multiplier, int | np.integer) or not INT32_MIN <= multiplier <= INT32_MAX:
        raise ValueError(f"{name}_multiplier must be an int32, got {multiplier!r}")
    if not isinstance(shift, int | np.integer) or not -31 <= shift <= 30:
        raise ValueError(f"{name}_shift must be an int in [-31, 30], got {shift!r}")
