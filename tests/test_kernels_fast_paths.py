"""The kernels' large-input fast paths against the independent CMSIS-NN integer reference.

The fast paths (add/mul byte-pair tables, the fused ``Requantizer``, zero-point padding with the offset folded
into the bias, float32/float64 BLAS, the 1x1 shortcut, the prepared-weight cache, the depthwise tap sums) only
switch on for large inputs or particular layers, so the loop-reference tests in test_kernels_*.py do not reach
them. Here every case is big enough to take its path (asserted where the path is observable) and is compared
bit for bit with a numpy int64 statement of the C arithmetic:

- ``ref_requantize`` / ``ref_output``: arm_nn_requantize (wrapping int32 left shift, SMLAL with +2^30 and >> 31,
  arm_nn_divide_by_power_of_two with its remainder/threshold test), + output offset in int32, clamp;
- convolutions: explicit int64 sums over kernel taps that *skip* out-of-bounds taps, as the C loops do (the
  int32 accumulator's step-by-step wrap equals one wrap of the exact sum: addition is modular);
- add / mul / fully connected: the C element formulas in int64.

These numpy statements share nothing with mcuforge; ``test_numpy_reference_*`` pins them to the pure-Python
loops of cmsis_reference.py and the loop references of the other kernel tests.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_kernels_conv import ref_conv as loop_conv
from test_kernels_conv import ref_depthwise as loop_depthwise
from test_kernels_pooling_add_fc import ref_add as loop_add
from test_kernels_pooling_add_fc import ref_fc as loop_fc

from mcuforge.kernels import add as add_mod
from mcuforge.kernels import (
    add_s8,
    conv2d_s8,
    depthwise_conv2d_s8,
    fully_connected_s8,
    mul_s8,
    requantize_output,
)
from mcuforge.kernels import conv as conv_mod
from mcuforge.kernels import mul as mul_mod
from mcuforge.kernels import requant_engine as qu
from mcuforge.kernels.quant_utils import Requantizer

from cmsis_reference import INT32_MAX, INT32_MIN, c_output, c_requantize, c_wrap32, clamp

# ---------------------------------------------------------------------------------------------------------
# numpy int64 statement of the C arithmetic
# ---------------------------------------------------------------------------------------------------------


def ref_wrap32(v) -> np.ndarray:
    """(int32_t) cast: low 32 bits, two's complement (values well inside int64)."""
    v = np.asarray(v, dtype=np.int64)
    return ((v + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def ref_requantize(acc, mult, shift) -> np.ndarray:
    """arm_nn_requantize, default build (double rounding); mult/shift broadcast along the last axis."""
    acc = ref_wrap32(acc)
    mult = np.asarray(mult, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    left = np.where(shift > 0, shift, 0)
    right = np.where(shift < 0, -shift, 0)
    val = ref_wrap32(acc * (np.int64(1) << left))  # int32 multiply by (1 << LEFT_SHIFT(shift)), wrapping
    high = ref_wrap32((val * mult + (1 << 30)) >> 31)  # arm_nn_doubling_high_mult_no_sat
    mask = (np.int64(1) << right) - 1  # arm_nn_divide_by_power_of_two
    remainder = high & mask
    result = high >> right
    threshold = (mask >> 1) + (result < 0)
    return result + (remainder > threshold)


def ref_output(acc, mult, shift, out_off: int, lo: int, hi: int) -> np.ndarray:
    """The C epilogue: requantize, + output offset (int32), clamp -> int8."""
    return np.clip(ref_wrap32(ref_requantize(acc, mult, shift) + out_off), lo, hi).astype(np.int8)


def _taps(size: int, out: int, k: int, s: int, p: int, d: int):
    """For each kernel tap: input index of every output position and whether it is inside the input."""
    pos = np.arange(out)
    for t in range(k):
        idx = pos * s - p + t * d
        yield t, np.clip(idx, 0, size - 1), (idx >= 0) & (idx < size)


def ref_conv_acc(x, w, bias, in_off, stride, pad, dil, out_hw) -> np.ndarray:
    """arm_convolve_s8's accumulator, exact (int64): bias + sum over in-bounds taps of (x + in_off) * w."""
    n, h, wd, c = x.shape
    oc, kh, kw, _ = w.shape
    oh, ow = out_hw
    xs = x.astype(np.int64) + in_off
    w64 = w.astype(np.int64)
    acc = np.zeros((n, oh, ow, oc), dtype=np.int64)
    if bias is not None:
        acc += bias.astype(np.int64)
    for i, rows, row_ok in _taps(h, oh, kh, stride[0], pad[0], dil[0]):
        for j, cols, col_ok in _taps(wd, ow, kw, stride[1], pad[1], dil[1]):
            inside = (row_ok[:, None] & col_ok[None, :])[None, :, :, None]
            patch = np.where(inside, xs[:, rows][:, :, cols], 0)  # skipped taps add nothing
            acc += patch @ w64[:, i, j, :].T
    return acc


def ref_conv(x, w, bias, in_off, out_off, mult, shift, stride, pad, dil, lo, hi, out_hw) -> np.ndarray:
    """arm_convolve_s8: the int32 accumulator (one wrap of the exact sum), then the epilogue."""
    oc = w.shape[0]
    acc = ref_conv_acc(x, w, bias, in_off, stride, pad, dil, out_hw)
    return ref_output(acc, np.broadcast_to(mult, (oc,)), np.broadcast_to(shift, (oc,)), out_off, lo, hi)


def ref_depthwise_acc(x, w, bias, in_off, stride, pad, dil, ch_mult, out_hw) -> np.ndarray:
    """arm_depthwise_conv_s8's exact accumulator: output channel o reads input channel o // ch_mult."""
    n, h, wd, c = x.shape
    _, kh, kw, oc = w.shape
    oh, ow = out_hw
    xs = x.astype(np.int64)[..., np.arange(oc) // ch_mult] + in_off
    acc = np.zeros((n, oh, ow, oc), dtype=np.int64)
    if bias is not None:
        acc += bias.astype(np.int64)
    for i, rows, row_ok in _taps(h, oh, kh, stride[0], pad[0], dil[0]):
        for j, cols, col_ok in _taps(wd, ow, kw, stride[1], pad[1], dil[1]):
            inside = (row_ok[:, None] & col_ok[None, :])[None, :, :, None]
            acc += np.where(inside, xs[:, rows][:, :, cols], 0) * w[0, i, j].astype(np.int64)
    return acc


def ref_depthwise(x, w, bias, in_off, out_off, mult, shift, stride, pad, dil, ch_mult, lo, hi, out_hw):
    oc = w.shape[3]
    acc = ref_depthwise_acc(x, w, bias, in_off, stride, pad, dil, ch_mult, out_hw)
    return ref_output(acc, np.broadcast_to(mult, (oc,)), np.broadcast_to(shift, (oc,)), out_off, lo, hi)


def ref_fc(x, w, bias, in_off, out_off, mult, shift, lo, hi) -> np.ndarray:
    oc = w.shape[0]
    acc = (x.astype(np.int64) + in_off) @ w.astype(np.int64).T
    if bias is not None:
        acc += bias.astype(np.int64)
    return ref_output(acc, np.broadcast_to(mult, (oc,)), np.broadcast_to(shift, (oc,)), out_off, lo, hi)


def ref_add(a, b, p: dict) -> np.ndarray:
    """arm_elementwise_add_s8."""
    a, b = (v.astype(np.int64) for v in np.broadcast_arrays(a, b))
    in1 = ref_requantize(ref_wrap32((a + p["a_offset"]) << p["left_shift"]), p["a_multiplier"], p["a_shift"])
    in2 = ref_requantize(ref_wrap32((b + p["b_offset"]) << p["left_shift"]), p["b_multiplier"], p["b_shift"])
    return ref_output(ref_wrap32(in1 + in2), p["output_multiplier"], p["output_shift"], p["output_offset"],
                      p["act_min"], p["act_max"])


def ref_mul(a, b, p: dict) -> np.ndarray:
    """arm_elementwise_mul_s8."""
    a, b = (v.astype(np.int64) for v in np.broadcast_arrays(a, b))
    return ref_output((a + p["a_offset"]) * (b + p["b_offset"]), p["output_multiplier"], p["output_shift"],
                      p["output_offset"], p["act_min"], p["act_max"])


def assert_same(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.dtype == np.int8 and got.shape == expected.shape
    if not np.array_equal(got, expected):
        bad = np.argwhere(got != expected)
        first = tuple(bad[0])
        raise AssertionError(f"{len(bad)} of {got.size} differ; first at {first}: got {got[first]}, "
                             f"expected {expected[first]}")


# Extreme (multiplier, shift) pairs; INT32_MIN is a legal int32 multiplier (the doubling-high-mult overflow).
EXTREME_PAIRS = [
    (INT32_MAX, 30), (INT32_MAX, -31), (INT32_MAX, 0), (INT32_MAX - 1, -1), (1 << 30, -31), (1 << 30, 30),
    ((1 << 30) + 1, -16), (INT32_MIN, 30), (INT32_MIN, -31), (INT32_MIN, 0), (INT32_MIN + 1, -7), (1, 30),
    (0, 0), (-5, 3), (128, 24),
]
EDGE_ACCS = np.array([INT32_MIN, INT32_MIN + 1, -(1 << 30) - 1, -(1 << 30), -(1 << 30) + 1, -65536, -257, -256,
                      -255, -129, -128, -2, -1, 0, 1, 2, 127, 128, 255, 256, 65535, (1 << 30) - 1, 1 << 30,
                      (1 << 30) + 1, INT32_MAX - 1, INT32_MAX], dtype=np.int64)


def random_accs(rng: np.random.Generator, shape, kind: str = "int32") -> np.ndarray:
    """Accumulators: full int32 range (or int64 beyond it, which wraps), with the edge values up front."""
    if kind == "wide":
        acc = rng.integers(-(1 << 34), 1 << 34, size=shape, dtype=np.int64)
    else:
        acc = rng.integers(INT32_MIN, INT32_MAX, size=shape, dtype=np.int64, endpoint=True)
        small = rng.random(shape) < 0.3  # also values around zero, where the offset and clamp matter
        acc[small] = rng.integers(-5000, 5000, size=int(small.sum()))
    flat = acc.reshape(-1)
    k = min(flat.size, EDGE_ACCS.size)
    flat[:k] = EDGE_ACCS[:k]
    return acc


# ---------------------------------------------------------------------------------------------------------
# The numpy reference is the pure-Python one
# ---------------------------------------------------------------------------------------------------------


def test_numpy_reference_matches_scalar_reference() -> None:
    rng = np.random.default_rng(1)
    accs = np.concatenate([EDGE_ACCS, rng.integers(INT32_MIN, INT32_MAX, size=120, endpoint=True),
                           rng.integers(-3000, 3000, size=60)])
    pairs = EXTREME_PAIRS + [(int(m), int(s)) for m, s in zip(rng.integers(INT32_MIN, INT32_MAX, size=20),
                                                                rng.integers(-31, 31, size=20), strict=True)]
    for m, s in pairs:
        for off, lo, hi in ((0, -128, 127), (127, -128, 127), (-128, -5, 90)):
            got = ref_output(accs, m, s, off, lo, hi)
            expected = [c_output(int(a), m, s, off, lo, hi) for a in accs]
            assert got.tolist() == expected, (m, s, off)
        assert ref_requantize(accs, m, s).tolist() == [c_requantize(int(a), m, s) for a in accs]
    wide = rng.integers(-(1 << 40), 1 << 40, size=50)
    assert ref_wrap32(wide).tolist() == [c_wrap32(int(v)) for v in wide]


def test_numpy_reference_matches_loop_references() -> None:
    rng = np.random.default_rng(2)
    for trial in range(6):
        n, h, wd, c, oc = 2, 5 + trial % 3, 6 + trial % 2, 3, 4
        kh, kw = 2 + trial % 2, 3
        st, pd, dl = (1 + trial % 2, 2), (trial % 3, 1), (1, 1 + trial % 2)
        oh = (h + 2 * pd[0] - dl[0] * (kh - 1) - 1) // st[0] + 1
        ow = (wd + 2 * pd[1] - dl[1] * (kw - 1) - 1) // st[1] + 1
        x = rng.integers(-128, 128, size=(n, h, wd, c), dtype=np.int8)
        w = rng.integers(-128, 128, size=(oc, kh, kw, c), dtype=np.int8)
        bias = rng.integers(INT32_MIN, INT32_MAX, size=oc, endpoint=True).astype(np.int32)
        mult = np.array([INT32_MAX, INT32_MIN, 1 << 30, 128])
        shift = np.array([-31, 0, -3, 24])
        args = (int(rng.integers(-127, 129)), int(rng.integers(-128, 128)), mult, shift, st, pd, dl)
        np.testing.assert_array_equal(ref_conv(x, w, bias, *args, -100, 120, (oh, ow)),
                                      loop_conv(x, w, bias, *args, -100, 120, (oh, ow)))
        wdw = rng.integers(-128, 128, size=(1, kh, kw, 2 * c), dtype=np.int8)
        bdw = rng.integers(-1000, 1000, size=2 * c).astype(np.int32)
        mdw, sdw = np.resize(mult, 2 * c), np.resize(shift, 2 * c)
        args = (int(rng.integers(-127, 129)), int(rng.integers(-128, 128)), mdw, sdw, st, pd, dl, 2)
        np.testing.assert_array_equal(ref_depthwise(x, wdw, bdw, *args, -128, 127, (oh, ow)),
                                      loop_depthwise(x, wdw, bdw, *args, -128, 127, (oh, ow)))
        xf = x.reshape(n, -1)
        wf = rng.integers(-128, 128, size=(4, xf.shape[1]), dtype=np.int8)
        fc_args = (bias, 128, -3, mult, shift, -128, 127)
        np.testing.assert_array_equal(ref_fc(xf, wf, *fc_args), loop_fc(xf, wf, *fc_args))
    p = dict(a_offset=128, b_offset=-127, left_shift=30, a_multiplier=INT32_MAX, a_shift=-1, b_multiplier=INT32_MIN,
             b_shift=0, output_offset=5, output_multiplier=1 << 30, output_shift=30, act_min=-128, act_max=127)
    a, b = (rng.integers(-128, 128, size=300, dtype=np.int8) for _ in range(2))
    np.testing.assert_array_equal(ref_add(a, b, p), loop_add(a, b, p))
    for m, s in EXTREME_PAIRS[:6]:
        p = dict(a_offset=-127, b_offset=128, output_offset=-128, output_multiplier=m, output_shift=s, act_min=-128,
                 act_max=127)
        expected = [clamp(c_wrap32(c_requantize((int(u) - 127) * (int(v) + 128), m, s) - 128), -128, 127)
                    for u, v in zip(a, b, strict=True)]
        assert ref_mul(a, b, p).tolist() == expected


# ---------------------------------------------------------------------------------------------------------
# requantize_output / Requantizer
# ---------------------------------------------------------------------------------------------------------

FUSED = qu.FUSED_MIN_ELEMENTS


@pytest.fixture
def unfused_calls(monkeypatch):
    """Counts calls of requantize_output's step-by-step route (to tell which route a size takes)."""
    calls = []
    original = qu._requantize_output_unfused

    def spy(*args, **kwargs):
        calls.append(args[0].size)
        return original(*args, **kwargs)

    monkeypatch.setattr(qu, "_requantize_output_unfused", spy)
    return calls


@pytest.mark.parametrize("size", [FUSED - 1, FUSED])
@pytest.mark.parametrize(("mult", "shift"), EXTREME_PAIRS)
def test_requantize_output_per_tensor_extremes(size, mult, shift, unfused_calls) -> None:
    rng = np.random.default_rng(size + shift)
    acc = random_accs(rng, (size,))
    for off, lo, hi in ((127, -128, 127), (-128, -128, 127), (3, 3, 127), (-40, -128, -41)):
        assert_same(requantize_output(acc, mult, shift, off, lo, hi), ref_output(acc, mult, shift, off, lo, hi))
    assert bool(unfused_calls) == (size < FUSED)


@pytest.mark.parametrize("rows", [FUSED // 8 - 1, FUSED // 8, 3 * FUSED // 8 + 5])
@pytest.mark.parametrize("params", ["extreme", "typical", "random", "with_min"])
def test_requantize_output_per_channel(rows, params, unfused_calls) -> None:
    channels = 8
    rng = np.random.default_rng(rows)
    if params == "extreme":
        mult = np.array([INT32_MAX, INT32_MAX - 1, 1 << 30, (1 << 30) + 1, 1, 0, -1, INT32_MIN + 1])
        shift = np.array([30, -31, 0, -1, 1, 29, -30, 30])
    elif params == "typical":
        mult = rng.integers(1 << 30, INT32_MAX, size=channels, endpoint=True)
        shift = rng.integers(-12, -4, size=channels)
    elif params == "random":
        mult = rng.integers(INT32_MIN, INT32_MAX, size=channels, endpoint=True)
        shift = rng.integers(-31, 31, size=channels)
    else:
        mult = np.array([INT32_MIN, INT32_MAX, INT32_MIN, 1 << 30, 5, INT32_MIN, 1 << 29, INT32_MAX])
        shift = np.array([30, -31, -31, 0, 30, 0, -1, -8])
    for kind in ("int32", "wide"):
        acc = random_accs(rng, (rows, channels), kind)
        for off, lo, hi in ((0, -128, 127), (127, -128, 127), (-128, -128, 0), (-7, -7, 127)):
            for m, s in ((mult, shift), (mult, shift[:1]), (mult[:1], shift)):
                assert_same(requantize_output(acc, m, s, off, lo, hi), ref_output(acc, m, s, off, lo, hi))
    assert bool(unfused_calls) == (rows * channels < FUSED)


def test_requantize_output_wide_int32_accumulator_dtype_and_float_input() -> None:
    rng = np.random.default_rng(5)
    acc = random_accs(rng, (4096, 5)).astype(np.int32)
    mult, shift = np.array([INT32_MAX, 1 << 30, INT32_MIN, 7, (1 << 30) + 3]), np.array([0, -31, 30, 30, -5])
    assert_same(requantize_output(acc, mult, shift, 9, -128, 127), ref_output(acc, mult, shift, 9, -128, 127))
    # float accumulators holding exact integers (as a BLAS result) below 2^53
    accf = rng.integers(-(1 << 40), 1 << 40, size=(4096, 5)).astype(np.float64)
    assert_same(requantize_output(accf, mult, shift, -9, -128, 127),
                ref_output(accf.astype(np.int64), mult, shift, -9, -128, 127))


def tie_accumulators(rng: np.random.Generator, e: int, count: int) -> np.ndarray:
    """acc = 2*y makes doubling_high_mult(acc, 2^30) = y; y at every kind of tie of the 2^e division (and its
    neighbours), mostly negative, within |2y| <= 2^31."""
    limit = (1 << 30) >> e  # |q| range keeping |y| <= 2^30
    q = rng.integers(-min(limit, 300), min(limit, 300) + 1, size=count // 3) if limit else np.zeros(count // 3)
    q = np.concatenate([q, -rng.integers(0, max(limit, 1), size=count // 3, endpoint=True)])
    y = q.astype(np.int64) * (1 << e) + (1 << (e - 1))
    y = np.concatenate([y, y - 1, y + 1, [-(1 << (e - 1)), (1 << (e - 1)) - 1 - (1 << e)]])
    y = y[(y >= -(1 << 30)) & (y < (1 << 30))]
    y = np.concatenate([y, rng.integers(-(1 << 30), 1 << 30, size=max(0, count - y.size))])
    return 2 * y


@pytest.mark.parametrize("e", [1, 2, 7, 30, 31])
@pytest.mark.parametrize(("off", "delta"), [(0, 0), (0, -1), (0, 1), (-128, 0), (-128, 1), (-5, -1), (100, 0),
                                            (127, 0), (126, -1)])
def test_requantize_fused_relu_negative_ties(e, off, delta) -> None:
    rng = np.random.default_rng(e * 1000 + off)
    acc = tie_accumulators(rng, e, 3 * FUSED)
    mult, shift, lo = 1 << 30, -e, off + delta
    req = Requantizer(np.array([mult]), np.array([shift]), off, lo, 127)
    if delta >= 0 and e < 30:  # a fused ReLU: the tie correction is dropped (the path this test is about;
        assert not req.tie_correction  # for e >= 30 the folded int64 constants would not fit, so it is kept)
    assert_same(requantize_output(acc, mult, shift, off, lo, 127), ref_output(acc, mult, shift, off, lo, 127))
    assert_same(req(acc.reshape(-1, 1)).reshape(-1), ref_output(acc, mult, shift, off, lo, 127))
    # per-channel: one channel a ReLU with ties, the other needing the correction
    acc2 = acc[: acc.size // 2 * 2].reshape(-1, 2)
    m2, s2 = np.array([mult, mult]), np.array([shift, -1])
    assert_same(requantize_output(acc2, m2, s2, off, lo, 127), ref_output(acc2, m2, s2, off, lo, 127))


@pytest.mark.parametrize("seed", range(12))
def test_requantizer_with_bias_and_bound(seed) -> None:
    """The conv epilogue: clamp(requantize(wrap32(acc + bias)) + off), acc given as float32/float64/int64 with a
    bound on |acc| (folded bias and offset, multiply-on-load, tiled short rows, Fortran-order input)."""
    rng = np.random.default_rng(100 + seed)
    channels = int(rng.choice([1, 3, 8, 17, 600]))
    rows = int(rng.integers(1, 3000)) if channels < 600 else 40
    mode = seed % 4
    if mode == 0:
        mult = rng.integers(1 << 30, INT32_MAX, size=channels, endpoint=True)
        shift = rng.integers(-10, 2, size=channels)
    elif mode == 1:
        mult = rng.choice([1 << 30, INT32_MAX, INT32_MIN, 1, 0, -3, 128], size=channels)
        shift = rng.choice([-31, -30, -1, 0, 1, 24, 30], size=channels)
    else:
        mult = rng.integers(INT32_MIN, INT32_MAX, size=channels, endpoint=True)
        shift = rng.integers(-31, 31, size=channels)
    bound = int(rng.choice([1 << 8, 1 << 20, (1 << 24) - 1, 1 << 31]))
    acc = rng.integers(-bound, bound, size=(rows, channels), endpoint=True)
    bias = (rng.integers(INT32_MIN, INT32_MAX, size=channels, endpoint=True) if seed % 3 == 0
            else rng.integers(-bound, bound, size=channels))
    off = int(rng.integers(-128, 128))
    lo = off if seed % 2 else int(rng.integers(-128, 128))
    hi = int(rng.integers(lo, 128))
    expected = ref_output(acc + bias, mult, shift, off, lo, hi)
    acc_bound = np.abs(acc).max(axis=0)
    for with_bound in (True, False):
        req = Requantizer(mult, shift, off, lo, hi, bias=bias, acc_bound=acc_bound if with_bound else None)
        for dtype in (np.float64, np.int64) + ((np.float32,) if bound < (1 << 24) else ()):
            a = acc.astype(dtype)
            assert_same(req(a), expected)
            assert_same(req(np.asfortranarray(a)), expected)
            out = np.full((rows, channels), 77, dtype=np.int8)
            assert req(a, out) is out
            assert_same(out, expected)


def test_requantizer_fast_path_flags_are_reached() -> None:
    """The shortcuts the tests above rely on do switch on for conv-like bounds."""
    req = Requantizer(np.array([1 << 30] * 4), np.array([-5] * 4), -10, -10, 127, bias=np.arange(4) * 1000,
                      acc_bound=np.full(4, 1 << 20))
    assert req.fold_bias and req.fold_offset and req.multiply_on_load and not req.tie_correction
    req = Requantizer(np.array([INT32_MIN]), np.array([0]), 0, -128, 127)
    assert req.plain


# ---------------------------------------------------------------------------------------------------------
# add: 65536-entry table from 8192 outputs
# ---------------------------------------------------------------------------------------------------------

ADD_MIN = add_mod.TABLE_MIN_ELEMENTS

ADD_PARAMS = [
    dict(a_offset=128, b_offset=-127, left_shift=20, a_multiplier=1 << 30, a_shift=0, b_multiplier=1 << 30,
         b_shift=-1, output_offset=-128, output_multiplier=1 << 30, output_shift=-19),
    dict(a_offset=128, b_offset=128, left_shift=30, a_multiplier=INT32_MAX, a_shift=-1, b_multiplier=INT32_MIN,
         b_shift=0, output_offset=127, output_multiplier=INT32_MAX, output_shift=-31),
    dict(a_offset=-127, b_offset=0, left_shift=0, a_multiplier=INT32_MIN, a_shift=30, b_multiplier=INT32_MAX,
         b_shift=30, output_offset=0, output_multiplier=INT32_MIN, output_shift=0),
    dict(a_offset=3, b_offset=-9, left_shift=24, a_multiplier=1518500250, a_shift=-2, b_multiplier=1073741824,
         b_shift=-3, output_offset=-20, output_multiplier=1717986918, output_shift=-23),
]


def all_pairs(repeat: int = 1) -> tuple[np.ndarray, np.ndarray]:
    q = np.arange(-128, 128, dtype=np.int8)
    a, b = (np.tile(g.reshape(-1), repeat) for g in np.meshgrid(q, q, indexing="ij"))
    return a, b


@pytest.mark.parametrize("p", ADD_PARAMS)
@pytest.mark.parametrize(("lo", "hi"), [(-128, 127), (-3, 40)])
def test_add_table_threshold_and_every_pair(p, lo, hi) -> None:
    p = dict(p, act_min=lo, act_max=hi)
    a, b = all_pairs()
    rng = np.random.default_rng(7)
    order = rng.permutation(a.size)
    a, b = a[order], b[order]
    misses = add_mod._add_table.cache_info().misses
    for size in (ADD_MIN - 1, ADD_MIN, a.size):
        got = add_s8(a[:size], b[:size], **p)
        assert_same(got, ref_add(a[:size], b[:size], p))
    table_built = add_mod._add_table.cache_info().misses - misses
    assert table_built <= 1
    assert add_mod._add_table.cache_info().currsize >= 1
    # below the threshold no table is built for a fresh parameter set
    fresh = dict(p, output_offset=p["output_offset"] // 2 + 1)
    misses = add_mod._add_table.cache_info().misses
    assert_same(add_s8(a[:ADD_MIN - 1], b[:ADD_MIN - 1], **fresh), ref_add(a[:ADD_MIN - 1], b[:ADD_MIN - 1], fresh))
    assert add_mod._add_table.cache_info().misses == misses
    assert_same(add_s8(a[:ADD_MIN], b[:ADD_MIN], **fresh), ref_add(a[:ADD_MIN], b[:ADD_MIN], fresh))
    assert add_mod._add_table.cache_info().misses == misses + 1


def test_add_table_broadcast_views_and_parameter_isolation() -> None:
    rng = np.random.default_rng(8)
    p0 = dict(ADD_PARAMS[3], act_min=-128, act_max=127)
    cases = [
        (rng.integers(-128, 128, size=(4, 64, 32), dtype=np.int8), rng.integers(-128, 128, size=(32,), dtype=np.int8)),
        (rng.integers(-128, 128, size=(64, 1, 3), dtype=np.int8), rng.integers(-128, 128, size=(1, 50, 3),
                                                                                  dtype=np.int8)),
        (rng.integers(-128, 128, size=(1,), dtype=np.int8), rng.integers(-128, 128, size=(ADD_MIN,), dtype=np.int8)),
        (rng.integers(-128, 128, size=(40, 300), dtype=np.int8)[:, ::-1],
         rng.integers(-128, 128, size=(300, 40), dtype=np.int8).T),
    ]
    for a, b in cases:
        assert int(np.prod(np.broadcast_shapes(a.shape, b.shape))) >= ADD_MIN
        for p in (p0, dict(p0, a_offset=-p0["a_offset"]), dict(p0, output_shift=-22), dict(p0, act_min=0)):
            got = add_s8(a, b, **p)
            assert_same(got, ref_add(a, b, p))
            got[...] = 0  # the result is the caller's: writing it must not touch the cached table
            assert_same(add_s8(a, b, **p), ref_add(a, b, p))


# ---------------------------------------------------------------------------------------------------------
# mul: 65536-pair table (cached per parameter set) from TABLE_THRESHOLD elements
# ---------------------------------------------------------------------------------------------------------

MUL_MIN = mul_mod.TABLE_THRESHOLD

MUL_PARAMS = [
    dict(a_offset=128, b_offset=128, output_offset=-128, output_multiplier=INT32_MAX, output_shift=-16),
    dict(a_offset=-127, b_offset=128, output_offset=127, output_multiplier=INT32_MAX, output_shift=30),
    dict(a_offset=-127, b_offset=-127, output_offset=0, output_multiplier=INT32_MIN, output_shift=-31),
    dict(a_offset=0, b_offset=5, output_offset=-3, output_multiplier=INT32_MIN, output_shift=0),
    dict(a_offset=17, b_offset=-2, output_offset=10, output_multiplier=1 << 30, output_shift=-9),
    dict(a_offset=1, b_offset=1, output_offset=0, output_multiplier=1 << 30, output_shift=-31),
]


@pytest.fixture
def mul_direct_sizes(monkeypatch):
    sizes = []
    original = mul_mod._mul_direct

    def spy(a_flat, *args):
        sizes.append(a_flat.size)
        return original(a_flat, *args)

    monkeypatch.setattr(mul_mod, "_mul_direct", spy)
    return sizes


@pytest.mark.parametrize("p", MUL_PARAMS)
def test_mul_table_threshold(p, mul_direct_sizes) -> None:
    rng = np.random.default_rng(9)
    a, b = all_pairs(repeat=2)
    order = rng.permutation(a.size)
    a, b = a[order], b[order]
    assert a.size >= MUL_MIN
    for lo, hi in ((-128, 127), (0, 127), (-60, 5)):
        q = dict(p, act_min=lo, act_max=hi)
        for size in (MUL_MIN - 1, MUL_MIN, a.size):
            mul_direct_sizes.clear()
            mul_mod._mul_table.cache_clear()  # so that every table-path call builds (and checks) its table
            assert_same(mul_s8(a[:size], b[:size], **q), ref_mul(a[:size], b[:size], q))
            assert mul_direct_sizes == ([65536] if size >= MUL_MIN else [size])


def test_mul_table_broadcast_and_views(mul_direct_sizes) -> None:
    rng = np.random.default_rng(10)
    p = dict(MUL_PARAMS[4], act_min=-128, act_max=127)
    cases = [
        (rng.integers(-128, 128, size=(1,), dtype=np.int8), rng.integers(-128, 128, size=(MUL_MIN,), dtype=np.int8)),
        (rng.integers(-128, 128, size=(256, 1), dtype=np.int8), rng.integers(-128, 128, size=(1, 512), dtype=np.int8)),
        (rng.integers(-128, 128, size=(1000, 300), dtype=np.int8)[::2, ::-1],
         rng.integers(-128, 128, size=(300, 1), dtype=np.int8).T),
    ]
    mul_mod._mul_table.cache_clear()
    for a, b in cases:
        got = mul_s8(a, b, **p)
        assert_same(got, ref_mul(a, b, p))
        got[...] = 0  # the result is the caller's: writing it must not touch the cached table
    assert mul_direct_sizes == [65536]  # one table for the parameter set, reused by the other calls


# ---------------------------------------------------------------------------------------------------------
# conv2d_s8
# ---------------------------------------------------------------------------------------------------------


def out_hw_of(h, wd, k, st, pd, dl):
    return tuple((size + 2 * p - d * (kk - 1) - 1) // s + 1
                 for size, kk, s, p, d in zip((h, wd), k, st, pd, dl, strict=True))


def run_conv(x, w, bias, in_off, out_off, mult, shift, st=(1, 1), pd=(0, 0), dl=(1, 1), lo=-128, hi=127,
             out_hw=None) -> np.ndarray:
    """conv2d_s8 against the reference; returns the output."""
    hw = out_hw or out_hw_of(x.shape[1], x.shape[2], w.shape[1:3], st, pd, dl)
    got = conv2d_s8(x, w, bias, input_offset=in_off, output_offset=out_off, multipliers=mult, shifts=shift,
                    stride=st, padding=pd, dilation=dl, act_min=lo, act_max=hi, output_hw=out_hw)
    assert_same(got, ref_conv(x, w, bias, in_off, out_off, mult, shift, st, pd, dl, lo, hi, hw))
    return got


def channel_params(rng: np.random.Generator, oc: int, mode: str):
    if mode == "typical":
        return (rng.integers(1 << 30, INT32_MAX, size=oc, endpoint=True), rng.integers(-20, -8, size=oc))
    if mode == "extreme":
        base_m = np.array([INT32_MAX, INT32_MIN, 1 << 30, INT32_MAX - 1, 128, 1, 0, INT32_MIN + 1])
        base_s = np.array([-31, 30, -1, -16, 24, 30, 0, -20])
        return np.resize(base_m, oc), np.resize(base_s, oc)
    return (rng.integers(INT32_MIN, INT32_MAX, size=oc, endpoint=True), rng.integers(-31, 31, size=oc))


# (n, h, w, c, oc, kernel, stride, padding, dilation, output_hw)
CONV_GEOMETRIES = [
    (2, 12, 13, 8, 16, (3, 3), (1, 1), (1, 1), (1, 1), None),
    (3, 15, 17, 5, 7, (3, 3), (2, 2), (1, 1), (1, 1), None),
    (2, 16, 15, 4, 6, (5, 3), (2, 1), (2, 0), (1, 2), None),
    (1, 14, 14, 6, 9, (3, 3), (1, 1), (2, 2), (2, 3), None),
    (2, 9, 11, 3, 5, (4, 2), (3, 2), (3, 1), (1, 1), (5, 7)),  # output larger than the default: more padding
    (2, 10, 10, 7, 4, (1, 1), (2, 2), (0, 0), (1, 1), None),  # 1x1 with stride: not the shortcut
    (2, 10, 10, 7, 4, (1, 1), (1, 1), (1, 1), (1, 1), None),  # 1x1 padded: not the shortcut
    (2, 10, 10, 7, 4, (1, 1), (1, 1), (0, 0), (1, 1), (8, 9)),  # 1x1 cropped output: not the shortcut
    (4, 16, 16, 24, 32, (1, 1), (1, 1), (0, 0), (1, 1), None),  # the pointwise shortcut
    (2, 12, 12, 9, 5, (1, 1), (1, 1), (0, 0), (3, 3), None),  # dilated 1x1 is still pointwise
    (1, 7, 8, 2, 3, (7, 8), (1, 1), (3, 3), (1, 1), None),  # kernel as big as the input, padded
]


@pytest.mark.parametrize("geometry", CONV_GEOMETRIES)
@pytest.mark.parametrize("in_off", [128, -127, -3])
def test_conv_geometries_and_zero_point_padding(geometry, in_off) -> None:
    """Padding with the input zero point at the range ends (zp = -128 / 127) must equal skipped taps."""
    n, h, wd, c, oc, k, st, pd, dl, out_hw = geometry
    rng = np.random.default_rng(hash((geometry[:6], in_off)) % 2**32)
    x = rng.integers(-128, 128, size=(n, h, wd, c), dtype=np.int8)
    x[0, : h // 2] = -in_off if -128 <= -in_off <= 127 else x[0, : h // 2]  # regions equal to the zero point
    w = rng.integers(-128, 128, size=(oc, *k, c), dtype=np.int8)
    bias = rng.integers(-(1 << 20), 1 << 20, size=oc).astype(np.int32)
    for mode in ("typical", "extreme"):
        mult, shift = channel_params(rng, oc, mode)
        run_conv(x, w, bias, in_off, int(rng.integers(-128, 128)), mult, shift, st, pd, dl, out_hw=out_hw)
    run_conv(x, w, None, in_off, -128, np.array([1 << 30]), np.array([-14]), st, pd, dl, lo=-128, hi=-128,
             out_hw=out_hw)
    run_conv(x, w, bias, in_off, 5, np.array([1 << 30]), np.array([-12]), st, pd, dl, lo=5, hi=127,
             out_hw=out_hw)


@pytest.mark.parametrize(("out_off", "delta"), [(-128, 0), (0, 0), (0, 1), (0, -1), (50, 0), (127, 0)])
def test_conv_and_depthwise_relu_negative_ties(out_off, delta) -> None:
    """acc = bias + x * w with m = 2^30 (y = floor((acc + 1) / 2)) and right shifts 1..3: many ties of negative
    y, through the conv requantizer with folded bias/offset and the ReLU shortcut (act_min >= output offset)."""
    q = np.arange(-128, 128, dtype=np.int8)
    x = np.tile(q, 32).reshape(8, 32, 32, 1)
    oc = 6
    w = np.array([1, 1, 2, 3, -1, 1], dtype=np.int8).reshape(oc, 1, 1, 1)
    bias = np.array([0, -100, 37, -1, 5, -3000], dtype=np.int32)
    mult = np.full(oc, 1 << 30)
    shift = np.array([-1, -2, -3, -1, -2, -9])
    lo = max(-128, min(127, out_off + delta))
    for in_off in (0, 128, -127):
        run_conv(x, w, bias, in_off, out_off, mult, shift, lo=lo)
        run_conv(x, w, bias, in_off, out_off, mult[:1], shift[:1], lo=lo)
    req = conv_mod.prepare_weights(w.reshape(oc, 1), bias.astype(np.int64), mult, shift.astype(np.int64), 0,
                                   out_off, lo, 127)[2]
    assert req.fold_bias and req.fold_offset and req.tie_correction == (lo < out_off)
    wdw = w.reshape(1, 1, 1, oc)
    xdw = np.repeat(x[:, :8], 3, axis=3)
    for in_off in (0, 128):
        run_depthwise(xdw, wdw, bias, in_off, out_off, mult, shift, ch_mult=2, lo=lo)
        run_depthwise(xdw, np.repeat(wdw, 3, axis=1), bias, in_off, out_off, mult, shift, st=(1, 2), pd=(0, 1),
                      ch_mult=2, lo=lo)


def test_conv_pointwise_shortcut_is_taken_and_handles_views(monkeypatch) -> None:
    calls = []
    original = conv_mod.im2col
    monkeypatch.setattr(conv_mod, "im2col", lambda *a, **k: calls.append(1) or original(*a, **k))
    rng = np.random.default_rng(11)
    base = rng.integers(-128, 128, size=(3, 20, 18, 16), dtype=np.int8)
    w = rng.integers(-128, 128, size=(12, 1, 1, 16), dtype=np.int8)
    bias = rng.integers(-50000, 50000, size=12).astype(np.int32)
    mult, shift = channel_params(rng, 12, "extreme")
    for x in (base, base[:, ::-1, ::2], base.transpose(0, 2, 1, 3), base[..., ::-1]):
        run_conv(x, w, bias, 128, -7, mult, shift)
        run_conv(x, w, bias, -127, 100, mult, shift, lo=100)
    assert not calls
    run_conv(base, w, bias, 1, 0, mult, shift, st=(2, 1))
    assert calls


def test_conv_batch_chunks() -> None:
    """A batch larger than one working-set chunk (CONV_BUDGET_BYTES)."""
    rng = np.random.default_rng(12)
    n, h, wd, c, oc = 64, 16, 16, 8, 8
    per_item = h * wd * (9 * c + oc) * 4
    assert n * per_item > 2 * conv_mod.CONV_BUDGET_BYTES
    x = rng.integers(-128, 128, size=(n, h, wd, c), dtype=np.int8)
    w = rng.integers(-128, 128, size=(oc, 3, 3, c), dtype=np.int8)
    bias = rng.integers(-(1 << 16), 1 << 16, size=oc).astype(np.int32)
    mult, shift = channel_params(rng, oc, "typical")
    run_conv(x, w, bias, 128, 3, mult, shift, pd=(1, 1))
    w1 = rng.integers(-128, 128, size=(oc, 1, 1, c), dtype=np.int8)
    run_conv(np.repeat(x, 2, axis=0), w1, bias, -127, 3, mult, shift)


def low_byte_params(oc: int):
    """Requantization that shows the accumulator's low byte: (acc << 24) * 128 / 2^31 = int8(acc). A float
    rounding of the accumulator anywhere above 2^24 changes it."""
    return np.full(oc, 128), np.full(oc, 24)


def bound_weights(rng: np.random.Generator, l1: int, taps: int, odd: bool) -> np.ndarray:
    """Negative weights over ``taps`` with sum |w| == l1 (odd magnitudes where possible)."""
    mag = np.full(taps, 127 if odd else 128, dtype=np.int64)
    excess = int(mag.sum()) - l1
    assert excess >= 0
    i = 0
    while excess > 0:  # lower some magnitudes (keep them odd while the excess allows)
        step = min(excess, 126)
        if odd and step % 2 and step > 1:
            step -= 1
        mag[i] -= step
        excess -= step
        i += 1
    w = -mag
    rng.shuffle(w)
    assert int(np.abs(w).sum()) == l1
    return w.astype(np.int8)


def near_min_input(rng: np.random.Generator, shape, per_flip: int = 1000) -> np.ndarray:
    """-128 but for about one value in ``per_flip`` at -127: with negative weights x . w is 128 * sum|w| minus
    a few odd weights, so a window's sum lands within a few hundred of the bound 128 * sum|w| (odd or even)."""
    x = np.full(shape, -128, dtype=np.int8)
    x[rng.random(shape) < 1.0 / per_flip] = -127
    return x


F32_LIMIT = 1 << 17  # 128 * sum|w| < 2^24


def assert_sums_at_bound(dots: np.ndarray, l1: int) -> None:
    """The float partial sums of x . w really are at the bound: within 2^9 of 2^24 in magnitude, and where
    128 * sum|w| > 2^24 also odd values above 2^24 (which no float32 can hold: a float32 sum would be wrong)."""
    dots = np.abs(dots)
    assert dots.max() <= 128 * l1
    assert dots.max() > (1 << 24) - (1 << 9)
    if 128 * l1 > 1 << 24:
        assert np.any((dots > (1 << 24)) & (dots % 2 == 1))


@pytest.mark.parametrize(("l1", "dtype"), [(F32_LIMIT - 1, np.float32), (F32_LIMIT, np.float64),
                                           (F32_LIMIT + 1, np.float64), (F32_LIMIT + 5, np.float64)])
@pytest.mark.parametrize("in_off", [0, 128, -127])
def test_conv_float32_bound(l1, dtype, in_off) -> None:
    """Weights with 128 * sum|w| just under / at / over 2^24: the float32 matmul, or the float64 fallback."""
    rng = np.random.default_rng(l1 + in_off)
    k, c = (2, 2), 280  # 1120 taps
    taps = k[0] * k[1] * c
    oc = 4
    rows = [bound_weights(rng, l1, taps, odd=True), bound_weights(rng, l1 - 77, taps, odd=True),
            bound_weights(rng, min(l1, 60000), taps, odd=False), rng.integers(-128, 128, size=taps).astype(np.int8)]
    w = np.stack(rows).reshape(oc, *k, c)
    assert conv_mod.matmul_dtype(w.reshape(oc, -1)) is dtype
    x = near_min_input(rng, (2, 7, 8, c), per_flip=1500)
    mult, shift = low_byte_params(oc)
    bias = rng.integers(-1000, 1000, size=oc).astype(np.int32)
    for pd in ((0, 0), (1, 1)):
        run_conv(x, w, bias, in_off, 0, mult, shift, pd=pd)
        hw = out_hw_of(7, 8, k, (1, 1), pd, (1, 1))
        assert_sums_at_bound(ref_conv_acc(x, w[:1], None, 0, (1, 1), pd, (1, 1), hw), l1)
    # extreme parameters and biases that make the C accumulator wrap
    mult, shift = channel_params(rng, oc, "extreme")
    run_conv(x, w, np.array([INT32_MAX, INT32_MIN, INT32_MAX - 5, -(1 << 30)], dtype=np.int32), in_off, -1, mult,
             shift, pd=(1, 0))


@pytest.mark.parametrize("odd_sum_above", [False, True])
def test_fc_float32_bound(odd_sum_above) -> None:
    rng = np.random.default_rng(13)
    depth = 1100
    l1 = F32_LIMIT + 3 if odd_sum_above else F32_LIMIT - 1
    w = np.stack([bound_weights(rng, l1, depth, odd=True), bound_weights(rng, l1 - 100, depth, odd=True),
                  rng.integers(-128, 128, size=depth).astype(np.int8)])
    assert conv_mod.matmul_dtype(w) is (np.float64 if odd_sum_above else np.float32)
    x = near_min_input(rng, (64, depth))
    assert_sums_at_bound(x.astype(np.int64) @ w[0].astype(np.int64), l1)
    mult, shift = low_byte_params(3)
    for in_off, bias in ((0, None), (128, np.array([1, -2, 3], np.int32)), (-127, np.array([INT32_MAX] * 3,
                                                                                           np.int32))):
        got = fully_connected_s8(x, w, bias, input_offset=in_off, output_offset=0, multipliers=mult, shifts=shift)
        assert_same(got, ref_fc(x, w, bias, in_off, 0, mult, shift, -128, 127))
        got1 = fully_connected_s8(x[5], w, bias, input_offset=in_off, output_offset=0, multipliers=mult,
                                  shifts=shift)
        assert_same(got1, ref_fc(x[5:6], w, bias, in_off, 0, mult, shift, -128, 127)[0])


@pytest.mark.parametrize("seed", range(4))
def test_fc_random_extremes(seed) -> None:
    rng = np.random.default_rng(200 + seed)
    nb, depth, oc = int(rng.integers(1, 300)), int(rng.integers(1, 900)), int(rng.integers(1, 40))
    x = rng.integers(-128, 128, size=(nb, depth), dtype=np.int8)
    w = rng.integers(-128, 128, size=(oc, depth), dtype=np.int8)
    bias = rng.integers(INT32_MIN, INT32_MAX, size=oc, endpoint=True).astype(np.int32)
    for mode in ("typical", "extreme", "random"):
        mult, shift = channel_params(rng, oc, mode)
        for in_off, out_off, lo in ((128, -128, -128), (-127, 127, -128), (5, -4, -4)):
            got = fully_connected_s8(x, w, bias, input_offset=in_off, output_offset=out_off, multipliers=mult,
                                     shifts=shift, act_min=lo)
            assert_same(got, ref_fc(x, w, bias, in_off, out_off, mult, shift, lo, 127))


# ---------------------------------------------------------------------------------------------------------
# The prepared-weight cache
# ---------------------------------------------------------------------------------------------------------


def test_weight_cache_does_not_mix_layers() -> None:
    rng = np.random.default_rng(14)
    x1 = rng.integers(-128, 128, size=(2, 9, 9, 6), dtype=np.int8)
    x2 = rng.integers(-128, 128, size=(2, 9, 9, 6), dtype=np.int8)
    wa = rng.integers(-128, 128, size=(5, 3, 3, 6), dtype=np.int8)
    wb = wa.copy()
    wb[2, 1, 1, 3] ^= 1  # one bit apart, same shapes
    bias = rng.integers(-(1 << 15), 1 << 15, size=5).astype(np.int32)
    mult, shift = channel_params(rng, 5, "typical")
    mult[:] = 1 << 30
    shift[:] = -6  # fine enough that the one-bit weight difference shows in the output
    outs = {}
    for _ in range(2):  # every call twice: cached entries are reused, never altered
        for name, w in (("a", wa), ("b", wb)):
            for xi, x in enumerate((x1, x2)):
                got = run_conv(x, w, bias, 128, 0, mult, shift, pd=(1, 1))
                if (name, xi) in outs:
                    np.testing.assert_array_equal(got, outs[name, xi])
                outs[name, xi] = got
    assert not np.array_equal(outs["a", 0], outs["b", 0])
    # same weights, each other parameter changed alone
    for change in ({"bias": bias + 1000}, {"in_off": -127}, {"out_off": 9}, {"mult": mult - 12345678},
                   {"shift": shift - 1}, {"lo": 0}, {"mult": mult[:1], "shift": shift[:1]}):
        args = dict(bias=bias, in_off=128, out_off=0, mult=mult, shift=shift, lo=-128)
        args.update(change)
        run_conv(x1, wa, args["bias"], args["in_off"], args["out_off"], args["mult"], args["shift"], pd=(1, 1),
                 lo=args["lo"])
    # weights edited in place between calls (same array object, same shape)
    w = wa.copy()
    run_conv(x1, w, bias, 0, 0, mult, shift)
    w[...] = rng.integers(-128, 128, size=w.shape, dtype=np.int8)
    run_conv(x1, w, bias, 0, 0, mult, shift)
    # non-contiguous weight views and their contiguous copies (same logical bytes)
    for view in (wa[::-1], wa[:, :, ::-1], wa.transpose(0, 2, 1, 3)):
        run_conv(x1, view, bias, 3, 0, mult, shift)
        run_conv(x1, np.ascontiguousarray(view), bias, 3, 0, mult, shift)
    # same bytes, different kernel shapes (3x3x6 vs 1x9x6 vs 1x1x54): same weight rows, different geometry
    x3 = rng.integers(-128, 128, size=(1, 9, 9, 54), dtype=np.int8)
    run_conv(x1, wa.reshape(5, 1, 9, 6), bias, 3, 0, mult, shift)
    run_conv(x3, wa.reshape(5, 1, 1, 54), bias, 3, 0, mult, shift)
    run_conv(x1, wa, bias, 3, 0, mult, shift)


def test_weight_cache_shared_between_conv_depthwise_and_fc() -> None:
    """Weight rows with identical bytes and shapes in a conv, a depthwise conv and an FC layer."""
    rng = np.random.default_rng(15)
    oc, kh, kw = 4, 3, 3
    w_rows = rng.integers(-128, 128, size=(oc, kh * kw), dtype=np.int8)
    bias = rng.integers(-1000, 1000, size=oc).astype(np.int32)
    mult, shift = np.full(oc, 1 << 30), np.full(oc, -7)
    xdw = rng.integers(-128, 128, size=(2, 8, 8, oc), dtype=np.int8)
    w_dw = np.ascontiguousarray(w_rows.T).reshape(1, kh, kw, oc)
    for _ in range(2):
        got = depthwise_conv2d_s8(xdw, w_dw, bias, input_offset=128, output_offset=0, multipliers=mult,
                                  shifts=shift)
        assert_same(got, ref_depthwise(xdw, w_dw, bias, 128, 0, mult, shift, (1, 1), (0, 0), (1, 1), 1, -128, 127,
                                       (6, 6)))
        xc = rng.integers(-128, 128, size=(2, 8, 8, 1), dtype=np.int8)
        run_conv(xc, w_rows.reshape(oc, kh, kw, 1), bias, 128, 0, mult, shift)
        xf = rng.integers(-128, 128, size=(5, kh * kw), dtype=np.int8)
        got = fully_connected_s8(xf, w_rows, bias, input_offset=128, output_offset=0, multipliers=mult,
                                 shifts=shift)
        assert_same(got, ref_fc(xf, w_rows, bias, 128, 0, mult, shift, -128, 127))


def test_weight_cache_eviction() -> None:
    """More layers than the cache holds, then the first ones again."""
    rng = np.random.default_rng(16)
    x = rng.integers(-128, 128, size=(1, 4, 4, 3), dtype=np.int8)
    ws = [rng.integers(-128, 128, size=(2, 2, 2, 3), dtype=np.int8) for _ in range(conv_mod._PREPARED_MAX + 8)]
    mult, shift = np.full(2, 1 << 30), np.full(2, -8)
    expected = [ref_conv(x, w, None, 1, 0, mult, shift, (1, 1), (0, 0), (1, 1), -128, 127, (3, 3)) for w in ws]
    for _ in range(2):
        for w, e in zip(ws, expected, strict=True):
            got = conv2d_s8(x, w, None, input_offset=1, output_offset=0, multipliers=mult, shifts=shift)
            assert_same(got, e)
    assert len(conv_mod._PREPARED) <= conv_mod._PREPARED_MAX


# ---------------------------------------------------------------------------------------------------------
# depthwise_conv2d_s8
# ---------------------------------------------------------------------------------------------------------


def run_depthwise(x, w, bias, in_off, out_off, mult, shift, st=(1, 1), pd=(0, 0), dl=(1, 1), ch_mult=1, lo=-128,
                  hi=127, out_hw=None) -> np.ndarray:
    hw = out_hw or out_hw_of(x.shape[1], x.shape[2], w.shape[1:3], st, pd, dl)
    got = depthwise_conv2d_s8(x, w, bias, input_offset=in_off, output_offset=out_off, multipliers=mult,
                              shifts=shift, stride=st, padding=pd, dilation=dl, depth_multiplier=ch_mult, act_min=lo,
                              act_max=hi, output_hw=out_hw)
    assert_same(got, ref_depthwise(x, w, bias, in_off, out_off, mult, shift, st, pd, dl, ch_mult, lo, hi, hw))
    return got


# (n, h, w, c, depth multiplier, kernel, stride, padding, dilation, output_hw)
DW_GEOMETRIES = [
    (2, 15, 15, 8, 1, (3, 3), (2, 2), (1, 1), (1, 1), None),
    (2, 17, 13, 5, 1, (3, 3), (2, 2), (0, 0), (1, 1), None),
    (1, 9, 11, 4, 2, (4, 5), (2, 2), (2, 2), (1, 1), None),
    (2, 13, 19, 3, 3, (3, 3), (1, 2), (1, 1), (2, 2), None),
    (1, 16, 21, 6, 1, (5, 5), (2, 3), (2, 2), (1, 2), None),
    (2, 11, 15, 4, 2, (3, 4), (3, 2), (1, 0), (2, 3), None),
    (2, 12, 12, 7, 1, (3, 3), (1, 1), (1, 1), (1, 1), (14, 13)),  # output larger than the default
    (1, 10, 9, 2, 4, (2, 3), (2, 2), (1, 1), (1, 1), (6, 6)),
    (3, 7, 7, 16, 1, (7, 7), (1, 1), (3, 3), (1, 1), None),
    (1, 1, 31, 3, 2, (1, 3), (1, 2), (0, 1), (1, 1), None),  # single row, odd width
]


@pytest.mark.parametrize("geometry", DW_GEOMETRIES)
@pytest.mark.parametrize("in_off", [128, -127, 7])
def test_depthwise_geometries(geometry, in_off) -> None:
    n, h, wd, c, m, k, st, pd, dl, out_hw = geometry
    rng = np.random.default_rng(hash((geometry[:6], in_off)) % 2**32)
    x = rng.integers(-128, 128, size=(n, h, wd, c), dtype=np.int8)
    oc = c * m
    w = rng.integers(-128, 128, size=(1, *k, oc), dtype=np.int8)
    bias = rng.integers(-(1 << 18), 1 << 18, size=oc).astype(np.int32)
    for mode in ("typical", "extreme"):
        mult, shift = channel_params(rng, oc, mode)
        run_depthwise(x, w, bias, in_off, int(rng.integers(-128, 128)), mult, shift, st, pd, dl, m, out_hw=out_hw)
    run_depthwise(x, w, None, in_off, 20, np.array([1 << 30]), np.array([-9]), st, pd, dl, m, lo=20,
                  out_hw=out_hw)
    run_depthwise(x, w, bias, in_off, 0, *low_byte_params(oc), st, pd, dl, m, out_hw=out_hw)


def test_depthwise_batch_chunks_and_bias_wrap() -> None:
    rng = np.random.default_rng(17)
    x = rng.integers(-128, 128, size=(40, 17, 17, 8), dtype=np.int8)
    w = rng.integers(-128, 128, size=(1, 3, 3, 16), dtype=np.int8)
    bias = np.resize(np.array([INT32_MAX, INT32_MIN, INT32_MAX - 100, 5], dtype=np.int32), 16)
    mult, shift = channel_params(rng, 16, "extreme")
    run_depthwise(x, w, bias, 128, -128, mult, shift, st=(2, 2), pd=(1, 1), ch_mult=2)
    mult, shift = channel_params(rng, 16, "typical")
    run_depthwise(x, w, bias, -127, 127, mult, shift, st=(2, 2), pd=(1, 1), ch_mult=2, lo=127)


@pytest.mark.parametrize(("l1", "dtype"), [(F32_LIMIT - 1, np.float32), (F32_LIMIT + 1, np.float64)])
@pytest.mark.parametrize("in_off", [0, 128, -127])
def test_depthwise_float32_bound(l1, dtype, in_off) -> None:
    """Per-channel tap sums just under / over 2^24: float32 accumulation, or the float64 fallback."""
    rng = np.random.default_rng(l1 + in_off)
    kh = kw = 33  # 1089 taps
    c, m = 2, 2
    oc = c * m
    cols = [bound_weights(rng, l1, kh * kw, odd=True), bound_weights(rng, l1 - 3, kh * kw, odd=True),
            bound_weights(rng, 90000, kh * kw, odd=False), rng.integers(-128, 128, size=kh * kw).astype(np.int8)]
    w = np.stack(cols, axis=1).reshape(1, kh, kw, oc)
    assert conv_mod.matmul_dtype(w.reshape(kh * kw, oc).T) is dtype
    x = near_min_input(rng, (2, 35, 36, c), per_flip=1 << 40)
    x[0, 16, 16, :] = x[1, 10, 20, 1] = -127  # one flip inside every window: sums 128 * l1 - |w| (odd w)
    bias = rng.integers(-100, 100, size=oc).astype(np.int32)
    run_depthwise(x, w, bias, in_off, 0, *low_byte_params(oc), ch_mult=m)
    run_depthwise(x, w, bias, in_off, 0, *low_byte_params(oc), st=(2, 2), pd=(1, 2), ch_mult=m)
    mult, shift = channel_params(rng, oc, "extreme")
    run_depthwise(x, w, bias, in_off, 3, mult, shift, ch_mult=m)
    assert_sums_at_bound(ref_depthwise_acc(x, w, None, 0, (1, 1), (0, 0), (1, 1), m, (3, 4))[..., 0], l1)
