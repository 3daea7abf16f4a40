"""Argument checks shared by the kernels: dtypes, ranks, bias and requantization parameters, activation ranges,
offsets and broadcasting, each raising a ValueError that names the argument."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .requant import INT32_MAX, INT32_MIN, SHIFT_MAX, SHIFT_MIN

# ----------------------------------------------------------------------------------------------------------
# Argument checks shared by the kernels
# ----------------------------------------------------------------------------------------------------------


def check_int8(name: str, arr: Any, ndim: int | tuple[int, ...] | None) -> np.ndarray:
    """Return ``arr`` if it is an int8 ndarray of the given rank(s) (None: any), else raise ValueError."""
    if not isinstance(arr, np.ndarray) or arr.dtype != np.int8:
        got = arr.dtype if isinstance(arr, np.ndarray) else type(arr).__name__
        raise ValueError(f"{name} must be a numpy int8 array, got {got}")
    if ndim is None:
        return arr
    ndims = (ndim,) if isinstance(ndim, int) else ndim
    if arr.ndim not in ndims:
        raise ValueError(f"{name} must have rank {' or '.join(map(str, ndims))}, got shape {arr.shape}")
    return arr


def check_bias(bias: Any, channels: int) -> np.ndarray:
    """Return the bias as int64 of shape (channels,) (zeros for None); it must be int32."""
    if bias is None:
        return np.zeros(channels, dtype=np.int64)
    if not isinstance(bias, np.ndarray) or bias.dtype != np.int32:
        got = bias.dtype if isinstance(bias, np.ndarray) else type(bias).__name__
        raise ValueError(f"bias must be a numpy int32 array or None, got {got}")
    if bias.shape != (channels,):
        raise ValueError(f"bias must have shape ({channels},), got {bias.shape}")
    return bias.astype(np.int64)


def check_requant_params(
    multipliers: ArrayLike, shifts: ArrayLike, channels: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel (length ``channels``) or per-tensor (length 1 / scalar) multipliers and shifts, int64."""
    if isinstance(multipliers, int | np.integer) and isinstance(shifts, int | np.integer):
        # The per-tensor parameters of the small elementwise kernels: the same checks without array passes.
        if not INT32_MIN <= multipliers <= INT32_MAX:
            raise ValueError("multipliers must fit in int32")
        if not SHIFT_MIN <= shifts <= SHIFT_MAX:
            raise ValueError(f"shifts must be in [{SHIFT_MIN}, {SHIFT_MAX}]")
        return np.array([multipliers], np.int64), np.array([shifts], np.int64)
    m = np.atleast_1d(np.asarray(multipliers))
    s = np.atleast_1d(np.asarray(shifts))
    for name, arr in (("multipliers", m), ("shifts", s)):
        if arr.ndim != 1 or arr.shape[0] not in (1, channels):
            raise ValueError(f"{name} must have length 1 or {channels}, got shape {arr.shape}")
        if not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"{name} must be integers, got {arr.dtype}")
    m, s = m.astype(np.int64), s.astype(np.int64)
    if np.any((m < INT32_MIN) | (m > INT32_MAX)):
        raise ValueError("multipliers must fit in int32")
    if np.any((s < SHIFT_MIN) | (s > SHIFT_MAX)):
        raise ValueError(f"shifts must be in [{SHIFT_MIN}, {SHIFT_MAX}]")
    return m, s


def check_activation_range(act_min: int, act_max: int) -> None:
    """Require -128 <= act_min <= act_max <= 127."""
    if not -128 <= act_min <= act_max <= 127:
        raise ValueError(f"need -128 <= act_min <= act_max <= 127, got [{act_min}, {act_max}]")


#: Output offset range of the int8 kinds (an int8 zero point); the s4 kinds take any int32 (S4_OUTPUT_OFFSET_RANGE).
OUTPUT_OFFSET_RANGE = (-128, 127)
#: arm_convolve_s4 / arm_depthwise_conv_s4 / arm_fully_connected_s4 add their int32 output offset to the int32
#: requantized value (wrapping) before the clamp, whatever its value: mcuforge's s4 kinds take every int32.
S4_OUTPUT_OFFSET_RANGE = (INT32_MIN, INT32_MAX)


def check_offsets(input_offsets: dict[str, int], output_offset: int,
                  output_range: tuple[int, int] = OUTPUT_OFFSET_RANGE) -> None:
    """Offsets from int8 zero points: input offsets (-zp) in [-127, 128], output offset in ``output_range``
    ([-128, 127] unless given)."""
    for name, value in input_offsets.items():
        if not isinstance(value, int | np.integer) or not -127 <= value <= 128:
            raise ValueError(f"{name} must be an int in [-127, 128] (minus a zero point), got {value!r}")
    lo, hi = output_range
    if not isinstance(output_offset, int | np.integer) or not lo <= output_offset <= hi:
        raise ValueError(f"output_offset must be an int in [{lo}, {hi}], got {output_offset!r}")


def check_weighted_params(
    bias: Any,
    channels: int,
    multipliers: ArrayLike,
    shifts: ArrayLike,
    act_min: int,
    act_max: int,
    input_offset: int,
    output_offset: int,
    output_offset_range: tuple[int, int] = OUTPUT_OFFSET_RANGE,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The output-stage checks of a weighted op (conv2d, depthwise conv2d, transposed conv2d, fully
    connected): bias, requant parameters for ``channels`` outputs, activation range, offsets.
    Returns (bias as int64, multipliers, shifts) as ``check_bias`` / ``check_requant_params`` do."""
    b = check_bias(bias, channels)
    mult, shift = check_requant_params(multipliers, shifts, channels)
    check_activation_range(act_min, act_max)
    check_offsets({"input_offset": input_offset}, output_offset, output_offset_range)
    return b, mult, shift


def check_int8_broadcast(op: str, a: Any, b: Any) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """The two operands of an elementwise int8 op (int8 arrays of any rank) and the shape they
    broadcast to by numpy rules; ValueError naming ``op`` if they do not."""
    a = check_int8("a", a, None)
    b = check_int8("b", b, None)
    try:
        shape = np.broadcast_shapes(a.shape, b.shape)
    except ValueError as err:
        raise ValueError(f"{op}: shapes {a.shape} and {b.shape} do not broadcast") from err
    return a, b, shape
