"""Pooling: max / average pooling, adaptive average pooling and spatial means, all sharing their
input's quantization (the kernels do not requantize)."""

from __future__ import annotations

from torch import fx

from ..builder import GraphBuilder, node_shape
from .common import (
    NotInt8,
    arg,
    aten,
    int8_input,
    int8_lowering,
    nhwc,
    output_quantize,
    pair,
    same_qparams,
    shared_quant_io,
)
from .s16 import width_of

SHARED = "int8 (or int16: the _s16 kind), output shares the input's quantization"


def _pool(b: GraphBuilder, node: fx.Node, kind: str, kernel, stride, padding) -> None:
    """``kind`` ("maxpool" / "avgpool") of the input's width (maxpool_s8, ..., avgpool_s16)."""
    src, q, qp = shared_quant_io(b, node)
    width = width_of(b, src)
    x = b.as_layout(src, "nhwc", [node])
    out_shape = node_shape(q)
    layout = "nhwc" if len(out_shape) == 4 else "plain"  # mean without keepdim: (N, C), same bytes
    out = b.add_tensor(q.name, nhwc(out_shape) if layout == "nhwc" else out_shape, width.dtype, qparams=qp,
                       layout=layout)
    # The output size is torch's (floor or ceil_mode, already decided by the exported shape).
    output_hw = list(out_shape[2:4]) if layout == "nhwc" else [1, 1]
    attrs = {"kernel": list(kernel), "stride": list(stride), "padding": list(padding),
             "act_min": width.qmin, "act_max": width.qmax, "output_hw": output_hw}
    b.add_op(kind + width.suffix, [x], [out], attrs, nodes=[node])
    b.env[q] = out


def _window_args(node: fx.Node) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int]]:
    """kernel_size, stride (torch's default: the kernel size) and padding of max_pool2d / avg_pool2d."""
    kernel = pair(node.args[1])
    stride_arg = arg(node, 2, "stride", [])
    stride = pair(stride_arg) if stride_arg else kernel
    return kernel, stride, pair(arg(node, 3, "padding", 0))


@int8_lowering([aten.max_pool2d.default], kernels="maxpool_s8 / maxpool_s16", precision=SHARED,
               constraints="no dilation; ceil_mode either way")
def lower_max_pool2d(b: GraphBuilder, node: fx.Node) -> None:
    kernel, stride, padding = _window_args(node)
    if pair(arg(node, 4, "dilation", 1)) != (1, 1):
        raise NotInt8("dilated max pooling has no int8 kernel")
    _pool(b, node, "maxpool", kernel, stride, padding)


@int8_lowering([aten.avg_pool2d.default], kernels="avgpool_s8 / avgpool_s16", precision=SHARED,
               constraints="ceil_mode either way; padding only with count_include_pad=False; no divisor_override")
def lower_avg_pool2d(b: GraphBuilder, node: fx.Node) -> None:
    # torch divides by the in-bounds count when count_include_pad=False, and also with it when there is no
    # padding (ceil_mode's overhanging windows count only their in-bounds part): CMSIS-NN's divisor.
    kernel, stride, padding = _window_args(node)
    if padding != (0, 0) and arg(node, 5, "count_include_pad", True):
        raise NotInt8("avg pooling with count_include_pad=True over padding (CMSIS-NN averages valid pixels)")
    if arg(node, 6, "divisor_override", None) is not None:
        raise NotInt8("avg pooling with divisor_override")
    _pool(b, node, "avgpool", kernel, stride, padding)


@int8_lowering([aten.adaptive_avg_pool2d.default], kernels="avgpool_s8 / avgpool_s16", precision=SHARED,
               constraints="input size a multiple of the output size (equal windows)")
