"""CMSIS-NN's s16 (A16W8) arithmetic as plain Python integer loops with C semantics.

The independent statement the s16 kernel tests check mcuforge's kernels against; nothing from mcuforge
is used. Sources: arm_nnsupportfunctions.h (REDUCE_MULTIPLIER, arm_nn_requantize_s64), arm_convolve_s16,
arm_depthwise_conv_s16 (its generic loop, with the kernel start/end computed per output pixel),
arm_nn_vec_mat_mult_t_s16 (fully connected), arm_nn_vec_mat_mult_t_s16_s16 (batch matmul),
arm_elementwise_add_s16 / _mul_s16, arm_avgpool_s16 / arm_max_pool_s16, arm_softmax_s16,
arm_nn_activation_s16, and TFLite's gen_lut / generic_int16_table_lookup. Casts to narrower C types
are made explicit (``c_wrap32``, ``c_wrap16``, ``c_u32``).
"""

from __future__ import annotations

import math

from cmsis_reference import c_div, c_requantize, c_wrap32, clamp

INT16_MIN, INT16_MAX = -(1 << 15), (1 << 15) - 1


def c_wrap16(v: int) -> int:
    """(int16_t) cast: the low 16 bits, two's complement."""
    v &= 0xFFFF
    return v - (1 << 16) if v & 0x8000 else v


def c_u32(v: int) -> int:
    """uint32_t arithmetic: modulo 2^32."""
    return v & 0xFFFFFFFF


def c_reduce_multiplier(m: int) -> int:
    return (m + (1 << 15)) >> 16 if m < 0x7FFF0000 else 0x7FFF


def c_requantize_s64(val: int, reduced_multiplier: int, shift: int) -> int:
    """arm_nn_requantize_s64: int64 product, shift to int32 (cast), +1, halve (int32)."""
    new_val = val * reduced_multiplier
    result = c_wrap32(new_val >> (14 - shift))
    return c_wrap32(result + 1) >> 1


def _channel(values, o: int) -> int:
    return int(values[o % len(values)])


