"""Converters of the int8 op kinds to CMSIS-NN calls (``c/cases_s8.c``); see :mod:`.ops`."""

from __future__ import annotations

import numpy as np

from ..ir import Graph, Op
from .harness import Case
from .ops import converts, output_tensor, per_channel

I8 = np.dtype(np.int8)


def _bias(bias: np.ndarray | None, channels: int) -> tuple[np.ndarray, int]:
    if bias is None:
        return np.zeros(0, np.int32), 0
    return np.ascontiguousarray(np.asarray(bias, np.int32).reshape(channels)), 1


@converts("conv2d_s8")
def conv2d_s8(graph: Graph, op: Op, values: list, function: str = "mfcmp_conv_wrapper_s8", name: str = "") -> Case:
    """arm_convolve_wrapper_s8 (or ``function``: mfcmp_conv_s8, mfcmp_conv_1x1_s8_fast, mfcmp_conv_1x1_s8,
    mfcmp_conv_1_x_n_s8, the paths the wrapper picks from). A grouped convolution (filter channels < input
    channels) is arm_convolve_s8's: the wrapper sends it there. A 1xN convolution whose padding is not TensorFlow
    Lite's (``conv_1xn_padding_ok``) goes to arm_convolve_s8 too: the wrapper would pick arm_convolve_1_x_n_s8, whose
    MVE path refuses it (ARM_CMSIS_NN_FAILURE) or computes other bytes. Without a bias it gets zeros: arm_convolve_s8
    steps its bias pointer per group even when it is NULL, and then reads the second group's bias from address
    4 * channels per group (a fault on the host; the vector table's words on a board)."""
    x, w, bias, mult, shift = values
    a = op.attrs
    out = output_tensor(graph, op)
    n, h, wd, c = x.shape
    oc, kh, kw, fc = w.shape
    oh, ow = out.shape[1], out.shape[2]
    if bias is None and fc != c:
        bias = np.zeros(oc, np.int32)
    if function == "mfcmp_conv_wrapper_s8" and is_conv_1xn(a, (h, wd, c), (kh, kw, fc)) and \
            not conv_1xn_padding_ok(a["padding"], wd, kw, a["stride"][1], oh, ow):
        function = "mfcmp_conv_s8"
    bias, has_bias = _bias(bias, oc)
    ints = [n, h, wd, c, oc, kh, kw, fc, oh, ow, a["input_offset"], a["output_offset"], *a["stride"],
            *a["padding"], *a["dilation"], a["act_min"], a["act_max"], has_bias]
    inputs = [np.ascontiguousarray(x, I8), np.ascontiguousarray(w, I8), bias, per_channel(mult, oc),
              per_channel(shift, oc)]
    return Case(function, [int(v) for v in ints], inputs, tuple(out.shape), I8, name)


def is_conv_1xn(attrs: dict, input_hwc, filter_hwc) -> bool:
    """arm_nn_is_convolve_1_x_n: where arm_convolve_wrapper_s8 picks arm_convolve_1_x_n_s8 (a 1x1 kernel without
    padding goes to the 1x1 paths first)."""
    (h, _, c), (kh, kw, fc) = input_hwc, filter_hwc
    one_by_one = attrs["padding"] == [0, 0] and (kh, kw) == (1, 1) and list(attrs["dilation"]) == [1, 1] and c == fc
    return (not one_by_one and h == 1 and attrs["dilation"][1] == 1 and kh == 1
            and (attrs["stride"][1] * c) % 4 == 0 and c == fc)


def conv_1xn_padding_ok(padding, width: int, kernel: int, stride: int, out_h: int, out_w: int) -> bool:
    """Whether arm_convolve_1_x_n_s8's MVE path computes this 1xN geometry: one output row (no vertical padding:
    it ignores padding.h) and TensorFlow Lite's horizontal padding, ``2 * pad + total % 2 == total`` with
    ``total = (out - 1) * stride + kernel - width >= 0``. With torch's padding, a stride that does not divide the
    padded width leaves the right side short (it returns ARM_CMSIS_NN_FAILURE); an input longer than the windows
    reach (``total < 0``, passing its check through C's negative remainder) gets other bytes in its last
    outputs, as does vertical padding (its rows)."""
    total = (out_w - 1) * stride + kernel - width
    return padding[0] == 0 and out_h == 1 and total >= 0 and 2 * padding[1] + total % 2 == total


