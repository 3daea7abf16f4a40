"""Every fp32 fallback op of the C runtime gives the same bytes as the host runtime: randomized cases.

The host runtime computes the C table's arithmetic ops as the C kernels do (``runtime/fp32_exact.py``:
mf_math in numpy, left-to-right float32 sums in the C loops' order); the data-movement and selection ops
are torch's copies and comparisons. Cases are built per op of ``cruntime.c_aten_ops()`` (a test fails when
the table has an op without cases here), on values of mixed magnitudes, with special values (+-0, +-inf,
NaN, subnormals, rounding halves) in some, and shapes where the summation order shows: long and odd
reductions over every dim and set of dims, keepdim both ways. All cases of a sweep are one program:

- host: the Python runtime vs the C runtime built for the host, byte for byte per case; and the Python
  runtime on two runs at once (its run axis) vs each run alone;
- board: smaller cases on QEMU cortex-m4 (FPU, newlib), cortex-m3 (soft float) and cortex-m55 vs the
  Python runtime;
- the model a user reported (Embedding -> mean over the sequence -> Linear): ``prog.run(x)`` and
  ``prog.run(x, backend="c")`` byte for byte on many inputs.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from board_sweep import BoardSweep
from torch import nn

import mcuforge
from mcuforge import cruntime
from mcuforge.ir import Tensor, TensorRef
from mcuforge.lower.fallback import aten_fp32_attrs
from mcuforge.program import deserialize
from mcuforge.runtime import execute

SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -3e-39, 0.5, -0.5, 1.5, -2.5, 8388609.0,
                     0.49999997, 88.72, -87.5, 104.1, 3.0, -3.0, 1e30, -1e30], np.float32)


def mixed(rng: np.random.Generator, shape: tuple[int, ...], specials: bool = False) -> np.ndarray:
    """Values of mixed magnitudes (1e-3 .. 1e4, both signs): sums of these round differently per order."""
    x = (rng.standard_normal(shape) * 10.0 ** rng.uniform(-3, 4, shape)).astype(np.float32)
    if specials and x.size:
        flat = x.reshape(-1)
        at = rng.choice(flat.size, size=min(flat.size, SPECIALS.size), replace=False)
        flat[at] = SPECIALS[: at.size]
    return x


def moderate(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return (rng.standard_normal(shape) * 3).astype(np.float32)


class Cases:
    """Builds the sweep: one aten_fp32 op per case, its graph inputs given as (shape, dtype, value)."""

    def __init__(self) -> None:
        self.sweep = BoardSweep()
        self.targets: set[str] = set()

    def add(self, target: str, inputs: list[tuple[np.ndarray, str]], outputs: list[tuple[tuple[int, ...], str]],
            args: list, kwargs: dict | None = None, consts: list[np.ndarray] = ()) -> None:
        case = f"c{len(self.sweep)}_{target.split('.')[1]}"
        ins = [(Tensor(f"x{i}", v.shape, dtype), v) for i, (v, dtype) in enumerate(inputs)]
        cs = [Tensor(f"k{i}", c.shape, "float32", data=c) for i, c in enumerate(consts)]
        outs = [Tensor(f"y{i}", shape, dtype) for i, (shape, dtype) in enumerate(outputs)]
        self.sweep.add(case, "aten_fp32", aten_fp32_attrs(target, args, kwargs or {}), inputs=ins, outputs=outs,
                       constants=cs, backend="fp32", scratch=False)
        self.targets.add(target)


def reduce_shape(shape: tuple[int, ...], dims: list[int] | None, keep: bool) -> tuple[int, ...]:
    rank = len(shape)
    norm = {d % rank for d in dims} if dims else set(range(rank))
    return tuple(1 if i in norm else s for i, s in enumerate(shape) if keep or i not in norm)


def dim_sets(rank: int) -> list[list[int] | None]:
    """Every non-empty set of dims (some spelled negative), and None (all dims)."""
    sets: list[list[int] | None] = [None]
    for k in range(1, rank + 1):
        for combo in itertools.combinations(range(rank), k):
            sets.append([d - rank if (d + k) % 2 else d for d in combo])
    return sets


X = TensorRef(0)


def pointwise_cases(c: Cases, rng: np.random.Generator, shape: tuple[int, ...]) -> None:
    f = ("float32",)
    unary: list[tuple[str, list, dict]] = [
        (n, [], {}) for n in ("relu", "neg", "abs", "sqrt", "rsqrt", "exp", "log", "tanh", "sigmoid", "silu",
                              "hardswish", "hardsigmoid", "gelu", "erf", "reciprocal", "floor", "ceil", "round",
                              "leaky_relu", "elu", "hardtanh")]
    unary += [("gelu", [], {"approximate": "tanh"}), ("leaky_relu", [0.3], {}), ("elu", [1.3, 1.1, 0.7], {}),
              ("hardtanh", [-0.25, 2.5], {}), ("clamp", [-1.5, 0.75], {}), ("clamp", [None, 0.5], {}),
              ("clamp", [], {"min": -2.0}), ("clamp_min", [0.25], {}), ("clamp_max", [-0.5], {})]
    for name, extra, kwargs in unary:
        for specials in (False, True):
            x = mixed(rng, shape, specials) if specials or name not in ("exp", "tanh", "sigmoid") \
                else moderate(rng, shape) * np.float32(10)
            c.add(f"aten.{name}.default", [(x, *f)], [(shape, *f)], [X, *extra], kwargs)
    for e in (0, 1, 2, 3, -1, -2, 0.5, -0.5, 4, -3, 7, 1.5, -1.3, 0.333, 2.7, 3e9):
        x = np.abs(moderate(rng, shape)) + np.float32(1e-3) if not float(e).is_integer() else moderate(rng, shape)
        c.add("aten.pow.Tensor_Scalar", [(x, *f)], [(shape, *f)], [X, e])
    c.add("aten.pow.Tensor_Scalar", [(mixed(rng, shape, True), *f)], [(shape, *f)], [X, 1.5])
    # binary: broadcasting between the two tensors, a number as other, alpha
    other = tuple(1 if rng.random() < 0.5 else d for d in shape[1:])
    for op in ("add", "sub", "mul", "div", "minimum", "maximum"):
        a, b = mixed(rng, shape, specials=True), mixed(rng, other)
        overload = "default" if op in ("minimum", "maximum") else "Tensor"
        c.add(f"aten.{op}.{overload}", [(a, *f), (b, *f)], [(shape, *f)], [X, TensorRef(1)])
        if op in ("add", "sub", "mul", "div"):
            c.add(f"aten.{op}.Scalar", [(a, *f)], [(shape, *f)], [X, 0.3])
            c.add(f"aten.{op}.Tensor", [(a, *f)], [(shape, *f)], [X, -1.7])
    for op in ("add", "sub"):
        a, b = mixed(rng, shape), mixed(rng, shape)
        c.add(f"aten.{op}.Tensor", [(a, *f), (b, *f)], [(shape, *f)], [X, TensorRef(1)], {"alpha": 0.37})
    # comparisons and where
    for op in ("gt", "ge", "lt", "le", "eq", "ne"):
        a = np.round(moderate(rng, shape))
        a.reshape(-1)[:2] = [np.nan, -0.0]
        b = np.round(moderate(rng, other))
        c.add(f"aten.{op}.Tensor", [(a, *f), (b, *f)], [(shape, "bool")], [X, TensorRef(1)])
        c.add(f"aten.{op}.Scalar", [(a, *f)], [(shape, "bool")], [X, 1.0])
    cond = rng.random(other) < 0.5
    c.add("aten.where.self", [(cond, "bool"), (mixed(rng, shape), *f), (mixed(rng, (shape[-1],)), *f)],
          [(shape, *f)], [X, TensorRef(1), TensorRef(2)])


def reduction_cases(c: Cases, rng: np.random.Generator, shapes: list[tuple[int, ...]], every_set: bool) -> None:
    f = ("float32",)
    for shape in shapes:
        rank = len(shape)
        sets = dim_sets(rank) if every_set else [None, [int(rng.integers(-rank, rank))]]
        for dims, keep in itertools.product(sets, (False, True)):
            out = reduce_shape(shape, dims, keep)
            x = mixed(rng, shape, specials=bool(rng.random() < 0.15))
            c.add("aten.sum.dim_IntList", [(x, *f)], [(out, *f)], [X, dims, keep])
            c.add("aten.mean.dim", [(x, *f)], [(out, *f)], [X, dims, keep])
            c.add("aten.amax.default", [(x, *f)], [(out, *f)], [X, dims or [], keep])
            c.add("aten.amin.default", [(x, *f)], [(out, *f)], [X, dims or [], keep])
            y = mixed(rng, shape) + np.float32(rng.uniform(-50, 50))
            c.add("aten.var.correction", [(y, *f)], [(out, *f)], [X, dims], {"correction": int(rng.integers(0, 3)),
                                                                                "keepdim": keep})
            c.add("aten.std.correction", [(y, *f)], [(out, *f)], [X, dims], {"keepdim": keep})
            c.add("aten.var.dim", [(y, *f)], [(out, *f)], [X, dims, bool(rng.random() < 0.5), keep])
            c.add("aten.std.dim", [(y, *f)], [(out, *f)], [X, dims, True, keep])
        for d in [None, *range(-rank, rank)] if every_set else [None, rank - 1]:
            keep = d is not None and bool(rng.random() < 0.5)
            out = reduce_shape(shape, None if d is None else [d], keep)
            x = np.round(moderate(rng, shape)) if rng.random() < 0.5 else mixed(rng, shape, True)  # ties, NaN
            for op in ("argmax", "argmin"):
                c.add(f"aten.{op}.default", [(x, *f)], [(out, "int64")], [X] if d is None else [X, d, keep])
        for d in range(-rank, rank) if every_set else [rank - 1]:
            x = mixed(rng, shape) * np.float32(1e-2)
            c.add("aten._softmax.default", [(x, *f)], [(shape, *f)], [X, d, False])
            c.add("aten.softmax.int", [(x, *f)], [(shape, *f)], [X, d])


def norm_cases(c: Cases, rng: np.random.Generator, shapes: list[tuple[int, ...]]) -> None:
    f = ("float32",)
    for shape in shapes:
        rank = len(shape)
        for k in range(1, rank + 1):
            normalized = list(shape[rank - k:])
            w, b = moderate(rng, tuple(normalized)), moderate(rng, tuple(normalized))
            x = mixed(rng, shape) + np.float32(rng.uniform(-100, 100))
            c.add("aten.layer_norm.default", [(x, *f)], [(shape, *f)], [X, normalized, TensorRef(1), TensorRef(2),
                                                                          1e-5, False], consts=[w, b])
            c.add("aten.layer_norm.default", [(x, *f)], [(shape, *f)], [X, normalized], {"eps": 1e-3})
            stats = (*shape[:rank - k], *(1,) * k)
            c.add("aten.native_layer_norm.default", [(x, *f)], [(shape, *f), (stats, *f), (stats, *f)],
                  [X, normalized, TensorRef(1), None, 1e-5], consts=[w])
    for n, ch, groups, spatial in [(1, 6, 3, (5, 7)), (2, 8, 2, (9,)), (1, 4, 4, (3, 3)), (2, 6, 1, ())]:
        shape = (n, ch, *spatial)
        hw = int(np.prod(spatial, dtype=np.int64))
        x = mixed(rng, shape) + np.float32(rng.uniform(-10, 10))
        w, b = moderate(rng, (ch,)), moderate(rng, (ch,))
        c.add("aten.group_norm.default", [(x, *f)], [(shape, *f)], [X, groups, TensorRef(1), TensorRef(2), 1e-5,
                                                                      False], consts=[w, b])
        c.add("aten.group_norm.default", [(x, *f)], [(shape, *f)], [X, groups])
        c.add("aten.native_group_norm.default", [(x, *f)], [(shape, *f), ((n, groups), *f), ((n, groups), *f)],
              [X, None, TensorRef(1), n, ch, hw, groups, 1e-4], consts=[b])


def movement_cases(c: Cases, rng: np.random.Generator) -> None:
    f = ("float32",)
    x = mixed(rng, (2, 3, 4), True)
    for target, args, out in [
        ("aten.view.default", [X, [6, 4]], (6, 4)), ("aten.reshape.default", [X, [4, -1]], (4, 6)),
        ("aten._unsafe_view.default", [X, [24]], (24,)), ("aten.clone.default", [X], (2, 3, 4)),
        ("aten.contiguous.default", [X], (2, 3, 4)), ("aten.alias.default", [X], (2, 3, 4)),
        ("aten.flatten.using_ints", [X, 1, 2], (2, 12)), ("aten.unsqueeze.default", [X, 1], (2, 1, 3, 4)),
        ("aten.permute.default", [X, [2, 0, 1]], (4, 2, 3)), ("aten.expand.default", [X, [3, -1, 3, 4]], (3, 2, 3, 4)),
    ]:
        c.add(target, [(x, *f)], [(out, *f)], args)
    s = mixed(rng, (2, 1, 4, 1))
    c.add("aten.squeeze.dim", [(s, *f)], [((2, 4, 1), *f)], [X, 1])
    c.add("aten.squeeze.dims", [(s, *f)], [((2, 4), *f)], [X, [1, 3]])
    c.add("aten.cat.default", [(x, *f), (mixed(rng, (2, 5, 4)), *f)], [((2, 8, 4), *f)], [[X, TensorRef(1)], 1])
    weight = mixed(rng, (50, 16), True)
    for dtype in ("int64", "int32"):
        idx = rng.integers(0, 50, (3, 7)).astype(dtype)
        c.add("aten.embedding.default", [(idx, dtype)], [((3, 7, 16), *f)], [TensorRef(1), X], consts=[weight])


def resize_cases(c: Cases, rng: np.random.Generator) -> None:
    f = ("float32",)
    for n, ch, h, w in [(1, 2, 5, 7), (2, 1, 3, 3), (1, 3, 8, 4)]:
        x = mixed(rng, (n, ch, h, w), True)
        for size, factors in [((11, 5), None), ((h, 2 * w), None), ((1, 1), None), (None, [1.5, 2.5]),
                              (None, [0.5, 2.0])]:
            out = size or (int(h * factors[0]), int(w * factors[1]))
            c.add("aten.upsample_nearest2d.vec", [(x, *f)], [((n, ch, *out), *f)], [X, size, factors])
            for align in (False, True):
                c.add("aten.upsample_bilinear2d.vec", [(x, *f)], [((n, ch, *out), *f)], [X, size, align, factors])


def build(host: bool) -> Cases:
    rng = np.random.default_rng(2024 if host else 2025)
    c = Cases()
    pointwise_cases(c, rng, (3, 67, 5) if host else (2, 7, 5))
    long = [(4097,), (3, 1001), (5, 129, 7), (2, 3, 17, 11)] if host else [(257,), (3, 33, 5)]
    reduction_cases(c, rng, long, every_set=host)
    norm_cases(c, rng, [(3, 129, 7), (2, 1025)] if host else [(2, 9, 5)])
    movement_cases(c, rng)
    resize_cases(c, rng)
    return c


@pytest.fixture(scope="module")
def host_cases() -> Cases:
    return build(host=True)


def test_every_c_fp32_op_has_cases(host_cases):
    assert host_cases.targets == set(cruntime.c_aten_ops()), \
        sorted(set(cruntime.c_aten_ops()) ^ host_cases.targets)
    assert build(host=False).targets == set(cruntime.c_aten_ops())


def test_python_and_host_c_same_bytes(host_cases):
    sweep = host_cases.sweep
    program = sweep.program("cortex-m55")
    expected = execute(deserialize(program), sweep.values)
    got, _ = cruntime.run_program(program, sweep.values)
    sweep._assert_same("host C", expected, got)
    assert len(sweep) > 500


def test_python_runtime_runs_axis(host_cases):
    """Two runs at once (the run axis every fp32 op carries) give each run's own bytes."""
    sweep = host_cases.sweep
    graph = deserialize(sweep.program("cortex-m55"))
    second = [np.ascontiguousarray(v.reshape(-1)[::-1].reshape(v.shape)) for v in sweep.values]
    both = execute(graph, [np.stack([a, b]) for a, b in zip(sweep.values, second, strict=True)], runs=2)
    sweep._assert_same("run 0 of 2", execute(graph, sweep.values), [o[0] for o in both])
    sweep._assert_same("run 1 of 2", execute(graph, second), [o[1] for o in both])


