"""The int8 numeric contract (CMSIS-NN default double rounding), the executable statement of the C kernels' arithmetic:

- ``quantize_multiplier``: TFLite/CMSIS ``QuantizeMultiplier`` (real scale -> Q31 multiplier and shift,
  positive shift = left shift).
- ``doubling_high_mult_no_sat``, ``divide_by_power_of_two``, ``requantize``: CMSIS-NN's
  ``arm_nn_doubling_high_mult_no_sat``, ``arm_nn_divide_by_power_of_two`` and ``arm_nn_requantize`` (default
  build, i.e. *without* ``CMSIS_NN_USE_SINGLE_ROUNDING``), vectorized with numpy. Where the C code relies on
  32-bit two's complement wrap-around (a left shift that overflows, the int32 cast of the high word) the numpy
  code wraps the same way.
- ``add_quant_params``: the parameters TFLite's int8 ADD prepare computes for ``arm_elementwise_add_s8``.
- ``quantize_per_tensor`` / ``dequantize_per_tensor``: bit-exact with torch's
  ``quantized_decomposed.quantize_per_tensor`` / ``dequantize_per_tensor`` (fp32 arithmetic).

The fast engine that applies it to whole tensors is :mod:`.requant_engine`; the kernels' argument checks are
:mod:`.arg_checks` (``quant_utils`` re-exports all three).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from . import jit

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
#: Range of the shift argument of ``arm_nn_requantize`` (positive = left shift).
SHIFT_MIN = -31
SHIFT_MAX = 30

# ----------------------------------------------------------------------------------------------------------
# Integer helpers
# ----------------------------------------------------------------------------------------------------------


def wrap_int32(x: ArrayLike) -> np.ndarray:
    """Reduce integers modulo 2^32 into the int32 range (two's complement wrap, as the C kernels do)."""
    return np.asarray(x, dtype=np.int64).astype(np.int32)


def doubling_high_mult_no_sat(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """``arm_nn_doubling_high_mult_no_sat``: ``int32((int64(a) * b + 2^30) >> 31)``.

    The rounding offset 2^30 is added whatever the sign of the product (round half up, unlike TFLite's
    sign-dependent nudge). The only overflow, a = b = INT32_MIN, wraps to INT32_MIN as the C cast does.
    Returns int32.
    """
    a64 = wrap_int32(a).astype(np.int64)
    b64 = wrap_int32(b).astype(np.int64)
    return wrap_int32((a64 * b64 + (1 << 30)) >> 31)


def divide_by_power_of_two(x: ArrayLike, exponent: ArrayLike) -> np.ndarray:
    """``arm_nn_divide_by_power_of_two``: x / 2^exponent rounded half away from zero, exponent in [0, 31].

    Stated as CMSIS does it: arithmetic shift, then +1 if the remainder exceeds a threshold of
    ``mask >> 1`` (positive results) or ``(mask >> 1) + 1`` (negative results). Returns int32.
    """
    x64 = wrap_int32(x).astype(np.int64)
    e = np.asarray(exponent, dtype=np.int64)
    if np.any((e < 0) | (e > 31)):
        raise ValueError("divide_by_power_of_two: exponent must be in [0, 31]")
    mask = (np.int64(1) << e) - 1
    remainder = x64 & mask
    result = x64 >> e
    threshold = (mask >> 1) + (result < 0)
    return wrap_int32(result + (remainder > threshold))


def requantize(acc_int32: ArrayLike, multiplier: ArrayLike, shift: ArrayLike) -> np.ndarray:
    """``arm_nn_requantize`` (default double rounding): ``acc * multiplier * 2^shift / 2^31`` as int32.

    1. ``x = acc * (1 << max(shift, 0))`` as a wrapping 32-bit multiply;
    2. ``y = doubling_high_mult_no_sat(x, multiplier)`` (rounds half up);
    3. ``divide_by_power_of_two(y, max(-shift, 0))`` (rounds half away from zero).

    ``multiplier``/``shift`` are scalars or arrays broadcast against ``acc`` (per-channel values along the
    last axis). ``acc`` is taken modulo 2^32 (it is an int32 in C). ``shift`` must be in [-31, 30].
    """
    acc = wrap_int32(acc_int32).astype(np.int64)
    m = np.asarray(multiplier, dtype=np.int64)
    s = np.asarray(shift, dtype=np.int64)
    if np.any((s < SHIFT_MIN) | (s > SHIFT_MAX)):
        raise ValueError(f"requantize: shift must be in [{SHIFT_MIN}, {SHIFT_MAX}]")
    if np.any((m < INT32_MIN) | (m > INT32_MAX)):
        raise ValueError("requantize: multiplier must fit in int32")
    left = np.maximum(s, 0)
    right = np.maximum(-s, 0)
    x = wrap_int32(acc << left)  # |acc| <= 2^31 and left <= 30: exact in int64 before the wrap
    return divide_by_power_of_two(doubling_high_mult_no_sat(x, m), right)


# ----------------------------------------------------------------------------------------------------------
# Real scale -> (multiplier, shift)
# ----------------------------------------------------------------------------------------------------------


def _round_half_away(v: float) -> int:
    """std::round for a non-negative float below 2^52 (adding 0.5 is then exact)."""
    return int(math.floor(v + 0.5))


def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite/CMSIS ``QuantizeMultiplier``: ``real ~= multiplier * 2^shift / 2^31`` with a Q31 multiplier.

    ``frexp`` gives ``real = q * 2^shift`` with ``0.5 <= |q| < 1``; the multiplier is ``q * 2^31`` rounded
    half away from zero; if that rounds up to 2^31 it is halved and the shift incremented. A shift below -31
    (real below about 2^-32) flushes to (0, 0), as does ``real == 0``. Positive shift = left shift.
    Raises ValueError for negative or non-finite values and for real >= 2^30 (a shift > 30 is beyond
    arm_nn_requantize).
    """
    real = float(real)
    if not math.isfinite(real) or real < 0.0:
        raise ValueError(f"quantize_multiplier: scale must be finite and >= 0, got {real}")
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    q_fixed = _round_half_away(q * (1 << 31))  # exact product: scaling by a power of two
    if q_fixed == 1 << 31:
        q_fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    if shift > SHIFT_MAX:
        raise ValueError(f"quantize_multiplier: scale {real} needs shift {shift} > {SHIFT_MAX}")
    return int(q_fixed), int(shift)


def quantize_multipliers(reals: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel ``quantize_multiplier``: returns (multipliers int32, shifts int32), same shape as reals."""
    arr = np.asarray(reals, dtype=np.float64)
    pairs = [quantize_multiplier(r) for r in arr.ravel()]
    mult = np.array([p[0] for p in pairs], dtype=np.int32).reshape(arr.shape)
    shift = np.array([p[1] for p in pairs], dtype=np.int32).reshape(arr.shape)
    return mult, shift


def add_quant_params(
    a_scale: float, b_scale: float, out_scale: float, left_shift: int = 20
) -> dict[str, int]:
    """Parameters of ``arm_elementwise_add_s8`` as TFLite's int8 ADD prepare computes them.

    twice_max = 2 * max(a, b); input multipliers a / twice_max and b / twice_max; output multiplier
    twice_max / (2^left_shift * out_scale). As in TFLite (QuantizeMultiplierSmallerThanOneExp) every real
    multiplier must lie in (0, 1). Scales are used as given (float64); pass fp32 values to mimic a .tflite.
    """
    a_scale, b_scale, out_scale = float(a_scale), float(b_scale), float(out_scale)
    if min(a_scale, b_scale, out_scale) <= 0.0:
        raise ValueError("add_quant_params: scales must be positive")
    twice_max = 2.0 * max(a_scale, b_scale)
    reals = {
        "a": a_scale / twice_max,
        "b": b_scale / twice_max,
        "output": twice_max / ((1 << left_shift) * out_scale),
    }
    params: dict[str, int] = {"left_shift": int(left_shift)}
    for key, real in reals.items():
        if not 0.0 < real < 1.0:
            raise ValueError(f"add_quant_params: {key} multiplier {real} is not in (0, 1)")
        params[f"{key}_multiplier"], params[f"{key}_shift"] = quantize_multiplier(real)
    return params


# ----------------------------------------------------------------------------------------------------------
# float <-> int8 (torch quantized_decomposed semantics)
# ----------------------------------------------------------------------------------------------------------


def quantize_per_tensor(
    x_float: ArrayLike,
    scale: float,
    zero_point: int,
    qmin: int = -128,
    qmax: int = 127,
    dtype: DTypeLike = np.int8,
) -> np.ndarray:
    """torch ``quantized_decomposed.quantize_per_tensor``, bit for bit.

    In fp32: ``clamp(round_half_even(x * fp32(1.0 / scale)) + zero_point, qmin, qmax)``, where ``1.0 / scale``
    is computed in double first, as torch does. NaN inputs have no defined result.
    """
    x = np.asarray(x_float, dtype=np.float32)
    inv_scale = np.float32(1.0 / float(scale))
    if jit.ENABLED and np.dtype(dtype) == np.int8 and -128 <= qmin <= qmax <= 127:
        out = np.empty(x.shape, np.int8)
        jit.quantize(np.ascontiguousarray(x).reshape(-1), inv_scale, np.float32(zero_point), np.float32(qmin),
                     np.float32(qmax), out.reshape(-1))
        return out
    q = np.multiply(x, inv_scale)  # the same fp32 operations as before, in place (no temporaries)
    np.rint(q, out=q)  # = np.round: half to even
    np.add(q, np.float32(zero_point), out=q)
    np.clip(q, np.float32(qmin), np.float32(qmax), out=q)
    return q.astype(dtype)


def dequantize_per_tensor(q: ArrayLike, scale: float, zero_point: int) -> np.ndarray:
    """torch ``quantized_decomposed.dequantize_per_tensor``: ``(fp32(q) - zero_point) * fp32(scale)``."""
    q = np.asarray(q)
    if jit.ENABLED and q.dtype == np.int8:
        out = np.empty(q.shape, np.float32)
        jit.dequantize(np.ascontiguousarray(q).reshape(-1), np.float32(zero_point), np.float32(float(scale)),
                       out.reshape(-1))
        return out
    qf = q.astype(np.float32)
    return (qf - np.float32(zero_point)) * np.float32(float(scale))
