"""The ``delegate`` op of the program format: a subgraph compiled for an NPU (Ethos-U, by Vela).

Inputs: ``input_count`` activations (the subgraph's inputs, in the NPU's input order), then the
constant blobs, int8 1-D: the command stream (Vela's "COP1" driver payload), the weights (the
read-only region, base pointer 0), and optionally the subgraph as a TOSA flatbuffer (run by the host
runtime through tosa-tools' reference model; the C runtime ignores it). Outputs: the subgraph's
outputs. ``scratch_bytes`` (op record) is Vela's scratch region (base pointer 1), in the program's
scratch area after the activations: the NPU's inputs and outputs live in it at ``input_offsets`` /
``output_offsets``. Both readers check all of this (:func:`delegate_problem`).
"""

from __future__ import annotations

from ..ir import Op, Tensor

BLOBS = ("command_stream", "weights", "tosa")


def delegate_problem(op: Op, tensors: dict[str, Tensor]) -> str | None:
    """Why a delegate op is malformed (None when it is well formed)."""
    a = op.attrs
    n_act = a.get("input_count")
    if not isinstance(n_act, int) or not 0 <= n_act <= len(op.inputs) - 2 or len(op.inputs) - n_act > len(BLOBS):
        return f"input_count {n_act!r} does not leave 2 or 3 blob inputs of {len(op.inputs)}"
    if not a.get("npu"):
        return "no NPU configuration named (attr 'npu')"
    for pos, name in enumerate(op.inputs):
        t = tensors[name]
        if pos < n_act:
            if t.is_constant:
                return f"input {pos} ({name!r}) is a constant; NPU inputs are activations"
        elif not (t.is_constant and t.dtype == "int8" and len(t.shape) == 1):
            return f"{BLOBS[pos - n_act]} blob {name!r} is not a constant 1-D int8 tensor"
    if len(a["input_offsets"]) != n_act or len(a["output_offsets"]) != len(op.outputs):
        return "input_offsets/output_offsets do not match the inputs/outputs"
    io = [(op.inputs[i], a["input_offsets"][i]) for i in range(n_act)]
    io += list(zip(op.outputs, a["output_offsets"], strict=True))
    for name, offset in io:
        if offset < 0 or offset + tensors[name].nbytes > op.scratch_bytes:
            return (f"tensor {name!r} at scratch offset {offset} + {tensors[name].nbytes} bytes is outside the "
                    f"{op.scratch_bytes}-byte NPU scratch region")
    if op.backend != "npu":
        return f"backend {op.backend!r}, expected 'npu'"
    return None
