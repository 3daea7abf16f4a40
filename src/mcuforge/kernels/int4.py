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


#: The weight layout of Helium's s4 inner loops (format layout code 2, docs/format.md "Layouts"): each filter
#: row on its own bytes, in blocks of 32 weights (the last block the row's remainder, an even count 2h):
#: byte j of a block holds weight j in its low nibble and weight h + j in its high nibble, h = 16 for a whole
#: block. One 16-byte load gives the weights of 16 contiguous activations in its low nibbles and of the next
#: 16 in its high ones. Only rows of an even length take it (the bytes are then CMSIS-NN's count, ceil(n / 2)).
S4_HALVES = "s4_halves"
#: The kinds whose weights (input 1) a program may store as S4_HALVES (their Helium paths read it).
S4_HALVES_KINDS = ("conv2d_s4", "fully_connected_s4")
HALVES_BLOCK = 32


def _halves_order(depth: int) -> np.ndarray:
    """For a row of ``depth`` (even) weights: the weight index in nibble order (byte 0 low, byte 0 high, ...)."""
    order = np.empty(depth, np.int64)
    for k0 in range(0, depth, HALVES_BLOCK):
        h = min(HALVES_BLOCK, depth - k0) // 2
        j = np.arange(h)
        order[k0 + 2 * j] = k0 + j  # low nibble of byte k0 / 2 + j
        order[k0 + 2 * j + 1] = k0 + h + j  # its high nibble
    return order


def halves_problem(shape: tuple[int, ...]) -> str | None:
    """Why int4 weights of ``shape`` cannot take the S4_HALVES layout (rows: the first dimension), or None."""
    if len(shape) < 2:
        return f"{S4_HALVES} needs rows (rank 2 or more), got shape {tuple(shape)}"
    depth = int(np.prod(shape[1:], dtype=np.int64))
    if depth % 2:
        return f"{S4_HALVES} needs rows of an even length, got {depth} (shape {tuple(shape)})"
    return None


def pack_int4_halves(values: np.ndarray) -> np.ndarray:
    """int8 values in [-8, 7] of shape (O, ...) (rows of an even length) -> the S4_HALVES bytes, int8 (numel / 2,)."""
    v = np.asarray(values)
    problem = halves_problem(v.shape)
    if problem:
        raise ValueError(problem)
    if v.size == 0:
        return pack_int4(v)
    rows = v.reshape(v.shape[0], -1)
    return pack_int4(rows[:, _halves_order(rows.shape[1])])


def unpack_int4_halves(packed: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The int4 weights of ``shape`` stored as S4_HALVES, sign-extended to int8, in ``shape``."""
    problem = halves_problem(shape)
    if problem:
        raise ValueError(problem)
    count = int(np.prod(shape, dtype=np.int64))
    nibble_order = unpack_int4(packed, count)
    if count == 0:
        return nibble_order.reshape(shape)
    nibble_order = nibble_order.reshape(shape[0], -1)
    depth = nibble_order.shape[1]
    out = np.empty_like(nibble_order)
    out[:, _halves_order(depth)] = nibble_order
    return out.reshape(shape)


def weight_layout(kind: str, shape: tuple[int, ...], has_mve: bool) -> str:
    """The layout a program stores an s4 kind's int4 weights in: S4_HALVES for the kinds whose Helium paths read
    it, on a Helium target, when the rows allow it; else CMSIS-NN's (``"plain"``)."""
    if has_mve and kind in S4_HALVES_KINDS and halves_problem(tuple(shape)) is None:
        return S4_HALVES
    return "plain"


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
