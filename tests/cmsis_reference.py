"""CMSIS-NN's C arithmetic transcribed into plain Python integers, with the 32-bit wrap made explicit.

The independent statement of the math that the kernel tests check mcuforge's kernels against; it
uses nothing from mcuforge. Source: arm_nnsupportfunctions.h, default (double rounding) build.
"""

from __future__ import annotations

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def c_wrap32(v: int) -> int:
    """(int32_t) cast of a wider integer: keep the low 32 bits, two's complement."""
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def c_div(a: int, b: int) -> int:
    """C integer division: truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def c_doubling_high_mult_no_sat(m1: int, m2: int) -> int:
    mult = (1 << 30) + m1 * m2  # int64 accumulator preloaded with the rounding offset (SMLAL)
    return c_wrap32(mult >> 31)  # >> on a negative int64 is arithmetic (floor), as Python's >>


def c_divide_by_power_of_two(dividend: int, exponent: int) -> int:
    remainder_mask = (1 << exponent) - 1
    remainder = remainder_mask & dividend  # Python & on negatives == two's complement low bits
    result = dividend >> exponent
    threshold = remainder_mask >> 1
    if result < 0:
        threshold += 1
    if remainder > threshold:
        result += 1
    return result


def c_requantize(val: int, multiplier: int, shift: int) -> int:
    """arm_nn_requantize: wrapping left shift, doubling high multiply (+2^30), rounding divide."""
    left = shift if shift > 0 else 0
    right = -shift if shift < 0 else 0
    high = c_doubling_high_mult_no_sat(c_wrap32(val * (1 << left)), multiplier)
    return c_divide_by_power_of_two(high, right)


def clamp(v: int, lo: int, hi: int) -> int:
    return min(max(v, lo), hi)


def c_output(acc: int, mult: int, shift: int, out_off: int, act_min: int, act_max: int) -> int:
    """The common epilogue: requantize, add the output offset (int32), clamp."""
    return clamp(c_wrap32(c_requantize(acc, mult, shift) + out_off), act_min, act_max)
