"""TOSA lowering: each int8 op kind, lowered alone, runs on tosa-tools' reference model and gives the
host kernels' bytes (every kind, average pooling included: see TOLERANCE).

Single-op graphs are built directly (no torch compile: cheap), with parameters drawn the way the
lowering draws them (CMSIS-NN multipliers and shifts), and also every op of the DS-CNN and
custom-fallback zoo programs is checked on the intermediate values of a real run.
"""

from __future__ import annotations

import numpy as np
import pytest

from mcuforge.ir import Graph, Op, QParams, Tensor
from mcuforge.kernels.quant_utils import quantize_multiplier
from mcuforge.plan import plan_arena
from mcuforge.runtime import execute
from mcuforge.tosa import lower_ops, run_reference, unsupported_reason

from conftest import compiled, op_outputs

#: Ops whose TOSA definition gives CMSIS-NN's bytes; every other lowered kind is listed in TOLERANCE.
EXACT = {"conv2d_s8", "depthwise_conv2d_s8", "fully_connected_s8", "add_s8", "mul_s8", "batch_matmul_s8",
         "maxpool_s8", "clamp_s8", "lut_s8", "pad_s8", "concat_s8", "reshape", "transpose", "slice", "avgpool_s8",
         "maximum_s8", "minimum_s8"}
#: Kinds allowed to differ, with their bound in LSB: none. avgpool_s8 is exact too although TOSA divides by a
#: reciprocal multiplier (reciprocal_scale: ((2^30 + 1) << k) / count, then apply_scale_32) and CMSIS-NN
#: rounds the exact mean half away from zero: the "+1" makes negative ties round away from zero, and the
#: multiplier's error (< 2^-29 relative, < 2^-22 LSB for an int8 mean) never reaches the 1/(2 count) >= 2^-17
#: that separates a non-tie from a tie for count <= 65536 (checked below, ties included).
TOLERANCE: dict[str, int] = {}


def _act(name: str, shape: tuple[int, ...], layout: str = "nhwc") -> Tensor:
    return Tensor(name, shape, "int8", QParams(0.05, 3), layout=layout)


def _const(name: str, data: np.ndarray) -> Tensor:
    return Tensor(name, data.shape, str(data.dtype), data=data)


def _requant(rng: np.random.Generator, n: int, lo: float = 1e-4, hi: float = 2e-2) -> tuple[np.ndarray, np.ndarray]:
    pairs = [quantize_multiplier(float(s)) for s in rng.uniform(lo, hi, n)]
    return np.array([m for m, _ in pairs], np.int32), np.array([s for _, s in pairs], np.int32)


