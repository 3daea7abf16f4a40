"""Checks of one op's record beyond the byte layout, made by the writer and the reader alike (so a
graph the writer accepts always loads): each returns why the op cannot be stored or used, or None."""

from __future__ import annotations

from mcuforge.program.layout import CONSTANT_ALIGN


def scratch_problem(offset: int, nbytes: int, arena_bytes: int,
                    tensors: list[tuple[str, int, int]]) -> str | None:
    """Why an op's scratch buffer ``[offset, offset + nbytes)`` cannot be used, or None: it must be
    planned (16-byte aligned, inside the arena) and share no byte with the op's activations
    (``tensors``: (name, arena offset, nbytes)), which the kernel reads and writes meanwhile."""
    if not isinstance(offset, int) or offset < 0 or offset % CONSTANT_ALIGN or offset + nbytes > arena_bytes:
        return (f"scratch buffer at arena offset {offset} + {nbytes} bytes is not a 16-byte aligned range "
                f"of the {arena_bytes}-byte arena")
    for name, t_offset, t_nbytes in tensors:
        if t_nbytes and offset < t_offset + t_nbytes and t_offset < offset + nbytes:
            return (f"scratch buffer [{offset}, {offset + nbytes}) overlaps tensor {name!r} "
                    f"[{t_offset}, {t_offset + t_nbytes})")
    return None
