"""avgpool_s8, maxpool_s8, add_s8 and fully_connected_s8 against loop transcriptions of CMSIS-NN's
arm_avgpool_s8, arm_max_pool_s8, arm_elementwise_add_s8 and arm_fully_connected_s8 (+ per-channel).

References are plain Python integer loops with C semantics (truncating division, int32 wrap); nothing from
mcuforge is used to compute expected values.
"""

from __future__ import annotations

import numpy as np
import pytest

from mcuforge.kernels import add_quant_params, add_s8, avgpool_s8, fully_connected_s8, maxpool_s8

from cmsis_reference import c_div, c_requantize, c_wrap32, clamp

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


# ---------------------------------------------------------------------------------------------------------
# Reference loops over CMSIS-NN C semantics (integer primitives: cmsis_reference.py)
# ---------------------------------------------------------------------------------------------------------


def ref_pool(x, kernel, stride, pad, out_hw, act_min, act_max, kind):
    n, h, w, c = x.shape
    out = np.zeros((n, out_hw[0], out_hw[1], c), dtype=np.int8)
    xl = x.tolist()
    for b in range(n):
        for oy in range(out_hw[0]):
            for ox in range(out_hw[1]):
                for ch in range(c):
                    total, count, best = 0, 0, None
                    for ky in range(oy * stride[0] - pad[0], oy * stride[0] - pad[0] + kernel[0]):
                        for kx in range(ox * stride[1] - pad[1], ox * stride[1] - pad[1] + kernel[1]):
                            if 0 <= ky < h and 0 <= kx < w:
                                v = xl[b][ky][kx][ch]
                                total += v
                                count += 1
                                best = v if best is None or v > best else best
                    assert count > 0
                    if kind == "avg":
                        half = count // 2
                        mean = c_div(total + half, count) if total > 0 else c_div(total - half, count)
                        out[b, oy, ox, ch] = clamp(mean, act_min, act_max)
                    else:
                        out[b, oy, ox, ch] = clamp(best, act_min, act_max)
    return out


def ref_add(a, b, p):
    a, b = np.broadcast_arrays(a, b)
    out = np.zeros(a.shape, dtype=np.int8)
    for idx in np.ndindex(a.shape):
        in1 = c_wrap32((int(a[idx]) + p["a_offset"]) * (1 << p["left_shift"]))
        in2 = c_wrap32((int(b[idx]) + p["b_offset"]) * (1 << p["left_shift"]))
        in1 = c_requantize(in1, p["a_multiplier"], p["a_shift"])
        in2 = c_requantize(in2, p["b_multiplier"], p["b_shift"])
        total = c_requantize(c_wrap32(in1 + in2), p["output_multiplier"], p["output_shift"])
        out[idx] = clamp(c_wrap32(total + p["output_offset"]), p["act_min"], p["act_max"])
    return out


def ref_fc(x, w, bias, in_off, out_off, mults, shifts, act_min, act_max):
    rows = x.reshape(-1, x.shape[-1]).tolist()
    oc, depth = w.shape
    wl = w.tolist()
    out = np.zeros((len(rows), oc), dtype=np.int8)
    for r, row in enumerate(rows):
        for o in range(oc):
            acc = int(bias[o]) if bias is not None else 0
            for i in range(depth):
                acc = c_wrap32(acc + (row[i] + in_off) * wl[o][i])
            m = int(mults[o if len(mults) > 1 else 0])
            s = int(shifts[o if len(shifts) > 1 else 0])
            out[r, o] = clamp(c_wrap32(c_requantize(acc, m, s) + out_off), act_min, act_max)
    return out.reshape(x.shape[:-1] + (oc,))


# ---------------------------------------------------------------------------------------------------------
# Pooling
# ---------------------------------------------------------------------------------------------------------


