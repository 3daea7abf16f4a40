"""Patch-based execution (mcuforge.patches) and in-place depthwise convolution (mcuforge.plan.choose_in_place): a
patched or in-place program gives the plain program's bytes -- in Python, the host C runtime and on the boards
(one QEMU boot per target for every case) -- over random splits and grids (tiles that do not divide the map,
stride 2 and padding inside the chain, a residual add, padded pools, a dilated convolution) and depthwise
geometries (strided, dilated, odd channel counts), and the compiler's choice meets a RAM budget or leaves the
program whole."""

from __future__ import annotations

import warnings
from html import escape

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812 - torch's own convention
from board_sweep import BoardSweep
from torch import nn

from mcuforge import api, cruntime
from mcuforge.patches import chain_output, choose, copy_graph, patch_graph
from mcuforge.plan import choose_in_place, in_place_legal, in_place_scratch, lifetimes, plan_arena
from mcuforge.program import serialize
from mcuforge.report import memory_summary
from mcuforge.runtime import execute


class Stem(nn.Module):
    """Stride 2 with padding, a depthwise-pointwise residual block, padded max and average pools."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pw = nn.Conv2d(8, 8, 1)
        self.c2 = nn.Conv2d(8, 12, 3, stride=2, padding=1)
        self.fc = nn.Linear(12, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu6(self.c1(x))
        y = y + F.relu(self.pw(F.relu6(self.dw(y))))
        y = F.max_pool2d(y, 3, stride=1, padding=1)
        y = F.avg_pool2d(F.relu(self.c2(y)), 3, stride=1, padding=1, count_include_pad=False)
        return self.fc(y.mean((2, 3)))


class Wide(nn.Module):
    """Full-resolution maps that dominate the arena (what patches are for), a dilated 5x5 conv, a 2x2 pool."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(3, 24, 3, padding=1)
        self.c2 = nn.Conv2d(24, 24, 5, padding=4, dilation=2, groups=24)
        self.c3 = nn.Conv2d(24, 8, 3, stride=2, padding=1)
        self.fc = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.c2(F.relu(self.c1(x))))
        y = F.max_pool2d(F.relu(self.c3(y)), 2)
        return self.fc(y.mean((2, 3)))


