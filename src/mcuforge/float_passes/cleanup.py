"""Capture clean-up before quantization: drop every op that is an identity in inference.

torch.export keeps what the model's Python code wrote: eval-mode dropout, ``nn.Identity``-like
copies (clone, contiguous, alias, detach), dtype conversions to the dtype a tensor already has,
reshapes to the shape it already has. None of them computes anything, but each would become an
op in the program (an fp32 op without a C kernel for dropout, a copy for the rest) and a
quantization boundary. They are removed here, on the float graph, so the quantizer and the
lowering never see them.

:func:`prepare_float_graph` is the whole float-graph pipeline that ``mcuforge.compile`` (and the
Inspector's fp32 reference) run between capture and quantization.
"""

from __future__ import annotations

import operator
from collections.abc import Callable

import torch
from torch import fx

aten = torch.ops.aten

# Dropout in any form: (input, p, train). With train=False each returns its input.
DROPOUT_OPS = {
    aten.dropout.default, aten.dropout_.default, aten.feature_dropout.default, aten.feature_dropout_.default,
    aten.alpha_dropout.default, aten.alpha_dropout_.default, aten.feature_alpha_dropout.default,
    aten.feature_alpha_dropout_.default,
}
# Copies and aliases of their first argument.
COPY_OPS = {
    aten.clone.default, aten.contiguous.default, aten.alias.default, aten.detach.default, aten.detach_.default,
    aten.lift_fresh_copy.default,
}
# Dtype (and device) conversions: identities when the dtype does not change.
CONVERSION_OPS = {
    aten.to.dtype, aten.to.dtype_layout, aten.to.device, aten.to.other, aten._to_copy.default,
    aten.type_as.default,
}
# Ops that rearrange or select elements without reordering them: identities when the output
# shape is the input shape.
SAME_SHAPE_IDENTITY_OPS = {
    aten.view.default, aten.reshape.default, aten._unsafe_view.default, aten.flatten.using_ints,
    aten.expand.default, aten.expand_as.default, aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default,
    aten.slice.Tensor, aten.narrow.default, aten.repeat.default, aten.unflatten.int,
}
# Permutations: identities when they keep the order of every dimension longer than 1.
PERMUTE_OPS = {aten.permute.default, aten.transpose.int, aten.t.default, aten.mT.default}
PAD_OPS = {aten.constant_pad_nd.default, aten.pad.default}
# Checks torch.export inserts for `.to()` calls: no output, nothing to run on a device.
ASSERT_OPS = {aten._assert_tensor_metadata.default}


def _val(node: object) -> torch.Tensor | None:
    val = node.meta.get("val") if isinstance(node, fx.Node) else None
    return val if isinstance(val, torch.Tensor) else None


def _same_tensor_type(node: fx.Node, src: fx.Node) -> bool:
    out, inp = _val(node), _val(src)
    return out is not None and inp is not None and out.dtype == inp.dtype and tuple(out.shape) == tuple(inp.shape)


def _permutation(node: fx.Node, rank: int) -> list[int]:
    if node.target == aten.permute.default:
        return [d % rank for d in node.args[1]]
    if node.target == aten.transpose.int:
        a, b = (d % rank for d in node.args[1:3])
    else:  # t / mT: the last two dimensions
        a, b = rank - 2, rank - 1
    perm = list(range(rank))
    perm[a], perm[b] = perm[b], perm[a]
    return perm


def _keeps_order(node: fx.Node, src: fx.Node) -> bool:
    """A permutation that moves only dimensions of size 1 leaves the bytes where they are."""
    inp = _val(src)
    if inp is None or inp.dim() < 2:
        return inp is not None
    long_dims = [d for d in _permutation(node, inp.dim()) if inp.shape[d] != 1]
    return long_dims == sorted(long_dims)


