"""The A16W8 host kernels (int16 activations, int8 weights) against the independent integer statement of
CMSIS-NN's s16 arithmetic in cmsis_reference_s16.py: random cases and the edge cases (saturation, the
int32 casts that wrap, rounding ties, extreme parameters), plus a few checks against float math."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from cmsis_reference_s16 import (
    c_reduce_multiplier,
    c_requantize_s64,
    ref_activation_s16,
    ref_add_s16,
    ref_conv2d_s16,
    ref_convert_s8_s16,
    ref_convert_s16_s8,
    ref_depthwise_s16,
    ref_fully_connected_s16,
    ref_matmul_s16,
    ref_mul_s16,
    ref_pool_s16,
    ref_softmax_s16_row,
    ref_table_lookup,
    sigmoid_table_q16,
    tflite_gen_lut,
    tflite_gen_lut_float,
    tflite_softmax_s16_params,
)

from mcuforge.kernels import (
    activation_s16,
    add_s16,
    add_s16_params,
    avgpool_s16,
    batch_matmul_s16,
    clamp_s16,
    conv2d_s16,
    conv_output_hw,
    convert_s8_s16,
    convert_s16_s8,
    depthwise_conv2d_s16,
    fully_connected_s16,
    gen_lut_s16,
    lut_s16,
    make_lut_s16,
    maxpool_s16,
    mul_quant_params,
    mul_s16,
    quantize_multiplier,
    reduce_multiplier,
    requantize_s64,
    softmax_s16,
    softmax_s16_params,
    softmax_s16_tables,
    table_lookup_s16,
)
from mcuforge.kernels.lut_s16 import SIGMOID_TABLE_U16

from cmsis_reference import c_requantize

I16_MIN, I16_MAX = -32768, 32767


def int16(rng, shape, extreme: bool = False) -> np.ndarray:
    if extreme:  # mostly the ends of the range: saturation and the largest products
        return rng.choice(np.array([I16_MIN, I16_MIN + 1, -1, 0, 1, I16_MAX - 1, I16_MAX]), size=shape).astype(np.int16)
    return rng.integers(I16_MIN, I16_MAX + 1, size=shape, dtype=np.int16)


def s64_params(rng, channels: int) -> tuple[np.ndarray, np.ndarray]:
    """Q31 multipliers with the REDUCE_MULTIPLIER edge values among them, shifts over [-31, 14]."""
    n = channels if rng.random() < 0.7 else 1
    mult = rng.integers(1 << 30, 1 << 31, size=n, dtype=np.int64)
    edges = np.array([0x7FFF0000 - 1, 0x7FFF0000, (1 << 31) - 1, 0x7FFF7FFF, 0x40008000, 1, 0], dtype=np.int64)
    pick = rng.random(n) < 0.2
    mult[pick] = rng.choice(edges, size=int(pick.sum()))
    shift = rng.integers(-31, 15, size=n) if rng.random() < 0.3 else rng.integers(-20, 1, size=n)
    return mult.astype(np.int32), shift.astype(np.int32)


def act_range_s16(rng) -> tuple[int, int]:
    if rng.random() < 0.5:
        return I16_MIN, I16_MAX
    lo = int(rng.integers(I16_MIN, I16_MAX + 1))
    return lo, int(rng.integers(lo, I16_MAX + 1))


def bias_s64(rng, channels: int) -> np.ndarray | None:
    if rng.random() < 0.15:
        return None
    limit = 1 << int(rng.choice([20, 32, 45]))
    return rng.integers(-limit, limit, size=channels, dtype=np.int64)


# ---------------------------------------------------------------------------------------------------------
# Output stage
# ---------------------------------------------------------------------------------------------------------


def test_reduce_multiplier_matches_reference():
    values = [0, 1, (1 << 15) - 1, 1 << 15, 0x7FFF0000 - 1, 0x7FFF0000, 0x7FFF8000, (1 << 31) - 1, -1, -(1 << 31) + 1]
    assert reduce_multiplier(np.array(values)).tolist() == [c_reduce_multiplier(v) for v in values]


def test_requantize_s64_matches_reference_with_ties_and_wraps():
    rng = np.random.default_rng(0)
    acc = np.concatenate([rng.integers(-(1 << 47), 1 << 47, size=4000), rng.integers(-4096, 4096, size=2000)])
    rm = rng.integers(-(1 << 15), 1 << 15, size=acc.size)
    shift = rng.integers(-31, 15, size=acc.size)
    # exact ties of the final halving, both signs: acc * rm = (2k + 1) * 2^(14 - shift)
    k = rng.integers(-1000, 1000, size=500)
    tie_shift = rng.integers(-10, 8, size=500)
    acc = np.concatenate([acc, (2 * k + 1) << (14 - tie_shift)])
    rm = np.concatenate([rm, np.ones(500, dtype=np.int64)])
    shift = np.concatenate([shift, tie_shift])
    got = requantize_s64(acc, rm, shift)
    expected = [c_requantize_s64(int(a), int(m), int(s)) for a, m, s in zip(acc, rm, shift, strict=True)]
    assert got.tolist() == expected
    # ties round half up: -0.5 -> 0, 0.5 -> 1, -1.5 -> -1
    assert requantize_s64(np.array([-1, 1, -3]) << 14, 1, 0).tolist() == [0, 1, -1]
    # results beyond int32 wrap in the int64 -> int32 cast, as the C code does
    big = np.array([1 << 46], dtype=np.int64)
    assert requantize_s64(big, 0x7FFF, 7).tolist() == [c_requantize_s64(1 << 46, 0x7FFF, 7)]
    assert requantize_s64(big, 0x7FFF, 14).tolist() == [c_requantize_s64(1 << 46, 0x7FFF, 14)]  # right shift 0
    with pytest.raises(ValueError, match="shift"):
        requantize_s64(big, 1, 15)


# ---------------------------------------------------------------------------------------------------------
# Convolutions, fully connected, batch matmul
# ---------------------------------------------------------------------------------------------------------


def conv_geometry(rng):
    for _ in range(100):
        h, w, c = int(rng.integers(1, 7)), int(rng.integers(1, 7)), int(rng.integers(1, 5))
        kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        pad = (int(rng.integers(0, 3)), int(rng.integers(0, 3)))
        dil = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        oh, ow = conv_output_hw((h, w), (kh, kw), stride, pad, dil)
        if oh >= 1 and ow >= 1:
            return h, w, c, kh, kw, stride, pad, dil, (oh, ow)
    raise AssertionError("no geometry")


@pytest.mark.parametrize("case", range(60))
def test_conv2d_s16_matches_reference(case):
    rng = np.random.default_rng(100 + case)
    h, w, c, kh, kw, stride, pad, dil, out_hw = conv_geometry(rng)
    groups = int(rng.choice([g for g in (1, 2, c) if c % g == 0]))
    oc = groups * int(rng.integers(1, 4))
    x = int16(rng, (int(rng.integers(1, 3)), h, w, c), extreme=case % 5 == 0)
    wt = rng.integers(-127, 128, size=(oc, kh, kw, c // groups), dtype=np.int8)
    bias = bias_s64(rng, oc)
    mult, shift = s64_params(rng, oc)
    lo, hi = act_range_s16(rng)
    got = conv2d_s16(x, wt, bias, multipliers=mult, shifts=shift, stride=stride, padding=pad, dilation=dil,
                     act_min=lo, act_max=hi, output_hw=out_hw)
    expected = ref_conv2d_s16(x.tolist(), wt.tolist(), bias, mult.tolist(), shift.tolist(), stride, pad, dil,
                              out_hw, lo, hi)
    assert got.dtype == np.int16 and got.tolist() == expected


@pytest.mark.parametrize("case", range(30))
def test_conv2d_s16_int32_bias_matches_reference(case):
    """arm_convolve_s16's int32-bias form: int32 accumulator and bias (wrapping), arm_nn_requantize with the
    full Q31 multiplier and shifts up to 30; the extreme cases overflow the int32 sum."""
    rng = np.random.default_rng(700 + case)
    h, w, c, kh, kw, stride, pad, dil, out_hw = conv_geometry(rng)
    oc = int(rng.integers(1, 5))
    x = int16(rng, (int(rng.integers(1, 3)), h, w, c), extreme=case % 3 == 0)
    wt = rng.integers(-128, 128, size=(oc, kh, kw, c), dtype=np.int8)
    if case % 3 == 0:
        wt[:] = rng.choice(np.array([-128, 127], np.int8), wt.shape)
    bias = rng.integers(-(1 << 31), 1 << 31, oc).astype(np.int32) if case % 2 else np.zeros(oc, np.int32)
    mult = rng.integers(-(1 << 31), 1 << 31, oc).astype(np.int32)
    mult[0] = int(rng.choice([-(1 << 31), (1 << 31) - 1, 1 << 30]))
    shift = rng.integers(-31, 31, oc).astype(np.int8)
    lo, hi = act_range_s16(rng)
    got = conv2d_s16(x, wt, bias, multipliers=mult, shifts=shift, stride=stride, padding=pad, dilation=dil,
                     act_min=lo, act_max=hi, output_hw=out_hw)
    expected = ref_conv2d_s16(x.tolist(), wt.tolist(), bias, mult.tolist(), shift.tolist(), stride, pad, dil,
                              out_hw, lo, hi, int32_bias=True)
    assert got.dtype == np.int16 and got.tolist() == expected


@pytest.mark.parametrize("case", range(60))
def test_depthwise_conv2d_s16_matches_reference(case):
    rng = np.random.default_rng(200 + case)
    h, w, c, kh, kw, stride, pad, dil, out_hw = conv_geometry(rng)
    dm = int(rng.integers(1, 4))
    x = int16(rng, (int(rng.integers(1, 3)), h, w, c), extreme=case % 5 == 0)
    wt = rng.integers(-128, 128, size=(1, kh, kw, c * dm), dtype=np.int8)
    bias = bias_s64(rng, c * dm)
    mult, shift = s64_params(rng, c * dm)
    lo, hi = act_range_s16(rng)
    got = depthwise_conv2d_s16(x, wt, bias, multipliers=mult, shifts=shift, stride=stride, padding=pad,
                               dilation=dil, depth_multiplier=dm, act_min=lo, act_max=hi, output_hw=out_hw)
    expected = ref_depthwise_s16(x.tolist(), wt.tolist(), bias, mult.tolist(), shift.tolist(), stride, pad, dil,
                                 dm, out_hw, lo, hi)
    assert got.tolist() == expected


@pytest.mark.parametrize("case", range(40))
def test_fully_connected_s16_matches_reference(case):
    rng = np.random.default_rng(300 + case)
    rows, oc = int(rng.integers(1, 4)), int(rng.integers(1, 12))
    depth = int(rng.integers(1, 700 if case % 4 == 0 else 40))
    x = int16(rng, (rows, depth), extreme=case % 5 == 0)
    wt = rng.integers(-128, 128, size=(oc, depth), dtype=np.int8)
    bias = bias_s64(rng, oc)
    mult, shift = s64_params(rng, oc)
    lo, hi = act_range_s16(rng)
    got = fully_connected_s16(x, wt, bias, multipliers=mult, shifts=shift, act_min=lo, act_max=hi)
    assert got.tolist() == ref_fully_connected_s16(x.tolist(), wt.tolist(), bias, mult.tolist(), shift.tolist(), lo, hi)


def test_fully_connected_s16_beyond_int32_accumulators():
    """Depths past 512 where every product is the largest (-32768 * -128): the sum needs int64, as CMSIS-NN's
    int64 tail keeps it."""
    depth = 1500
    x = np.full((1, depth), I16_MIN, dtype=np.int16)
    wt = np.full((2, depth), -128, dtype=np.int8)
    acc = depth * (1 << 22)
    assert acc > 1 << 32
    got = fully_connected_s16(x, wt, None, multipliers=[1 << 30], shifts=[-20])  # acc * 2^14 / 2^35
    assert got.tolist() == [[acc >> 21] * 2]  # 3000; an int32 accumulator would have wrapped to 952
    got = fully_connected_s16(x, wt, None, multipliers=[1 << 30], shifts=[-8])
    assert got.tolist() == [[I16_MAX, I16_MAX]]


@pytest.mark.parametrize("case", range(30))
def test_batch_matmul_s16_matches_reference(case):
    rng = np.random.default_rng(400 + case)
    m, k, n = (int(v) for v in rng.integers(1, 7, size=3))
    batch_l, batch_r = ((2, 1), (1, 3)) if case % 3 == 0 else ((2,), (2,))
    adj_x, adj_y = bool(case % 2), bool(case % 4 < 2)
    lhs = int16(rng, (*batch_l, k, m) if adj_x else (*batch_l, m, k), extreme=case % 5 == 0)
    rhs = int16(rng, (*batch_r, n, k) if adj_y else (*batch_r, k, n))
    mult, shift = s64_params(rng, 1)
    lo, hi = act_range_s16(rng)
    got = batch_matmul_s16(lhs, rhs, output_multiplier=int(mult[0]), output_shift=int(shift[0]), act_min=lo,
                           act_max=hi, adj_x=adj_x, adj_y=adj_y)
    a = np.swapaxes(lhs, -1, -2) if adj_x else lhs
    b_t = rhs if adj_y else np.swapaxes(rhs, -1, -2)  # (..., N, K) rows, CMSIS's order
    shape = np.broadcast_shapes(a.shape[:-2], b_t.shape[:-2])
    a, b_t = np.broadcast_to(a, shape + a.shape[-2:]), np.broadcast_to(b_t, shape + b_t.shape[-2:])
    for idx in np.ndindex(*shape):
        assert got[idx].tolist() == ref_matmul_s16(a[idx].tolist(), b_t[idx].tolist(), int(mult[0]), int(shift[0]),
                                                   lo, hi)


def test_weighted_s16_argument_checks():
    x = np.zeros((1, 2, 2, 1), np.int16)
    w = np.ones((1, 1, 1, 1), np.int8)
    with pytest.raises(ValueError, match="int64"):  # int32 is conv2d_s16's other form; int16 is neither
        conv2d_s16(x, w, np.zeros(1, np.int16), multipliers=[1 << 30], shifts=[0])
    with pytest.raises(ValueError, match="int64"):  # arm_depthwise_conv_s16 has no int32-bias form
        depthwise_conv2d_s16(x, w, np.zeros(1, np.int32), multipliers=[1 << 30], shifts=[0])
    with pytest.raises(ValueError, match="shifts"):  # the int32 form: arm_nn_requantize's [-31, 30]
        conv2d_s16(x, w, np.zeros(1, np.int32), multipliers=[1 << 30], shifts=[31])
    assert conv2d_s16(x, w, np.zeros(1, np.int32), multipliers=[1 << 30], shifts=[30]).dtype == np.int16
    with pytest.raises(ValueError, match="2\\^46"):
        conv2d_s16(x, w, np.array([1 << 46]), multipliers=[1 << 30], shifts=[0])
    with pytest.raises(ValueError, match="shifts"):
        conv2d_s16(x, w, None, multipliers=[1 << 30], shifts=[15])
    with pytest.raises(ValueError, match="int16"):
        conv2d_s16(x.astype(np.int8), w, None, multipliers=[1 << 30], shifts=[0])


def test_conv2d_s16_tracks_float_convolution():
    """Realistic quantization: the integer result is the float convolution to within the rounding of the
    output, the requantization's 15-bit multiplier and the weights' rounding (a few LSB of 32767)."""
    rng = np.random.default_rng(7)
    xf = rng.standard_normal((1, 6, 6, 3)).astype(np.float32)
    wf = rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3
    s_in = float(np.abs(xf).max()) / 32767
    s_w = np.abs(wf).reshape(4, -1).max(axis=1) / 127
    yf = torch.nn.functional.conv2d(torch.from_numpy(xf).permute(0, 3, 1, 2), torch.from_numpy(wf).permute(0, 3, 1, 2),
                                    padding=1).permute(0, 2, 3, 1).numpy()
    s_out = float(np.abs(yf).max()) / 32767
    q_x = np.round(xf / s_in).astype(np.int16)
    q_w = np.round(wf / s_w[:, None, None, None]).astype(np.int8)
    mults, shifts = zip(*(quantize_multiplier(s_in * s / s_out) for s in s_w), strict=True)
    got = conv2d_s16(q_x, q_w, None, multipliers=list(mults), shifts=list(shifts), padding=1)
    y_exact = torch.nn.functional.conv2d(torch.from_numpy(q_x.astype(np.float64) * s_in).permute(0, 3, 1, 2),
                                         torch.from_numpy(q_w.astype(np.float64) * s_w[:, None, None, None])
                                         .permute(0, 3, 1, 2), padding=1).permute(0, 2, 3, 1).numpy()
    assert np.abs(got * s_out - y_exact).max() <= 3 * s_out


# ---------------------------------------------------------------------------------------------------------
# Elementwise
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", range(20))
def test_add_s16_matches_reference(case):
    rng = np.random.default_rng(500 + case)
    scales = rng.uniform(1e-5, 1e-2, size=3)
    p = add_s16_params(*scales)
    if case % 4 == 0:  # a subtraction: b's multiplier negated
        p["b_multiplier"] = -p["b_multiplier"]
    lo, hi = act_range_s16(rng)
    a = int16(rng, (3, 1, 5), extreme=case % 3 == 0)
    b = int16(rng, (1, 4, 5))
    got = add_s16(a, b, **p, act_min=lo, act_max=hi)
    ab, bb = np.broadcast_arrays(a, b)
    expected = [ref_add_s16(int(u), int(v), p["a_multiplier"], p["a_shift"], p["b_multiplier"], p["b_shift"],
                            p["left_shift"], p["output_multiplier"], p["output_shift"], lo, hi)
                for u, v in zip(ab.ravel(), bb.ravel(), strict=True)]
    assert got.ravel().tolist() == expected


def test_add_s16_adds_real_values():
    rng = np.random.default_rng(1)
    sa, sb, so = 3e-4, 1e-4, 4e-4
    a, b = int16(rng, (1000,)), int16(rng, (1000,))
    got = add_s16(a, b, **add_s16_params(sa, sb, so))
    real = np.clip((a * sa + b * sb) / so, I16_MIN, I16_MAX)
    assert np.abs(got - real).max() <= 1.0


@pytest.mark.parametrize("case", range(20))
def test_mul_s16_matches_reference(case):
    rng = np.random.default_rng(600 + case)
    mult, shift = mul_quant_params(*rng.uniform(1e-5, 1e-2, size=3))
    if case % 5 == 0:
        mult, shift = int(rng.integers(-(1 << 31), 1 << 31)), int(rng.integers(-31, 31))
    lo, hi = act_range_s16(rng)
    a, b = int16(rng, (2, 3, 1), extreme=case % 3 == 0), int16(rng, (3, 4))
    got = mul_s16(a, b, output_multiplier=mult, output_shift=shift, act_min=lo, act_max=hi)
    ab, bb = np.broadcast_arrays(a, b)
    expected = [ref_mul_s16(int(u), int(v), mult, shift, lo, hi) for u, v in zip(ab.ravel(), bb.ravel(), strict=True)]
    assert got.ravel().tolist() == expected


def test_clamp_s16():
    x = np.array([I16_MIN, -5, 0, 7, I16_MAX], np.int16)
    assert clamp_s16(x, act_min=0, act_max=6).tolist() == [0, 0, 0, 6, 6]
    with pytest.raises(ValueError):
        clamp_s16(x, act_min=5, act_max=4)


def test_conversions_match_reference_for_every_code():
    rng = np.random.default_rng(2)
    codes8 = np.arange(-128, 128, dtype=np.int8)
    codes16 = np.arange(I16_MIN, I16_MAX + 1, dtype=np.int16)
    for _ in range(8):
        zp = int(rng.integers(-128, 128))
        s8, s16 = float(rng.uniform(1e-3, 1e-1)), float(rng.uniform(1e-6, 1e-3))
        m, s = quantize_multiplier(s8 / s16)
        got = convert_s8_s16(codes8, input_offset=-zp, multiplier=m, shift=s)
        assert got.tolist() == [ref_convert_s8_s16(int(v), -zp, m, s) for v in codes8]
        m, s = quantize_multiplier(s16 / s8)
        got = convert_s16_s8(codes16, output_offset=zp, multiplier=m, shift=s)
        assert got.tolist() == [ref_convert_s16_s8(int(v), zp, m, s) for v in codes16]
        real = np.clip(np.round(codes16 * s16 / s8) + zp, -128, 127)
        assert np.abs(got - real).max() <= 1


# ---------------------------------------------------------------------------------------------------------
# Pooling
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", range(30))
def test_pooling_s16_matches_reference(case):
    rng = np.random.default_rng(700 + case)
    for _ in range(100):
        h, w, c = int(rng.integers(1, 8)), int(rng.integers(1, 8)), int(rng.integers(1, 4))
        kernel = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
        stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        pad = (int(rng.integers(0, kernel[0])), int(rng.integers(0, kernel[1])))
        out_hw = conv_output_hw((h, w), kernel, stride, pad)
        if min(out_hw) >= 1:
            break
    kind = "avg" if case % 2 else "max"
    x = int16(rng, (2, h, w, c), extreme=case % 3 == 0)
    lo, hi = act_range_s16(rng)
    fn = avgpool_s16 if kind == "avg" else maxpool_s16
    got = fn(x, kernel=kernel, stride=stride, padding=pad, act_min=lo, act_max=hi, output_hw=out_hw)
    assert got.tolist() == ref_pool_s16(x.tolist(), kind, kernel, stride, pad, out_hw, lo, hi)


def test_avgpool_s16_rounds_half_away_from_zero():
    x = np.array([1, 2, -1, -2], np.int16).reshape(1, 1, 4, 1)
    got = avgpool_s16(x, kernel=(1, 2), stride=(1, 2), padding=0)
    assert got.ravel().tolist() == [2, -2]  # 1.5 -> 2, -1.5 -> -2


# ---------------------------------------------------------------------------------------------------------
# Tables: lut_s16, softmax_s16, sigmoid/tanh
# ---------------------------------------------------------------------------------------------------------


def test_table_lookup_matches_reference_for_every_code():
    rng = np.random.default_rng(3)
    codes = np.arange(I16_MIN, I16_MAX + 1, dtype=np.int16)
    tables = [rng.integers(I16_MIN, I16_MAX + 1, size=513).astype(np.int16),  # slopes that wrap int16
              np.cumsum(rng.integers(0, 128, size=513)).clip(max=I16_MAX).astype(np.int16) - 20000]
    sample = codes[::7]
    for table in tables:
        got = table_lookup_s16(codes, table)
        assert got[::7].tolist() == [ref_table_lookup(int(v), table) for v in sample]
        assert lut_s16(codes, table).tolist() == got.tolist()  # the all-codes path of large inputs
        assert lut_s16(codes[:100], table).tolist() == got[:100].tolist()


def test_gen_lut_s16_is_tflite_gen_lut():
    for fn, lo, hi, scale in ((lambda v: 1.0 / (1.0 + v), 0.0, 1.0, 32768.0),
                              (lambda v: v * v * 0.3 - 0.5 * v, -2.0, 2.0, 10000.0)):
        assert gen_lut_s16(fn, lo, hi, scale).tolist() == tflite_gen_lut(fn, lo, hi, scale)
    exp_lut, one_by_one = softmax_s16_tables()  # gen_lut<float>, as TFLite Micro builds them
    f32 = np.float32
    assert exp_lut.tolist() == tflite_gen_lut_float(lambda v: f32(math.exp(float(v))), -10.0, 0.0)
    assert one_by_one.tolist() == tflite_gen_lut_float(lambda v: f32(1) / (f32(1) + v), 0.0, 1.0)
    # the float arithmetic matters: gen_lut<double> differs in two entries of 1/(1+x), none of exp
    double = tflite_gen_lut(lambda v: 1.0 / (1.0 + v), 0.0, 1.0)
    assert [i for i in range(513) if double[i] != one_by_one[i]] == [160, 294]
    assert (one_by_one[160], one_by_one[294], double[160], double[294]) == (24966, 20816, 24967, 20815)
    assert exp_lut.tolist() == tflite_gen_lut(math.exp, -10.0, 0.0)


@pytest.mark.parametrize("fn", [torch.sigmoid, torch.tanh, torch.nn.functional.gelu, torch.nn.functional.silu])
def test_make_lut_s16_tracks_the_function(fn):
    codes = np.arange(I16_MIN, I16_MAX + 1, dtype=np.int16)
    s_in = 6.0 / 32768
    s_out = float(fn(torch.from_numpy(codes * s_in)).abs().max()) / 32767  # the output range calibrated
    table = make_lut_s16(fn, input_scale=s_in, output_scale=s_out)
    got = lut_s16(codes, table).astype(np.float64)
    exact = np.clip(fn(torch.from_numpy(codes * s_in)).numpy() / s_out, I16_MIN, I16_MAX)
    # interpolation over 128 codes of a smooth function: within two output LSB
    assert np.abs(got - exact).max() <= 2


@pytest.mark.parametrize("case", range(12))
def test_softmax_s16_matches_reference(case):
    rng = np.random.default_rng(800 + case)
    exp_lut, one_by_one = softmax_s16_tables()
    if case % 3 == 2:  # any valid tables
        exp_lut = rng.integers(0, I16_MAX + 1, size=513).astype(np.int16)
        exp_lut[510:] = rng.integers(2, I16_MAX + 1, size=3)
        one_by_one = rng.integers(I16_MIN, I16_MAX + 1, size=513).astype(np.int16)
    scale = float(rng.uniform(1e-5, 3e-3))
    mult, shift = softmax_s16_params(scale)
    assert (mult, shift) == tflite_softmax_s16_params(scale)
    x = int16(rng, (3, int(rng.integers(1, 40))), extreme=case % 4 == 0)
    got = softmax_s16(x, multiplier=mult, shift=shift, exp_lut=exp_lut, one_by_one_lut=one_by_one)
    for row, out in zip(x.tolist(), got.tolist(), strict=True):
        assert out == ref_softmax_s16_row(row, mult, shift, exp_lut, one_by_one)


def test_softmax_s16_sum_that_normalises_to_two():
    """A row whose exp sum is 2^18 - 1: normalised and rounded it reaches 2^17, which the int16 cast of CMSIS's
    recentring wraps to -32768, so 1/(1+x) is read at x = 0. Kernel and reference agree on that."""
    exp_lut, one_by_one = softmax_s16_tables()
    mult, shift = softmax_s16_params(1e-3)
    top = int(table_lookup_s16(np.array([I16_MAX], np.int16), exp_lut)[0])  # the exp of a zero difference
    for extra in range(-12000, 0):  # an input whose exp completes the sum
        value = ref_table_lookup(min(max(c_requantize(extra, mult, shift) + I16_MAX, I16_MIN), I16_MAX), exp_lut)
        count, rest = divmod((1 << 18) - 1 - value, top)
        if rest == 0 and count > 0:
            row = [0] * count + [extra]
            break
    else:
        raise AssertionError("no input completes the sum with these parameters")
    got = softmax_s16(np.array([row], np.int16), multiplier=mult, shift=shift, exp_lut=exp_lut,
                      one_by_one_lut=one_by_one)
    assert got[0].tolist() == ref_softmax_s16_row(row, mult, shift, exp_lut, one_by_one)


def test_softmax_s16_tracks_float_softmax():
    rng = np.random.default_rng(4)
    scale = 8.0 / 32768
    x = rng.integers(-20000, 20000, size=(50, 10)).astype(np.int16)
    got = softmax_s16(x, multiplier=softmax_s16_params(scale)[0], shift=softmax_s16_params(scale)[1],
                      exp_lut=softmax_s16_tables()[0], one_by_one_lut=softmax_s16_tables()[1])
    exact = torch.softmax(torch.from_numpy(x * scale), dim=-1).numpy() * 32768
    assert np.abs(got - exact).max() <= 3  # LSB of 1/32768


def test_sigmoid_table_is_its_definition():
    # sigmoid(i / 24) rounded, one LSB higher at Arm's 44 tuned entries (checked against a CMSIS-NN tree's
    # arm_nntables.c by tests/test_cmsis_nn_s16.py)
    assert SIGMOID_TABLE_U16.tolist() == sigmoid_table_q16()
    rounded = np.floor(65536.0 / (1.0 + np.exp(-np.arange(256) / 24.0)) + 0.5)
    assert np.count_nonzero(SIGMOID_TABLE_U16 - rounded) == 44
    assert set(SIGMOID_TABLE_U16 - rounded) == {0, 1} and SIGMOID_TABLE_U16[255] == 65535


@pytest.mark.parametrize("function", ["sigmoid", "tanh"])
@pytest.mark.parametrize("left_shift", [-31, -16, -3, -2, -1, 0, 1, 2, 14])
def test_activation_s16_matches_reference_for_every_code(function, left_shift):
    codes = np.arange(I16_MIN, I16_MAX + 1, dtype=np.int16)
    got = activation_s16(codes, left_shift=left_shift, function=function)
    table = sigmoid_table_q16()
    sample = codes[::3]
    assert got[::3].tolist() == [ref_activation_s16(int(v), left_shift, function == "sigmoid", table)
                                 for v in sample]


@pytest.mark.parametrize("function", ["sigmoid", "tanh"])
def test_activation_s16_tracks_the_function(function):
    codes = np.arange(I16_MIN, I16_MAX + 1, dtype=np.int16)
    got = activation_s16(codes, left_shift=0, function=function) / 32768
    x = codes / 4096.0  # Q3.12
    exact = 1 / (1 + np.exp(-x)) if function == "sigmoid" else np.tanh(x)
    assert np.abs(got - exact).max() * 32768 < 2.5  # LSB of the Q0.15 output
