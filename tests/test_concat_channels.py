"""Concat by placement along the channels (format 3.4, ``Tensor.pitch``): the conv2d_s8 / avgpool_s8 / maxpool_s8
producers of a channel concat_s8's inputs write each pixel's channels straight into their slice of the concat's
output (pixels ``pitch`` apart) and the concat copies nothing for them. Randomized over channel counts, odd map
sizes, kernel sizes, clamps and producer kinds, placed programs give the unplaced program's bytes in Python, the
host C runtime (portable and cortex-m3's scalar paths) and on the cortex-m4 and cortex-m55 boards (their DSP and
Helium paths); a fire-module model's arena is smaller with placement; both readers refuse hostile pitches."""

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
from mcuforge.ir import Graph, arena_extent
from mcuforge.patches import copy_graph
from mcuforge.plan import plan_arena
from mcuforge.program import ProgramFormatError, deserialize, read_header, serialize
from mcuforge.program import layout as L
from mcuforge.runtime import execute


class Branches(nn.Module):
    """Inception-like: a 1x1 conv, a kxk conv (stride 1, padding k // 2) and a 3x3 pool (stride 1, padding 1) of
    one input, concatenated along the channels; ``relu``: the convs clamp (else the full int8 range, the DSP
    paths' asm output stage)."""

    def __init__(self, cin: int, a: int, b: int, k: int, pool: str, relu: bool) -> None:
        super().__init__()
        self.a, self.b = nn.Conv2d(cin, a, 1), nn.Conv2d(cin, b, k, padding=k // 2)
        self.pool = nn.MaxPool2d(3, 1, 1) if pool == "max" else nn.AvgPool2d(3, 1, 1, count_include_pad=False)
        self.relu = relu

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ya, yb = self.a(x), self.b(x)
        if self.relu:
            ya, yb = torch.relu(ya), torch.relu(yb)
        return torch.cat([ya, self.pool(x), yb], 1)


class Fire(nn.Module):
    """SqueezeNet's fire module: squeeze 1x1, then expand 1x1 and 3x3 concatenated along the channels."""

    def __init__(self, cin: int, s: int, e1: int, e3: int) -> None:
        super().__init__()
        self.s, self.e1, self.e3 = nn.Conv2d(cin, s, 1), nn.Conv2d(s, e1, 1), nn.Conv2d(s, e3, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.s(x))
        return torch.cat([torch.relu(self.e1(y)), torch.relu(self.e3(y))], 1)


class FireNet(nn.Module):
    """A stem, two fire modules around a max pool, a pooled classifier (SqueezeNet in small)."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1)
        self.f1, self.f2 = Fire(16, 8, 16, 16), Fire(32, 8, 24, 24)
        self.fc = nn.Linear(48, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.f2(torch.max_pool2d(self.f1(torch.relu(self.stem(x))), 2))
        return self.fc(torch.flatten(torch.mean(y, (2, 3)), 1))


def _compile(model: nn.Module, shape: tuple[int, ...], seed: int, target: str = "cortex-m4") -> api.Program:
    torch.manual_seed(seed)
    example = (torch.randn(*shape),)
    calibration = [(torch.randn(*shape),) for _ in range(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return api.compile(model.eval(), example, calibration=calibration, target=target, progress=False)


def _concats(graph: Graph):
    return [op for op in graph.ops if op.kind == "concat_s8"]


def _forced(graph: Graph) -> Graph:
    """``graph`` with every concat placed where legal (whether or not that lowers the arena): every producer path
    writes pitched."""
    g = copy_graph(graph)
    for op in _concats(g):
        op.in_place = True
    plan_arena(g)
    return g


def _unplaced(graph: Graph) -> Graph:
    g = copy_graph(graph)
    for op in _concats(g):
        op.in_place = False
    plan_arena(g)
    return g


def _pitched(graph: Graph) -> list[str]:
    return [n for n, t in graph.tensors.items() if t.pitch]


def _input(graph: Graph, rng: np.random.Generator) -> list[np.ndarray]:
    return [rng.integers(-128, 128, graph.tensors[n].shape, dtype=np.int8) for n in graph.inputs]


@pytest.fixture(scope="module")
def branches() -> list[tuple[str, Graph]]:
    """Random branch models, placed by force: channel counts 1..40 (odd ones, 8 and 16: the DSP 1x1 runs), odd
    map sizes, 1x1/3x3/5x5 second convs, RGB inputs (the few-channel path), max and average pools, with and without
    a clamp."""
    rng = np.random.default_rng(2929)
    cases = [(3, 8, 16, 3, "max", False), (8, 16, 8, 1, "avg", True), (16, 5, 7, 3, "max", False)]
    for _ in range(5):
        cin, a, b = (int(v) for v in rng.integers(1, 41, 3))
        cases.append((cin, a, b, int(rng.choice([1, 3, 5])), str(rng.choice(["max", "avg"])), bool(rng.integers(2))))
    graphs = []
    for k, (cin, a, b, ks, pool, relu) in enumerate(cases):
        h, w = (int(v) for v in rng.integers(3, 10, 2))
        name = f"br_{cin}_{a}_{b}_k{ks}_{pool}{'_relu' if relu else ''}_{h}x{w}"
        graph = _forced(_compile(Branches(cin, a, b, ks, pool, relu), (1, cin, h, w), k).graph)
        assert len(_pitched(graph)) == 3, name  # both convs and the pool write into the output
        graphs.append((name, graph))
    return graphs


def test_pitched_slices_and_format(branches):
    """Each pitched input lies on its channel slice (the output's offset plus the channels before it), pitch = the
    output's channels, inside the output's bytes; the file is 3.4 with 56-byte records and reads back the same."""
    for name, graph in branches:
        (op,) = _concats(graph)
        out, at = graph.tensors[op.outputs[0]], 0
        for n in op.inputs:
            t = graph.tensors[n]
            assert t.pitch == out.shape[3] and t.offset == out.offset + at, name
            assert t.offset + arena_extent(t) <= out.offset + out.nbytes, name
            at += t.shape[3]
        data = serialize(graph)
        h = read_header(data)
        assert (h.version_major, h.version_minor) == L.PITCH_VERSION and h.tensor_record_size == 56, name
        back = deserialize(data)
        assert {n: (t.offset, t.pitch) for n, t in back.tensors.items() if not t.is_constant} == {
            n: (t.offset, t.pitch) for n, t in graph.tensors.items() if not t.is_constant
        }, name


def test_unpitched_programs_keep_their_bytes(branches):
    """Without a pitched tensor the file is as before placement existed: 3.1, 52-byte records."""
    for name, graph in branches:
        data = serialize(_unplaced(graph))
        h = read_header(data)
        assert (h.version_major, h.version_minor) == L.FORMAT_VERSION and h.tensor_record_size == 52, name


def test_placed_equals_unplaced_python_and_host_c(branches):
    """Python (placed, one run and 3 runs at once) == Python (unplaced) == host C (placed: portable kernels, and
    cortex-m3's scalar paths in a host build), 2 inputs per model."""
    rng = np.random.default_rng(5)
    sweep = BoardSweep()
    for name, graph in branches:
        unplaced = _unplaced(graph)
        loaded = cruntime.LoadedProgram(serialize(graph))
        for _ in range(2):
            values = _input(graph, rng)
            want = [a.tobytes() for a in execute(unplaced, values)]
            assert [a.tobytes() for a in execute(graph, values)] == want, f"{name}: Python placed != unplaced"
            assert [a.tobytes() for a in loaded.run(values)[0]] == want, f"{name}: host C placed != unplaced"
        many = [np.stack([_input(graph, rng)[0] for _ in range(3)])]
        assert execute(graph, many, runs=3)[0].tobytes() == execute(unplaced, many, runs=3)[0].tobytes(), name
        sweep.add_graph(name, graph, _input(graph, rng))
    sweep.assert_same_on_host_c("cortex-m3")


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
def test_placed_on_board(branches, target):
    """Every branch model in one boot, each op with its target's scratch (the DSP / Helium paths): board == host
    Python (placed) == the unplaced program; the board's program keeps the pitches."""
    sweep = BoardSweep()
    rng = np.random.default_rng(11)
    for name, graph in branches:
        values = _input(graph, rng)
        assert [a.tobytes() for a in execute(graph, values)] == [
            a.tobytes() for a in execute(_unplaced(graph), values)
        ], name
        sweep.add_graph(name, graph, values)
    merged = deserialize(sweep.program(target))
    assert len(_pitched(merged)) == 3 * len(branches)
    sweep.assert_same_on_board(target)


def test_fire_module_arena_is_smaller():
    """A SqueezeNet-like model: the compiler places the fire modules' expands where that lowers the arena, and the
    placed arena is strictly smaller than the same program planned with every concat a copy (both from the plan);
    the two give the same bytes."""
    graph = _compile(FireNet(), (1, 3, 32, 32), 7).graph
    unplaced = _unplaced(graph)
    assert _pitched(graph) and not _pitched(unplaced)
    assert graph.arena_bytes < unplaced.arena_bytes
    values = _input(graph, np.random.default_rng(3))
    want = [a.tobytes() for a in execute(unplaced, values)]
    assert [a.tobytes() for a in cruntime.LoadedProgram(serialize(graph)).run(values)[0]] == want


def _record(data: bytes, name: str) -> int:
    h = read_header(data)
    return h.tensors_offset + list(deserialize(data).tensors).index(name) * h.tensor_record_size


def _patched(data: bytes, name: str, at: int, fmt: str, value: int) -> bytes:
    damaged = bytearray(data)
    struct.pack_into(fmt, damaged, _record(data, name) + at, value)
    return fix_program_crcs(bytes(damaged))


def _refused(data: bytes, match: str) -> None:
    with pytest.raises(ProgramFormatError, match=match):
        deserialize(data)
    with pytest.raises(cruntime.CRuntimeError, match="FORMAT|BOUNDS"):
        cruntime.LoadedProgram(data)


def test_readers_refuse_hostile_pitches(branches):
    """Both readers refuse: a pitch below the channel count, a pitch other than the concat's channels, the flag
    without a pitch and a pitch without the flag, a pitch on a constant, on a tensor a kind without pitch support
    reads (the conv's input) or writes (made the graph output), and a pitched input moved off its slice. The placed
    file itself loads."""
    _name, graph = branches[1]
    data = serialize(graph)
    deserialize(data)
    cruntime.LoadedProgram(data)
    (op,) = _concats(graph)
    first = graph.tensors[op.inputs[0]]
    _refused(_patched(data, first.name, 52, "<I", first.shape[3] - 1), "pitch")
    _refused(_patched(data, first.name, 52, "<I", first.pitch + 1), "pitch|overlaps|outside")
    _refused(_patched(data, first.name, 52, "<I", 0), "pitch")
    x = graph.inputs[0]
    unflagged = _patched(data, x, 52, "<I", graph.tensors[x].shape[3])
    _refused(unflagged, "without the pitched flag")
    flags = _record(data, x) + 11
    flagged = bytearray(unflagged)
    flagged[flags] |= L.TENSOR_FLAG_PITCHED
    _refused(fix_program_crcs(bytes(flagged)), "pitch")
    weight = next(n for n, t in graph.tensors.items() if t.is_constant and t.dtype == "int8")
    const = bytearray(_patched(data, weight, 52, "<I", 64))
    const[_record(data, weight) + 11] |= L.TENSOR_FLAG_PITCHED
    _refused(fix_program_crcs(bytes(const)), "pitch")
    conv = next(o for o in graph.ops if o.kind == "conv2d_s8" and o.outputs[0] == op.inputs[0])
    _refused(_patched(data, first.name, 44, "<I", first.offset + 1), "overlaps|pitch")
    assert conv.inputs[0] == x  # the conv reads the (dense) graph input: flagged above and refused


def test_flag_needs_the_pitch_field(branches):
    """The pitched flag in a file of 52-byte records (the field absent) is refused by both readers."""
    _name, graph = branches[0]
    plain = _unplaced(graph)
    data = serialize(plain)
    assert read_header(data).tensor_record_size == 52
    name = plain.ops[0].outputs[0]
    damaged = bytearray(data)
    damaged[_record(data, name) + 11] |= L.TENSOR_FLAG_PITCHED
    _refused(fix_program_crcs(bytes(damaged)), "pitch")
