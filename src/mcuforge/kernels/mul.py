"""int8 elementwise multiply (CMSIS-NN ``arm_elementwise_mul_s8``) and its TFLite MUL prepare."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from .quant_utils import (
    BLOCK_ELEMENTS,
    byte_pair_lookup,
    byte_pair_table,
    check_activation_range,
    check_int8_broadcast,
    check_offsets,
    check_requant_params,
    quantize_multiplier,
    requantize_output,
)

#: From this many elements on, the (cached) table of all 256 x 256 byte pairs beats the pipeline.
TABLE_THRESHOLD = 8192


def mul_quant_params(a_scale: float, b_scale: float, out_scale: float) -> tuple[int, int]:
    """TFLite int8 MUL prepare: ``QuantizeMultiplier(a_scale * b_scale / out_scale)`` -> (multiplier, shift).

    Scales are used as given (float64; pass fp32 values to mimic a .tflite). Positive shift = left shift.
    Raises ValueError for non-positive scales or a ratio that needs a shift above 30.
    """
    a_scale, b_scale, out_scale = float(a_scale), float(b_scale), float(out_scale)
    if min(a_scale, b_scale, out_scale) <= 0.0:
        raise ValueError("mul_quant_params: scales must be positive")
    return quantize_multiplier(a_scale * b_scale / out_scale)


def mul_s8(
    a: np.ndarray,
    b: np.ndarray,
    *,
    a_offset: int,
    b_offset: int,
    output_offset: int,
    output_multiplier: int,
    output_shift: int,
    act_min: int = -128,
    act_max: int = 127,
) -> np.ndarray:
    """int8 multiply, bit-exact with CMSIS-NN ``arm_elementwise_mul_s8``:

    ``out = clamp(requantize((a + a_offset) * (b + b_offset), output_multiplier, output_shift) + output_offset,
    act_min, act_max)``. The product is at most 256 * 256 in magnitude, so it never wraps. a and b are int8
    arrays of any shapes that broadcast together by numpy rules (CMSIS takes equal shapes; the runtime calls
    it once per broadcast row). Parameters: ``mul_quant_params``; offsets are -zero_point for inputs and
    +zero_point for the output.
    """
    a, b, shape = check_int8_broadcast("mul_s8", a, b)
    return prepare_mul_s8(a_offset=a_offset, b_offset=b_offset, output_offset=output_offset,
                          output_multiplier=output_multiplier, output_shift=output_shift, act_min=act_min,
                          act_max=act_max)(a, b)


def prepare_mul_s8(
    *,
    a_offset: int,
    b_offset: int,
    output_offset: int,
    output_multiplier: int,
    output_shift: int,
    act_min: int = -128,
    act_max: int = 127,
) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``mul_s8`` with its parameters checked once; returns ``(a, b) -> mul_s8(a, b, ...)``."""
    check_offsets({"a_offset": a_offset, "b_offset": b_offset}, output_offset)
    check_activation_range(act_min, act_max)
    check_requant_params(output_multiplier, output_shift, 1)
    params = (int(a_offset), int(b_offset), int(output_offset), int(output_multiplier), int(output_shift),
              int(act_min), int(act_max))

    maps: dict = {}  # a scalar operand's 256-entry maps (byte_pair_lookup)

    def run(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b, shape = check_int8_broadcast("mul_s8", a, b)
        if math.prod(shape) >= TABLE_THRESHOLD:
            # The result only depends on the byte pair (a, b): the table of all 65536 pairs (computed by the
            # same pipeline, cached per parameter set) gathered at index (a as uint8) * 256 + (b as uint8).
            return byte_pair_lookup(_mul_table(*params), a, b, maps)
        return _mul_direct(np.broadcast_to(a, shape).reshape(-1), np.broadcast_to(b, shape).reshape(-1),
                           *params).reshape(shape)
    return run


@functools.lru_cache(maxsize=64)
def _mul_table(*params: int) -> np.ndarray:
    """int8 (65536,): entry ``ua * 256 + ub`` is the product of the int8 values with bytes ua and ub."""
    return byte_pair_table(_mul_direct, params)


def _mul_direct(
    a_flat: np.ndarray,
    b_flat: np.ndarray,
    a_offset: int,
    b_offset: int,
    output_offset: int,
    output_multiplier: int,
    output_shift: int,
    act_min: int,
    act_max: int,
) -> np.ndarray:
    """The elementwise int64 pipeline over equal-shape int8 arrays."""
    out = np.empty(a_flat.shape, dtype=np.int8)
    for start in range(0, out.size, BLOCK_ELEMENTS):  # cache-sized blocks of the int64 pipeline
        block = slice(start, start + BLOCK_ELEMENTS)
        product = (a_flat[block].astype(np.int64) + a_offset) * (b_flat[block].astype(np.int64) + b_offset)
        out[block] = requantize_output(product, output_multiplier, output_shift, output_offset, act_min, act_max,
                                       acc_bound=255 * 255)  # |a + a_offset|, |b + b_offset| <= 255
    return out
