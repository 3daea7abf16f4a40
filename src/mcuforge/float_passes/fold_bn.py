"""Eval-mode BatchNorm on the exported float graph: folded into the conv or linear before it, or
else turned into a depthwise 1x1 conv (a per-channel affine), so that no BatchNorm reaches PT2E.

PT2E folds conv + BatchNorm2d by itself, but not linear + BatchNorm1d (the MLPerf Tiny
autoencoder) nor conv1d + BatchNorm1d. Folding here, before quantization, lets the weight
observers see the folded weights, so the quantized layer is exactly one int8 kernel.

A BatchNorm that cannot fold (after a ``cat`` of per-group convs, after a conv or linear whose
output has other users, on a model input) would stay an fp32 op. Worse, PT2E's prepare folds any
BatchNorm that directly follows a conv even when the conv's output has other users: those users
then read the normalized values, and when the conv's weight is one this pass already folded, the
new weight collides with it (``KeyError: attribute '..._weight_bnfolded' already exists``). So
every remaining BatchNorm becomes ``conv(x, gamma / sqrt(var + eps), beta - mean * factor,
groups=C)``, which the quantizer and the lowering make one ``depthwise_conv2d_s8``.
"""

from __future__ import annotations

import torch
from torch import fx
from torch.fx.node import map_aggregate

from ..lower.builder import get_attr_value

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


def _bn_constants(gm: fx.GraphModule, bn: fx.Node) -> tuple[torch.Tensor, ...] | None:
    """(gamma, beta, mean, var, eps) of an eval-mode ``batch_norm`` whose parameters are all constants
    (a missing gamma/beta as ones/zeros); None for training mode or any computed parameter."""
    gamma, beta, mean, var = (_get_attr_value(gm, a) for a in bn.args[1:5])
    training, eps = bn.args[5], bn.args[7]
    if training or mean is None or var is None:
        return None
    if any(a is not None and t is None for a, t in ((bn.args[1], gamma), (bn.args[2], beta))):
        return None  # a computed gamma/beta: not a constant affine
    channels = mean.numel()
    return (gamma if gamma is not None else torch.ones(channels), beta if beta is not None else torch.zeros(channels),
            mean, var, eps)


def foldable(gm: fx.GraphModule, bn: fx.Node) -> tuple[fx.Node, tuple] | None:
    """``bn``'s conv/linear producer and its constants (gamma, beta, mean, var, eps) when ``fold_batch_norm`` folds
    it: a ``batch_norm`` of constant statistics whose input is a conv/linear of constant weight (and bias) used
    only by it; else None. One rule for folding and for QAT's BatchNorm tracking (mcuforge.qat.batchnorm)."""
    if bn.op != "call_function" or bn.target != aten.batch_norm.default:
        return None
    producer = bn.args[0]
    if not isinstance(producer, fx.Node) or producer.target not in FOLDABLE or len(producer.users) != 1:
        return None
    constants = _bn_constants(gm, bn)
    bias_node = producer.args[2] if len(producer.args) > 2 else None
    if constants is None or _get_attr_value(gm, producer.args[1]) is None:
        return None
    if bias_node is not None and _get_attr_value(gm, bias_node) is None:
        return None
    return producer, constants


def fold_batch_norm(gm: fx.GraphModule) -> int:
    """Fold every ``batch_norm`` whose input is a conv/linear used only by it; returns the count."""
    folded = 0
    for bn in list(gm.graph.nodes):
        found = foldable(gm, bn)
        if found is None:
            continue
        producer, constants = found
        weight = _get_attr_value(gm, producer.args[1])
        bias_node = producer.args[2] if len(producer.args) > 2 else None
        bias = _get_attr_value(gm, bias_node) if bias_node is not None else None
        gamma, beta, mean, var, eps = constants
        bias = bias if bias is not None else torch.zeros(weight.shape[0])
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


