"""upsample_nearest2d_s8: nearest-neighbour upsampling of NHWC int8 tensors by whole factors.

With an integer factor k, torch's nearest source index floor(dst * in / out) is dst // k exactly, so the op is
a repeat of each pixel k times along H and W: a byte copy, the output sharing the input's quantization."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .registry import TensorLike, python_kernel


def upsample_nearest2d_s8(x: np.ndarray, output_hw: tuple[int, int]) -> np.ndarray:
    """``x`` (..., H, W, C) int8 to (..., OH, OW, C) with OH, OW whole multiples of H, W."""
    if x.dtype != np.int8 or x.ndim < 3:
        raise ValueError(f"upsample_nearest2d_s8: x must be int8 (..., H, W, C), got {x.dtype}{list(x.shape)}")
    h, w = x.shape[-3:-1]
    oh, ow = output_hw
    if h == 0 or w == 0 or oh % h or ow % w or oh < h or ow < w:
        raise ValueError(f"upsample_nearest2d_s8: output {oh}x{ow} is no whole multiple of the input {h}x{w}")
    return np.repeat(np.repeat(x, oh // h, axis=-3), ow // w, axis=-2)


def upsample_shapes(attrs: dict[str, Any], inputs: Sequence[TensorLike], outputs: Sequence[TensorLike]
                    ) -> str | None:
    """The C kernel's load-time check (csrc/kernels/upsample_nearest2d_s8.c): int8 NHWC input and output of the
    same N and C, the output's H and W nonzero whole multiples of the input's (H, W > 0)."""
    if len(inputs) != 1 or len(outputs) != 1:
        return "upsample_nearest2d_s8 takes one input and one output"
    x, out = inputs[0], outputs[0]
    if x.dtype != "int8" or out.dtype != "int8" or len(x.shape) != 4 or len(out.shape) != 4:
        return "upsample_nearest2d_s8: input and output must be int8 of rank 4 (NHWC)"
    (n, h, w, c), (on, oh, ow, oc) = x.shape, out.shape
    if n != on or c != oc or h == 0 or w == 0 or oh < h or ow < w or oh % h or ow % w:
        return (f"upsample_nearest2d_s8: output {list(out.shape)} is not input {list(x.shape)} upsampled by whole "
                "factors along H and W")
    return None


@python_kernel("upsample_nearest2d_s8", shapes=upsample_shapes)
def _upsample_nearest(op: Any, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    return upsample_nearest2d_s8(ins[0], outs[0].shape[-3:-1])
