"""Independent statements of the operator-coverage kernels' math (mul, softmax, pad, transpose, concat,
batch matmul, transposed convolution, LUT) as plain Python integer loops with C semantics.

Nothing from mcuforge is used. The fixed-point helpers follow CMSIS-NN's arm_nnsupportfunctions.h (softmax
support, gemmlowp constants) and TFLite's prepare functions; the loops follow the C kernels' definitions
(the transposed convolution scatters each input pixel, as arm_transpose_conv_s8 does, where the kernel under
test gathers per tap). Shared 32-bit primitives come from cmsis_reference.py.
"""

from __future__ import annotations

import itertools
import math

from cmsis_reference import INT32_MAX, INT32_MIN, c_div, c_divide_by_power_of_two, c_output, c_wrap32, clamp

# ---------------------------------------------------------------------------------------------------------
# TFLite prepare functions (float64 arithmetic, std::frexp / std::round)
# ---------------------------------------------------------------------------------------------------------


def tflite_quantize_multiplier(real: float) -> tuple[int, int]:
    """QuantizeMultiplier with no shift limit: frexp, round half away from zero, renormalise at 2^31."""
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    q_fixed = int(math.floor(abs(q) * 2.0**31 + 0.5))
    assert q_fixed <= 1 << 31
    if q_fixed == 1 << 31:
        q_fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return q_fixed, shift


def tflite_mul_params(a_scale: float, b_scale: float, out_scale: float) -> tuple[int, int]:
    m, s = tflite_quantize_multiplier(a_scale * b_scale / out_scale)
    assert s <= 30
    return m, s


def tflite_softmax_params(input_scale: float, beta: float = 1.0) -> tuple[int, int, int]:
    """PreprocessSoftmaxScaling(beta, scale, 5) + QuantizeMultiplierGreaterThanOne + CalculateInputRadius(5, .)."""
    integer_bits = 5
    real = min(beta * input_scale * (1 << (31 - integer_bits)), (1 << 31) - 1.0)
    assert real > 1.0, "QuantizeMultiplierGreaterThanOne requires a multiplier above one"
    mult, shift = tflite_quantize_multiplier(real)
    assert shift >= 0
    radius = ((1 << integer_bits) - 1) * (1 << (31 - integer_bits)) / (1 << shift)
    return mult, shift, -int(math.floor(radius))


# ---------------------------------------------------------------------------------------------------------
# Fixed-point helpers of the softmax (CMSIS-NN support functions, scalar C semantics)
# ---------------------------------------------------------------------------------------------------------


def c_doubling_high_mult(m1: int, m2: int) -> int:
    """arm_nn_doubling_high_mult (saturating): sign-dependent nudge, C division by 2^31 (toward zero)."""
    nudge = 1 << 30
    if (m1 < 0) ^ (m2 < 0):
        nudge = 1 - nudge
    result = c_wrap32(c_div(nudge + m1 * m2, 1 << 31))
    if m1 == m2 == INT32_MIN:
        result = INT32_MAX
    return result


def c_mult_by_power_of_two(val: int, exp: int) -> int:
    """arm_nn_mult_by_power_of_two: saturating left shift."""
    thresh = (1 << (31 - exp)) - 1
    if val > thresh:
        return INT32_MAX
    if val < -thresh:
        return INT32_MIN
    return c_wrap32(val << exp)


def c_exp_on_negative_values(val: int) -> int:
    """arm_nn_exp_on_negative_values: exp(val / 2^26) for val <= 0, as Q0.31."""
    shift = 24
    val_mod_minus_quarter = (val & ((1 << shift) - 1)) - (1 << shift)
    remainder = c_wrap32(val_mod_minus_quarter - val)
    x = c_wrap32((val_mod_minus_quarter << 5) + (1 << 28))
    x2 = c_doubling_high_mult(x, x)
    t = c_wrap32(c_divide_by_power_of_two(c_doubling_high_mult(x2, x2), 2) + c_doubling_high_mult(x2, x))
    t = c_wrap32(c_doubling_high_mult(t, 715827883) + x2)
    t = c_wrap32(x + c_divide_by_power_of_two(t, 1))
    result = c_wrap32(1895147668 + c_doubling_high_mult(1895147668, t))
    for factor in (1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242):
        if remainder & (1 << shift):
            result = c_doubling_high_mult(result, factor)
        shift += 1
    return INT32_MAX if val == 0 else result


