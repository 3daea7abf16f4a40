"""Patch-based execution (MCUNetV2, Lin et al. 2021): the leading ops of a network run patch by patch.

The first ``split`` ops of a graph (a *chain*: convolutions, depthwise convolutions, pools, clamps, table
activations and elementwise ops of equal shapes, all on NHWC maps of batch 1) produce one tensor the rest of the
network reads: the chain's output. Its map is cut into a ``grid`` of tiles; for each tile the chain is run on the
input region its receptive field needs (halo recomputation), and the tile is written into the chain's output by
an ``insert_tile`` op. The full-resolution intermediate maps of the chain never exist: the peak is set by one
patch's intermediates (plus the chain's input and output maps) instead of the largest pair of full maps.

The rewrite is a plain graph of existing kernels (every backend runs it as it runs any program, with the same
bytes out as the unpatched graph), made exact by the kernels' CMSIS-NN geometry: an output pixel reads input rows
``oy * stride - pad + i * dilation`` and skips taps outside the input, the output size is the output tensor's. A
patch's op gets the input rows ``[a, b)`` its tile's windows touch (clipped to the map) and the padding
``pad - oy0 * stride + a``: at a patch's interior edge that is 0 and the halo holds the neighbours' real data,
at the map's true border it is the original padding, so the zero point pads exactly where it did. A pool's
explicit ``output_hw`` becomes the tile's.

:func:`patch_graph` rewrites for a given split and grid, :func:`candidates` measures every split and grid (peak
as the arena lower bound of the rewritten graph, MACs), :func:`choose` picks the one meeting a RAM budget with
the fewest extra MACs, or leaves the graph whole when it fits.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .ir import Graph, Op, Tensor, kernel_scratch_bytes
from .kinds import KIND
from .kinds.scratch import OPTIONAL_SCRATCH
from .plan import _peak, allocations, choose_in_place, input_overlap, plan_arena, trim_optional_scratch
from .targets import get_target

CONVS = ("conv2d_s8", "depthwise_conv2d_s8", "conv2d_s4", "depthwise_conv2d_s4")
POOLS = ("avgpool_s8", "maxpool_s8")
ELEMENTWISE = ("clamp_s8", "lut_s8", "add_s8", "mul_s8", "maximum_s8", "minimum_s8")
PATCHABLE = (*CONVS, *POOLS, *ELEMENTWISE)
#: The grids :func:`choose` tries, fewest patches first: square and one row or column more (a grid's first
#: patch row sets how far its output must start before the input it overlaps: :func:`overlap_input`).
GRIDS = tuple(sorted({(r, c) for r in range(2, 9) for c in range(2, 9) if abs(r - c) <= 1},
                     key=lambda g: (g[0] * g[1], -g[0])))

#: :func:`choose` plans the candidates whose bound is within this factor of the budget (the placement may need a
#: little more than the bound, in place may take some off).
NEAR = 1.25
#: At most this many candidates are planned by :func:`least_macs` in order of MACs (planning dominates the
#: choice's time; MobileNetV2-0.35 at 224 has 11 within NEAR cheaper than the one that meets 4x).
PLANNED = 16
#: :func:`least_macs` tries thin first rows (:func:`plan_thin`, several plans each) on a candidate whose even rows'
#: planned arena is within this factor of the budget: a thin row takes the first patch row's buffers down, which
#: took at most 10.3 % off the even rows' arena over the 153 candidates of the two test models and 1.4 % on
#: MobileNetV2-0.35 at 224.
THIN_NEAR = 1.12

Region = tuple[int, int, int, int]  # rows [r0, r1), columns [c0, c1) of a map


@dataclass(frozen=True)
class PatchPlan:
    """What patch-based execution did to a program's RAM and MACs (``Program.patch_plan``).

    ``split`` leading ops run over a ``grid`` of patches (0: the program is whole); ``arena_before`` /
    ``arena_after``: the planned arena of the whole and of the chosen program; ``bound_before``: the whole
    program's per-layer bound (the most bytes live at one op, what no placement of full maps beats);
    ``macs_before`` / ``macs_after``: MACs of the whole and of the patched program (the halo recomputation);
    ``in_place``: depthwise convolutions written over their input (:func:`mcuforge.plan.choose_in_place`);
    ``overlap``: where the chain's output starts before the graph input it overlaps, in bytes (-1: apart;
    :func:`overlap_input`); ``first``: the first patch row's height in rows of the chain's output (0: even
    rows; a thin first row: :func:`plan_thin`)."""

    split: int
    grid: tuple[int, int]
    arena_before: int
    arena_after: int
    bound_before: int
    macs_before: int
    macs_after: int
    budget: int | None = None
    in_place: int = 0  # depthwise ops written over their input (mcuforge.plan.choose_in_place)
    overlap: int = -1  # the chain's output starts this many bytes before the input it overlaps (-1: apart)
    first: int = 0  # rows of the chain's output map in the first patch row (0: even rows; patch_graph)

    @property
    def mac_overhead(self) -> float:
        """Extra MACs of the patched program, as a fraction of the whole program's."""
        return self.macs_after / self.macs_before - 1.0 if self.macs_before else 0.0

    def summary(self) -> str:
        """One line: what ``mcuforge info`` and the HTML report print."""
        budget = f" (ram_budget {self.budget:,} B)" if self.budget is not None else ""
        in_place = f", {self.in_place} depthwise in place" if self.in_place else ""
        if self.overlap >= 0:
            in_place += f", output over the input's dead bytes ({self.overlap:,} B before it)"
        if not self.split:
            fits = "the whole program fits" if self.budget is None or self.arena_after <= self.budget else \
                "no plan meets the budget"
            return f"patches: none, {fits}{budget}: arena {self.arena_after:,} B{in_place}"
        if self.first:
            in_place += f", a first patch row of {self.first} rows"
        return (f"patches: first {self.split} ops over {self.grid[0]}x{self.grid[1]} patches{budget}: arena "
                f"{self.arena_before:,} B -> {self.arena_after:,} B (per-layer bound {self.bound_before:,} B), "
                f"+{100 * self.mac_overhead:.1f} % MACs{in_place}")

    def to_dict(self) -> dict[str, object]:
        return {**dataclasses.asdict(self), "grid": list(self.grid)}

    @classmethod
    def from_dict(cls, d: dict[str, object]) -> PatchPlan:
        return cls(**{**d, "grid": tuple(d["grid"])})  # type: ignore[arg-type]