def random_pool_case(rng: np.random.Generator) -> dict:
    while True:
        n, c = int(rng.integers(1, 3)), int(rng.integers(1, 5))
        h, w = (int(v) for v in rng.integers(1, 9, size=2))
        kernel = tuple(int(v) for v in rng.integers(1, 4, size=2))
        stride = tuple(int(v) for v in rng.integers(1, 4, size=2))
        pad = tuple(int(rng.integers(0, k)) for k in kernel)  # pad < kernel: first windows non-empty
        oh = (h + 2 * pad[0] - kernel[0]) // stride[0] + 1
        ow = (w + 2 * pad[1] - kernel[1]) // stride[1] + 1
        if oh < 1 or ow < 1:
            continue
        # the last window must still contain an input element
        if (oh - 1) * stride[0] - pad[0] >= h or (ow - 1) * stride[1] - pad[1] >= w:
            continue
        act_min, act_max = -128, 127
        if rng.random() < 0.3:
            act_min, act_max = int(rng.integers(-128, 0)), int(rng.integers(0, 128))
        x = rng.integers(-128, 128, size=(n, h, w, c), dtype=np.int8)
        if rng.random() < 0.3:  # small values make exact .5 averages frequent
            x = rng.integers(-2, 3, size=(n, h, w, c), dtype=np.int8)
        return dict(
            x=x, kernel=kernel, stride=stride, pad=pad, out_hw=(oh, ow), act_min=act_min, act_max=act_max
        )


@pytest.mark.parametrize("kind", ["avg", "max"])
@pytest.mark.parametrize("seed", range(40))
def test_pool_random_against_loops(kind: str, seed: int) -> None:
    case = random_pool_case(np.random.default_rng(3000 + seed))
    fn = avgpool_s8 if kind == "avg" else maxpool_s8
    got = fn(case["x"], kernel=case["kernel"], stride=case["stride"], padding=case["pad"],
             act_min=case["act_min"], act_max=case["act_max"])  # fmt: skip
    expected = ref_pool(case["x"], case["kernel"], case["stride"], case["pad"], case["out_hw"],
                        case["act_min"], case["act_max"], kind)  # fmt: skip
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, expected)


def test_avgpool_ties_round_away_from_zero() -> None:
    # 2x2 windows, count 4: sums 2 and -2 (0.5 / -0.5), 6 and -6 (1.5 / -1.5), 1 and -1 (0.25 / -0.25)
    windows = [[1, 1, 0, 0], [-1, -1, 0, 0], [3, 3, 0, 0], [-3, -3, 0, 0], [1, 0, 0, 0], [-1, 0, 0, 0]]
    x = np.array(windows, dtype=np.int8).reshape(1, len(windows), 2, 2).transpose(0, 2, 3, 1).copy()
    got = avgpool_s8(x, kernel=2, stride=2, padding=0)
    assert got.ravel().tolist() == [1, -1, 2, -2, 0, 0]


def test_avgpool_divides_by_in_bounds_count() -> None:
    # 3x3 window with padding 1 at the corner sees 4 elements: mean of [10, 11, 13, 15] = 12.25 -> 12
    x = np.array([[10, 11, 0], [13, 15, 0], [0, 0, 0]], dtype=np.int8).reshape(1, 3, 3, 1)
    got = avgpool_s8(x, kernel=3, stride=1, padding=1)
    assert got.shape == (1, 3, 3, 1) and got[0, 0, 0, 0] == 12
    # a 1x3 window overhanging both sides of a 1x2 input: count 2, -15 / 2 = -7.5 -> -8
    y = np.array([[-7, -8]], dtype=np.int8).reshape(1, 1, 2, 1)
    assert avgpool_s8(y, kernel=(1, 3), stride=1, padding=(0, 1)).ravel().tolist() == [-8, -8]


