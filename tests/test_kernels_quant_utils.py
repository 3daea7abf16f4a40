"""Fixed-point helpers against independent statements of the CMSIS-NN / TFLite math.

The ``c_*`` references below are transcriptions of CMSIS-NN's C code in plain Python integers, with the
32-bit wrap made explicit; they do not use anything from mcuforge.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  (registers torch.ops.quantized_decomposed)

from mcuforge.kernels import (
    add_quant_params,
    dequantize_per_tensor,
    divide_by_power_of_two,
    doubling_high_mult_no_sat,
    quantize_multiplier,
    quantize_multipliers,
    quantize_per_tensor,
    requantize,
)

from cmsis_reference import (
    INT32_MAX,
    INT32_MIN,
    c_divide_by_power_of_two,
    c_doubling_high_mult_no_sat,
    c_requantize,
)

# ---------------------------------------------------------------------------------------------------------
# Reference: CMSIS-NN arm_nnsupportfunctions.h, default (double rounding) build, in Python ints
# ---------------------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------------------
# quantize_multiplier
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("real", "expected"),
    [
        (0.0, (0, 0)),
        (0.5, (1 << 30, 0)),
        (1.0, (1 << 30, 1)),
        (0.25, (1 << 30, -1)),
        (0.75, (3 << 29, 0)),
        (2.0**-20, (1 << 30, -19)),
        (1.0 - 2.0**-31, ((1 << 31) - 1, 0)),  # largest q_fixed that stays below 2^31
        (1.0 - 2.0**-32, (1 << 30, 1)),  # q*2^31 = 2^31 - 0.5: half away from zero -> 2^31 -> renormalised
        (1.0 - 2.0**-33, (1 << 30, 1)),  # rounds up to 2^31 -> renormalised
        (0.5 + 2.0**-32, ((1 << 30) + 1, 0)),  # q*2^31 = 2^30 + 0.5 exactly: away from zero (not to even)
        (0.5 + 5 * 2.0**-32, ((1 << 30) + 3, 0)),  # 2^30 + 2.5 -> + 3 (banker's rounding would give + 2)
        (2.0**-32, (1 << 30, -31)),  # smallest kept shift
        (2.0**-32 * (1 - 2.0**-33), (1 << 30, -31)),  # frexp shift -32, renormalised to -31 before the flush
        (2.0**-33, (0, 0)),  # shift -32 < -31: flushed
        (2.0**-33 * 1.5, (0, 0)),
        (1e-300, (0, 0)),
        (2.0**29, (1 << 30, 30)),  # largest shift arm_nn_requantize takes
        (3.0, (3 << 29, 2)),
    ],
)
def test_quantize_multiplier_known_values(real: float, expected: tuple[int, int]) -> None:
    assert quantize_multiplier(real) == expected


@pytest.mark.parametrize("real", [2.0**30, 1e12, -0.5, float("nan"), float("inf")])
def test_quantize_multiplier_rejects(real: float) -> None:
    with pytest.raises(ValueError):
        quantize_multiplier(real)


def _ref_quantize_multiplier(real: float) -> tuple[int, int]:
    """Exact-rational statement: real = q * 2^e with q in [1/2, 1); m = round_half_away(q * 2^31)."""
    r = Fraction(real)
    e = 0
    while r >= 1:
        r /= 2
        e += 1
    while r < Fraction(1, 2):
        r *= 2
        e -= 1
    scaled = r * (1 << 31)
    m = math.floor(scaled + Fraction(1, 2))
    if m == 1 << 31:
        m, e = 1 << 30, e + 1
    if e < -31:
        return 0, 0
    return m, e


def test_quantize_multiplier_random_against_rationals() -> None:
    rng = np.random.default_rng(1)
    reals = np.exp2(rng.uniform(-33, 29.9, size=3000)) * rng.uniform(0.5, 1.0, size=3000)
    for real in reals:
        m, s = quantize_multiplier(float(real))
        assert (m, s) == _ref_quantize_multiplier(float(real))
        if m:
            assert (1 << 30) <= m <= INT32_MAX
            # |real - m * 2^(s-31)| is at most half a unit of the multiplier
            error = Fraction(float(real)) - Fraction(m) * Fraction(2) ** (s - 31)
            assert abs(error) <= Fraction(2) ** (s - 32)


def test_quantize_multipliers_array_matches_scalar() -> None:
    reals = np.array([[0.5, 1.0, 2.0**-33], [0.75, 1.0 - 2.0**-33, 1e-3]])
    mult, shift = quantize_multipliers(reals)
    assert mult.dtype == np.int32 and shift.dtype == np.int32 and mult.shape == reals.shape
    for r, m, s in zip(reals.ravel(), mult.ravel(), shift.ravel(), strict=True):
        assert (int(m), int(s)) == quantize_multiplier(float(r))
    m1, s1 = quantize_multipliers(np.float32(0.25))
    assert (int(m1), int(s1)) == (1 << 30, -1)


# ---------------------------------------------------------------------------------------------------------
# doubling_high_mult_no_sat / divide_by_power_of_two / requantize
# ---------------------------------------------------------------------------------------------------------

EDGE_INTS = [INT32_MIN, INT32_MIN + 1, -(1 << 30), -65537, -3, -2, -1, 0, 1, 2, 3, 65535, 1 << 30, INT32_MAX]


def test_doubling_high_mult_edges() -> None:
    a = np.array([x for x in EDGE_INTS for _ in EDGE_INTS], dtype=np.int64)
    b = np.array([y for _ in EDGE_INTS for y in EDGE_INTS], dtype=np.int64)
    got = doubling_high_mult_no_sat(a, b)
    assert got.dtype == np.int32
    assert got.tolist() == [c_doubling_high_mult_no_sat(int(x), int(y)) for x, y in zip(a, b, strict=True)]
    # the one overflow: (-2^31)^2 * 2 / 2^32 = 2^31 wraps to INT32_MIN
    assert int(doubling_high_mult_no_sat(INT32_MIN, INT32_MIN)) == INT32_MIN
    # rounding offset is +2^30 whatever the sign: -1.5 -> -1, +1.5 -> 2
    assert doubling_high_mult_no_sat([-3, 3], 1 << 30).tolist() == [-1, 2]


def test_divide_by_power_of_two_all_exponents() -> None:
    rng = np.random.default_rng(2)
    for e in range(32):
        half = 1 << (e - 1) if e else 0
        xs = EDGE_INTS + rng.integers(INT32_MIN, INT32_MAX, size=200, endpoint=True).tolist()
        if e:
            # exact ties (odd multiples of 2^(e-1)), both signs, and their neighbours
            ties = [(2 * k + 1) * half for k in rng.integers(-(1 << (31 - e)), (1 << (31 - e)) - 1, size=40)]
            xs += ties + [t + 1 for t in ties] + [t - 1 for t in ties]
        xs = [x for x in xs if INT32_MIN <= x <= INT32_MAX]
        got = divide_by_power_of_two(np.array(xs, dtype=np.int64), e).tolist()
        assert got == [c_divide_by_power_of_two(x, e) for x in xs], e
        if e:
            for x, g in zip(xs, got, strict=True):
                q = Fraction(x, 1 << e)
                expected = math.floor(abs(q) + Fraction(1, 2)) * (1 if q >= 0 else -1)  # half away from zero
                assert g == expected


@pytest.mark.parametrize(
    ("val", "mult", "shift", "expected"),
    [
        (3, 1 << 30, 0, 2),  # 1.5 -> 2 (doubling high mult rounds half up)
        (-3, 1 << 30, 0, -1),  # -1.5 -> -1: NOT away from zero in the multiply step (TFLite would give -2)
        (1, 1 << 30, -1, 1),  # 0.25: 0.5 -> 1, then 0.5 -> 1 (double rounding)
        (5, 1 << 30, -1, 2),  # 1.25: 2.5 -> 3, then 1.5 -> 2 (double rounding; exact answer 1)
        (-5, 1 << 30, -1, -1),  # -1.25: -2.5 -> -2, then -1 exactly
        (-7, 1 << 30, -1, -2),  # -1.75: -3.5 -> -3, then -1.5 -> -2 (away from zero)
        (-1, 1 << 30, -1, 0),  # -0.25: -0.5 -> 0
        (100, 1 << 30, 1, 100),  # left shift 1 then * 0.5
        (1000, (1 << 31) - 1, 0, 1000),  # multiplier ~1.0
        (1 << 30, 1 << 30, 2, 0),  # 2^30 << 2 = 2^32 wraps to 0
        (3 << 28, 1 << 30, 2, -(1 << 29)),  # 3*2^30 wraps to -2^30, * 0.5
        (INT32_MAX, INT32_MAX, -31, 1),  # (2^31 - 2) / 2^31 -> rounds to 1
        (INT32_MIN, INT32_MAX, -31, -1),
        (12345, 0, 0, 0),
        (1 << 20, 1 << 30, -20, 1),  # 2^19 / 2^20 = 0.5 -> 1
        (-(1 << 20), 1 << 30, -20, -1),  # -0.5 -> -1
        ((1 << 20) - 2, 1 << 30, -20, 0),  # just below 0.5 -> 0
    ],
)
def test_requantize_hand_computed(val: int, mult: int, shift: int, expected: int) -> None:
    assert int(requantize(val, mult, shift)) == expected
    assert c_requantize(val, mult, shift) == expected  # the reference agrees with the hand computation


SPECIAL_MULTIPLIERS = [1 << 30, (1 << 30) + 1, INT32_MAX, INT32_MAX - 1, 0, 1, INT32_MIN + 1, -(1 << 30)]


def test_requantize_random_against_reference() -> None:
    rng = np.random.default_rng(3)
    n = 20000
    vals = np.concatenate(
        [
            rng.integers(INT32_MIN, INT32_MAX, size=n // 2, endpoint=True),
            rng.integers(-(1 << 16), 1 << 16, size=n // 2),
        ]
    )
    mults = np.concatenate(
        [
            rng.integers(1 << 30, INT32_MAX, size=n // 2, endpoint=True),
            rng.choice(SPECIAL_MULTIPLIERS, n // 2),
        ]
    )
    shifts = rng.integers(-31, 30, size=n, endpoint=True)
    shifts[:64] = -31
    shifts[64:128] = 30
    got = requantize(vals, mults, shifts)
    assert got.dtype == np.int32
    ref = [c_requantize(int(v), int(m), int(s)) for v, m, s in zip(vals, mults, shifts, strict=True)]
    assert got.tolist() == ref


def test_requantize_ties_round_away_from_zero() -> None:
    # multiplier 2^30 halves an even value exactly, so hi = (2k+1) * 2^(e-1): an exact tie for the shift
    for e in range(1, 30):
        for k in (0, 1, 2, 7, 100, (1 << (29 - e)) - 1):
            val = (2 * k + 1) << e
            if val > INT32_MAX:
                continue
            assert int(requantize(val, 1 << 30, -e)) == k + 1
            assert int(requantize(-val, 1 << 30, -e)) == -(k + 1)


def test_requantize_per_channel_broadcast() -> None:
    rng = np.random.default_rng(4)
    acc = rng.integers(-(1 << 20), 1 << 20, size=(3, 4, 5, 6))
    mult = rng.integers(1 << 30, INT32_MAX, size=6)
    shift = rng.integers(-20, 3, size=6)
    got = requantize(acc, mult, shift)
    assert got.shape == acc.shape
    for idx in np.ndindex(acc.shape):
        c = idx[-1]
        assert got[idx] == c_requantize(int(acc[idx]), int(mult[c]), int(shift[c]))


def test_requantize_rejects_bad_shift() -> None:
    with pytest.raises(ValueError):
        requantize(1, 1 << 30, 31)
    with pytest.raises(ValueError):
        requantize(1, 1 << 30, -32)
    with pytest.raises(ValueError):
        requantize(1, 1 << 31, 0)


# ---------------------------------------------------------------------------------------------------------
# add_quant_params
# ---------------------------------------------------------------------------------------------------------


def test_add_quant_params_hand_computed() -> None:
    p = add_quant_params(0.1, 0.05, 0.2)
    assert p == {
        "left_shift": 20,
        "a_multiplier": 1 << 30,  # 0.1 / 0.2 = 0.5
        "a_shift": 0,
        "b_multiplier": 1 << 30,  # 0.05 / 0.2 = 0.25
        "b_shift": -1,
        "output_multiplier": 1 << 30,  # 0.2 / (2^20 * 0.2) = 2^-20
        "output_shift": -19,
    }


def test_add_quant_params_random() -> None:
    rng = np.random.default_rng(5)
    for _ in range(200):
        a, b, o = (float(np.float32(v)) for v in rng.uniform(1e-3, 0.5, size=3))
        p = add_quant_params(a, b, o)
        twice = 2 * max(a, b)
        for key, real in (("a", a / twice), ("b", b / twice), ("output", twice / (2**20 * o))):
            m, s = p[f"{key}_multiplier"], p[f"{key}_shift"]
            assert (m, s) == _ref_quantize_multiplier(real)
            assert s <= 0
    with pytest.raises(ValueError):
        add_quant_params(0.1, 0.1, 1e-9)  # output multiplier >= 1
    with pytest.raises(ValueError):
        add_quant_params(0.0, 0.1, 0.1)


# ---------------------------------------------------------------------------------------------------------
# quantize / dequantize vs torch's quantized_decomposed ops
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", [0.1, 0.0237, 1 / 3, 0.25, 0.0078125, 0.01234567, 2.5])
@pytest.mark.parametrize("zero_point", [-128, -5, 0, 17, 127])
def test_quantize_per_tensor_matches_torch(scale: float, zero_point: int) -> None:
    rng = np.random.default_rng(6)
    x = (rng.standard_normal(20000) * 80 * scale).astype(np.float32)
    # exact ties: (k + 0.5) * scale, computed so that x * fp32(1/scale) lands on .5 for power-of-two scales
    ties = ((np.arange(-300, 300) + 0.5) * scale).astype(np.float32)
    x = np.concatenate([x, ties, np.float32([0.0, -0.0, 1e30, -1e30, scale * 127.5, -scale * 128.5])])
    got = quantize_per_tensor(x, scale, zero_point)
    expected = torch.ops.quantized_decomposed.quantize_per_tensor(
        torch.from_numpy(x), scale, zero_point, -128, 127, torch.int8
    ).numpy()
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, expected)


def test_quantize_per_tensor_half_to_even_and_range() -> None:
    x = np.float32([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 200.0, -200.0])
    assert quantize_per_tensor(x, 1.0, 0).tolist() == [0, 2, 2, 0, -2, -2, 127, -128]
    assert quantize_per_tensor(x, 1.0, 0, qmin=-10, qmax=10).tolist() == [0, 2, 2, 0, -2, -2, 10, -10]
    u = quantize_per_tensor(np.float32([1.0, 300.0]), 1.0, 128, qmin=0, qmax=255, dtype=np.uint8)
    assert u.dtype == np.uint8 and u.tolist() == [129, 255]


@pytest.mark.parametrize("scale", [0.1, 0.0237, 1 / 3, 0.25])
@pytest.mark.parametrize("zero_point", [-128, 0, 9])
def test_dequantize_per_tensor_matches_torch(scale: float, zero_point: int) -> None:
    q = np.arange(-128, 128, dtype=np.int8)
    got = dequantize_per_tensor(q, scale, zero_point)
    expected = torch.ops.quantized_decomposed.dequantize_per_tensor(
        torch.from_numpy(q), scale, zero_point, -128, 127, torch.int8
    ).numpy()
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, expected)
