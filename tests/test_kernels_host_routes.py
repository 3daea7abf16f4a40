"""The host kernels' newest fast paths against the integer references, bit for bit (each test runs on both
routes, compiled loops and numpy alone: tests/conftest.py).

- ``ByteMap``: two bytes per gather (a uint16 table of byte pairs) at every size around its threshold, odd
  sizes, strided and unaligned inputs, all 65536 byte pairs;
- the float route's int32 tail (``Requantizer``): thresholds beyond +-2^23 (clipped), per-channel thresholds and
  shifts with right shifts 0 (no correction) beside large ones, negative ties, per-tensor rows of any width;
- the batch matmul's kept requantizers: the float32 and float64 accumulators and the int32 wrap, by inner
  dimension, against the C loop;
- the fp32 op's bound call (tensors sharing the arena's memory, built once per op and input arrays): rebuilt when
  the op's attributes change, equal to torch's own call for one run, folded runs and unfoldable ops.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_kernels_fast_paths import assert_same, ref_output
from test_kernels_matmul_tconv import ref_batch_matmul

from mcuforge.ir import Graph, Op, Tensor, TensorRef
from mcuforge.kernels.batch_matmul import prepare_batch_matmul_s8
from mcuforge.kernels.quant_utils import INT32_MAX, PAIR_MIN_ELEMENTS, ByteMap, Requantizer
from mcuforge.runtime import execute


@pytest.mark.parametrize("size", [1, PAIR_MIN_ELEMENTS - 2, PAIR_MIN_ELEMENTS - 1, PAIR_MIN_ELEMENTS,
                                  PAIR_MIN_ELEMENTS + 1, 3 * PAIR_MIN_ELEMENTS + 6])
def test_byte_map_pairs_any_size_and_layout(size: int) -> None:
    rng = np.random.default_rng(size)
    by_byte = rng.integers(-128, 128, size=256, dtype=np.int8)
    byte_map = ByteMap(by_byte)
    x = rng.integers(-128, 128, size=size, dtype=np.int8)
    assert_same(byte_map(x), by_byte[x.view(np.uint8)])
    buf = np.zeros(2 * size + 1, np.int8)
    unaligned = buf[1:size + 1]  # an odd byte offset: the uint16 view is unaligned
    unaligned[...] = x
    assert_same(byte_map(unaligned), by_byte[x.view(np.uint8)])
    strided = buf[1::2][:size]
    strided[...] = x
    assert_same(byte_map(strided), by_byte[x.view(np.uint8)])
    if size % 2 == 0:
        shaped = x.reshape(2, -1)
        assert_same(byte_map(shaped), by_byte[shaped.view(np.uint8)])


def test_byte_map_every_pair() -> None:
    by_byte = np.random.default_rng(1).integers(-128, 128, size=256, dtype=np.int8)
    pairs = np.stack(np.meshgrid(np.arange(256), np.arange(256), indexing="ij"), axis=-1).reshape(-1)
    x = pairs.astype(np.uint8).view(np.int8)  # every (first, second) byte pair, side by side
    assert_same(ByteMap(by_byte)(x), by_byte[x.view(np.uint8)])
    assert ByteMap(by_byte).pairs().shape == (1 << 16,)


def test_requantizer_int32_tail_far_thresholds_and_mixed_shifts() -> None:
    """Channels with right shift 0 (no tie correction: a sentinel threshold far below -2^23, clipped) beside
    right shifts up to 22 (the float route's limit with offset 0), and negative ties of each."""
    shifts = np.array([0, -1, -5, -13, -20, -22, 0, -3])
    mult = np.array([1 << 30] * 4 + [(1 << 30) + 12345, INT32_MAX, 1 << 30, 1518500250])
    y = np.arange(-3000, 3000)
    acc = np.repeat((2 * y)[:, None], shifts.size, axis=1) * np.array([1, 1, 1, 3, 700, 900, 1, 1])
    bound = np.abs(acc).max(axis=0) + 1
    routes = set()
    for off, lo, hi in ((0, -128, 127), (-1, -128, 127), (1, -128, 127), (0, -20, 100), (-128, -128, 127)):
        for channels in (slice(0, 5), slice(None)):  # without the widest channels the float route is on
            m, s, a, b = mult[channels], shifts[channels], acc[:, channels], bound[channels]
            req = Requantizer(m, s, off, lo, hi, acc_bound=b)
            routes.add((req.float_path, req.tie_correction))
            assert_same(req(a.astype(np.float64)), ref_output(a, m, s, off, lo, hi))
    assert (True, True) in routes and (False, True) in routes  # the float route's int32 tail and the int64 one


@pytest.mark.parametrize("depth", [1, 16, 258, 259, 40000])
def test_batch_matmul_kept_requantizers_by_depth(depth: int) -> None:
    """depth * 255^2 below 2^24 (float32), above (float64), and beyond 2^31 (the int32 accumulator wraps)."""
    rng = np.random.default_rng(depth)
    m, n = (3, 2) if depth > 1000 else (5, 4)
    lhs = rng.integers(-128, 128, size=(2, m, depth), dtype=np.int8)
    rhs = rng.integers(-128, 128, size=(2, depth, n), dtype=np.int8)
    lhs[0, 0], rhs[0, :, 0] = 127, 127  # the largest dot product
    p = dict(lhs_offset=128, rhs_offset=128, output_offset=-3, output_multiplier=1 << 30, output_shift=-20,
             act_min=-128, act_max=127)
    run = prepare_batch_matmul_s8(**p)
    expected = ref_batch_matmul(lhs, rhs, p, False, False)
    assert_same(run(lhs, rhs), expected)
    assert_same(run(lhs[:1], rhs[:1]), expected[:1])  # the kept requantizer again, another batch
    small = prepare_batch_matmul_s8(**p)
    assert_same(small(lhs[:, :1, :1].copy(), rhs[:, :1, :].copy()), ref_batch_matmul(
        lhs[:, :1, :1], rhs[:, :1, :], p, False, False))  # another depth through one prepared kernel


def _fp32_graph(target: str, args: list, data: np.ndarray) -> Graph:
    tensors = {
        "x": Tensor("x", (2, 3), "float32", offset=0),
        "y": Tensor("y", (2, 3), "float32", offset=32),
        "w": Tensor("w", (3,), "float32", data=data),
    }
    op = Op("aten_fp32", ["x", "w"], ["y"], attrs=dict(target=target, args=args, kwargs={}))
    return Graph(tensors, [op], ["x"], ["y"], arena_bytes=64)


def test_fp32_bound_call_follows_edits_and_matches_torch() -> None:
    rng = np.random.default_rng(2)
    w = rng.standard_normal(3).astype(np.float32)
    args = [TensorRef(0), [3], TensorRef(1), None, 1e-5]
    graph = _fp32_graph("aten.layer_norm.default", args, w)
    x = rng.standard_normal((4, 2, 3)).astype(np.float32)

    def fresh(v: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
        """The same op in a graph built anew (nothing bound or cached): one run per row of ``v``."""
        one = _fp32_graph("aten.layer_norm.default", [TensorRef(0), [3], TensorRef(1), None, eps], weight)
        return np.stack([execute(one, [row])[0] for row in v])

    def torch_ln(v: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
        return torch.ops.aten.layer_norm.default(torch.from_numpy(v), [3], torch.from_numpy(weight), None,
                                                 eps).numpy()

    # The runtime computes layer_norm as the C kernel does (docs/numerics.md: same bytes on every backend),
    # so the bound call equals a fresh graph's bytes exactly and torch's values within float rounding.
    for _ in range(2):  # built, then reused
        got = execute(graph, [x], runs=4)[0]
        assert np.array_equal(got, fresh(x, w, 1e-5))
        np.testing.assert_allclose(got, torch_ln(x.reshape(-1, 3), w, 1e-5).reshape(x.shape), rtol=1e-5, atol=1e-5)
    assert np.array_equal(execute(graph, [x[0]])[0], fresh(x[:1], w, 1e-5)[0])  # one run
    graph.ops[0].attrs["args"][4] = 0.5  # attribute edited in place: rebuilt
    assert np.array_equal(execute(graph, [x], runs=4)[0], fresh(x, w, 0.5))
    assert not np.array_equal(fresh(x, w, 0.5), fresh(x, w, 1e-5))
    graph.tensors["w"].data = 2 * w  # new constant array: rebuilt
    assert np.array_equal(execute(graph, [x], runs=4)[0], fresh(x, 2 * w, 0.5))
    # an op outside the foldable set (aten.mul.Tensor) takes the general path (vmap over the runs)
    add = _fp32_graph("aten.mul.Tensor", [TensorRef(0), TensorRef(1)], w)
    assert np.array_equal(execute(add, [x], runs=4)[0], x * w)