def test_pool_saturation_and_activation() -> None:
    x = np.array([[127, 127], [127, -128]], dtype=np.int8).reshape(1, 2, 2, 1)
    assert avgpool_s8(x, kernel=2, stride=1, padding=0).item() == 63  # 253 / 4 = 63.25
    assert maxpool_s8(x, kernel=2, stride=1, padding=0, act_min=0, act_max=6).item() == 6
    z = np.full((1, 2, 2, 1), -128, dtype=np.int8)
    assert maxpool_s8(z, kernel=2, stride=2, padding=0).item() == -128
    assert avgpool_s8(z, kernel=2, stride=2, padding=0, act_min=-5, act_max=5).item() == -5


def test_pool_batch_and_output_hw() -> None:
    rng = np.random.default_rng(11)
    x = rng.integers(-128, 128, size=(3, 5, 5, 2), dtype=np.int8)
    # "SAME" for 5x5, k=2, s=2: output 3x3 with the extra column/row at bottom/right
    for kind, fn in (("avg", avgpool_s8), ("max", maxpool_s8)):
        got = fn(x, kernel=2, stride=2, padding=0, output_hw=(3, 3))
        np.testing.assert_array_equal(got, ref_pool(x, (2, 2), (2, 2), (0, 0), (3, 3), -128, 127, kind))
        np.testing.assert_array_equal(got[1:2], fn(x[1:2], kernel=2, stride=2, padding=0, output_hw=(3, 3)))


def test_pool_validation() -> None:
    x = np.zeros((1, 4, 4, 1), dtype=np.int8)
    with pytest.raises(ValueError, match="padding"):
        avgpool_s8(x, kernel=2, stride=1, padding=2)  # first window entirely in padding
    with pytest.raises(ValueError, match="padding"):
        maxpool_s8(x, kernel=2, stride=2, padding=0, output_hw=(4, 4))
    with pytest.raises(ValueError, match="int8"):
        maxpool_s8(x.astype(np.int32), kernel=2, stride=2, padding=0)
    with pytest.raises(ValueError, match="kernel"):
        avgpool_s8(x, kernel=0, stride=1, padding=0)


# ---------------------------------------------------------------------------------------------------------
# Elementwise add
# ---------------------------------------------------------------------------------------------------------


def random_add_params(rng: np.random.Generator) -> dict:
    scales = [float(np.float32(v)) for v in np.exp(rng.uniform(np.log(1e-3), np.log(0.5), size=3))]
    p = add_quant_params(*scales)
    p.update(
        a_offset=int(rng.integers(-127, 129)),
        b_offset=int(rng.integers(-127, 129)),
        output_offset=int(rng.integers(-128, 128)),
        act_min=-128,
        act_max=127,
    )
    if rng.random() < 0.3:
        p.update(act_min=int(rng.integers(-128, 0)), act_max=int(rng.integers(0, 128)))
    return p


@pytest.mark.parametrize("seed", range(40))
def test_add_random_against_loops(seed: int) -> None:
    rng = np.random.default_rng(4000 + seed)
    p = random_add_params(rng)
    if seed % 4 == 3:  # raw parameters: any multipliers, shifts at both ends, other left shifts
        p.update(
            a_multiplier=int(rng.integers(0, INT32_MAX)), a_shift=int(rng.integers(-31, 1)),
            b_multiplier=int(rng.choice([1 << 30, INT32_MAX])), b_shift=int(rng.choice([-31, 0])),
            output_multiplier=int(rng.integers(1 << 30, INT32_MAX)), output_shift=int(rng.integers(-31, 31)),
            left_shift=int(rng.choice([0, 7, 20, 23])),
        )  # fmt: skip
    shape = tuple(int(v) for v in rng.integers(1, 5, size=int(rng.integers(1, 5))))
    a = rng.integers(-128, 128, size=shape, dtype=np.int8)
    b = rng.integers(-128, 128, size=shape, dtype=np.int8)
    if seed % 5 == 4:
        b = b[..., :1]  # broadcasting over the last axis
    got = add_s8(a, b, **p)
    assert got.dtype == np.int8 and got.shape == shape
    np.testing.assert_array_equal(got, ref_add(a, b, p))


