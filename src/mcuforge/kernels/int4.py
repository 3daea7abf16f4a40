"""int4 weights packed two per byte, in CMSIS-NN's s4 layout (``arm_convolve_s4``, ``arm_depthwise_conv_s4``,
``arm_fully_connected_s4``).

The whole weight tensor is taken in its row-major element order (OHWI for a convolution, 1HW(C*M) for a
depthwise convolution, OI for a fully connected layer) and element ``2k`` goes to the low nibble of byte
``k``, element ``2k + 1`` to its high nibble: weights ``[1, 2, 3, 4]`` are the bytes ``[0x21, 0x43]``. The
packing runs across rows, so with an odd row length every other row starts in a high nibble. An odd
element count leaves the high nibble of the last byte unused; it is written as 0 (CMSIS-NN's test data
pads with a 0 weight) and the program readers reject anything else. Values are two's complement nibbles,
-8..7; mcuforge's quantizer uses the symmetric -7..7.

The s4 kinds also store their per-channel parameters compactly (format 3.0), since with the weights halved
the bias, multiplier and shift of each output channel (9 bytes in CMSIS-NN's widths) become a third of a
layer's flash: the bias as int16 when every value fits (4-bit weight scales are ~18x int8's, so the bias
values are ~18x smaller), the multipliers as int16 holding their 16 high bits (``m`` stands for the Q31
multiplier ``m << 16``: a relative error of at most 2^-15 in the requantization scale). Their arithmetic is
still CMSIS-NN's, with those widened values as arguments.
"""

from __future__ import annotations

import numpy as np

from .quant_s16 import INT16_MAX, INT16_MIN
from .quant_utils import SHIFT_MAX

INT4_MIN, INT4_MAX = -8, 7
#: A 16-bit multiplier ``m`` of an s4 kind is the Q31 multiplier ``m << MULTIPLIER16_SHIFT``.
MULTIPLIER16_SHIFT = 16


def packed_size(count: int) -> int:
    """Bytes holding ``count`` int4 values."""
    return (int(count) + 1) // 2


def pack_int4(values: np.ndarray) -> np.ndarray:
    """int8 values in [-8, 7] (any shape, taken in row-major order) -> int8 bytes (ceil(n / 2),)."""
    v = np.asarray(values)
    if not np.issubdtype(v.dtype, np.integer):
        raise ValueError(f"int4 values must be integers, got {v.dtype}")
    flat = v.reshape(-1).astype(np.int16)
    if flat.size and (flat.min() < INT4_MIN or flat.max() > INT4_MAX):
        raise ValueError(f"int4 values must lie in [{INT4_MIN}, {INT4_MAX}], got [{flat.min()}, {flat.max()}]")
    nibbles = (flat & 0xF).astype(np.uint8)
    if nibbles.size % 2:
        nibbles = np.append(nibbles, np.uint8(0))  # the unused high nibble of an odd count
    return (nibbles[0::2] | (nibbles[1::2] << 4)).view(np.int8)


def unpack_int4(packed: np.ndarray, count: int) -> np.ndarray:
    """The first ``count`` int4 values of ``packed`` bytes, sign-extended to int8, shape (count,)."""
    p = np.asarray(packed)
    if p.dtype not in (np.int8, np.uint8) or p.ndim != 1:
        raise ValueError(f"packed int4 data must be a 1-D int8 array, got {p.dtype} {p.shape}")
    if p.size != packed_size(count):
        raise ValueError(f"{count} int4 values take {packed_size(count)} bytes, got {p.size}")
    u = p.view(np.uint8)
    out = np.empty(2 * u.size, np.int8)
    out[0::2] = (u << 4).view(np.int8) >> 4  # low nibble, sign-extended by the arithmetic shift
    out[1::2] = u.view(np.int8) >> 4
    return out[:count]


def packing_problem(packed: np.ndarray, count: int) -> str | None:
    """Why ``packed`` is not the packing of ``count`` int4 values (wrong size, a non-zero pad nibble), or None."""
    p = np.asarray(packed)
    if p.ndim != 1 or p.dtype not in (np.int8, np.uint8):
        return f"packed int4 data must be a 1-D array of bytes, got {p.dtype} {p.shape}"
    if p.size != packed_size(count):
        return f"{count} int4 values take {packed_size(count)} bytes, not {p.size}"
    if count % 2 and p.view(np.uint8)[-1] >> 4:
        return f"the unused high nibble of the last byte (odd count {count}) is {p.view(np.uint8)[-1] >> 4}, not 0"
    return None


def multipliers16(multipliers: np.ndarray, shifts: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Q31 multipliers (non-negative) rounded to their 16 high bits: (int16 multipliers, int8 shifts) with
    ``m16 << 16`` the new multiplier, or None when they cannot be (a negative multiplier, or a shift that
    would leave arm_nn_requantize's range). One that rounds up to 2^31 becomes 2^30 with one more left shift."""
    m, s = np.asarray(multipliers, np.int64), np.asarray(shifts, np.int64)
    high = (m + (1 << (MULTIPLIER16_SHIFT - 1))) >> MULTIPLIER16_SHIFT  # round half up
    carry = high > INT16_MAX
    high, s = np.where(carry, high >> 1, high), s + carry
    if m.size and (m.min() < 0 or s.max() > SHIFT_MAX):
        return None
    return high.astype(np.int16), s.astype(np.int8)


def bias16(bias: np.ndarray) -> np.ndarray | None:
    """The int32 bias as int16 when every value fits, else None."""
    b = np.asarray(bias, np.int64)
    if b.size and (b.min() < INT16_MIN or b.max() > INT16_MAX):
        return None
    return b.astype(np.int16)


def widened_multipliers(stored: np.ndarray) -> np.ndarray:
    """The int32 multipliers the kernels take from what a program stores (int16: the 16 high bits)."""
    s = np.asarray(stored)
    if s.dtype == np.int16:
        return (s.astype(np.int64) << MULTIPLIER16_SHIFT).astype(np.int32)
    return s