def single_op_graphs() -> dict[str, Graph]:
    rng = np.random.default_rng(7)
    graphs: dict[str, Graph] = {}

    def graph(name: str, op: Op, tensors: list[Tensor], inputs: list[str]) -> None:
        graphs[name] = Graph({t.name: t for t in tensors}, [op], inputs, list(op.outputs))
        plan_arena(graphs[name])

    x = _act("x", (1, 9, 7, 4))
    w = rng.integers(-127, 128, (6, 3, 3, 4)).astype(np.int8)
    m, s = _requant(rng, 6)
    conv_attrs = {"input_offset": -3, "output_offset": -7, "stride": [2, 2], "padding": [1, 1],
                  "dilation": [1, 1], "act_min": -100, "act_max": 127}
    graph("conv2d_s8", Op("conv2d_s8", ["x", "w", "b", "m", "s"], ["y"], conv_attrs),
          [x, _const("w", w), _const("b", rng.integers(-5000, 5000, 6).astype(np.int32)), _const("m", m),
           _const("s", s), _act("y", (1, 5, 4, 6))], ["x"])
    # CMSIS-NN's floor output size drops the last input row: the lowering crops it (SLICE) for TOSA.
    graph("conv2d_s8_crop", Op("conv2d_s8", ["x", "w", "", "m", "s"], ["y"], {**conv_attrs, "padding": [0, 0]}),
          [x, _const("w", w), _const("m", m), _const("s", s), _act("y", (1, 4, 3, 6))], ["x"])
    wg = rng.integers(-127, 128, (6, 3, 3, 2)).astype(np.int8)  # 2 groups of 2 input channels
    graph("conv2d_s8_grouped", Op("conv2d_s8", ["x", "w", "b", "m", "s"], ["y"], conv_attrs),
          [x, _const("w", wg), _const("b", rng.integers(-5000, 5000, 6).astype(np.int32)), _const("m", m),
           _const("s", s), _act("y", (1, 5, 4, 6))], ["x"])
    wd = rng.integers(-127, 128, (1, 3, 3, 8)).astype(np.int8)
    md, sd = _requant(rng, 8)
    graph("depthwise_conv2d_s8", Op("depthwise_conv2d_s8", ["x", "w", "b", "m", "s"], ["y"], {
        "input_offset": 5, "output_offset": 2, "stride": [1, 1], "padding": [1, 1], "dilation": [1, 1],
        "depth_multiplier": 2, "act_min": -128, "act_max": 127}),
        [x, _const("w", wd), _const("b", rng.integers(-900, 900, 8).astype(np.int32)), _const("m", md),
         _const("s", sd), _act("y", (1, 9, 7, 8))], ["x"])
    wf = rng.integers(-127, 128, (10, 28)).astype(np.int8)
    mf, sf = _requant(rng, 10)
    graph("fully_connected_s8", Op("fully_connected_s8", ["x", "w", "b", "m", "s"], ["y"], {
        "input_offset": -3, "output_offset": 11, "act_min": 0, "act_max": 127}),
        [_act("x", (2, 28), "plain"), _const("w", wf), _const("b", rng.integers(-900, 900, 10).astype(np.int32)),
         _const("m", mf), _const("s", sf), _act("y", (2, 10), "plain")], ["x"])
    (am, ash), (bm, bsh), (om, osh) = (quantize_multiplier(v) for v in (0.31, 0.47, 1.3 / (1 << 20) * 100))
    graph("add_s8", Op("add_s8", ["a", "b"], ["y"], {
        "a_offset": 3, "a_multiplier": am, "a_shift": ash, "b_offset": -9, "b_multiplier": bm, "b_shift": bsh,
        "left_shift": 20, "output_offset": -4, "output_multiplier": om, "output_shift": osh,
        "act_min": -128, "act_max": 127}), [_act("a", (1, 5, 5, 8)), _act("b", (1, 5, 5, 8)), _act("y", (1, 5, 5, 8))],
        ["a", "b"])
    mm, ms = quantize_multiplier(0.0021)
    graph("mul_s8", Op("mul_s8", ["a", "b"], ["y"], {
        "a_offset": 3, "b_offset": -9, "output_offset": 1, "output_multiplier": mm, "output_shift": ms,
        "act_min": -128, "act_max": 127}), [_act("a", (1, 5, 5, 8)), _act("b", (1, 1, 1, 8)), _act("y", (1, 5, 5, 8))],
        ["a", "b"])
    for kind, b_shape in (("maximum_s8", (1, 5, 5, 8)), ("minimum_s8", (1, 5, 1, 8))):  # minimum: broadcast
        graph(kind, Op(kind, ["a", "b"], ["y"], {}), [_act("a", (1, 5, 5, 8)), _act("b", b_shape),
                                                      _act("y", (1, 5, 5, 8))], ["a", "b"])
    bm_, bs_ = quantize_multiplier(0.0007)
    graph("batch_matmul_s8", Op("batch_matmul_s8", ["a", "b"], ["y"], {
        "lhs_offset": 3, "rhs_offset": -2, "output_offset": 5, "output_multiplier": bm_, "output_shift": bs_,
        "act_min": -128, "act_max": 127, "adj_x": 0, "adj_y": 1}),
        [_act("a", (2, 4, 16), "plain"), _act("b", (2, 6, 16), "plain"), _act("y", (2, 4, 6), "plain")], ["a", "b"])
    pool = {"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1], "act_min": -120, "act_max": 120,
            "output_hw": [5, 4]}
    for kind in ("avgpool_s8", "maxpool_s8"):
        graph(kind, Op(kind, ["x"], ["y"], pool), [x, _act("y", (1, 5, 4, 4))], ["x"])
    graph("avgpool_s8_global", Op("avgpool_s8", ["x"], ["y"], {
        "kernel": [9, 7], "stride": [9, 7], "padding": [0, 0], "act_min": -128, "act_max": 127, "output_hw": [1, 1]}),
        [x, _act("y", (1, 4), "plain")], ["x"])
    graph("clamp_s8", Op("clamp_s8", ["x"], ["y"], {"act_min": -20, "act_max": 30}), [x, _act("y", x.shape)], ["x"])
    graph("lut_s8", Op("lut_s8", ["x", "t"], ["y"], {}),
          [x, _const("t", rng.integers(-128, 128, 256).astype(np.int8)), _act("y", x.shape)], ["x"])
    graph("pad_s8", Op("pad_s8", ["x"], ["y"], {"pads": [0, 0, 1, 2, 0, 1, 0, 0], "pad_value": 3}),
          [x, _act("y", (1, 12, 8, 4))], ["x"])
    graph("concat_s8", Op("concat_s8", ["x", "x2"], ["y"], {"axis": 3}),
          [x, _act("x2", (1, 9, 7, 2)), _act("y", (1, 9, 7, 6))], ["x", "x2"])
    graph("reshape", Op("reshape", ["x"], ["y"], {}), [x, _act("y", (1, 252), "plain")], ["x"])
    graph("transpose", Op("transpose", ["x"], ["y"], {"perm": [0, 3, 1, 2]}),
          [x, _act("y", (1, 4, 9, 7), "plain")], ["x"])
    graph("slice", Op("slice", ["x"], ["y"], {"begin": [0, 2, 1, 1], "end": [1, 7, 6, 3], "step": [1, 1, 1, 1]}),
          [x, _act("y", (1, 5, 5, 2))], ["x"])
    return graphs