def c_one_over_one_plus_x_for_x_in_0_1(val: int) -> int:
    total = val + INT32_MAX
    half_denominator = c_wrap32(c_div(total + (1 if total >= 0 else -1), 2))
    x = c_wrap32(1515870810 + c_doubling_high_mult(half_denominator, -1010580540))
    one = 1 << 29
    for _ in range(3):
        x = c_wrap32(
            x
            + c_mult_by_power_of_two(
                c_doubling_high_mult(x, c_wrap32(one - c_doubling_high_mult(half_denominator, x))), 2
            )
        )
    return c_mult_by_power_of_two(x, 1)


def c_clz32(v: int) -> int:
    v &= 0xFFFFFFFF
    return 32 - v.bit_length()


def c_divide_by_power_of_two_any(dividend: int, exponent: int) -> int:
    """Rounding divide, half away from zero, for any exponent >= 0 (the C helper only defines [0, 31])."""
    if exponent <= 31:
        return c_divide_by_power_of_two(dividend, exponent)
    q, r = divmod(abs(dividend), 1 << exponent)
    q += 2 * r >= 1 << exponent
    return q if dividend >= 0 else -q


# ---------------------------------------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------------------------------------


def ref_softmax_row(row: list[int], mult: int, shift: int, diff_min: int) -> list[int]:
    """arm_nn_softmax_common_s8 for one row, int8 output (exponents above 31 rounded exactly, see kernel)."""
    accum_bits = 12
    mask = c_wrap32(1 << shift)
    row_max = max(row)
    total = 0
    for v in row:
        diff = v - row_max
        if diff >= diff_min:
            exp = c_exp_on_negative_values(c_doubling_high_mult(c_wrap32(diff * mask), mult))
            total = c_wrap32(total + c_divide_by_power_of_two(exp, accum_bits))
    headroom = c_clz32(total)
    shifted = c_wrap32(total << headroom) if total > 0 else 0
    scale = c_one_over_one_plus_x_for_x_in_0_1(c_wrap32(shifted - (1 << 31)))
    bits_over_unit = accum_bits - headroom + 23
    out = []
    for v in row:
        diff = v - row_max
        if diff >= diff_min:
            exp = c_exp_on_negative_values(c_doubling_high_mult(c_wrap32(diff * mask), mult))
            res = c_divide_by_power_of_two_any(c_doubling_high_mult(scale, exp), bits_over_unit) - 128
            out.append(clamp(res, -128, 127))
        else:
            out.append(-128)
    return out


def ref_mul(a: int, b: int, a_off: int, b_off: int, out_off: int, mult: int, shift: int, lo: int, hi: int) -> int:
    """arm_elementwise_mul_s8 for one element."""
    return c_output((a + a_off) * (b + b_off), mult, shift, out_off, lo, hi)


def ref_pad(x, pads, pad_value):
    """Output element = input element shifted by the 'before' pads, or pad_value outside the input.

    x, the result: nested lists; shape given by len() recursion."""
    shape = _shape(x)
    out_shape = [s + b + a for s, (b, a) in zip(shape, pads, strict=True)]
    out = _full(out_shape, pad_value)
    for idx in itertools.product(*(range(s) for s in out_shape)):
        src = [i - b for i, (b, _) in zip(idx, pads, strict=True)]
        if all(0 <= s < n for s, n in zip(src, shape, strict=True)):
            _set(out, idx, _get(x, src))
    return out