@converts("depthwise_conv2d_s8")
def depthwise_conv2d_s8(graph: Graph, op: Op, values: list, function: str = "mfcmp_dw_wrapper_s8",
                        name: str = "") -> Case:
    """arm_depthwise_conv_wrapper_s8 (or ``function``: mfcmp_dw_s8, mfcmp_dw_3x3_s8, mfcmp_dw_s8_opt)."""
    x, w, bias, mult, shift = values
    a = op.attrs
    out = output_tensor(graph, op)
    n, h, wd, c = x.shape
    _, kh, kw, oc = w.shape
    oh, ow = out.shape[1], out.shape[2]
    bias, has_bias = _bias(bias, oc)
    ints = [n, h, wd, c, oc, kh, kw, oh, ow, a["input_offset"], a["output_offset"], a["depth_multiplier"],
            *a["stride"], *a["padding"], *a["dilation"], a["act_min"], a["act_max"], has_bias]
    inputs = [np.ascontiguousarray(x, I8), np.ascontiguousarray(w, I8), bias, per_channel(mult, oc),
              per_channel(shift, oc)]
    return Case(function, [int(v) for v in ints], inputs, tuple(out.shape), I8, name)


@converts("fully_connected_s8", "fully_connected_per_channel_s8")
def fully_connected_s8(graph: Graph, op: Op, values: list, function: str | None = None, name: str = "") -> Case:
    """arm_fully_connected_s8 where one multiplier and shift serve every channel (fully_connected_s8 with
    equal ones), else arm_fully_connected_per_channel_s8; ``function`` may name mfcmp_fc_wrapper_s8 (or
    either). The weight zero point is the op's ``filter_offset`` (0 when absent)."""
    x, w, bias, mult, shift = values
    a = op.attrs
    out = output_tensor(graph, op)
    oc, depth = w.shape
    batches = x.size // depth
    mults, shifts = per_channel(mult, oc), per_channel(shift, oc)
    uniform = bool((mults == mults[0]).all() and (shifts == shifts[0]).all())
    per_ch = not (op.kind == "fully_connected_s8" and uniform)
    if function is None:
        function = "mfcmp_fc_per_channel_s8" if per_ch else "mfcmp_fc_s8"
    bias, has_bias = _bias(bias, oc)
    ints = [batches, depth, oc, a["input_offset"], a.get("filter_offset", 0), a["output_offset"], a["act_min"],
            a["act_max"], has_bias, int(per_ch)]
    inputs = [np.ascontiguousarray(x.reshape(batches, depth), I8), np.ascontiguousarray(w, I8), bias, mults, shifts]
    return Case(function, [int(v) for v in ints], inputs, tuple(out.shape), I8, name)


def batch_matmul_operands(values: list, attrs: dict, kind: str, function: str) -> tuple:
    """The operands of arm_batch_matmul_s8 / _s16, which take the rhs transposed ((..., N, K)) and no adjoint
    flags: as TensorFlow Lite Micro, the operands are transposed first where ``adj_x`` / ``adj_y`` say (data
    movement); batch dims broadcast as CMSIS-NN broadcasts them (at most two, after leading 1s are dropped).
    Returns (lhs, rhs, lhs batch dims, rhs batch dims, (M, K, N), output batch dims)."""
    lhs, rhs = values
    if attrs["adj_x"]:
        lhs = np.swapaxes(lhs, -1, -2)
    if not attrs["adj_y"]:
        rhs = np.swapaxes(rhs, -1, -2)
    lb, rb = list(lhs.shape[:-2]), list(rhs.shape[:-2])
    rank = max(len(lb), len(rb), 2)
    lb, rb = [1] * (rank - len(lb)) + lb, [1] * (rank - len(rb)) + rb
    while rank > 2 and lb[0] == 1 and rb[0] == 1:
        lb, rb, rank = lb[1:], rb[1:], rank - 1
    if rank > 2:
        raise NotImplementedError(f"{kind} with batch dims {lb} and {rb}: {function} has two")
    (m, k), nn = lhs.shape[-2:], rhs.shape[-2]
    return lhs, rhs, lb, rb, (m, k, nn), np.broadcast_shapes(tuple(lb), tuple(rb))


