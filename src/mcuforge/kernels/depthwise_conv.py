"""int8 depthwise convolution (CMSIS-NN ``arm_depthwise_conv_s8``)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from .conv import (
    IntPair,
    batch_chunks,
    check_depthwise_filters,
    check_input,
    padded_input,
    prepare_weights,
    resolve_geometry,
    window_view,
)
from .quant_utils import OUTPUT_OFFSET_RANGE, S4_OUTPUT_OFFSET_RANGE, check_int8, check_weighted_params

#: Working set (bytes) of one batch chunk.
DEPTHWISE_BUDGET_BYTES = 1 << 20
#: From this many output channels the taps are summed by one einsum (see prepare_depthwise_conv2d_s8).
EINSUM_MIN_CHANNELS = 48


def depthwise_conv2d_s8(
    x_nhwc: np.ndarray,
    w_1hwc: np.ndarray,
    bias: np.ndarray | None,
    *,
    input_offset: int,
    output_offset: int,
    multipliers: ArrayLike,
    shifts: ArrayLike,
    stride: IntPair = (1, 1),
    padding: IntPair = (0, 0),
    dilation: IntPair = (1, 1),
    depth_multiplier: int = 1,
    act_min: int = -128,
    act_max: int = 127,
    output_hw: tuple[int, int] | None = None,
    output_offset_range: tuple[int, int] = OUTPUT_OFFSET_RANGE,
) -> np.ndarray:
    """int8 depthwise convolution, bit-exact with CMSIS-NN ``arm_depthwise_conv_s8``.

    Output channel ``oc = ic * M + m`` (M = depth_multiplier) reads only input channel ``ic``:
    ``acc[n,y,x,oc] = bias[oc] + sum_{i,j} (x[n, y*sh-ph+i*dh, x*sw-pw+j*dw, ic] + input_offset)
    * w[0,i,j,oc]`` over in-bounds taps (int32, wrapping), then per-channel ``requantize``,
    ``+ output_offset``, clamp.
    Shapes: x (N, H, W, C), w (1, KH, KW, C*M), bias (C*M,) int32 or None, multipliers/shifts length C*M
    (or 1). Returns int8 (N, OH, OW, C*M).

    There is no reduction over channels, so the taps are accumulated elementwise, in float32 when that is
    exact (see ``conv.matmul_dtype``), on the zero-point padded input; the exact sum is then wrapped to int32
    like the C accumulator and requantized by ``Requantizer``.
    """
    x = check_int8("x_nhwc", x_nhwc, 4)
    return prepare_depthwise_conv2d_s8(
        x.shape[1:], w_1hwc, bias, input_offset=input_offset, output_offset=output_offset, multipliers=multipliers,
        shifts=shifts, stride=stride, padding=padding, dilation=dilation, depth_multiplier=depth_multiplier,
        act_min=act_min, act_max=act_max, output_hw=output_hw, output_offset_range=output_offset_range)(x)


def prepare_depthwise_conv2d_s8(
    input_hwc: tuple[int, int, int],
    w_1hwc: np.ndarray,
    bias: np.ndarray | None,
    *,
    input_offset: int,
    output_offset: int,
    multipliers: ArrayLike,
    shifts: ArrayLike,
    stride: IntPair = (1, 1),
    padding: IntPair = (0, 0),
    dilation: IntPair = (1, 1),
    depth_multiplier: int = 1,
    act_min: int = -128,
    act_max: int = 127,
    output_hw: tuple[int, int] | None = None,
    output_offset_range: tuple[int, int] = OUTPUT_OFFSET_RANGE,
) -> Callable[[np.ndarray], np.ndarray]:
    """``depthwise_conv2d_s8`` for inputs of shape (N, *input_hwc), any N, with everything that does not
    depend on the input values done once; returns ``x -> depthwise_conv2d_s8(x, ...)``."""
    h, wd, c = (int(v) for v in input_hwc)
    w = check_int8("w_1hwc", w_1hwc, 4)
    kh, kw, oc, m = check_depthwise_filters(w, c, depth_multiplier)
    st, pd, dl, (oh, ow) = resolve_geometry((h, wd), (kh, kw), stride, padding, dilation, output_hw)
    b, mult, shift = check_weighted_params(bias, oc, multipliers, shifts, act_min, act_max, input_offset, output_offset,
                                          output_offset_range)

    # As in conv2d_s8: padding with the zero point lets every tap be summed, the input offset moves into the
    # bias (bias + input_offset * sum of taps), and int8 x keeps float32 exact (matmul_dtype bound).
    dtype, w_mat, requant = prepare_weights(np.ascontiguousarray(w.reshape(kh * kw, oc).T), b, mult, shift,
                                            input_offset, output_offset, act_min, act_max)
    w_f = w_mat.T  # (taps, OC)
    w_taps = np.ascontiguousarray(w_f.reshape(kh, kw, oc))  # (KH, KW, OC)
    (sh, sw), (dh, dw) = st, dl
    # Two ways to sum the taps, the same integers (exact in any order: every partial sum is an integer within
    # matmul_dtype's bound). With many channels one einsum over a strided view of every window is fastest (a
    # pass summing each output's taps); with few, numpy's einsum loops are short and a multiply and an add per
    # tap over rows of OW*OC values win (measured: 5x either way at the extremes of MobileNet's layers).
    by_einsum = oc >= EINSUM_MIN_CHANNELS
    # Per tap: rows of OW*OC values, contiguous in the (phase of the) padded input, times the tap's weights
    # tiled OW times. With a column stride sw > 1 the padded input is split into its sw column phases first;
    # tap j then reads phase (j*dw) % sw from column (j*dw) // sw.
    w_rows = np.tile(w_f, (1, ow))
    item_bytes = oh * ow * oc * np.dtype(dtype).itemsize * 2 + (oh * sh + kh * dh) * (ow * sw + kw * dw) * oc * 8
    zero_point = -int(input_offset)

    def taps(xp: np.ndarray) -> np.ndarray:
        count = xp.shape[0]
        phases = [xp] if sw == 1 else [np.ascontiguousarray(xp[:, :, p::sw, :]) for p in range(sw)]
        acc = np.empty((count, oh, ow * oc), dtype=dtype)
        tmp = np.empty_like(acc)
        for tap in range(kh * kw):
            i, j = divmod(tap, kw)
            phase, col = divmod(j * dw, sw)[::-1]
            view = phases[phase][:, i * dh:i * dh + (oh - 1) * sh + 1:sh, col:col + ow, :].reshape(count, oh, ow * oc)
            np.multiply(view, w_rows[tap], out=acc if tap == 0 else tmp)
            if tap:
                acc += tmp
        return acc

    def run(x: np.ndarray) -> np.ndarray:
        check_input(x, (h, wd, c), "depthwise_conv2d_s8")
        n = x.shape[0]
        # Output channel ic*M + m reads input channel ic: repeating every input channel M times makes the
        # multiplier-1 case, with every operand laid out like the output.
        xr = x if m == 1 else np.repeat(x, m, axis=3)
        out = np.empty((n, oh, ow, oc), dtype=np.int8)
        for chunk in batch_chunks(n, item_bytes, DEPTHWISE_BUDGET_BYTES):
            xp = padded_input(xr[chunk], (kh, kw), st, pd, dl, (oh, ow), zero_point, dtype)
            acc = (np.einsum("nyxcij,ijc->nyxc", window_view(xp, (kh, kw), st, dl, (oh, ow)), w_taps)
                   if by_einsum else taps(xp))
            requant(acc.reshape(-1, oc), out[chunk].reshape(-1, oc))
        return out
    return run


def depthwise_conv2d_s4(
    x_nhwc: np.ndarray,
    w_packed: np.ndarray,
    filter_shape: tuple[int, int, int, int],
    bias: np.ndarray | None,
    **params,
) -> np.ndarray:
    """int8 depthwise convolution with int4 weights, bit-exact with CMSIS-NN ``arm_depthwise_conv_s4``.

    ``w_packed``: the (1, KH, KW, C*M) weights of ``filter_shape`` packed two per byte in that element order
    (``pack_int4``), so with an odd C*M a tap's channels start in a high nibble every other tap. The
    arithmetic is ``depthwise_conv2d_s8``'s with those weights; ``params`` are its keywords (the output offset
    any int32, as arm_depthwise_conv_s4 takes it).
    """
    from .conv import unpacked_filter

    return depthwise_conv2d_s8(x_nhwc, unpacked_filter("depthwise_conv2d_s4", w_packed, filter_shape, 4), bias,
                               output_offset_range=S4_OUTPUT_OFFSET_RANGE, **params)
