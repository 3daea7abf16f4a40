"""int8 elementwise add (CMSIS-NN ``arm_elementwise_add_s8``)."""

from __future__ import annotations

import numpy as np

from .quant_utils import (
    BLOCK_ELEMENTS,
    check_activation_range,
    check_int8,
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
    a = check_int8("a", a, None)
    b = check_int8("b", b, None)
    try:
        shape = np.broadcast_shapes(a.shape, b.shape)
    except ValueError as err:
        raise ValueError(f"add_s8: shapes {a.shape} and {b.shape} do not broadcast") from err
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

    a_flat = np.broadcast_to(a, shape).reshape(-1)
    b_flat = np.broadcast_to(b, shape).reshape(-1)
    out = np.empty(a_flat.shape, dtype=np.int8)
    for start in range(0, out.size, BLOCK_ELEMENTS):  # cache-sized blocks of the int64 pipeline
        block = slice(start, start + BLOCK_ELEMENTS)
        a_scaled = wrap_int32((a_flat[block].astype(np.int64) + a_offset) << left_shift)
        b_scaled = wrap_int32((b_flat[block].astype(np.int64) + b_offset) << left_shift)
        a_req = requantize(a_scaled, a_multiplier, a_shift).astype(np.int64)
        b_req = requantize(b_scaled, b_multiplier, b_shift).astype(np.int64)
        total = wrap_int32(a_req + b_req)
        out[block] = requantize_output(total, output_multiplier, output_shift, output_offset, act_min, act_max)
    return out.reshape(shape)
