"""Data movement on int8 (and int16) tensors: reshape, permute, pad, concatenation, slicing, splitting,
identities, nearest upsampling and the embedding gather. None requantizes: every output has its input's
quantization (PT2E shares it; an embedding's table is quantized to its output's). Pad, concatenation, upsampling
and embedding have int8 kernels only."""

from __future__ import annotations

import operator

import numpy as np
import torch
from torch import fx, nn

from ...kernels.quant_utils import dequantize_per_tensor, quantize_per_tensor
from ...quantize.patterns import (
    CAT_OPS,
    IDENTITY_OPS,
    PAD_OPS,
    PERMUTE_OPS,
    RESHAPE_OPS,
    SPLIT_OPS,
)
from ..builder import (
    NCHW_TO_NHWC,
    NHWC_TO_NCHW,
    GraphBuilder,
    get_attr_value,
    is_dq,
    is_q,
    node_shape,
    qparams_of,
)
from .common import (
    NotInt8,
    arg,
    aten,
    int8_input,
    int8_lowering,
    output_quantize,
    quantize_value,
    same_qparams,
    shared_quant_io,
    stored_dim,
)

SHARED = "int8 (or int16), output shares the input's quantization (a byte copy)"
SHARED_S8 = "int8, output shares the input's quantization (a byte copy)"


def int8_only(b: GraphBuilder, src: str, op: str) -> str:
    """``src`` if it is int8: pad and concatenation have int8 kernels only (the "a16w8" quantizer gives them
    int8 quantization, converted from and to the int16 around them)."""
    if b.tensors[src].dtype != "int8":
        raise NotInt8(f"{op} of {b.tensors[src].dtype} values has no kernel")
    return src


@int8_lowering(RESHAPE_OPS, kernels="reshape", precision=SHARED,
               constraints="free (no copy: the planner gives input and output one arena range) when the input is "
                           "not read afterwards; an NHWC input is first transposed unless C or H*W is 1")
def lower_reshape(b: GraphBuilder, node: fx.Node) -> None:
    src, q, qp = shared_quant_io(b, node)
    # An NHWC tensor whose bytes are already in NCHW order (C == 1 or H*W == 1) reshapes as is.
    x = src if b.same_bytes_as_plain(src) else b.as_layout(src, "plain", [node])
    out = b.add_tensor(q.name, node_shape(q), b.tensors[src].dtype, qparams=qp)
    b.add_op("reshape", [x], [out], nodes=[node])
    b.env[q] = out


def _torch_perm(node: fx.Node, rank: int) -> list[int]:
    if node.target == aten.permute.default:
        return [int(d) % rank for d in node.args[1]]
    perm = list(range(rank))
    if node.target == aten.transpose.int:
        d0, d1 = int(node.args[1]) % rank, int(node.args[2]) % rank
    else:  # mT, t: the last two dims
        d0, d1 = max(rank - 2, 0), rank - 1
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return perm


@int8_lowering(PERMUTE_OPS, kernels="transpose (or reshape)", precision=SHARED,
               constraints="rank <= 4; a permutation that keeps the order of all dims larger than 1 is a free "
                           "reshape; an NHWC input is permuted directly (one transpose)")
def lower_permute(b: GraphBuilder, node: fx.Node) -> None:
    src, q, qp = shared_quant_io(b, node)
    t = b.tensors[src]
    perm = _torch_perm(node, len(t.shape))
    if t.layout == "nhwc":  # torch's order is the stored order permuted by NHWC_TO_NCHW: compose
        perm = [NHWC_TO_NCHW[p] for p in perm]
    out_shape = node_shape(q)
    out = b.add_tensor(q.name, out_shape, t.dtype, qparams=qp)
    moved = [p for p in perm if t.shape[p] != 1]
    if moved == sorted(moved):  # only size-1 dims move: the bytes are already in order
        b.add_op("reshape", [src], [out], nodes=[node])
    else:
        b.add_op("transpose", [src], [out], {"perm": perm}, nodes=[node])
    b.env[q] = out


@int8_lowering(IDENTITY_OPS, kernels="(none)", precision=SHARED, constraints="no op: the int8 tensor flows through")
def lower_identity(b: GraphBuilder, node: fx.Node) -> None:
    src, q, _qp = shared_quant_io(b, node)
    b.env[q] = src


