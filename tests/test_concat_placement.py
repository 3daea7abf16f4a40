"""Concat by placement (mcuforge.plan.choose_concat_placement): the producers of an outer-axis concat_s8's inputs
write straight into their slices of its output and the kernel copies nothing. Placed programs give the unplaced
program's bytes in Python, the host C runtime and on the boards (one QEMU boot per target), with a smaller arena;
where placement is illegal (a branch also read elsewhere, a graph output) it stays a copy; both readers refuse an
input overlapping the output anywhere but on its own slice. (Channel concats of spatial maps are placed pitched:
tests/test_concat_channels.py.)"""

from __future__ import annotations

import struct
import warnings

import numpy as np
import pytest
import torch
from board_sweep import BoardSweep
from torch import nn

from mcuforge import api, cruntime
from mcuforge.fuzz import fix_program_crcs
from mcuforge.ir import Graph
from mcuforge.patches import copy_graph
from mcuforge.plan import lifetimes, placed_concat_inputs, plan_arena
from mcuforge.program import ProgramFormatError, deserialize, read_header, serialize
from mcuforge.runtime import execute


class Heads(nn.Module):
    """Two Linear heads of one input, concatenated ([1, a + b]), then a classifier."""

    def __init__(self, n: int, a: int, b: int) -> None:
        super().__init__()
        self.a, self.b, self.c = nn.Linear(n, a), nn.Linear(n, b), nn.Linear(a + b, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c(torch.relu(torch.cat([self.a(x), self.b(x)], 1)))


class Pooled(nn.Module):
    """Two conv branches, each globally pooled ([1, 1, 1, C] in NHWC), concatenated along channels; with
    ``embed`` each pooled vector first goes through its own Linear embedding (wide features: [1, E])."""

    def __init__(self, a: int, b: int, embed: int = 0) -> None:
        super().__init__()
        self.a, self.b = nn.Conv2d(3, a, 3, padding=1), nn.Conv2d(3, b, 3, stride=2)
        self.embed = embed
        if embed:
            self.ea, self.eb = nn.Linear(a, embed), nn.Linear(b, embed + 3)
        self.fc = nn.Linear(2 * embed + 3 if embed else a + b, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ya = torch.relu(self.a(x)).mean((2, 3), keepdim=True)
        yb = torch.relu(self.b(x)).mean((2, 3), keepdim=True)
        if self.embed:
            return self.fc(torch.cat([self.ea(torch.flatten(ya, 1)), self.eb(torch.flatten(yb, 1))], 1))
        return self.fc(torch.flatten(torch.cat([ya, yb], 1), 1))


class Shared(Heads):
    """Head ``a`` also feeds a second output: it may not be placed (head ``b`` still may)."""

    def __init__(self) -> None:
        super().__init__(24, 20, 12)
        self.d = nn.Linear(20, 3)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        ha = self.a(x)
        return self.c(torch.relu(torch.cat([ha, self.b(x)], 1))), self.d(ha)


class Spatial(nn.Module):
    """Channel concat of two spatial maps ([1, H, W, C]): the slices are strided (placed only pitched, by
    tests/test_concat_channels.py's rules)."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c = nn.Conv2d(3, 6, 1), nn.Conv2d(3, 5, 1), nn.Conv2d(11, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c(torch.cat([torch.relu(self.a(x)), torch.relu(self.b(x))], 1))


def _compile(model: nn.Module, shape: tuple[int, ...], seed: int) -> api.Program:
    torch.manual_seed(seed)
    example = (torch.randn(*shape),)
    calibration = [(torch.randn(*shape),) for _ in range(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return api.compile(model.eval(), example, calibration=calibration, target="cortex-m4", progress=False)


@pytest.fixture(scope="module")
def placed() -> list[tuple[str, api.Program]]:
    return placed_models()


def placed_models() -> list[tuple[str, api.Program]]:
    """Random small multi-branch models whose concat is placed (sizes drawn per case)."""
    rng = np.random.default_rng(29)
    progs = []
    for k in range(3):
        n, a, b = (int(v) for v in rng.integers(8, 80, 3))
        torch.manual_seed(k)
        progs.append((f"heads_{n}_{a}_{b}", _compile(Heads(n, a, b), (1, n), k)))
    for k in range(2):
        a, b = (int(v) for v in rng.integers(3, 17, 2))
        h, w = (int(v) for v in rng.integers(3, 7, 2))
        torch.manual_seed(10 + k)
        e = int(rng.integers(300, 500))  # wide embeddings: the concat holds the peak
        progs.append((f"pooled_{a}_{b}_{h}x{w}_e{e}", _compile(Pooled(a, b, e), (1, 3, h, w), 10 + k)))
    return progs


def _concat(graph: Graph):
    return next(op for op in graph.ops if op.kind == "concat_s8")


def _slices_placed(graph: Graph) -> list[bool]:
    """Per concat input: whether it lies on its own slice of the output."""
    op = _concat(graph)
    out, at, placed = graph.tensors[op.outputs[0]], 0, []
    for name in op.inputs:
        placed.append(graph.tensors[name].offset == out.offset + at)
        at += graph.tensors[name].nbytes
    return placed


def _unplaced(graph: Graph) -> Graph:
    g = copy_graph(graph)
    for op in g.ops:
        if op.kind == "concat_s8":
            op.in_place = False
    plan_arena(g)
    return g


def _input(graph: Graph, rng: np.random.Generator) -> list[np.ndarray]:
    return [rng.integers(-128, 128, graph.tensors[n].shape, dtype=np.int8) for n in graph.inputs]


def test_placed_equals_copy_python_and_host_c(placed):
    """Placed: every input on its slice and a smaller arena than the copy; Python (placed) == Python (copy) ==
    host C (placed, the file through the C loader), 3 inputs per model."""
    rng = np.random.default_rng(1)
    for name, prog in placed:
        graph = prog.graph
        assert _concat(graph).in_place and all(_slices_placed(graph)), name
        copy = _unplaced(graph)
        assert not any(_slices_placed(copy)) and graph.arena_bytes < copy.arena_bytes, name
        loaded = cruntime.LoadedProgram(serialize(graph))
        assert all(_slices_placed(deserialize(serialize(graph)))), name
        for _ in range(3):
            values = _input(graph, rng)
            want = [a.tobytes() for a in execute(copy, values)]
            assert [a.tobytes() for a in execute(graph, values)] == want, f"{name}: Python placed != copy"
            assert [a.tobytes() for a in loaded.run(values)[0]] == want, f"{name}: host C placed != copy"


def test_illegal_placement_stays_a_copy():
    """A head read by another op is not placed (the other head is, when that lowers the arena); an inner-axis
    (spatial) concat is never placed contiguously (its inputs, where placed, are pitched). Both still give the
    unplaced bytes in host C."""
    shared = _compile(Shared(), (1, 24), 3).graph
    assert _slices_placed(shared)[0] is False
    spatial = _compile(Spatial(), (1, 3, 5, 4), 4).graph
    assert not _concat(spatial).in_place or all(spatial.tensors[n].pitch for n in _concat(spatial).inputs)
    rng = np.random.default_rng(2)
    for graph in (shared, spatial):
        values = _input(graph, rng)
        want = [a.tobytes() for a in execute(_unplaced(graph), values)]
        assert [a.tobytes() for a in cruntime.LoadedProgram(serialize(graph)).run(values)[0]] == want


def test_placement_only_where_it_lowers_the_arena():
    """Pooled features (small) concatenated after sequential conv branches: placing them is legal but would hold
    the whole output from the first pool on, over the second conv's peak; the compiler leaves the copy. Forced,
    it gives the same bytes (host C) in an arena no smaller."""
    prog = _compile(Pooled(7, 37), (1, 3, 5, 7), 10)
    graph = prog.graph
    i = next(i for i, op in enumerate(graph.ops) if op.kind == "concat_s8")
    readers: dict[str, int] = {}
    for op in graph.ops:
        for name in op.inputs:
            readers[name] = readers.get(name, 0) + 1
    assert len(placed_concat_inputs(graph, i, lifetimes(graph), set(graph.outputs), readers, {})) == 2  # legal
    assert not graph.ops[i].in_place and not any(_slices_placed(graph))
    forced = copy_graph(graph)
    forced.ops[i].in_place = True
    plan_arena(forced)
    assert all(_slices_placed(forced)) and forced.arena_bytes >= graph.arena_bytes
    values = _input(graph, np.random.default_rng(7))
    want = [a.tobytes() for a in execute(graph, values)]
    assert [a.tobytes() for a in cruntime.LoadedProgram(serialize(forced)).run(values)[0]] == want


def _moved(data: bytes, name: str, offset: int) -> bytes:
    """``data`` with tensor ``name``'s arena offset set to ``offset`` (CRCs fixed): only the overlap is wrong."""
    h = read_header(data)
    index = list(deserialize(data).tensors).index(name)
    damaged = bytearray(data)
    struct.pack_into("<I", damaged, h.tensors_offset + index * h.tensor_record_size + 44, offset)
    return fix_program_crcs(bytes(damaged))


def _refused(data: bytes) -> None:
    with pytest.raises(ProgramFormatError, match="overlaps"):
        deserialize(data)
    with pytest.raises(cruntime.CRuntimeError, match="FORMAT"):
        cruntime.LoadedProgram(data)


def test_readers_refuse_an_input_off_its_slice(placed):
    """The second input moved onto the first's slice, or one byte before its own; an inner-axis concat's first (dense)
    input moved onto its output's first byte: both readers refuse each (the placed file itself loads)."""
    graph = dict(placed)[next(n for n, _ in placed if n.startswith("heads"))].graph
    data = serialize(graph)
    deserialize(data)
    cruntime.LoadedProgram(data)
    op = _concat(graph)
    out, second = graph.tensors[op.outputs[0]], graph.tensors[op.inputs[1]]
    _refused(_moved(data, second.name, out.offset))
    _refused(_moved(data, second.name, second.offset - 1))
    spatial = _unplaced(_compile(Spatial(), (1, 3, 5, 4), 4).graph)  # dense inputs: none may lie on the output
    sop = _concat(spatial)
    _refused(_moved(serialize(spatial), sop.inputs[0], spatial.tensors[sop.outputs[0]].offset))


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
def test_placed_on_board(placed, target):
    """Every placed model in one boot: board == host Python (placed) == the copy program; the board's program
    keeps the placement."""
    sweep = BoardSweep()
    rng = np.random.default_rng(3)
    for name, prog in placed:
        values = _input(prog.graph, rng)
        want = [a.tobytes() for a in execute(_unplaced(prog.graph), values)]
        assert [a.tobytes() for a in execute(prog.graph, values)] == want, name
        sweep.add_graph(name, prog.graph, values)
    merged = deserialize(sweep.program(target))
    concats = [op for op in merged.ops if op.kind == "concat_s8"]
    assert len(concats) == len(placed)
    for op in concats:
        out, at = merged.tensors[op.outputs[0]], 0
        for name in op.inputs:
            assert merged.tensors[name].offset == out.offset + at, name
            at += merged.tensors[name].nbytes
    sweep.assert_same_on_board(target)
