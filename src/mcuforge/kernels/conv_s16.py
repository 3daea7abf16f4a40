"""int16-activation convolutions with int8 weights: CMSIS-NN ``arm_convolve_s16`` and
``arm_depthwise_conv_s16`` (A16W8).

Activations are symmetric int16 (zero point 0: no input or output offset), weights int8 symmetric per
output channel, bias int64. The accumulator is the exact int64 sum (CMSIS-NN sums in int32 blocks of up
to 512 terms and in int64 beyond), requantized by ``requantize_s64`` with the
channel's reduced multiplier. ``conv2d_s16`` also has arm_convolve_s16's int32-bias form (an int32 bias
array selects it): the sum wraps to int32, plus the bias (wrapping), then ``arm_nn_requantize`` with the
full Q31 multiplier and a shift in [-31, 30], as the int8 kernels requantize. Taps outside the input are
skipped, which for a zero point of 0 is the same as a zero pad. Window geometry as ``conv.py``.

Where CMSIS-NN's int32 partial sums overflow (past 512 products of +-2^22, or its last odd output pixel
summing the whole depth in int32: undefined in C) this module's exact sum differs: docs/numerics.md.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from .conv import (
    IntPair,
    check_depthwise_filters,
    check_grouped_filters,
    im2col,
    padded_input,
    resolve_geometry,
    window_taps,
)
from .quant_s16 import (
    S16_MAX_DEPTH,
    check_activation_range_s16,
    check_bias_s64,
    check_int16,
    check_requant_s64,
    requantize_s64,
)
from .quant_utils import check_bias, check_int8, check_requant_params, requantize, wrap_int32


def output_stage_s16(acc: np.ndarray, bias: np.ndarray, reduced: np.ndarray, shifts: np.ndarray,
                     act_min: int, act_max: int) -> np.ndarray:
    """``clamp(requantize_s64(acc + bias, rm, shift), act_min, act_max)`` -> int16, per channel along the last
    axis of acc (an exact integer array, int64 or float64)."""
    total = acc.astype(np.int64) + bias
    return np.clip(requantize_s64(total, reduced, shifts), act_min, act_max).astype(np.int16)


def output_stage_s16_int32(acc: np.ndarray, bias: np.ndarray, multipliers: np.ndarray, shifts: np.ndarray,
                           act_min: int, act_max: int) -> np.ndarray:
    """arm_convolve_s16's int32-bias output stage: ``clamp(requantize(int32(acc + bias), m, shift))`` -> int16.
    ``acc`` is the exact sum (int64 or float64); the int32 accumulator of the C code is it modulo 2^32."""
    total = wrap_int32(acc.astype(np.int64) + bias)
    return np.clip(requantize(total, multipliers, shifts), act_min, act_max).astype(np.int16)


def is_int32_bias(bias: object) -> bool:
    """Whether a conv2d_s16 bias selects arm_convolve_s16's int32-bias form (an int32 array)."""
    return isinstance(bias, np.ndarray) and bias.dtype == np.int32


