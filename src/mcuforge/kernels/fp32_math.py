"""The C runtime's portable float32 math (``csrc/kernels/fp32/mf_math.c``) in numpy, bit for bit.

mf_math computes exp, expm1, log, tanh, erf, sigmoid, silu and gelu from IEEE float32 + - * / and bit
operations only, in a fixed order, so that the host build, the soft-float Cortex-M3 and the FPU cores give
the same bits (glibc, newlib and torch's vectorized math all differ in the last bits). These functions
state the same operations in the same order on float32 arrays: numpy's float32 ufuncs round every
operation once (IEEE), and no two are fused, so the results are the C functions' bits on every input,
special values included (every NaN result is the canonical quiet NaN 0x7fc00000). A branch of the C code
becomes a mask: every branch is evaluated on the whole array (with harmless inputs where it is not taken)
and the taken one selected.

Keep each expression's association exactly as in the C source: ``a * b * c`` there is ``(a * b) * c``.
"""

from __future__ import annotations

import numpy as np

F32 = np.float32
CANONICAL_NAN = np.uint32(0x7FC00000).view(np.float32)


def _c(hex_literal: str) -> np.float32:
    """A C hexadecimal float literal with the ``f`` suffix (exact in float64, then one rounding)."""
    return F32(float.fromhex(hex_literal))


LN2_HI = _c("0x1.62e4p-1")
LN2_LO = _c("0x1.7f7d1cp-20")
LOG2E = _c("0x1.715476p+0")
EXP_OVERFLOW = _c("0x1.62e42ep+6")
EXP_UNDERFLOW = F32(-104.0)
ONE, TWO, HALF = F32(1.0), F32(2.0), F32(0.5)


def bits(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, np.float32).view(np.uint32)


def from_bits(u: np.ndarray) -> np.ndarray:
    return np.asarray(u, np.uint32).view(np.float32)


def isnan(x: np.ndarray) -> np.ndarray:
    return (bits(x) & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)


def canon(x: np.ndarray) -> np.ndarray:
    """x with every NaN made the canonical one (the C runtime's mf_canonf)."""
    x = np.asarray(x, np.float32)
    return np.where(isnan(x), CANONICAL_NAN, x).astype(np.float32, copy=False)


def fabs(x: np.ndarray) -> np.ndarray:
    return from_bits(bits(x) & np.uint32(0x7FFFFFFF))


def _pow2(k: np.ndarray) -> np.ndarray:
    """2^k as float32 bits, k in [-126, 127] (other lanes: any value, not selected)."""
    return from_bits((np.clip(k, -126, 127) + 127).astype(np.uint32) << np.uint32(23))


def _scale2(y: np.ndarray, k: np.ndarray) -> np.ndarray:
    """mf_math's scale2: y * 2^k for k in [-152, 128], with the C code's products in its order."""
    big = (y * F32(2.0**127)) * _pow2(k - 127)
    small = (y * _pow2(k + 100)) * F32(2.0**-100)
    return np.where(k > 127, big, np.where(k < -125, small, y * _pow2(k)))


def _poly(x: np.ndarray, coefficients: list[str]) -> np.ndarray:
    """Horner's rule as the C source nests it: c0 + x * (c1 + x * (... + x * cn))."""
    acc = _c(coefficients[-1]) * np.ones_like(x)
    for c in reversed(coefficients[:-1]):
        acc = _c(c) + x * acc
    return acc


def expf(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float32)
    with np.errstate(all="ignore"):
        nan, over, under = isnan(x), x > EXP_OVERFLOW, x < EXP_UNDERFLOW
        xs = np.where(nan | over | under, F32(0.0), x)
        kf = xs * LOG2E
        k = np.trunc(np.where(kf < 0, kf - HALF, kf + HALF)).astype(np.int32)  # C's (int) truncates
        fk = k.astype(np.float32)
        hi = xs - fk * LN2_HI
        lo = fk * LN2_LO
        r = hi - lo
        t = r * r
        c = r - t * _poly(t, ["0x1.555556p-3", "-0x1.6c16c2p-9", "0x1.1566acp-14"])
        y = ONE - ((lo - (r * c) / (TWO - c)) - hi)
        y = np.where(k == 0, y, _scale2(y, k))
    out = np.where(under, F32(0.0), y)
    out = np.where(over, F32(np.inf), out)
    return np.where(nan, CANONICAL_NAN, out).astype(np.float32, copy=False)


def expm1f(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float32)
    ax = fabs(x)
    with np.errstate(all="ignore"):
        p = _poly(x, ["0x1p-1", "0x1.555556p-3", "0x1.555556p-5", "0x1.111112p-7", "0x1.6c16c2p-10",
                      "0x1.a01a02p-13", "0x1.a01a02p-16", "0x1.71de3ap-19", "0x1.27e4fcp-22"])
        series = x + x * (x * p)
        tail = expf(x) - ONE
    out = np.where(ax < F32(2.0**-25), x,
                   np.where(ax < HALF, series, np.where(x < F32(-18.0), F32(-1.0), tail)))
    return np.where(isnan(x), CANONICAL_NAN, out).astype(np.float32, copy=False)


