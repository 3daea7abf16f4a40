"""The lowering walk: PT2E-converted GraphModule -> backend IR graph.

Nodes are visited in graph order. A quantized pattern (``dequantize -> op [-> activation] ->
quantize``) becomes one int8 kernel (see ``int8/``); anything else becomes an fp32 op
(see ``fallback.py``), with ``dequantize``/``quantize`` ops placed at the int8 boundaries.
"""

from __future__ import annotations

import operator

import torch
from torch import fx

from ..ir import Graph, QParams
from ..kernels.quant_utils import quantize_multiplier
from .builder import (
    NCHW_TO_NHWC,
    GraphBuilder,
    LoweringError,
    describe,
    is_dq,
    is_dq_channel,
    is_q,
    module_path,
    module_type,
    node_dtype,
    node_shape,
    qparams_of,
)
from .fallback import lower_fp32
from .int8 import INT8_LOWERINGS, NotInt8

#: The integer activations a quantize node may produce: (torch dtype, quant_min, quant_max) -> IR dtype.
QUANTIZED_DTYPES = {(torch.int8, -128, 127): "int8", (torch.int16, -32768, 32767): "int16"}


def quantized_dtype(node: fx.Node) -> str:
    """The IR dtype of a quantize node's output: int8 [-128, 127] or int16 [-32768, 32767]."""
    key = (node.args[5], int(node.args[3]), int(node.args[4]))
    if key not in QUANTIZED_DTYPES:
        raise LoweringError(f"{describe(node)}: only int8 [-128, 127] and int16 [-32768, 32767] activations "
                            f"are supported, got {key[0]} [{key[1]}, {key[2]}]")
    return QUANTIZED_DTYPES[key]


def _lower_placeholder(b: GraphBuilder, node: fx.Node) -> str:
    """A model input. When all its users quantize it the same way, the program takes it as
    int8 (or int16) directly (the host runtime quantizes exactly like PT2E's quantize node)."""
    shape = node_shape(node)
    users = list(node.users)
    qusers = [u for u in users if is_q(u)]
    layout = "nhwc" if len(shape) == 4 else "plain"
    stored = tuple(shape[i] for i in NCHW_TO_NHWC) if layout == "nhwc" else shape
    if users and len(qusers) == len(users) and len({(qparams_of(u), quantized_dtype(u)) for u in qusers}) == 1:
        name = b.add_tensor(node.name, stored, quantized_dtype(qusers[0]), qparams=qparams_of(qusers[0]),
                            layout=layout)
        for u in qusers:
            b.env[u] = name
    else:
        name = b.add_tensor(node.name, stored, node_dtype(node), layout=layout)
    b.env[node] = name
    return name


def _lower_quantize(b: GraphBuilder, node: fx.Node) -> None:
    """A quantize of a float value: the end of an fp32 island, or (a quantize of a dequantized integer tensor
    of the other width) where int8 and int16 values meet, which becomes a requantizing cast."""
    qp, dtype = qparams_of(node), quantized_dtype(node)
    if _lower_width_change(b, node, qp, dtype):
        return
    src = b.float_value(node.args[0], node)
    out = b.like(node.name, src, dtype=dtype, qparams=qp)
    b.add_op("quantize", [src], [out], {"scale": qp.scale, "zero_point": qp.zero_point},
             backend="fp32", reason="fp32 boundary", nodes=[node])
    b.env[node] = out


def _lower_width_change(b: GraphBuilder, node: fx.Node, qp: QParams, dtype: str) -> bool:
    """``quantize(dequantize(t))`` with t an int8 activation and an int16 quantize (or the reverse): one
    convert_s8_s16 / convert_s16_s8 op, ``requantize`` by the ratio of the scales (the "a16w8" scheme runs ops
    without s16 kernels in int8). Returns False when it does not apply (the float route then does it)."""
    src = b.int8_source(node.args[0]) if is_dq(node.args[0]) else None
    if src is None or b.tensors[src].is_constant or b.tensors[src].dtype == dtype:
        return False
    qin = b.tensors[src].qparams
    s16_zero_point = qin.zero_point if dtype == "int8" else qp.zero_point
    try:
        multiplier, shift = quantize_multiplier(qin.scale / qp.scale)
    except ValueError:
        return False
    if s16_zero_point != 0 or multiplier == 0:
        return False
    out = b.like(node.name, src, dtype=dtype, qparams=qp)
    if dtype == "int16":
        op = b.add_op("convert_s8_s16", [src], [out], {"input_offset": -qin.zero_point, "multiplier": multiplier,
                                                       "shift": shift}, nodes=[node])
    else:
        op = b.add_op("convert_s16_s8", [src], [out], {"output_offset": qp.zero_point, "multiplier": multiplier,
                                                       "shift": shift}, nodes=[node])
    if not op.debug.get("module"):  # PT2E's quantize nodes carry no module
        op.debug.update(_int16_side_module(b, node, src, dtype))
    b.env[node] = out
    return True


