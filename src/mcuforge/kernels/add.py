"""int8 elementwise add (CMSIS-NN ``arm_elementwise_add_s8``)."""

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
    requantize,
    requantize_output,
    wrap_int32,
)


def add_s8(
    a: np.ndarray,
    b: np.ndarray,
    *,
    a_offset: int,
    a_multiplier: int,
    a_shift: int,
    b_offset: int,
    b_multiplier: int,
    b_shift: int,
    left_shift: int,
    output_offset: int,
    output_multiplier: int,
    output_shift: int,
    act_min: int = -128,
    act_max: int = 127,
) -> np.ndarray:
    """int8 add, bit-exact with CMSIS-NN ``arm_elementwise_add_s8``:

    ``a' = requantize((a + a_offset) << left_shift, a_multiplier, a_shift)``, same for b;
    ``out = clamp(requantize(a' + b', output_multiplier, output_shift) + output_offset, act_min, act_max)``.
    All intermediate values are int32 (wrapping). a and b are int8 arrays of any shape that broadcast
    together (CMSIS itself only takes equal shapes). Parameters come from ``add_quant_params``.
    """
    a, b, shape = check_int8_broadcast("add_s8", a, b)
    return prepare_add_s8(a_offset=a_offset, a_multiplier=a_multiplier, a_shift=a_shift, b_offset=b_offset,
                          b_multiplier=b_multiplier, b_shift=b_shift, left_shift=left_shift,
                          output_offset=output_offset, output_multiplier=output_multiplier,
                          output_shift=output_shift, act_min=act_min, act_max=act_max)(a, b)


def prepare_add_s8(
    *,
    a_offset: int,
    a_multiplier: int,
    a_shift: int,
    b_offset: int,
    b_multiplier: int,
    b_shift: int,
    left_shift: int,
    output_offset: int,
    output_multiplier: int,
    output_shift: int,
    act_min: int = -128,
    act_max: int = 127,
) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``add_s8`` with its parameters checked once; returns ``(a, b) -> add_s8(a, b, ...)``."""
    if not isinstance(left_shift, int | np.integer) or not 0 <= left_shift <= 30:
        raise ValueError(f"left_shift must be an int in [0, 30], got {left_shift!r}")
    check_offsets({"a_offset": a_offset, "b_offset": b_offset}, output_offset)
    check_activation_range(act_min, act_max)
    for name, mult, shift in (("a", a_multiplier, a_shift), ("b", b_multiplier, b_shift),
                              ("output", output_multiplier, output_shift)):
        try:
            check_requant_params(mult, shift, 1)
        except ValueError as err:
            raise ValueError(f"{name}: {err}") from err

    params = (int(a_offset), int(a_multiplier), int(a_shift), int(b_offset), int(b_multiplier), int(b_shift),
              int(left_shift), int(output_offset), int(output_multiplier), int(output_shift), int(act_min),
              int(act_max))

    maps: dict = {}  # a scalar operand's 256-entry maps (byte_pair_lookup)

    def run(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b, shape = check_int8_broadcast("add_s8", a, b)
        if math.prod(shape) < TABLE_MIN_ELEMENTS:
            return _add_direct(np.broadcast_to(a, shape).reshape(-1), np.broadcast_to(b, shape).reshape(-1),
                               *params).reshape(shape)
        # The result depends only on the byte pair (a, b): look it up in the table of all 65536 pairs,
        # computed by the same integer pipeline.
        return byte_pair_lookup(_add_table(*params), a, b, maps)
    return run


#: Outputs from which the 65536-entry table pays for itself (it is cached per parameter set anyway).
TABLE_MIN_ELEMENTS = 8192


@functools.lru_cache(maxsize=64)
def _add_table(*params: int) -> np.ndarray:
    """int8 (65536,): entry ``ua * 256 + ub`` is the sum of the int8 values with bytes ua and ub."""
    return byte_pair_table(_add_direct, params)


def _add_direct(
    a_flat: np.ndarray, b_flat: np.ndarray, a_offset: int, a_multiplier: int, a_shift: int, b_offset: int,
    b_multiplier: int, b_shift: int, left_shift: int, output_offset: int, output_multiplier: int,
    output_shift: int, act_min: int, act_max: int,
) -> np.ndarray:
    """The CMSIS-NN add on two flat int8 arrays of one size, element by element (int64 pipeline)."""
    out = np.empty(a_flat.shape, dtype=np.int8)
    for start in range(0, out.size, BLOCK_ELEMENTS):  # cache-sized blocks of the int64 pipeline
        block = slice(start, start + BLOCK_ELEMENTS)
        a_scaled = wrap_int32((a_flat[block].astype(np.int64) + a_offset) << left_shift)
        b_scaled = wrap_int32((b_flat[block].astype(np.int64) + b_offset) << left_shift)
        a_req = requantize(a_scaled, a_multiplier, a_shift).astype(np.int64)
        b_req = requantize(b_scaled, b_multiplier, b_shift).astype(np.int64)
        total = wrap_int32(a_req + b_req)
        out[block] = requantize_output(total, output_multiplier, output_shift, output_offset, act_min, act_max)
    return out
