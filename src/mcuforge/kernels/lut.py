"""256-entry int8 lookup tables: the int8 form of any elementwise activation (sigmoid, tanh, hardswish,
gelu, silu...), computed at compile time from the op's fp32 definition and applied by indexing."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .quant_utils import ByteMap, check_int8, dequantize_per_tensor, quantize_per_tensor

if TYPE_CHECKING:  # torch is only needed to build tables, not to run them: import it lazily
    import torch

TABLE_SIZE = 256


def make_lut_s8(
    fn: Callable[[torch.Tensor], torch.Tensor],
    *,
    input_scale: float,
    input_zero_point: int,
    output_scale: float,
    output_zero_point: int,
) -> np.ndarray:
    """The int8[256] table of ``fn``: entry ``q + 128`` is ``quantize(fn(dequantize(q)))`` for q = -128..127.

    Exactly torch's fp32 simulation of the quantized op: ``dequantize_per_tensor`` (fp32), ``fn`` on a float32
    torch tensor, ``quantize_per_tensor`` (round half to even, saturating). ``fn`` must return a float32 tensor
    of the same shape (elementwise).
    """
    for name, zp in (("input_zero_point", input_zero_point), ("output_zero_point", output_zero_point)):
        if not isinstance(zp, int | np.integer) or not -128 <= zp <= 127:
            raise ValueError(f"make_lut_s8: {name} must be an int in [-128, 127], got {zp!r}")
    for name, scale in (("input_scale", input_scale), ("output_scale", output_scale)):
        if not np.isfinite(scale) or scale <= 0:
            raise ValueError(f"make_lut_s8: {name} must be finite and positive, got {scale!r}")
    import torch

    q_in = np.arange(-128, 128, dtype=np.int8)
    x = torch.from_numpy(dequantize_per_tensor(q_in, input_scale, input_zero_point))
    with torch.no_grad():
        y = fn(x)
    if not isinstance(y, torch.Tensor) or y.dtype != torch.float32 or y.shape != x.shape:
        raise ValueError("make_lut_s8: fn must map a float32 tensor to a float32 tensor of the same shape")
    return quantize_per_tensor(y.numpy(), output_scale, output_zero_point)


def lut_s8(x: np.ndarray, table: np.ndarray) -> np.ndarray:
    """``out = table[x + 128]`` elementwise: int8 x of any shape, table int8 of shape (256,)."""
    x = check_int8("x", x, None)
    return prepare_lut_s8(table)(x)


def prepare_lut_s8(table: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """``lut_s8`` with its table checked and reordered once; returns ``x -> lut_s8(x, table)``."""
    table = check_int8("table", table, 1)
    if table.shape != (TABLE_SIZE,):
        raise ValueError(f"lut_s8: table must have shape ({TABLE_SIZE},), got {table.shape}")
    # Entry q + 128 of the table is for the byte (q as uint8) = (q + 128) ^ 0x80: reorder the 256 entries
    # by byte once, then gather with the input bytes themselves (no index arithmetic pass; see ByteMap).
    by_byte = ByteMap(table[_BYTE_ORDER])

    def run(x: np.ndarray) -> np.ndarray:
        if x.dtype != np.int8:
            raise ValueError(f"x must be a numpy int8 array, got {x.dtype}")
        return by_byte(x)
    return run


#: ``table[_BYTE_ORDER][u]`` is the entry of the int8 value whose byte is u.
_BYTE_ORDER = np.arange(TABLE_SIZE) ^ 0x80
