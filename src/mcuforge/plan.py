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
(``Op.in_place``: where that lowers the arena, for a program asked to fit a RAM budget): a
``depthwise_conv2d_s8`` of depth multiplier 1 and batch 1 writes its output (as large as its input, or smaller
when strided) from its input's first byte -- TinyEngine's in-place depthwise: the kernel computes one channel's
outputs into its scratch (Ho x Wo bytes) and then stores them in that channel's slots, which no other channel
reads.

Concat by placement: a ``concat_s8`` whose input slices are contiguous bytes of its output (every axis
before the concat axis has extent 1: concatenated flat or pooled features, an outer-axis sequence concat)
lets the producer of each input write straight into its slice (``alias_offsets``: the input's offset is the
output's plus the bytes of the inputs before it), and the kernel copies nothing where source and destination
are the same bytes. Only for an input read by that concat alone, not a graph input or output, and only
where :func:`choose_concat_placement` finds it lowers the planned arena (``Op.in_place`` on the concat).
"""

from __future__ import annotations

from .ir import IN_PLACE_INPUTS, Graph, Op, concat_slice_start

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


def alias_offsets(graph: Graph) -> dict[str, tuple[str, int]]:
    """Tensor -> (its alias root, its byte offset inside the root's allocation): 0 for an in-place output; a
    placed concat's input (:func:`placed_concat_inputs`) at its slice of the concat's output."""
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
    requantizes an input of other qparams first), so the placed input is already the output's bytes."""
    op = graph.ops[i]
    placed: dict[str, int] = {}
    if len(op.outputs) != 1 or op.outputs[0] in parent:
        return placed
    for name in op.inputs:
        t = graph.tensors.get(name) if name else None
        if (t is None or t.is_constant or t.nbytes == 0 or name in outputs or name in parent
                or life[name][0] < 0 or life[name][1] != i or readers.get(name) != 1):
            continue
        at = concat_slice_start(op, graph.tensors, name)
        if at is not None:
            placed[name] = at
    return placed


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


def choose_in_place(graph: Graph) -> int:
    """Mark (``Op.in_place``) the ops of :data:`IN_PLACE_IF_CHOSEN` kinds that may write over their input where
    that lowers the arena's lower bound, one at a time while it does; each marked op's scratch grows to what its
    in-place path needs. Then plans: keeps the marks only if the planned arena is smaller than without them.
    Returns the number of ops marked (0: the graph is as it was, planned)."""
    life, outputs = lifetimes(graph), set(graph.outputs)
    legal = [i for i, op in enumerate(graph.ops) if op.kind in IN_PLACE_IF_CHOSEN and not op.in_place
             and in_place_legal(graph, i, life, outputs)]
    before = plan_arena(graph)
    scratch = {i: graph.ops[i].scratch_bytes for i in legal}
    best, chosen = _peak(graph), []
    changed = True
    while changed:  # marking one op can move the peak onto another: repeat until no mark lowers it
        changed = False
        for i in legal:
            op = graph.ops[i]
            if op.in_place:
                continue
            op.in_place, op.scratch_bytes = True, max(scratch[i], in_place_scratch(graph, op))
            peak = _peak(graph)
            if peak < best:
                best, changed = peak, True
                chosen.append(i)
            else:
                op.in_place, op.scratch_bytes = False, scratch[i]
    if chosen and plan_arena(graph) >= before:
        for i in chosen:
            graph.ops[i].in_place, graph.ops[i].scratch_bytes = False, scratch[i]
        chosen = []
        plan_arena(graph)
    return len(chosen)


def _peak(graph: Graph) -> int:
    """``arena_lower_bound`` by one sweep over the allocations' lifetimes (fast on long graphs)."""
    events: dict[int, int] = {}
    for first, last, size in allocations(graph).values():
        events[first] = events.get(first, 0) + size
        events[last + 1] = events.get(last + 1, 0) - size
    live = best = 0
    for at in sorted(events):
        live += events[at]
        best = max(best, live)
    return best


def allocations(graph: Graph) -> dict[Key, tuple[int, int, int]]:
    """(first op, last op, aligned bytes) of every allocation: one per alias root (the union of its
    members' lifetimes) and one per op scratch buffer (its op only)."""
    life = lifetimes(graph)
    spans: dict[Key, tuple[int, int, int]] = {}
    for name, r in alias_roots(graph).items():
        first, last = life[name]
        f0, l0, _ = spans.get(r, (first, last, 0))
        spans[r] = (min(f0, first), max(l0, last), _size(graph.tensors[r].nbytes))
    for i, op in enumerate(graph.ops):
        if op.scratch_bytes:
            spans[i] = (i, i, _size(op.scratch_bytes))
    return spans


def _size(nbytes: int) -> int:
    return _align(max(nbytes, 1))


def arena_lower_bound(graph: Graph, scratch: bool = True) -> int:
    """The largest sum of allocation sizes live at one op: no placement of these lifetimes fits in
    less. ``scratch=False``: tensors only (the op scratch buffers left out)."""
    spans = {k: v for k, v in allocations(graph).items() if scratch or isinstance(k, str)}
    points = {first for first, _, _ in spans.values()}  # the live set only grows where an allocation starts
    return max((sum(s for f, l, s in spans.values() if f <= i <= l) for i in points), default=0)


def _place(spans: dict[Key, tuple[int, int, int]], order: list[Key]) -> tuple[int, dict[Key, int]]:
    """First fit in ``order``: each allocation at the lowest aligned offset free for its whole lifetime."""
    placed: list[tuple[int, int, int, int]] = []  # (offset, end, first, last)
    offsets: dict[Key, int] = {}
    arena = 0
    for key in order:
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
    spans = allocations(graph)
    tie = {k: (isinstance(k, int), str(k)) for k in spans}  # a deterministic order among equals
    orders = (
        sorted(spans, key=lambda k: (-spans[k][2], spans[k][0], tie[k])),  # largest first (TFLite Micro)
        sorted(spans, key=lambda k: (spans[k][0], -spans[k][2], tie[k])),  # earliest first
        sorted(spans, key=lambda k: (-spans[k][2] * (spans[k][1] - spans[k][0] + 1), tie[k])),  # largest area
    )
    arena, offsets = min((_place(spans, order) for order in orders), key=lambda plan: plan[0])
    for name, (r, at) in alias_offsets(graph).items():
        graph.tensors[name].offset = offsets[r] + at
    for t in graph.tensors.values():
        if t.is_constant:
            t.offset = -1
    for i, op in enumerate(graph.ops):
        op.scratch_offset = offsets[i] if op.scratch_bytes else -1
    graph.arena_bytes = arena
    return arena