def check_weighted_s16(bias: object, channels: int, multipliers: ArrayLike, shifts: ArrayLike, act_min: int,
                       act_max: int, depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The output-stage checks of an s16 weighted kernel: (bias int64, reduced multipliers, shifts)."""
    b = check_bias_s64(bias, channels)
    reduced, shift = check_requant_s64(multipliers, shifts, channels)
    check_activation_range_s16(act_min, act_max)
    if depth > S16_MAX_DEPTH:
        raise ValueError(f"dot products of {depth} terms exceed the s16 kernels' limit of {S16_MAX_DEPTH}")
    return b, reduced, shift


def _check_input_s16(x: np.ndarray, shape: tuple[int, ...], kernel: str) -> None:
    if x.dtype != np.int16 or x.shape[1:] != shape:
        raise ValueError(f"{kernel}: prepared for int16 inputs (N, {', '.join(map(str, shape))}), "
                         f"got {x.dtype}{list(x.shape)}")


def conv2d_s16(
    x_nhwc: np.ndarray,
    w_ohwi: np.ndarray,
    bias: np.ndarray | None,
    *,
    multipliers: ArrayLike,
    shifts: ArrayLike,
    stride: IntPair = (1, 1),
    padding: IntPair = (0, 0),
    dilation: IntPair = (1, 1),
    act_min: int = -32768,
    act_max: int = 32767,
    output_hw: tuple[int, int] | None = None,
) -> np.ndarray:
    """int16 x int8 convolution, bit-exact with CMSIS-NN ``arm_convolve_s16``.

    ``acc[n,y,x,o] = bias[o] + sum_{i,j,c} x[n, y*sh-ph+i*dh, x*sw-pw+j*dw, c] * w[o,i,j,c]`` over in-bounds
    taps (exact, int64), then ``requantize_s64(acc, REDUCE_MULTIPLIER(multipliers[o]), shifts[o])``, clamp to
    [act_min, act_max]. x (N, H, W, C) int16, w (O, KH, KW, C / G) int8 (G groups as ``conv2d_s8``), bias (O,)
    int64 or None (zeros), multipliers/shifts length O (or 1), shifts in [-31, 14]. Returns int16 (N, OH, OW, O).

    An int32 bias selects the int32-bias form (``bias_data->is_int32_bias``): ``acc`` wraps to int32 as
    CMSIS-NN's int32 accumulator does, ``+ bias`` (wrapping), then ``requantize(acc, multipliers[o],
    shifts[o])`` (arm_nn_requantize, the full Q31 multiplier, shifts in [-31, 30]) and the clamp.
    """
    x = check_int16("x_nhwc", x_nhwc, 4)
    return prepare_conv2d_s16(x.shape[1:], w_ohwi, bias, multipliers=multipliers, shifts=shifts, stride=stride,
                              padding=padding, dilation=dilation, act_min=act_min, act_max=act_max,
                              output_hw=output_hw)(x)


def prepare_conv2d_s16(
    input_hwc: tuple[int, int, int],
    w_ohwi: np.ndarray,
    bias: np.ndarray | None,
    *,
    multipliers: ArrayLike,
    shifts: ArrayLike,
    stride: IntPair = (1, 1),
    padding: IntPair = (0, 0),
    dilation: IntPair = (1, 1),
    act_min: int = -32768,
    act_max: int = 32767,
    output_hw: tuple[int, int] | None = None,
) -> Callable[[np.ndarray], np.ndarray]:
    """``conv2d_s16`` for inputs (N, *input_hwc) with the checks, geometry and weights done once."""
    h, wd, c = (int(v) for v in input_hwc)
    w = check_int8("w_ohwi", w_ohwi, 4)
    oc, kh, kw, wc = check_grouped_filters(w, c)
    st, pd, dl, (oh, ow) = resolve_geometry((h, wd), (kh, kw), stride, padding, dilation, output_hw)
    depth = kh * kw * wc
    if is_int32_bias(bias):
        b, mult32, shift = check_bias(bias, oc), *check_requant_params(multipliers, shifts, oc)
        check_activation_range_s16(act_min, act_max)
        if depth > S16_MAX_DEPTH:
            raise ValueError(f"dot products of {depth} terms exceed the s16 kernels' limit of {S16_MAX_DEPTH}")

        def stage(acc: np.ndarray) -> np.ndarray:
            return output_stage_s16_int32(acc, b, mult32, shift, act_min, act_max)
    else:
        b, reduced, shift = check_weighted_s16(bias, oc, multipliers, shifts, act_min, act_max, depth)

        def stage(acc: np.ndarray) -> np.ndarray:
            return output_stage_s16(acc, b, reduced, shift, act_min, act_max)
    groups, ocg = c // wc, oc // (c // wc)
    # Every product is below 2^22 and depth <= 2^24: every partial sum is an exact integer in float64.
    w_groups = [w[g * ocg:(g + 1) * ocg].reshape(ocg, depth).T.astype(np.float64) for g in range(groups)]

    def run(x: np.ndarray) -> np.ndarray:
        _check_input_s16(x, (h, wd, c), "conv2d_s16")
        n = x.shape[0]
        xp = padded_input(x, (kh, kw), st, pd, dl, (oh, ow), 0, np.float64)
        acc = np.empty((n * oh * ow, oc), dtype=np.float64)
        for g, w_g in enumerate(w_groups):
            patches = im2col(np.ascontiguousarray(xp[..., g * wc:(g + 1) * wc]), (kh, kw), st, dl, (oh, ow))
            acc[:, g * ocg:(g + 1) * ocg] = patches @ w_g
        return stage(acc).reshape(n, oh, ow, oc)
    return run


def depthwise_conv2d_s16(
    x_nhwc: np.ndarray,
    w_1hwc: np.ndarray,
    bias: np.ndarray | None,
    *,
    multipliers: ArrayLike,
    shifts: ArrayLike,
    stride: IntPair = (1, 1),
    padding: IntPair = (0, 0),
    dilation: IntPair = (1, 1),
    depth_multiplier: int = 1,
    act_min: int = -32768,
    act_max: int = 32767,
    output_hw: tuple[int, int] | None = None,
) -> np.ndarray:
    """int16 x int8 depthwise convolution, bit-exact with CMSIS-NN ``arm_depthwise_conv_s16``.

    Output channel ``oc = ic * M + m`` (M = depth_multiplier) reads input channel ``ic``:
    ``acc = bias[oc] + sum_{i,j} x[n, y*sh-ph+i*dh, x*sw-pw+j*dw, ic] * w[0,i,j,oc]`` over in-bounds taps
    (exact, int64), then ``requantize_s64`` per channel and the clamp. x (N, H, W, C) int16, w (1, KH, KW, C*M)
    int8, bias (C*M,) int64 or None. Returns int16 (N, OH, OW, C*M).
    """
    x = check_int16("x_nhwc", x_nhwc, 4)
    return prepare_depthwise_conv2d_s16(
        x.shape[1:], w_1hwc, bias, multipliers=multipliers, shifts=shifts, stride=stride, padding=padding,
        dilation=dilation, depth_multiplier=depth_multiplier, act_min=act_min, act_max=act_max,
        output_hw=output_hw)(x)


def prepare_depthwise_conv2d_s16(
    input_hwc: tuple[int, int, int],
    w_1hwc: np.ndarray,
    bias: np.ndarray | None,
    *,
    multipliers: ArrayLike,
    shifts: ArrayLike,
    stride: IntPair = (1, 1),
    padding: IntPair = (0, 0),
    dilation: IntPair = (1, 1),
    depth_multiplier: int = 1,
    act_min: int = -32768,
    act_max: int = 32767,
    output_hw: tuple[int, int] | None = None,
) -> Callable[[np.ndarray], np.ndarray]:
    """``depthwise_conv2d_s16`` for inputs (N, *input_hwc) with the checks and geometry done once."""
    h, wd, c = (int(v) for v in input_hwc)
    w = check_int8("w_1hwc", w_1hwc, 4)
    kh, kw, oc, m = check_depthwise_filters(w, c, depth_multiplier)
    st, pd, dl, out_hw = resolve_geometry((h, wd), (kh, kw), stride, padding, dilation, output_hw)
    b, reduced, shift = check_weighted_s16(bias, oc, multipliers, shifts, act_min, act_max, kh * kw)
    w_taps = w[0].astype(np.float64)  # (KH, KW, OC)

    def run(x: np.ndarray) -> np.ndarray:
        _check_input_s16(x, (h, wd, c), "depthwise_conv2d_s16")
        xr = (x if m == 1 else np.repeat(x, m, axis=3)).astype(np.float64)
        acc = np.zeros((x.shape[0], *out_hw, oc), dtype=np.float64)
        for i, j, view in window_taps(xr, (kh, kw), st, pd, dl, out_hw, fill=0.0):
            acc += view * w_taps[i, j]  # exact: |products| < 2^22, at most 2^24 taps
        return output_stage_s16(acc, b, reduced, shift, act_min, act_max)
    return run