@int8_lowering(PAD_OPS, kernels="pad_s8", precision=SHARED_S8,
               constraints="mode='constant', pads >= 0 (a negative pad is a crop); the pad value is quantized "
                           "with the tensor's quantization")
def lower_pad(b: GraphBuilder, node: fx.Node) -> None:
    src = int8_only(b, int8_input(b, node.args[0]), "pad")
    if node.target == aten.pad.default:
        mode, value = arg(node, 2, "mode", "constant"), arg(node, 3, "value", None)
        if mode != "constant":
            raise NotInt8(f"pad mode {mode!r} has no int8 kernel")
    else:
        value = arg(node, 2, "value", 0.0)
    flat = [int(p) for p in node.args[1]]
    if any(p < 0 for p in flat):
        raise NotInt8("negative padding (cropping)")
    _act, q = output_quantize(node, fuse=False)
    qp = same_qparams(b, src, q)
    t = b.tensors[src]
    rank = len(t.shape)
    torch_pads = [(0, 0)] * rank  # torch lists (before, after) pairs from the last dim backwards
    for i in range(len(flat) // 2):
        torch_pads[rank - 1 - i] = (flat[2 * i], flat[2 * i + 1])
    order = NCHW_TO_NHWC if t.layout == "nhwc" else tuple(range(rank))
    pads = [torch_pads[d] for d in order]
    shape = tuple(s + p0 + p1 for s, (p0, p1) in zip(t.shape, pads, strict=True))
    out = b.like(q.name, src, shape=shape, qparams=qp)
    pad_value = quantize_value(0.0 if value is None else float(value), qp)
    b.add_op("pad_s8", [src], [out], {"pads": [p for pair in pads for p in pair], "pad_value": pad_value},
             nodes=[node])
    b.env[q] = out


@int8_lowering(CAT_OPS, kernels="concat_s8", precision="int8; all inputs and the output share one quantization "
                                                        "(a byte copy)",
               constraints="any axis; NHWC inputs are joined in NHWC")
def lower_cat(b: GraphBuilder, node: fx.Node) -> None:
    srcs = [int8_only(b, int8_input(b, x), "concatenation") for x in node.args[0]]
    dim = int(arg(node, 1, "dim", 0)) % len(node_shape(node))
    _act, q = output_quantize(node, fuse=False)
    qout = qparams_of(q)
    for s in srcs:
        same_qparams(b, s, q)
    rank = len(node_shape(node))
    layouts = {b.tensors[s].layout for s in srcs if not b.tensors[s].is_constant}
    layout = "nhwc" if layouts == {"nhwc"} and rank == 4 else "plain"
    inputs = [b.as_layout(s, layout, [node]) for s in srcs]
    axis = NCHW_TO_NHWC.index(dim) if layout == "nhwc" else dim
    shape = list(b.tensors[inputs[0]].shape)
    shape[axis] = sum(b.tensors[s].shape[axis] for s in inputs)
    out = b.add_tensor(q.name, tuple(shape), "int8", qparams=qout, layout=layout)
    b.add_op("concat_s8", inputs, [out], {"axis": axis}, nodes=[node])
    b.env[q] = out


# -- slicing -------------------------------------------------------------------------------------

def _slice_layout(b: GraphBuilder, src: str, dim: int, drops_dim: bool) -> str:
    """Slice in the stored layout when the result's bytes come out in torch's order."""
    t = b.tensors[src]
    if t.layout != "nhwc" or not drops_dim:
        return "nhwc" if t.layout == "nhwc" else "plain"
    rest = [p for p in NCHW_TO_NHWC if p != dim]
    return "nhwc" if rest == sorted(rest) else "plain"


def _emit_slice(b: GraphBuilder, src: str, dim: int, start: int, stop: int, step: int, out_name: str,
                out_shape: tuple[int, ...], qp, drops_dim: bool, nodes: list[fx.Node]) -> str:
    """One ``slice`` op: ``x[start:stop:step]`` along torch dim ``dim`` in the stored layout; the
    output has ``out_shape`` (torch's, NHWC when kept 4-D) with the same elements."""
    layout = _slice_layout(b, src, dim, drops_dim)
    x = b.as_layout(src, layout, nodes) if layout == "plain" else src
    shape = b.tensors[x].shape
    axis = NCHW_TO_NHWC.index(dim) if layout == "nhwc" else dim
    begin, end, steps = [0] * len(shape), list(shape), [1] * len(shape)
    begin[axis], end[axis], steps[axis] = start, stop, step
    keep_nhwc = layout == "nhwc" and len(out_shape) == 4
    stored = tuple(out_shape[i] for i in NCHW_TO_NHWC) if keep_nhwc else tuple(out_shape)
    out = b.add_tensor(out_name, stored, b.tensors[src].dtype, qparams=qp, layout="nhwc" if keep_nhwc else "plain")
    b.add_op("slice", [x], [out], {"begin": begin, "end": end, "step": steps}, nodes=nodes)
    return out


def _bounds(start: object, stop: object, size: int) -> tuple[int, int]:
    """Python's slice bounds for a dimension of ``size`` (negative and out-of-range values)."""
    s, e, _ = slice(None if start is None else int(start), None if stop is None else int(stop)).indices(size)
    return s, max(e, s)


SLICE_CONSTRAINTS = "positive steps; NHWC tensors are sliced in place when the result keeps torch's byte order"


@int8_lowering([aten.slice.Tensor, aten.narrow.default, aten.select.int], kernels="slice", precision=SHARED,
               constraints=SLICE_CONSTRAINTS)
def lower_slice(b: GraphBuilder, node: fx.Node) -> None:
    src = int8_input(b, node.args[0])
    in_shape = node_shape(node.args[0])
    dim = int(arg(node, 1, "dim", 0)) % len(in_shape)
    size = in_shape[dim]
    step = 1
    if node.target == aten.slice.Tensor:
        start, stop = _bounds(arg(node, 2, "start", None), arg(node, 3, "end", None), size)
        step = int(arg(node, 4, "step", 1))
    elif node.target == aten.narrow.default:
        start = int(node.args[2]) % size if int(node.args[2]) < 0 else int(node.args[2])
        stop = start + int(node.args[3])
    else:  # select
        start = int(node.args[2]) % size
        stop = start + 1
    if step < 1:
        raise NotInt8("slice with a step < 1")
    _act, q = output_quantize(node, fuse=False)
    qp = same_qparams(b, src, q)
    drops = node.target == aten.select.int
    b.env[q] = _emit_slice(b, src, dim, start, stop, step, q.name, node_shape(node), qp, drops, [node])


def _split_dim(node: fx.Node) -> int:
    return int(arg(node, 1, "dim", 0)) if node.target == aten.unbind.int else int(arg(node, 2, "dim", 0))


@int8_lowering(SPLIT_OPS, kernels="slice (one per output)", precision=SHARED,
               constraints="every output read through getitem and kept int8; " + SLICE_CONSTRAINTS)
def lower_split(b: GraphBuilder, node: fx.Node) -> None:
    src = int8_input(b, node.args[0])
    in_shape = node_shape(node.args[0])
    dim = _split_dim(node) % len(in_shape)
    values = node.meta["val"]
    starts = [0]
    for v in values:
        starts.append(starts[-1] + (1 if node.target == aten.unbind.int else int(v.shape[dim])))
    outputs = []  # (getitem node, its quantize node, index)
    for user in node.users:
        if user.op != "call_function" or user.target is not operator.getitem:
            raise NotInt8("its outputs are not read through getitem")
        quantizes = list(user.users)
        if len(quantizes) != 1 or not is_q(quantizes[0]):
            raise NotInt8("one of its outputs is used in fp32 (not quantized)")
        same_qparams(b, src, quantizes[0])
        outputs.append((user, quantizes[0], int(user.args[1])))
    drops = node.target == aten.unbind.int
    qp = b.tensors[src].qparams
    for item, q, index in sorted(outputs, key=lambda o: o[2]):
        out = _emit_slice(b, src, dim, starts[index], starts[index + 1], 1, q.name,
                          tuple(int(d) for d in values[index].shape), qp, drops, [node])
        b.env[item] = out
        b.env[q] = out


def _upsample_example() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """A segmentation head's nearest upsampling (by 2) of a conv's int8 output."""
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Upsample(scale_factor=2, mode="nearest"))
    return model, (torch.randn(1, 3, 4, 4),)


