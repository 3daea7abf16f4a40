"""int8 transposed 2-D convolution (CMSIS-NN ``arm_transpose_conv_s8``), NHWC in and out, OHWI weights."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .conv import IntPair, batch_chunks, check_float64_exact, pair
from .quant_utils import check_int8, check_weighted_params, requantize_output, wrap_int32


def transpose_conv_output_hw(
    input_hw: tuple[int, int], kernel_hw: tuple[int, int], stride: IntPair = 1, padding: IntPair = 0
) -> tuple[int, int]:
    """Output size without output_padding, as torch ConvTranspose2d: ``(H - 1) * stride - 2 * pad + K``."""
    st, pd = pair(stride, "stride", 1), pair(padding, "padding", 0)
    return tuple(  # type: ignore[return-value]
        (size - 1) * s - 2 * p + k for size, k, s, p in zip(input_hw, kernel_hw, st, pd, strict=True)
    )


def transpose_conv2d_s8(
    x: np.ndarray,
    w: np.ndarray,
    bias: np.ndarray | None,
    *,
    input_offset: int,
    output_offset: int,
    multipliers: ArrayLike,
    shifts: ArrayLike,
    stride: IntPair = (1, 1),
    padding: IntPair = (0, 0),
    act_min: int = -128,
    act_max: int = 127,
    output_hw: tuple[int, int] | None = None,
) -> np.ndarray:
    """int8 transposed convolution, bit-exact with CMSIS-NN ``arm_transpose_conv_s8``.

    Every input pixel scatters into the output: ``acc[n, iy*sh + ky - ph, ix*sw + kx - pw, o] +=
    (x[n, iy, ix, c] + input_offset) * w[o, ky, kx, c]``, starting from ``bias[o]``; positions outside the
    output are dropped. Then per-channel ``requantize`` (multipliers[o], shifts[o]), ``+ output_offset``, clamp.
    The int32 accumulator wraps; a wrapping sum does not depend on the order, so CMSIS's rolling row buffer
    and this scatter give the same bytes.

    Shapes: x (N, H, W, C); w (O, KH, KW, C) with O the output channels (torch ConvTranspose2d's weight
    (C, O, KH, KW) transposed (1, 2, 3, 0), no flip); bias (O,) int32 or None. ``padding`` is torch's
    ``padding``; torch's ``output_padding`` is expressed by ``output_hw`` (default: no output padding), which
    must lie in [default, default + stride - 1] per axis. No dilation or groups (CMSIS has neither).
    Returns int8 (N, OH, OW, O).
    """
    x = check_int8("x", x, 4)
    w = check_int8("w", w, 4)
    n, h, wd, c = x.shape
    oc, kh, kw, wc = w.shape
    if wc != c:
        raise ValueError(f"w has {wc} input channels but x has {c}")
    (sh, sw), (ph, pw) = pair(stride, "stride", 1), pair(padding, "padding", 0)
    base_h, base_w = transpose_conv_output_hw((h, wd), (kh, kw), (sh, sw), (ph, pw))
    oh, ow = (base_h, base_w) if output_hw is None else pair(output_hw, "output_hw", 1)
    if min(base_h, base_w) < 1 or not (base_h <= oh < base_h + sh and base_w <= ow < base_w + sw):
        raise ValueError(
            f"output_hw {(oh, ow)} must be >= 1 and within [{(base_h, base_w)}, "
            f"{(base_h + sh - 1, base_w + sw - 1)}] (output_padding < stride)"
        )
    b, mult, shift = check_weighted_params(bias, oc, multipliers, shifts, act_min, act_max, input_offset, output_offset)
    check_float64_exact(kh * kw * c, input_offset)  # no output sums more taps than the whole kernel has

    # Scatter buffer in un-cropped coordinates: rows -ph .. full_h - ph - 1 of the output.
    full_h, full_w = max((h - 1) * sh + kh, ph + oh), max((wd - 1) * sw + kw, pw + ow)
    w_cols = w.transpose(3, 1, 2, 0).reshape(c, kh * kw * oc).astype(np.float64)  # (C, KH*KW*O)
    out = np.empty((n, oh, ow, oc), dtype=np.int8)
    for chunk in batch_chunks(n, (h * wd * (c + kh * kw * oc) + full_h * full_w * oc) * 8):
        x_off = x[chunk].astype(np.float64) + input_offset
        rows = x_off.shape[0]
        taps = (x_off.reshape(-1, c) @ w_cols).reshape(rows, h, wd, kh, kw, oc)  # exact integers
        acc = np.zeros((rows, full_h, full_w, oc), dtype=np.float64)
        for ky in range(kh):
            for kx in range(kw):
                acc[:, ky : ky + (h - 1) * sh + 1 : sh, kx : kx + (wd - 1) * sw + 1 : sw, :] += taps[:, :, :, ky, kx]
        cropped = acc[:, ph : ph + oh, pw : pw + ow, :].astype(np.int64)
        out[chunk] = requantize_output(wrap_int32(cropped + b), mult, shift, output_offset, act_min, act_max)
    return out
