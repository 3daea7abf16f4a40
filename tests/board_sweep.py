"""Many independent one-op cases in one program, run once on an emulated board.

Booting QEMU costs about a second, so the optimized kernels' randomized equality tests put every
case in one program: each case is an op with its own graph inputs and outputs, its tensor names
prefixed with the case name. One boot runs them all; each output is compared with the host
Python kernels (``mcuforge.runtime.execute``), which the portable C path equals bit for bit
(tests/test_c_kernels.py), and a failure names the case.

    sweep = BoardSweep()
    sweep.add("dw3x3_c17", "depthwise_conv2d_s8", inputs={"x": x_tensor_and_value}, ...)
    sweep.assert_same_on_board("cortex-m55")

``assert_same_on_host_c`` runs the same program with the host C runtime built with other flags (the
optimized scalar paths, which only cortex-m3 compiles by default), also under ASan and UBSan.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from mcuforge import cruntime, firmware
from mcuforge.ir import Graph, Op, Tensor, kernel_scratch_bytes
from mcuforge.plan import plan_arena
from mcuforge.program import deserialize, serialize
from mcuforge.runtime import execute
from mcuforge.targets import get_target

#: Host build flags of the optimized scalar kernel paths (cortex-m3's, csrc/kernels/mf_scalar.h).
SCALAR_FAST = ("-DMF_SCALAR_FAST=1",)


@dataclass
class BoardSweep:
    tensors: dict[str, Tensor] = field(default_factory=dict)
    ops: list[Op] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    values: list[np.ndarray] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    case_of_output: list[str] = field(default_factory=list)
    overlaps: dict[str, tuple[str, int]] = field(default_factory=dict)  # Graph.overlaps of the added graphs

    def add(self, case: str, kind: str, attrs: dict, inputs: Sequence[tuple[Tensor, np.ndarray]],
            outputs: Sequence[Tensor], constants: Sequence[Tensor] = (), op_inputs: Sequence[str] | None = None,
            backend: str = "int8", scratch: bool | int | dict[str, int] = True) -> None:
        """One case: an op of ``kind`` over graph inputs (tensor, value), constants and outputs.
        ``op_inputs``: the op's input names in order ("" for an absent optional input); by default
        the inputs, then the constants. ``scratch=False``: the op asks no scratch (its kernel then
        runs the portable path); an int: those bytes on every target (a plan other than the target's); a
        dict: those bytes on the targets of a kernel path it names ("dsp": ...), the target's plan elsewhere."""
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
                           dict(attrs), backend=backend, scratch_bytes=0 if isinstance(scratch, bool) else scratch,
                           debug={"case": case, "scratch": scratch if isinstance(scratch, bool | dict) else "keep"}))

    def add_graph(self, case: str, graph: Graph, values: Sequence[np.ndarray], keep_scratch: bool = False) -> None:
        """A whole program as one case (its ops in order, its tensors prefixed with the case name): patch
        programs (tests/test_patches.py). Its ops ask the scratch of ``program``'s target, as :meth:`add`'s, or
        with ``keep_scratch`` their own (with the planner's in-place marks: in-place depthwise). An input placed
        over a patched chain's output (``Graph.overlaps``) keeps its place (the proof holds op by op)."""
        if any(op.debug.get("case") == case for op in self.ops):
            raise ValueError(f"case {case!r} added twice")

        def rename(n: str) -> str:
            return f"{case}.{n}" if n else ""

        for t in graph.tensors.values():
            self.tensors[rename(t.name)] = replace(t, name=rename(t.name), offset=-1)
        self.inputs += [rename(n) for n in graph.inputs]
        self.values += [np.asarray(v) for v in values]
        self.outputs += [rename(n) for n in graph.outputs]
        self.case_of_output += [case] * len(graph.outputs)
        self.overlaps.update({rename(x): (rename(t), d) for x, (t, d) in graph.overlaps.items()})
        for op in graph.ops:
            self.ops.append(Op(op.kind, [rename(n) for n in op.inputs], [rename(n) for n in op.outputs],
                               dict(op.attrs), backend=op.backend, precision=op.precision, in_place=op.in_place,
                               scratch_bytes=op.scratch_bytes,
                               debug={"case": case, "scratch": "keep" if keep_scratch else True}))

    def __len__(self) -> int:
        return len(self.ops)

    def program(self, target: str) -> bytes:
        """The program of every case for ``target``: each op asks the scratch its kernel's optimized path
        on that target uses (``kernel_scratch_bytes``), but for cases added with ``scratch=False``."""
        ops = []
        for op in self.ops:
            scratch = op.scratch_bytes if op.debug["scratch"] == "keep" else 0
            asked = op.debug["scratch"]
            if isinstance(asked, dict) and get_target(target).kernel_path in asked:
                scratch = asked[get_target(target).kernel_path]
            elif asked is True or isinstance(asked, dict):
                weight = self.tensors[op.inputs[1]].shape if len(op.inputs) > 1 and op.inputs[1] else ()
                scratch = kernel_scratch_bytes(op.kind, weight, target, self.tensors[op.outputs[0]].shape, op.attrs)
            ops.append(replace(op, scratch_bytes=scratch))
        graph = Graph(dict(self.tensors), ops, list(self.inputs), list(self.outputs), target=target,
                      overlaps=dict(self.overlaps))
        plan_arena(graph)
        return serialize(graph)

    def run(self, target: str) -> tuple[list[np.ndarray], list[np.ndarray], dict]:
        """(host Python outputs, board outputs, the board's facts)."""
        program = self.program(target)
        graph = deserialize(program)
        expected = execute(graph, self.values)
        got, _trace, facts = firmware.run_on_qemu(program, self.values, target, graph=graph)
        return expected, got, facts

    def _assert_same(self, where: str, expected: list[np.ndarray], got: list[np.ndarray]) -> None:
        bad = []
        for case, e, g in zip(self.case_of_output, expected, got, strict=True):
            if e.dtype != g.dtype or e.shape != g.shape or e.tobytes() != g.tobytes():
                diff = int(np.count_nonzero(e.reshape(-1) != g.reshape(-1))) if e.shape == g.shape else -1
                bad.append(f"{case} ({diff} of {e.size} values differ)")
        assert not bad, f"{where}: {len(bad)} of {len(self.outputs)} outputs differ from the host: " + \
            "; ".join(bad[:20])

    def assert_same_on_host_c(self, target: str, flags: tuple[str, ...] = SCALAR_FAST, *,
                              sanitize_dir: Path | None = None) -> None:
        """The same check with the program for ``target`` on the host C runtime built with ``flags``
        (by default the optimized scalar paths, which the plain host build leaves out): through ctypes,
        and, given ``sanitize_dir`` (a scratch folder), also through the mf_run driver built with
        AddressSanitizer and UBSan."""
        program = self.program(target)
        expected = execute(deserialize(program), self.values)
        lib = cruntime.load_library(trace=False, extra_flags=flags)
        got, _ = cruntime.LoadedProgram(program, lib=lib).run(self.values)
        self._assert_same(f"host C {' '.join(flags)}", expected, got)
        if sanitize_dir is None:
            return
        driver = cruntime.build("driver", trace=False, sanitize=True, extra_flags=flags)
        (sanitize_dir / "p.bin").write_bytes(program)
        inputs = []
        for i, v in enumerate(self.values):
            inputs.append(sanitize_dir / f"in{i}.bin")
            inputs[-1].write_bytes(np.ascontiguousarray(v).tobytes())
        command = [str(driver), str(sanitize_dir / "p.bin"), str(sanitize_dir / "out.bin"), *map(str, inputs)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"mf_run under ASan/UBSan {' '.join(flags)}:\n{done.stderr[-3000:]}"
        data, got = (sanitize_dir / "out.bin").read_bytes(), []
        for e in expected:
            got.append(np.frombuffer(data[:e.nbytes], e.dtype).reshape(e.shape))
            data = data[e.nbytes:]
        self._assert_same(f"host C under sanitizers {' '.join(flags)}", expected, got)

    def assert_same_on_board(self, target: str) -> dict:
        """Every case's output bytes on the board of ``target`` equal the host kernels'; the
        assertion lists every case that differs. Returns the board's facts."""
        expected, got, facts = self.run(target)
        self._assert_same(target, expected, got)
        return facts