def lower_adaptive_avg_pool2d(b: GraphBuilder, node: fx.Node) -> None:
    _n, _c, h, w = node_shape(node.args[0])
    oh, ow = pair(node.args[1])
    if h % oh or w % ow:
        raise NotInt8(f"adaptive avg pool {h}x{w} -> {oh}x{ow} has uneven windows")
    kernel = (h // oh, w // ow)
    _pool(b, node, "avgpool", kernel, kernel, (0, 0))


@int8_lowering([aten.mean.dim], kernels="avgpool_s8 / avgpool_s16", precision=SHARED,
               constraints="mean over H and W of a 4-D input, or over L of a 3-D (N, C, L) one; keepdim either way")
def lower_mean(b: GraphBuilder, node: fx.Node) -> None:
    shape = node_shape(node.args[0])
    dims = sorted(d % len(shape) for d in node.args[1]) if len(node.args) > 1 else []
    if len(shape) == 3 and dims == [2]:
        _pool1d(b, node, "avgpool", shape[2], shape[2], 0)
        return
    if len(shape) != 4 or dims != [2, 3]:
        raise NotInt8(f"mean over dims {node.args[1] if len(node.args) > 1 else 'all'} (int8 only over H, W or L)")
    _pool(b, node, "avgpool", (shape[2], shape[3]), (shape[2], shape[3]), (0, 0))


# -- 1-D pooling: the 2-D kernels over the (N, 1, L, C) view, as conv1d --------------------------------

def _pool1d(b: GraphBuilder, node: fx.Node, kind: str, kernel: int, stride: int, padding: int) -> None:
    src = int8_input(b, node.args[0])
    if len(b.tensors[src].shape) != 3:
        raise NotInt8("1-D pooling of an unbatched (C, L) input")
    _act, q = output_quantize(node, fuse=False)
    qp = same_qparams(b, src, q)
    width = width_of(b, src)
    n, c, length = b.tensors[src].shape
    out_shape = node_shape(node)
    out_len = out_shape[2] if len(out_shape) == 3 else 1  # torch's (floor or ceil_mode); a mean may drop L
    rows = b.add_tensor(f"{q.name}_rows", (n, 1, out_len, c), width.dtype, qparams=qp, layout="nhwc")
    attrs = {"kernel": [1, kernel], "stride": [1, stride], "padding": [0, padding], "act_min": width.qmin,
             "act_max": width.qmax, "output_hw": [1, out_len]}
    b.add_op(kind + width.suffix, [b.as_rows(src, [node])], [rows], attrs, nodes=[node])
    # One output position: (N, C) / (N, C, 1) hold the same bytes as the rows.
    b.env[q] = b.reshape(rows, out_shape, nodes=[node]) if out_len == 1 else b.from_rows(rows, [node])


def _single(value: object) -> int:
    return int(value) if isinstance(value, int) else int(list(value)[0])  # type: ignore[arg-type]


@int8_lowering([aten.max_pool1d.default], kernels="maxpool_s8 / maxpool_s16", precision=SHARED,
               constraints="over the (N, 1, L, C) view; no dilation; ceil_mode either way")
def lower_max_pool1d(b: GraphBuilder, node: fx.Node) -> None:
    kernel = _single(node.args[1])
    stride_arg = arg(node, 2, "stride", [])
    if _single(arg(node, 4, "dilation", 1)) != 1:
        raise NotInt8("dilated max pooling has no int8 kernel")
    _pool1d(b, node, "maxpool", kernel, _single(stride_arg) if stride_arg else kernel,
            _single(arg(node, 3, "padding", 0)))


@int8_lowering([aten.avg_pool1d.default], kernels="avgpool_s8 / avgpool_s16", precision=SHARED,
               constraints="over the (N, 1, L, C) view; ceil_mode either way; padding only with "
                           "count_include_pad=False")
def lower_avg_pool1d(b: GraphBuilder, node: fx.Node) -> None:
    kernel = _single(node.args[1])
    stride_arg = arg(node, 2, "stride", [])
    padding = _single(arg(node, 3, "padding", 0))
    if padding and arg(node, 5, "count_include_pad", True):
        raise NotInt8("avg pooling with count_include_pad=True over padding (CMSIS-NN averages valid pixels)")
    _pool1d(b, node, "avgpool", kernel, _single(stride_arg) if stride_arg else kernel, padding)


@int8_lowering([aten.adaptive_avg_pool1d.default], kernels="avgpool_s8 / avgpool_s16", precision=SHARED,
               constraints="input length a multiple of the output length (equal windows)")
def lower_adaptive_avg_pool1d(b: GraphBuilder, node: fx.Node) -> None:
    length, out_len = node_shape(node.args[0])[-1], _single(node.args[1])
    if length % out_len:
        raise NotInt8(f"adaptive avg pool {length} -> {out_len} has uneven windows")
    _pool1d(b, node, "avgpool", length // out_len, length // out_len, 0)
