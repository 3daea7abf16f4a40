"""Arena planning, checked against an independent statement of the plan's rules.

Lifetimes are recomputed here from the ops (not with ``mcuforge.plan.lifetimes``): a tensor lives from
the op that writes it (-1 for graph inputs) to the last op that reads it (past the last op for graph
outputs). The one sharing the design allows: a reshape whose input is read by no later op and is not
a graph output may write its output onto its input's bytes.

- No two tensors live at the same op share a byte, except such a reshape pair.
- The exact lower bound of any such plan is the largest, over the ops, of the sum of the 16-byte-aligned
  sizes of the tensors live at that op (a reshape pair counted once at its reshape). No valid plan is
  smaller, and on every model here the planner's arena is exactly that bound (computed here, not with
  ``mcuforge.plan.arena_lower_bound``).
"""

import pytest

from conftest import compiled

ALIGN = 16


def aligned(n: int) -> int:
    return (max(n, 1) + ALIGN - 1) // ALIGN * ALIGN


def spans(g) -> dict[str, tuple[int, int]]:
    """(first, last) op index of every activation, from the ops alone."""
    first, last = {name: -1 for name in g.inputs}, {name: -1 for name in g.inputs}
    for i, op in enumerate(g.ops):
        for name in op.inputs:
            if name and not g.tensors[name].is_constant:
                assert name in first, f"op {i} reads {name!r} before it is written"
                last[name] = i
        for name in op.outputs:
            assert name not in first, f"{name!r} written twice"
            first[name], last[name] = i, i
    for name in g.outputs:
        last[name] = len(g.ops)
    return {name: (first[name], last[name]) for name in first}


def shareable_reshapes(g, life) -> dict[int, tuple[str, str]]:
    """op index -> (input, output) of each reshape allowed to write onto its input's bytes."""
    pairs = {}
    for i, op in enumerate(g.ops):
        if op.kind == "reshape":
            (src,), (dst,) = op.inputs, op.outputs
            s = g.tensors[src]
            if not s.is_constant and life[src][1] == i and src not in g.outputs and s.nbytes == g.tensors[dst].nbytes:
                pairs[i] = (src, dst)
    return pairs


def live_at(life, step: int) -> list[str]:
    return [name for name, (f, last) in life.items() if f <= step <= last]


def lower_bound(g) -> int:
    life = spans(g)
    pairs = shareable_reshapes(g, life)
    bound = 0
    for step in range(-1, len(g.ops) + 1):
        live = set(live_at(life, step))
        if step in pairs:
            live.discard(pairs[step][1])  # the reshape's output is its input's bytes
        bound = max(bound, sum(aligned(g.tensors[n].nbytes) for n in live))
    return bound


MODELS = ["ds_cnn", "mobilenet_v1_025", "resnet8", "custom_fallback", "fc_autoencoder", "transformer_block"]


@pytest.mark.parametrize("name", MODELS)
def test_live_tensors_never_overlap(name):
    g = compiled(name)[2].graph
    life = spans(g)
    shared = {frozenset(pair) for pair in shareable_reshapes(g, life).values()}
    for name_a in life:
        t = g.tensors[name_a]
        assert t.offset >= 0 and t.offset % ALIGN == 0 and t.offset + t.nbytes <= g.arena_bytes, name_a
    for step in range(-1, len(g.ops) + 1):
        live = live_at(life, step)
        for i, a in enumerate(live):
            ta = g.tensors[a]
            for b in live[i + 1:]:
                tb = g.tensors[b]
                if ta.offset + ta.nbytes <= tb.offset or tb.offset + tb.nbytes <= ta.offset:
                    continue
                assert frozenset((a, b)) in shared, f"{a} and {b} share bytes while both live at op {step}"


@pytest.mark.parametrize("name", MODELS)
def test_arena_is_the_exact_lower_bound(name):
    g = compiled(name)[2].graph
    bound = lower_bound(g)
    assert g.arena_bytes == bound, f"arena {g.arena_bytes} B, lower bound {bound} B"
