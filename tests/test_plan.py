"""Arena planning: no two simultaneously live tensors share bytes, and the arena is tight."""

import pytest

from mcuforge.plan import alias_roots, lifetimes

from conftest import compiled


@pytest.mark.parametrize("name", ["ds_cnn", "mobilenet_v1_025", "resnet8", "custom_fallback"])
def test_live_tensors_never_overlap(name):
    g = compiled(name)[2].graph
    life = lifetimes(g)
    roots = alias_roots(g)  # a reshape output planned on its input's bytes shares them by design
    names = list(life)
    for i, a in enumerate(names):
        ta = g.tensors[a]
        assert ta.offset % 16 == 0
        assert ta.offset + ta.nbytes <= g.arena_bytes
        for b in names[i + 1:]:
            tb = g.tensors[b]
            if roots[a] != roots[b] and life[a][0] <= life[b][1] and life[b][0] <= life[a][1]:
                assert ta.offset + ta.nbytes <= tb.offset or tb.offset + tb.nbytes <= ta.offset, (a, b)


@pytest.mark.parametrize("name", ["ds_cnn", "mobilenet_v1_025", "resnet8"])
def test_arena_is_at_least_the_peak_and_not_far_above(name):
    g = compiled(name)[2].graph
    life = lifetimes(g)
    roots = alias_roots(g)
    peak = 0
    for step in range(-1, len(g.ops) + 1):
        live = sum(g.tensors[r].nbytes for r in {roots[n] for n, (f, last) in life.items() if f <= step <= last})
        peak = max(peak, live)
    assert peak <= g.arena_bytes <= int(peak * 1.25) + 64
