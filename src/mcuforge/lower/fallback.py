"""fp32 fallback: an aten op without an int8 kernel runs in float between dequantize and quantize.

The op is recorded as ``aten_fp32`` with its aten name and arguments (tensor arguments become
:class:`~mcuforge.ir.TensorRef`). The fp32 op table is closed: only the aten ops that the C runtime
implements (:func:`fp32_op_table`, the ops of ``csrc/kernels/fp32/aten_list.h``) are emitted, so a
program that compiles runs on every backend; any other aten op is a :class:`LoweringError` naming
the module and the op, at compile time rather than on the board.
Layout: fp32 ops see torch's own NCHW order, except pointwise ops on equally shaped tensors,
which do not care and keep NHWC (saving two transposes).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import fx

from ..ir import TensorRef
from .builder import TORCH_TO_IR_DTYPE, GraphBuilder, LoweringError, describe

aten = torch.ops.aten

# Pointwise ops whose result does not depend on the memory order of equally shaped inputs.
POINTWISE = {
    aten.relu.default, aten.relu_.default, aten.hardtanh.default, aten.hardtanh_.default,
    aten.clamp.default, aten.clamp_.default, aten.sigmoid.default, aten.sigmoid_.default,
    aten.tanh.default, aten.tanh_.default, aten.gelu.default, aten.silu.default, aten.silu_.default,
    aten.hardswish.default, aten.hardswish_.default, aten.hardsigmoid.default, aten.elu.default,
    aten.leaky_relu.default, aten.exp.default, aten.log.default, aten.abs.default, aten.neg.default,
    aten.sqrt.default, aten.rsqrt.default, aten.sin.default, aten.cos.default, aten.square.default,
    aten.add.Tensor, aten.add_.Tensor, aten.sub.Tensor, aten.mul.Tensor, aten.mul_.Tensor,
    aten.div.Tensor, aten.pow.Tensor_Scalar, aten.maximum.default, aten.minimum.default,
    aten.clone.default, aten.contiguous.default, aten.dropout.default, aten.alias.default,
    aten.softplus.default, aten.mish.default, aten.relu6.default, aten.reciprocal.default,
}


def _encode(value: Any, tensor_arg) -> Any:
    if isinstance(value, fx.Node):
        return tensor_arg(value)
    if isinstance(value, (list, tuple)):
        return [_encode(v, tensor_arg) for v in value]
    if isinstance(value, (torch.dtype, torch.device, torch.layout, torch.memory_format)):
        return str(value)  # "torch.float32", "cpu", ...: decoded by the runtime
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise LoweringError(f"argument of type {type(value).__name__} cannot be stored in a program")


def _tensor_nodes(value: Any) -> list[fx.Node]:
    if isinstance(value, fx.Node):
        return [value]
    if isinstance(value, (list, tuple)):
        return [n for v in value for n in _tensor_nodes(v)]
    return []


def aten_name(target: Any) -> str:
    """``torch.ops.aten.relu_.default`` -> ``"aten.relu.default"``: in-place ops are stored as their
    functional form, since an fp32 op must never write into its inputs' arena bytes."""
    if not hasattr(target, "_schema"):
        raise LoweringError(f"{target} is not an aten operator and cannot be stored in a program")
    namespace, op = target._schema.name.split("::")
    overload = target._overloadname
    if op.endswith("_") and not op.startswith("_"):
        functional = getattr(getattr(torch.ops, namespace), op[:-1], None)
        if functional is not None and hasattr(functional, overload):
            op = op[:-1]
    return f"{namespace}.{op}.{overload}"


def fp32_op_table() -> frozenset[str]:
    """The aten ops the compiler may emit as ``aten_fp32``: exactly those with a C kernel (each
    also runs on the host Python runtime: as the C kernel computes it, runtime/fp32_exact.py)."""
    from ..cruntime import c_aten_ops

    return c_aten_ops()


def aten_fp32_attrs(target: str, args: list, kwargs: dict) -> dict[str, Any]:
    """The attributes of an ``aten_fp32`` op: the aten op, its arguments, and its position in the C
    runtime's fp32 table (the index the runtime dispatches by; -1 for an op the table lacks)."""
    from ..aten_table import aten_table_index

    return {"target": target, "args": args, "kwargs": kwargs, "table_index": aten_table_index(target)}


def check_fp32_op(node: fx.Node, reason: str) -> str:
    """``node``'s aten name if it is in the fp32 op table; else a LoweringError saying what to do."""
    name = aten_name(node.target)
    if name not in fp32_op_table():
        raise LoweringError(
            f"{describe(node)}: {name} cannot run in int8 ({reason}) and the C runtime has no fp32 kernel "
            f"for it, so the program could not run on a board; express it with supported ops (docs/ops.md) "
            f"or add an fp32 kernel (csrc/kernels/fp32 and aten_list.h)")
    return name


def lower_fp32(b: GraphBuilder, node: fx.Node, reason: str) -> None:
    """Emit ``node`` as an ``aten_fp32`` op; its tensor inputs are dequantized if int8.
    Raises LoweringError for an aten op outside :func:`fp32_op_table`."""
    name = check_fp32_op(node, reason)
    tensor_inputs = _tensor_nodes(list(node.args) + list(node.kwargs.values()))
    floats = {n: b.float_value(n, node) for n in tensor_inputs}
    shapes = {b.tensors[t].shape for t in floats.values()}
    keep_nhwc = (
        node.target in POINTWISE and len(shapes) == 1
        and all(b.tensors[t].layout == "nhwc" for t in floats.values())
    )
    layout = "nhwc" if keep_nhwc else "plain"
    inputs: list[str] = []

    def tensor_arg(n: fx.Node) -> TensorRef:
        name = b.as_layout(floats[n], layout, [node])
        if name not in inputs:
            inputs.append(name)
        return TensorRef(inputs.index(name))

    args = _encode(list(node.args), tensor_arg)
    kwargs = {k: _encode(v, tensor_arg) for k, v in node.kwargs.items()}
    val = node.meta.get("val")
    values = list(val) if isinstance(val, (list, tuple)) else [val]
    outputs = []
    for i, v in enumerate(values):
        if not isinstance(v, torch.Tensor):
            raise LoweringError(f"{describe(node)}: output {i} is not a tensor ({type(v).__name__})")
        shape = tuple(int(d) for d in v.shape)
        if keep_nhwc:
            shape = (shape[0], shape[2], shape[3], shape[1])
        dtype = TORCH_TO_IR_DTYPE.get(v.dtype)
        if dtype is None:
            raise LoweringError(f"{describe(node)}: output {i} has dtype {v.dtype}, not supported")
        outputs.append(b.add_tensor(node.name if len(values) == 1 else f"{node.name}_{i}", shape, dtype,
                                    layout=layout if len(shape) == 4 else "plain"))
    b.add_op("aten_fp32", inputs, outputs, aten_fp32_attrs(name, args, kwargs), backend="fp32", reason=reason,
             nodes=[node])
    if len(values) == 1 and not isinstance(val, (list, tuple)):
        b.env[node] = outputs[0]
    else:
        b.multi[node] = outputs

