"""int8 2-D convolution (CMSIS-NN ``arm_convolve_s8``), plus the window geometry shared by the
depthwise convolution and pooling kernels.

Geometry (CMSIS semantics): output pixel (oy, ox) reads input rows ``oy*stride_h - pad_h + i*dil_h`` and
columns ``ox*stride_w - pad_w + j*dil_w`` for kernel tap (i, j). Taps outside the input are skipped (for
convolutions that is the same as a pad value of ``-input_offset``, i.e. the input zero point). Padding is
therefore only ever given for the top/left; the bottom/right extent follows from the output size.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from numpy.typing import ArrayLike

from .quant_utils import (
    check_activation_range,
    check_bias,
    check_int8,
    check_offsets,
    check_requant_params,
    requantize_output,
    wrap_int32,
)

IntPair = int | tuple[int, int]

#: Largest float64 im2col block (bytes) built at once; batches are processed in chunks below this.
IM2COL_BUDGET_BYTES = 16 << 20


def pair(value: IntPair, name: str, minimum: int) -> tuple[int, int]:
    """Normalise an int or (h, w) pair and check both entries are integers >= minimum."""
    hw = (value, value) if isinstance(value, int | np.integer) else tuple(value)
    if len(hw) != 2 or not all(isinstance(v, int | np.integer) and v >= minimum for v in hw):
        raise ValueError(f"{name} must be an int or a pair of ints >= {minimum}, got {value!r}")
    return int(hw[0]), int(hw[1])


def conv_output_hw(
    input_hw: tuple[int, int],
    kernel_hw: tuple[int, int],
    stride: IntPair = 1,
    padding: IntPair = 0,
    dilation: IntPair = 1,
) -> tuple[int, int]:
    """Default output size: ``floor((H + 2*pad - dil*(K-1) - 1) / stride) + 1`` per spatial axis."""
    st, pd, dl = pair(stride, "stride", 1), pair(padding, "padding", 0), pair(dilation, "dilation", 1)
    return tuple(  # type: ignore[return-value]
        (size + 2 * p - d * (k - 1) - 1) // s + 1
        for size, k, s, p, d in zip(input_hw, kernel_hw, st, pd, dl, strict=True)
    )


def resolve_geometry(
    input_hw: tuple[int, int],
    kernel_hw: tuple[int, int],
    stride: IntPair,
    padding: IntPair,
    dilation: IntPair,
    output_hw: tuple[int, int] | None,
) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int], tuple[int, int]]:
    """Validate the window parameters; return (stride, padding, dilation, output_hw) as pairs."""
    st, pd, dl = pair(stride, "stride", 1), pair(padding, "padding", 0), pair(dilation, "dilation", 1)
    if output_hw is None:
        out = conv_output_hw(input_hw, kernel_hw, st, pd, dl)
    else:
        out = pair(output_hw, "output_hw", 1)
    if min(out) < 1:
        raise ValueError(
            f"empty output {out} for input {input_hw}, kernel {kernel_hw}, "
            f"stride {st}, padding {pd}, dilation {dl}"
        )
    return st, pd, dl, out


def window_taps(
    x: np.ndarray,
    kernel_hw: tuple[int, int],
    stride: tuple[int, int],
    padding: tuple[int, int],
    dilation: tuple[int, int],
    output_hw: tuple[int, int],
    fill: int | float,
) -> Iterator[tuple[int, int, np.ndarray]]:
    """For each kernel tap (i, j) yield ``(i, j, view)`` with view shape (N, OH, OW, C) and

    ``view[n, oy, ox, c] = x[n, oy*sh - ph + i*dh, ox*sw - pw + j*dw, c]``, or ``fill`` where that position is
    outside the input. Views are strided slices of one padded copy of ``x``.
    """
    (kh, kw), (sh, sw), (ph, pw), (dh, dw), (oh, ow) = kernel_hw, stride, padding, dilation, output_hw
    _, h, w, _ = x.shape
    span_h = (oh - 1) * sh + (kh - 1) * dh + 1  # rows touched, in padded coordinates
    span_w = (ow - 1) * sw + (kw - 1) * dw + 1
    pad = ((0, 0), (ph, max(0, span_h - ph - h)), (pw, max(0, span_w - pw - w)), (0, 0))
    xp = np.pad(x, pad, constant_values=fill)
    for i in range(kh):
        for j in range(kw):
            rows = slice(i * dh, i * dh + (oh - 1) * sh + 1, sh)
            cols = slice(j * dw, j * dw + (ow - 1) * sw + 1, sw)
            yield i, j, xp[:, rows, cols, :]


def batch_chunks(n: int, bytes_per_item: int, budget: int | None = None) -> Iterator[slice]:
    """Split range(n) into slices whose working set stays under ``budget`` bytes (default
    ``IM2COL_BUDGET_BYTES``), at least one item each."""
    step = max(1, (IM2COL_BUDGET_BYTES if budget is None else budget) // max(1, bytes_per_item))
    for start in range(0, n, step):
        yield slice(start, min(n, start + step))


def check_float64_exact(terms: int, input_offset: int) -> None:
    """The float64 dot products are exact while terms * max|x + offset| * max|w| < 2^53.

    Every partial sum is then an integer below 2^53, so the result does not depend on the BLAS summation
    order. With int8 data and an offset in [-127, 128] each product is at most 256 * 128 = 2^15 in magnitude:
    it would take 2^38 terms to break.
    """
    if terms * (128 + abs(int(input_offset))) * 128 >= 1 << 53:
        raise ValueError(f"dot product of {terms} terms may not be exact in float64")


def conv2d_s8(
    x_nhwc: np.ndarray,
    w_ohwi: np.ndarray,
    bias: np.ndarray | None,
    *,
    input_offset: int,
    output_offset: int,
    multipliers: ArrayLike,
    shifts: ArrayLike,
    stride: IntPair = (1, 1),
    padding: IntPair = (0, 0),
    dilation: IntPair = (1, 1),
    act_min: int = -128,
    act_max: int = 127,
    output_hw: tuple[int, int] | None = None,
) -> np.ndarray:
    """int8 convolution, bit-exact with CMSIS-NN ``arm_convolve_s8``.

    ``acc[n,y,x,o] = bias[o] + sum_{i,j,c} (x[n, y*sh-ph+i*dh, x*sw-pw+j*dw, c] + input_offset) * w[o,i,j,c]``
    over in-bounds taps only (int32, wrapping), then per-channel ``requantize`` with (multipliers[o],
    shifts[o]), ``+ output_offset``, clamp to [act_min, act_max]. Shapes: x (N, H, W, C), w (O, KH, KW, C),
    bias (O,) int32 or None, multipliers/shifts length O (or 1). Returns int8 (N, OH, OW, O).

    The dot products run as a float64 matmul on im2col patches: exact (see ``check_float64_exact``) and BLAS
    fast; the accumulator is then wrapped to int32 as on the target.
    """
    x = check_int8("x_nhwc", x_nhwc, 4)
    w = check_int8("w_ohwi", w_ohwi, 4)
    n, h, wd, c = x.shape
    oc, kh, kw, wc = w.shape
    if wc != c:
        raise ValueError(f"w_ohwi has {wc} input channels but x_nhwc has {c}")
    st, pd, dl, (oh, ow) = resolve_geometry((h, wd), (kh, kw), stride, padding, dilation, output_hw)
    b = check_bias(bias, oc)
    mult, shift = check_requant_params(multipliers, shifts, oc)
    check_activation_range(act_min, act_max)
    check_offsets({"input_offset": input_offset}, output_offset)
    depth = kh * kw * c
    check_float64_exact(depth, input_offset)

    w_cols = w.reshape(oc, depth).astype(np.float64).T  # (KH*KW*C, O), tap-major like the patches
    out = np.empty((n, oh, ow, oc), dtype=np.int8)
    for chunk in batch_chunks(n, oh * ow * (depth + oc) * 8):
        x_off = x[chunk].astype(np.float64) + input_offset  # zero fill below == skipped tap
        patches = np.empty((x_off.shape[0], oh, ow, kh, kw, c), dtype=np.float64)
        for i, j, view in window_taps(x_off, (kh, kw), st, pd, dl, (oh, ow), fill=0.0):
            patches[:, :, :, i, j, :] = view
        acc = (patches.reshape(-1, depth) @ w_cols).astype(np.int64)  # exact integers, (rows, O)
        result = requantize_output(wrap_int32(acc + b), mult, shift, output_offset, act_min, act_max)
        out[chunk] = result.reshape(-1, oh, ow, oc)
    return out
