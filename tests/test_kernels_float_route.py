"""The host kernels' newer fast paths against the independent integer references, bit for bit.

- ``Requantizer``'s float64 route (``float_path``), with and without the tie correction, and its folding
  into a float64 matmul (``scaled_weights``: the fully connected kernel takes it with few inputs per output),
  checked at the accumulator bounds where the 2^53 argument is tight;
- softmax's per-row reciprocal (``_row_scales``) against the C-text statement, the exhaustive range claim on a
  sample of half denominators, and many-row blocks against the loop reference;
- the byte-pair tables read for a scalar operand and with either operand the smaller one;
- a global average pool as one reduction;
- the prepared kernels (``prepare_*``) equal to the plain calls for every batch size;
- the runtime's kept plans and prepared ops rebuilt when a graph changes.

The references are those of test_kernels_fast_paths.py (numpy int64 statements of the C arithmetic) and the
loops of cmsis_reference_ops.py / test_kernels_pooling_add_fc.py, which share nothing with mcuforge.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from test_kernels_fast_paths import assert_same, ref_depthwise, ref_fc, ref_output
from test_kernels_pooling_add_fc import ref_add, ref_pool

from mcuforge import kernels as K
from mcuforge.ir import Graph, Op, Tensor
from mcuforge.kernels import depthwise_conv as dw_mod
from mcuforge.kernels import fully_connected as fc_mod
from mcuforge.kernels import jit
from mcuforge.kernels import softmax as softmax_mod
from mcuforge.kernels.conv import prepare_conv2d_s8, with_ones_column
from mcuforge.kernels.depthwise_conv import prepare_depthwise_conv2d_s8
from mcuforge.kernels.fully_connected import prepare_fully_connected_s8
from mcuforge.kernels.pooling import prepare_pool_s8
from mcuforge.kernels.quant_utils import Requantizer, byte_pair_lookup, byte_pair_table
from mcuforge.runtime import execute

from cmsis_reference import INT32_MAX
from cmsis_reference_ops import c_one_over_one_plus_x_for_x_in_0_1, ref_mul, ref_softmax_row

# ---------------------------------------------------------------------------------------------------------
# Requantizer: the float64 route
# ---------------------------------------------------------------------------------------------------------


def _route_case(rng: np.random.Generator, channels: int, tie: bool, extreme: bool):
    """Per-channel parameters and an accumulator bound that keep the float route on (asserted by callers)."""
    mult = rng.integers(1 << 30, INT32_MAX, size=channels, endpoint=True)
    shift = rng.integers(-14, -1, size=channels) if not extreme else rng.choice([-1, -5, -13, 0], size=channels)
    off = int(rng.integers(-128, 128))
    lo = int(rng.integers(-128, off)) if tie and off > -128 else off
    hi = int(rng.integers(max(lo, off), 128))
    bound = rng.integers(1, 1 << 19, size=channels)
    bias = rng.integers(-(1 << 19), 1 << 19, size=channels)
    return mult, shift, off, lo, hi, bound, bias


@pytest.mark.parametrize("seed", range(16))
def test_requantizer_float_route_against_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    channels = int(rng.choice([1, 3, 16, 40, 600]))
    rows = 40 if channels == 600 else int(rng.integers(1, 3000))
    tie = seed % 2 == 0
    mult, shift, off, lo, hi, bound, bias = _route_case(rng, channels, tie, seed % 4 < 2)
    req = Requantizer(mult, shift, off, lo, hi, bias=bias, acc_bound=bound)
    assert req.float_path
    assert req.tie_correction == (tie and lo < off and bool(np.any(shift < 0)))
    acc = rng.integers(-bound, bound, size=(rows, channels), endpoint=True)
    acc[: min(rows, 4)] = np.stack([bound, -bound, bound - 1, -bound + 1])[: min(rows, 4)]  # the bound itself
    expected = ref_output(acc + bias, mult, shift, off, lo, hi)
    for dtype in (np.float32, np.float64, np.int64, np.int32):
        assert_same(req(acc.astype(dtype)), expected)
    # the same integers through the folded matmul: [acc | 1] @ [I * M | K'] (acc as "inputs" of identity weights)
    if channels <= 40:
        eye = np.eye(channels, dtype=np.int8)
        scaled = req.scaled_weights(eye)
        assert_same(req(with_ones_column(acc) @ scaled.T, scaled=True), expected)


def test_requantizer_float_route_negative_ties_each_side() -> None:
    """acc = 2y with m = 2^30 makes y exact: every negative tie of the 2^e division, with and without the
    correction (act_min below the offset or not)."""
    e = 3
    y = np.arange(-(1 << 12), 1 << 12)
    acc = (2 * y).reshape(-1, 1)
    for off, lo in ((0, -128), (0, 0), (-7, -128), (100, 99), (-128, -128)):
        req = Requantizer(np.array([1 << 30]), np.array([-e]), off, lo, 127, acc_bound=np.array([1 << 14]))
        assert req.float_path
        assert_same(req(acc.astype(np.float64)), ref_output(acc, 1 << 30, -e, off, lo, 127))


def test_requantizer_float_route_stays_off_beyond_2_53() -> None:
    """The bound argument: with |acc * m| near 2^53 the float route is off and the int64 pipeline runs."""
    big = Requantizer(np.array([INT32_MAX]), np.array([-20]), 0, -128, 127, acc_bound=np.array([1 << 22]))
    assert not big.float_path
    small = Requantizer(np.array([INT32_MAX]), np.array([-20]), 0, -128, 127, acc_bound=np.array([1 << 20]))
    assert small.float_path
    with pytest.raises(ValueError, match="no exact float route"):
        big.scaled_weights(np.ones((1, 1), np.int8))


@pytest.mark.parametrize("seed", range(8))
def test_fully_connected_folded_matmul_against_reference(seed: int, monkeypatch) -> None:
    """depth < 2 * outputs: the matmul carries the requantizer's multiply and add (asserted), at bound inputs."""
    rng = np.random.default_rng(50 + seed)
    depth, oc = int(rng.integers(1, 40)), int(rng.integers(20, 70))
    w = rng.integers(-128, 128, size=(oc, depth), dtype=np.int8)
    x = rng.integers(-128, 128, size=(int(rng.integers(1, 700)), depth), dtype=np.int8)
    x[0] = np.where(w[0] >= 0, 127, -128)  # the largest sum of row 0
    x[-1] = np.where(w[-1] >= 0, -128, 127)
    bias = rng.integers(-(1 << 20), 1 << 20, size=oc).astype(np.int32)
    mult = rng.integers(1 << 30, INT32_MAX, size=oc, endpoint=True)
    shift = rng.integers(-12, -3, size=oc)
    in_off = int(rng.integers(-127, 129))
    out_off = int(rng.integers(-128, 128))
    lo = out_off if seed % 2 else -128
    calls = []
    monkeypatch.setattr(jit, "ENABLED", False)  # the numpy route (with the compiled loops the plain matmul runs)
    monkeypatch.setattr(fc_mod, "with_ones_column", lambda rows: calls.append(1) or with_ones_column(rows))
    run = prepare_fully_connected_s8(w, bias, input_offset=in_off, output_offset=out_off, multipliers=mult,
                                     shifts=shift, act_min=lo, act_max=127)
    assert_same(run(x), ref_fc(x, w, bias, in_off, out_off, mult, shift, lo, 127))
    assert calls  # the folded matmul was taken
    assert_same(K.fully_connected_s8(x, w, bias, input_offset=in_off, output_offset=out_off, multipliers=mult,
                                     shifts=shift, act_min=lo, act_max=127),
                ref_fc(x, w, bias, in_off, out_off, mult, shift, lo, 127))


