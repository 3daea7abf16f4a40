"""int16 average and max pooling (CMSIS-NN ``arm_avgpool_s16`` and ``arm_max_pool_s16``): the int8
kernels' definitions on int16 values (windows over in-bounds elements only, a window entirely in
padding is an error; input and output share quantization)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .conv import IntPair, window_taps
from .pooling import _pool_geometry
from .quant_s16 import INT16_MAX, INT16_MIN, check_activation_range_s16, check_int16

#: Largest window: its int32 sum of int16 values cannot overflow (CMSIS-NN's DSP path saturates, its
#: portable path wraps; below 2^16 elements neither happens).
MAX_WINDOW = 65535


def avgpool_s16(x_nhwc: np.ndarray, *, kernel: IntPair, stride: IntPair, padding: IntPair,
                act_min: int = INT16_MIN, act_max: int = INT16_MAX,
                output_hw: tuple[int, int] | None = None) -> np.ndarray:
    """int16 average pooling, bit-exact with CMSIS-NN ``arm_avgpool_s16``: the in-bounds window sum (int32)
    divided by the element count, C truncation of ``(sum +- count/2) / count`` (the mean rounded half away
    from zero), clamped. x (N, H, W, C) -> int16 (N, OH, OW, C)."""
    x = check_int16("x_nhwc", x_nhwc, 4)
    return prepare_pool_s16("avg", x.shape[1:], kernel, stride, padding, act_min, act_max, output_hw)(x)


def maxpool_s16(x_nhwc: np.ndarray, *, kernel: IntPair, stride: IntPair, padding: IntPair,
                act_min: int = INT16_MIN, act_max: int = INT16_MAX,
                output_hw: tuple[int, int] | None = None) -> np.ndarray:
    """int16 max pooling, bit-exact with CMSIS-NN ``arm_max_pool_s16``: the in-bounds window maximum, clamped.
    x (N, H, W, C) -> int16 (N, OH, OW, C)."""
    x = check_int16("x_nhwc", x_nhwc, 4)
    return prepare_pool_s16("max", x.shape[1:], kernel, stride, padding, act_min, act_max, output_hw)(x)


def prepare_pool_s16(kind: str, input_hwc: tuple[int, int, int], kernel: IntPair, stride: IntPair,
                     padding: IntPair, act_min: int = INT16_MIN, act_max: int = INT16_MAX,
                     output_hw: tuple[int, int] | None = None) -> Callable[[np.ndarray], np.ndarray]:
    """``avgpool_s16`` (kind "avg") or ``maxpool_s16`` ("max") for inputs (N, *input_hwc), prepared once."""
    if kind not in ("avg", "max"):
        raise ValueError(f"pool kind must be 'avg' or 'max', got {kind!r}")
    shape = tuple(int(v) for v in input_hwc)
    check_activation_range_s16(act_min, act_max)
    kernel_hw, st, pd, out, count = _pool_geometry(shape, kernel, stride, padding, output_hw)
    if kernel_hw[0] * kernel_hw[1] > MAX_WINDOW:
        raise ValueError(f"{kind}pool_s16: a window of {kernel_hw[0] * kernel_hw[1]} elements exceeds {MAX_WINDOW}")
    half = count // 2

    def run(x: np.ndarray) -> np.ndarray:
        if x.dtype != np.int16 or x.shape[1:] != shape:
            raise ValueError(f"{kind}pool_s16: prepared for int16 inputs (N, {', '.join(map(str, shape))}), "
                             f"got {x.dtype}{list(x.shape)}")
        if kind == "avg":
            taps = window_taps(x.astype(np.int64), kernel_hw, st, pd, (1, 1), out, fill=0)
            total = sum(view for _, _, view in taps)
            result = np.sign(total) * ((np.abs(total) + half) // count)  # C truncation of (|sum| + count/2) / count
        else:
            # Below every int16, so padding never wins while one element is in bounds.
            taps = window_taps(x.astype(np.int32), kernel_hw, st, pd, (1, 1), out, fill=INT16_MIN - 1)
            result = np.full((x.shape[0], out[0], out[1], x.shape[3]), INT16_MIN - 1, dtype=np.int32)
            for _, _, view in taps:
                np.maximum(result, view, out=result)
        return np.clip(result, act_min, act_max).astype(np.int16)
    return run
