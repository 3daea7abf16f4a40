"""Checks of one op's record beyond the byte layout, made by the writer and the reader alike (so a
graph the writer accepts always loads): each returns why the op cannot be stored or used, or None."""

from __future__ import annotations

import numpy as np

from mcuforge.ir import INT4_WEIGHT_KINDS, OP_KINDS, RECURRENT_GATES, Op, Tensor
from mcuforge.kernels.lstm import CELL_SCALE_POWER_MAX, CELL_SCALE_POWER_MIN
from mcuforge.kernels.registry import shape_problem
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


def compact_params_problem(op: Op, tensors: dict[str, Tensor]) -> str | None:
    """Why the bias or multipliers of ``op`` cannot be stored, or None: int16 ones (the compact per-channel
    parameters, format 3.0: kernels/int4.py) only for the s4 kinds, which take them or int32 ones; int16
    multipliers (the 16 high bits of Q31 ones) constants in [0, 32767], as the C loader checks them."""
    spec = OP_KINDS[op.kind]["inputs"]
    if "multipliers" not in spec:
        return None
    for slot in ("bias?", "multipliers"):
        pos = spec.index(slot) if slot in spec else len(op.inputs)
        name = op.inputs[pos] if pos < len(op.inputs) else ""
        if not name or tensors[name].dtype != "int16":
            continue
        what = slot.rstrip("?")
        if op.kind not in INT4_WEIGHT_KINDS:
            return f"{what} {name!r} is int16, which only the s4 kinds ({', '.join(INT4_WEIGHT_KINDS)}) may store"
        t = tensors[name]
        if what == "multipliers" and not t.is_constant:  # the C loader checks their values once, at load
            return f"16-bit multipliers {name!r} must be a constant"
        if what == "multipliers" and t.numel and int(np.asarray(t.data).min()) < 0:
            return f"16-bit multipliers {name!r} hold a negative value ({int(np.asarray(t.data).min())})"
    return None


def aten_index_problem(op: Op) -> str | None:
    """Why an ``aten_fp32`` op's ``table_index`` (its position in the C runtime's fp32 table, by which
    the runtime dispatches it) cannot be stored, or None: it is the position of its ``target`` in
    the table, or -1 for an aten op the table does not have (which no C runtime then runs)."""
    if op.kind != "aten_fp32":
        return None
    from mcuforge.aten_table import aten_table_index

    want, got = aten_table_index(op.attrs["target"]), op.attrs["table_index"]
    if got == want:
        return None
    where = f"position {want} of" if want >= 0 else "-1: it is not in"
    return (f"table_index {got} for {op.attrs['target']!r}, which is at {where} the C runtime's fp32 table "
            f"(csrc/kernels/fp32/aten_list.h)")


def kernel_shape_problem(op: Op, tensors: dict[str, Tensor]) -> str | None:
    """Why ``op`` cannot run, by the ``shapes`` check its Python kernel registered (mcuforge.kernels.registry:
    the checks of its C kernel's load-time check), or None (also for a kind without one)."""
    names = [*op.inputs, *op.outputs]
    if not all(n in tensors for n in names):
        return None  # the readers name a missing tensor themselves
    return shape_problem(op.kind, op.attrs, [tensors[n] for n in op.inputs], [tensors[n] for n in op.outputs])


def fill_problem(op: Op) -> str | None:
    """Why an ``insert_tile``'s ``fill`` (optional, 1) is not 0 or 1 (0: the planner's output over the graph
    input's dead bytes, only the tile is written; the C kernel's check refuses the same), or None."""
    if op.kind != "insert_tile" or op.attrs.get("fill", 1) in (0, 1):
        return None
    return f"insert_tile fill {op.attrs['fill']!r} is neither 0 (write the tile only) nor 1 (zeros around it)"


def outside_problem(op: Op) -> str | None:
    """Why a ``slice``'s ``outside`` (optional, 0) is not 0 or 1 (1: its output lies over its input's bytes
    outside the box, which ``ir.arena_overlap_problem`` then checks; the C kernel's check refuses the same), or
    None."""
    if op.kind != "slice" or op.attrs.get("outside", 0) in (0, 1):
        return None
    return f"slice outside {op.attrs['outside']!r} is neither 0 nor 1 (its output over its input outside the box)"