def ref_conv2d_s16(x, w, bias, mults, shifts, stride, pad, dil, out_hw, lo, hi, int32_bias=False):
    """arm_convolve_s16 (im2col form): x [N][H][W][C], w [O][KH][KW][C/G], bias int64 per O or None; with
    int32_bias, its int32-bias form (int32 accumulator and bias, wrapping; arm_nn_requantize)."""
    n, h, wd, c = len(x), len(x[0]), len(x[0][0]), len(x[0][0][0])
    oc, kh, kw, wc = len(w), len(w[0]), len(w[0][0]), len(w[0][0][0])
    ocg = oc // (c // wc)
    oh, ow = out_hw
    out = []
    for b in range(n):
        plane = []
        for oy in range(oh):
            row = []
            for ox in range(ow):
                pixel = []
                for o in range(oc):
                    c0 = (o // ocg) * wc
                    acc = 0
                    for i in range(kh):
                        for j in range(kw):
                            iy = oy * stride[0] - pad[0] + i * dil[0]
                            ix = ox * stride[1] - pad[1] + j * dil[1]
                            if 0 <= iy < h and 0 <= ix < wd:  # im2col fills 0 outside: int16 zero point
                                for k in range(wc):
                                    acc += x[b][iy][ix][c0 + k] * w[o][i][j][k]
                    if bias is not None:
                        acc += int(bias[o])
                    if int32_bias:
                        r = c_requantize(c_wrap32(acc), _channel(mults, o), _channel(shifts, o))
                    else:
                        r = c_requantize_s64(acc, c_reduce_multiplier(_channel(mults, o)), _channel(shifts, o))
                    pixel.append(clamp(r, lo, hi))
                row.append(pixel)
            plane.append(row)
        out.append(plane)
    return out


def ref_depthwise_s16(x, w, bias, mults, shifts, stride, pad, dil, ch_mult, out_hw, lo, hi):
    """arm_depthwise_conv_s16's generic loop: kernel start/end from the output position, w [1][KH][KW][C*M]."""
    n, h, wd, c = len(x), len(x[0]), len(x[0][0]), len(x[0][0][0])
    kh, kw = len(w[0]), len(w[0][0])
    oh, ow = out_hw
    out = []
    for b in range(n):
        plane = []
        for oy in range(oh):
            base_y = oy * stride[0] - pad[0]
            row = []
            for ox in range(ow):
                base_x = ox * stride[1] - pad[1]
                pixel = []
                for ic in range(c):
                    for m in range(ch_mult):
                        o = m + ic * ch_mult
                        if dil[1] > 1:
                            kx0 = max(0, c_div(-base_x + dil[1] - 1, dil[1]))
                            kx1 = min(kw, c_div(wd - base_x + dil[1] - 1, dil[1]))
                        else:
                            kx0, kx1 = max(0, -base_x), min(kw, wd - base_x)
                        if dil[0] > 1:
                            ky0 = max(0, c_div(-base_y + dil[0] - 1, dil[0]))
                            ky1 = min(kh, c_div(h - base_y + dil[0] - 1, dil[0]))
                        else:
                            ky0, ky1 = max(0, -base_y), min(kh, h - base_y)
                        acc = int(bias[o]) if bias is not None else 0
                        for i in range(ky0, ky1):
                            for j in range(kx0, kx1):
                                acc += x[b][base_y + dil[0] * i][base_x + dil[1] * j][ic] * w[0][i][j][o]
                        r = c_requantize_s64(acc, c_reduce_multiplier(_channel(mults, o)), _channel(shifts, o))
                        pixel.append(clamp(r, lo, hi))
                row.append(pixel)
            plane.append(row)
        out.append(plane)
    return out


def ref_fully_connected_s16(rows, w, bias, mults, shifts, lo, hi):
    """arm_nn_vec_mat_mult_t_s16 per input row (int64 accumulator, bias, requantize_s64, clamp)."""
    out = []
    for row in rows:
        values = []
        for o, w_row in enumerate(w):
            acc = sum(a * b for a, b in zip(row, w_row, strict=True))
            if bias is not None:
                acc += int(bias[o])
            r = c_requantize_s64(acc, c_reduce_multiplier(_channel(mults, o)), _channel(shifts, o))
            values.append(clamp(r, lo, hi))
        out.append(values)
    return out


def ref_matmul_s16(lhs_rows, rhs_rows_t, mult, shift, lo, hi):
    """arm_nn_vec_mat_mult_t_s16_s16 over every lhs row, rhs as N rows of K, no bias."""
    rm = c_reduce_multiplier(mult)
    return [[clamp(c_requantize_s64(sum(a * b for a, b in zip(row, col, strict=True)), rm, shift), lo, hi)
             for col in rhs_rows_t] for row in lhs_rows]


def ref_add_s16(a, b, a_mult, a_shift, b_mult, b_shift, left_shift, out_mult, out_shift, lo, hi):
    """arm_elementwise_add_s16 for one element (offsets unused: zero points are 0)."""
    a1 = c_requantize(c_wrap32(a << left_shift), a_mult, a_shift)
    b1 = c_requantize(c_wrap32(b << left_shift), b_mult, b_shift)
    return clamp(c_requantize(c_wrap32(a1 + b1), out_mult, out_shift), lo, hi)


def ref_mul_s16(a, b, out_mult, out_shift, lo, hi):
    """arm_elementwise_mul_s16 for one element."""
    return clamp(c_requantize(a * b, out_mult, out_shift), lo, hi)


def ref_pool_s16(x, kind, kernel, stride, pad, out_hw, lo, hi):
    """arm_avgpool_s16 / arm_max_pool_s16 (portable loops): in-bounds window, C division for the mean."""
    n, h, wd, c = len(x), len(x[0]), len(x[0][0]), len(x[0][0][0])
    oh, ow = out_hw
    out = []
    for b in range(n):
        plane = []
        for oy in range(oh):
            base_y = oy * stride[0] - pad[0]
            row = []
            for ox in range(ow):
                base_x = ox * stride[1] - pad[1]
                ky0, ky1 = max(0, -base_y), min(kernel[0], h - base_y)
                kx0, kx1 = max(0, -base_x), min(kernel[1], wd - base_x)
                pixel = []
                for ch in range(c):
                    vals = [x[b][base_y + i][base_x + j][ch] for i in range(ky0, ky1) for j in range(kx0, kx1)]
                    assert vals, "window entirely in padding"
                    if kind == "avg":
                        total, count = sum(vals), len(vals)
                        r = c_div(total + count // 2, count) if total > 0 else c_div(total - count // 2, count)
                    else:
                        r = max(vals)
                    pixel.append(clamp(r, lo, hi))
                row.append(pixel)
            plane.append(row)
        out.append(plane)
    return out


def ref_table_lookup(value: int, lut) -> int:
    """generic_int16_table_lookup / the lookups inside arm_softmax_s16 (int16_t locals)."""
    index = 256 + (value >> 7)
    offset = value & 0x7F
    base = int(lut[index])
    slope = c_wrap16(int(lut[index + 1]) - base)
    delta = c_wrap16((slope * offset + 64) >> 7)
    return c_wrap16(base + delta)


def c_clz32(v: int) -> int:
    return 32 - c_u32(v).bit_length()


def ref_softmax_s16_row(row, mult, shift, exp_lut, one_by_one_lut):
    """arm_softmax_s16 for one row."""
    row_max = max(row)
    cached = []
    total = 0
    for v in row:
        scaled = c_requantize(v - row_max, mult, shift)
        sym = clamp(c_wrap32(scaled + INT16_MAX), INT16_MIN, INT16_MAX)  # int32 local
        e = ref_table_lookup(sym, exp_lut)
        cached.append(e)
        total = c_wrap32(total + e)
    headroom = c_clz32(total)
    # (sum << (headroom - 1)) + (1 << 13) in int32: wraps past INT32_MAX on the target (c_wrap32).
    shifted = c_wrap32(c_wrap32(total << (headroom - 1)) + (1 << 13)) >> 14
    sym_sum = c_wrap16(shifted - 98304)
    recip = ref_table_lookup(sym_sum, one_by_one_lut)
    right_shift = 30 - headroom
    return [c_wrap16(((e * recip) >> right_shift) + 1 >> 1) for e in cached]


def ref_activation_s16(value: int, left_shift: int, sigmoid: bool, table) -> int:
    """arm_nn_activation_s16 for one element, with the uint32 arithmetic of the C code; ``table`` is the
    256-entry uint16 sigmoid table."""
    abs_shift, saturation = (9, 0x7FFF << 10) if sigmoid else (8, 0xFFFF << 8)
    multiplier = 3 if left_shift < 0 else 3 << left_shift
    right = -left_shift if left_shift < 0 else 0
    rounding = 1 << (right - 1) if right > 0 else 0
    input_data = c_wrap32(value * multiplier + rounding) >> right
    abs_input = c_u32(input_data if input_data > 0 else -input_data)
    uh = abs_input >> abs_shift
    if uh >= 255:
        result = saturation
    else:
        ua, ub = int(table[uh]), int(table[uh + 1])
        ut = abs_input & (0x1FF if sigmoid else 0xFF)
        result = c_u32((ua << abs_shift) + ut * c_u32(ub - ua))
    if sigmoid:
        result = c_u32(result + (1 << 9)) if input_data >= 0 else c_u32((1 << 25) - result + (1 << 9) - 1)
        result >>= 10
    else:
        result = c_u32(result - (1 << 23) + (1 << 7)) if input_data >= 0 else c_u32(-result + (1 << 23) + (1 << 7) - 1)
        result >>= 8
    return c_wrap16(result)


#: The entries of arm_nntables.c's sigmoid_table_uint16 that are one above the rounded definition (Arm's
#: table is tuned; tests/test_cmsis_nn_s16.py checks this reference against the table in a CMSIS-NN tree).
SIGMOID_TABLE_BUMPS = frozenset({4, 8, 12, 14, 15, 16, 17, 19, 20, 21, 22, 25, 27, 28, 29, 30, 31, 33, 34, 35,
                                 37, 39, 40, 41, 43, 44, 45, 46, 49, 50, 54, 62, 63, 64, 66, 82, 86, 93, 100,
                                 103, 112, 116, 135, 255})


def sigmoid_table_q16() -> list[int]:
    """CMSIS-NN's sigmoid_table_uint16: sigmoid(i / 24) in Q0.16 for i = 0..255 (the definition in
    arm_nntables.c's comment, computed here with math.exp), rounded to nearest, plus one at the entries of
    SIGMOID_TABLE_BUMPS."""
    return [int(math.floor(65536.0 / (1.0 + math.exp(-i / 24.0)) + 0.5)) + (i in SIGMOID_TABLE_BUMPS)
            for i in range(256)]


def read_sigmoid_table(cmsis_nn_root) -> list[int]:
    """sigmoid_table_uint16 as a CMSIS-NN tree defines it (Source/NNSupportFunctions/arm_nntables.c)."""
    import re
    from pathlib import Path
    text = (Path(cmsis_nn_root) / "Source" / "NNSupportFunctions" / "arm_nntables.c").read_text()
    body = text.split("sigmoid_table_uint16[256] = {", 1)[1].split("}", 1)[0]
    return [int(v) for v in re.findall(r"\d+", body)]


def tflite_gen_lut(func, lo: float, hi: float, scaling: float = 32768.0) -> list[int]:
    """TFLite's gen_lut<double> (std::round), 513 entries."""
    def rnd(v: float) -> float:
        return math.copysign(math.floor(abs(v) + 0.5), v)

    step = (hi - lo) / 512
    half = step / 2
    table = []
    for i in range(512):
        val = func(lo + i * step) * scaling
        sample = rnd(val)
        midpoint_interp = rnd((func(lo + (i + 1) * step) * scaling + sample) / 2)
        midpoint = rnd(func(lo + i * step + half) * scaling)
        bias = rnd((midpoint_interp - midpoint) / 2)
        table.append(int(min(max(sample - bias, -32768.0), 32767.0)))
    table.append(int(min(max(rnd(func(hi) * scaling), -32768.0), 32767.0)))
    return table


def tflite_gen_lut_float(func, lo: float, hi: float, scaling: float = 32768.0) -> list[int]:
    """TFLite's gen_lut<float> (TFLite Micro's softmax tables): the same steps with every operation rounded
    to float32 (numpy float32 scalars; std::round applied exactly in float64). ``func`` takes and returns a
    numpy float32."""
    import numpy as np
    f = np.float32

    def rnd(v) -> np.float32:
        return f(math.copysign(math.floor(abs(float(v)) + 0.5), float(v)))

    lo, hi, scaling = f(lo), f(hi), f(scaling)
    step = (hi - lo) / f(512)
    half = step / f(2)
    table = []
    for i in range(512):
        sample = rnd(func(lo + f(i) * step) * scaling)
        midpoint_interp = rnd((func(lo + f(i + 1) * step) * scaling + sample) / f(2))
        midpoint = rnd(func(lo + f(i) * step + half) * scaling)
        bias = rnd((midpoint_interp - midpoint) / f(2))
        table.append(int(min(max(float(sample - bias), -32768.0), 32767.0)))
    table.append(int(min(max(float(rnd(func(hi) * scaling)), -32768.0), 32767.0)))
    return table


def tflite_softmax_s16_params(input_scale: float, beta: float = 1.0) -> tuple[int, int]:
    """TFLite's int16 softmax prepare: QuantizeMultiplier(scale * beta / (10 / 65535))."""
    real = input_scale * beta / (10.0 / 65535.0)
    q, shift = math.frexp(real)
    q_fixed = int(math.floor(q * 2.0**31 + 0.5))
    if q_fixed == 1 << 31:
        q_fixed //= 2
        shift += 1
    return q_fixed, shift


def ref_convert_s8_s16(v: int, in_off: int, mult: int, shift: int) -> int:
    return clamp(c_requantize(v + in_off, mult, shift), INT16_MIN, INT16_MAX)


def ref_convert_s16_s8(v: int, out_off: int, mult: int, shift: int) -> int:
    return clamp(c_wrap32(c_requantize(v, mult, shift) + out_off), -128, 127)
