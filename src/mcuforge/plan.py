"""Arena planning: every activation gets an offset in one buffer, decided at compile time.

A tensor lives from the op that writes it (or the start, for inputs) to the last op that
reads it (or the end, for outputs). Tensors are placed largest first at the lowest 16-byte
aligned offset that does not overlap any placed tensor whose lifetime intersects — the greedy
strategy of TFLite Micro's planner. An op's inputs and outputs never share bytes, so every
kernel may read its inputs while writing its output — with one exception that makes reshapes
free: a ``reshape`` whose input is not read afterwards gets its output planned at its input's
offset (one allocation for both), so the runtimes copy nothing (the bytes are already in place;
the Python runtime writes them onto themselves, the C runtime skips the copy when src == dst).
"""

from __future__ import annotations

from .ir import Graph

ALIGNMENT = 16


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
    """Tensor -> the tensor whose allocation it shares (itself when it has its own).

    A reshape output shares its input's bytes when the input is an activation of the same size
    that no later op reads and that is not a graph output; chains of reshapes share one root.
    """
    life = lifetimes(graph)
    outputs = set(graph.outputs)
    root = {name: name for name in life}
    for i, op in enumerate(graph.ops):
        if op.kind != "reshape":
            continue
        (src,), (dst,) = op.inputs, op.outputs
        s, d = graph.tensors[src], graph.tensors[dst]
        if s.is_constant or s.nbytes != d.nbytes or src in outputs or life[src][1] != i:
            continue
        root[dst] = root[src]
    return root


def plan_arena(graph: Graph) -> int:
    """Assign ``offset`` to every activation tensor of ``graph``; returns and stores arena bytes."""
    life = lifetimes(graph)
    roots = alias_roots(graph)
    # One allocation per root: the union of its members' lifetimes.
    spans: dict[str, tuple[int, int]] = {}
    for name, r in roots.items():
        first, last = life[name]
        f0, l0 = spans.get(r, (first, last))
        spans[r] = (min(f0, first), max(l0, last))
    order = sorted(spans, key=lambda n: (-graph.tensors[n].nbytes, spans[n][0], n))
    placed: list[tuple[int, int, int, int]] = []  # (offset, end, first, last)
    offsets: dict[str, int] = {}
    arena = 0
    for name in order:
        size = _align(max(graph.tensors[name].nbytes, 1))
        first, last = spans[name]
        busy = sorted((o, e) for o, e, f, l in placed if f <= last and first <= l)
        offset = 0
        for o, e in busy:
            if offset + size <= o:
                break
            offset = max(offset, _align(e))
        offsets[name] = offset
        placed.append((offset, offset + size, first, last))
        arena = max(arena, offset + size)
    for name, r in roots.items():
        graph.tensors[name].offset = offsets[r]
    for t in graph.tensors.values():
        if t.is_constant:
            t.offset = -1
    graph.arena_bytes = arena
    return arena
