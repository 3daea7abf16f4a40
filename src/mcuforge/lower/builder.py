"""GraphBuilder: the state of one lowering — IR tensors and ops, and which fx node became which.

Values of the PT2E-converted graph map to IR tensors like this:
- ``quantize_per_tensor`` nodes are int8 tensors;
- ``dequantize_per_tensor`` nodes are "int8 seen as float": int8 ops read the int8 tensor
  behind them, and a ``dequantize`` op is emitted only when an fp32 op needs the float value;
- ``dequantize_per_channel`` of a constant is a quantized weight (int8 or int32 data + scales);
- every other node is a float32 tensor (fp32 fallback territory).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torchao.quantization.pt2e.quantize_pt2e  # noqa: F401 - registers torch.ops.quantized_decomposed
from torch import fx

from ..ir import DTYPES, Graph, Op, QParams, Tensor, op_precision
from ..kernels.quant_utils import dequantize_per_tensor
from ..nodes import describe, module_path, module_type, op_name, source_line  # noqa: F401 - their old home

qd = torch.ops.quantized_decomposed
Q_PER_TENSOR = {qd.quantize_per_tensor.default}
DQ_PER_TENSOR = {qd.dequantize_per_tensor.default}
DQ_PER_CHANNEL = {qd.dequantize_per_channel.default}

TORCH_TO_IR_DTYPE = {
    torch.int8: "int8", torch.int16: "int16", torch.int32: "int32", torch.float32: "float32",
    torch.int64: "int64", torch.bool: "bool",
}

NCHW_TO_NHWC = (0, 2, 3, 1)
NHWC_TO_NCHW = (0, 3, 1, 2)


# Constants at least this big are stored once when several ops use the same bytes; smaller ones
# (per-layer multipliers and shifts) stay per op, so editing one layer's parameters touches only it.
SHARED_CONSTANT_MIN_BYTES = 256


class LoweringError(RuntimeError):
    """A model could not be lowered; the message names the module and op at fault."""


@dataclass
class QuantizedConstant:
    """A constant behind ``dequantize_per_channel``: integer data, per-channel scales and the quantized range."""

    data: np.ndarray
    scales: np.ndarray
    axis: int
    quant_range: tuple[int, int] = (-128, 127)

    @property
    def bits(self) -> int:
        """4 when the values fit int4 by the quantizer's range ([-8, 7]: packed two per byte), else 8."""
        return 4 if -8 <= self.quant_range[0] and self.quant_range[1] <= 7 else 8


def is_q(node: object) -> bool:
    return isinstance(node, fx.Node) and node.op == "call_function" and node.target in Q_PER_TENSOR


def is_dq(node: object) -> bool:
    return isinstance(node, fx.Node) and node.op == "call_function" and node.target in DQ_PER_TENSOR


def is_dq_channel(node: object) -> bool:
    return isinstance(node, fx.Node) and node.op == "call_function" and node.target in DQ_PER_CHANNEL


def qparams_of(node: fx.Node) -> QParams:
    """QParams of a quantize/dequantize_per_tensor node: args (x, scale, zero_point, ...)."""
    return QParams(float(node.args[1]), int(node.args[2]))


def node_shape(node: fx.Node) -> tuple[int, ...]:
    val = node.meta.get("val")
    while val is None and (is_q(node) or is_dq(node)):
        node = node.args[0]  # PT2E's inserted quantize/dequantize nodes carry no value: ask the source
        val = node.meta.get("val")
    if val is None and node.op == "get_attr":  # a constant folded by PT2E
        val = get_attr_value(node.graph.owning_module, node)
    if not isinstance(val, torch.Tensor):
        raise LoweringError(f"node {node.name} ({node.target}) has no tensor value to lower")
    return tuple(int(d) for d in val.shape)


def node_dtype(node: fx.Node) -> str:
    val = node.meta.get("val")
    dtype = getattr(val, "dtype", None)
    if dtype not in TORCH_TO_IR_DTYPE:
        raise LoweringError(f"{describe(node)}: tensor dtype {dtype} is not supported ({', '.join(DTYPES)})")
    return TORCH_TO_IR_DTYPE[dtype]