MINMAX_KINDS = ("maximum_s8", "minimum_s8")


def minmax_problem(op: Op, tensors: dict[str, Tensor]) -> str | None:
    """Why a maximum_s8 / minimum_s8 op cannot be stored or run, or None: the checks of its C kernel's
    load-time check (csrc/kernels/minmax_s8.c): two int8 inputs of rank <= 4 (CMSIS-NN's N, H, W, C dims)
    that broadcast (numpy rules) to exactly the int8 output's shape."""
    if op.kind not in MINMAX_KINDS:
        return None
    names = [*op.inputs, *op.outputs]
    if len(op.inputs) != 2 or len(op.outputs) != 1 or not all(n in tensors for n in names):
        return f"{op.kind} takes two inputs and one output"
    a, b, out = (tensors[n] for n in names)
    if any(t.dtype != "int8" or len(t.shape) > 4 for t in (a, b, out)):
        return f"{op.kind}: inputs and output must be int8 of rank <= 4 (CMSIS-NN's N, H, W, C)"
    try:
        shape = np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    except ValueError:
        shape = None
    if shape != tuple(out.shape):
        return (f"{op.kind}: inputs {tuple(a.shape)} and {tuple(b.shape)} do not broadcast to the output "
                f"{tuple(out.shape)}")
    return None


def recurrent_problem(op: Op, tensors: dict[str, Tensor]) -> str | None:
    """Why an lstm_s8 / gru_s8 op cannot be stored or run, or None: the checks of its C kernel's load-time
    check (csrc/kernels/recurrent_s8.c), so that a graph the writer accepts always loads."""
    if op.kind not in RECURRENT_GATES:
        return None
    kind, gates = op.kind, RECURRENT_GATES[op.kind]
    if len(op.inputs) != 5 or len(op.outputs) != 1 or not all(n in tensors for n in [*op.inputs, *op.outputs]):
        return f"{kind} takes x, w_ih, w_hh, input_bias, hidden_bias and one output"
    x, w_ih, w_hh, b_ih, b_hh = (tensors[n] for n in op.inputs)
    out = tensors[op.outputs[0]]
    ranks = [(x, "int8", 3), (w_ih, "int8", 2), (w_hh, "int8", 2), (b_ih, "int32", 1), (b_hh, "int32", 1),
             (out, "int8", 3)]
    if any(t.dtype != dtype or len(t.shape) != rank for t, dtype, rank in ranks):
        return f"{kind}: x, weights and output must be int8 of rank 3, 2, 2, 3; the biases int32 of rank 1"
    hidden = w_hh.shape[1]
    if (hidden == 0 or w_hh.shape[0] != gates * hidden or w_ih.shape != (gates * hidden, x.shape[2])
            or b_ih.shape != (gates * hidden,) or b_hh.shape != (gates * hidden,)
            or out.shape != (*x.shape[:2], hidden)):
        return (f"{kind}: shapes x {x.shape}, w_ih {w_ih.shape}, w_hh {w_hh.shape}, biases {b_ih.shape} "
                f"{b_hh.shape}, output {out.shape} do not make one layer of hidden size {hidden}")
    a = op.attrs
    lo, hi = SHIFT_RANGE
    for name in ("input_shifts", "hidden_shifts", "input_multipliers", "hidden_multipliers"):
        if len(a[name]) != gates:
            return f"{kind}: {name} must hold {gates} values (one per gate), got {len(a[name])}"
    shifts = [*a["input_shifts"], *a["hidden_shifts"], a["output_shift"],
              *(a[n] for n in ("forget_to_cell_shift", "input_to_cell_shift") if n in a)]
    if any(not lo <= s <= hi for s in shifts):
        return f"{kind}: every shift must be in [{lo}, {hi}], got {shifts}"
    ranges = {"output_offset": (-128, 127), "cell_scale_power": (CELL_SCALE_POWER_MIN, CELL_SCALE_POWER_MAX),
              "cell_clip": (1, 32767)}
    for name, (vlo, vhi) in ranges.items():
        if name in a and not vlo <= a[name] <= vhi:
            return f"{kind}: {name} must be in [{vlo}, {vhi}], got {a[name]}"
    return None
