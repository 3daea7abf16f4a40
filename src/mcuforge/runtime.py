"""Host runtime: executes an IR graph (as read from a program file) op by op, in one arena.

Every activation is a view of the arena at its planned offset, exactly as on the device, so a
planning error shows up here as wrong numbers, not only on the board. Each op kind maps to an
adapter below that unpacks the op's tensors and attributes into the kernel's CMSIS-NN-style
arguments (``mcuforge.kernels``); fp32 fallback ops call the aten op itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from . import kernels as K
from .ir import DTYPES, Graph, Op, TensorRef
from .kernels.clamp import clamp_s8


class OpExecutionError(RuntimeError):
    """An op failed at run time; the message names the op index, kind and module."""


Kernel = Callable[[Op, list[np.ndarray], list[np.ndarray]], np.ndarray | list[np.ndarray]]


def _conv(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    x, w, bias, mult, shift = ins
    a = op.attrs
    _n, oh, ow, _c = outs[0].shape
    return K.conv2d_s8(x, w, bias, input_offset=a["input_offset"], output_offset=a["output_offset"],
                       multipliers=mult, shifts=shift, stride=tuple(a["stride"]), padding=tuple(a["padding"]),
                       dilation=tuple(a["dilation"]), act_min=a["act_min"], act_max=a["act_max"],
                       output_hw=(oh, ow))


def _depthwise(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    x, w, bias, mult, shift = ins
    a = op.attrs
    _n, oh, ow, _c = outs[0].shape
    return K.depthwise_conv2d_s8(x, w, bias, input_offset=a["input_offset"], output_offset=a["output_offset"],
                                 multipliers=mult, shifts=shift, stride=tuple(a["stride"]),
                                 padding=tuple(a["padding"]), dilation=tuple(a["dilation"]),
                                 depth_multiplier=a["depth_multiplier"], act_min=a["act_min"],
                                 act_max=a["act_max"], output_hw=(oh, ow))


def _fully_connected(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    x, w, bias, mult, shift = ins
    a = op.attrs
    return K.fully_connected_s8(x.reshape(-1, w.shape[1]), w, bias, input_offset=a["input_offset"],
                                output_offset=a["output_offset"], multipliers=mult, shifts=shift,
                                act_min=a["act_min"], act_max=a["act_max"])


def _add(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    return K.add_s8(ins[0], ins[1], **op.attrs)


def _pool(kernel: Callable[..., np.ndarray]) -> Kernel:
    def run(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
        a = op.attrs
        x = ins[0]
        stride, padding, k = a["stride"], a["padding"], a["kernel"]
        oh = (x.shape[1] + 2 * padding[0] - k[0]) // stride[0] + 1
        ow = (x.shape[2] + 2 * padding[1] - k[1]) // stride[1] + 1
        return kernel(x, kernel=tuple(k), stride=tuple(stride), padding=tuple(padding), act_min=a["act_min"],
                      act_max=a["act_max"], output_hw=(oh, ow))
    return run


def _clamp(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    return clamp_s8(ins[0], act_min=op.attrs["act_min"], act_max=op.attrs["act_max"])


def _reshape(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    return ins[0]


def _transpose(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    return np.transpose(ins[0], op.attrs["perm"])


def _quantize(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    return K.quantize_per_tensor(ins[0], op.attrs["scale"], op.attrs["zero_point"])


def _dequantize(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    return K.dequantize_per_tensor(ins[0], op.attrs["scale"], op.attrs["zero_point"])


def resolve_aten(name: str) -> Any:
    """``"aten.gelu.default"`` -> ``torch.ops.aten.gelu.default``."""
    namespace, op_name, overload = name.split(".")
    return getattr(getattr(getattr(torch.ops, namespace), op_name), overload)


def _decode(value: Any, tensors: list[torch.Tensor]) -> Any:
    if isinstance(value, TensorRef):
        return tensors[value.index]
    if isinstance(value, list):
        return [_decode(v, tensors) for v in value]
    if isinstance(value, str) and value.startswith("torch."):
        decoded = getattr(torch, value[len("torch."):], None)
        if isinstance(decoded, (torch.dtype, torch.memory_format, torch.layout)):
            return decoded
    return value


def _aten(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> list[np.ndarray]:
    fn = resolve_aten(op.attrs["target"])
    tensors = [torch.from_numpy(np.ascontiguousarray(x)) for x in ins]
    args = _decode(op.attrs["args"], tensors)
    kwargs = {k: _decode(v, tensors) for k, v in op.attrs["kwargs"].items()}
    with torch.no_grad():
        result = fn(*args, **kwargs)
    results = list(result) if isinstance(result, (list, tuple)) else [result]
    return [r.detach().numpy() for r in results]


KERNELS: dict[str, Kernel] = {
    "conv2d_s8": _conv,
    "depthwise_conv2d_s8": _depthwise,
    "fully_connected_s8": _fully_connected,
    "add_s8": _add,
    "avgpool_s8": _pool(K.avgpool_s8),
    "maxpool_s8": _pool(K.maxpool_s8),
    "clamp_s8": _clamp,
    "reshape": _reshape,
    "transpose": _transpose,
    "quantize": _quantize,
    "dequantize": _dequantize,
    "aten_fp32": _aten,
}


class Arena:
    """Views of one byte buffer at the planned offsets (activations) and the constants."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.buffer = np.zeros(max(graph.arena_bytes, 1), np.uint8)

    def view(self, name: str) -> np.ndarray:
        t = self.graph.tensors[name]
        if t.is_constant:
            return t.data
        raw = self.buffer[t.offset:t.offset + t.nbytes]
        return raw.view(DTYPES[t.dtype]).reshape(t.shape)


def execute(graph: Graph, inputs: Sequence[np.ndarray],
            on_op: Callable[[int, Op, Arena], None] | None = None) -> list[np.ndarray]:
    """Run ``graph`` on inputs already in the program's dtype and layout; returns copies of the
    outputs. ``on_op(index, op, arena)`` is called after each op (tracing hooks)."""
    if len(inputs) != len(graph.inputs):
        raise ValueError(f"program takes {len(graph.inputs)} inputs, got {len(inputs)}")
    arena = Arena(graph)
    for name, value in zip(graph.inputs, inputs, strict=True):
        dst = arena.view(name)
        value = np.asarray(value)
        if value.shape != dst.shape or value.dtype != dst.dtype:
            raise ValueError(f"input {name!r}: expected {dst.dtype}{list(dst.shape)}, got "
                             f"{value.dtype}{list(value.shape)}")
        dst[...] = value
    for index, op in enumerate(graph.ops):
        ins = [arena.view(n) for n in op.inputs]
        outs = [arena.view(n) for n in op.outputs]
        try:
            result = KERNELS[op.kind](op, ins, outs)
        except Exception as exc:  # noqa: BLE001 - re-raised with the op's identity
            where = op.debug.get("module") or "?"
            raise OpExecutionError(f"op {index} ({op.kind}, module '{where}') failed: {exc}") from exc
        results = result if isinstance(result, list) else [result]
        for dst, value in zip(outs, results, strict=True):
            dst[...] = np.asarray(value, dtype=dst.dtype).reshape(dst.shape)
        if on_op is not None:
            on_op(index, op, arena)
    return [np.array(arena.view(n)) for n in graph.outputs]