def get_attr_value(gm: fx.GraphModule, node: fx.Node) -> torch.Tensor:
    value: Any = gm
    for part in str(node.target).split("."):
        value = getattr(value, part)
    return value.detach() if isinstance(value, torch.Tensor) else torch.as_tensor(value)


class GraphBuilder:
    def __init__(self, gm: fx.GraphModule, target: str) -> None:
        self.gm = gm
        self.target = target
        self.tensors: dict[str, Tensor] = {}
        self.ops: list[Op] = []
        self.env: dict[fx.Node, str] = {}  # fx node -> IR tensor name
        self.multi: dict[fx.Node, list[str]] = {}  # fx node with several outputs -> their tensors
        self.fused: set[fx.Node] = set()  # activations folded into the int8 op before them
        self._float_of: dict[str, str] = {}  # int8 tensor -> its dequantized float tensor
        self._layout_of: dict[tuple[str, str], str] = {}  # (tensor, layout) -> converted tensor
        self._constants: dict[str, str] = {}  # get_attr target ("int8:" prefix when quantized) -> tensor
        self._same_bytes: dict[tuple, str] = {}  # (dtype, shape, layout, qparams, sha1 of bytes) -> constant
        self._names: set[str] = set()

    # -- tensors -------------------------------------------------------------------------
    def _unique(self, base: str) -> str:
        name = re.sub(r"[^A-Za-z0-9_.]", "_", base) or "t"
        candidate, i = name, 0
        while candidate in self._names:
            i += 1
            candidate = f"{name}_{i}"
        self._names.add(candidate)
        return candidate

    def add_tensor(self, base: str, shape: tuple[int, ...], dtype: str, *, qparams: QParams | None = None,
                   data: np.ndarray | None = None, layout: str = "plain") -> str:
        shape = tuple(int(d) for d in shape)
        key = None
        if data is not None:
            data = np.ascontiguousarray(data)
            if data.nbytes >= SHARED_CONSTANT_MIN_BYTES:
                # The same weights used at several places (an unrolled LSTM uses its hidden weights at
                # every time step) are stored once in flash.
                key = (dtype, shape, layout, qparams, hashlib.sha1(data.tobytes()).hexdigest())
                if key in self._same_bytes:
                    return self._same_bytes[key]
        name = self._unique(base)
        self.tensors[name] = Tensor(name, shape, dtype, qparams, data, layout)
        if key is not None:
            self._same_bytes[key] = name
        return name

    def constant(self, base: str, data: np.ndarray) -> str:
        dtype = {np.dtype(np.int8): "int8", np.dtype(np.int16): "int16", np.dtype(np.int32): "int32",
                 np.dtype(np.float32): "float32"}[np.asarray(data).dtype]
        return self.add_tensor(base, np.shape(data), dtype, data=np.asarray(data))

    def like(self, base: str, other: str, *, shape: tuple[int, ...] | None = None,
             dtype: str | None = None, qparams: QParams | None = None, layout: str | None = None) -> str:
        t = self.tensors[other]
        return self.add_tensor(base, shape or t.shape, dtype or t.dtype,
                               qparams=qparams if qparams is not None else t.qparams,
                               layout=layout or t.layout)

    # -- ops -------------------------------------------------------------------------------
    def add_op(self, kind: str, inputs: list[str], outputs: list[str], attrs: dict[str, Any] | None = None, *,
               backend: str = "int8", reason: str = "", nodes: list[fx.Node] | None = None,
               precision: str = "") -> Op:
        """Emit an op; its ``precision`` is the kind's own, or for data movement that of the values moved
        (``mcuforge.ir.op_precision``), unless given."""
        debug: dict[str, Any] = {}
        if nodes:
            anchor = nodes[0]
            debug = {
                "module": module_path(anchor),
                "module_type": module_type(anchor),
                "source": source_line(anchor),
                "aten": [op_name(n) for n in nodes],
                "nodes": [n.name for n in nodes],
            }
        op = Op(kind, list(inputs), list(outputs), dict(attrs or {}), backend, reason, debug)
        op.precision = precision or op_precision(op, self.tensors)
        self.ops.append(op)
        return op

    # -- values ----------------------------------------------------------------------------
    def int8_source(self, node: object) -> str | None:
        """The int8 tensor behind a ``dequantize_per_tensor`` node: a lowered activation, or a
        constant that PT2E quantized and folded (e.g. a buffer added to an activation)."""
        if not is_dq(node):
            return None
        src = node.args[0]
        if src in self.env:
            return self.env[src]
        if isinstance(src, fx.Node) and src.op == "get_attr":
            key = f"int8:{src.target}"
            if key not in self._constants:
                value = get_attr_value(self.gm, src)
                data = value.numpy()
                layout = "nhwc" if data.ndim == 4 else "plain"
                if layout == "nhwc":
                    data = np.transpose(data, NCHW_TO_NHWC)
                self._constants[key] = self.add_tensor(str(src.target), data.shape, TORCH_TO_IR_DTYPE[value.dtype],
                                                       qparams=qparams_of(node), data=data, layout=layout)
            return self._constants[key]
        return None

    def float_value(self, node: fx.Node, consumer: fx.Node) -> str:
        """The float32 tensor for ``node`` as an input of an fp32 op (dequantizing if needed)."""
        if is_dq(node):
            src = self.int8_source(node)
            if src is None:
                raise LoweringError(f"{describe(consumer)}: input {node.name} was not lowered")
            t = self.tensors[src]
            if t.is_constant and src not in self._float_of:
                real = dequantize_per_tensor(t.data, t.qparams.scale, t.qparams.zero_point)
                self._float_of[src] = self.add_tensor(f"{src}_f32", t.shape, "float32", data=real, layout=t.layout)
            if src not in self._float_of:
                out = self.add_tensor(f"{src}_f32", t.shape, "float32", layout=t.layout)
                self.add_op("dequantize", [src], [out], {"scale": t.qparams.scale,
                                                         "zero_point": t.qparams.zero_point},
                            backend="fp32", reason="fp32 boundary", nodes=[consumer])
                self._float_of[src] = out
            return self._float_of[src]
        if is_dq_channel(node):
            # A quantized weight used by an fp32 op: the dequantized constant.
            qc = self.quantized_constant(node)
            shape = [1] * qc.data.ndim
            shape[qc.axis] = -1
            real = (qc.data.astype(np.float64) * qc.scales.reshape(shape)).astype(np.float32)
            return self.constant(f"{node.name}_f32", real)
        if node.op == "get_attr":
            value = get_attr_value(self.gm, node)
            if value.dtype in (torch.float64, torch.float16, torch.bfloat16):
                value = value.float()
            key = str(node.target)
            if key not in self._constants:
                self._constants[key] = self.constant(key, value.contiguous().numpy())
            return self._constants[key]
        if node not in self.env:
            raise LoweringError(f"{describe(consumer)}: input {node.name} was not lowered")
        return self.env[node]

    def quantized_constant(self, node: fx.Node) -> QuantizedConstant:
        data_node, scale_node, _zp_node, axis, quant_min, quant_max = node.args[:6]
        data = get_attr_value(self.gm, data_node).numpy()
        scales = get_attr_value(self.gm, scale_node).to(torch.float32).numpy()
        return QuantizedConstant(data, scales, int(axis), (int(quant_min), int(quant_max)))

    # -- layout ----------------------------------------------------------------------------
    def same_bytes_as_plain(self, name: str) -> bool:
        """Whether an NHWC tensor has the same bytes as its NCHW form (C == 1 or H*W == 1)."""
        t = self.tensors[name]
        if t.layout != "nhwc":
            return True
        _n, h, w, c = t.shape
        return c == 1 or h * w == 1

    def as_layout(self, name: str, layout: str, nodes: list[fx.Node] | None = None) -> str:
        """``name`` in ``layout`` ("plain" = torch's NCHW order, or "nhwc"), transposing if needed."""
        t = self.tensors[name]
        if t.layout == layout or len(t.shape) != 4:
            return name
        key = (name, layout)
        if key in self._layout_of:
            return self._layout_of[key]
        if layout == "nhwc":
            perm, shape = NCHW_TO_NHWC, tuple(t.shape[i] for i in NCHW_TO_NHWC)
        else:
            perm, shape = NHWC_TO_NCHW, tuple(t.shape[i] for i in NHWC_TO_NCHW)
        if t.is_constant:  # permute the data at compile time: no op
            out = self.add_tensor(f"{name}_{layout}", shape, t.dtype, qparams=t.qparams,
                                  data=np.transpose(t.data, perm), layout=layout)
            self._layout_of[key] = out
            return out
        out = self.like(f"{name}_{layout}", name, shape=shape, layout=layout)
        _n, h, w, c = t.shape if t.layout == "nhwc" else tuple(t.shape[i] for i in NCHW_TO_NHWC)
        if c == 1 or h * w == 1:
            # Same bytes in both orders: a plain copy, no transpose.
            self.add_op("reshape", [name], [out], backend=self._data_backend(t),
                        reason=self._data_reason(t, "layout change"), nodes=nodes)
        else:
            self.add_op("transpose", [name], [out], {"perm": list(perm)}, backend=self._data_backend(t),
                        reason=self._data_reason(t, "layout change"), nodes=nodes)
        self._layout_of[key] = out
        return out

    def reshape(self, name: str, shape: tuple[int, ...], layout: str = "plain",
                nodes: list[fx.Node] | None = None) -> str:
        """``name`` with a new shape (same bytes): a reshape op, which the planner makes free."""
        t = self.tensors[name]
        if t.shape == tuple(shape) and t.layout == layout:
            return name
        out = self.like(f"{name}_r", name, shape=tuple(shape), layout=layout)
        self.add_op("reshape", [name], [out], backend=self._data_backend(t),
                    reason=self._data_reason(t, "reshape"), nodes=nodes)
        return out

    def as_rows(self, name: str, nodes: list[fx.Node] | None = None) -> str:
        """A 3-D (N, C, L) tensor as the NHWC image (N, 1, L, C) that 2-D kernels take (conv1d)."""
        key = (name, "rows")
        if key not in self._layout_of:
            n, c, length = self.tensors[name].shape
            self._layout_of[key] = self.as_layout(self.reshape(name, (n, c, 1, length), nodes=nodes), "nhwc", nodes)
        return self._layout_of[key]

    def from_rows(self, rows: str, nodes: list[fx.Node] | None = None) -> str:
        """The (N, C, L) form of an NHWC (N, 1, L, C) result; the next conv1d reads ``rows`` itself,
        and the conversion ops are pruned when nothing else reads the (N, C, L) form."""
        n, _one, length, c = self.tensors[rows].shape
        plain = self.reshape(self.as_layout(rows, "plain", nodes), (n, c, length), nodes=nodes)
        self._layout_of[(plain, "rows")] = rows
        return plain

    def prune(self, outputs: list[str], inputs: list[str]) -> None:
        """Drop ops whose outputs nothing reads (layout conversions made in case a consumer would
        need them) and the tensors only they used. Every op is pure, so this never changes results."""
        needed = set(inputs) | set(outputs)
        kept: list[Op] = []
        for op in reversed(self.ops):
            if any(name in needed for name in op.outputs):
                kept.append(op)
                needed.update(op.outputs)
                needed.update(name for name in op.inputs if name)
        self.ops = kept[::-1]
        self.tensors = {name: t for name, t in self.tensors.items() if name in needed}

    @staticmethod
    def _data_backend(t: Tensor) -> str:
        return "fp32" if t.dtype == "float32" else "int8"

    @staticmethod
    def _data_reason(t: Tensor, what: str) -> str:
        """Why a data movement op is fp32: it moves the float value of an fp32 op (empty for int8)."""
        return f"{what} of an fp32 value (inside an fp32 island)" if t.dtype == "float32" else ""

    def build(self, inputs: list[str], outputs: list[str]) -> Graph:
        self.prune(outputs, inputs)
        self._add_references()
        return Graph(dict(self.tensors), list(self.ops), inputs, outputs, self.target)

    def _add_references(self) -> None:
        """The debug record's fp32 reference of each op: the float fx node whose value its first
        output holds (for an int8 output, the node its quantize node quantizes). Helper ops
        (layout changes, fp32 boundaries) hold no node's value and get none."""
        node_of: dict[str, fx.Node] = {}
        for node in self.gm.graph.nodes:  # graph order: the node that produced a tensor comes first
            if node in self.env:
                node_of.setdefault(self.env[node], node.args[0] if is_q(node) else node)
        for op in self.ops:
            node = node_of.get(op.outputs[0]) if op.outputs else None
            if isinstance(node, fx.Node) and node.op == "call_function":
                op.debug["reference"] = {"node": node.name, "module": module_path(node)}