@converts("batch_matmul_s8")
def batch_matmul_s8(graph: Graph, op: Op, values: list, function: str = "mfcmp_batch_matmul_s8",
                    name: str = "") -> Case:
    """arm_batch_matmul_s8, its operands laid out by :func:`batch_matmul_operands`."""
    a = op.attrs
    out = output_tensor(graph, op)
    lhs, rhs, lb, rb, (m, k, nn), ob = batch_matmul_operands(values, a, op.kind, "arm_batch_matmul_s8")
    ints = [*lb, m, k, *rb, nn, *ob, a["lhs_offset"], a["rhs_offset"], a["output_offset"], a["output_multiplier"],
            a["output_shift"], a["act_min"], a["act_max"]]
    inputs = [np.ascontiguousarray(lhs, I8).reshape(*lb, m, k), np.ascontiguousarray(rhs, I8).reshape(*rb, nn, k)]
    return Case(function, [int(v) for v in ints], inputs, tuple(out.shape), I8, name)


@converts("transpose_conv2d_s8")
def transpose_conv2d_s8(graph: Graph, op: Op, values: list, function: str = "mfcmp_transpose_conv_wrapper_s8",
                        name: str = "") -> Case:
    """arm_transpose_conv_wrapper_s8 (or ``function``: mfcmp_transpose_conv_s8, the direct path). A geometry
    outside what the path computes (:func:`transpose_conv_problem`) raises NotImplementedError."""
    x, w, bias, mult, shift = values
    a = op.attrs
    out = output_tensor(graph, op)
    n, h, wd, c = x.shape
    oc, kh, kw, _ = w.shape
    oh, ow = out.shape[1], out.shape[2]
    problem = transpose_conv_problem(function == "mfcmp_transpose_conv_wrapper_s8", (h, wd), c, (kh, kw),
                                     a["stride"], a["padding"], (oh, ow))
    if problem:
        raise NotImplementedError(f"transpose_conv2d_s8: {problem}")
    bias, has_bias = _bias(bias, oc)
    ints = [n, h, wd, c, oc, kh, kw, oh, ow, a["input_offset"], a["output_offset"], *a["stride"], *a["padding"],
            a["act_min"], a["act_max"], has_bias]
    inputs = [np.ascontiguousarray(x, I8), np.ascontiguousarray(w, I8), bias, per_channel(mult, oc),
              per_channel(shift, oc)]
    return Case(function, [int(v) for v in ints], inputs, tuple(out.shape), I8, name)


#: CMSIS-NN's REVERSE_TCOL_EFFICIENT_THRESHOLD: the wrapper's reverse-conv path needs more input channels.
REVERSE_TCOL_CHANNELS = 16


def transpose_conv_problem(wrapper: bool, input_hw, channels: int, kernel_hw, stride, padding, output_hw) -> str | None:
    """Why CMSIS-NN's transposed convolution does not compute this geometry (torch's: any padding, output
    padding below the stride), or None. The wrapper's reverse-conv path (strides <= 2, more than 16 input
    channels: a convolution of the zero-upscaled input with the reversed filter) needs padding <= kernel - 1.
    arm_transpose_conv_s8 flushes ``stride`` rows of its rolling buffer per input row and the rest after the
    last: per axis it needs ``in * stride - pad <= out <= (in - 1) * stride + max(kernel, stride) - pad``
    (fewer output rows and it writes past the output; more and they are never written), and across
    ``pad + out <= (in - 1) * stride + max(kernel, stride)`` (its row buffer's width)."""
    if wrapper and max(stride) <= 2 and channels > REVERSE_TCOL_CHANNELS:
        if all(p <= k - 1 for p, k in zip(padding, kernel_hw, strict=True)):
            return None
        return (f"padding {list(padding)} beyond kernel {list(kernel_hw)} - 1 "
                f"(arm_transpose_conv_wrapper_s8's reverse conv)")
    (ih, iw), (kh, kw), (sh, sw), (ph, pw), (oh, ow) = input_hw, kernel_hw, stride, padding, output_hw
    if not ih * sh - ph <= oh <= (ih - 1) * sh + max(kh, sh) - ph:
        return (f"output height {oh} outside [{ih * sh - ph}, {(ih - 1) * sh + max(kh, sh) - ph}] "
                f"(arm_transpose_conv_s8's row flushes)")
    if pw + ow > (iw - 1) * sw + max(kw, sw):
        return (f"padding + output width {pw + ow} beyond arm_transpose_conv_s8's row buffer "
                f"({(iw - 1) * sw + max(kw, sw)})")
    return None


