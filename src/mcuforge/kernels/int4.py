"""int4 weights packed two per byte, in CMSIS-NN's s4 layout (``arm_convolve_s4``, ``arm_depthwise_conv_s4``,
``arm_fully_connected_s4``).

The whole weight tensor is taken in its row-major element order (OHWI for a convolution, 1HW(C*M) for a
depthwise convolution, OI for a fully connected layer) and element ``2k`` goes to the low nibble of byte
``k``, element ``2k + 1`` to its high nibble: weights ``[1, 2, 3, 4]`` are the bytes ``[0x21, 0x43]``. The
packing runs across rows, so with an odd row length every other row starts in a high nibble. An odd
element count leaves the high nibble of the last byte unused; it is written as 0 (CMSIS-NN's test data
pads with a 0 weight) and the program readers reject anything else. Values are two's complement nibbles,
-8..7; mcuforge's quantizer uses the symmetric -7..7.
"""

from __future__ import annotations

import numpy as np

INT4_MIN, INT4_MAX = -8, 7


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
