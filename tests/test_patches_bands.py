"""A patched program's buffers over the overlapped graph input's dead rows (mcuforge.plan.input_bands): the input
is planned as bands of rows, each free once its last reader has run, and a thin first patch row
(mcuforge.patches.plan_thin). Checked by a byte-by-byte replay of the planned program (every byte an op reads
still holds what its producer wrote), Python == host C == the whole program and the same on cortex-m4 /
cortex-m55 (one boot each) over random splits, grids and first-row heights; the readers accept a slice's output
over its input only outside its box and only when the program says so (``outside``); and bands 16 bytes short
of the proof are caught by the replay and change the outputs (the checks can fail)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from board_sweep import BoardSweep
from test_patches import Stem, Wide, _compile, _input
from test_patches_overlap import _chain_bytes

from mcuforge import cruntime, plan
from mcuforge.patches import Candidate, chain_output, overlap_input, patch_graph, plan_thin, row_bounds, thin_rows
from mcuforge.plan import _peak, alias_offsets, input_bands, plan_arena
from mcuforge.program import deserialize, serialize
from mcuforge.runtime import execute


@pytest.fixture(scope="module")
def programs() -> dict[str, object]:
    return {"stem": _compile(Stem(), (1, 3, 29, 23)), "wide": _compile(Wide(), (1, 3, 27, 22))}


def _banded(programs, count: int, seed: int):
    """(name, whole graph, patched graph (overlapped, planned), inputs) for random splits, grids (2 or more patch
    rows) and first-row heights (0: even rows) where some buffer lies over the input's bytes (others are drawn
    again)."""
    rng = np.random.default_rng(seed)
    found = 0
    while found < count:
        name = ("stem", "wide")[found % 2]
        graph = programs[name].graph
        split = int(rng.choice([s for s in range(1, len(graph.ops)) if chain_output(graph, s)]))
        _, h, w, _ = graph.tensors[chain_output(graph, split)].shape
        if h < 4:
            continue
        grid = (int(rng.integers(2, min(h // 2, 6) + 1)), int(rng.integers(1, min(w, 5) + 1)))
        first = int(rng.integers(0, h // grid[0] + 1))
        patched = patch_graph(graph, split, grid, first)
        if not overlap_input(patched):
            continue
        plan_arena(patched)
        if not _reused(patched):
            continue
        found += 1
        yield f"{name}_s{split}_g{grid[0]}x{grid[1]}_f{first}_{found}", graph, patched, _input(graph, rng)


def _reused(graph) -> bool:
    """Whether a buffer other than the chain's output lies over the overlapped input's bytes before its last
    reader has run."""
    (x, (t, _d)), = graph.overlaps.items()
    xt = graph.tensors[x]
    roots, life = alias_offsets(graph), plan.lifetimes(graph)
    last = life[x][1]
    for name, tensor in graph.tensors.items():
        mine = name in roots and name != x and roots[name][0] != roots[t][0]
        if mine and tensor.nbytes and life[name][0] < last:
            if tensor.offset < xt.offset + xt.nbytes and xt.offset < tensor.offset + tensor.nbytes:
                return True
    return any(op.scratch_bytes and i < last and op.scratch_offset < xt.offset + xt.nbytes
               and xt.offset < op.scratch_offset + op.scratch_bytes for i, op in enumerate(graph.ops))


def _stale_reads(graph) -> int:
    """Bytes some op reads that no longer hold what their producer wrote: an independent replay of the planned
    arena (the owner of every byte, op by op: a slice reads its box, an insert_tile its tile (and its dst unless
    written in place over it), any other op all of its activation inputs; an op's outputs and scratch take their
    bytes after its reads; an output at its input's offset takes over the input's bytes)."""
    owner = np.full(max(graph.arena_bytes, 1), -1, np.int64)
    ids = {name: k for k, name in enumerate(graph.tensors)}

    def span(name):
        t = graph.tensors[name]
        return np.arange(t.offset, t.offset + t.nbytes)

    for x in graph.inputs:
        owner[span(x)] = ids[x]
    stale = 0
    for i, op in enumerate(graph.ops):
        out = graph.tensors[op.outputs[0]]
        for pos, name in enumerate(op.inputs):
            t = graph.tensors.get(name) if name else None
            if t is None or t.is_constant or not t.nbytes:
                continue
            if op.kind == "insert_tile" and pos == 1 and t.offset == out.offset:
                continue  # written in place: the kernel copies nothing
            index = np.arange(t.nbytes).reshape(t.shape)
            if op.kind == "slice":
                a = op.attrs
                box = tuple(slice(b, e, s) for b, e, s in zip(a["begin"], a["end"], a["step"], strict=True))
                index = index[box]
            stale += int(np.count_nonzero(owner[t.offset + index.reshape(-1)] != ids[name]))
        if op.scratch_bytes:
            owner[op.scratch_offset:op.scratch_offset + op.scratch_bytes] = -2 - i
        for pos, name in enumerate(op.inputs):  # an in-place output takes its input's bytes (insert_tile's dst)
            t = graph.tensors.get(name) if name else None
            if t is not None and not t.is_constant and t.nbytes and t.offset == out.offset and pos > 0:
                region = owner[t.offset:t.offset + t.nbytes]
                region[region == ids[name]] = ids[out.name]
        if op.kind == "insert_tile":
            b, tile = op.attrs["begin"], graph.tensors[op.inputs[0]].shape
            box = tuple(slice(k, k + n) for k, n in zip(b, tile, strict=True))
            owner[out.offset + np.arange(out.nbytes).reshape(out.shape)[box].reshape(-1)] = ids[out.name]
        else:
            for name in op.outputs:
                owner[span(name)] = ids[name]
    for name in graph.outputs:
        t = graph.tensors[name]
        stale += int(np.count_nonzero(owner[span(name)] != ids[name])) if t.nbytes else 0
    return stale


def _short_by_16(graph) -> int:
    """Moves every buffer over the input's bytes (but the chain's output) to end 16 bytes into the first byte of
    the input a later op (from the buffer's producer on) still reads: each one 16 bytes short of the proof.
    Returns how many it moved."""
    (x, (t, _d)), = graph.overlaps.items()
    xt = graph.tensors[x]
    life, roots = plan.lifetimes(graph), alias_offsets(graph)
    reads = [(i, plan._reads(graph, op, x)) for i, op in enumerate(graph.ops) if x in op.inputs]
    moved = 0
    for name, tensor in graph.tensors.items():
        if name == x or name not in roots or not tensor.nbytes or roots[name][0] in (roots[t][0], x):
            continue
        over = tensor.offset < xt.offset + xt.nbytes and xt.offset < tensor.offset + tensor.nbytes
        if roots[name][0] != name or not over:
            continue
        later = [a for i, spans in reads if i >= life[name][0] for a, _b in spans]
        if later:
            at = xt.offset + min(later) + 16 - tensor.nbytes
            for other, ot in graph.tensors.items():  # its in-place aliases move with it
                if roots.get(other, ("",))[0] == name:
                    ot.offset += at - tensor.offset
            moved += 1
    for op in graph.ops:  # scratch buffers too, 16-byte aligned as the readers want them (at least 16 bytes in)
        i = graph.ops.index(op)
        end = op.scratch_offset + op.scratch_bytes
        if op.scratch_bytes and op.scratch_offset < xt.offset + xt.nbytes and xt.offset < end:
            later = [a for m, spans in reads if m >= i for a, _b in spans]
            if later:
                op.scratch_offset = plan._align(xt.offset + min(later) + 16 - op.scratch_bytes)
                moved += 1
    return moved


def _peak_one_band(graph, monkeypatch) -> int:
    """The allocation bound with the input planned as one band: what the planner did before bands."""
    with monkeypatch.context() as m:
        m.setattr(plan, "input_bands", lambda g, x: [(f"{x}@band0", 0, plan._size(g.tensors[x].nbytes),
                                                      plan.lifetimes(g)[x][1])])
        return _peak(graph)


@pytest.mark.parametrize("split, grid, first", [(4, (3, 2), 0), (4, (3, 2), 2), (3, (3, 2), 2)])
@pytest.mark.parametrize("scratch", ["as compiled", "none"])
def test_bands_lower_the_bound_on_wide_chains(programs, monkeypatch, split, grid, first, scratch):
    """Fixed Wide chains where a later patch row's buffers fit in the rows the first band frees: the bands lower
    the allocation bound, with the kernels' scratch as compiled and with none (so the fact does not hang on one
    kernel's scratch size, which the random draws above did)."""
    patched = patch_graph(programs["wide"].graph, split, grid, first)
    if scratch == "none":
        for op in patched.ops:
            op.scratch_bytes = 0
    assert overlap_input(patched)
    plan_arena(patched)
    assert _stale_reads(patched) == 0
    assert _peak(patched) < _peak_one_band(patched, monkeypatch)


def test_replay_every_read_is_fresh(programs, monkeypatch):
    """12 random banded programs: the replay finds no stale byte (also in the chain's output, read whole by the
    rest), some buffer lies over the input's rows, and the bands never raise the allocation bound (the fixed
    chains above show them lowering it); with each buffer there 16 bytes short of the proof the replay finds
    stale bytes in every one."""
    cases = list(_banded(programs, 12, seed=31))
    for name, _graph, patched, _values in cases:
        assert _stale_reads(patched) == 0, name
        (x, _), = patched.overlaps.items()
        bands = input_bands(patched, x)
        assert len(bands) >= 2 and bands[0][1] == 0, name
        assert all(a[2] == b[1] for a, b in zip(bands, bands[1:], strict=False)), name
    for name, _graph, patched, _values in cases:
        assert _peak(patched) <= _peak_one_band(patched, monkeypatch), name
    for name, _graph, patched, _values in cases:  # the negative control: 16 bytes short, stale bytes
        assert _short_by_16(patched) >= 1, name
        assert _stale_reads(patched) > 0, name


def test_banded_equals_whole_python_and_host_c(programs):
    """16 random banded programs: Python (banded) == Python (whole) == host C (banded); the program records
    ``outside`` on exactly the slices whose output lies over their input, and round-trips."""
    marked = 0
    for name, graph, patched, values in _banded(programs, 16, seed=32):
        x = patched.tensors[next(iter(patched.overlaps))]
        for op in patched.ops:
            if op.kind == "slice" and op.inputs[0] == x.name:
                out = patched.tensors[op.outputs[0]]
                over = out.offset < x.offset + x.nbytes and x.offset < out.offset + out.nbytes
                assert op.attrs.get("outside", 0) == int(over), name
                marked += over
        data = serialize(patched)
        loaded = deserialize(data)
        assert [op.attrs.get("outside", 0) for op in loaded.ops] == [op.attrs.get("outside", 0) for op in patched.ops]
        whole = execute(graph, values)
        got = execute(patched, values)
        c_got, _ = cruntime.LoadedProgram(data).run(values)
        for w, p, c in zip(whole, got, c_got, strict=True):
            assert w.tobytes() == p.tobytes(), f"{name}: Python banded != whole"
            assert w.tobytes() == c.tobytes(), f"{name}: host C banded != whole"
    assert marked >= 1, marked


def test_buffers_short_of_the_proof_change_outputs_or_are_refused(programs):
    """The negative control: every buffer over the input's bytes 16 bytes short of the proof (:func:`_short_by_16`):
    most of 8 random programs give another chain output than the proven program in Python or other outputs in host C
    (Python's kernels use no scratch buffers), or the writer refuses
    them (a slice's output over its own box, a scratch over its op's tensors). (The network's final outputs, a mean
    and a Linear, may round a few bytes' change away: the chain's output is compared.)"""
    caught = 0
    cases = list(_banded(programs, 8, seed=33))
    for _name, _graph, patched, values in cases:
        right = _chain_bytes(patched, values)
        c_right = [c.tobytes() for c in cruntime.LoadedProgram(serialize(patched)).run(values)[0]]
        _short_by_16(patched)
        try:
            c_got = [c.tobytes() for c in cruntime.LoadedProgram(serialize(patched)).run(values)[0]]
        except (ValueError, cruntime.CRuntimeError):
            caught += 1
            continue
        caught += _chain_bytes(patched, values) != right or c_got != c_right
    assert caught >= len(cases) - 1, caught


def _one_slice(out_offset: int, outside: int | None):
    """A program of one slice of rows 2..4 of a 6x3x2 int8 input (at 64) to its output at ``out_offset``."""
    from mcuforge.ir import Graph, Op, QParams, Tensor

    q = QParams(0.1, 0)
    x = Tensor("x", (1, 6, 3, 2), "int8", q, layout="nhwc", offset=64)
    y = Tensor("y", (1, 2, 3, 2), "int8", q, layout="nhwc", offset=out_offset)
    attrs = {"begin": [0, 2, 0, 0], "end": [1, 4, 3, 2], "step": [1, 1, 1, 1]}
    if outside is not None:
        attrs["outside"] = outside
    graph = Graph({"x": x, "y": y}, [Op("slice", ["x"], ["y"], attrs, precision="a8")], ["x"], ["y"],
                  target="cortex-m4")
    graph.arena_bytes = 160
    return graph


def test_readers_accept_a_slice_outside_its_box_only(monkeypatch):
    """A slice whose output lies over its input's rows before the box, marked outside: written, read back and
    loaded, it runs as the plain slice. Over the box's first row (marked), over the rows before it unmarked, or
    marked 2: the writer refuses it; written anyway (the writer's checks off) the Python reader and the C loader
    refuse it."""
    from mcuforge.program import ProgramFormatError, writer

    values = [np.arange(-18, 18, dtype=np.int8).reshape(1, 6, 3, 2)]
    good = _one_slice(64, 1)  # rows 0..1 of x: 12 bytes, the box starts at byte 12
    data = serialize(good)
    assert deserialize(data).ops[0].attrs["outside"] == 1
    got, _ = cruntime.LoadedProgram(data).run(values)
    assert got[0].tobytes() == values[0][:, 2:4].tobytes()
    bad = [(_one_slice(64 + 16, 1), "overlaps"), (_one_slice(64 + 2, 1), "overlaps"), (_one_slice(64, 0), "overlaps"),
           (_one_slice(64, None), "overlaps"), (_one_slice(64, 2), "outside 2")]
    for graph, message in bad:
        with pytest.raises(ValueError, match=message):
            serialize(graph)
    monkeypatch.setattr(writer, "arena_overlap_problem", lambda o, t: None)
    monkeypatch.setattr(writer, "outside_problem", lambda o: None)
    for graph, message in bad:
        data = serialize(graph)
        with pytest.raises(ProgramFormatError, match=message):
            deserialize(data)
        with pytest.raises(cruntime.CRuntimeError):
            cruntime.LoadedProgram(data)


def test_row_bounds_and_thin_first_row(programs):
    """Row boundaries with a thin first row, and plan_thin's choice: no larger than the even rows' plan, its
    ``first`` one of thin_rows, the same bytes out as the whole program."""
    assert row_bounds(10, 3) == [0, 3, 6, 10]
    assert row_bounds(10, 3, 2) == [0, 2, 6, 10]
    with pytest.raises(ValueError):
        row_bounds(10, 3, 9)
    graph = programs["wide"].graph
    split = max(s for s in range(1, len(graph.ops)) if chain_output(graph, s))
    g = patch_graph(graph, split, (3, 2))
    c = Candidate(split, (3, 2), 0, 0, overlap_input(g))
    assert c.overlap and thin_rows(graph, c)
    from mcuforge.patches import plan_patched

    even = plan_patched(graph, c)[0].arena_bytes
    patched, _n, chosen = plan_thin(graph, c)
    assert patched.arena_bytes <= even and chosen.first in (0, *thin_rows(graph, c))
    values = _input(graph, np.random.default_rng(35))
    c_got, _ = cruntime.LoadedProgram(serialize(patched)).run(values)
    assert [a.tobytes() for a in c_got] == [a.tobytes() for a in execute(graph, values)]


def test_choice_pruned_by_the_floor_is_the_same(programs, monkeypatch):
    """choose skips splits whose floor (rest_bounds: the live bytes after the chain) is too far over the budget:
    every candidate's bound is at least its split's floor, and the choice under 4 budgets is the one made without
    the pruning (the same split, grid, first row, arena and MACs)."""
    from mcuforge import patches
    from mcuforge.patches import candidates, choose, rest_bounds

    skipped = 0
    for name in ("stem", "wide"):
        graph = programs[name].graph
        floor = rest_bounds(graph)
        for c in candidates(graph):
            assert c.bound >= floor[c.split], (name, c)
        for budget in (int(graph.arena_bytes * f) for f in (0.5, 0.6, 0.75, 0.9)):
            skipped += any(floor[s] > patches.NEAR * budget for s in range(1, len(graph.ops)) if chain_output(graph, s))
            pruned = choose(graph, ram_budget=budget)[1]
            with monkeypatch.context() as m:
                m.setattr(patches, "rest_bounds", lambda g: [0] * (len(g.ops) + 1))
                plain = choose(graph, ram_budget=budget)[1]
            assert pruned == plain, (name, budget)
    assert skipped >= 4, skipped  # the pruning skips a split under most of the budgets


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
def test_banded_on_board(programs, target):
    """10 random banded programs on the board (one boot): board == host Python == the plain program."""
    sweep = BoardSweep()
    for name, graph, patched, values in _banded(programs, 10, seed=36):
        for w, p in zip(execute(graph, values), execute(patched, values), strict=True):
            assert w.tobytes() == p.tobytes(), name
        sweep.add_graph(name, patched, values)
    merged = deserialize(sweep.program(target))
    assert _stale_reads(merged) == 0
    assert sum(op.attrs.get("outside", 0) for op in merged.ops) >= 1
    sweep.assert_same_on_board(target)


def _fits(graph, c, budget):
    """Every plan choose may make of candidate ``c`` (even rows, then each thin first row), planned as it plans
    them: (arena, MACs, first) of those that meet ``budget``."""
    from mcuforge.patches import macs, plan_patched

    out = []
    for first in (0, *thin_rows(graph, c)):
        patched = plan_patched(graph, dataclasses.replace(c, first=first), budget)[0]
        if patched.arena_bytes <= budget:
            out.append((patched.arena_bytes, macs(patched), first))
    return out


def test_choice_takes_a_thin_first_row_when_it_is_the_cheapest_fit(programs, monkeypatch):
    """A constructed case (the candidates choose sees are set): four cheap candidates that miss the budget, one
    whose even rows miss it but a thin first row meets it, and a dearer one whose even-row bound meets it.
    choose returns the thin-row plan: the least MACs of every plan of every candidate that meets the budget
    (each planned here, even rows and every thin first row), and Python == host C for it."""
    from mcuforge import patches
    from mcuforge.patches import candidates, choose

    graph = programs["wide"].graph
    by = {(c.split, c.grid): c for c in candidates(graph)}
    misses = [by[4, (3, 2)], by[4, (2, 3)], by[3, (2, 3)], by[3, (3, 3)]]
    thin, dear = by[3, (4, 3)], by[4, (4, 4)]
    budget = 10_500
    found = [*misses, thin, dear]
    assert all(c.bound <= patches.NEAR * budget for c in found)  # all planned by choose
    assert dear.bound <= budget < thin.bound and thin.macs < dear.macs
    assert not any(_fits(graph, c, budget) for c in misses)  # the construction: none of them fits
    fits = {c: _fits(graph, c, budget) for c in (thin, dear)}
    assert fits[thin] and all(first for _a, _m, first in fits[thin]), fits  # only a thin first row meets it
    least = min(m for f in fits.values() for _a, m, _f in f)
    monkeypatch.setattr(patches, "candidates", lambda *a, **k: list(found))
    patched, plan = choose(graph, ram_budget=budget)
    assert (plan.split, plan.grid) == (thin.split, thin.grid) and plan.first > 0, plan
    assert plan.arena_after == patched.arena_bytes <= budget and plan.macs_after == least < dear.macs, plan
    assert (plan.arena_after, plan.macs_after, plan.first) in fits[thin]
    values = _input(graph, np.random.default_rng(29))
    c_got, _ = cruntime.LoadedProgram(serialize(patched)).run(values)
    py = execute(deserialize(serialize(patched)), values)
    assert [a.tobytes() for a in c_got] == [a.tobytes() for a in py] == [a.tobytes() for a in execute(graph, values)]


def _previous_choice(graph, budget):
    """The order choose planned candidates in before least_macs (the 4 of fewest MACs, then the bounds that meet
    the budget first; a thin first row only on a candidate it plans): the reference for the cases that need no
    thin row."""
    from mcuforge import patches

    found = patches.candidates(graph, patches.GRIDS, budget)
    near = sorted((c for c in found if c.bound <= patches.NEAR * budget), key=lambda c: (c.macs, c.bound, c.split))
    order = near[:4] + sorted(near[4:], key=lambda c: (c.bound > budget, c.macs, c.bound, c.split))
    for c in order[:8]:
        patched, n = patches.plan_patched(graph, c, budget)
        if patched.arena_bytes > budget:
            patched, n, c = patches.plan_thin(graph, c, budget, (patched, n))
        if patched.arena_bytes <= budget:
            return c.split, c.grid, c.first, patched.arena_bytes, c.macs, n
    return None


def test_choice_unchanged_where_no_thin_row_is_needed(programs):
    """Under 6 budgets (2 on one model, 4 on the other) that patched programs meet, choose makes the previous
    order's choice (the same split, grid, arena, MACs and depthwise in place) or one of fewer MACs wherever that
    needed no thin first row, and never one of more MACs."""
    from mcuforge.patches import choose

    same = 0
    for name, fractions in (("stem", (0.75, 0.9)), ("wide", (0.3, 0.35, 0.4, 0.5))):
        graph = programs[name].graph
        for budget in (int(graph.arena_bytes * f) for f in fractions):
            plan = choose(graph, ram_budget=budget)[1]
            assert plan.split and plan.arena_after <= budget, (name, budget, plan)  # met by a patched program
            old = _previous_choice(graph, budget)
            assert old is not None and plan.macs_after <= old[4], (name, budget, plan, old)
            if old[2] == 0:  # fewer MACs (a candidate the old order never planned fits), or the same choice
                choice = (plan.split, plan.grid, plan.first, plan.arena_after, plan.macs_after, plan.in_place)
                assert plan.macs_after < old[4] or choice == old, (name, budget, choice, old)
                same += 1
    assert same == 6, same