# ---------------------------------------------------------------------------------------------------------
# softmax
# ---------------------------------------------------------------------------------------------------------


def test_softmax_row_scales_against_c_text() -> None:
    rng = np.random.default_rng(3)
    totals = np.concatenate([rng.integers(1 << 19, 1 << 31, size=3000),
                             [1 << 19, (1 << 19) + 1, (1 << 20) - 1, 1 << 20, (1 << 30) - 1, 1 << 30, (1 << 31) - 1],
                             (1 << np.arange(19, 31)) + 1, (1 << np.arange(20, 31)) - 1]).astype(np.int64)
    scale, exponent = softmax_mod._row_scales(totals)
    for total, s, e in zip(totals.tolist(), scale.tolist(), exponent.tolist(), strict=True):
        headroom = 32 - total.bit_length()
        assert s == c_one_over_one_plus_x_for_x_in_0_1(((total << headroom) & 0xFFFFFFFF) - (1 << 31))
        assert e == 12 - headroom + 23


def test_softmax_reciprocal_iterates_stay_in_range_sampled() -> None:
    """The claim _row_scales rests on (checked exhaustively once): for half denominators d in [2^30, 2^31) the
    Newton iterates stay in [505290270, 2^30], so no product saturates and no sum wraps. Here every 509th d."""
    d = np.arange(1 << 30, 1 << 31, 509, dtype=np.int64)
    x = 1515870810 + ((d * -1010580540 + (1 << 30)) >> 31)
    for _ in range(3):
        assert x.min() >= 505290270 and x.max() <= 1 << 30
        residual = (1 << 29) - ((d * x + (1 << 30)) >> 31)
        x = x + 4 * ((x * residual + (1 << 30)) >> 31)
    assert x.min() >= 505290270 and x.max() <= 1 << 30


