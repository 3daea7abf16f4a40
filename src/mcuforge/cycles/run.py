"""The glue between the plugin and mcuforge's firmware: which functions mark the segments, and the
estimate of one run (the whole inference, and each op of a traced one).

Segments of the test firmware (csrc/firmware/main.c, runtime/executor.c): ``mf_invoke``'s entry
starts the inference; ``mf_icount_now`` is last called by main right after ``mf_invoke`` returns, so
the inference is everything from the ``mf_invoke`` mark up to the last ``mf_icount_now`` mark. A
traced run reads the trace's clock (``mf_timer_now``) once at RUN_START, then before and after each
op, then at RUN_END: op i is the span from its clock read 1 + 2i to read 2 + 2i, the very span the
trace's own OP_START/OP_END times cover.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import get_core
from .estimate import MODEL_NOTE, Span, block_costs, by_function, span
from .isa import symbols
from .model import ZERO_WAIT, Memory
from .plugin import Counts, PluginError, Segment, parse, qemu_args

INVOKE = "mf_invoke"
CLOCK = "mf_icount_now"
TRACE_CLOCK = "mf_timer_now"
SIDECAR = ".cycles.json"  # a trace file's estimate sits beside it as <trace>.cycles.json


@dataclass
class CycleEstimate:
    """Estimated cycles of one inference on ``core`` (an estimate, not a measurement)."""

    target: str  # the board the instructions ran on
    core: str  # the timing model
    clock_hz: float
    cycles: float  # the whole mf_invoke
    instructions: int  # the whole mf_invoke, as the plugin counted them
    op_cycles: list[float] | None = None  # per op index (traced runs)
    op_instructions: list[int] | None = None
    taken_branches: int = 0
    mix: dict[str, int] = field(default_factory=dict)  # instruction class -> executions in mf_invoke
    functions: dict[str, float] = field(default_factory=dict)  # firmware function -> cycles in mf_invoke
    memory: Memory = ZERO_WAIT
    note: str = MODEL_NOTE

    @property
    def ms(self) -> float:
        return self.cycles * 1e3 / self.clock_hz

    def op_ms(self) -> list[float] | None:
        return None if self.op_cycles is None else [c * 1e3 / self.clock_hz for c in self.op_cycles]

    def summary(self) -> str:
        """One line for the CLI."""
        return (f"estimated {self.cycles:,.0f} cycles per inference = {self.ms:.3f} ms at "
                f"{self.clock_hz / 1e6:g} MHz ({self.core} timing model, an estimate; "
                f"{self.cycles / max(self.instructions, 1):.2f} cycles per instruction)")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CycleEstimate:
        """The inverse of :meth:`to_dict` (a trace's ``.cycles.json`` sidecar)."""
        return cls(target=data["target"], core=data["core"], clock_hz=float(data["clock_hz"]),
                   cycles=float(data["cycles"]), instructions=int(data["instructions"]),
                   op_cycles=data.get("op_cycles"), op_instructions=data.get("op_instructions"),
                   taken_branches=int(data.get("taken_branches", 0)), mix=dict(data.get("mix", {})),
                   functions=dict(data.get("functions", {})),
                   memory=Memory(int(data.get("fetch_wait_states", 0)), int(data.get("load_wait_states", 0))),
                   note=data.get("note", MODEL_NOTE))

    def save(self, path: str | Path) -> Path:
        """Write it as JSON (``mcuforge run --trace FILE`` keeps it beside the trace as FILE.cycles.json)."""
        import json

        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=1))
        return path

    @classmethod
    def load(cls, path: str | Path) -> CycleEstimate:
        import json

        return cls.from_dict(json.loads(Path(path).read_text()))

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "core": self.core, "clock_hz": self.clock_hz, "cycles": self.cycles,
                "ms": self.ms, "instructions": self.instructions, "op_cycles": self.op_cycles,
                "op_instructions": self.op_instructions, "taken_branches": self.taken_branches,
                "mix": dict(self.mix), "functions": dict(self.functions),
                "fetch_wait_states": self.memory.fetch_wait_states, "load_wait_states": self.memory.load_wait_states,
                "note": self.note}


def marks(elf: str | Path, traced: bool) -> list[int]:
    """The function addresses that start segments in the test firmware."""
    table = symbols(elf)
    names = [INVOKE, CLOCK] + ([TRACE_CLOCK] if traced else [])
    missing = [n for n in names if n not in table]
    if missing:
        raise PluginError(f"{elf} has no {', '.join(missing)}: cannot segment its run")
    return [table[n] for n in names]