def test_add_exact_sum_of_equal_scales() -> None:
    # equal scales everywhere, zero points 0: the int8 result is the saturated integer sum
    p = add_quant_params(0.05, 0.05, 0.05)
    a = np.arange(-128, 128, dtype=np.int8)
    b = np.roll(a, 37)
    got = add_s8(a, b, a_offset=0, b_offset=0, output_offset=0, **p)
    np.testing.assert_array_equal(got, np.clip(a.astype(int) + b.astype(int), -128, 127))
    # output scale twice the input scale: (a + b) / 2 rounded; ties go up or away depending on the step
    p2 = add_quant_params(0.05, 0.05, 0.1)
    got2 = add_s8(a, b, a_offset=0, b_offset=0, output_offset=0, **p2)
    ref = ref_add(a, b, dict(p2, a_offset=0, b_offset=0, output_offset=0, act_min=-128, act_max=127))
    np.testing.assert_array_equal(got2, ref)
    assert np.all(np.abs(got2.astype(int) - (a.astype(int) + b.astype(int)) / 2) <= 0.5)


def test_add_intermediate_sum_wraps() -> None:
    # positive input shifts (TFLite never produces them) push a' + b' past INT32_MAX: it wraps as in C
    a = np.array([127, 127, -128, 0], dtype=np.int8)
    p = dict(a_offset=128, b_offset=128, a_multiplier=INT32_MAX, a_shift=3, b_multiplier=INT32_MAX, b_shift=3,
             left_shift=20, output_offset=0, output_multiplier=1 << 30, output_shift=-20,
             act_min=-128, act_max=127)  # fmt: skip
    got = add_s8(a, a, **p)
    np.testing.assert_array_equal(got, ref_add(a, a, p))
    # a' = b' = 2139095039; a' + b' = 4278190078 wraps to -16777218; x 2^-21 -> -8 (saturating would give 127)
    assert got[0] == -8


def test_add_validation() -> None:
    p = add_quant_params(0.1, 0.1, 0.1)
    a = np.zeros((2, 3), dtype=np.int8)
    with pytest.raises(ValueError, match="broadcast"):
        add_s8(a, np.zeros((4,), dtype=np.int8), a_offset=0, b_offset=0, output_offset=0, **p)
    with pytest.raises(ValueError, match="int8"):
        add_s8(a, a.astype(np.int16), a_offset=0, b_offset=0, output_offset=0, **p)
    with pytest.raises(ValueError, match="shift"):
        add_s8(a, a, a_offset=0, b_offset=0, output_offset=0, **dict(p, a_shift=31))
    with pytest.raises(ValueError, match="left_shift"):
        add_s8(a, a, a_offset=0, b_offset=0, output_offset=0, **dict(p, left_shift=31))


# ---------------------------------------------------------------------------------------------------------
# Fully connected
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(40))
def test_fc_random_against_loops(seed: int) -> None:
    rng = np.random.default_rng(5000 + seed)
    n, depth, oc = int(rng.integers(1, 5)), int(rng.integers(1, 40)), int(rng.integers(1, 9))
    per_channel = seed % 2 == 0
    k = oc if per_channel else 1
    if seed % 3 == 0:  # both ends of the ranges
        mults = rng.choice([1 << 30, (1 << 30) + 1, INT32_MAX - 1, INT32_MAX], size=k)
        shifts = rng.choice([-31, -30, 0, 29, 30], size=k)
    else:
        mults = rng.integers(1 << 30, INT32_MAX, size=k, endpoint=True)
        shifts = rng.integers(-16, -6, size=k, endpoint=True)
    x = rng.integers(-128, 128, size=(n, depth), dtype=np.int8)
    if seed % 4 == 1:
        x = x[0]  # 1-D input
    w = rng.integers(-128, 128, size=(oc, depth), dtype=np.int8)
    bias = None if seed % 5 == 0 else rng.integers(-(1 << 20), 1 << 20, size=oc).astype(np.int32)
    in_off, out_off = int(rng.integers(-127, 129)), int(rng.integers(-128, 128))
    act_min, act_max = (-128, 127) if seed % 3 else (int(rng.integers(-128, 0)), int(rng.integers(0, 128)))
    got = fully_connected_s8(x, w, bias, input_offset=in_off, output_offset=out_off, multipliers=mults,
                             shifts=shifts, act_min=act_min, act_max=act_max)  # fmt: skip
    assert got.dtype == np.int8 and got.shape == x.shape[:-1] + (oc,)
    np.testing.assert_array_equal(got, ref_fc(x, w, bias, in_off, out_off, mults, shifts, act_min, act_max))