@pytest.mark.parametrize("row_size", [1, 2, 16, 77, 300])
def test_softmax_many_rows_against_loops(row_size: int) -> None:
    rng = np.random.default_rng(row_size)
    rows = (1 << 16) // row_size + 37  # more than one block
    x = rng.integers(-128, 128, size=(rows, row_size), dtype=np.int8)
    x[:5] = np.array([127, -128, 0, 5, -5], dtype=np.int8)[:, None]  # equal rows: the largest sums
    for scale in (0.02, 0.5):
        mult, shift, diff_min = K.softmax_params(scale)
        got = K.softmax_s8(x, multiplier=mult, shift=shift, diff_min=diff_min)
        sample = np.r_[0:8, rows - 8:rows, rng.integers(0, rows, size=40)]
        for i in sample:
            assert got[i].tolist() == ref_softmax_row(x[i].tolist(), mult, shift, diff_min), (scale, i)


# ---------------------------------------------------------------------------------------------------------
# byte-pair tables
# ---------------------------------------------------------------------------------------------------------


def test_byte_pair_lookup_scalar_and_operand_order() -> None:
    rng = np.random.default_rng(9)
    p = dict(a_offset=3, b_offset=-9, left_shift=24, a_multiplier=1518500250, a_shift=-2, b_multiplier=1073741824,
             b_shift=-3, output_offset=-20, output_multiplier=1717986918, output_shift=-23, act_min=-128, act_max=127)
    big = rng.integers(-128, 128, size=(4, 50, 64), dtype=np.int8)
    for a, b in ((big, np.array([[[7]]], np.int8)), (np.array([-100], np.int8), big), (big, big[:1, :1]),
                 (big[:, :1], big), (big[..., :1], big[:1])):
        assert_same(K.add_s8(a, b, **p), ref_add(a, b, p))
    mp = (5, -3, 7, 1 << 30, -8, -128, 127)
    table = byte_pair_table(
        lambda a, b, *q: np.array([ref_mul(int(u), int(v), *q) for u, v in zip(a, b, strict=True)], np.int8), mp)
    for a, b in ((big, np.int8(-3).reshape(1, 1, 1)), (np.int8(77).reshape(1), big), (big[:, :, :1], big)):
        expected = np.vectorize(lambda u, v: ref_mul(int(u), int(v), *mp))(*np.broadcast_arrays(a, b))
        assert_same(byte_pair_lookup(table, a, b), expected.astype(np.int8))


