"""Arena planning: every activation and every op's scratch buffer gets an offset in one buffer,
decided at compile time.

A tensor lives from the op that writes it (or the start, for inputs) to the last op that reads it
(or the end, for outputs); an op's scratch buffer (``Op.scratch_bytes``: conv2d_s8's im2col
columns, an NPU subgraph's scratch region) lives during its op only, so ops far apart share the
same bytes. Allocations are placed one by one at the lowest 16-byte aligned offset that does not
overlap any placed allocation whose lifetime intersects -- the greedy strategy of TFLite Micro's
planner -- in a few orders (largest first, as TFLite Micro does; earliest first; largest size x
lifetime first), keeping the smallest arena: no one order wins on every graph (largest-first
leaves MobileNetV1 17 % above the lower bound, earliest-first is at the bound there but not on
ResNet-8). ``arena_lower_bound`` is what no placement can beat: the largest sum of (aligned)
allocations live at the same op.

An op's inputs, outputs and scratch never share bytes, so every kernel may read its inputs while
writing its output -- except where writing in place is legal and saves memory (``in_place_input``):

- a ``reshape`` copies nothing: its output takes its input's bytes;
- the elementwise int8 ops (``clamp_s8``, ``lut_s8``, ``add_s8``, ``mul_s8``, ``maximum_s8``,
  ``minimum_s8``) write their output
  onto an input of the output's size: every kernel (Python, C portable, DSP, MVE) reads element i
  of that input before it writes element i of the output, and no other element after it;

in both cases only when no later op reads the input and it is not a graph output. (A graph
input's bytes are reused like any tensor's once no op reads it: set the inputs before every
``mf_invoke``.)

The kinds of :data:`IN_PLACE_IF_CHOSEN` write in place only where :func:`choose_in_place` marked the op
(``Op.in_place``: where that lowers the arena, for a program asked to fit a RAM budget; in every compile where
the in-place kernel is as fast as out of place and that lowers the arena, :func:`choose_free_in_place`): a
``depthwise_conv2d_s8`` of depth multiplier 1 and batch 1 writes its output (as large as its input, or smaller
when strided) from its input's first byte -- TinyEngine's in-place depthwise: the kernel computes one channel's
outputs into its scratch (Ho x Wo bytes) and then stores them in that channel's slots, which no other channel
reads; on the DSP cores the channel-planar 3x3 path runs over the input instead where it takes the op
(``ir.depthwise_in_place_fast``; its ring of input rows is copied before the output rows over them are written).

Concat by placement: a ``concat_s8`` whose input slices are contiguous bytes of its output (every axis
before the concat axis has extent 1: concatenated flat or pooled features, an outer-axis sequence concat)
lets the producer of each input write straight into its slice (``alias_offsets``: the input's offset is the
output's plus the bytes of the inputs before it), and the kernel copies nothing where source and destination
are the same bytes. Only for an input read by that concat alone, not a graph input or output, and only
where :func:`choose_concat_placement` finds it lowers the planned arena (``Op.in_place`` on the concat).
Along the channels of 4-D NHWC maps (fire modules, Inception blocks) an input written by a conv2d_s8, avgpool_s8 or
maxpool_s8 is placed pitched (``Tensor.pitch``, :func:`channel_pitches`: its kernel writes pixel p's channels at
``out + p * pitch``, format 3.4; docs/memory.md).
"""

from __future__ import annotations

import bisect
from collections.abc import Collection

from .ir import (
    IN_PLACE_INPUTS,
    PITCHED_OUTPUT_KINDS,
    Graph,
    Op,
    concat_channel_start,
    concat_slice_start,
    depthwise_in_place_fast,
    scratch_plans,
)
from .kinds.scratch import OPTIONAL_SCRATCH

ALIGNMENT = 16

Key = str | int  # an allocation: a tensor (its name) or the scratch buffer of op i (the int i)

#: Kinds written in place only where the planner chose it (``Op.in_place``; :func:`choose_in_place`).
IN_PLACE_IF_CHOSEN = ("depthwise_conv2d_s8",)


