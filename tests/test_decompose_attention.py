"""scaled_dot_product_attention decomposed before quantization (mcuforge.float_passes.decompose): the rewritten
graph computes what torch's fused op computes, for every argument torch takes (scale, float and bool
masks, is_causal, grouped-query attention, unbatched inputs), and keeps the op's module path."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from mcuforge.capture import capture
from mcuforge.float_passes.decompose import SDPA, decompose

aten = torch.ops.aten


class Attention(nn.Module):
    def __init__(self, **kwargs) -> None:
        super().__init__()
        self.kwargs = kwargs

    def forward(self, q, k, v, *mask):
        kwargs = dict(self.kwargs, **({"attn_mask": mask[0]} if mask else {}))
        return F.scaled_dot_product_attention(q, k, v, **kwargs)


class Wrapper(nn.Module):
    def __init__(self, **kwargs) -> None:
        super().__init__()
        self.attn = Attention(**kwargs)

    def forward(self, q, k, v, *mask):
        return self.attn(q, k, v, *mask)


# (kwargs, q shape, k shape, v shape, mask: None | "bool" | "float")
CASES = {
    "default scale": ({}, (1, 2, 5, 8), (1, 2, 7, 8), (1, 2, 7, 6), None),
    "explicit scale": ({"scale": 0.3}, (2, 3, 4, 8), (2, 3, 4, 8), (2, 3, 4, 8), None),
    "is_causal, L != S": ({"is_causal": True}, (1, 2, 5, 8), (1, 2, 7, 8), (1, 2, 7, 6), None),
    "bool mask": ({}, (1, 2, 5, 8), (1, 2, 7, 8), (1, 2, 7, 6), "bool"),
    "float mask (broadcast)": ({}, (1, 2, 5, 8), (1, 2, 7, 8), (1, 2, 7, 6), "float"),
    "gqa": ({"enable_gqa": True}, (1, 4, 5, 8), (1, 2, 7, 8), (1, 2, 7, 6), None),
    "gqa, is_causal": ({"enable_gqa": True, "is_causal": True}, (1, 4, 5, 8), (1, 2, 7, 8), (1, 2, 7, 6), None),
    "gqa, bool mask": ({"enable_gqa": True}, (1, 4, 5, 8), (1, 2, 7, 8), (1, 2, 7, 6), "bool"),
    "unbatched (L, E)": ({}, (5, 8), (7, 8), (7, 6), None),
}


def _inputs(q_shape, k_shape, v_shape, mask: str | None) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(3)
    args = [torch.randn(s, generator=gen) * 2 for s in (q_shape, k_shape, v_shape)]
    if mask == "bool":
        keep = torch.rand((*q_shape[:-1], k_shape[-2]), generator=gen) > 0.4
        keep[..., 0] = True  # no row fully masked (torch's result there is NaN)
        args.append(keep)
    elif mask == "float":
        args.append(torch.randn(q_shape[-2], k_shape[-2], generator=gen))
    return tuple(args)


@pytest.mark.parametrize("case", CASES)
def test_decomposition_computes_torch_sdpa(case: str) -> None:
    kwargs, q_shape, k_shape, v_shape, mask = CASES[case]
    model, args = Wrapper(**kwargs).eval(), _inputs(q_shape, k_shape, v_shape, mask)
    gm = capture(model, args)
    assert any(n.target == SDPA for n in gm.graph.nodes)
    decompose(gm)
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert SDPA not in targets
    assert targets.count(aten.matmul.default) == 2 and aten.softmax.int in targets and aten.mul.Tensor in targets
    torch.testing.assert_close(gm(*args), model(*args), rtol=1e-5, atol=1e-6)
    # every new node keeps the module path of the attention it replaces (the debug record's source)
    for node in gm.graph.nodes:
        if node.op == "call_function":
            assert "attn" in list(node.meta["nn_module_stack"].values())[-1][0], node
            assert node.meta["val"].shape is not None


def test_key_transpose_feeds_the_first_matmul() -> None:
    # q @ k^T with k transposed on its last two dims: the int8 lowering reads k with adj_y
    gm = decompose(capture(Attention().eval(), _inputs((1, 2, 5, 8), (1, 2, 7, 8), (1, 2, 7, 6), None)))
    first = next(n for n in gm.graph.nodes if n.target == aten.matmul.default)
    kt = first.args[1]
    assert kt.target == aten.transpose.int and kt.args[1:] == (-2, -1) and kt.args[0].name == "k"
    scale = next(n for n in gm.graph.nodes if n.target == aten.mul.Tensor)
    assert scale.args[1] == pytest.approx(1 / 8**0.5)


def test_dropout_is_ignored_with_a_warning() -> None:
    args = _inputs((1, 2, 5, 8), (1, 2, 7, 8), (1, 2, 7, 6), None)
    gm = capture(Attention(dropout_p=0.5).eval(), args)
    with pytest.warns(UserWarning, match=r"scaled_dot_product_attention .*dropout_p=0\.5 ignored"):
        decompose(gm)
    torch.testing.assert_close(gm(*args), F.scaled_dot_product_attention(*args), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs", [{"is_causal": True}, {"attn_mask": torch.ones(5, 7, dtype=torch.bool)}])
def test_minus_inf_masks_warn_about_int8_accuracy(kwargs) -> None:
    gm = capture(Attention(**kwargs).eval(), _inputs((1, 2, 5, 8), (1, 2, 7, 8), (1, 2, 7, 6), None))
    with pytest.warns(UserWarning, match=r"masked positions become -inf .* int8 accuracy will be poor"):
        decompose(gm)


def test_graph_without_attention_is_untouched() -> None:
    gm = capture(nn.Sequential(nn.Linear(4, 4), nn.ReLU()).eval(), (torch.randn(2, 4),))
    before = str(gm.graph)
    assert decompose(gm) is gm and str(gm.graph) == before