def _int16_side_module(b: GraphBuilder, node: fx.Node, src: str, dtype: str) -> dict[str, str]:
    """The module a width change is counted in (``mcuforge info``, the Inspector's totals): that of the op on
    its int16 side. int16 -> int8: the op that computed ``src``; int8 -> int16: the node the int16 values go
    to (the quantize's users, past their dequantize), whose op is not emitted yet."""
    if dtype == "int8":
        producer = next((op for op in reversed(b.ops) if src in op.outputs), None)
        found = producer.debug if producer is not None else {}
        return {k: found[k] for k in ("module", "module_type") if found.get(k)}
    frontier = [node]
    for _ in range(3):
        frontier = [n for f in frontier for n in f.users if isinstance(n, fx.Node)]
        user = next((n for n in frontier if n.meta.get("nn_module_stack")), None)
        if user is not None:
            return {"module": module_path(user), "module_type": module_type(user)}
    return {}


def _output_tensor(b: GraphBuilder, value: object) -> str:
    if is_dq(value):
        src = b.int8_source(value)
        if src is not None:
            return src
    if isinstance(value, fx.Node) and value in b.env:
        return b.env[value]
    if isinstance(value, fx.Node):
        return b.float_value(value, value)
    raise LoweringError(f"model output {value!r} is not a tensor")


def lower_to_ir(gm: fx.GraphModule, target: str) -> Graph:
    """Lower a PT2E-converted GraphModule (from :func:`mcuforge.quantize.quantize`) to the IR."""
    b = GraphBuilder(gm, target)
    inputs: list[str] = []
    outputs: list[str] = []
    for node in gm.graph.nodes:
        if node in b.env:
            continue  # already produced (fused activation output, quantized model input)
        if node.op == "placeholder":
            inputs.append(_lower_placeholder(b, node))
        elif node.op == "get_attr" or is_dq(node) or is_dq_channel(node):
            continue  # values resolved lazily by their consumers
        elif is_q(node):
            _lower_quantize(b, node)
        elif node.op == "call_function" and node.target is operator.getitem:
            src, index = node.args
            if src not in b.multi:
                raise LoweringError(f"{describe(node)}: getitem of a value that is not a tuple")
            b.env[node] = b.multi[src][index]
        elif node.op == "call_function":
            _lower_call(b, node)
        elif node.op == "output":
            values = node.args[0] if isinstance(node.args[0], (list, tuple)) else [node.args[0]]
            outputs = [_output_tensor(b, v) for v in values]
        else:
            raise LoweringError(f"{describe(node)}: unsupported graph node kind {node.op!r}")
    return b.build(inputs, outputs)


# How a reason names ops whose aten name does not read well on its own.
OP_WORDS = {"div": "division", "sub": "subtraction", "rsub": "subtraction", "pow": "power", "bmm": "matmul"}


def no_kernel_reason(node: fx.Node) -> str:
    """Why an op without an int8 lowering runs in fp32, e.g. "layer_norm has no int8 kernel"."""
    schema = getattr(node.target, "_schema", None)
    name = schema.name.split("::")[-1].rstrip("_") if schema is not None else str(node.target)
    return f"{OP_WORDS.get(name, name)} has no int8 kernel"


def _lower_call(b: GraphBuilder, node: fx.Node) -> None:
    if node in b.fused:
        return  # an activation already fused into the int8 op before it
    lowering = INT8_LOWERINGS.get(node.target)
    if lowering is None:
        lower_fp32(b, node, no_kernel_reason(node))
        return
    n_ops = len(b.ops)
    try:
        lowering(b, node)
    except NotInt8 as exc:
        # Int8 lowerings check everything before emitting: a failure after emitting is a bug.
        assert len(b.ops) == n_ops, f"{describe(node)}: int8 lowering failed after emitting ops"
        lower_fp32(b, node, f"int8 not possible: {exc}")
