"""int16 elementwise kernels: CMSIS-NN ``arm_elementwise_add_s16`` and ``arm_elementwise_mul_s16``, a
standalone clamp, and the int8 <-> int16 conversions the compiler puts where precisions meet.

s16 activations are symmetric (zero point 0): CMSIS-NN's s16 add and mul ignore their offset arguments,
so these kernels take none. Intermediate values are int32 (wrapping, as in C); requantization is
``arm_nn_requantize`` (double rounding, ``quant_utils.requantize``). Operands broadcast by numpy rules
(CMSIS takes equal shapes; the C runtime walks the broadcast as for the int8 kernels).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .quant_s16 import INT16_MAX, INT16_MIN, check_activation_range_s16, check_int16, check_requant_s32
from .quant_utils import add_quant_params, check_int8, requantize, wrap_int32

#: TFLite's int16 ADD prepare scales inputs by 2^15 before the per-input multipliers (int8: 2^20).
ADD_S16_LEFT_SHIFT = 15


def add_s16_params(a_scale: float, b_scale: float, out_scale: float) -> dict[str, int]:
    """The parameters of ``arm_elementwise_add_s16`` as TFLite's int16 ADD prepare computes them (general,
    non power-of-two scales): ``add_quant_params`` with ``left_shift`` 15."""
    return add_quant_params(a_scale, b_scale, out_scale, left_shift=ADD_S16_LEFT_SHIFT)


def _check_broadcast(op: str, a: object, b: object) -> tuple[np.ndarray, np.ndarray]:
    a = check_int16("a", a, None)
    b = check_int16("b", b, None)
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError as err:
        raise ValueError(f"{op}: shapes {a.shape} and {b.shape} do not broadcast") from err
    return a, b


def add_s16(
    a: np.ndarray,
    b: np.ndarray,
    *,
    a_multiplier: int,
    a_shift: int,
    b_multiplier: int,
    b_shift: int,
    left_shift: int,
    output_multiplier: int,
    output_shift: int,
    act_min: int = INT16_MIN,
    act_max: int = INT16_MAX,
) -> np.ndarray:
    """int16 add, bit-exact with CMSIS-NN ``arm_elementwise_add_s16``:

    ``a' = requantize(a << left_shift, a_multiplier, a_shift)``, the same for b, then
    ``out = clamp(requantize(a' + b', output_multiplier, output_shift), act_min, act_max)``, all in int32
    (wrapping). Parameters: ``add_s16_params`` (a subtraction negates b's multiplier).
    """
    return prepare_add_s16(a_multiplier=a_multiplier, a_shift=a_shift, b_multiplier=b_multiplier, b_shift=b_shift,
                           left_shift=left_shift, output_multiplier=output_multiplier, output_shift=output_shift,
                           act_min=act_min, act_max=act_max)(a, b)


def prepare_add_s16(
    *,
    a_multiplier: int,
    a_shift: int,
    b_multiplier: int,
    b_shift: int,
    left_shift: int,
    output_multiplier: int,
    output_shift: int,
    act_min: int = INT16_MIN,
    act_max: int = INT16_MAX,
) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``add_s16`` with its parameters checked once."""
    if not isinstance(left_shift, int | np.integer) or not 0 <= left_shift <= 30:
        raise ValueError(f"left_shift must be an int in [0, 30], got {left_shift!r}")
    for name, mult, shift in (("a", a_multiplier, a_shift), ("b", b_multiplier, b_shift),
                              ("output", output_multiplier, output_shift)):
        check_requant_s32(name, mult, shift)
    check_activation_range_s16(act_min, act_max)

    def run(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b = _check_broadcast("add_s16", a, b)
        a_req = requantize(wrap_int32(a.astype(np.int64) << left_shift), a_multiplier, a_shift).astype(np.int64)
        b_req = requantize(wrap_int32(b.astype(np.int64) << left_shift), b_multiplier, b_shift).astype(np.int64)
        total = requantize(wrap_int32(a_req + b_req), output_multiplier, output_shift)
        return np.clip(total, act_min, act_max).astype(np.int16)
    return run


def mul_s16(
    a: np.ndarray,
    b: np.ndarray,
    *,
    output_multiplier: int,
    output_shift: int,
    act_min: int = INT16_MIN,
    act_max: int = INT16_MAX,
) -> np.ndarray:
    """int16 multiply, bit-exact with CMSIS-NN ``arm_elementwise_mul_s16``:
    ``out = clamp(requantize(a * b, output_multiplier, output_shift), act_min, act_max)``; the product is at most
    2^30 in magnitude (no wrap). Parameters: ``mul_quant_params`` (``a_scale * b_scale / out_scale``)."""
    return prepare_mul_s16(output_multiplier=output_multiplier, output_shift=output_shift, act_min=act_min,
                           act_max=act_max)(a, b)


def prepare_mul_s16(
    *, output_multiplier: int, output_shift: int, act_min: int = INT16_MIN, act_max: int = INT16_MAX
) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``mul_s16`` with its parameters checked once."""
    check_requant_s32("output", output_multiplier, output_shift)
    check_activation_range_s16(act_min, act_max)

    def run(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b = _check_broadcast("mul_s16", a, b)
        product = a.astype(np.int64) * b.astype(np.int64)
        return np.clip(requantize(product, output_multiplier, output_shift), act_min, act_max).astype(np.int16)
    return run


def clamp_s16(x: np.ndarray, *, act_min: int = INT16_MIN, act_max: int = INT16_MAX) -> np.ndarray:
    """A standalone ReLU/ReLU6/hardtanh/clamp on int16 values (the output keeps the input's quantization)."""
    x = check_int16("x", x, None)
    check_activation_range_s16(act_min, act_max)
    return np.clip(x, act_min, act_max).astype(np.int16)


def convert_s8_s16(x: np.ndarray, *, input_offset: int, multiplier: int, shift: int) -> np.ndarray:
    """int8 -> int16 requantization (TFLite's QUANTIZE int8 -> int16, with CMSIS-NN's arithmetic):
    ``out = clamp(requantize(x + input_offset, multiplier, shift), -32768, 32767)``, int32 arithmetic,
    ``input_offset = -input_zero_point`` (the int16 output is symmetric); (multiplier, shift) from
    ``quantize_multiplier(input_scale / output_scale)``."""
    x = check_int8("x", x, None)
    if not isinstance(input_offset, int | np.integer) or not -127 <= input_offset <= 128:
        raise ValueError(f"input_offset must be an int in [-127, 128] (minus a zero point), got {input_offset!r}")
    check_requant_s32("output", multiplier, shift)
    y = requantize(x.astype(np.int64) + int(input_offset), multiplier, shift)
    return np.clip(y, INT16_MIN, INT16_MAX).astype(np.int16)


def convert_s16_s8(x: np.ndarray, *, output_offset: int, multiplier: int, shift: int) -> np.ndarray:
    """int16 -> int8 requantization: ``out = clamp(requantize(x, multiplier, shift) + output_offset, -128, 127)``,
    int32 arithmetic, ``output_offset = output_zero_point``; (multiplier, shift) from
    ``quantize_multiplier(input_scale / output_scale)``."""
    x = check_int16("x", x, None)
    if not isinstance(output_offset, int | np.integer) or not -128 <= output_offset <= 127:
        raise ValueError(f"output_offset must be an int in [-128, 127], got {output_offset!r}")
    check_requant_s32("output", multiplier, shift)
    y = wrap_int32(requantize(x, multiplier, shift).astype(np.int64) + int(output_offset))
    return np.clip(y, -128, 127).astype(np.int8)