def _spans(counts: Counts, elf: str | Path, traced: bool, op_count: int
           ) -> tuple[list[Segment], list[list[Segment]] | None]:
    """(the inference's segments, each op's segments or None)."""
    table = symbols(elf)
    invoke_at, clock_at = table[INVOKE], table[CLOCK]
    segs = counts.segments
    starts = [i for i, s in enumerate(segs) if s.mark == invoke_at]
    ends = [i for i, s in enumerate(segs) if s.mark == clock_at]
    if len(starts) != 1 or not ends or ends[-1] <= starts[0]:
        raise PluginError(f"the run has {len(starts)} mf_invoke marks and no mf_icount_now after it: "
                          f"not one inference of the test firmware")
    invoke = segs[starts[0]:ends[-1]]
    if not traced:
        return invoke, None
    clock_reads = [starts[0] + i for i, s in enumerate(invoke) if s.mark == table[TRACE_CLOCK]]
    if len(clock_reads) < 2 * op_count + 2:
        raise PluginError(f"a traced run of {op_count} ops read the trace clock {len(clock_reads)} times, "
                          f"expected {2 * op_count + 2}")
    ops = [segs[clock_reads[1 + 2 * i]:clock_reads[2 + 2 * i]] for i in range(op_count)]
    return invoke, ops


def estimate_run(counts: Counts, elf: str | Path, target: str, *, op_count: int = 0, traced: bool = False,
                 core: str | None = None, memory: Memory = ZERO_WAIT, clock_hz: float | None = None
                 ) -> CycleEstimate:
    """The estimate of one firmware run from the plugin's counts: the inference, and each op when
    ``traced``. ``core``: the timing model (the board's core by default); ``clock_hz``: the clock
    that turns cycles into milliseconds (the board's by default)."""
    from ..firmware.boards import get_board

    model = get_core(core or target)
    costs = block_costs(counts, elf, target, model, memory)
    invoke, ops = _spans(counts, elf, traced, op_count)
    total = span(invoke, costs, mix=True)
    per_op: list[Span] | None = [span(o, costs) for o in ops] if ops is not None else None
    return CycleEstimate(
        target=target, core=model.name, clock_hz=float(clock_hz or get_board(target).clock_hz),
        cycles=total.cycles, instructions=total.instructions,
        op_cycles=None if per_op is None else [s.cycles for s in per_op],
        op_instructions=None if per_op is None else [s.instructions for s in per_op],
        taken_branches=total.taken_branches, mix=dict(total.mix), memory=memory,
        functions=by_function(invoke, costs, counts.blocks, elf))


def estimate_between(counts: Counts, elf: str | Path, target: str, start: Sequence[int], core: str | None = None,
                     memory: Memory = ZERO_WAIT) -> list[Span]:
    """For any ELF run with marks (e.g. a harness that calls a marker function before each case):
    the span of each segment whose mark is in ``start``, up to the next mark of any kind."""
    model = get_core(core or target)
    costs = block_costs(counts, elf, target, model, memory)
    wanted = {a & ~1 for a in start}
    return [span([s], costs) for s in counts.segments if s.mark in wanted]


def timed_calls(counts: Counts, elf: str | Path, target: str, marker: str = CLOCK, core: str | None = None,
                memory: Memory = ZERO_WAIT) -> list[Span]:
    """The estimate of each call timed between two reads of a clock function (``marker``, called before
    and after each call: e.g. the CMSIS-NN comparison firmware, mcuforge.cmsis_nn's c/board/main.c,
    reads ``mf_icount_now`` around each case): one span per pair of reads, from the first read to the
    second. Run the ELF with ``plugin.qemu_args(out, [symbols(elf)[marker]])``."""
    address = symbols(elf).get(marker)
    if address is None:
        raise PluginError(f"{elf} has no {marker}: cannot segment its run")
    model = get_core(core or target)
    costs = block_costs(counts, elf, target, model, memory)
    reads = [s for s in counts.segments if s.mark == address]
    return [span([s], costs) for s in reads[0::2]]


@dataclass(frozen=True)
class CycleProbe:
    """The probe of :func:`mcuforge.firmware.run_on_qemu` that ESTIMATES the run's cycles: QEMU runs with the
    counting plugin (a host-gcc build on first use) and facts["cycles"] is the :class:`CycleEstimate` (the
    inference, and each op when tracing). ``core``: another core's timing model (the board's by default);
    ``clock_hz``: the clock of the milliseconds (the board's by default); ``memory``: wait states."""

    core: str | None = None
    memory: Memory = ZERO_WAIT
    clock_hz: float | None = None
    key: str = "cycles"

    def qemu_args(self, folder: Path, elf: Path, traced: bool) -> list[str]:
        return qemu_args(folder / "cycles.txt", marks(elf, traced))

    def finish(self, folder: Path, elf: Path, target: str, op_count: int, traced: bool) -> CycleEstimate:
        return estimate_run(parse(folder / "cycles.txt"), elf, target, op_count=op_count, traced=traced,
                            core=self.core, memory=self.memory, clock_hz=self.clock_hz)


def cycle_probe(cycles: bool | str, clock_mhz: float | None = None, memory: Memory | None = None) -> CycleProbe:
    """The probe of ``board={"cycles": ..., "clock_mhz": ..., "memory": ...}``: ``cycles`` True for the board's
    core, or the name of another core's timing model; milliseconds at ``clock_mhz`` (the board's clock by
    default); ``memory``: a :class:`mcuforge.cycles.Memory` (wait states; zero by default)."""
    return CycleProbe(core=cycles if isinstance(cycles, str) else None, memory=memory or Memory(),
                      clock_hz=clock_mhz * 1e6 if clock_mhz else None)
