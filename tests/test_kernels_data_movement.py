"""pad_s8, transpose_s8 and concat_s8 against index-by-index statements in cmsis_reference_ops.py."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mcuforge.kernels import concat_s8, pad_s8, transpose_s8

from cmsis_reference_ops import ref_concat, ref_pad, ref_transpose


def random_shape(rng: np.random.Generator, rank: int, high: int = 5) -> tuple[int, ...]:
    return tuple(int(v) for v in rng.integers(1, high, size=rank))


@pytest.mark.parametrize("seed", range(60))
def test_pad_random_against_reference(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    rank = int(rng.integers(1, 5))
    x = rng.integers(-128, 128, size=random_shape(rng, rank), dtype=np.int8)
    pads = [(int(rng.integers(0, 3)), int(rng.integers(0, 3))) for _ in range(rank)]
    pad_value = int(rng.choice([-128, 0, 127, int(rng.integers(-128, 128))]))
    got = pad_s8(x, pads, pad_value=pad_value)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, np.array(ref_pad(x.tolist(), pads, pad_value), dtype=np.int8))


def test_pad_nhwc_zero_pads_and_zero_point() -> None:
    x = np.arange(-12, 12, dtype=np.int8).reshape(1, 2, 3, 4)
    same = pad_s8(x, [(0, 0)] * 4, pad_value=5)
    np.testing.assert_array_equal(same, x)
    assert same is not x  # a fresh buffer, as the C kernel writes its output
    got = pad_s8(x, [(0, 0), (1, 2), (0, 1), (0, 0)], pad_value=-3)  # spatial pad with the zero point -3
    assert got.shape == (1, 5, 4, 4)
    np.testing.assert_array_equal(got[:, 1:3, 0:3, :], x)
    border = np.ones(got.shape, bool)
    border[:, 1:3, 0:3, :] = False
    assert (got[border] == -3).all()
    channels = pad_s8(x, [(0, 0), (0, 0), (0, 0), (2, 1)], pad_value=127)  # channel pad (arm_pad_s8 allows it)
    assert channels.shape == (1, 2, 3, 7) and (channels[..., :2] == 127).all() and (channels[..., 6] == 127).all()


def test_pad_validation() -> None:
    x = np.zeros((2, 3), np.int8)
    with pytest.raises(ValueError, match="per dimension"):
        pad_s8(x, [(1, 1)], pad_value=0)
    with pytest.raises(ValueError, match=">= 0"):
        pad_s8(x, [(1, 1), (-1, 0)], pad_value=0)
    with pytest.raises(ValueError, match="pad_value"):
        pad_s8(x, [(1, 1), (0, 0)], pad_value=128)
    with pytest.raises(ValueError, match="int8"):
        pad_s8(x.astype(np.int32), [(1, 1), (0, 0)], pad_value=0)


@pytest.mark.parametrize("seed", range(40))
def test_transpose_random_against_reference(seed: int) -> None:
    rng = np.random.default_rng(200 + seed)
    rank = int(rng.integers(1, 5))
    x = rng.integers(-128, 128, size=random_shape(rng, rank), dtype=np.int8)
    perm = [int(p) for p in rng.permutation(rank)]
    got = transpose_s8(x, perm)
    assert got.flags.c_contiguous and got.dtype == np.int8
    np.testing.assert_array_equal(got, np.array(ref_transpose(x.tolist(), perm), dtype=np.int8))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.float32])
def test_transpose_every_4d_perm_any_dtype(dtype) -> None:
    x = (np.arange(2 * 3 * 4 * 5) - 60).astype(dtype).reshape(2, 3, 4, 5)
    for perm in itertools.permutations(range(4)):
        got = transpose_s8(x, perm)
        assert got.dtype == dtype and got.shape == tuple(x.shape[p] for p in perm)
        np.testing.assert_array_equal(got, np.array(ref_transpose(x.tolist(), list(perm)), dtype=dtype))
    # NCHW -> NHWC is the permutation the lowering uses
    np.testing.assert_array_equal(transpose_s8(x, (0, 2, 3, 1))[1, 3, 4], x[1, :, 3, 4])


def test_transpose_validation() -> None:
    with pytest.raises(ValueError, match="permutation"):
        transpose_s8(np.zeros((2, 3), np.int8), (0, 0))
    with pytest.raises(ValueError, match="rank"):
        transpose_s8(np.zeros((1,) * 5, np.int8), range(5))
    with pytest.raises(ValueError, match="numpy"):
        transpose_s8([[1, 2]], (1, 0))


@pytest.mark.parametrize("seed", range(40))
def test_concat_random_against_reference(seed: int) -> None:
    rng = np.random.default_rng(300 + seed)
    rank = int(rng.integers(1, 5))
    axis = int(rng.integers(-rank, rank))
    base = list(random_shape(rng, rank))
    inputs = []
    for _ in range(int(rng.integers(1, 5))):
        shape = list(base)
        shape[axis] = int(rng.integers(1, 4))
        inputs.append(rng.integers(-128, 128, size=shape, dtype=np.int8))
    got = concat_s8(inputs, axis)
    expected = ref_concat([a.tolist() for a in inputs], axis % rank)
    np.testing.assert_array_equal(got, np.array(expected, dtype=np.int8))


def test_concat_nhwc_axes_and_validation() -> None:
    a = np.full((1, 2, 2, 3), -128, np.int8)
    b = np.full((1, 2, 2, 1), 127, np.int8)
    got = concat_s8([a, b], axis=3)  # arm_concatenation_s8_w: the channel axis of NHWC
    assert got.shape == (1, 2, 2, 4) and (got[..., :3] == -128).all() and (got[..., 3] == 127).all()
    assert concat_s8([a, a], axis=0).shape == (2, 2, 2, 3)
    with pytest.raises(ValueError, match="differ"):
        concat_s8([a, b], axis=1)
    with pytest.raises(ValueError, match="axis"):
        concat_s8([a, a], axis=4)
    with pytest.raises(ValueError, match="rank"):
        concat_s8([a, a[0]], axis=0)
    with pytest.raises(ValueError, match="at least one"):
        concat_s8([], axis=0)
    with pytest.raises(ValueError, match="int8"):
        concat_s8([a, a.astype(np.int16)], axis=0)
