"""conv2d_s8 and depthwise_conv2d_s8 against loop transcriptions of arm_convolve_s8 / arm_depthwise_conv_s8.

The references are plain Python integer loops over every output element and kernel tap (int32 accumulator
wrapping at each step, taps outside the input skipped), followed by CMSIS-NN's arm_nn_requantize written out
in Python ints. Nothing from mcuforge is used to compute the expected values.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from mcuforge.kernels import conv2d_s8, depthwise_conv2d_s8

from cmsis_reference import INT32_MAX, c_output, c_wrap32

# ---------------------------------------------------------------------------------------------------------
# Reference loops over CMSIS-NN C semantics (integer primitives: cmsis_reference.py)
# ---------------------------------------------------------------------------------------------------------


def ref_conv(x, w, bias, in_off, out_off, mults, shifts, stride, pad, dil, act_min, act_max, out_hw):
    n, h, wd, c = x.shape
    oc, kh, kw, _ = w.shape
    oh, ow = out_hw
    out = np.zeros((n, oh, ow, oc), dtype=np.int8)
    xl, wl = x.tolist(), w.tolist()
    for b in range(n):
        for oy in range(oh):
            for ox in range(ow):
                base_y = stride[0] * oy - pad[0]
                base_x = stride[1] * ox - pad[1]
                for o in range(oc):
                    acc = int(bias[o]) if bias is not None else 0
                    for i in range(kh):
                        for j in range(kw):
                            ky, kx = base_y + dil[0] * i, base_x + dil[1] * j
                            if ky < 0 or ky >= h or kx < 0 or kx >= wd:
                                continue
                            for ch in range(c):
                                acc = c_wrap32(acc + (xl[b][ky][kx][ch] + in_off) * wl[o][i][j][ch])
                    m = int(mults[o if len(mults) > 1 else 0])
                    s = int(shifts[o if len(shifts) > 1 else 0])
                    out[b, oy, ox, o] = c_output(acc, m, s, out_off, act_min, act_max)
    return out


def ref_depthwise(
    x, w, bias, in_off, out_off, mults, shifts, stride, pad, dil, ch_mult, act_min, act_max, out_hw
):
    n, h, wd, c = x.shape
    _, kh, kw, oc = w.shape
    oh, ow = out_hw
    out = np.zeros((n, oh, ow, oc), dtype=np.int8)
    xl, wl = x.tolist(), w.tolist()
    for b in range(n):
        for oy in range(oh):
            base_y = oy * stride[0] - pad[0]
            for ox in range(ow):
                base_x = ox * stride[1] - pad[1]
                for ic in range(c):
                    for mm in range(ch_mult):
                        o = mm + ic * ch_mult
                        acc = int(bias[o]) if bias is not None else 0
                        for i in range(kh):
                            for j in range(kw):
                                ky, kx = base_y + dil[0] * i, base_x + dil[1] * j
                                if 0 <= ky < h and 0 <= kx < wd:
                                    acc = c_wrap32(acc + (xl[b][ky][kx][ic] + in_off) * wl[0][i][j][o])
                        m = int(mults[o if len(mults) > 1 else 0])
                        s = int(shifts[o if len(shifts) > 1 else 0])
                        out[b, oy, ox, o] = c_output(acc, m, s, out_off, act_min, act_max)
    return out


def out_size(size: int, k: int, s: int, p: int, d: int) -> int:
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


# ---------------------------------------------------------------------------------------------------------
# Random cases
# ---------------------------------------------------------------------------------------------------------


def random_requant(rng: np.random.Generator, channels: int, mode: str) -> tuple[np.ndarray, np.ndarray]:
    if mode == "typical":  # outputs spread over the int8 range for accumulators of a few thousand
        shifts = rng.integers(-16, -7, size=channels, endpoint=True)
        mults = rng.integers(1 << 30, INT32_MAX, size=channels, endpoint=True)
    elif mode == "extreme":  # both ends of the shift range, multipliers at 2^30 and 2^31-1
        shifts = rng.choice([-31, -30, -1, 0, 1, 29, 30], size=channels)
        mults = rng.choice([1 << 30, (1 << 30) + 1, INT32_MAX, INT32_MAX - 1], size=channels)
    else:  # anything in range, including small multipliers
        shifts = rng.integers(-31, 30, size=channels, endpoint=True)
        mults = rng.integers(0, INT32_MAX, size=channels, endpoint=True)
    return mults.astype(np.int32), shifts.astype(np.int32)


def random_case(rng: np.random.Generator, depthwise: bool) -> dict:
    n = int(rng.integers(1, 3))
    h, wd = (int(v) for v in rng.integers(1, 8, size=2))
    c = int(rng.integers(1, 5))
    kh, kw = (int(v) for v in rng.integers(1, 4, size=2))
    stride = tuple(int(v) for v in rng.integers(1, 4, size=2))
    dil = tuple(int(v) for v in rng.choice([1, 1, 2, 3], size=2))
    pad = tuple(int(v) for v in rng.integers(0, 3, size=2))
    ch_mult = int(rng.integers(1, 5)) if depthwise else 1
    oc = c * ch_mult if depthwise else int(rng.integers(1, 6))
    oh, ow = out_size(h, kh, stride[0], pad[0], dil[0]), out_size(wd, kw, stride[1], pad[1], dil[1])
    if rng.random() < 0.3:  # explicit, larger output: extra padding only at the bottom/right
        oh, ow = oh + int(rng.integers(0, 2)), ow + int(rng.integers(0, 2))
    if oh < 1 or ow < 1:
        return random_case(rng, depthwise)
    mode = rng.choice(["typical", "typical", "extreme", "any"])
    mults, shifts = random_requant(rng, oc, str(mode))
    if rng.random() < 0.25 and not depthwise:
        mults, shifts = mults[:1], shifts[:1]  # per-tensor broadcast
    x = rng.integers(-128, 128, size=(n, h, wd, c), dtype=np.int8)
    w_shape = (1, kh, kw, oc) if depthwise else (oc, kh, kw, c)
    w = rng.integers(-128, 128, size=w_shape, dtype=np.int8)
    bias = None if rng.random() < 0.2 else rng.integers(-(1 << 16), 1 << 16, size=oc).astype(np.int32)
    act_min, act_max = -128, 127
    if rng.random() < 0.3:
        act_min, act_max = int(rng.integers(-128, 0)), int(rng.integers(0, 128))
    return dict(
        x=x, w=w, bias=bias, in_off=int(rng.integers(-127, 129)), out_off=int(rng.integers(-128, 128)),
        mults=mults, shifts=shifts, stride=stride, pad=pad, dil=dil, ch_mult=ch_mult,
        act_min=act_min, act_max=act_max, out_hw=(oh, ow),
    )  # fmt: skip


def run_conv(case: dict) -> np.ndarray:
    return conv2d_s8(
        case["x"], case["w"], case["bias"], input_offset=case["in_off"], output_offset=case["out_off"],
        multipliers=case["mults"], shifts=case["shifts"], stride=case["stride"], padding=case["pad"],
        dilation=case["dil"], act_min=case["act_min"], act_max=case["act_max"], output_hw=case["out_hw"],
    )  # fmt: skip


def run_ref_conv(case: dict) -> np.ndarray:
    return ref_conv(
        case["x"], case["w"], case["bias"], case["in_off"], case["out_off"], case["mults"], case["shifts"],
        case["stride"], case["pad"], case["dil"], case["act_min"], case["act_max"], case["out_hw"],
    )  # fmt: skip


def run_depthwise(case: dict) -> np.ndarray:
    return depthwise_conv2d_s8(
        case["x"], case["w"], case["bias"], input_offset=case["in_off"], output_offset=case["out_off"],
        multipliers=case["mults"], shifts=case["shifts"], stride=case["stride"], padding=case["pad"],
        dilation=case["dil"], depth_multiplier=case["ch_mult"], act_min=case["act_min"],
        act_max=case["act_max"], output_hw=case["out_hw"],
    )  # fmt: skip


def run_ref_depthwise(case: dict) -> np.ndarray:
    return ref_depthwise(
        case["x"], case["w"], case["bias"], case["in_off"], case["out_off"], case["mults"], case["shifts"],
        case["stride"], case["pad"], case["dil"], case["ch_mult"], case["act_min"], case["act_max"],
        case["out_hw"],
    )  # fmt: skip


@pytest.mark.parametrize("seed", range(60))
def test_conv_random_against_loops(seed: int) -> None:
    case = random_case(np.random.default_rng(1000 + seed), depthwise=False)
    got = run_conv(case)
    assert got.dtype == np.int8 and got.shape == case["x"].shape[:1] + case["out_hw"] + (case["w"].shape[0],)
    np.testing.assert_array_equal(got, run_ref_conv(case))


@pytest.mark.parametrize("seed", range(60))
def test_depthwise_random_against_loops(seed: int) -> None:
    case = random_case(np.random.default_rng(2000 + seed), depthwise=True)
    got = run_depthwise(case)
    assert got.dtype == np.int8 and got.shape == case["x"].shape[:1] + case["out_hw"] + (case["w"].shape[3],)
    np.testing.assert_array_equal(got, run_ref_depthwise(case))


# ---------------------------------------------------------------------------------------------------------
# Targeted cases
# ---------------------------------------------------------------------------------------------------------


def test_conv_hand_computed_1x1() -> None:
    # 1x1 conv, 2 channels: acc = (x0 + 1) * 2 + (x1 + 1) * -3 + bias; multiplier 0.5, shift 0
    x = np.array([[[[3, 1]], [[-5, 4]]]], dtype=np.int8)  # (1, 2, 1, 2)
    w = np.array([[[[2, -3]]]], dtype=np.int8)
    bias = np.array([7], dtype=np.int32)
    got = conv2d_s8(x, w, bias, input_offset=1, output_offset=-2, multipliers=[1 << 30], shifts=[0])
    # pixel 0: 8 - 6 + 7 = 9 -> 4.5 -> 5 -> +(-2) = 3 ; pixel 1: -8 - 15 + 7 = -16 -> -8 -> -10
    assert got.ravel().tolist() == [3, -10]


def test_conv_ties_and_negative_products() -> None:
    # acc = x * w = +-(2k+1) * 32 with multiplier 2^30 (x0.5, exact on these even values) and shift -5:
    # every output is an exact tie (2k+1)/2, rounded away from zero for both signs
    k = np.arange(0, 60)
    x = (2 * k + 1).astype(np.int8).reshape(1, 1, -1, 1)
    kw = dict(input_offset=0, output_offset=0, multipliers=[1 << 30], shifts=[-5])
    neg = conv2d_s8(x, np.full((1, 1, 1, 1), -32, dtype=np.int8), None, **kw)
    pos = conv2d_s8(x, np.full((1, 1, 1, 1), 32, dtype=np.int8), None, **kw)
    assert neg.ravel().tolist() == [-(int(v) + 1) for v in k]
    assert pos.ravel().tolist() == [int(v) + 1 for v in k]
    # the same values through a zero input offset of -1 (x + offset - 1 products, still ties)
    off = conv2d_s8((x + 1).astype(np.int8), np.full((1, 1, 1, 1), -32, dtype=np.int8), None,
                    input_offset=-1, output_offset=0, multipliers=[1 << 30], shifts=[-5])  # fmt: skip
    np.testing.assert_array_equal(off, neg)


def test_conv_saturation_and_activation_clamp() -> None:
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, size=(2, 5, 5, 3), dtype=np.int8)
    w = rng.integers(-128, 128, size=(4, 3, 3, 3), dtype=np.int8)
    bias = np.array([1 << 24, -(1 << 24), 0, 0], dtype=np.int32)
    kw = dict(input_offset=128, output_offset=0, multipliers=[INT32_MAX] * 4, shifts=[0] * 4, padding=(1, 1))
    got = conv2d_s8(x, w, bias, **kw)
    assert np.all(got[..., 0] == 127) and np.all(got[..., 1] == -128)
    relu6 = conv2d_s8(x, w, bias, act_min=0, act_max=6, **kw)
    assert relu6.min() >= 0 and relu6.max() <= 6 and np.all(relu6[..., 0] == 6)
    clamped = conv2d_s8(x, w, bias, act_min=-20, act_max=30, **kw)
    assert clamped.min() >= -20 and clamped.max() <= 30
    np.testing.assert_array_equal(clamped, np.clip(got, -20, 30))


def test_conv_int32_accumulator_wraps() -> None:
    # bias near INT32_MAX plus a positive dot product wraps like the C int32 accumulator
    x = np.full((1, 1, 1, 4), 127, dtype=np.int8)
    w = np.full((1, 1, 1, 4), 127, dtype=np.int8)
    bias = np.array([INT32_MAX - 10], dtype=np.int32)
    case = dict(x=x, w=w, bias=bias, in_off=128, out_off=5, mults=np.array([1 << 30]), shifts=np.array([-24]),
                stride=(1, 1), pad=(0, 0), dil=(1, 1), act_min=-128, act_max=127, out_hw=(1, 1))  # fmt: skip
    np.testing.assert_array_equal(run_conv(case), run_ref_conv(case))
    assert run_conv(case)[0, 0, 0, 0] < 0  # wrapped negative


def test_conv_window_entirely_in_padding_gives_bias() -> None:
    x = np.full((1, 2, 2, 1), 100, dtype=np.int8)
    w = np.full((1, 1, 1, 1), 100, dtype=np.int8)
    bias = np.array([40], dtype=np.int32)
    got = conv2d_s8(x, w, bias, input_offset=0, output_offset=0, multipliers=[1 << 30], shifts=[1],
                    padding=(1, 1))  # fmt: skip
    # 1x1 kernel, pad 1: output 4x4, border pixels read only padding -> acc = bias = 40 -> 40
    assert got.shape == (1, 4, 4, 1)
    assert got[0, 0, :, 0].tolist() == [40] * 4 and got[0, 1, 1, 0] == 127


def test_conv_bottom_right_padding_via_output_hw() -> None:
    # TF "SAME" for H=W=4, K=3, stride 2 pads 0 at top/left and 1 at bottom/right: CMSIS pad (0,0) and
    # output 2x2 given explicitly; the last window reads one row/column past the input (skipped)
    rng = np.random.default_rng(8)
    case = dict(x=rng.integers(-128, 128, size=(3, 4, 4, 2), dtype=np.int8),
                w=rng.integers(-128, 128, size=(3, 3, 3, 2), dtype=np.int8),
                bias=rng.integers(-1000, 1000, size=3).astype(np.int32), in_off=-7, out_off=3,
                mults=np.array([1 << 30, INT32_MAX, 1500000000]), shifts=np.array([-9, -10, -8]),
                stride=(2, 2), pad=(0, 0), dil=(1, 1), act_min=-128, act_max=127, out_hw=(2, 2))  # fmt: skip
    got = run_conv(case)
    np.testing.assert_array_equal(got, run_ref_conv(case))
    default = conv2d_s8(case["x"], case["w"], case["bias"], input_offset=-7, output_offset=3,
                        multipliers=case["mults"], shifts=case["shifts"], stride=2)  # fmt: skip
    assert default.shape == (3, 1, 1, 3)
    np.testing.assert_array_equal(default, got[:, :1, :1])


def test_depthwise_multiplier_channel_order() -> None:
    # output channel ic*M + m must read input channel ic
    x = np.zeros((1, 1, 1, 3), dtype=np.int8)
    x[0, 0, 0] = [1, 2, 3]
    w = np.arange(1, 7, dtype=np.int8).reshape(1, 1, 1, 6)  # M = 2
    got = depthwise_conv2d_s8(x, w, None, input_offset=0, output_offset=0, multipliers=[1 << 30] * 6,
                              shifts=[1] * 6, depth_multiplier=2)  # fmt: skip
    assert got.ravel().tolist() == [1 * 1, 1 * 2, 2 * 3, 2 * 4, 3 * 5, 3 * 6]


def test_depthwise_per_tensor_params_broadcast() -> None:
    rng = np.random.default_rng(9)
    x = rng.integers(-128, 128, size=(2, 6, 5, 4), dtype=np.int8)
    w = rng.integers(-128, 128, size=(1, 3, 3, 4), dtype=np.int8)
    a = depthwise_conv2d_s8(x, w, None, input_offset=3, output_offset=1, multipliers=[1 << 30], shifts=[-8],
                            padding=1)  # fmt: skip
    b = depthwise_conv2d_s8(x, w, None, input_offset=3, output_offset=1, multipliers=[1 << 30] * 4,
                            shifts=[-8] * 4, padding=(1, 1))  # fmt: skip
    np.testing.assert_array_equal(a, b)


def test_batch_is_independent_and_larger_layer_is_fast() -> None:
    rng = np.random.default_rng(10)
    x = rng.integers(-128, 128, size=(32, 32, 32, 16), dtype=np.int8)
    w = rng.integers(-128, 128, size=(32, 3, 3, 16), dtype=np.int8)
    bias = rng.integers(-5000, 5000, size=32).astype(np.int32)
    mults = rng.integers(1 << 30, INT32_MAX, size=32).astype(np.int32)
    shifts = np.full(32, -11, dtype=np.int32)
    kw = dict(input_offset=5, output_offset=-3, multipliers=mults, shifts=shifts, padding=(1, 1))
    t0 = time.perf_counter()
    full = conv2d_s8(x, w, bias, **kw)
    elapsed = time.perf_counter() - t0
    assert elapsed < 5.0, elapsed  # 32 x 32x32x16 -> 32 channels, 3x3: ~150 M MACs
    np.testing.assert_array_equal(full[5:6], conv2d_s8(x[5:6], w, bias, **kw))
    # cross-check the accumulator with an int64 einsum on the padded input (a different route)
    xp = np.pad(x[:2].astype(np.int64) + 5, ((0, 0), (1, 1), (1, 1), (0, 0)))
    acc = sum(
        np.einsum("nhwc,oc->nhwo", xp[:, i : i + 32, j : j + 32, :], w[:, i, j, :].astype(np.int64))
        for i in range(3)
        for j in range(3)
    ) + bias
    sample = full[:2, :4, :4]
    corner = acc[:, :4, :4]
    expected = np.array(
        [c_output(int(a), int(mults[idx[-1]]), -11, -3, -128, 127) for idx, a in np.ndenumerate(corner)]
    ).reshape(sample.shape)
    np.testing.assert_array_equal(sample, expected)
    dw = rng.integers(-128, 128, size=(1, 3, 3, 16), dtype=np.int8)
    t0 = time.perf_counter()
    depthwise_conv2d_s8(x, dw, None, input_offset=5, output_offset=0, multipliers=mults[:16],
                        shifts=shifts[:16], padding=1)  # fmt: skip
    assert time.perf_counter() - t0 < 2.0


# ---------------------------------------------------------------------------------------------------------
# Argument validation
# ---------------------------------------------------------------------------------------------------------


def _conv_args() -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    x = np.zeros((1, 4, 4, 2), dtype=np.int8)
    w = np.zeros((3, 3, 3, 2), dtype=np.int8)
    bias = np.zeros(3, dtype=np.int32)
    return x, w, bias, dict(input_offset=0, output_offset=0, multipliers=[1 << 30] * 3, shifts=[0] * 3)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda a: a.update(x=a["x"].astype(np.float32)), "int8"),
        (lambda a: a.update(x=a["x"].astype(np.int16)), "int8"),
        (lambda a: a.update(x=a["x"][0]), "rank"),
        (lambda a: a.update(w=np.zeros((3, 3, 3, 4), dtype=np.int8)), "channels"),
        (lambda a: a.update(bias=np.zeros(3, dtype=np.int64)), "int32"),
        (lambda a: a.update(bias=np.zeros(2, dtype=np.int32)), "shape"),
        (lambda a: a["kw"].update(multipliers=[1 << 30] * 2), "length"),
        (lambda a: a["kw"].update(shifts=[31] * 3), "shifts"),
        (lambda a: a["kw"].update(multipliers=[1 << 31] * 3), "int32"),
        (lambda a: a["kw"].update(act_min=10, act_max=5), "act_min"),
        (lambda a: a["kw"].update(input_offset=-128), "input_offset"),
        (lambda a: a["kw"].update(output_offset=128), "output_offset"),
        (lambda a: a["kw"].update(stride=0), "stride"),
        (lambda a: a["kw"].update(dilation=(3, 3)), "empty output"),
    ],
)
def test_conv_validation(change, message: str) -> None:
    x, w, bias, kw = _conv_args()
    args = dict(x=x, w=w, bias=bias, kw=kw)
    change(args)
    with pytest.raises(ValueError, match=message):
        conv2d_s8(args["x"], args["w"], args["bias"], **args["kw"])


def test_depthwise_validation() -> None:
    x = np.zeros((1, 4, 4, 2), dtype=np.int8)
    kw = dict(input_offset=0, output_offset=0, multipliers=[1 << 30], shifts=[0])
    with pytest.raises(ValueError, match="shape"):
        depthwise_conv2d_s8(x, np.zeros((1, 3, 3, 3), dtype=np.int8), None, **kw)
    with pytest.raises(ValueError, match="shape"):
        depthwise_conv2d_s8(x, np.zeros((2, 3, 3, 2), dtype=np.int8), None, **kw)
    with pytest.raises(ValueError, match="depth_multiplier"):
        depthwise_conv2d_s8(x, np.zeros((1, 3, 3, 2), dtype=np.int8), None, depth_multiplier=0, **kw)
    with pytest.raises(ValueError, match="int8"):
        depthwise_conv2d_s8(x.astype(np.uint8), np.zeros((1, 3, 3, 2), dtype=np.int8), None, **kw)