@int8_lowering(kind="upsample_nearest2d_s8", precision=SHARED_S8, example=_upsample_example,
               constraints="interpolate(mode='nearest') / Upsample of a 4-D int8 tensor by whole factors (output "
                           "H, W whole multiples of the input's); the output shares the input's quantization")
def lower_upsample_nearest(b: GraphBuilder, node: fx.Node) -> None:
    src = int8_only(b, int8_input(b, node.args[0]), "upsample_nearest2d")
    _act, q = output_quantize(node, fuse=False)
    qp = same_qparams(b, src, q)
    n, c, oh, ow = node_shape(node)
    _n, _c, h, w = node_shape(node.args[0])
    if h == 0 or w == 0 or oh % h or ow % w:
        raise NotInt8(f"output {oh}x{ow} is no whole multiple of the input {h}x{w} (torch's fractional nearest "
                      "indices have no kernel)")
    x = b.as_layout(src, "nhwc", [node])
    out = b.add_tensor(q.name, (n, oh, ow, c), "int8", qparams=qp, layout="nhwc")
    b.add_op("upsample_nearest2d_s8", [x], [out], nodes=[node])
    b.env[q] = out


def _float_table(b: GraphBuilder, weight: fx.Node) -> np.ndarray:
    """The embedding's float (rows, D) weights: a float parameter, or a per-tensor quantized constant dequantized
    (what the fp32 embedding would read); no tensor is added to the graph."""
    if weight.op == "get_attr":
        value = get_attr_value(b.gm, weight).float().numpy()
    elif is_dq(weight) and isinstance(weight.args[0], fx.Node) and weight.args[0].op == "get_attr":
        qp = qparams_of(weight)
        value = dequantize_per_tensor(get_attr_value(b.gm, weight.args[0]).numpy(), qp.scale, qp.zero_point)
    else:
        raise NotInt8("its table is not a constant")
    if value.ndim != 2 or not np.issubdtype(value.dtype, np.floating):
        raise NotInt8(f"its table is not a float (rows, D) matrix ({value.dtype}{list(value.shape)})")
    return np.asarray(value, np.float32)


