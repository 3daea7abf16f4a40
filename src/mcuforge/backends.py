"""Where a program runs: the host Python runtime, the C runtime built for the host, or the
firmware on an emulated board. One entry point, ``run_backend``; each backend takes inputs and
gives outputs as the program stores them (program dtype and layout) with a leading run axis.

The delegate seam for later backends (an NPU) is this table.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from . import runtime
from .ir import Graph
from .trace.format import trace_mode

BACKENDS = ("python", "c", "qemu")


class Program(Protocol):
    """What a backend reads of a :class:`mcuforge.Program` (mcuforge.compiled, which runs through here, so this
    module names only the protocol and does not import it)."""

    graph: Graph

    @property
    def target(self) -> str: ...

    @property
    def input_shapes(self) -> tuple[tuple[int, ...], ...]: ...

    def to_bytes(self) -> bytes: ...


def _python(prog: Program, inputs: list[np.ndarray], runs: int, mode: str) -> tuple[list[np.ndarray], bytes | None]:
    if mode == "off":
        return runtime.execute(prog.graph, inputs, runs=runs), None
    from .trace import HostTraceRecorder

    recorder = HostTraceRecorder(prog.graph, prog.to_bytes(), full=mode == "full")
    per_run = [runtime.execute(prog.graph, [x[g] for x in inputs], recorder) for g in range(runs)]
    return [np.stack(outs) for outs in zip(*per_run, strict=True)], recorder.finish()


def _one_run_at_a_time(run_one: Any, prog: Program, inputs: list[np.ndarray], runs: int,
                       mode: str) -> tuple[list[np.ndarray], bytes | None]:
    if mode != "off" and runs > 1:
        raise ValueError("a trace from the C runtime or a board covers one run: give one sample "
                         f"(the compiled shapes {list(prog.input_shapes)})")
    program = prog.to_bytes()
    per_run, recorded = [], None
    for g in range(runs):
        outs, recorded = run_one(program, [x[g] for x in inputs], None if mode == "off" else mode)
        per_run.append(outs)
    return [np.stack(outs) for outs in zip(*per_run, strict=True)], recorded


def run_backend(prog: Program, inputs: list[np.ndarray], runs: int, *, backend: str = "python",
                target: str | None = None, trace: bool | str = False,
                measured: dict[str, Any] | None = None,
                board: dict[str, Any] | None = None) -> tuple[list[np.ndarray], Any]:
    """Run ``runs`` runs of ``prog``; returns the outputs (leading run axis) and the trace
    (a :class:`mcuforge.trace.Trace`, or None when tracing is off). ``measured``, if given, is
    filled with what a board measured on the last run (instructions, stack high-water, ...);
    ``board``: keyword options of :func:`mcuforge.firmware.run_on_qemu` (via, timer, progress), and ``cycles``,
    ``clock_mhz``, ``memory`` (:func:`mcuforge.cycles.run.cycle_probe`): with ``cycles`` the returned trace carries
    the estimate (``trace.cycles``)."""
    mode = trace_mode(trace)
    estimate: list[Any] = [None]
    if board and backend != "qemu":
        raise ValueError("board= options are for backend='qemu'")
    if backend == "python":
        if target is not None and target != prog.target:
            raise ValueError("target= selects a board for backend='qemu'; the host runtimes run any target")
        outputs, recorded = _python(prog, inputs, runs, mode)
    elif backend == "c":
        from . import cruntime

        def run_c(program: bytes, xs: list[np.ndarray], how: str | None) -> tuple[list[np.ndarray], bytes | None]:
            return cruntime.run_program(program, xs, trace=how or False)
        outputs, recorded = _one_run_at_a_time(run_c, prog, inputs, runs, mode)
    elif backend == "qemu":
        from . import firmware

        board_target = target or prog.target
        firmware.check_board_target(prog.target, board_target)

        options = dict(board or {})
        cycles = options.pop("cycles", False)
        clock_mhz, memory = options.pop("clock_mhz", None), options.pop("memory", None)
        if cycles:  # the timing model runs as the board run's probe (firmware does not import mcuforge.cycles)
            from .cycles.run import cycle_probe

            options["probe"] = cycle_probe(cycles, clock_mhz, memory)

        def run_qemu(program: bytes, xs: list[np.ndarray], how: str | None) -> tuple[list[np.ndarray], bytes | None]:
            outs, recorded, facts = firmware.run_on_qemu(program, xs, board_target, trace=how or False,
                                                         graph=prog.graph, **options)  # not parsed again
            estimate[0] = facts.get("cycles")
            if measured is not None:
                measured.update(facts)
            return outs, recorded

        outputs, recorded = _one_run_at_a_time(run_qemu, prog, inputs, runs, mode)
    else:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if recorded is None:
        return outputs, None
    from .trace import Trace

    parsed = Trace.from_bytes(recorded)
    if backend == "qemu" and estimate[0] is not None:
        parsed.cycles = estimate[0]  # estimated cycles per op: the Inspector's est_cycles column
    return outputs, parsed
