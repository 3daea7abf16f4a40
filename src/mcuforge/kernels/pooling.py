"""int8 average and max pooling (CMSIS-NN ``arm_avgpool_s8`` and ``arm_max_pool_s8``).

Windows use the geometry of ``conv.window_taps`` (dilation 1): padding positions are not part of the window,
so an average divides by the number of in-bounds elements. A window with no in-bounds element is an error
(``arm_avgpool_s8`` returns ARM_CMSIS_NN_ARG_ERROR; ``arm_max_pool_s8`` would write garbage).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .conv import IntPair, check_input, pair, resolve_geometry, window_taps
from .quant_utils import check_activation_range, check_int8

#: Fill value for max pooling: below every int8, so padding never wins while one element is in bounds.
_MAX_POOL_FILL = -129


def _pool_geometry(
    shape: tuple[int, int, int], kernel: IntPair, stride: IntPair, padding: IntPair,
    output_hw: tuple[int, int] | None
) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int], tuple[int, int], np.ndarray]:
    """Validate; return (kernel, stride, padding, output_hw, count), count[oy, ox, 1] = in-bounds elements."""
    kernel_hw = pair(kernel, "kernel", 1)
    st, pd, dl, out = resolve_geometry(shape[:2], kernel_hw, stride, padding, 1, output_hw)
    inside = np.ones((1, shape[0], shape[1], 1), dtype=np.int32)
    count = sum(view for _, _, view in window_taps(inside, kernel_hw, st, pd, dl, out, fill=0))[0]
    if np.any(count == 0):
        raise ValueError(
            f"pooling window entirely in padding (kernel {kernel_hw}, padding {pd}, output {out})"
        )
    return kernel_hw, st, pd, out, count


def avgpool_s8(
    x_nhwc: np.ndarray,
    *,
    kernel: IntPair,
    stride: IntPair,
    padding: IntPair,
    act_min: int = -128,
    act_max: int = 127,
    output_hw: tuple[int, int] | None = None,
) -> np.ndarray:
    """int8 average pooling, bit-exact with CMSIS-NN ``arm_avgpool_s8``.

    ``sum`` over the in-bounds window elements, ``count`` their number, then as C integer division
    (truncating): ``(sum + count/2) / count`` if sum > 0 else ``(sum - count/2) / count`` -- i.e. the mean
    rounded half away from zero -- clamped to [act_min, act_max]. x (N, H, W, C) -> int8 (N, OH, OW, C).
    """
    x = check_int8("x_nhwc", x_nhwc, 4)
    return prepare_pool_s8("avg", x.shape[1:], kernel, stride, padding, act_min, act_max, output_hw)(x)


def maxpool_s8(
    x_nhwc: np.ndarray,
    *,
    kernel: IntPair,
    stride: IntPair,
    padding: IntPair,
    act_min: int = -128,
    act_max: int = 127,
    output_hw: tuple[int, int] | None = None,
) -> np.ndarray:
    """int8 max pooling, bit-exact with CMSIS-NN ``arm_max_pool_s8``: max over the in-bounds window
    elements, clamped to [act_min, act_max]. x (N, H, W, C) -> int8 (N, OH, OW, C).
    """
    x = check_int8("x_nhwc", x_nhwc, 4)
    return prepare_pool_s8("max", x.shape[1:], kernel, stride, padding, act_min, act_max, output_hw)(x)


def prepare_pool_s8(
    kind: str,
    input_hwc: tuple[int, int, int],
    kernel: IntPair,
    stride: IntPair,
    padding: IntPair,
    act_min: int = -128,
    act_max: int = 127,
    output_hw: tuple[int, int] | None = None,
) -> Callable[[np.ndarray], np.ndarray]:
    """``avgpool_s8`` (kind "avg") or ``maxpool_s8`` ("max") for inputs (N, *input_hwc), with the checks,
    the geometry and the window counts done once."""
    shape = tuple(int(v) for v in input_hwc)
    check_activation_range(act_min, act_max)
    kernel_hw, st, pd, out, count = _pool_geometry(shape, kernel, stride, padding, output_hw)
    half = count // 2
    # A window over the whole input (a global mean): one reduction instead of a pass per tap.
    whole = out == (1, 1) and pd == (0, 0) and kernel_hw == shape[:2]

    def average(x: np.ndarray) -> np.ndarray:
        check_input(x, shape, "avgpool_s8")
        if whole:
            total = x.sum(axis=(1, 2), dtype=np.int64, keepdims=True)
        else:
            taps = window_taps(x.astype(np.int32), kernel_hw, st, pd, (1, 1), out, fill=0)
            total = sum(view for _, _, view in taps)
        mean = np.sign(total) * ((np.abs(total) + half) // count)  # C truncation of (|sum| + count/2) / count
        return np.clip(mean, act_min, act_max).astype(np.int8)

    def maximum(x: np.ndarray) -> np.ndarray:
        check_input(x, shape, "maxpool_s8")
        taps = window_taps(x.astype(np.int16), kernel_hw, st, pd, (1, 1), out, fill=_MAX_POOL_FILL)
        best = np.full((x.shape[0], out[0], out[1], x.shape[3]), _MAX_POOL_FILL, dtype=np.int16)
        for _, _, view in taps:
            np.maximum(best, view, out=best)
        return np.clip(best, act_min, act_max).astype(np.int8)

    if kind not in ("avg", "max"):
        raise ValueError(f"pool kind must be 'avg' or 'max', got {kind!r}")
    return average if kind == "avg" else maximum
