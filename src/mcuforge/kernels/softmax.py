"""int8 softmax over the last axis (CMSIS-NN ``arm_softmax_s8``) and its TFLite prepare.

The fixed-point arithmetic is gemmlowp's, as CMSIS-NN restates it in ``arm_nnsupportfunctions.h``:
``arm_nn_doubling_high_mult`` (saturating, sign-dependent rounding nudge, truncating division -- *not* the
requantize variant), ``arm_nn_exp_on_negative_values`` (exp on Q5.26 inputs, Q0.31 result),
``arm_nn_one_over_one_plus_x_for_x_in_0_1`` (three Newton-Raphson steps) and ``arm_nn_mult_by_power_of_two``
(saturating left shift). Every int32 operation wraps as on the target; values are carried in int64.

The exp only ever sees ``diff = x - row_max`` in [-255, 0], so it is evaluated once per call for those 256
values and looked up: exact, and the per-element work is a handful of vectorized int64 passes.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from . import jit
from .quant_utils import INT32_MAX, INT32_MIN, check_int8, divide_by_power_of_two, quantize_multiplier, wrap_int32

#: Integer bits of the scaled input difference (TFLite's kScaledDiffIntegerBits).
SCALED_DIFF_INTEGER_BITS = 5
#: Integer bits of the sum of exps (CMSIS-NN's ACCUM_BITS, TFLite's kAccumulationIntegerBits).
ACCUM_BITS = 12
#: Largest row: each exp adds at most 2^19 to the int32 sum, so 4095 elements can never overflow it.
MAX_ROW_SIZE = 4095

_EXP_BARREL_SHIFTER = (1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242)


def _i32(x: np.ndarray | int) -> np.ndarray:
    """Wrap to int32 and carry as int64 (so later products do not overflow numpy's int32)."""
    return wrap_int32(x).astype(np.int64)


def doubling_high_mult(a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
    """``arm_nn_doubling_high_mult`` (VQRDMULH): ``(a*b + nudge) / 2^31`` truncated toward zero, where the
    nudge is 2^30 if a and b have the same sign and 1 - 2^30 otherwise; INT32_MIN * INT32_MIN saturates."""
    a64, b64 = _i32(a), _i32(b)
    nudge = np.where((a64 < 0) ^ (b64 < 0), 1 - (1 << 30), 1 << 30)
    p = a64 * b64 + nudge  # |p| <= 2^62 + 2^30: exact in int64
    q = np.where(p >= 0, p >> 31, -((-p) >> 31))  # C division truncates toward zero
    return _i32(np.where((a64 == INT32_MIN) & (b64 == INT32_MIN), INT32_MAX, q))


def _divide_by_pow2(x: np.ndarray, exponent: np.ndarray | int) -> np.ndarray:
    return divide_by_power_of_two(x, exponent).astype(np.int64)


def _mult_by_power_of_two(x: np.ndarray, exponent: int) -> np.ndarray:
    """``arm_nn_mult_by_power_of_two``: saturating ``x << exponent``."""
    threshold = (1 << (31 - exponent)) - 1
    shifted = _i32(x << exponent)
    return np.where(x > threshold, INT32_MAX, np.where(x < -threshold, INT32_MIN, shifted))


def exp_on_negative_values(val: np.ndarray) -> np.ndarray:
    """``arm_nn_exp_on_negative_values``: exp of a Q5.26 value <= 0, as Q0.31 (exp(0) -> INT32_MAX)."""
    v = _i32(val)
    quarter_bits = 24
    val_mod_minus_quarter = (v & ((1 << quarter_bits) - 1)) - (1 << quarter_bits)
    remainder = _i32(val_mod_minus_quarter - v)
    # exp on [-1/4, 0) by a Taylor expansion around -1/8 (constants from gemmlowp).
    x = _i32((val_mod_minus_quarter << 5) + (1 << 28))
    x2 = doubling_high_mult(x, x)
    poly = _i32(_divide_by_pow2(doubling_high_mult(x2, x2), 2) + doubling_high_mult(x2, x))
    poly = _i32(doubling_high_mult(poly, 715827883) + x2)
    poly = _i32(x + _divide_by_pow2(poly, 1))
    result = _i32(1895147668 + doubling_high_mult(1895147668, poly))
    # Multiply in exp(-2^k / 4) for every set bit k of the whole quarters.
    for bit, factor in enumerate(_EXP_BARREL_SHIFTER, start=quarter_bits):
        result = np.where((remainder & (1 << bit)) != 0, doubling_high_mult(result, factor), result)
    return np.where(v == 0, INT32_MAX, result)


def one_over_one_plus_x_for_x_in_0_1(val: np.ndarray) -> np.ndarray:
    """``arm_nn_one_over_one_plus_x_for_x_in_0_1``: 1 / (1 + x) for Q0.31 x in [0, 1), as Q0.31."""
    total = _i32(val) + INT32_MAX
    rounded = total + np.where(total >= 0, 1, -1)
    half_denominator = _i32(np.where(rounded >= 0, rounded // 2, -((-rounded) // 2)))  # C division
    x = _i32(1515870810 + doubling_high_mult(half_denominator, -1010580540))
    one_q2_29 = 1 << 29
    for _ in range(3):
        correction = doubling_high_mult(x, _i32(one_q2_29 - doubling_high_mult(half_denominator, x)))
        x = _i32(x + _mult_by_power_of_two(correction, 2))
    return _mult_by_power_of_two(x, 1)


def _leading_zeros_32(x: np.ndarray) -> np.ndarray:
    """CLZ of positive int32 values (given as int64): 31 - floor(log2(x))."""
    bits = np.zeros(x.shape, dtype=np.int64)
    rest = x.copy()
    for step in (16, 8, 4, 2, 1):  # binary search on the highest set bit, exact for any int
        big = rest >= (1 << step)
        bits += np.where(big, step, 0)
        rest = np.where(big, rest >> step, rest)
    return 31 - bits


def softmax_params(input_scale: float, beta: float = 1.0) -> tuple[int, int, int]:
    """TFLite/TFLM int8 softmax prepare -> (multiplier, shift, diff_min) for ``softmax_s8``.

    ``PreprocessSoftmaxScaling``: real = min(beta * input_scale * 2^(31 - 5), 2^31 - 1), quantized with
    QuantizeMultiplierGreaterThanOne (real must exceed 1, so the shift is a left shift in [1, 31]).
    ``diff_min = -CalculateInputRadius(5, shift) = -floor((2^5 - 1) * 2^(31 - 5) / 2^shift)``: the most negative
    difference whose scaled value still fits in int32. Scales are used as given (float64).
    """
    input_scale, beta = float(input_scale), float(beta)
    if not (math.isfinite(input_scale) and math.isfinite(beta)) or input_scale <= 0.0 or beta <= 0.0:
        raise ValueError(f"softmax_params: need finite positive input_scale and beta, got {input_scale}, {beta}")
    max_real = float((1 << 31) - 1)
    real = min(beta * input_scale * float(1 << (31 - SCALED_DIFF_INTEGER_BITS)), max_real)
    if not real > 1.0:
        raise ValueError(
            f"softmax_params: beta * input_scale = {beta * input_scale} is too small (must exceed 2^-26)"
        )
    # QuantizeMultiplier of real in (1, 2^31) can need shift 31, one past quantize_multiplier's range; halving
    # is exact in binary floating point, so quantize real / 2 and add the factor back to the shift.
    multiplier, half_shift = quantize_multiplier(real / 2.0)
    shift = half_shift + 1
    radius = math.floor(
        ((1 << SCALED_DIFF_INTEGER_BITS) - 1) * float(1 << (31 - SCALED_DIFF_INTEGER_BITS)) / float(1 << shift)
    )
    return multiplier, shift, -int(radius)


def softmax_exp_table(multiplier: int, shift: int) -> np.ndarray:
    """``EXP_ON_NEG(MUL_SAT(diff * 2^shift, multiplier))`` for diff = -255..0 (index diff + 255), int64."""
    diff = np.arange(-255, 1, dtype=np.int64)
    return exp_on_negative_values(doubling_high_mult(_i32(diff << shift), multiplier))


def softmax_s8(x: np.ndarray, *, multiplier: int, shift: int, diff_min: int) -> np.ndarray:
    """int8 softmax over the last axis, bit-exact with CMSIS-NN ``arm_softmax_s8`` (output scale 1/256, zero
    point -128). Per row:

    - ``diff = x - max(row)``; only entries with ``diff >= diff_min`` count, the others output -128;
    - ``e = exp_on_negative_values(doubling_high_mult(diff << shift, multiplier))`` (Q0.31);
    - ``sum = sum(divide_by_power_of_two(e, 12))``, ``headroom = clz(sum)``;
      ``scale = one_over_one_plus_x_for_x_in_0_1((sum << headroom) - 2^31)``;
    - ``out = clamp(divide_by_power_of_two(doubling_high_mult(scale, e), 35 - headroom) - 128, -128, 127)``.

    One deviation from the C text, where it is undefined: when the sum reaches 2^28 (rows of 512 or more
    entries near the max) the divide exponent ``35 - headroom`` exceeds 31 and the C code shifts an int32 by
    32 or more. Here that divide is the exact rounding, which is 0 (every such output is -128, i.e. p < 1/512).
    Rows longer than 4095 are rejected (the int32 sum could overflow).
    """
    x = check_int8("x", x, None)
    if x.ndim == 0:
        raise ValueError("softmax_s8: x must have at least one axis")
    return prepare_softmax_s8(multiplier=multiplier, shift=shift, diff_min=diff_min)(x)


def prepare_softmax_s8(*, multiplier: int, shift: int, diff_min: int) -> Callable[[np.ndarray], np.ndarray]:
    """``softmax_s8`` with its parameters checked and its tables built once; returns ``x -> softmax_s8(x, ...)``."""
    if not isinstance(shift, int | np.integer) or not 0 <= shift <= 31:
        raise ValueError(f"softmax_s8: shift must be an int in [0, 31], got {shift!r}")
    if not isinstance(multiplier, int | np.integer) or not 0 <= multiplier <= INT32_MAX:
        raise ValueError(f"softmax_s8: multiplier must be an int in [0, 2^31 - 1], got {multiplier!r}")
    if not isinstance(diff_min, int | np.integer) or diff_min > 0:
        raise ValueError(f"softmax_s8: diff_min must be an int <= 0, got {diff_min!r}")
    exp_table, sum_terms, exp_nonnegative = _tables(int(multiplier), int(shift), int(diff_min))
    sum_terms_int = sum_terms.astype(np.int64)  # exact integers below 2^20, for the compiled loop

    def run(x: np.ndarray) -> np.ndarray:
        if x.dtype != np.int8 or x.ndim == 0:
            raise ValueError(f"softmax_s8: x must be an int8 array with at least one axis, got "
                             f"{x.dtype}{list(x.shape)}")
        row_size = x.shape[-1]
        if not 1 <= row_size <= MAX_ROW_SIZE:
            raise ValueError(f"softmax_s8: row size must be in [1, {MAX_ROW_SIZE}], got {row_size}")
        rows = x.reshape(-1, row_size)
        out = np.empty(rows.shape, dtype=np.int8)
        if jit.ENABLED and exp_nonnegative:
            jit.softmax_rows(np.ascontiguousarray(rows), exp_table, sum_terms_int, out)
            return out.reshape(x.shape)
        ones = np.ones(row_size, np.float32 if row_size <= 32 else np.float64)  # see _softmax_block
        step = max(1, (1 << 16) // row_size)  # rows per block: keeps the int64 temporaries in cache
        for start in range(0, rows.shape[0], step):
            block = rows[start : start + step]
            _softmax_block(block, out[start : start + step], exp_table, sum_terms, exp_nonnegative, ones)
        return out.reshape(x.shape)
    return run


def _softmax_block(block: np.ndarray, out: np.ndarray, exp_table: np.ndarray, sum_terms: np.ndarray,
                   exp_nonnegative: bool, ones: np.ndarray) -> None:
    """``softmax_s8`` of the rows ``block`` (R, row_size) into ``out`` (int8, same shape)."""
    # diff + 255 in [0, 255] is (x - max + 255) mod 256: one uint8 pass on the bytes (wrapping is exact)
    row_max = np.ascontiguousarray(block.T).max(axis=0)  # the reduction runs along contiguous rows
    index = block.view(np.uint8) + (255 - row_max.view(np.uint8))[:, np.newaxis]
    index = index.astype(np.intp)  # both gathers below take it as it is (numpy converts uint8 each time)
    # The sum of at most 4095 terms below 2^20 is an exact float64 (float32 for rows of at most 32 terms, all
    # partial sums below 2^24) matrix-vector product.
    total = np.take(sum_terms if ones.dtype == np.float64 else sum_terms.astype(np.float32), index) @ ones
    scale, exponent = _row_scales(total)
    scale, exponent = scale[:, np.newaxis], exponent[:, np.newaxis]
    e = np.take(exp_table, index)
    if exp_nonnegative:
        # Both factors are >= 0 (scale is in [2^30, 2^31)): doubling_high_mult is (a*b + 2^30) >> 31 (the
        # product is below 2^62: no wrap, no saturation) and the division rounds half up, i.e.
        # (y + 2^(n-1)) >> n -- the same integers in a few in-place passes.
        n = np.minimum(exponent, 31)
        e *= scale
        e += (1 << 30) + (((1 << n) >> 1) << 31)  # the rounding of both steps at once (exact: see above)
        e >>= n + 31
        if exponent.max() > 31:
            e[np.broadcast_to(exponent > 31, e.shape)] = 0
        # e is in [0, 256]: the clamp to 255 and a byte flip give the int8 value e - 128
        np.minimum(e, 255, out=e)
        np.bitwise_xor(e, 0x80, out=out.view(np.uint8), casting="unsafe")
    else:
        scaled = doubling_high_mult(scale, e)
        probability = np.where(exponent > 31, 0, _divide_by_pow2(scaled, np.minimum(exponent, 31)))
        probability -= 128
        np.clip(probability, -128, 127, out=out, casting="unsafe")


def _row_scales(total: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, from the sum of exps (integers in [2^19, 2^31), of any numeric dtype): ``scale =
    one_over_one_plus_x_for_x_in_0_1((sum << clz(sum)) - 2^31)`` and the divide exponent ``35 - clz(sum)``,
    the same integers as those functions, in fewer numpy passes (rows are short: each pass costs its call).

    - ``frexp`` of the sum (exact in float64) gives ``sum = f * 2^k`` with f in [0.5, 1): ``clz = 32 - k``,
      and the half denominator of the reciprocal, ``((sum << clz) - 2^31 + 2^31 - 1 + 1) / 2``, is
      ``d = f * 2^31``, an integer in [2^30, 2^31);
    - every ``doubling_high_mult`` is ``(a*b + 2^30) >> 31`` when not both factors are INT32_MIN: for
      ``a*b < 0`` the C text's ``trunc((a*b + 1 - 2^30) / 2^31)`` is ``-floor((|a*b| + 2^30 - 1) / 2^31)
      = -ceil((|a*b| - 2^30) / 2^31) = floor((a*b + 2^30) / 2^31)``, and for ``a*b >= 0`` it is that floor
      by definition. Here d >= 2^30 and, over every d in [2^30, 2^31) (checked exhaustively, and on
      a sample in tests/test_kernels_fast_paths.py), each iterate x is in [505290270, 2^30], so no product
      saturates, ``mult_by_power_of_two(correction, 2)`` (= x_next - x) never saturates and no int32 sum
      wraps; only the final doubling of x = 2^30 saturates, to INT32_MAX.
    - The residual ``2^29 - floor((d*x + 2^30) / 2^31)`` is ``floor((2^60 + 2^30 - 1 - d*x) / 2^31)``
      (``-floor(a / n) = floor((n - 1 - a) / n)``), one pass fewer; |d*x| < 2^62 keeps it in int64.
    """
    frac, k = np.frexp(np.asarray(total, dtype=np.float64))
    d = np.multiply(frac, 2.0**31).astype(np.int64)
    x = d * -1010580540
    x += 1 << 30
    x >>= 31
    x += 1515870810  # in [505290270, 1010580540]
    t = np.empty_like(x)
    for _ in range(3):
        np.multiply(d, x, out=t)
        np.subtract((1 << 60) + (1 << 30) - 1, t, out=t)
        t >>= 31  # the residual
        t *= x
        t += 1 << 30
        t >>= 31  # the correction
        t <<= 2  # mult_by_power_of_two(correction, 2): no saturation (see above)
        x += t
    x <<= 1
    np.minimum(x, INT32_MAX, out=x)  # mult_by_power_of_two(x, 1), x > 0
    k = k.astype(np.int64)
    k += 3
    return x, k


@functools.lru_cache(maxsize=64)
def _tables(multiplier: int, shift: int, diff_min: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """The exps of diff = -255..0 (int64) and their terms of the sum (float64: exact, below 2^20), both 0
    where diff < diff_min: such an entry adds nothing to its row's sum and outputs -128 (a 0 exp gives
    probability 0); and whether every exp is >= 0 (the condition of the fast path)."""
    exp_table = softmax_exp_table(multiplier, shift)
    exp_table[: max(0, min(256, diff_min + 255))] = 0
    sum_terms = _divide_by_pow2(exp_table, ACCUM_BITS).astype(np.float64)
    for table in (exp_table, sum_terms):
        table.flags.writeable = False
    return exp_table, sum_terms, bool(exp_table.min() >= 0)
