"""upsample_nearest2d_s8: nearest-neighbour upsampling of NHWC int8 tensors by whole factors.

With an integer factor k, torch's nearest source index floor(dst * in / out) is dst // k exactly, so the op is
a repeat of each pixel k times along H and W: a byte copy, the output sharing the input's quantization."""

from __future__ import annotations

import numpy as np


def upsample_nearest2d_s8(x: np.ndarray, output_hw: tuple[int, int]) -> np.ndarray:
    """``x`` (..., H, W, C) int8 to (..., OH, OW, C) with OH, OW whole multiples of H, W."""
    if x.dtype != np.int8 or x.ndim < 3:
        raise ValueError(f"upsample_nearest2d_s8: x must be int8 (..., H, W, C), got {x.dtype}{list(x.shape)}")
    h, w = x.shape[-3:-1]
    oh, ow = output_hw
    if h == 0 or w == 0 or oh % h or ow % w or oh < h or ow < w:
        raise ValueError(f"upsample_nearest2d_s8: output {oh}x{ow} is no whole multiple of the input {h}x{w}")
    return np.repeat(np.repeat(x, oh // h, axis=-3), ow // w, axis=-2)
