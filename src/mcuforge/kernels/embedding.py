"""embedding_s8: rows of a constant int8 table picked by integer indices (keyword and text models).

The table is the embedding's weights quantized at compile time to the output's quantization, so the op is a
gather of bytes: the same codes as gathering the float rows and quantizing them (quantize is elementwise)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .registry import TensorLike, python_kernel


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


def embedding_shapes(attrs: dict[str, Any], inputs: Sequence[TensorLike], outputs: Sequence[TensorLike]
                     ) -> str | None:
    """The C kernel's load-time check (csrc/kernels/embedding_s8.c): int64 / int32 indices, a constant int8
    (rows, D) table with rows > 0, an int8 output of shape indices.shape + (D,)."""
    if len(inputs) != 2 or len(outputs) != 1:
        return "embedding_s8 takes indices and a table, and one output"
    (ix, table), out = inputs, outputs[0]
    if ix.dtype not in ("int64", "int32"):
        return f"embedding_s8: indices must be int64 or int32, got {ix.dtype}"
    if table.dtype != "int8" or len(table.shape) != 2 or not table.is_constant or table.shape[0] == 0:
        return f"embedding_s8: the table must be a constant int8 (rows > 0, D), got {table.dtype}{list(table.shape)}"
    if out.dtype != "int8" or tuple(out.shape) != (*ix.shape, table.shape[1]):
        return (f"embedding_s8: the output must be int8 of shape indices {list(ix.shape)} + [{table.shape[1]}], got "
                f"{out.dtype}{list(out.shape)}")
    return None


@python_kernel("embedding_s8", shapes=embedding_shapes)
def _embedding(op: Any, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    return embedding_s8(ins[0], ins[1][0])  # the table is a constant: its run axis has size 1