def _fake(gm: fx.GraphModule, value: object, mode: object) -> object:
    """The FakeTensor torch.export would give ``value`` (constants: converted in ``mode``)."""
    if not isinstance(value, fx.Node):
        return value
    val = value.meta.get("val")
    if val is None and value.op == "get_attr":
        val = mode.from_tensor(get_attr_value(gm, value), static_shapes=True)
    return val


def _call(gm: fx.GraphModule, like: fx.Node, target: object, args: tuple) -> fx.Node:
    """A new call of ``target`` before ``like``, with ``like``'s module path and source line and
    the FakeTensor value the lowering reads shapes from."""
    mode = like.meta["val"].fake_mode
    with gm.graph.inserting_before(like):
        node = gm.graph.call_function(target, args)
    node.meta.update({k: v for k, v in like.meta.items() if k in ("nn_module_stack", "stack_trace", "source_fn_stack")})
    with mode:
        node.meta["val"] = target(*map_aggregate(args, lambda a: _fake(gm, a, mode)))
    return node


def _depthwise(gm: fx.GraphModule, bn: fx.Node, x: fx.Node, factor: torch.Tensor, shift: torch.Tensor) -> fx.Node:
    """``x * factor[c] + shift[c]`` as a depthwise 1x1 conv over the channel axis (axis 1)."""
    rank = x.meta["val"].dim()
    channels = factor.numel()
    stem = str(bn.args[1].target if isinstance(bn.args[1], fx.Node) else bn.name).replace(".", "_")
    kernel = (1,) * (1 if rank == 3 else 2)
    w_node = _set_new_attr(gm, bn, f"{stem}_bn_depthwise", factor.reshape(channels, 1, *kernel).contiguous())
    b_node = _set_new_attr(gm, bn, f"{stem}_bn_depthwise_bias", shift.contiguous())
    for node in (w_node, b_node):
        node.meta["val"] = bn.meta["val"].fake_mode.from_tensor(get_attr_value(gm, node), static_shapes=True)
    if rank == 3:
        return _call(gm, bn, aten.conv1d.default, (x, w_node, b_node, [1], [0], [1], channels))
    if rank == 4:
        return _call(gm, bn, aten.conv2d.default, (x, w_node, b_node, [1, 1], [0, 0], [1, 1], channels))
    # (N, C): an (N, C, 1, 1) image, whose NHWC bytes are the (N, C) bytes (the views are free).
    batch = int(x.meta["val"].shape[0])
    image = _call(gm, bn, aten.view.default, (x, [batch, channels, 1, 1]))
    conv = _call(gm, bn, aten.conv2d.default, (image, w_node, b_node, [1, 1], [0, 0], [1, 1], channels))
    return _call(gm, bn, aten.view.default, (conv, [batch, channels]))


def batch_norm_to_depthwise(gm: fx.GraphModule) -> int:
    """Replace every eval-mode ``batch_norm`` on a 2-D, 3-D or 4-D input by the equivalent depthwise
    1x1 conv (see the module doc); returns the count. Run after :func:`fold_batch_norm`."""
    replaced = 0
    for bn in list(gm.graph.nodes):
        if bn.op != "call_function" or bn.target != aten.batch_norm.default:
            continue
        x = bn.args[0]
        constants = _bn_constants(gm, bn)
        val = x.meta.get("val") if isinstance(x, fx.Node) else None
        if constants is None or val is None or val.dim() not in (2, 3, 4):
            continue
        gamma, beta, mean, var, eps = constants
        factor = gamma / torch.sqrt(var + eps)
        shift = beta - mean * factor
        out = _depthwise(gm, bn, x, factor.float(), shift.float())
        out.meta.setdefault("folded", []).append(bn.meta.get("nn_module_stack"))
        bn.replace_all_uses_with(out)
        gm.graph.erase_node(bn)
        replaced += 1
    if replaced:
        gm.graph.eliminate_dead_code()
        gm.recompile()
    return replaced