GRAPHS = single_op_graphs()


def _inputs(graph: Graph, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(-128, 128, graph.tensors[n].shape).astype(np.int8) for n in graph.inputs]


def test_every_lowered_kind_is_checked():
    kinds = {g.ops[0].kind for g in GRAPHS.values()}
    assert kinds == EXACT | set(TOLERANCE)


@pytest.mark.parametrize("name", list(GRAPHS))
def test_single_op_matches_host_kernel(name):
    graph = GRAPHS[name]
    op = graph.ops[0]
    assert unsupported_reason(graph, op) is None
    tosa = lower_ops(graph, [0])
    for seed in range(3):
        xs = _inputs(graph, seed)
        expected = execute(graph, xs)
        got = run_reference(tosa.flatbuffer, xs)
        for e, g in zip(expected, got, strict=True):
            assert g.dtype == e.dtype and g.shape == e.shape
            diff = np.abs(g.astype(np.int32) - e.astype(np.int32))
            assert diff.max() <= TOLERANCE.get(op.kind, 0), (name, diff.max(), int((diff > 0).sum()))


def test_reference_model_run_isolated_reports_a_bad_graph():
    """A graph the reference model rejects raises (in a child process: a crash cannot take pytest down)."""
    from mcuforge.tosa import TosaReferenceError

    with pytest.raises(TosaReferenceError):
        run_reference(b"not a flatbuffer", [], isolated=True)


@pytest.mark.parametrize("name", ["ds_cnn", "custom_fallback"])
def test_zoo_ops_match_host_kernels(name):
    """Every lowerable op of a zoo program, on the values a real run feeds it: the same bytes (avg pool:
    within 1 LSB)."""
    _model, _example, prog = compiled(name)
    graph = prog.graph
    values = op_outputs(graph, _inputs(graph, 0))
    checked = 0
    for i, op in enumerate(graph.ops):
        if unsupported_reason(graph, op):
            continue
        tosa = lower_ops(graph, [i])
        got = run_reference(tosa.flatbuffer, [values[n] for n in tosa.inputs])
        for n, g in zip(tosa.outputs, got, strict=True):
            diff = np.abs(g.astype(np.int32) - values[n].astype(np.int32))
            assert diff.max() <= TOLERANCE.get(op.kind, 0), (i, op.kind, diff.max())
        checked += 1
    assert checked >= 8


def test_avgpool_ties_round_like_cmsis():
    """Window sums at exact ties (+-0.5, +-1.5 LSB) and the largest counts: TOSA's reciprocal division
    rounds like CMSIS-NN's (half away from zero)."""
    t = {"x": _act("x", (1, 2, 2, 8)), "y": _act("y", (1, 1, 1, 8))}
    g = Graph(t, [Op("avgpool_s8", ["x"], ["y"], {"kernel": [2, 2], "stride": [2, 2], "padding": [0, 0],
                                                  "act_min": -128, "act_max": 127, "output_hw": [1, 1]})], ["x"], ["y"])
    plan_arena(g)
    x = np.zeros((1, 2, 2, 8), np.int8)
    x[0, 0, 0] = [-2, 2, -6, 6, -1, 1, -3, 3]
    x[0, 1, 1] = [0, 0, 0, 0, -128, 127, -127, -128]
    np.testing.assert_array_equal(run_reference(lower_ops(g, [0]).flatbuffer, [x])[0], execute(g, [x])[0])
    big = {"x": _act("x", (1, 256, 256, 2)), "y": _act("y", (1, 1, 1, 2))}
    g = Graph(big, [Op("avgpool_s8", ["x"], ["y"], {"kernel": [256, 256], "stride": [1, 1], "padding": [0, 0],
                                                    "act_min": -128, "act_max": 127, "output_hw": [1, 1]})],
              ["x"], ["y"])
    plan_arena(g)
    tosa = lower_ops(g, [0])
    rng = np.random.default_rng(1)
    for lo, hi in ((-128, 128), (-128, -100), (100, 128)):
        x = rng.integers(lo, hi, (1, 256, 256, 2)).astype(np.int8)
        np.testing.assert_array_equal(run_reference(tosa.flatbuffer, [x])[0], execute(g, [x])[0])
