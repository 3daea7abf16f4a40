"""The kernels' compiled loops (mcuforge.kernels.jit) against the independent integer references, bit for bit.

Each loop is called directly, at the edges of its arithmetic: every extreme (multiplier, shift) pair, the
multiplier INT32_MIN (the doubling-high-mult overflow), accumulators beyond int32 (they wrap), every right shift
0..31 with exact negative ties, float accumulators of each width; softmax rows of one to hundreds of values,
equal rows (the largest sums), scales where diff_min drops values; quantize ties and saturation; every byte and
byte pair of the gathers. The loops also run as plain Python (``jit._requantize_rows`` ...), which states the
same arithmetic: checked on a sample, so a compiler that differed from the Python meaning would show.

References: test_kernels_fast_paths.py's numpy int64 statements of the C arithmetic, cmsis_reference_ops.py's
per-row C transliterations, torch's quantized_decomposed ops.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  (registers torch.ops.quantized_decomposed)
from test_kernels_fast_paths import EXTREME_PAIRS, assert_same, random_accs, ref_output

from mcuforge.kernels import jit
from mcuforge.kernels.quant_utils import INT32_MAX, INT32_MIN, Requantizer
from mcuforge.kernels.softmax import _tables, prepare_softmax_s8, softmax_params

from cmsis_reference_ops import c_one_over_one_plus_x_for_x_in_0_1, ref_softmax_row

pytestmark = pytest.mark.skipif(not jit.ENABLED, reason="numba is not installed (or MCUFORGE_JIT=0)")


def _params(mult, shift, channels):
    m = np.broadcast_to(np.asarray(mult, np.int64), (channels,)).copy()
    s = np.broadcast_to(np.asarray(shift, np.int64), (channels,))
    return m, np.maximum(s, 0).copy(), np.maximum(-s, 0).copy()


@pytest.mark.parametrize(("mult", "shift"), EXTREME_PAIRS)
def test_requantize_rows_extreme_pairs_wide_accumulators(mult: int, shift: int) -> None:
    rng = np.random.default_rng(abs(mult) % 1000 + shift + 40)
    for kind in ("int32", "wide"):
        acc = random_accs(rng, (300, 3), kind)
        bias = rng.integers(-(1 << 31), 1 << 31, size=3)
        for off, lo, hi in ((0, -128, 127), (127, -128, 127), (-128, -128, 0), (-7, -7, 127)):
            m, left, right = _params(mult, shift, 3)
            out = np.empty(acc.shape, np.int8)
            jit.requantize_rows(acc, bias, m, left, right, off, lo, hi, out)
            assert_same(out, ref_output(acc + bias, mult, shift, off, lo, hi))


def test_requantize_rows_every_right_shift_and_negative_ties() -> None:
    """acc = 2y with m = 2^30 makes y exact: every tie of every 2^e division, both signs."""
    y = np.arange(-(1 << 12), 1 << 12)
    acc = np.repeat((2 * y)[:, None], 32, axis=1)
    shifts = -np.arange(32)  # right shifts 0..31, one per channel
    m, left, right = _params(1 << 30, shifts, 32)
    for off, lo, hi in ((0, -128, 127), (-100, -128, 127), (100, 99, 127)):
        out = np.empty(acc.shape, np.int8)
        jit.requantize_rows(acc, np.zeros(32, np.int64), m, left, right, off, lo, hi, out)
        assert_same(out, ref_output(acc, np.full(32, 1 << 30), shifts, off, lo, hi))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_requantize_rows_accumulator_dtypes_per_channel(dtype) -> None:
    rng = np.random.default_rng(3)
    channels = 7
    mult = rng.integers(INT32_MIN, INT32_MAX, size=channels, endpoint=True)
    mult[0] = INT32_MIN
    shift = rng.integers(-31, 31, size=channels)
    limit = (1 << 24) if dtype == np.float32 else (1 << 31)  # exact integers in the dtype
    acc = rng.integers(-limit + 1, limit, size=(500, channels)).astype(dtype)
    bias = rng.integers(-(1 << 20), 1 << 20, size=channels)
    m, left, right = _params(mult, shift, channels)
    out = np.empty(acc.shape, np.int8)
    jit.requantize_rows(acc, bias, m, left, right, -5, -128, 127, out)
    assert_same(out, ref_output(acc.astype(np.int64) + bias, mult, shift, -5, -128, 127))


def test_requantizer_routes_agree_on_any_width_and_strided_output(monkeypatch) -> None:
    """Requantizer's compiled route (per-tensor parameters widened to the rows, a strided output) against the
    numpy route and the reference, with and without the float route's bounds."""
    rng = np.random.default_rng(11)
    mult, shift = np.array([1518500250]), np.array([-9])
    for bound in (None, np.array([1 << 19])):
        req = Requantizer(mult, shift, 3, -128, 127, bias=np.array([77]), acc_bound=bound)
        for width in (1, 5, 64):
            acc = rng.integers(-(1 << 19), 1 << 19, size=(40, width)).astype(np.float64)
            expected = ref_output(acc.astype(np.int64) + 77, mult, shift, 3, -128, 127)
            big = np.zeros((40, 2 * width), np.int8)
            assert_same(req(acc, big[:, ::2]), expected)
            monkeypatch.setattr(jit, "ENABLED", False)
            assert_same(req(acc), expected)
            monkeypatch.setattr(jit, "ENABLED", True)