@converts("avgpool_s8", "maxpool_s8")
def pool_s8(graph: Graph, op: Op, values: list, function: str | None = None, name: str = "") -> Case:
    """arm_avgpool_s8 / arm_max_pool_s8 (the output may be stored squeezed: its size is ``output_hw``)."""
    (x,) = values
    a = op.attrs
    out = output_tensor(graph, op)
    n, h, w, c = x.shape
    function = function or ("mfcmp_avgpool_s8" if op.kind == "avgpool_s8" else "mfcmp_max_pool_s8")
    ints = [n, h, w, c, *a["output_hw"], *a["kernel"], *a["stride"], *a["padding"], a["act_min"], a["act_max"]]
    return Case(function, [int(v) for v in ints], [np.ascontiguousarray(x, I8)], tuple(out.shape), I8, name)


def _broadcast(value: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """An operand at the output's shape: arm_elementwise_* take equal sizes (TensorFlow Lite Micro broadcasts
    in its reference kernels); the copy is data movement, the arithmetic per element is CMSIS-NN's."""
    return np.ascontiguousarray(np.broadcast_to(value, shape), I8)


@converts("add_s8")
def add_s8(graph: Graph, op: Op, values: list, function: str = "mfcmp_add_s8", name: str = "") -> Case:
    """arm_elementwise_add_s8, operands broadcast to the output's shape first."""
    a = op.attrs
    out = output_tensor(graph, op)
    shape = tuple(out.shape)
    ints = [int(np.prod(shape)), a["a_offset"], a["a_multiplier"], a["a_shift"], a["b_offset"], a["b_multiplier"],
            a["b_shift"], a["left_shift"], a["output_offset"], a["output_multiplier"], a["output_shift"],
            a["act_min"], a["act_max"]]
    return Case(function, [int(v) for v in ints], [_broadcast(v, shape) for v in values], shape, I8, name)


@converts("mul_s8")
def mul_s8(graph: Graph, op: Op, values: list, function: str = "mfcmp_mul_s8", name: str = "") -> Case:
    """arm_elementwise_mul_s8, operands broadcast to the output's shape first."""
    a = op.attrs
    out = output_tensor(graph, op)
    shape = tuple(out.shape)
    ints = [int(np.prod(shape)), a["a_offset"], a["b_offset"], a["output_offset"], a["output_multiplier"],
            a["output_shift"], a["act_min"], a["act_max"]]
    return Case(function, [int(v) for v in ints], [_broadcast(v, shape) for v in values], shape, I8, name)


@converts("softmax_s8")
def softmax_s8(graph: Graph, op: Op, values: list, function: str = "mfcmp_softmax_s8", name: str = "") -> Case:
    """arm_softmax_s8 over the last stored axis."""
    (x,) = values
    a = op.attrs
    out = output_tensor(graph, op)
    row = x.shape[-1] if x.ndim else 1
    ints = [x.size // max(row, 1), row, a["multiplier"], a["shift"], a["diff_min"]]
    return Case(function, [int(v) for v in ints], [np.ascontiguousarray(x, I8)], tuple(out.shape), I8, name)


@converts("pad_s8")
def pad_s8(graph: Graph, op: Op, values: list, function: str = "mfcmp_pad_s8", name: str = "") -> Case:
    """arm_pad_s8 (4-D): fewer dims get leading 1s; more are merged where the inner dim is not padded."""
    (x,) = values
    out = output_tensor(graph, op)
    flat = op.attrs["pads"]
    dims = [[int(s), int(flat[2 * i]), int(flat[2 * i + 1])] for i, s in enumerate(x.shape)]
    i = 0
    while len(dims) > 4 and i < len(dims) - 1:
        size, pre, post = dims[i + 1]
        if pre == 0 and post == 0:  # merge dim i+1 into dim i: each of i's rows is `size` long
            dims[i] = [dims[i][0] * size, dims[i][1] * size, dims[i][2] * size]
            del dims[i + 1]
        else:
            i += 1
    if len(dims) > 4:
        raise NotImplementedError(f"pad_s8 of {x.ndim} dims padded in more than 4: arm_pad_s8 takes 4")
    dims = [[1, 0, 0]] * (4 - len(dims)) + dims
    ints = [d[0] for d in dims] + [d[1] for d in dims] + [d[2] for d in dims] + [op.attrs["pad_value"]]
    return Case(function, ints, [np.ascontiguousarray(x, I8)], tuple(out.shape), I8, name)


@converts("concat_s8")
def concat_s8(graph: Graph, op: Op, values: list, function: str = "mfcmp_concat_s8", name: str = "") -> Case:
    """arm_concatenation_s8_x / _y along the stored axis, the tensors seen as [outer, axis, inner]."""
    out = output_tensor(graph, op)
    axis = op.attrs["axis"] % len(out.shape)
    outer, inner = int(np.prod(out.shape[:axis])), int(np.prod(out.shape[axis + 1:]))
    if max(outer, inner, out.shape[axis]) > 65535:
        raise NotImplementedError("concat_s8 with a dimension above 65535: CMSIS-NN's sizes are uint16")
    ints = [len(values), outer, inner, *(int(v.shape[axis]) for v in values)]
    return Case(function, ints, [np.ascontiguousarray(v, I8) for v in values], tuple(out.shape), I8, name)


@converts("transpose")
def transpose(graph: Graph, op: Op, values: list, function: str = "mfcmp_transpose_s8", name: str = "") -> Case:
    """arm_transpose_s8 (int8 values, at most 4 dims once size-1 dims are dropped and dims that stay together
    are merged)."""
    (x,) = values
    out = output_tensor(graph, op)
    if x.dtype != I8:
        raise NotImplementedError(f"transpose of {x.dtype}: arm_transpose_s8 moves int8 values")
    perm = [int(p) % x.ndim for p in op.attrs["perm"]]
    keep = [d for d in range(x.ndim) if x.shape[d] != 1]
    perm = [keep.index(p) for p in perm if p in keep]
    shape = [x.shape[d] for d in keep]
    merged = True
    while merged:  # merge input dims p, p+1 that are adjacent, in order, in the output too
        merged = False
        for j in range(len(perm) - 1):
            if perm[j + 1] == perm[j] + 1:
                p = perm[j]
                shape[p:p + 2] = [shape[p] * shape[p + 1]]
                perm = [q if q <= p else q - 1 for q in perm[:j + 1] + perm[j + 2:]]
                merged = True
                break
    if len(shape) > 4:
        raise NotImplementedError(f"transpose of {len(shape)} dims: arm_transpose_s8 takes at most 4")
    num = max(len(shape), 1)
    if num == 1:
        shape, perm = [x.size], [0]
    out_dims = [shape[p] for p in perm]
    pad = 4 - num
    ints = [num, *shape, *[1] * pad, *out_dims, *[1] * pad, *perm, *range(num, 4)]
    return Case(function, [int(v) for v in ints], [np.ascontiguousarray(x, I8)], tuple(out.shape), I8, name)


@converts("reshape")
def reshape(graph: Graph, op: Op, values: list, function: str = "mfcmp_reshape_s8", name: str = "") -> Case:
    """arm_reshape_s8: a copy of the bytes (any element type)."""
    (x,) = values
    out = output_tensor(graph, op)
    x = np.ascontiguousarray(x)
    return Case(function, [int(x.nbytes)], [x.reshape(-1).view(np.int8)], tuple(out.shape), x.dtype, name)