def ref_transpose(x, perm):
    """out[i0, .., ik] = x[j] with j[perm[d]] = i[d]."""
    shape = _shape(x)
    out_shape = [shape[p] for p in perm]
    out = _full(out_shape, 0)
    for idx in itertools.product(*(range(s) for s in out_shape)):
        src = [0] * len(shape)
        for d, p in enumerate(perm):
            src[p] = idx[d]
        _set(out, idx, _get(x, src))
    return out


def ref_concat(inputs, axis):
    """Walk the output along axis and pick the input whose slab covers the position."""
    shapes = [_shape(a) for a in inputs]
    out_shape = list(shapes[0])
    out_shape[axis] = sum(s[axis] for s in shapes)
    out = _full(out_shape, 0)
    for idx in itertools.product(*(range(s) for s in out_shape)):
        pos = idx[axis]
        for arr, shape in zip(inputs, shapes, strict=True):
            if pos < shape[axis]:
                src = list(idx)
                src[axis] = pos
                _set(out, idx, _get(arr, src))
                break
            pos -= shape[axis]
    return out


def ref_matmul(lhs_rows, rhs_rows_t, lhs_off, rhs_off, out_off, mult, shift, lo, hi):
    """arm_nn_vec_mat_mult_t_s8 over every lhs row: rhs given as N rows of K (transposed), per-tensor quant."""
    out = []
    for row in lhs_rows:
        out_row = []
        for col in rhs_rows_t:
            acc = 0
            for a, b in zip(row, col, strict=True):
                acc = c_wrap32(acc + (a + lhs_off) * (b + rhs_off))
            out_row.append(c_output(acc, mult, shift, out_off, lo, hi))
        out.append(out_row)
    return out


def ref_transpose_conv(x, w, bias, in_off, out_off, mults, shifts, stride, pad, out_hw, lo, hi):
    """Scatter form of arm_transpose_conv_s8 over nested lists: x [N][H][W][C], w [O][KH][KW][C]."""
    n, h, wd, c = _shape(x)
    oc, kh, kw, _ = _shape(w)
    oh, ow = out_hw
    result = []
    for b in range(n):
        acc = [[[int(bias[o]) if bias is not None else 0 for o in range(oc)] for _ in range(ow)] for _ in range(oh)]
        for iy in range(h):
            for ix in range(wd):
                pixel = x[b][iy][ix]
                for ky in range(kh):
                    oy = iy * stride[0] + ky - pad[0]
                    if not 0 <= oy < oh:
                        continue
                    for kx in range(kw):
                        ox = ix * stride[1] + kx - pad[1]
                        if not 0 <= ox < ow:
                            continue
                        cell = acc[oy][ox]
                        for o in range(oc):
                            taps = w[o][ky][kx]
                            dot = sum((pixel[i] + in_off) * taps[i] for i in range(c))
                            cell[o] = c_wrap32(cell[o] + dot)
        result.append(
            [
                [
                    [
                        c_output(acc[oy][ox][o], mults[o % len(mults)], shifts[o % len(shifts)], out_off, lo, hi)
                        for o in range(oc)
                    ]
                    for ox in range(ow)
                ]
                for oy in range(oh)
            ]
        )
    return result


def ref_lut(values, table):
    return [table[v + 128] for v in values]


# ---------------------------------------------------------------------------------------------------------
# Nested-list helpers
# ---------------------------------------------------------------------------------------------------------


def _shape(x) -> list[int]:
    shape = []
    while isinstance(x, list):
        shape.append(len(x))
        x = x[0] if x else None
    return shape


def _full(shape, value):
    if not shape:
        return value
    return [_full(shape[1:], value) for _ in range(shape[0])]


def _get(x, idx):
    for i in idx:
        x = x[i]
    return x


def _set(x, idx, value):
    for i in idx[:-1]:
        x = x[i]
    x[idx[-1]] = value
