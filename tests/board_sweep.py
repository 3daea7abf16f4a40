"""Many independent one-op cases in one program, run once on an emulated board.

Booting QEMU costs about a second, so the optimized kernels' randomized equality tests put every
case in one program: each case is an op with its own graph inputs and outputs, its tensor names
prefixed with the case name. One boot runs them all; each output is compared with the host
Python kernels (``mcuforge.runtime.execute``), which the portable C path equals bit for bit
(tests/test_c_kernels.py), and a failure names the case.

    sweep = BoardSweep()
    sweep.add("dw3x3_c17", "depthwise_conv2d_s8", inputs={"x": x_tensor_and_value}, ...)
    sweep.assert_same_on_board("cortex-m55")
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from mcuforge import cruntime, firmware
from mcuforge.ir import Graph, Op, Tensor
from mcuforge.plan import plan_arena
from mcuforge.program import deserialize, serialize
from mcuforge.runtime import execute


@dataclass
class BoardSweep:
    tensors: dict[str, Tensor] = field(default_factory=dict)
    ops: list[Op] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    values: list[np.ndarray] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    case_of_output: list[str] = field(default_factory=list)

    def add(self, case: str, kind: str, attrs: dict, inputs: Sequence[tuple[Tensor, np.ndarray]],
            outputs: Sequence[Tensor], constants: Sequence[Tensor] = (), op_inputs: Sequence[str] | None = None,
            backend: str = "int8") -> None:
        """One case: an op of ``kind`` over graph inputs (tensor, value), constants and outputs.
        ``op_inputs``: the op's input names in order ("" for an absent optional input); by default
        the inputs, then the constants."""
        if any(op.debug.get("case") == case for op in self.ops):
            raise ValueError(f"case {case!r} added twice")
        rename = {t.name: f"{case}.{t.name}" for t in [*(t for t, _ in inputs), *constants, *outputs]}
        for t in [*(t for t, _ in inputs), *constants, *outputs]:
            self.tensors[rename[t.name]] = replace(t, name=rename[t.name], offset=-1)
        for t, value in inputs:
            self.inputs.append(rename[t.name])
            self.values.append(np.asarray(value))
        for t in outputs:
            self.outputs.append(rename[t.name])
            self.case_of_output.append(case)
        names = op_inputs if op_inputs is not None else [t.name for t in [*(t for t, _ in inputs), *constants]]
        self.ops.append(Op(kind, [rename[n] if n else "" for n in names], [rename[t.name] for t in outputs],
                           dict(attrs), backend=backend, debug={"case": case}))

    def __len__(self) -> int:
        return len(self.ops)

    def program(self, target: str) -> bytes:
        graph = Graph(dict(self.tensors), list(self.ops), list(self.inputs), list(self.outputs), target=target)
        plan_arena(graph)
        return serialize(graph)

    def run(self, target: str) -> tuple[list[np.ndarray], list[np.ndarray], dict]:
        """(host Python outputs, board outputs, the board's facts)."""
        program = self.program(target)
        expected = execute(deserialize(program), self.values)
        got, _trace, facts = firmware.run_on_qemu(program, self.values, target)
        return expected, got, facts

    def assert_same_on_host_c(self) -> None:
        """Every case's output bytes from the C runtime built for the host equal the host kernels'."""
        program = self.program("cortex-m55")  # a host build runs any target's program, portable paths
        expected = execute(deserialize(program), self.values)
        got, _ = cruntime.run_program(program, self.values)
        self._assert_same("host C", expected, got)

    def assert_same_on_board(self, target: str) -> dict:
        """Every case's output bytes on the board of ``target`` equal the host kernels'; the
        assertion lists every case that differs. Returns the board's facts."""
        expected, got, facts = self.run(target)
        self._assert_same(target, expected, got)
        return facts

    def _assert_same(self, where: str, expected: list[np.ndarray], got: list[np.ndarray]) -> None:
        bad = []
        for case, e, g in zip(self.case_of_output, expected, got, strict=True):
            if e.dtype != g.dtype or e.shape != g.shape or e.tobytes() != g.tobytes():
                diff = int(np.count_nonzero(e.reshape(-1) != g.reshape(-1))) if e.shape == g.shape else -1
                bad.append(f"{case} ({diff} of {e.size} values differ)")
        assert not bad, f"{where}: {len(bad)} of {len(self.outputs)} outputs differ from the host: " + \
            "; ".join(bad[:20])