# ---------------------------------------------------------------------------------------------------------
# global average pool, prepared kernels
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("h", "w"), [(1, 1), (3, 3), (7, 5), (24, 24)])
def test_global_avgpool_one_reduction(h: int, w: int) -> None:
    rng = np.random.default_rng(h * w)
    x = rng.integers(-128, 128, size=(5, h, w, 6), dtype=np.int8)
    x[0] = 127  # the largest sums; x[1]: ties of the rounding
    x[1, ..., 0] = np.where(np.arange(h * w).reshape(h, w) % 2, 1, 0)
    for lo, hi in ((-128, 127), (-5, 40)):
        got = prepare_pool_s8("avg", (h, w, 6), (h, w), (1, 1), (0, 0), lo, hi, (1, 1))(x)
        assert_same(got, ref_pool(x, (h, w), (1, 1), (0, 0), (1, 1), lo, hi, "avg"))


def test_prepared_kernels_equal_plain_calls_for_any_batch() -> None:
    rng = np.random.default_rng(21)
    w = rng.integers(-128, 128, size=(6, 3, 3, 4), dtype=np.int8)
    wd = rng.integers(-128, 128, size=(1, 3, 3, 8), dtype=np.int8)
    bias = rng.integers(-5000, 5000, size=6).astype(np.int32)
    mult, shift = rng.integers(1 << 30, INT32_MAX, size=6), rng.integers(-12, -6, size=6)
    conv = dict(input_offset=5, output_offset=-3, multipliers=mult, shifts=shift, stride=(2, 1), padding=(1, 1))
    dw = dict(input_offset=-7, output_offset=4, multipliers=mult[:1], shifts=shift[:1], padding=(1, 1),
              depth_multiplier=2)
    run_conv = prepare_conv2d_s8((9, 7, 4), w, bias, **conv)
    run_dw = prepare_depthwise_conv2d_s8((9, 7, 4), wd, None, **dw)
    for n in (1, 3, 17):
        x = rng.integers(-128, 128, size=(n, 9, 7, 4), dtype=np.int8)
        assert_same(run_conv(x), K.conv2d_s8(x, w, bias, **conv))
        assert_same(run_dw(x), K.depthwise_conv2d_s8(x, wd, None, **dw))
    with pytest.raises(ValueError, match="prepared for int8 inputs"):
        run_conv(np.zeros((1, 9, 8, 4), np.int8))


