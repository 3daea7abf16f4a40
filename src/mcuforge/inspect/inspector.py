"""The Inspector: a program's debug record joined with a trace of it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from torch import nn

from ..trace import Trace, program_crc
from . import chrome, frames, gaps, numeric, timebase

if TYPE_CHECKING:
    from ..compiled import Program


class TraceMismatchError(ValueError):
    """A trace or debug record belongs to another program (its program CRC differs)."""


class Inspector:
    """Per-op tables, totals, numeric gap, Chrome trace and HTML report of one traced program.

    A trace cut short or damaged keeps what was intact: ``truncated`` is then set, its gaps are
    listed (``gaps()``), every op row says how many gaps its run has (``run_gaps``), and every
    output says so (``df.attrs``, the HTML banner, the CLI). ``clock_hz``: the core's clock, which
    turns a cycle trace's counts into milliseconds (the ``ms`` column).
    """

    def __init__(self, program: Program, trace: Trace, clock_hz: float | None = None) -> None:
        data = program.to_bytes()
        crc = program_crc(data)
        if trace.program_crc != crc:
            raise TraceMismatchError(f"the trace was recorded from program 0x{trace.program_crc:08x}, "
                                     f"not this program (0x{crc:08x})")
        timebase.ms_per_count(trace.unit, clock_hz)  # refuses a clock for an instruction count
        self.program = program
        self.trace = trace
        self.clock_hz = clock_hz
        self.record = program.debug_record(data)
        self.gap: pd.DataFrame | None = None  # the last numeric gap, shown by the HTML report

    @classmethod
    def load(cls, program_path: str | Path, trace_path: str | Path, clock_hz: float | None = None) -> Inspector:
        """The program file, its debug record (``<program>.dbg.json``) and a trace file (with its
        estimated cycles when ``<trace>.cycles.json`` is beside it)."""
        from ..compiled import DEBUG_SUFFIX, load

        program = load(program_path)
        debug_path = Path(str(program_path) + DEBUG_SUFFIX)
        if debug_path.exists():
            stored = json.loads(debug_path.read_text()).get("program_crc32")
            crc = program_crc(program.to_bytes())
            if stored is not None and stored != crc:
                raise TraceMismatchError(f"{debug_path} belongs to program 0x{stored:08x}, not {program_path} "
                                         f"(0x{crc:08x})")
        trace = Trace.load(trace_path)
        from ..cycles.run import SIDECAR, CycleEstimate

        sidecar = Path(str(trace_path) + SIDECAR)
        if sidecar.is_file():  # estimated cycles saved beside the trace by `mcuforge run --trace`
            trace.cycles = CycleEstimate.load(sidecar)
        return cls(program, trace, clock_hz)

    # -- state of the trace ----------------------------------------------------------------------------
    @property
    def truncated(self) -> bool:
        return self.trace.truncated

    @property
    def truncation_reason(self) -> str:
        return self.trace.truncation_reason

    @property
    def unit(self) -> str:
        return self.trace.unit

    # -- tables ------------------------------------------------------------------------------------------
    def to_dataframe(self) -> pd.DataFrame:
        """One row per executed op per run (see :data:`frames.OP_COLUMNS`); ``attrs`` says whether
        the trace was truncated."""
        if any(op.kind == "delegate" for op in self.program.graph.ops):  # prog.ops expands NPU subgraphs
            from ..records import graph_op_macs

            macs = dict(enumerate(graph_op_macs(self.program.graph)))
        else:
            macs = {op.index: op.macs for op in self.program.ops}
        df = gaps.mark_runs(frames.op_frame(self.record, self.trace, macs), self.trace)
        return timebase.add_milliseconds(df, self.trace.unit, self.clock_hz)

    def gaps(self) -> pd.DataFrame:
        """Where records were lost: one row per gap (byte offset, bytes skipped, records lost, run)."""
        return gaps.gap_frame(self.trace)

    def runs(self) -> pd.DataFrame:
        """One row per run: times, status, gaps, ops read."""
        return gaps.run_frame(self.trace)

    def totals(self, by: str = "module", depth: int | None = None) -> pd.DataFrame:
        """Time per module (path prefix of ``depth`` parts; all parts by default), per "kind", per
        "backend" or per "precision", in program order."""
        return frames.totals(self.to_dataframe(), by, depth)

    # -- numeric gap -------------------------------------------------------------------------------------
    def numeric_gap(self, model: nn.Module, inputs: Sequence[Any]) -> pd.DataFrame:
        """Run the program on ``inputs`` (one run, full trace) and the fp32 ``model``; one row per
        layer (module), in program order: SQNR (dB), MSE and max abs error of its dequantized output,
        its worst and median channel SQNR, and the same SQNRs in isolation (the layer's kernel fed the
        quantized fp32 input: the error it adds by itself); see :mod:`mcuforge.inspect.numeric`."""
        inputs = tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)
        _outputs, full = self.program.run(*inputs, trace="full")
        fp32 = numeric.float_values(model, inputs, set(numeric.reference_nodes(self.program.graph).values()))
        baseline = numeric.input_sqnr(self._input_infos(), inputs)
        prepared, _runs, single = self.program._program_inputs(inputs)
        isolated = numeric.isolated_outputs(self.program.graph, prepared, fp32) if single else None
        gap = numeric.numeric_gap(self.record, full, fp32, baseline, isolated)
        gap.attrs.update(frames.trace_attrs(self.trace))
        self.gap = gap
        return gap

    def _input_infos(self) -> list[dict[str, Any]]:
        from ..trace import tensor_info

        g = self.program.graph
        index_of = {name: i for i, name in enumerate(g.tensors)}
        return [tensor_info(g, name, index_of[name]) for name in g.inputs]

    def worst_layer(self, model: nn.Module | None = None, inputs: Sequence[Any] | None = None,
                    by: str = "isolated") -> str:
        """Module path of the layer that hurts most: by default the one whose error in isolation, per
        channel aware, is largest (``by="drop"``: the largest drop of whole-tensor SQNR along the
        program); computes the numeric gap unless one was computed already and no model is given."""
        if model is not None:
            gap = self.numeric_gap(model, inputs)
        elif self.gap is not None:
            gap = self.gap
        else:
            raise ValueError("worst_layer needs the fp32 model and inputs (or a numeric_gap computed before)")
        return numeric.worst_layer(gap, by)

    # -- files -------------------------------------------------------------------------------------------
    def to_chrome_trace(self, path: str | Path) -> Path:
        """Chrome trace JSON (open in Perfetto or chrome://tracing)."""
        return chrome.write_chrome_trace(self.to_dataframe(), self.trace, path)

    def to_html(self, path: str | Path, title: str | None = None) -> Path:
        """A self-contained HTML report: plots, totals, the op table, the numeric gap if computed."""
        from . import report  # matplotlib is loaded only when a report is written
        df = self.to_dataframe()
        title = title or f"mcuforge trace report: {self.program.meta.get('model', 'program')}"
        return report.write_html(path, title, self.trace, df, frames.totals(df, "module"),
                                 frames.totals(df, "kind"), self.gap, npu=_npu_table(self.program),
                                 memory=self.program.patch_plan.summary() if self.program.meta.get("patch_plan")
                                 else None, regions=self.program.graph.regions)


def _npu_table(program: Program) -> pd.DataFrame | None:
    """Which ops ran on the NPU: one row per op of each delegated subgraph (None without NPU)."""
    if not any(op.kind == "delegate" for op in program.graph.ops):
        return None
    from ..ethosu.program import npu_op_frame

    return npu_op_frame(program)