# ---- receptive fields ---------------------------------------------------------------------------------------

def _window(graph: Graph, op: Op) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int], tuple[int, int]]:
    """(kernel, stride, padding, dilation) of a windowed op, each (rows, columns)."""
    a = op.attrs
    if op.kind in CONVS:
        kernel = tuple(graph.tensors[op.inputs[1]].shape[1:3])
        return kernel, tuple(a["stride"]), tuple(a["padding"]), tuple(a["dilation"])  # type: ignore[return-value]
    return tuple(a["kernel"]), tuple(a["stride"]), tuple(a["padding"]), (1, 1)  # type: ignore[return-value]


def _span(o0: int, o1: int, k: int, s: int, p: int, d: int, n: int) -> tuple[int, int]:
    """Input indices [a, b) that outputs [o0, o1) of a window (kernel k, stride s, pad p, dilation d) read, in
    a map of n."""
    return max(0, o0 * s - p), min(n, (o1 - 1) * s - p + (k - 1) * d + 1)


def _input_region(graph: Graph, op: Op, out: Region, in_hw: tuple[int, int]) -> Region:
    """The region of the op's (spatial) inputs that output region ``out`` needs."""
    if op.kind in ELEMENTWISE:
        return out
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = _window(graph, op)
    r = _span(out[0], out[1], kh, sh, ph, dh, in_hw[0])
    c = _span(out[2], out[3], kw, sw, pw, dw, in_hw[1])
    return (*r, *c)