def logf(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float32)
    ix = bits(x)
    subnormal = ix < np.uint32(0x00800000)
    with np.errstate(all="ignore"):
        ix = np.where(subnormal, bits(x * F32(2.0**23)), ix)
        e = np.where(subnormal, -23, 0).astype(np.int32) + (ix >> np.uint32(23)).astype(np.int32) - 127
        m = ix & np.uint32(0x007FFFFF)
        upper = m > np.uint32(0x3504F3)  # m in [sqrt(1/2), sqrt(2)): halve the mantissa, one more exponent
        m = np.where(upper, m | np.uint32(0x3F000000), m | np.uint32(0x3F800000))
        e = e + upper.astype(np.int32)
        f = from_bits(m) - ONE
        s = f / (TWO + f)
        z = s * s
        big_r = z * _poly(z, ["0x1.555556p-1", "0x1.99999ap-2", "0x1.24924ap-2", "0x1.c71c72p-3"])
        hfsq = (HALF * f) * f
        near_one = f - (hfsq - s * (hfsq + big_r))
        dk = e.astype(np.float32)
        general = dk * LN2_HI - ((hfsq - (s * (hfsq + big_r) + dk * LN2_LO)) - f)
        out = np.where(e == 0, near_one, general)
    out = np.where(bits(x) == np.uint32(0x7F800000), x, out)  # +inf
    out = np.where(bits(x) >> np.uint32(31) == 1, CANONICAL_NAN, out)  # x < 0
    out = np.where((bits(x) & np.uint32(0x7FFFFFFF)) == 0, F32(-np.inf), out)  # +-0
    return np.where(isnan(x), CANONICAL_NAN, out).astype(np.float32, copy=False)


def _with_sign(r: np.ndarray, sign: np.ndarray) -> np.ndarray:
    return from_bits(bits(r) | sign)


def tanhf(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float32)
    sign = bits(x) & np.uint32(0x80000000)
    ax = fabs(x)
    with np.errstate(all="ignore"):
        z = x * x
        p = _poly(z, ["-0x1.555554p-2", "0x1.1110dcp-3", "-0x1.ba0996p-5", "0x1.64e3c8p-6", "-0x1.13b55p-7",
                      "0x1.3a0622p-9"])
        small = x + x * (z * p)
        r = np.where(ax >= F32(9.1), ONE, ONE - TWO / (expf(TWO * ax) + ONE))
    out = np.where(ax < F32(2.0**-12), x, np.where(ax < F32(0.55), small, _with_sign(r, sign)))
    return np.where(isnan(x), CANONICAL_NAN, out).astype(np.float32, copy=False)


def erff(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float32)
    sign = bits(x) & np.uint32(0x80000000)
    ax = fabs(x)
    with np.errstate(all="ignore"):
        z = x * x
        p = _poly(z, ["0x1.06eba8p-3", "-0x1.81273ep-2", "0x1.ce2cf8p-4", "-0x1.b7f90cp-6", "0x1.5405b0p-8",
                      "-0x1.a3f6f0p-11", "0x1.496a0ap-14"])
        small = x + x * p
        t = ONE / ax - F32(0.625)
        g = _poly(t, ["0x1.394bbep-2", "0x1.87756cp-2", "-0x1.61111p-3", "0x1.667b2cp-5", "0x1.802d8p-6",
                      "-0x1.822db4p-5", "0x1.508dacp-5", "-0x1.260384p-6"])
        r = np.where(ax >= F32(4.0), ONE, ONE - expf(-(ax * ax)) * g)
    out = np.where(ax < ONE, small, _with_sign(r, sign))
    return np.where(isnan(x), CANONICAL_NAN, out).astype(np.float32, copy=False)


def sigmoidf(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float32)
    t = expf(-fabs(x))
    with np.errstate(all="ignore"):
        out = np.where(bits(x) >> np.uint32(31) == 1, t / (ONE + t), ONE / (ONE + t))
    return np.where(isnan(x), CANONICAL_NAN, out).astype(np.float32, copy=False)


def _nan_or_minus_inf(x: np.ndarray) -> np.ndarray:
    return isnan(x) | (bits(x) == np.uint32(0xFF800000))


def siluf(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float32)
    with np.errstate(all="ignore"):
        out = x * sigmoidf(x)
    return np.where(_nan_or_minus_inf(x), CANONICAL_NAN, out).astype(np.float32, copy=False)


def geluf(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float32)
    with np.errstate(all="ignore"):
        out = (HALF * x) * (ONE + erff(x * _c("0x1.6a09e6p-1")))
    return np.where(_nan_or_minus_inf(x), CANONICAL_NAN, out).astype(np.float32, copy=False)


def gelu_tanhf(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float32)
    with np.errstate(all="ignore"):
        inner = _c("0x1.988454p-1") * (x + ((F32(0.044715) * x) * x) * x)
        out = (HALF * x) * (ONE + tanhf(inner))
    return np.where(_nan_or_minus_inf(x), CANONICAL_NAN, out).astype(np.float32, copy=False)