def test_fc_per_tensor_equals_repeated_per_channel() -> None:
    rng = np.random.default_rng(12)
    x = rng.integers(-128, 128, size=(7, 50), dtype=np.int8)
    w = rng.integers(-128, 128, size=(10, 50), dtype=np.int8)
    kw = dict(input_offset=-3, output_offset=4)
    a = fully_connected_s8(x, w, None, multipliers=[1234567890], shifts=[-12], **kw)
    b = fully_connected_s8(x, w, None, multipliers=[1234567890] * 10, shifts=[-12] * 10, **kw)
    np.testing.assert_array_equal(a, b)


def test_fc_hand_computed_tie_and_wrap() -> None:
    # acc = (x + 1) * w + bias; multiplier 2^30 (x0.5), shift -1 -> x0.25
    x = np.array([[1, 0], [-3, 0]], dtype=np.int8)
    w = np.array([[3, 0]], dtype=np.int8)
    # row 0: acc 6, x0.5 = 3 (hi 3), /2 = 1.5 -> 2; row 1: acc -6, x0.5 -> hi -3, /2 = -1.5 -> -2
    got = fully_connected_s8(x, w, None, input_offset=1, output_offset=0, multipliers=[1 << 30], shifts=[-1])
    assert got.ravel().tolist() == [2, -2]
    # int32 accumulator wrap-around: bias INT32_MAX plus 6 wraps to a large negative value
    bias = np.array([INT32_MAX], dtype=np.int32)
    wrapped = fully_connected_s8(x[:1], w, bias, input_offset=1, output_offset=0, multipliers=[1 << 30],
                                 shifts=[-20])  # fmt: skip
    assert wrapped.item() == -128


def test_fc_deep_accumulation_is_exact() -> None:
    # 3000 terms of ~32k each: far beyond float32's 2^24, exact in float64
    rng = np.random.default_rng(13)
    x = rng.choice(np.array([127, -128, 126], dtype=np.int8), size=(2, 3000))
    w = rng.choice(np.array([127, -128, -127], dtype=np.int8), size=(3, 3000))
    bias = np.array([1, -1, 12345], dtype=np.int32)
    mults, shifts = [INT32_MAX, 1 << 30, 1500000001], [-17, -16, -18]
    got = fully_connected_s8(x, w, bias, input_offset=128, output_offset=-1, multipliers=mults, shifts=shifts)
    np.testing.assert_array_equal(got, ref_fc(x, w, bias, 128, -1, mults, shifts, -128, 127))
    assert len(set(got.ravel().tolist()) - {-128, 127}) > 0


def test_fc_validation() -> None:
    x = np.zeros((2, 5), dtype=np.int8)
    w = np.zeros((3, 5), dtype=np.int8)
    kw = dict(input_offset=0, output_offset=0, multipliers=[1 << 30], shifts=[0])
    with pytest.raises(ValueError, match="features"):
        fully_connected_s8(x, np.zeros((3, 4), dtype=np.int8), None, **kw)
    with pytest.raises(ValueError, match="rank"):
        fully_connected_s8(x.reshape(1, 2, 5), w, None, **kw)
    with pytest.raises(ValueError, match="length"):
        fully_connected_s8(x, w, None, **dict(kw, multipliers=[1, 2]))
    with pytest.raises(ValueError, match="int32"):
        fully_connected_s8(x, w, np.zeros(3, dtype=np.float32), **kw)