def _hull(a: Region | None, b: Region) -> Region:
    if a is None:
        return b
    return min(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), max(a[3], b[3])


def _bounds(n: int, parts: int) -> list[int]:
    return [i * n // parts for i in range(parts + 1)]


def row_bounds(h: int, parts: int, first: int = 0) -> list[int]:
    """Patch row boundaries of a map of ``h`` rows: ``parts`` even rows, or (``first`` > 0) a first row of
    ``first`` rows and ``parts - 1`` even rows after it. Raises ValueError when a row would be empty."""
    if not first:
        return _bounds(h, parts)
    if parts < 2 or not 0 < first <= h - (parts - 1):
        raise ValueError(f"a first patch row of {first} leaves no room for {parts - 1} rows in {h}")
    return [0] + [first + b for b in _bounds(h - first, parts - 1)]


# ---- which splits are chains --------------------------------------------------------------------------------

def _activations(graph: Graph, op: Op) -> list[str]:
    return [n for n in op.inputs if n and not graph.tensors[n].is_constant]


def chain_output(graph: Graph, split: int) -> str | None:
    """The one tensor the first ``split`` ops hand to the rest of the graph, when they form a chain that can
    run by patches; else None."""
    if not 0 < split < len(graph.ops):
        return None
    produced: set[str] = set()
    for op in graph.ops[:split]:
        if op.kind not in PATCHABLE or op.backend != "int8" or len(op.outputs) != 1:
            return None
        out = graph.tensors[op.outputs[0]]
        names = [*_activations(graph, op), out.name]
        if any(len(graph.tensors[n].shape) != 4 or graph.tensors[n].shape[0] != 1
               or graph.tensors[n].layout != "nhwc" for n in names):
            return None
        if op.kind in ELEMENTWISE and any(graph.tensors[n].shape != out.shape for n in _activations(graph, op)):
            return None  # broadcasting: its input is not a region of the output's map
        produced.add(out.name)
    later = {n for op in graph.ops[split:] for n in op.inputs} | set(graph.outputs)
    crossing = produced & later
    return crossing.pop() if len(crossing) == 1 else None


# ---- the rewrite --------------------------------------------------------------------------------------------

def patch_graph(graph: Graph, split: int, grid: tuple[int, int], first: int = 0) -> Graph:
    """``graph`` with its first ``split`` ops run over a ``grid`` (rows, columns) of patches of their output
    map (not planned: call :func:`mcuforge.plan.plan_arena`); ``first`` > 0: the first patch row is that many
    rows of the map and the others share the rest evenly (a thin first row: see :func:`row_bounds`). Raises
    ValueError when they are not a chain (:func:`chain_output`) or the grid has more patches along an axis than
    the map has pixels."""
    target = chain_output(graph, split)
    if target is None:
        raise ValueError(f"the first {split} ops are not a chain that can run by patches")
    _, h, w, _ = graph.tensors[target].shape
    if not (1 <= grid[0] <= h and 1 <= grid[1] <= w):
        raise ValueError(f"grid {grid} does not fit the {h}x{w} output map")
    chain = graph.ops[:split]
    tensors = {name: dataclasses.replace(t) for name, t in graph.tensors.items()}
    ops: list[Op] = []
    rows, cols = row_bounds(h, grid[0], first), _bounds(w, grid[1])
    dst = ""
    for i in range(grid[0]):
        for j in range(grid[1]):
            tag = f"@p{i}.{j}"
            tile = (rows[i], rows[i + 1], cols[j], cols[j + 1])
            local = _patch_ops(graph, chain, target, tile, tag, tensors, ops)
            last = i == grid[0] - 1 and j == grid[1] - 1
            out = target if last else f"{target}@i{i}.{j}"
            if not last:
                tensors[out] = dataclasses.replace(graph.tensors[target], name=out, offset=-1)
            ops.append(Op("insert_tile", [local, dst] if dst else [local], [out], {"begin": [0, tile[0], tile[2], 0]},
                          precision=_move_precision(graph.tensors[target]),
                          debug={**chain[-1].debug, "patch": [i, j]}))
            dst = out
    patched = Graph(tensors, ops + [dataclasses.replace(op) for op in graph.ops[split:]], list(graph.inputs),
                    list(graph.outputs), target=graph.target)
    used = {n for op in patched.ops for n in (*op.inputs, *op.outputs)} | set(patched.inputs) | set(patched.outputs)
    patched.tensors = {n: t for n, t in tensors.items() if n in used}
    return patched


def overlap_input(graph: Graph) -> bool:
    """Place the patched chain's output over the graph input's bytes that no later patch reads, at the least
    offset :func:`mcuforge.plan.input_overlap` proves (the first ``insert_tile`` then fills nothing: ``fill`` 0),
    where that lowers the arena's lower bound. Not planned (call :func:`mcuforge.plan.plan_arena`); returns
    whether it did (False: the graph is as it was)."""
    first = next((op for op in graph.ops if op.kind == "insert_tile" and len(op.inputs) == 1), None)
    if first is None or graph.overlaps:
        return False
    t = first.outputs[0]
    before = _peak(graph)
    for x in graph.inputs:
        first.attrs["fill"] = 0
        d = input_overlap(graph, x, t)
        if d is not None:
            graph.overlaps[x] = (t, d)
            if _peak(graph) < before:
                return True
            del graph.overlaps[x]
        del first.attrs["fill"]
    return False


def _move_precision(t: Tensor) -> str:
    return {"int8": "a8", "int16": "a16"}.get(t.dtype, "fp32")


def _patch_ops(graph: Graph, chain: list[Op], target: str, tile: Region, tag: str, tensors: dict[str, Tensor],
               ops: list[Op]) -> str:
    """Append the ops of one patch computing ``tile`` of ``target``; returns the tensor holding the tile."""
    need: dict[str, Region] = {target: tile}
    for op in reversed(chain):  # every consumer of a tensor comes after its producer: need is complete
        out = op.outputs[0]
        if out not in need:
            continue
        for x in _activations(graph, op):
            need[x] = _hull(need.get(x), _input_region(graph, op, need[out], graph.tensors[x].shape[1:3]))
    local: dict[str, tuple[str, Region]] = {}  # tensor -> (the patch's tensor holding it, its region)
    for index, op in enumerate(chain):
        out = op.outputs[0]
        if out not in need:
            continue  # nothing of this patch reads it
        region = need[out]
        inputs = []
        for x in op.inputs:
            if not x or graph.tensors[x].is_constant:
                inputs.append(x)
                continue
            xt = graph.tensors[x]
            name, have = local.get(x, (x, (0, xt.shape[1], 0, xt.shape[2])))
            want = _input_region(graph, op, region, xt.shape[1:3])
            if want != have:  # a sub-region of what the patch holds (or of a full input map)
                sliced = f"{x}{tag}.s{index}"
                tensors[sliced] = dataclasses.replace(
                    xt, name=sliced, shape=(1, want[1] - want[0], want[3] - want[2], xt.shape[3]), offset=-1)
                ops.append(Op("slice", [name], [sliced], {
                    "begin": [0, want[0] - have[0], want[2] - have[2], 0],
                    "end": [1, want[1] - have[0], want[3] - have[2], xt.shape[3]], "step": [1, 1, 1, 1]},
                    precision=_move_precision(xt), debug=dict(op.debug)))
                name = sliced
            inputs.append(name)
        ot = graph.tensors[out]
        name = f"{out}{tag}"
        tensors[name] = dataclasses.replace(ot, name=name, shape=(1, region[1] - region[0], region[3] - region[2],
                                                                   ot.shape[3]), offset=-1)
        attrs = dict(op.attrs)
        if op.kind in CONVS or op.kind in POOLS:
            (_, _), (sh, sw), (ph, pw), _ = _window(graph, op)
            x = graph.tensors[op.inputs[0]]
            want = _input_region(graph, op, region, x.shape[1:3])
            # pad' = pad - oy0 * stride + a: 0 at an interior edge, the original padding at the map's border
            attrs["padding"] = [ph - region[0] * sh + want[0], pw - region[2] * sw + want[2]]
            if op.kind in POOLS:
                attrs["output_hw"] = [region[1] - region[0], region[3] - region[2]]
        sub = Op(op.kind, inputs, [name], attrs, backend=op.backend, reason=op.reason,
                 debug={**op.debug, "patch": tag[2:]}, precision=op.precision)
        sub.scratch_bytes = _scratch(graph, op, sub, tensors[name].shape)
        ops.append(sub)
        local[out] = (name, region)
    return local[target][0]


def _scratch(graph: Graph, op: Op, sub: Op, out_shape: tuple[int, ...]) -> int:
    """The sub-op's scratch: the kernel's for its own output size (depthwise rows depend on it)."""
    if not op.scratch_bytes:
        return 0
    if op.kind == "add_s8":
        return kernel_scratch_bytes(op.kind, (), graph.target)
    need = kernel_scratch_bytes(op.kind, graph.tensors[op.inputs[1]].shape, graph.target, out_shape, sub.attrs)
    if (op.kind, get_target(graph.target).kernel_path) in OPTIONAL_SCRATCH:
        return min(need, op.scratch_bytes)  # the whole op's plan: its faster path only if it was given room
    return need


# ---- measuring and choosing ---------------------------------------------------------------------------------

def macs(graph: Graph) -> int:
    """Multiply-accumulates of the graph's convolutions (every MAC of a chain; the rest are the same whole or
    patched)."""
    total = 0
    for op in graph.ops:
        rule = KIND[op.kind].macs if op.kind in KIND else ""
        if rule in ("conv", "depthwise"):
            w = graph.tensors[op.inputs[1]].shape
            total += graph.tensors[op.outputs[0]].numel * w[1] * w[2] * (w[3] if rule == "conv" else 1)
        elif rule == "fully_connected":
            total += graph.tensors[op.outputs[0]].numel * graph.tensors[op.inputs[1]].shape[1]
    return total


def peak_bound(graph: Graph) -> int:
    """The arena lower bound (``plan.arena_lower_bound``) by one sweep over the allocations' lifetimes."""
    return _peak(graph)


@dataclass(frozen=True)
class Candidate:
    split: int
    grid: tuple[int, int]
    bound: int  # the patched graph's arena lower bound (its output over the dead input where that lowers it)
    macs: int
    overlap: bool = False  # the output over the input's dead bytes (overlap_input)
    first: int = 0  # the first patch row's height (0: even rows; patch_graph)


def rest_bounds(graph: Graph) -> list[int]:
    """``rest[s]``: the most bytes live at one op from op ``s`` on in ``graph`` (scratch included). The ops after a
    patched chain of ``s`` ops are the whole graph's, with the same live allocations (only the chain's output
    crosses the split, as large as it is whole), so every patched program of split ``s`` has a bound of at least
    ``rest[s]`` (:func:`candidates` skips a split whose floor is far over the budget)."""
    n = len(graph.ops)
    live = [0] * (n + 2)
    for first, last, size in allocations(graph).values():
        live[max(first, 0)] += size
        live[min(last, n) + 1] -= size
    rest, total = [0] * (n + 1), 0
    sums = []
    for k in range(n + 1):
        total += live[k]
        sums.append(total)
    for k in range(n, -1, -1):
        rest[k] = max(sums[k], rest[k + 1] if k < n else 0)
    return rest


def candidates(graph: Graph, grids: tuple[tuple[int, int], ...] = GRIDS, budget: int | None = None,
               near: float = NEAR) -> list[Candidate]:
    """Every chain split of ``graph`` with every grid that fits its output map: bound and MACs. With ``budget``,
    a split's grids stop at the first whose bound meets it (fewer patches recompute less halo), and a split whose
    floor (:func:`rest_bounds`) is over ``near`` times the budget is not measured: none of its candidates could
    be near enough for :func:`choose` to plan."""
    found = []
    floor = rest_bounds(graph) if budget is not None else []
    for split in range(1, len(graph.ops)):
        target = chain_output(graph, split)
        if target is None:
            if any(op.kind not in PATCHABLE for op in graph.ops[:split]):
                break  # no longer split is a chain either
            continue
        if budget is not None and floor[split] > near * budget:
            continue
        _, h, w, _ = graph.tensors[target].shape
        for grid in grids:
            if grid[0] <= h and grid[1] <= w:
                g = patch_graph(graph, split, grid)
                over = overlap_input(g)
                found.append(Candidate(split, grid, peak_bound(g), macs(g), over))
                if budget is not None and found[-1].bound <= budget:
                    break
    return found


def choose(graph: Graph, ram_budget: int | None = None, patches: int | tuple[int, int] | None = None
           ) -> tuple[Graph, PatchPlan | None]:
    """The program to ship and what patching did: ``graph`` (planned) when no budget and no grid is asked for
    (None: today's plan exactly) or when it fits ``ram_budget`` whole; else the patched graph (planned) meeting
    the budget with the fewest MACs, or with ``patches`` (a grid, n for n x n) the split of least peak at that
    grid. Where the arena is still over the budget, depthwise convolutions write over their input where that
    lowers it (:func:`mcuforge.plan.choose_in_place`), first on the whole program. When nothing meets the budget
    the graph is left whole (the plan says so: arena over budget)."""
    if ram_budget is None and patches is None:
        return graph, None
    before = graph.arena_bytes or plan_arena(graph)
    base = PatchPlan(0, (1, 1), before, before, peak_bound(graph), macs(graph), macs(graph), ram_budget)
    if patches is None and before <= ram_budget:  # type: ignore[operator]
        return graph, base
    if patches is None:  # in place, whole: no extra MACs
        whole = copy_graph(graph)
        n = choose_in_place(whole)
        if n and whole.arena_bytes <= ram_budget:  # type: ignore[operator]
            return whole, dataclasses.replace(base, arena_after=whole.arena_bytes, in_place=n)
    grids = GRIDS if patches is None else ((patches, patches) if isinstance(patches, int) else tuple(patches),)
    found = candidates(graph, grids, ram_budget if patches is None else None)
    if patches is not None:  # the split of least bound at that grid
        if not found:
            return graph, base
        c = min(found, key=lambda c: (c.bound, c.macs, c.split))
        patched, n = plan_patched(graph, c, ram_budget, in_place=ram_budget is not None)
        return patched, _plan(base, patched, n, c)
    best = least_macs(graph, found, ram_budget)  # type: ignore[arg-type]
    if best is not None:
        return best[0], _plan(base, *best)
    return graph, base


def _plan(base: PatchPlan, patched: Graph, n: int, c: Candidate) -> PatchPlan:
    overlap = next(iter(patched.overlaps.values()), ("", -1))[1]
    return dataclasses.replace(base, split=c.split, grid=c.grid, arena_after=patched.arena_bytes, macs_after=c.macs,
                               in_place=n, overlap=overlap, first=c.first)


def least_macs(graph: Graph, found: list[Candidate], ram_budget: int, planned: int = PLANNED
               ) -> tuple[Graph, int, Candidate] | None:
    """The planned program of least MACs among ``found`` whose arena meets ``ram_budget`` (with depthwise in
    place where that lowers it, and a thin first patch row (:func:`plan_thin`) where the even rows miss by no more
    than :data:`THIN_NEAR`), with its number in place and candidate; None when none does. The bound is a floor the
    placement may miss by a little and in place may take some off, so the candidates within :data:`NEAR` of the
    budget are planned in order of their even rows' MACs (a thin first row moves them by the halo clipped at the
    map's border only), until the next one has no fewer MACs than the best met so far (a thin first row is tried
    on each before a dearer one is accepted); at most ``planned`` of them, then, if none met the budget, at most
    ``planned`` more among those whose even-row bound meets it (the fewest MACs first)."""
    near = sorted((c for c in found if c.bound <= NEAR * ram_budget), key=lambda c: (c.macs, c.bound, c.split))
    order = near[:planned] + [c for c in near[planned:] if c.bound <= ram_budget][:planned]
    best: tuple[Graph, int, Candidate] | None = None
    for k, c in enumerate(order):
        if best is not None and (c.macs >= best[2].macs or k >= planned):
            break
        patched, n = plan_patched(graph, c, ram_budget)
        if ram_budget < patched.arena_bytes <= THIN_NEAR * ram_budget:  # a thinner first row may close the gap
            patched, n, c = plan_thin(graph, c, ram_budget, (patched, n))
        if patched.arena_bytes <= ram_budget and (best is None or c.macs < best[2].macs):
            best = (patched, n, c)
    return best


def thin_rows(graph: Graph, c: Candidate) -> list[int]:
    """The first-row heights :func:`plan_thin` tries for candidate ``c``: from half an even row to one row less
    than it (none for one patch row or a candidate without the overlap)."""
    if c.grid[0] < 2 or not c.overlap:
        return []
    even = graph.tensors[chain_output(graph, c.split)].shape[1] // c.grid[0]  # type: ignore[index]
    return list(range(max(1, even // 2), even))


def plan_thin(graph: Graph, c: Candidate, ram_budget: int | None = None,
              best: tuple[Graph, int] | None = None) -> tuple[Graph, int, Candidate]:
    """Candidate ``c`` with a thinner first patch row (:func:`thin_rows`), planned as :func:`plan_patched` does:
    the least arena of those and of ``best`` (``c`` planned already, if given), stopping at the first that meets
    ``ram_budget``; with its number in place and the candidate (its ``first``, bound and MACs). With the output
    over the input (:func:`overlap_input`) and the input's rows freed as their last patch reads them
    (:func:`mcuforge.plan.input_bands`), every patch row but the first may put its buffers in the input's dead
    rows: the first row sets the peak, and a thinner one needs less."""
    if best is None:
        best = plan_patched(graph, c, ram_budget)
    chosen = c
    for first in thin_rows(graph, c):
        if ram_budget is not None and best[0].arena_bytes <= ram_budget:
            break
        thin = dataclasses.replace(c, first=first)
        patched, n = plan_patched(graph, thin, ram_budget)
        if patched.arena_bytes < best[0].arena_bytes:
            best, chosen = (patched, n), dataclasses.replace(thin, bound=peak_bound(patched), macs=macs(patched))
    return best[0], best[1], chosen


def plan_patched(graph: Graph, c: Candidate, ram_budget: int | None = None, in_place: bool = True
                 ) -> tuple[Graph, int]:
    """Candidate ``c`` of ``graph`` planned: with its output over the input's dead bytes (``c.overlap``) and
    without, the smaller planned arena (each with depthwise convolutions in place where that lowers it, when
    ``in_place`` and the arena is over ``ram_budget`` (any arena without one)); and the number in place."""
    best: tuple[Graph, int] | None = None
    for overlap in (False, True) if c.overlap else (False,):
        patched = patch_graph(graph, c.split, c.grid, c.first)
        if overlap:
            overlap_input(patched)
        n = 0
        # plans the arena; a patch op keeps its whole op's faster-path scratch only where the patched arena
        # stays what the slower paths need, or within ram_budget (the whole op's room was the unpatched arena's)
        trim_optional_scratch(patched, ram_budget)
        if patched.arena_bytes > (ram_budget if ram_budget is not None else -1) and in_place:
            n = choose_in_place(patched)
        if best is None or patched.arena_bytes < best[0].arena_bytes:
            best = (patched, n)
    assert best is not None
    return best


def copy_graph(graph: Graph) -> Graph:
    """A copy the planner may change (offsets, in-place marks, scratch) without touching ``graph``."""
    return dataclasses.replace(graph, tensors={n: dataclasses.replace(t) for n, t in graph.tensors.items()},
                               ops=[dataclasses.replace(op) for op in graph.ops], overlaps=dict(graph.overlaps))