def identity_source(node: fx.Node) -> fx.Node | None:
    """The node whose value ``node`` returns unchanged in inference, or None."""
    if node.op != "call_function" or not node.args or not isinstance(node.args[0], fx.Node):
        return None
    src, target = node.args[0], node.target
    if target in DROPOUT_OPS:
        train = node.args[2] if len(node.args) > 2 else node.kwargs.get("train", False)
        return src if train is False else None
    if target in COPY_OPS or target in CONVERSION_OPS or target in SAME_SHAPE_IDENTITY_OPS:
        return src if _same_tensor_type(node, src) else None
    if target in PERMUTE_OPS:
        return src if _same_tensor_type(node, src) and _keeps_order(node, src) else None
    if target in PAD_OPS:
        return src if _same_tensor_type(node, src) and not any(node.args[1]) else None
    return None


def _native_dropout_output(node: fx.Node) -> fx.Node | None:
    """``native_dropout(x, p, train=False)`` returns (x, all-true mask): the getitem of its output,
    when the mask is not used."""
    if node.target != aten.native_dropout.default or len(node.args) < 3 or node.args[2] is not False:
        return None
    if not all(u.target is operator.getitem for u in node.users):
        return None
    if any(u.args[1] != 0 and u.users for u in node.users):
        return None  # the mask is used
    outputs = [u for u in node.users if u.args[1] == 0]
    return outputs[0] if len(outputs) == 1 else None


def _mutates(user: fx.Node) -> bool:
    schema = getattr(user.target, "_schema", None)
    return schema is not None and schema.is_mutable


def _mutated_around(node: fx.Node, src: fx.Node) -> bool:
    """An in-place op writes into ``node`` or ``src``: a copy keeps them apart (``z = y.clone();
    z.div_(2)`` must leave ``y`` alone), so it is not an identity here."""
    return any(_mutates(u) and u.target not in DROPOUT_OPS for n in (node, src) for u in n.users)


def _feeds_output_directly(node: fx.Node, src: fx.Node) -> bool:
    """Removing ``node`` would make a graph input or constant a model output: the program must
    still compute (copy) it, so the op stays."""
    return src.op in ("placeholder", "get_attr") and any(u.op == "output" for u in node.users)


def _views_to_reshapes(copy: fx.Node) -> None:
    """A ``view`` of a copy (``x.transpose(1, 2).contiguous().view(...)``) may not be a valid view of
    the uncopied tensor in eager torch (which calibration runs): it becomes the equivalent reshape."""
    for user in copy.users:
        if user.op == "call_function" and user.target in (aten.view.default, aten._unsafe_view.default):
            user.target = aten.reshape.default


def remove_identities(gm: fx.GraphModule) -> int:
    """Remove every op that is an identity in inference (see the module doc); returns the count."""
    removed = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function":
            continue
        if node.target in ASSERT_OPS and not node.users:
            gm.graph.erase_node(node)
            continue
        item = _native_dropout_output(node)
        if item is not None and not _feeds_output_directly(item, node.args[0]):
            item.replace_all_uses_with(node.args[0])
            for user in list(node.users):
                gm.graph.erase_node(user)
            gm.graph.erase_node(node)
            removed += 1
            continue
        src = identity_source(node)
        if src is None or _feeds_output_directly(node, src) or _mutated_around(node, src):
            continue
        if node.target in COPY_OPS:
            _views_to_reshapes(node)
        node.replace_all_uses_with(src)
        gm.graph.erase_node(node)
        removed += 1
    gm.graph.lint()
    gm.recompile()
    return removed


def _constant_node(gm: fx.GraphModule, like: fx.Node, value: torch.Tensor, base: str) -> fx.Node:
    """A ``get_attr`` of a new buffer holding ``value``, placed before ``like``."""
    from .fold_bn import _set_new_attr

    node = _set_new_attr(gm, like, base.replace(".", "_"), value.detach().contiguous())
    node.meta["val"] = like.meta["val"].fake_mode.from_tensor(value, static_shapes=True)
    return node


# Ops whose value depends only on their input's shape and dtype (static after torch.export).
SHAPE_ONLY_OPS = {
    aten.zeros_like.default, aten.ones_like.default, aten.full_like.default, aten.new_zeros.default,
    aten.new_ones.default, aten.new_full.default,
}


