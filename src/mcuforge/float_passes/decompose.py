"""Decompositions before quantization: fused ATen ops rewritten into the ops mcuforge has int8 kernels for.

``scaled_dot_product_attention`` (``F.scaled_dot_product_attention``, ``nn.MultiheadAttention`` with
``need_weights=False``, MobileViT-style blocks) exports as one fused op. It becomes what torch's math
reference computes::

    scores = (q @ k.transpose(-2, -1)) * scale       # scale: the argument, or 1 / sqrt(q.size(-1))
    scores = scores + attn_mask                       # float mask
    scores = where(attn_mask, scores, -inf)           # bool mask (True: take part in attention)
    scores = scores + where(causal, 0, -inf)          # is_causal: causal = ones(L, S).tril(), a constant
    out = softmax(scores, -1) @ v

so that the int8 lowering makes the matmuls ``batch_matmul_s8`` (the transpose of k folds into the
matmul's adj_y), the scale a ``mul_s8`` by a scalar and the softmax ``softmax_s8``. Grouped-query
attention (``enable_gqa`` with fewer key/value heads) folds the query's head groups into its rows
(a reshape, no copy of k or v): query head ``h`` attends with key/value head ``h // (Hq / Hkv)``, as
torch's ``repeat_interleave`` of k and v gives. ``dropout_p`` is ignored, with a warning: a compiled
program is inference, where dropout is the identity.

Limitation: a boolean or causal mask puts -inf into the scores, which the activation observers cannot
calibrate; such attention compiles and is exact in fp32, but its int8 accuracy is poor (a warning says
so). A float mask with finite values quantizes like any add.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import torch
from torch import fx

aten = torch.ops.aten
SDPA = aten.scaled_dot_product_attention.default

#: What each decomposed op becomes (docs/ops.md lists it beside the int8 lowerings).
DECOMPOSITIONS: dict[Any, str] = {
    SDPA: "matmul(q, k^T) (k's transpose folds into batch_matmul_s8's adj_y), mul by the scale (mul_s8), "
          "float mask: add (add_s8); bool mask / is_causal: -inf where masked (int8 accuracy poor, a warning "
          "says so); softmax (softmax_s8), matmul with v (batch_matmul_s8); enable_gqa as a reshape of q; "
          "dropout_p ignored (inference), with a warning",
}


def decompose(gm: fx.GraphModule) -> fx.GraphModule:
    """Rewrite every fused op of this module in place (see the module docstring); returns ``gm``."""
    changed = False
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target == SDPA:
            _decompose_sdpa(gm, node)
            changed = True
    if changed:
        gm.graph.eliminate_dead_code()
        gm.graph.lint()
        gm.recompile()
    return gm


def _val(value: Any) -> Any:
    """The example value (a FakeTensor) of a node argument; other arguments as they are."""
    return value.meta["val"] if isinstance(value, fx.Node) else value


class _Emitter:
    """Emits ATen calls before ``anchor``, each with its example value and the anchor's source metadata
    (module path, stack trace), so that later passes and the debug record see the original module."""

    def __init__(self, anchor: fx.Node) -> None:
        self.anchor = anchor
        self.meta = {k: v for k, v in anchor.meta.items() if k != "val"}

    def __call__(self, target: Any, *args: Any) -> fx.Node:
        with self.anchor.graph.inserting_before(self.anchor):
            node = self.anchor.graph.call_function(target, args)
        node.meta.update(self.meta)
        node.meta["val"] = target(*(_val(a) for a in args))
        return node


def _sdpa_args(node: fx.Node) -> dict[str, Any]:
    names = ["query", "key", "value", "attn_mask", "dropout_p", "is_causal"]
    defaults = {"attn_mask": None, "dropout_p": 0.0, "is_causal": False, "scale": None, "enable_gqa": False}
    args = {**defaults, **dict(zip(names, node.args, strict=False)), **node.kwargs}
    return args


def _decompose_sdpa(gm: fx.GraphModule, node: fx.Node) -> None:
    a = _sdpa_args(node)
    q, k, v, mask = a["query"], a["key"], a["value"], a["attn_mask"]
    where = f"scaled_dot_product_attention ({node.name})"
    if a["dropout_p"]:
        warnings.warn(f"{where}: dropout_p={a['dropout_p']} ignored (inference: dropout is the identity)",
                      stacklevel=3)
    if a["is_causal"] and mask is not None:
        raise ValueError(f"{where}: attn_mask and is_causal=True together (torch rejects them too)")
    qv, kv = _val(q), _val(k)
    emb, length, source = qv.shape[-1], qv.shape[-2], kv.shape[-2]
    scale = a["scale"] if a["scale"] is not None else 1.0 / math.sqrt(emb)
    emit = _Emitter(node)

    # Grouped-query attention: query (..., Hq, L, E) -> (..., Hkv, Hq / Hkv * L, E).
    groups = 1
    if a["enable_gqa"] and qv.dim() >= 3 and qv.shape[-3] != kv.shape[-3]:
        heads, kv_heads = qv.shape[-3], kv.shape[-3]
        if heads % kv_heads:
            raise ValueError(f"{where}: {heads} query heads do not split into {kv_heads} key/value groups")
        groups = heads // kv_heads
        q = emit(aten.reshape.default, q, [*qv.shape[:-3], kv_heads, groups * length, emb])

    scores = emit(aten.matmul.default, q, emit(aten.transpose.int, k, -2, -1))
    scores = emit(aten.mul.Tensor, scores, float(scale))
    if groups > 1 and (mask is not None or a["is_causal"]):  # masks are (..., Hq | 1, L, S): back to Hq heads
        scores = emit(aten.reshape.default, scores, [*qv.shape[:-2], length, source])
    if a["is_causal"]:  # a constant: the additive form, 0 where attending, -inf elsewhere
        causal = torch.ones(length, source, dtype=torch.bool).tril()
        additive = torch.zeros(causal.shape).masked_fill(~causal, -math.inf)
        mask = _constant(gm, node, f"{node.name}_causal_mask", additive)
    if a["is_causal"] or (mask is not None and _val(mask).dtype == torch.bool):
        warnings.warn(f"{where}: masked positions become -inf scores, which int8 calibration cannot represent; "
                      "this attention's int8 accuracy will be poor (no masked int8 softmax yet; a float mask "
                      "with finite values quantizes normally)", stacklevel=3)
    if mask is not None:
        if _val(mask).dtype == torch.bool:
            minus_inf = _constant(gm, node, f"{node.name}_minus_inf", torch.full((1, 1), -math.inf))
            scores = emit(aten.where.self, mask, scores, minus_inf)
        else:
            scores = emit(aten.add.Tensor, scores, mask)
        if groups > 1:
            scores = emit(aten.reshape.default, scores, [*qv.shape[:-3], kv.shape[-3], groups * length, source])
    out = emit(aten.matmul.default, emit(aten.softmax.int, scores, -1), v)
    if groups > 1:
        out = emit(aten.reshape.default, out, list(node.meta["val"].shape))
    node.replace_all_uses_with(out)
    gm.graph.erase_node(node)


def _constant(gm: fx.GraphModule, anchor: fx.Node, name: str, value: torch.Tensor) -> fx.Node:
    """A buffer of ``gm`` read by a get_attr node placed before ``anchor``."""
    name = name.replace(".", "_")
    gm.register_buffer(name, value)
    with gm.graph.inserting_before(anchor):
        node = gm.graph.get_attr(name)
    fake_mode = getattr(_val(anchor.args[0]), "fake_mode", None)
    node.meta["val"] = fake_mode.from_tensor(value) if fake_mode is not None else value
    return node