class _Tokens(nn.Module):
    """A keyword model's front: token embeddings into a linear layer."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(12, 6)
        self.fc = nn.Linear(6, 3)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.fc(self.embed(tokens))


@int8_lowering(kind="embedding_s8", example=lambda: (_Tokens(), (torch.tensor([[3, 0, 11, 5]]),)),
               precision="int8 table (the float weights quantized at compile time to the output's quantization: the "
                         "codes the fp32 embedding then quantize gives), int64 / int32 indices",
               constraints="an embedding of a constant table whose output is quantized; indices any int64 / int32 "
                           "tensor the program computes or takes (outside [0, rows): a run error, as in torch)")
def lower_embedding(b: GraphBuilder, node: fx.Node) -> None:
    weight, indices = node.args[0], node.args[1]
    if not isinstance(weight, fx.Node) or not isinstance(indices, fx.Node) or indices not in b.env:
        raise NotInt8("its table is not a constant or its indices are not a lowered tensor")
    if b.tensors[b.env[indices]].dtype not in ("int64", "int32"):
        raise NotInt8(f"indices of dtype {b.tensors[b.env[indices]].dtype}")
    _act, q = output_quantize(node, fuse=False)
    qp = qparams_of(q)
    table = _float_table(b, weight)
    codes = quantize_per_tensor(table, qp.scale, qp.zero_point)
    rows = b.add_tensor(f"{q.name}_table", codes.shape, "int8", qparams=qp, data=codes)
    out = b.add_tensor(q.name, node_shape(node), "int8", qparams=qp)
    b.add_op("embedding_s8", [b.env[indices], rows], [out], nodes=[node])
    b.env[q] = out


class _FlipHead(nn.Module):
    """A conv's int8 output flipped along its width and channels (test-time augmentation, mirrored inputs)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flip(torch.relu(self.conv(x)), (1, 3))


@int8_lowering(kind="flip_s8", precision=SHARED_S8, example=lambda: (_FlipHead(), (torch.randn(1, 3, 4, 5),)),
               constraints="torch.flip of an int8 tensor (any rank, any dims); the output shares the input's "
                           "quantization")
def lower_flip(b: GraphBuilder, node: fx.Node) -> None:
    src = int8_only(b, int8_input(b, node.args[0]), "flip")
    _act, q = output_quantize(node, fuse=False)
    qp = same_qparams(b, src, q)
    x = b.tensors[src]
    dims = sorted({stored_dim(b, src, int(d)) for d in arg(node, 1, "dims", [])})
    out = b.add_tensor(q.name, x.shape, "int8", qparams=qp, layout=x.layout)
    b.add_op("flip_s8", [src], [out], {"dims": dims}, nodes=[node])
    b.env[q] = out
