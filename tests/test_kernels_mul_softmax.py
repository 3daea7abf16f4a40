"""mul_s8 / mul_quant_params and softmax_s8 / softmax_params against the independent integer statements in
cmsis_reference_ops.py (arm_elementwise_mul_s8, arm_softmax_s8, TFLite prepare), plus float sanity checks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mcuforge.kernels import mul_quant_params, mul_s8, softmax_params, softmax_s8
from mcuforge.kernels.mul import TABLE_THRESHOLD

from cmsis_reference_ops import ref_mul, ref_softmax_row, tflite_mul_params, tflite_softmax_params

INT32_MAX = (1 << 31) - 1

# ---------------------------------------------------------------------------------------------------------
# mul
# ---------------------------------------------------------------------------------------------------------


def ref_mul_array(a: np.ndarray, b: np.ndarray, p: dict) -> np.ndarray:
    a, b = np.broadcast_arrays(a, b)
    out = np.zeros(a.shape, dtype=np.int8)
    for idx in np.ndindex(a.shape):
        out[idx] = ref_mul(int(a[idx]), int(b[idx]), p["a_offset"], p["b_offset"], p["output_offset"],
                           p["output_multiplier"], p["output_shift"], p["act_min"], p["act_max"])  # fmt: skip
    return out


def random_broadcast_shapes(rng: np.random.Generator) -> tuple[tuple[int, ...], tuple[int, ...]]:
    rank = int(rng.integers(1, 5))
    full = [int(v) for v in rng.integers(1, 6, size=rank)]
    a = [d if rng.random() < 0.7 else 1 for d in full]
    b = [d if rng.random() < 0.7 else 1 for d in full]
    drop = int(rng.integers(0, rank))  # numpy broadcasting also aligns a lower-rank operand on the right
    return tuple(a), tuple(b[drop:])


def random_mul_params(rng: np.random.Generator, raw: bool) -> dict:
    if raw:  # any Q31 multiplier, shifts across the whole range
        mult = int(rng.choice([0, 1, 1 << 30, INT32_MAX, int(rng.integers(1, INT32_MAX))]))
        shift = int(rng.integers(-31, 31))
    else:
        scales = [float(np.float32(v)) for v in np.exp(rng.uniform(np.log(1e-3), np.log(1.0), size=3))]
        mult, shift = mul_quant_params(*scales)
    p = dict(a_offset=int(rng.integers(-127, 129)), b_offset=int(rng.integers(-127, 129)),
             output_offset=int(rng.integers(-128, 128)), output_multiplier=mult, output_shift=shift,
             act_min=-128, act_max=127)  # fmt: skip
    if rng.random() < 0.3:
        p.update(act_min=int(rng.integers(-128, 0)), act_max=int(rng.integers(0, 128)))
    return p


@pytest.mark.parametrize("seed", range(60))
def test_mul_random_against_reference(seed: int) -> None:
    rng = np.random.default_rng(7000 + seed)
    p = random_mul_params(rng, raw=seed % 3 == 2)
    a_shape, b_shape = random_broadcast_shapes(rng)
    a = rng.integers(-128, 128, size=a_shape, dtype=np.int8)
    b = rng.integers(-128, 128, size=b_shape, dtype=np.int8)
    got = mul_s8(a, b, **p)
    assert got.dtype == np.int8 and got.shape == np.broadcast_shapes(a_shape, b_shape)
    np.testing.assert_array_equal(got, ref_mul_array(a, b, p))


def test_mul_edge_values_and_saturation() -> None:
    values = np.array([-128, -127, -1, 0, 1, 126, 127], dtype=np.int8)
    a, b = np.meshgrid(values, values, indexing="ij")
    a, b = a.copy(), b.copy()
    for mult, shift in [(INT32_MAX, 30), (INT32_MAX, -31), (1 << 30, 0), (1 << 30, -1), (1, 0), (0, 0),
                        (1518500250, 7), (1073741824, -15)]:  # fmt: skip
        for offsets in [(128, 128, -128), (-127, -127, 127), (0, 0, 0), (128, -127, 5)]:
            p = dict(a_offset=offsets[0], b_offset=offsets[1], output_offset=offsets[2], output_multiplier=mult,
                     output_shift=shift, act_min=-128, act_max=127)  # fmt: skip
            np.testing.assert_array_equal(mul_s8(a, b, **p), ref_mul_array(a, b, p))
    # (-128 + 128) * anything = 0 -> the output zero point; 255 * 255 << 30 saturates (wraps, then clamps)
    p = dict(a_offset=128, b_offset=128, output_offset=-3, output_multiplier=1 << 30, output_shift=-1)
    assert mul_s8(np.int8([-128]), np.int8([100]), **p).item() == -3
    assert mul_s8(np.int8([127]), np.int8([127]), **p).item() == 127  # 65025 / 4 = 16256 -> clamp
    p.update(output_offset=0, output_multiplier=INT32_MAX, output_shift=0)
    assert mul_s8(np.int8([-128 + 20]), np.int8([-128 + 7]), **p).item() == 127  # 140 -> clamp
    assert mul_s8(np.int8([-128 + 20]), np.int8([-128 + 7]), **p, act_min=-10, act_max=100).item() == 100


def test_mul_large_inputs_use_every_byte_pair_exactly() -> None:
    # large tensors go through a table of all 65536 (a, b) pairs: check every pair against the reference
    q = np.arange(-128, 128, dtype=np.int8)
    a, b = (np.tile(g, (3, 1, 1)) for g in np.meshgrid(q, q, indexing="ij"))  # 3 * 65536 elements
    assert a.size >= TABLE_THRESHOLD
    rng = np.random.default_rng(17)
    for raw in (False, True, True):
        p = random_mul_params(rng, raw)
        got = mul_s8(a, b, **p)
        expected = ref_mul_array(q[:, None], q[None, :], p)
        for copy in got:
            np.testing.assert_array_equal(copy, expected)
        np.testing.assert_array_equal(mul_s8(a[0, :3], b[0, :3], **p), expected[:3])  # small: direct path


def test_mul_per_channel_broadcast_matches_explicit() -> None:
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, size=(2, 4, 5, 8), dtype=np.int8)
    gate = rng.integers(-128, 128, size=(2, 1, 1, 8), dtype=np.int8)  # squeeze-excite scale
    p = random_mul_params(rng, raw=False)
    got = mul_s8(x, gate, **p)
    np.testing.assert_array_equal(got, mul_s8(x, np.broadcast_to(gate, x.shape).copy(), **p))
    np.testing.assert_array_equal(mul_s8(gate, x, **{**p, "a_offset": p["b_offset"], "b_offset": p["a_offset"]}), got)


def test_mul_quant_params_against_tflite_and_float() -> None:
    rng = np.random.default_rng(9)
    for scales in np.exp(rng.uniform(np.log(1e-5), np.log(10.0), size=(300, 3))):
        sa, sb, so = (float(np.float32(s)) for s in scales)
        if sa * sb / so >= 2**30:
            continue
        mult, shift = mul_quant_params(sa, sb, so)
        assert (mult, shift) == tflite_mul_params(sa, sb, so)
        assert mult == 0 or 1 << 30 <= mult <= INT32_MAX
    # float sanity: the int8 product lands within 1 LSB of round(a * b / out)
    sa, sb, so, za, zb, zo = 0.02, 0.05, 0.004, 3, -7, 11
    mult, shift = mul_quant_params(sa, sb, so)
    q = np.arange(-128, 128, dtype=np.int8)
    a, b = np.meshgrid(q, q, indexing="ij")
    got = mul_s8(a.copy(), b.copy(), a_offset=-za, b_offset=-zb, output_offset=zo, output_multiplier=mult,
                 output_shift=shift)  # fmt: skip
    real = (a.astype(np.float64) - za) * sa * (b.astype(np.float64) - zb) * sb
    expected = np.clip(np.round(real / so) + zo, -128, 127)
    assert np.abs(got - expected).max() <= 1
    with pytest.raises(ValueError):
        mul_quant_params(0.0, 1.0, 1.0)
    with pytest.raises(ValueError):
        mul_quant_params(2.0**20, 2.0**20, 1.0)  # needs shift > 30


def test_mul_validation() -> None:
    p = dict(a_offset=0, b_offset=0, output_offset=0, output_multiplier=1 << 30, output_shift=0)
    with pytest.raises(ValueError, match="broadcast"):
        mul_s8(np.zeros((2, 3), np.int8), np.zeros((4,), np.int8), **p)
    with pytest.raises(ValueError, match="int8"):
        mul_s8(np.zeros(3, np.int16), np.zeros(3, np.int8), **p)
    with pytest.raises(ValueError, match="shift"):
        mul_s8(np.zeros(3, np.int8), np.zeros(3, np.int8), **{**p, "output_shift": 31})
    with pytest.raises(ValueError, match="a_offset"):
        mul_s8(np.zeros(3, np.int8), np.zeros(3, np.int8), **{**p, "a_offset": 129})


# ---------------------------------------------------------------------------------------------------------
# softmax
# ---------------------------------------------------------------------------------------------------------


def ref_softmax(x: np.ndarray, mult: int, shift: int, diff_min: int) -> np.ndarray:
    rows = x.reshape(-1, x.shape[-1]).tolist()
    return np.array([ref_softmax_row(r, mult, shift, diff_min) for r in rows], dtype=np.int8).reshape(x.shape)


@pytest.mark.parametrize("seed", range(30))
def test_softmax_random_against_reference(seed: int) -> None:
    rng = np.random.default_rng(8000 + seed)
    scale = float(np.float32(np.exp(rng.uniform(np.log(1e-3), np.log(2.0)))))
    beta = 1.0 if seed % 2 else float(rng.uniform(0.2, 3.0))
    mult, shift, diff_min = softmax_params(scale, beta)
    if seed % 5 == 4:  # raw parameters, away from what the prepare would produce
        mult, shift = int(rng.integers(1, INT32_MAX)), int(rng.integers(0, 32))
        diff_min = -int(rng.integers(0, 256))
    shape = (int(rng.integers(1, 4)), int(rng.integers(1, 12)), int(rng.integers(1, 40)))
    x = rng.integers(-128, 128, size=shape, dtype=np.int8)
    if seed % 3 == 0:  # concentrated values: many near the max, many ties
        x = rng.integers(100, 128, size=shape, dtype=np.int8)
    got = softmax_s8(x, multiplier=mult, shift=shift, diff_min=diff_min)
    assert got.dtype == np.int8 and got.shape == x.shape
    np.testing.assert_array_equal(got, ref_softmax(x, mult, shift, diff_min))


def test_softmax_params_against_tflite() -> None:
    rng = np.random.default_rng(12)
    scales = [float(np.float32(s)) for s in np.exp(rng.uniform(np.log(1e-7), np.log(1e3), size=400))]
    for scale in scales + [2.0**-25, 2.0**-20, 1 / 256, 1.0, 32.0, 100.0, 1e6]:
        assert softmax_params(scale) == tflite_softmax_params(scale)
        mult, shift, diff_min = softmax_params(scale)
        assert 1 << 30 <= mult <= INT32_MAX and 1 <= shift <= 31 and diff_min <= 0
        assert abs(diff_min) * (1 << shift) <= 31 << 26  # diff * 2^shift never overflows int32
    assert softmax_params(0.5, beta=2.0) == tflite_softmax_params(1.0)
    # very large scales cap the multiplier at 2^31 - 1: only the row maximum survives
    assert softmax_params(1e6) == (INT32_MAX, 31, 0)
    x = np.array([[5, 5, 4, -128], [127, 126, 127, 127]], dtype=np.int8)
    got = softmax_s8(x, **dict(zip(("multiplier", "shift", "diff_min"), softmax_params(1e6), strict=True)))
    np.testing.assert_array_equal(got, ref_softmax(x, INT32_MAX, 31, 0))
    assert got[0].tolist() == [0, 0, -128, -128] and got[1].tolist() == [-43, -128, -43, -43]
    for too_small in (2.0**-26, 1e-9):  # real multiplier <= 1: TFLite's QuantizeMultiplierGreaterThanOne fails
        with pytest.raises(ValueError, match="too small"):
            softmax_params(too_small)
    with pytest.raises(ValueError):
        softmax_params(-1.0)


def test_softmax_equal_rows() -> None:
    mult, shift, diff_min = softmax_params(0.05)
    for size in [1, 2, 3, 7, 100, 255, 256, 511, 512, 1000, 4095]:
        x = np.full((2, size), -17, dtype=np.int8)
        got = softmax_s8(x, multiplier=mult, shift=shift, diff_min=diff_min)
        expected = ref_softmax(x[:1], mult, shift, diff_min)
        np.testing.assert_array_equal(got, np.repeat(expected, 2, axis=0))
        assert len(set(got.ravel().tolist())) == 1
        # 1/size in units of 1/256, offset by -128 (1.0 saturates at 127)
        assert abs(int(got[0, 0]) - min(127, round(256 / size) - 128)) <= 1
    # >= 512 entries at the max: the C divide exponent would exceed 31; the exact rounding gives -128
    assert softmax_s8(np.zeros((1, 600), np.int8), multiplier=mult, shift=shift, diff_min=diff_min).max() == -128


def test_softmax_diff_min_cut_off() -> None:
    mult, shift, diff_min = softmax_params(0.5)  # diff_min = -62 with scale 0.5
    assert diff_min > -255
    row = np.array([[100, 100 + diff_min, 100 + diff_min + 1, 100 + diff_min - 1, -128]], dtype=np.int8)
    got = softmax_s8(row, multiplier=mult, shift=shift, diff_min=diff_min)
    np.testing.assert_array_equal(got, ref_softmax(row, mult, shift, diff_min))
    assert got[0, 3] == -128 and got[0, 4] == -128
    # moving the cut-off by one changes which entries enter the sum; the reference agrees either way
    for dm in (diff_min, diff_min + 1, diff_min - 1, 0, -255):
        np.testing.assert_array_equal(softmax_s8(row, multiplier=mult, shift=shift, diff_min=dm),
                                      ref_softmax(row, mult, shift, dm))  # fmt: skip
    assert softmax_s8(row, multiplier=mult, shift=shift, diff_min=0)[0].tolist() == [127, -128, -128, -128, -128]


def test_softmax_close_to_float() -> None:
    rng = np.random.default_rng(21)
    for scale in (1 / 16, 0.1, 0.3):
        x = rng.integers(-128, 128, size=(200, 10), dtype=np.int8)
        mult, shift, diff_min = softmax_params(scale)
        got = softmax_s8(x, multiplier=mult, shift=shift, diff_min=diff_min).astype(np.int64)
        probs = torch.softmax(torch.from_numpy(x.astype(np.float64) * scale), dim=-1).numpy()
        expected = np.clip(np.round(probs * 256) - 128, -128, 127)
        assert np.abs(got - expected).max() <= 1


def test_softmax_batched_equals_rowwise_and_validation() -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, size=(2, 3, 4, 9), dtype=np.int8)
    p = dict(zip(("multiplier", "shift", "diff_min"), softmax_params(0.07), strict=True))
    got = softmax_s8(x, **p)
    for idx in np.ndindex(x.shape[:-1]):
        np.testing.assert_array_equal(got[idx], softmax_s8(x[idx], **p))
    with pytest.raises(ValueError, match="row size"):
        softmax_s8(np.zeros((1, 4096), np.int8), **p)
    with pytest.raises(ValueError, match="shift"):
        softmax_s8(np.zeros((1, 4), np.int8), **{**p, "shift": 32})
    with pytest.raises(ValueError, match="diff_min"):
        softmax_s8(np.zeros((1, 4), np.int8), **{**p, "diff_min": 1})
    with pytest.raises(ValueError, match="int8"):
        softmax_s8(np.zeros((1, 4), np.float32), **p)


def test_softmax_blocked_path_equals_the_reference_row_by_row() -> None:
    """Rows are processed in blocks of 2^16 // row_size rows: 7,000 rows of 20 are three blocks (3,276, 3,276
    and a partial 448). Each row is one of 64 random rows (own max, own cut-off entries), placed with a
    period (64) prime to the block size, so every block holds a different arrangement; every output row must
    equal the independent reference for its row."""
    rng = np.random.default_rng(31)
    rows, size = 7000, 20
    block = (1 << 16) // size
    assert rows > 2 * block and rows % block != 0  # two full blocks and a partial one
    protos = rng.integers(-128, 128, size=(64, size), dtype=np.int8)
    protos[::4] = rng.integers(100, 128, size=(16, size), dtype=np.int8)  # bunched near the max
    mult, shift, diff_min = tflite_softmax_params(0.15)
    assert diff_min > -255  # entries far below the row max are cut off (-207 here)
    which = (np.arange(rows) * 37 + rows // 3) % 64
    got = softmax_s8(protos[which], multiplier=mult, shift=shift, diff_min=diff_min)
    expected = ref_softmax(protos, mult, shift, diff_min)
    assert len({r.tobytes() for r in expected}) == 64  # the reference rows differ: a misplaced row is seen
    np.testing.assert_array_equal(got, expected[which])


def test_softmax_cmsis_nn_unit_test_vector() -> None:
    # CMSIS-NN's own arm_softmax_s8 unit test (Tests/UnitTest/TestCases/TestData/softmax): 2 rows of 5
    x = np.array([101, 49, 6, -34, -75, -79, -38, 120, -55, 115], dtype=np.int8).reshape(2, 5)
    got = softmax_s8(x, multiplier=1077952640, shift=19, diff_min=-3968)
    assert got.ravel().tolist() == [-57, -70, -79, -86, -92, -94, -88, -54, -91, -56]