def _is_constant_call(node: fx.Node) -> bool:
    """A deterministic aten call whose value is known at compile time: its tensor inputs are all
    constants (``torch.ones(3, 8)`` or ``self.proj.T`` in forward), or it only reads their shape."""
    if node.op != "call_function" or not hasattr(node.target, "_schema") or node.target in ASSERT_OPS:
        return False
    if torch.Tag.nondeterministic_seeded in getattr(node.target, "tags", ()):
        return False  # rand, dropout in training...: not a constant
    if _val(node) is None:
        return False
    return node.target in SHAPE_ONLY_OPS or all(a.op == "get_attr" for a in node.all_input_nodes)


def _constant_arg(gm: fx.GraphModule, node: fx.Node) -> torch.Tensor:
    """A constant's value; for any other input (of a shape-only op), a tensor of its shape."""
    from ..lower.builder import get_attr_value

    if node.op == "get_attr":
        return get_attr_value(gm, node)
    val = node.meta["val"]
    return torch.zeros(tuple(val.shape), dtype=val.dtype)


def fold_constants(gm: fx.GraphModule) -> int:
    """Compute constant subgraphs at compile time: the result is a constant (a weight the quantizer
    sees, or an operand quantized once), not an op on the device. Returns the count."""
    folded = 0
    for node in list(gm.graph.nodes):
        if not _is_constant_call(node) or not node.users:
            continue
        args = fx.node.map_arg((node.args, node.kwargs), lambda a: _constant_arg(gm, a))
        with torch.no_grad():
            value = node.target(*args[0], **args[1])
        node.replace_all_uses_with(_constant_node(gm, node, value, f"{node.name}_constant"))
        gm.graph.erase_node(node)
        folded += 1
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return folded


MATMUL_OPS = {aten.matmul.default, aten.mm.default}


def matmul_by_constant_to_linear(gm: fx.GraphModule) -> int:
    """``x @ W`` with a constant 2-D ``W`` is ``linear(x, W.T)``: a fully connected layer with int8
    per-channel weights instead of an fp32 matmul. Returns the count."""
    from ..lower.builder import get_attr_value

    rewritten = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in MATMUL_OPS:
            continue
        x, w = node.args[:2]
        if not isinstance(w, fx.Node) or w.op != "get_attr" or not isinstance(x, fx.Node) or x.op == "get_attr":
            continue
        weight = get_attr_value(gm, w)
        if weight.dim() != 2 or not weight.is_floating_point():
            continue
        w_t = _constant_node(gm, node, weight.t(), f"{w.target}_t")
        with gm.graph.inserting_before(node):
            linear = gm.graph.call_function(aten.linear.default, (x, w_t))
        linear.meta.update(node.meta)
        node.replace_all_uses_with(linear)
        gm.graph.erase_node(node)
        rewritten += 1
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return rewritten


def transposes_to_permutes(gm: fx.GraphModule) -> int:
    """``transpose(a, b)``, ``t()`` and ``mT`` as the one ``permute`` they are: one form for the
    quantizer and the lowering, and the form the C runtime implements when it runs in fp32."""
    changed = 0
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in PERMUTE_OPS and node.target != aten.permute.default:
            val = _val(node.args[0])
            if val is None:
                continue
            node.args = (node.args[0], _permutation(node, val.dim()))
            node.target = aten.permute.default
            changed += 1
    gm.recompile()
    return changed


def prepare_float_graph(gm: fx.GraphModule) -> fx.GraphModule:
    """The float-graph passes between capture and quantization, in place: remove identities, write
    transposes as permutes, compute constant subgraphs, make matmuls by a constant linear layers,
    fold BatchNorm into the conv/linear before it, turn every other BatchNorm into a depthwise 1x1 conv."""
    from .fold_bn import batch_norm_to_depthwise, fold_batch_norm

    passes: tuple[Callable[[fx.GraphModule], int], ...] = (
        remove_identities, transposes_to_permutes, fold_constants, matmul_by_constant_to_linear, fold_batch_norm,
        batch_norm_to_depthwise)
    for run in passes:
        run(gm)
    return gm