@pytest.mark.parametrize(("c", "mult_ch", "k", "stride", "pad", "dil"), [
    (48, 1, (3, 3), (1, 1), (1, 1), (1, 1)), (60, 1, (5, 5), (2, 2), (2, 2), (1, 1)),
    (8, 6, (3, 3), (2, 1), (1, 0), (1, 1)), (50, 1, (3, 3), (1, 1), (2, 2), (2, 2)),
    (3, 1, (3, 3), (1, 2), (1, 1), (1, 1)), (130, 1, (1, 1), (1, 1), (0, 0), (1, 1)),
])
def test_depthwise_einsum_and_tap_paths_against_reference(c, mult_ch, k, stride, pad, dil, monkeypatch) -> None:
    """Both ways of summing the taps (one einsum over every window, or a pass per tap), each forced on the same
    data, against the reference loops; weights at +-127 so the sums reach their bounds."""
    rng = np.random.default_rng(c * 7 + k[0])
    oc = c * mult_ch
    x = rng.integers(-128, 128, size=(3, 9, 11, c), dtype=np.int8)
    w = rng.choice(np.array([-128, -127, 127, 3, 0], np.int8), size=(1, *k, oc))
    bias = rng.integers(-(1 << 16), 1 << 16, size=oc).astype(np.int32)
    mult = rng.integers(1 << 30, INT32_MAX, size=oc, endpoint=True)
    shift = rng.integers(-14, -6, size=oc)
    oh, ow = ((9 + 2 * pad[0] - dil[0] * (k[0] - 1) - 1) // stride[0] + 1,
              (11 + 2 * pad[1] - dil[1] * (k[1] - 1) - 1) // stride[1] + 1)
    for in_off, out_off, lo in ((128, -128, -128), (-127, 5, 5), (0, 0, -128)):
        expected = ref_depthwise(x, w, bias, in_off, out_off, mult, shift, stride, pad, dil, mult_ch, lo, 127,
                                 (oh, ow))
        for threshold in (1, 10**6):  # einsum for every layer, then for none
            monkeypatch.setattr(dw_mod, "EINSUM_MIN_CHANNELS", threshold)
            got = K.depthwise_conv2d_s8(x, w, bias, input_offset=in_off, output_offset=out_off, multipliers=mult,
                                        shifts=shift, stride=stride, padding=pad, dilation=dil,
                                        depth_multiplier=mult_ch, act_min=lo, act_max=127)
            assert_same(got, expected)


def _fc_graph(weight: np.ndarray) -> Graph:
    tensors = {
        "x": Tensor("x", (1, 4), "int8", offset=0),
        "y": Tensor("y", (1, 3), "int8", offset=4),
        "w": Tensor("w", (3, 4), "int8", data=weight),
        "b": Tensor("b", (3,), "int32", data=np.array([10, -20, 30], np.int32)),
        "m": Tensor("m", (3,), "int32", data=np.full(3, 1 << 30, np.int32)),
        "s": Tensor("s", (3,), "int32", data=np.full(3, -2, np.int32)),
    }
    op = Op("fully_connected_s8", ["x", "w", "b", "m", "s"], ["y"],
            attrs=dict(input_offset=1, output_offset=-1, act_min=-128, act_max=127))
    return Graph(tensors, [op], ["x"], ["y"], arena_bytes=8)


def test_runtime_plans_and_prepared_ops_follow_graph_edits() -> None:
    """A graph run, then edited (new constant data, new attributes, re-planned offsets): each run gives what a
    fresh graph with the edit gives, so no kept view or prepared kernel is stale."""
    rng = np.random.default_rng(4)
    w = rng.integers(-128, 128, size=(3, 4), dtype=np.int8)
    graph = _fc_graph(w)
    x = rng.integers(-128, 128, size=(5, 1, 4), dtype=np.int8)

    def fresh(g: Graph) -> np.ndarray:
        copy = Graph({k: Tensor(t.name, t.shape, t.dtype, data=None if t.data is None else t.data.copy(),
                                offset=t.offset) for k, t in g.tensors.items()},
                     [Op(o.kind, list(o.inputs), list(o.outputs), dict(o.attrs)) for o in g.ops],
                     list(g.inputs), list(g.outputs), arena_bytes=g.arena_bytes)
        return execute(copy, [x], runs=5)[0]

    first = execute(graph, [x], runs=5)[0]
    assert np.array_equal(execute(graph, [x], runs=5)[0], first)
    graph.tensors["w"].data = -w  # new constant array
    assert np.array_equal(execute(graph, [x], runs=5)[0], fresh(graph))
    graph.ops[0].attrs["output_offset"] = 7  # attribute edited in place
    assert np.array_equal(execute(graph, [x], runs=5)[0], fresh(graph))
    graph.tensors["y"].offset, graph.tensors["x"].offset = 0, 4  # re-planned
    assert np.array_equal(execute(graph, [x], runs=5)[0], fresh(graph))
    assert np.array_equal(execute(graph, [x[0]])[0], fresh(graph)[0])  # one run, its own plan


def test_runtime_plan_is_not_shared_by_concurrent_runs() -> None:
    """Runs of one graph from several threads at once: each gets its own arena (the kept plan is locked by
    the run using it), so every result is that run's own."""
    rng = np.random.default_rng(5)
    graph = _fc_graph(rng.integers(-128, 128, size=(3, 4), dtype=np.int8))
    inputs = [rng.integers(-128, 128, size=(64, 1, 4), dtype=np.int8) for _ in range(8)]
    expected = [execute(graph, [x], runs=64)[0] for x in inputs]
    results: dict[int, list[np.ndarray]] = {}

    def work(i: int) -> None:
        results[i] = [execute(graph, [inputs[(i + k) % 8]], runs=64)[0] for k in range(40)]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, outs in results.items():
        for k, out in enumerate(outs):
            assert np.array_equal(out, expected[(i + k) % 8])
