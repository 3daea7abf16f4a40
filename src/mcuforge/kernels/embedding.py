"""embedding_s8: rows of a constant int8 table picked by integer indices (keyword and text models).

The table is the embedding's weights quantized at compile time to the output's quantization, so the op is a
gather of bytes: the same codes as gathering the float rows and quantizing them (quantize is elementwise)."""

from __future__ import annotations

import numpy as np


def embedding_s8(indices: np.ndarray, table: np.ndarray) -> np.ndarray:
    """``table[indices]``: shape ``indices.shape + (D,)`` for a (rows, D) int8 table; an index outside
    [0, rows) is an error, as in torch (the C kernel stops with MF_ERR_SHAPE)."""
    if table.dtype != np.int8 or table.ndim != 2:
        raise ValueError(f"embedding_s8: table must be int8 (rows, D), got {table.dtype}{list(table.shape)}")
    if indices.dtype not in (np.int64, np.int32):
        raise ValueError(f"embedding_s8: indices must be int64 or int32, got {indices.dtype}")
    if indices.size and (indices.min() < 0 or indices.max() >= table.shape[0]):
        raise ValueError(f"embedding_s8: index out of range [0, {table.shape[0]})")
    return table[indices]
