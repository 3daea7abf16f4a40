"""Checks of one op's record beyond the byte layout, made by the writer and the reader alike (so a
graph the writer accepts always loads): each returns why the op cannot be stored or used, or None."""

from __future__ import annotations

import numpy as np

from mcuforge.ir import OP_KINDS, Op, Tensor
from mcuforge.program.layout import CONSTANT_ALIGN

SHIFT_RANGE = (-31, 30)  # a requantization shift (left-positive), what arm_nn_requantize takes


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


def shifts_problem(op: Op, tensors: dict[str, Tensor]) -> str | None:
    """Why the requantization shifts of ``op`` (its ``shifts`` input, if its kind has one) cannot be
    stored, or None: an int8 constant (format 2.0; 1.0 stored int32), each value in [-31, 30]."""
    spec = OP_KINDS[op.kind]["inputs"]
    if "shifts" not in spec or spec.index("shifts") >= len(op.inputs):
        return None
    name = op.inputs[spec.index("shifts")]
    t = tensors[name]
    if not t.is_constant or t.dtype != "int8":
        what = "a constant" if t.is_constant else "an activation"
        return f"shifts {name!r} must be an int8 constant, got {what} of {t.dtype}"
    lo, hi = SHIFT_RANGE
    values = np.asarray(t.data)
    if values.size and (values.min() < lo or values.max() > hi):
        return f"shifts {name!r} hold values outside [{lo}, {hi}]"
    return None


def aten_index_problem(op: Op) -> str | None:
    """Why an ``aten_fp32`` op's ``table_index`` (its position in the C runtime's fp32 table, by which
    the runtime dispatches it) cannot be stored, or None: it is the position of its ``target`` in
    the table, or -1 for an aten op the table does not have (which no C runtime then runs)."""
    if op.kind != "aten_fp32":
        return None
    from mcuforge.cruntime import aten_table_index

    want, got = aten_table_index(op.attrs["target"]), op.attrs["table_index"]
    if got == want:
        return None
    where = f"position {want} of" if want >= 0 else "-1: it is not in"
    return (f"table_index {got} for {op.attrs['target']!r}, which is at {where} the C runtime's fp32 table "
            f"(csrc/kernels/fp32/aten_list.h)")