def test_sums_are_left_to_right():
    """The order is the contract: 2^24 followed by ones stays 2^24 in float32 only when summed left to
    right (each 2^24 + 1 rounds back to 2^24, ties to even); the mean divides that sum by N."""
    c = Cases()
    x = np.ones((1, 101), np.float32)
    x[0, 0] = 2.0**24
    c.add("aten.sum.dim_IntList", [(x, "float32")], [((1,), "float32")], [X, [1]])
    c.add("aten.mean.dim", [(x, "float32")], [((1,), "float32")], [X, [-1]])
    program = c.sweep.program("cortex-m55")
    py = execute(deserialize(program), c.sweep.values)
    got, _ = cruntime.run_program(program, c.sweep.values)
    c.sweep._assert_same("host C", py, got)
    assert py[0][0] == np.float32(2.0**24)
    assert py[1][0] == np.float32(2.0**24) / np.float32(101)


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m3", "cortex-m55"])
def test_board_same_bytes_as_python(target):
    """newlib, the FPU (m4), soft float (m3) and the MVE core (m55) give the Python runtime's bytes for every case."""
    c = build(host=False)
    c.sweep.assert_same_on_board(target)


class EmbeddingMean(nn.Module):
    """The reported model: the mean over the sequence stays fp32; the embedding (embedding_s8) and the Linear are
    int8."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        self.fc = nn.Linear(16, 4)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.fc(self.emb(idx).mean(1))


def test_embedding_mean_linear_python_equals_c():
    torch.manual_seed(0)
    model = EmbeddingMean().eval()
    example = (torch.randint(0, 50, (1, 12)),)
    calibration = [(torch.randint(0, 50, (1, 12)),) for _ in range(20)]
    prog = mcuforge.compile(model, example, calibration=calibration, progress=False)
    targets = {op.attrs.get("target") for op in prog.graph.ops if op.kind == "aten_fp32"}
    assert "aten.mean.dim" in targets, targets  # the embedding is int8 now (embedding_s8), the mean stays fp32
    assert "embedding_s8" in {op.kind for op in prog.graph.ops}
    rng = np.random.default_rng(7)
    # 300 inputs as one batch (the runs computed together on both backends), then some one at a time
    batch = torch.from_numpy(rng.integers(0, 50, (300, 12)))
    (a,), (b,) = prog.run(batch), prog.run(batch, backend="c")  # one output
    assert a.shape == b.shape == (300, 4) and a.dtype == b.dtype == np.float32
    differ = np.flatnonzero((a.view(np.uint32) != b.view(np.uint32)).any(axis=1))
    assert differ.size == 0, f"{differ.size} of 300 inputs differ, e.g. {batch[differ[:3]].tolist()}"
    for i in range(20):
        x = batch[i:i + 1]
        assert prog.run(x)[0].tobytes() == prog.run(x, backend="c")[0].tobytes() == a[i:i + 1].tobytes(), x.tolist()