def test_row_scales_against_c_text() -> None:
    rng = np.random.default_rng(3)
    totals = np.concatenate([rng.integers(1 << 19, 1 << 31, size=20000),
                             [1 << 19, (1 << 19) + 1, (1 << 20) - 1, 1 << 20, (1 << 30) - 1, 1 << 30, (1 << 31) - 1],
                             (1 << np.arange(19, 31)) + 1, (1 << np.arange(20, 31)) - 1]).astype(np.int64)
    scales, exponents = np.empty_like(totals), np.empty_like(totals)
    jit.row_scales(totals, scales, exponents)
    for total, s, e in zip(totals.tolist(), scales.tolist(), exponents.tolist(), strict=True):
        headroom = 32 - total.bit_length()
        assert s == c_one_over_one_plus_x_for_x_in_0_1(((total << headroom) & 0xFFFFFFFF) - (1 << 31))
        assert e == 12 - headroom + 23


@pytest.mark.parametrize("row_size", [1, 2, 16, 77, 300])
def test_softmax_rows_against_row_reference(row_size: int) -> None:
    rng = np.random.default_rng(row_size + 100)
    x = rng.integers(-128, 128, size=(600 // row_size + 20, row_size), dtype=np.int8)
    x[:5] = np.array([127, -128, 0, 5, -5], dtype=np.int8)[:, None]  # equal rows: the largest sums
    x[5] = -128
    x[5, 0] = 127  # one value far above the rest (all others below diff_min at coarse scales)
    for scale in (0.002, 0.02, 0.5, 4.0):
        mult, shift, diff_min = softmax_params(scale)
        exp_table, sum_terms, nonnegative = _tables(mult, shift, diff_min)
        assert nonnegative
        out = np.empty(x.shape, np.int8)
        jit.softmax_rows(x, exp_table, sum_terms.astype(np.int64), out)
        for i in range(x.shape[0]):
            assert out[i].tolist() == ref_softmax_row(x[i].tolist(), mult, shift, diff_min), (scale, i)
        assert_same(prepare_softmax_s8(multiplier=mult, shift=shift, diff_min=diff_min)(x), out)


def test_quantize_and_dequantize_loops_match_torch() -> None:
    rng = np.random.default_rng(5)
    for scale, zp in ((0.02865929715335369, 10), (1.0, -128), (0.5, 127), (3e-5, 0)):
        x = (rng.standard_normal(5000) * 200 * scale).astype(np.float32)
        x[:6] = np.array([0.5, 1.5, -0.5, -2.5, 1e30, -1e30], np.float32) * np.float32(scale)  # ties, saturation
        out = np.empty(x.shape, np.int8)
        jit.quantize(x, np.float32(1.0 / scale), np.float32(zp), np.float32(-128), np.float32(127), out)
        expected = torch.ops.quantized_decomposed.quantize_per_tensor(torch.from_numpy(x), scale, zp, -128, 127,
                                                                       torch.int8)
        assert_same(out, expected.numpy())
        q = rng.integers(-128, 128, size=5000, dtype=np.int8)
        deq = np.empty(q.shape, np.float32)
        jit.dequantize(q, np.float32(zp), np.float32(scale), deq)
        expected = torch.ops.quantized_decomposed.dequantize_per_tensor(torch.from_numpy(q), scale, zp, -128, 127,
                                                                         torch.int8)
        assert np.array_equal(deq.view(np.int32), expected.numpy().view(np.int32))  # bit for bit


def test_gathers_every_byte_and_pair() -> None:
    rng = np.random.default_rng(6)
    table = rng.integers(-128, 128, size=256, dtype=np.int8)
    index = np.arange(256, dtype=np.uint8)
    out = np.empty(256, np.int8)
    jit.gather(table, index, out)
    assert np.array_equal(out, table)
    pairs = rng.integers(-128, 128, size=1 << 16, dtype=np.int8)
    high, low = np.repeat(index, 256), np.tile(index, 256)
    out = np.empty(1 << 16, np.int8)
    jit.gather_pairs(pairs, high, low, out)
    assert np.array_equal(out, pairs)


def test_loops_mean_the_same_as_plain_python() -> None:
    """The loops' Python text run by the interpreter (numpy scalars) gives what the compiled loops give."""
    rng = np.random.default_rng(8)
    acc = random_accs(rng, (6, 4), "wide")
    bias = rng.integers(-(1 << 31), 1 << 31, size=4)
    m, left, right = _params([INT32_MIN, INT32_MAX, 1 << 30, 12345], [30, -31, 0, -7], 4)
    compiled, plain = np.empty(acc.shape, np.int8), np.empty(acc.shape, np.int8)
    jit.requantize_rows(acc, bias, m, left, right, 9, -128, 127, compiled)
    jit._requantize_rows(acc, bias, m, left, right, 9, -128, 127, plain)
    assert_same(compiled, plain)
    x = rng.integers(-128, 128, size=(5, 9), dtype=np.int8)
    mult, shift, diff_min = softmax_params(0.05)
    exp_table, sum_terms, _ = _tables(mult, shift, diff_min)
    jit.softmax_rows(x, exp_table, sum_terms.astype(np.int64), compiled := np.empty(x.shape, np.int8))
    jit._softmax_rows(x, exp_table, sum_terms.astype(np.int64), plain := np.empty(x.shape, np.int8))
    assert_same(compiled, plain)