def _align(n: int) -> int:
    return (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


def lifetimes(graph: Graph) -> dict[str, tuple[int, int]]:
    """(first op index, last op index) of every activation; inputs start at -1, outputs end past
    the last op."""
    end = len(graph.ops)
    life: dict[str, list[int]] = {name: [-1, -1] for name in graph.inputs}
    for i, op in enumerate(graph.ops):
        for name in op.outputs:
            life.setdefault(name, [i, i])
        for name in op.inputs:
            if not name or graph.tensors[name].is_constant:
                continue
            if name not in life:
                raise ValueError(f"op {i} ({op.kind}) reads tensor {name!r} before any op writes it")
            life[name][1] = max(life[name][1], i)
    for name in graph.outputs:
        if name in life:
            life[name][1] = end
    for span in life.values():
        span[1] = max(span)
    return {name: (span[0], span[1]) for name, span in life.items()}


def alias_roots(graph: Graph) -> dict[str, str]:
    """Tensor -> the tensor whose allocation it shares (itself when it has its own): the output of
    an op that writes in place (module docstring) shares its input's root; chains share one root."""
    return {name: r for name, (r, _) in alias_offsets(graph).items()}


def alias_offsets(graph: Graph, overlaps: bool = True) -> dict[str, tuple[str, int]]:
    """Tensor -> (its alias root, its byte offset inside the root's allocation): 0 for an in-place output; a
    placed concat's input (:func:`placed_concat_inputs`) at its slice of the concat's output; a graph input
    placed over a patched chain's output (``Graph.overlaps``, :func:`input_overlap`) at its offset there, unless
    ``overlaps`` is False (then it is its own root, tied to that output's by :func:`overlap_ties`)."""
    life = lifetimes(graph)
    outputs = set(graph.outputs)
    parent: dict[str, tuple[str, int]] = {}
    readers: dict[str, int] = {}
    for op in graph.ops:
        for name in op.inputs:
            readers[name] = readers.get(name, 0) + 1
    for i, op in enumerate(graph.ops):
        src = in_place_input(graph, i, life, outputs)
        if src is not None:
            parent[op.outputs[0]] = (src, 0)
        if op.in_place and op.kind == "concat_s8":
            for name, at in placed_concat_inputs(graph, i, life, outputs, readers, parent).items():
                parent[name] = (op.outputs[0], at)
    for x, (t, at) in graph.overlaps.items() if overlaps else ():  # a graph input over a chain's output
        if x in life and t in life and x not in parent:
            parent[x] = (t, at)
    resolved: dict[str, tuple[str, int]] = {}
    for name in life:
        r, at = name, 0
        while r in parent:  # chains: an in-place output of a placed input, a concat placed in a concat
            r, d = parent[r]
            at += d
        resolved[name] = (r, at)
    return resolved


def placed_concat_inputs(graph: Graph, i: int, life: dict[str, tuple[int, int]], outputs: set[str],
                         readers: dict[str, int], parent: dict[str, tuple[str, int]]) -> dict[str, int]:
    """The inputs of ``concat_s8`` op ``i`` its producers may write straight into the output (input -> byte
    offset in the output): the slice is contiguous (every axis before the concat axis has extent 1), the input
    is written by an op (not a graph input, not a constant), is not a graph output, is read by this concat
    alone and once, and is its own allocation (not an in-place output). A concat_s8 copies bytes (the lowering
    requantizes an input of other qparams first), so the placed input is already the output's bytes.

    Along the channels of 4-D NHWC maps (:func:`mcuforge.ir.concat_channel_start`: SqueezeNet's fire modules,
    Inception blocks) the slice is a run of channels in every pixel: an input written by the only output of an op
    of :data:`mcuforge.ir.PITCHED_OUTPUT_KINDS` is placed there pitched (:func:`channel_pitches`), the concat's
    output being its own allocation (not placed in turn)."""
    op = graph.ops[i]
    placed: dict[str, int] = {}
    if len(op.outputs) != 1 or op.outputs[0] in parent:
        return placed
    writer = {n: o for o in graph.ops for n in o.outputs}
    for name in op.inputs:
        t = graph.tensors.get(name) if name else None
        if (t is None or t.is_constant or t.nbytes == 0 or name in outputs or name in parent
                or life[name][0] < 0 or life[name][1] != i or readers.get(name) != 1):
            continue
        at = concat_slice_start(op, graph.tensors, name)
        if at is not None:
            placed[name] = at
            continue
        at = concat_channel_start(op, graph.tensors, name)
        producer = writer.get(name)
        if at is not None and producer is not None and producer.kind in PITCHED_OUTPUT_KINDS \
                and len(producer.outputs) == 1 and t.shape[3] < graph.tensors[op.outputs[0]].shape[3]:
            placed[name] = at
    return placed


def channel_pitches(graph: Graph, aliases: dict[str, tuple[str, int]]) -> dict[str, int]:
    """The pitch (``Tensor.pitch``) of every input placed on its channel slice of a ``concat_s8`` (``aliases``:
    :func:`alias_offsets`; placed along the channels of a map of more than one pixel): the output's channels."""
    pitches: dict[str, int] = {}
    for op in graph.ops:
        if op.kind != "concat_s8" or not op.in_place:
            continue
        out = graph.tensors[op.outputs[0]]
        root = aliases[op.outputs[0]][0]
        for name in op.inputs:
            if (name and name != root and aliases.get(name, (name, 0))[0] == root
                    and concat_slice_start(op, graph.tensors, name) is None
                    and concat_channel_start(op, graph.tensors, name) is not None):
                pitches[name] = out.shape[-1]
    return pitches


def choose_concat_placement(graph: Graph) -> int:
    """Mark (``Op.in_place``) each ``concat_s8`` whose producers may write into its output
    (:func:`placed_concat_inputs`) where that lowers the planned arena, one at a time; replans. Returns the
    number of concats placed (0: the graph is as it was, planned)."""
    life, outputs = lifetimes(graph), set(graph.outputs)
    readers: dict[str, int] = {}
    for op in graph.ops:
        for name in op.inputs:
            readers[name] = readers.get(name, 0) + 1
    candidates = [i for i, op in enumerate(graph.ops) if op.kind == "concat_s8" and not op.in_place
                  and placed_concat_inputs(graph, i, life, outputs, readers, {})]
    best, placed = plan_arena(graph), 0
    for i in candidates:
        graph.ops[i].in_place = True
        arena = plan_arena(graph)
        if arena < best:
            best, placed = arena, placed + 1
        else:
            graph.ops[i].in_place = False
    plan_arena(graph)
    return placed


def in_place_input(graph: Graph, i: int, life: dict[str, tuple[int, int]], outputs: set[str]) -> str | None:
    """The input op ``i`` writes its output onto, or None."""
    op = graph.ops[i]
    positions = IN_PLACE_INPUTS.get(op.kind, ())
    if not positions or len(op.outputs) != 1:
        return None
    if op.kind in IN_PLACE_IF_CHOSEN:
        return op.inputs[0] if op.in_place and in_place_legal(graph, i, life, outputs) else None
    dst = graph.tensors[op.outputs[0]]
    for pos in positions:
        src = op.inputs[pos] if pos < len(op.inputs) else ""
        if not src or graph.tensors[src].is_constant or src in outputs or life[src][1] != i:
            continue
        if graph.tensors[src].nbytes == dst.nbytes:
            return src
    return None


def in_place_legal(graph: Graph, i: int, life: dict[str, tuple[int, int]], outputs: set[str]) -> bool:
    """Whether op ``i`` (a kind of :data:`IN_PLACE_IF_CHOSEN`) may write over its input 0: the input's last
    reader, not a graph output; depth multiplier 1, batch 1, an output no larger than the input (its kernel's
    channel-by-channel path, which needs :func:`in_place_scratch` bytes of scratch)."""
    op = graph.ops[i]
    src = op.inputs[0]
    x, out = graph.tensors[src], graph.tensors[op.outputs[0]]
    return (not x.is_constant and src not in outputs and life[src][1] == i and op.attrs.get("depth_multiplier") == 1
            and len(x.shape) == 4 and x.shape[0] == 1 and out.shape[3] == x.shape[3] and out.nbytes <= x.nbytes)


def in_place_scratch(graph: Graph, op: Op) -> int:
    """The scratch an in-place depthwise op needs: one channel's outputs (Ho x Wo int8), 16-byte aligned."""
    _, oh, ow, _ = graph.tensors[op.outputs[0]].shape
    return _align(oh * ow)


def choose_in_place(graph: Graph, only: Collection[int] | None = None) -> int:
    """Mark (``Op.in_place``) the ops of :data:`IN_PLACE_IF_CHOSEN` kinds (those of ``only``, when given) that may
    write over their input where that lowers the arena's lower bound, one at a time while it does; each marked
    op's scratch grows to what its in-place path needs. Then plans: keeps the marks only if the planned arena is
    smaller than without them. Returns the number of ops marked (0: the graph is as it was, planned)."""
    life, outputs = lifetimes(graph), set(graph.outputs)
    legal = [i for i, op in enumerate(graph.ops) if op.kind in IN_PLACE_IF_CHOSEN and not op.in_place
             and (only is None or i in only) and in_place_legal(graph, i, life, outputs)]
    before = plan_arena(graph)
    scratch = {i: graph.ops[i].scratch_bytes for i in legal}
    # One layer's ops across the patches of a patched chain (mcuforge.patches) are marked together: each patch
    # peaks alike, so marking one of them alone never lowers the peak.
    groups: dict[object, list[int]] = {}
    for i in legal:
        op = graph.ops[i]
        layer = op.outputs[0].rsplit("@p", 1)[0]  # a patch's op writes "<the layer's output>@p<i>.<j>"
        groups.setdefault(layer if "patch" in op.debug else i, []).append(i)
    best, chosen = _peak(graph), []
    changed = True
    while changed:  # marking one op can move the peak onto another: repeat until no mark lowers it
        changed = False
        for group in groups.values():
            if graph.ops[group[0]].in_place:
                continue
            for i in group:
                op = graph.ops[i]
                op.in_place, op.scratch_bytes = True, max(scratch[i], in_place_scratch(graph, op))
            peak = _peak(graph)
            if peak < best:
                best, changed = peak, True
                chosen += group
            else:
                for i in group:
                    graph.ops[i].in_place, graph.ops[i].scratch_bytes = False, scratch[i]
    arena = plan_arena(graph)
    for group in groups.values():  # a mark that leaves the peak may still let the placement get nearer to it
        if arena <= best:
            break
        if graph.ops[group[0]].in_place:
            continue
        for i in group:
            graph.ops[i].in_place = True
            graph.ops[i].scratch_bytes = max(scratch[i], in_place_scratch(graph, graph.ops[i]))
        if _peak(graph) <= best and plan_arena(graph) < arena:
            arena = graph.arena_bytes
            chosen += group
        else:
            for i in group:
                graph.ops[i].in_place, graph.ops[i].scratch_bytes = False, scratch[i]
    if chosen and plan_arena(graph) >= before:
        for i in chosen:
            graph.ops[i].in_place, graph.ops[i].scratch_bytes = False, scratch[i]
        chosen = []
        plan_arena(graph)
    return len(chosen)


def choose_free_in_place(graph: Graph) -> int:
    """:func:`choose_in_place` over the depthwise ops whose in-place kernel is as fast as out of place on the
    graph's target (:func:`mcuforge.ir.depthwise_in_place_fast`: the DSP channel-planar path, whose ring would
    otherwise be live beside the op's input and output): every compile takes those where they lower the arena.
    All of them at once first (at no cost in speed; like layers tie at the peak, where one mark alone lowers
    nothing: DS-CNN's four), kept if the planned arena is smaller; else one at a time. Returns the number marked."""
    t, life, outputs = graph.tensors, lifetimes(graph), set(graph.outputs)
    fast = [i for i, op in enumerate(graph.ops) if op.kind == "depthwise_conv2d_s8" and not op.in_place
            and len(op.inputs) > 1 and in_place_legal(graph, i, life, outputs)
            and depthwise_in_place_fast(t[op.inputs[1]].shape, t[op.inputs[0]].shape, t[op.outputs[0]].shape,
                                        op.attrs, graph.target)]
    if not fast:
        return 0
    before, scratch = graph.arena_bytes or plan_arena(graph), {i: graph.ops[i].scratch_bytes for i in fast}
    for i in fast:
        graph.ops[i].in_place = True  # plan_arena gives each its in-place scratch
    if plan_arena(graph) < before:
        return len(fast)
    for i in fast:
        graph.ops[i].in_place, graph.ops[i].scratch_bytes = False, scratch[i]
    plan_arena(graph)
    return choose_in_place(graph, set(fast))


def overlap_ties(graph: Graph) -> dict[Key, tuple[Key, int]]:
    """For ``allocations(graph, overlaps=False)``: each band of an overlapped input (:func:`input_bands`) -> (the
    allocation it is tied to, the offset of the band's first byte after that allocation's)."""
    offsets = alias_offsets(graph, False)
    ties: dict[Key, tuple[Key, int]] = {}
    for x, (t, d) in graph.overlaps.items():
        if x in offsets and t in offsets:
            for key, start, _end, _last in input_bands(graph, x):
                ties[key] = (offsets[t][0], offsets[t][1] + d + start)
    return ties


def input_bands(graph: Graph, x: str) -> list[tuple[str, int, int, int]]:
    """The bands of overlapped graph input ``x`` (``Graph.overlaps``), each its own allocation tied to the patched
    chain's output: (key, first byte, end byte, last op reading it), runs of whole rows of the map with the same
    last reader (a ``slice`` reads its box's rows, any other op all of ``x``; a row no op reads is dead from the
    start, last -1). Once every op reading a band has run, its bytes are free for later patches' buffers. The last
    band ends at ``x``'s aligned size; a map that is not 4-D is one band."""
    t = graph.tensors[x]
    size = _size(t.nbytes)
    if len(t.shape) != 4 or t.shape[0] != 1 or t.shape[1] < 2:
        return [(f"{x}@band0", 0, size, lifetimes(graph)[x][1])]
    rows, row_bytes = t.shape[1], t.nbytes // t.shape[1]
    last = [-1] * rows
    for i, op in enumerate(graph.ops):
        if x in op.inputs:
            for a, b in _reads(graph, op, x):
                for r in range(a // row_bytes, min(rows, -(-b // row_bytes))):
                    last[r] = i
    if x in graph.outputs:
        last = [len(graph.ops)] * rows
    bands: list[tuple[str, int, int, int]] = []
    for r in range(rows):
        if bands and bands[-1][3] == last[r]:
            key, start, _end, at = bands[-1]
            bands[-1] = (key, start, (r + 1) * row_bytes, at)
        else:
            bands.append((f"{x}@band{len(bands)}", r * row_bytes, (r + 1) * row_bytes, last[r]))
    key, start, _end, at = bands[-1]
    bands[-1] = (key, start, size, at)
    return bands


def _tied_spans(graph: Graph) -> tuple[dict[Key, tuple[int, int, int]], dict[Key, tuple[Key, int]],
                                        list[tuple[int, int, int]]]:
    """The allocations with overlapped inputs as their bands, the ties, and (first, last, bytes) of each tied
    group (an output and the bands over it) standing for its members in a live sum: the union of its live
    members' bytes, op by op (bytes two members share counted once)."""
    spans, ties = allocations(graph, False), overlap_ties(graph)
    groups: dict[Key, list[tuple[Key, int]]] = {}
    for k, (r, at) in ties.items():
        groups.setdefault(r, [(r, 0)]).append((k, at))
    united = []
    for members in groups.values():
        points = sorted({spans[k][0] for k, _ in members} | {spans[k][1] + 1 for k, _ in members})
        for p, q in zip(points, points[1:], strict=False):
            live = _merge([(at, at + spans[k][2]) for k, at in members if spans[k][0] <= p <= spans[k][1]])
            if live:
                united.append((p, q - 1, sum(b - a for a, b in live)))
    grouped = {k for members in groups.values() for k, _ in members}
    return {k: v for k, v in spans.items() if k not in grouped}, ties, united


def _peak(graph: Graph) -> int:
    """``arena_lower_bound`` by one sweep over the allocations' lifetimes (fast on long graphs)."""
    events: dict[int, int] = {}
    spans, _ties, united = _tied_spans(graph)
    for first, last, size in [*spans.values(), *united]:
        events[first] = events.get(first, 0) + size
        events[last + 1] = events.get(last + 1, 0) - size
    live = best = 0
    for at in sorted(events):
        live += events[at]
        best = max(best, live)
    return best


def allocations(graph: Graph, overlaps: bool = True) -> dict[Key, tuple[int, int, int]]:
    """(first op, last op, aligned bytes) of every allocation: one per alias root (the union of its
    members' lifetimes) and one per op scratch buffer (its op only). An input placed over a patched chain's
    output (``Graph.overlaps``) shares that output's allocation, its union of bytes for their union of lifetimes
    (what any placement may use), or with ``overlaps=False`` is its bands (:func:`input_bands`: rows that die
    with their last reader), each tied to that output (:func:`overlap_ties`: the arena planner places them
    together and counts their shared bytes once)."""
    life = lifetimes(graph)
    spans: dict[Key, tuple[int, int, int]] = {}
    for name, (r, at) in alias_offsets(graph, overlaps).items():
        first, last = life[name]  # the allocation spans its members (an overlapped input may end past the root)
        f0, l0, s0 = spans.get(r, (first, last, 0))
        spans[r] = (min(f0, first), max(l0, last), max(s0, _size(at + graph.tensors[name].nbytes)))
    for x in () if overlaps else graph.overlaps:
        if spans.get(x) is not None and x in graph.inputs:
            first = spans.pop(x)[0]
            for key, start, end, last in input_bands(graph, x):
                spans[key] = (first, max(first, last), end - start)
    for i, op in enumerate(graph.ops):
        if op.scratch_bytes:
            spans[i] = (i, i, _size(op.scratch_bytes))
    return spans


def _size(nbytes: int) -> int:
    return _align(max(nbytes, 1))


def arena_lower_bound(graph: Graph, scratch: bool = True) -> int:
    """The largest sum of allocation sizes live at one op: no placement of these lifetimes fits in
    less. ``scratch=False``: tensors only (the op scratch buffers left out)."""
    every, _ties, united = _tied_spans(graph)
    spans = [v for k, v in every.items() if scratch or isinstance(k, str)] + united
    points = {first for first, _, _ in spans}  # the live set only grows where an allocation starts
    return max((sum(s for f, l, s in spans if f <= i <= l) for i in points), default=0)


def _place(spans: dict[Key, tuple[int, int, int]], order: list[Key],
           ties: dict[Key, tuple[Key, int]] | None = None) -> tuple[int, dict[Key, int]]:
    """First fit in ``order``: each allocation at the lowest aligned offset free for its whole lifetime; a tied
    group (``ties``: key -> (its root, its offset after the root's first byte)) together, when the first of them
    comes, at the lowest aligned offset where every member fits."""
    placed: list[tuple[int, int, int, int]] = []  # (offset, end, first, last)
    offsets: dict[Key, int] = {}
    arena = 0
    group: dict[Key, list[tuple[Key, int]]] = {}
    for k, (r, d) in (ties or {}).items():
        group.setdefault(r, [(r, 0)]).append((k, d))
    for k, (r, _d) in (ties or {}).items():
        group[k] = group[r]
    for key in order:
        if key in offsets:
            continue
        if key in group:  # the lowest aligned offset o where every member fits at o + its offset
            members = [(k, at, *spans[k]) for k, at in group[key]]
            base = _align(max(0, -min(at for _k, at, *_ in members)))
            while True:
                bump = max((e - at for k, at, f, l, s in members for o, e, pf, pl in placed
                            if pf <= l and f <= pl and o < base + at + s and base + at < e), default=None)
                if bump is None:
                    break
                base = _align(bump)
            for k, at, f, l, s in members:
                offsets[k] = base + at
                placed.append((base + at, base + at + s, f, l))
                arena = max(arena, base + at + s)
            continue
        first, last, size = spans[key]
        busy = sorted((o, e) for o, e, f, l in placed if f <= last and first <= l)
        offset = 0
        for o, e in busy:
            if offset + size <= o:
                break
            offset = max(offset, _align(e))
        offsets[key] = offset
        placed.append((offset, offset + size, first, last))
        arena = max(arena, offset + size)
    return arena, offsets


def plan_arena(graph: Graph) -> int:
    """Assign ``offset`` to every activation tensor and ``scratch_offset`` to every op with scratch;
    returns and stores the arena bytes (the RAM the program needs, scratch included)."""
    for op in graph.ops:  # an in-place depthwise needs its channel buffer (a re-targeted op's scratch may lack it)
        if op.in_place and op.kind in IN_PLACE_IF_CHOSEN:
            op.scratch_bytes = max(op.scratch_bytes, in_place_scratch(graph, op))
    spans, ties = allocations(graph, False), overlap_ties(graph)
    tie = {k: (isinstance(k, int), str(k)) for k in spans}  # a deterministic order among equals
    orders = (
        sorted(spans, key=lambda k: (-spans[k][2], spans[k][0], tie[k])),  # largest first (TFLite Micro)
        sorted(spans, key=lambda k: (spans[k][0], -spans[k][2], tie[k])),  # earliest first
        sorted(spans, key=lambda k: (-spans[k][2] * (spans[k][1] - spans[k][0] + 1), tie[k])),  # largest area
    )
    arena, offsets = min((_place(spans, order, ties) for order in orders), key=lambda plan: plan[0])
    aliases = alias_offsets(graph)
    for name, (r, at) in aliases.items():
        graph.tensors[name].offset = offsets[r] + at
    pitches = channel_pitches(graph, aliases)
    for name, t in graph.tensors.items():  # a placed channel slice is pitched, only while it is placed
        t.pitch = pitches.get(name, 0)
    for t in graph.tensors.values():
        if t.is_constant:
            t.offset = -1
    for i, op in enumerate(graph.ops):
        op.scratch_offset = offsets[i] if op.scratch_bytes else -1
        if op.kind == "slice" and op.inputs and op.inputs[0] in graph.overlaps:  # a band reused: the readers'
            x, out = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]  # check (ir.slice_box_bytes)
            if x.offset < out.offset + out.nbytes and out.offset < x.offset + x.nbytes:
                op.attrs["outside"] = 1
            else:
                op.attrs.pop("outside", None)
    graph.arena_bytes = arena
    return arena





def trim_optional_scratch(graph: Graph, ram_budget: int | None = None) -> list[int]:
    """Give an op the larger scratch of its faster path only where the planned arena stays within what the
    slower paths need, or within ``ram_budget`` when one is given with room: a program trades RAM for speed
    only when the user asks (a RAM budget), never by default. Elsewhere the largest smaller plan that fits
    (mcuforge.ir.scratch_plans), whose path gives the same bytes out. Plans the arena; returns the ops left
    with less than their largest plan."""
    from .targets import get_target

    path = get_target(graph.target).kernel_path
    plans: dict[int, list[int]] = {}
    for i, op in enumerate(graph.ops):
        optional = (op.kind, path) in OPTIONAL_SCRATCH and len(op.inputs) > 1
        weight = graph.tensors.get(op.inputs[1]) if optional else None
        if weight is None or len(weight.shape) != 4:
            continue
        sizes = [n for n in scratch_plans(op.kind, weight.shape, graph.target) if n <= op.scratch_bytes]
        if len(sizes) > 1:  # the op's own plan and smaller ones
            plans[i] = sizes
    if not plans:  # nothing to choose (no op with a smaller optional plan): one plan
        plan_arena(graph)
        return []
    for i, sizes in plans.items():
        graph.ops[i].scratch_bytes = sizes[-1]
    room = max(plan_arena(graph), ram_budget or 0)
    for i, sizes in plans.items():  # in program order: each keeps the fastest path whose plan stays within room
        for size in sizes[:-1]:
            graph.ops[i].scratch_bytes = size
            if plan_arena(graph) <= room:
                break
        else:
            graph.ops[i].scratch_bytes = sizes[-1]
    plan_arena(graph)
    return [i for i, sizes in plans.items() if graph.ops[i].scratch_bytes < sizes[0]]


# ---- a patched chain's output over the graph input's dead bytes (TinyEngine / MCUNetV2 input reuse) ---------

Spans = list[tuple[int, int]]  # byte ranges [start, end), sorted and merged


def _merge(spans: Spans) -> Spans:
    merged: Spans = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def _box_bytes(shape: tuple[int, ...], begin: list[int], size: list[int], item: int) -> Spans:
    """The bytes of box ``begin`` + ``size`` of a row-major NHWC map: one range per (batch, row), from its first
    column's first channel to its last column's last channel (a superset where the box has fewer channels)."""
    _, _, w, c = shape
    spans = []
    for n in range(begin[0], begin[0] + size[0]):
        for r in range(begin[1], begin[1] + size[1]):
            row = (n * shape[1] + r) * w
            first = ((row + begin[2]) * c + begin[3]) * item
            last = ((row + begin[2] + size[2] - 1) * c + begin[3] + size[3]) * item
            spans.append((first, last))
    return spans


def _reads(graph: Graph, op: Op, x: str) -> Spans:
    """The bytes of ``x`` that ``op`` reads: a unit-step ``slice`` its box, any other op all of them."""
    t = graph.tensors[x]
    a = op.attrs
    if (op.kind == "slice" and op.inputs[0] == x and x not in op.inputs[1:] and len(t.shape) == 4
            and all(st == 1 for st in a.get("step", ())) and len(a.get("begin", ())) == 4):
        begin, end = list(a["begin"]), list(a["end"])
        return _box_bytes(t.shape, begin, [e - b for b, e in zip(begin, end, strict=True)], t.nbytes // t.numel)
    return [(0, t.nbytes)]


def _writes(graph: Graph, op: Op, at: int) -> Spans | None:
    """The bytes (of its allocation, the output at ``at``) an ``insert_tile`` writes: its tile's, or its whole
    output when it fills it (no dst, fill 1); None for any other op (not proven)."""
    out = graph.tensors[op.outputs[0]]
    if op.kind != "insert_tile" or len(op.outputs) != 1 or len(out.shape) != 4:
        return None
    if len(op.inputs) == 1 and op.attrs.get("fill", 1):
        return [(at, at + out.nbytes)]
    tile = graph.tensors[op.inputs[0]]
    spans = _box_bytes(out.shape, list(op.attrs["begin"]), list(tile.shape), out.nbytes // max(out.numel, 1))
    return [(at + a, at + b) for a, b in spans]


def input_overlap(graph: Graph, x: str, t: str) -> int | None:
    """The least offset ``d`` (a multiple of :data:`ALIGNMENT`, below ``t``'s size) at which graph input ``x`` may
    lie inside ``t``'s allocation (``t``'s first byte ``d`` bytes before ``x``'s) with the same bytes out: for every
    op ``k`` writing into that allocation while ``x`` is live (an ``insert_tile``: its tile's bytes) and every
    later op ``m`` reading ``x`` (a ``slice``: its box's bytes; any other op: all of ``x``), what ``k`` writes
    misses what ``m`` reads. Ops up to and including ``k`` have read what they need. None when no such ``d``
    exists, ``x`` shares its allocation already, or another kind of op writes there while ``x`` is live.

    A write ``[ws, we)`` of the allocation is ``x``'s bytes ``[ws - d, we - d)``; it misses a read ``[rs, re)``
    exactly when ``d`` is outside ``(ws - re, we - rs)``."""
    if x not in graph.inputs or x in graph.outputs or t not in graph.tensors or x == t:
        return None
    saved = graph.overlaps.pop(x, None)
    try:
        offsets, life = alias_offsets(graph), lifetimes(graph)
    finally:
        if saved is not None:
            graph.overlaps[x] = saved
    if offsets[t] != (t, 0) or any(r == x and n != x for n, (r, _) in offsets.items()):
        return None
    members = {n: at for n, (r, at) in offsets.items() if r == t}
    last = life[x][1]
    writes: list[tuple[int, Spans]] = []
    reads: list[tuple[int, Spans]] = []
    for i, op in enumerate(graph.ops[:last + 1]):
        if x in op.inputs:
            reads.append((i, _reads(graph, op, x)))
        for name in op.outputs:
            if name in members:
                spans = _writes(graph, op, members[name])
                if spans is None or x in op.inputs:
                    return None
                writes.append((i, spans))
    forbidden: Spans = []  # closed ranges of d
    later: Spans = []
    pending = sorted(reads)
    for k, spans in sorted(writes, reverse=True):
        while pending and pending[-1][0] > k:  # the reads after op k
            later = _merge(later + pending.pop()[1])
        starts = [a for a, _ in later]
        for ws, we in spans:
            for rs, re in later[:bisect.bisect_left(starts, we)]:  # rs < we: d >= 0 can hit them
                forbidden.append((max(ws - re + 1, 0), we - rs - 1))
    d = 0
    for lo, hi in sorted(forbidden):
        if lo > d:
            break
        if d <= hi:
            d = _align(hi + 1)
    return d if d < graph.tensors[t].nbytes else None