class Depthwise(nn.Module):
    """conv -> depthwise (the geometry under test) -> 1x1 conv: the depthwise's input dies at it."""

    def __init__(self, channels: int, kernel: int, stride: int, padding: int, dilation: int) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(3, channels, 1)
        self.dw = nn.Conv2d(channels, channels, kernel, stride, padding, dilation, groups=channels)
        self.c2 = nn.Conv2d(channels, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c2(F.relu6(self.dw(F.relu(self.c1(x)))))


# (channels, kernel, stride, padding, dilation, input H x W): same size, strided, dilated, odd channel counts
# (the DSP path's groups of 4 and MVE's of 8 with a remainder), no padding
DEPTHWISE = [(8, 3, 1, 1, 1, (11, 9)), (5, 3, 2, 1, 1, (13, 10)), (12, 5, 1, 4, 2, (9, 12)), (16, 3, 2, 0, 1, (12, 7)),
             (3, 3, 1, 1, 1, (1, 6))]


def _in_place(prog: api.Program) -> object:
    """The program's graph with its depthwise op written in place (a copy, planned)."""
    graph = copy_graph(prog.graph)
    i = next(i for i, op in enumerate(graph.ops) if op.kind == "depthwise_conv2d_s8")
    assert in_place_legal(graph, i, lifetimes(graph), set(graph.outputs))
    op = graph.ops[i]
    op.in_place, op.scratch_bytes = True, max(op.scratch_bytes, in_place_scratch(graph, op))
    plan_arena(graph)
    assert graph.tensors[op.outputs[0]].offset == graph.tensors[op.inputs[0]].offset  # written over its input
    return graph


@pytest.fixture(scope="module")
def depthwise() -> list[tuple[str, api.Program]]:
    torch.manual_seed(1)
    return [(f"dw_c{c}_k{k}_s{s}_p{p}_d{d}_{h}x{w}", _compile(Depthwise(c, k, s, p, d), (1, 3, h, w)))
            for c, k, s, p, d, (h, w) in DEPTHWISE]


def _wide() -> nn.Module:
    torch.manual_seed(7)  # the same weights every time: programs compared byte for byte
    return Wide()


def _compile(model: nn.Module, shape: tuple[int, ...], target: str = "cortex-m4", **kw: object) -> api.Program:
    torch.manual_seed(0)
    example = (torch.randn(*shape),)
    calibration = [(torch.randn(*shape),) for _ in range(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return api.compile(model.eval(), example, calibration=calibration, target=target, progress=False, **kw)


@pytest.fixture(scope="module")
def programs() -> dict[str, api.Program]:
    torch.manual_seed(0)
    return {"stem": _compile(Stem(), (1, 3, 23, 19)), "wide": _compile(Wide(), (1, 3, 21, 26))}


def _input(graph, rng: np.random.Generator) -> list[np.ndarray]:
    return [rng.integers(-128, 128, graph.tensors[n].shape, dtype=np.int8) for n in graph.inputs]


def _cases(programs: dict[str, api.Program], count: int, seed: int):
    """(name, whole graph, patched graph (planned), inputs): random splits, grids and inputs."""
    rng = np.random.default_rng(seed)
    for k in range(count):
        name = ("stem", "wide")[k % 2]
        graph = programs[name].graph
        splits = [s for s in range(1, len(graph.ops)) if chain_output(graph, s)]
        split = int(rng.choice(splits))
        _, h, w, _ = graph.tensors[chain_output(graph, split)].shape
        grid = (int(rng.integers(1, min(h, 7) + 1)), int(rng.integers(1, min(w, 7) + 1)))
        patched = patch_graph(graph, split, grid)
        plan_arena(patched)
        yield f"{name}_s{split}_g{grid[0]}x{grid[1]}_{k}", graph, patched, _input(graph, rng)


def test_chain_splits(programs):
    stem = programs["stem"].graph
    splits = [s for s in range(1, len(stem.ops)) if chain_output(stem, s)]
    # inside the residual block two tensors cross (the block's input and the branch): no chain ends there
    assert splits[0] == 1 and 2 not in splits and 3 not in splits and 4 in splits
    assert chain_output(stem, len(stem.ops) - 2) and chain_output(stem, len(stem.ops) - 1) is None  # mean: (1, C)
    with pytest.raises(ValueError, match="not a chain"):
        patch_graph(stem, 2, (2, 2))


def test_patched_equals_whole_python_and_host_c(programs):
    """Python (patched) == Python (whole) == host C (patched), over 16 random splits and grids."""
    for name, graph, patched, values in _cases(programs, 16, seed=1):
        whole = execute(graph, values)
        got = execute(patched, values)
        c_got, _ = cruntime.LoadedProgram(serialize(patched)).run(values)
        for w, p, c in zip(whole, got, c_got, strict=True):
            assert w.tobytes() == p.tobytes(), f"{name}: Python patched != whole"
            assert w.tobytes() == c.tobytes(), f"{name}: host C patched != whole"


def test_in_place_depthwise_equals_out_of_place_python_and_host_c(depthwise):
    """Each depthwise geometry written over its input (at its first byte: ``_in_place``): Python and host C give
    the out-of-place bytes."""
    rng = np.random.default_rng(4)
    for name, prog in depthwise:
        graph = _in_place(prog)
        for _ in range(2):
            values = _input(graph, rng)
            whole = execute(prog.graph, values)
            got = execute(graph, values)
            c_got, _ = cruntime.LoadedProgram(serialize(graph)).run(values)
            for w, p, c in zip(whole, got, c_got, strict=True):
                assert w.tobytes() == p.tobytes() and w.tobytes() == c.tobytes(), name


def test_in_place_depthwise_legality_and_loader(depthwise):
    """An output larger than the input (padding 2 on a 3x3) is never in place; the C loader refuses an in-place
    depthwise without the scratch of its channel buffer (which the planner gives every op it marks, a re-targeted
    one included)."""
    prog = _compile(Depthwise(4, 3, 1, 2, 1), (1, 3, 6, 6))
    g = prog.graph
    i = next(i for i, op in enumerate(g.ops) if op.kind == "depthwise_conv2d_s8")
    assert not in_place_legal(g, i, lifetimes(g), set(g.outputs))
    graph = _in_place(depthwise[0][1])
    op = next(op for op in graph.ops if op.in_place)
    op.scratch_bytes = 0
    plan_arena(graph)
    assert op.scratch_bytes == in_place_scratch(graph, op)
    op.scratch_bytes, op.scratch_offset = 0, -1  # after planning: the planner gives it back
    with pytest.raises(cruntime.CRuntimeError, match="SHAPE"):
        cruntime.LoadedProgram(serialize(graph))


def test_choose_in_place_only_where_it_lowers_the_arena(depthwise):
    from conftest import compiled

    _model, _example, prog = compiled("mobilenet_v2")
    graph = copy_graph(prog.graph)
    n = choose_in_place(graph)
    assert n >= 1 and graph.arena_bytes < prog.arena_bytes
    assert sum(op.in_place for op in graph.ops) == n  # the others are as they were
    values = _input(graph, np.random.default_rng(5))
    assert [a.tobytes() for a in execute(graph, values)] == [a.tobytes() for a in execute(prog.graph, values)]
    # a budget met by writing in place alone: no patches, no extra MACs
    fitted, plan = choose(prog.graph, ram_budget=graph.arena_bytes)
    assert plan.split == 0 and plan.in_place == n and fitted.arena_bytes <= graph.arena_bytes
    assert prog.graph.arena_bytes == prog.arena_bytes and not any(op.in_place for op in prog.graph.ops)  # untouched


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
def test_patched_and_in_place_on_board(programs, depthwise, target):
    """The same random patch programs and in-place depthwise programs on the board (one boot): board == host
    Python == the plain program."""
    sweep = BoardSweep()
    for name, graph, patched, values in _cases(programs, 10, seed=2):
        for w, p in zip(execute(graph, values), execute(patched, values), strict=True):
            assert w.tobytes() == p.tobytes(), name
        sweep.add_graph(name, patched, values)
    rng = np.random.default_rng(6)
    for name, prog in depthwise:
        graph, values = _in_place(prog), _input(prog.graph, rng)
        for w, p in zip(execute(prog.graph, values), execute(graph, values), strict=True):
            assert w.tobytes() == p.tobytes(), name
        sweep.add_graph(name, graph, values, keep_scratch=True)
    program = sweep.program(target)
    from mcuforge.program import deserialize

    merged = deserialize(program)
    in_place = [op for op in merged.ops if op.kind == "depthwise_conv2d_s8"
                and merged.tensors[op.outputs[0]].offset == merged.tensors[op.inputs[0]].offset]
    assert len(in_place) == len(DEPTHWISE)  # the board runs them in place
    sweep.assert_same_on_board(target)


def test_patch_arithmetic(programs):
    """Per patch one insert_tile; the chain's full-resolution intermediates are gone from the patched graph."""
    graph = programs["wide"].graph
    split = max(s for s in range(1, len(graph.ops)) if chain_output(graph, s))
    patched = patch_graph(graph, split, (3, 4))
    assert sum(op.kind == "insert_tile" for op in patched.ops) == 12
    inner = {op.outputs[0] for op in graph.ops[:split]} - {chain_output(graph, split)}
    assert not inner & set(patched.tensors)


def test_choose_meets_a_budget_or_leaves_the_program_whole(programs):
    prog = programs["wide"]
    whole = prog.arena_bytes
    assert choose(prog.graph) == (prog.graph, None)  # no budget: today's plan, untouched
    same, plan = choose(prog.graph, ram_budget=whole)
    assert same is prog.graph and plan.split == 0 and plan.arena_after == whole
    budget = whole // 2
    patched, plan = choose(prog.graph, ram_budget=budget)
    assert plan.split > 0 and patched.arena_bytes == plan.arena_after <= budget < plan.arena_before == whole
    assert plan.macs_after >= plan.macs_before and plan.mac_overhead >= 0
    rng = np.random.default_rng(3)
    values = _input(prog.graph, rng)
    assert [a.tobytes() for a in execute(prog.graph, values)] == [a.tobytes() for a in execute(patched, values)]
    _, hopeless = choose(prog.graph, ram_budget=64)  # below the input map: left whole, the plan says so
    assert hopeless.split == 0 and hopeless.arena_after > 64


def test_compile_options():
    """compile(ram_budget=) patches when the program does not fit whole and records the plan; a budget it
    fits is byte-identical to no budget; patches= forces a grid; info prints the plan."""
    plain = _compile(_wide(), (1, 3, 21, 26))
    roomy = _compile(_wide(), (1, 3, 21, 26), ram_budget=plain.arena_bytes)
    assert roomy.to_bytes() == plain.to_bytes() and roomy.patch_plan.split == 0 and plain.patch_plan is None
    tight = _compile(_wide(), (1, 3, 21, 26), ram_budget=plain.arena_bytes // 2)
    assert tight.patch_plan.split > 0 and tight.arena_bytes <= plain.arena_bytes // 2
    assert "patches         first" in memory_summary(tight)
    forced = _compile(_wide(), (1, 3, 21, 26), patches=3)
    assert forced.patch_plan.grid == (3, 3) and sum(op.kind == "insert_tile" for op in forced.graph.ops) == 9
    x = torch.randn(1, 3, 21, 26)
    assert np.array_equal(np.asarray(forced.run(x, backend="c")), np.asarray(plain.run(x, backend="c")))


def test_info_and_html_report_show_the_plan(tmp_path, capsys):
    """A saved patched program: `mcuforge info` prints the plan's line (from the debug record), the Inspector's
    HTML report holds it, and a traced run of the patched program has one event per op."""
    import mcuforge
    from mcuforge.cli import main

    prog = _compile(Wide(), (1, 3, 21, 26), patches=(2, 3))
    path = prog.save(tmp_path / "wide.mfp")
    capsys.readouterr()
    assert main(["info", str(path)]) == 0
    line = prog.patch_plan.summary().removeprefix("patches: ")
    assert f"patches         {line}" in capsys.readouterr().out and "2x3 patches" in line
    loaded = mcuforge.load(path)
    assert loaded.patch_plan == prog.patch_plan
    _outputs, trace = loaded.run(torch.randn(1, 3, 21, 26), trace=True)
    html = mcuforge.Inspector(loaded, trace).to_html(tmp_path / "r.html").read_text()
    assert f'<p id="patch-plan">{escape(prog.patch_plan.summary())}</p>' in html


FACTORY = """
import torch
from torch import nn


def make():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(16, 4, 3, stride=2, padding=1), nn.AdaptiveAvgPool2d(1), nn.Flatten())
    return model.eval(), (torch.randn(1, 3, 16, 16),)
"""


def test_cli_compile_with_patches_and_budget(tmp_path, capsys):
    """`mcuforge compile --patches N` and `--ram-budget` (without --quantization auto) reach the patch planner."""
    from mcuforge.cli import main

    (tmp_path / "factory.py").write_text(FACTORY)
    assert main(["compile", f"{tmp_path / 'factory.py'}:make", "--target", "cortex-m4", "--patches", "2",
                 "-o", str(tmp_path / "p.mfp")]) == 0
    assert "over 2x2 patches" in capsys.readouterr().out
    assert main(["compile", f"{tmp_path / 'factory.py'}:make", "--target", "cortex-m4", "--ram-budget", "6000",
                 "-o", str(tmp_path / "b.mfp")]) == 0
    out = capsys.readouterr().out
    import mcuforge

    prog = mcuforge.load(tmp_path / "b.mfp")
    assert prog.patch_plan.split > 0 and prog.arena_bytes <= 6000 < prog.patch_plan.arena_before, out




def test_patched_w4a8_convs_keep_the_whole_ops_scratch_plan():
    """conv2d_s4 on cortex-m55: a patch op gets its whole op's scratch plan (mcuforge.plan.trim_optional_scratch:
    the unpacked-filter path only where it was given room), and the patched program gives the whole one's bytes
    in Python and host C."""
    from mcuforge.ir import kernel_scratch_bytes
    from mcuforge.patches import patch_graph

    torch.manual_seed(3)
    model = nn.Sequential(nn.Conv2d(8, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(32, 8, 3, stride=2, padding=1))
    plain = _compile(model, (1, 8, 16, 16), target="cortex-m55", quantization="w4a8")
    whole = {op.inputs[1]: op.scratch_bytes for op in plain.graph.ops if op.kind == "conv2d_s4"}
    full = {w: kernel_scratch_bytes("conv2d_s4", plain.graph.tensors[w].shape, "cortex-m55") for w in whole}
    assert whole != full  # some whole op was left the packed paths' plan
    split = next(i for i, op in enumerate(plain.graph.ops) if op.kind == "conv2d_s4" and whole[op.inputs[1]] !=
                 full[op.inputs[1]]) + 1
    graph = patch_graph(plain.graph, split, (2, 2))
    plan_arena(graph)
    subs = [op for op in graph.ops if op.kind == "conv2d_s4" and op.debug.get("patch")]
    assert subs and all(op.scratch_bytes == whole[op.inputs[1]] for op in subs)  # by its weight tensor
    x = torch.randn(1, 8, 16, 16)
    patched = api.Program(graph, meta=plain.meta)
    got = np.asarray(patched.run(x, backend="c"))
    assert np.array_equal(got, np.asarray(patched.run(x))) and np.array_equal(got, np.asarray(plain.run(x)))
