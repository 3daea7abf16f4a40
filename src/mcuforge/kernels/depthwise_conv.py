"""int8 depthwise convolution (CMSIS-NN ``arm_depthwise_conv_s8``)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .conv import IntPair, batch_chunks, resolve_geometry, window_taps
from .quant_utils import (
    check_activation_range,
    check_bias,
    check_int8,
    check_offsets,
    check_requant_params,
    requantize_output,
    wrap_int32,
)

#: Working set (bytes) of one batch chunk.
DEPTHWISE_BUDGET_BYTES = 8 << 20


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
) -> np.ndarray:
    """int8 depthwise convolution, bit-exact with CMSIS-NN ``arm_depthwise_conv_s8``.

    Output channel ``oc = ic * M + m`` (M = depth_multiplier) reads only input channel ``ic``:
    ``acc[n,y,x,oc] = bias[oc] + sum_{i,j} (x[n, y*sh-ph+i*dh, x*sw-pw+j*dw, ic] + input_offset)
    * w[0,i,j,oc]`` over in-bounds taps (int32, wrapping), then per-channel ``requantize``,
    ``+ output_offset``, clamp.
    Shapes: x (N, H, W, C), w (1, KH, KW, C*M), bias (C*M,) int32 or None, multipliers/shifts length C*M
    (or 1). Returns int8 (N, OH, OW, C*M).

    There is no reduction over channels, so the taps are accumulated elementwise in int32 (each product is
    below 2^16 in magnitude; the int32 sum wraps exactly like the C accumulator).
    """
    x = check_int8("x_nhwc", x_nhwc, 4)
    w = check_int8("w_1hwc", w_1hwc, 4)
    n, h, wd, c = x.shape
    one, kh, kw, oc = w.shape
    if not isinstance(depth_multiplier, int | np.integer) or depth_multiplier < 1:
        raise ValueError(f"depth_multiplier must be an int >= 1, got {depth_multiplier!r}")
    m = int(depth_multiplier)
    if one != 1 or oc != c * m:
        raise ValueError(f"w_1hwc must have shape (1, KH, KW, {c}*{m}={c * m}), got {w.shape}")
    st, pd, dl, (oh, ow) = resolve_geometry((h, wd), (kh, kw), stride, padding, dilation, output_hw)
    b = check_bias(bias, oc)
    mult, shift = check_requant_params(multipliers, shifts, oc)
    check_activation_range(act_min, act_max)
    check_offsets({"input_offset": input_offset}, output_offset)

    w_taps = w.reshape(kh, kw, c, m).astype(np.int32)
    bias32 = wrap_int32(b)
    out = np.empty((n, oh, ow, oc), dtype=np.int8)
    for chunk in batch_chunks(n, oh * ow * oc * 4 * 3, DEPTHWISE_BUDGET_BYTES):
        x_off = x[chunk].astype(np.int32) + np.int32(input_offset)  # zero fill below == skipped tap
        acc = np.zeros((x_off.shape[0], oh, ow, c, m), dtype=np.int32)
        for i, j, view in window_taps(x_off, (kh, kw), st, pd, dl, (oh, ow), fill=0):
            acc += view[..., None] * w_taps[i, j]  # int32 arithmetic wraps like the C accumulator
        acc = acc.reshape(-1, oh, ow, oc) + bias32
        out[chunk] = requantize_output(acc, mult, shift, output_offset, act_min, act_max)
    return out
