"""Fold eval-mode BatchNorm into the conv or linear before it, on the exported float graph.

PT2E folds conv + BatchNorm2d by itself, but not linear + BatchNorm1d (the MLPerf Tiny
autoencoder) nor conv1d + BatchNorm1d. Folding here, before quantization, lets the weight
observers see the folded weights, so the quantized layer is exactly one int8 kernel.
"""

from __future__ import annotations

import torch
from torch import fx

from .builder import get_attr_value

aten = torch.ops.aten

FOLDABLE = {aten.conv1d.default, aten.conv2d.default, aten.linear.default}


def _get_attr_value(gm: fx.GraphModule, node: object) -> torch.Tensor | None:
    """The constant behind a ``get_attr`` node; None for anything else."""
    if isinstance(node, fx.Node) and node.op == "get_attr":
        return get_attr_value(gm, node)
    return None


def _set_new_attr(gm: fx.GraphModule, anchor: fx.Node, base: str, value: torch.Tensor) -> fx.Node:
    name = base
    i = 0
    while hasattr(gm, name):
        i += 1
        name = f"{base}_{i}"
    gm.register_buffer(name, value)
    with gm.graph.inserting_before(anchor):
        return gm.graph.get_attr(name)


def fold_batch_norm(gm: fx.GraphModule) -> int:
    """Fold every ``batch_norm`` whose input is a conv/linear used only by it; returns the count."""
    folded = 0
    for bn in list(gm.graph.nodes):
        if bn.op != "call_function" or bn.target != aten.batch_norm.default:
            continue
        producer = bn.args[0]
        if not isinstance(producer, fx.Node) or producer.target not in FOLDABLE or len(producer.users) != 1:
            continue
        gamma, beta, mean, var = (_get_attr_value(gm, a) for a in bn.args[1:5])
        training, eps = bn.args[5], bn.args[7]
        weight = _get_attr_value(gm, producer.args[1])
        bias_node = producer.args[2] if len(producer.args) > 2 else None
        bias = _get_attr_value(gm, bias_node) if bias_node is not None else None
        if training or mean is None or var is None or weight is None:
            continue
        if bias_node is not None and bias is None:
            continue
        channels = weight.shape[0]
        gamma = gamma if gamma is not None else torch.ones(channels)
        beta = beta if beta is not None else torch.zeros(channels)
        bias = bias if bias is not None else torch.zeros(channels)
        factor = gamma / torch.sqrt(var + eps)
        new_weight = weight * factor.reshape(-1, *([1] * (weight.dim() - 1)))
        new_bias = (bias - mean) * factor + beta
        stem = str(producer.args[1].target).replace(".", "_")
        w_node = _set_new_attr(gm, producer, f"{stem}_bnfolded", new_weight.contiguous())
        b_node = _set_new_attr(gm, producer, f"{stem}_bnfolded_bias", new_bias.contiguous())
        args = list(producer.args)
        while len(args) < 3:
            args.append(None)
        args[1], args[2] = w_node, b_node
        producer.args = tuple(args)
        # Keep the BatchNorm's module path visible in the conv's debug info.
        producer.meta.setdefault("folded", []).append(bn.meta.get("nn_module_stack"))
        bn.replace_all_uses_with(producer)
        gm.graph.erase_node(bn)
        folded += 1
    if folded:
        gm.graph.eliminate_dead_code()
        gm.recompile()
    return folded
