"""Reading a trace stream: :class:`Trace` holds every intact record's meaning and reports what was lost.

Framing (:mod:`.framing`) splits the bytes into intact records and damaged stretches; after damage it
resynchronizes on the next intact record, so one bad byte costs the records it touched. Each place
where records are missing is a :class:`Gap`: its byte offset, the bytes skipped and the records lost
(counted with the records' sequence bytes, format 1.1), or a DROPPED record of a device whose sink
had no room. The record grammar (runs hold ops, ops hold tensor dumps) then rebuilds runs and op
events from what is left, and never reports one it cannot be sure of: an op needs its OP_START and
OP_END in the same run, and after a gap an op is given to a run only when the records lost there
cannot have held a run boundary (docs/trace.md, "Reading"). A stream cut short is ``truncated``.
Only a stream that does not begin with a valid STREAM_START is an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..program.layout import DTYPE_BY_CODE
from . import format as F
from .framing import Damage, Record, scan


def gap_count_is_exact(lost: int, skipped: int) -> bool:
    """A gap's lost-record count comes from sequence bytes, modulo 256. 256 more lost records would
    have taken at least 16 bytes each, and their bytes were either skipped here or dropped by the
    line: the count is exact unless the line dropped as many bytes as it garbled in the stretch."""
    return 2 * skipped < (lost + 256) * F.SMALLEST_RECORD


class TraceFormatError(ValueError):
    """The bytes are not a trace stream (no valid STREAM_START) or of an unsupported version."""


@dataclass(frozen=True)
class Run:
    index: int
    start: int | None  # None: its RUN_START was lost in a gap
    end: int | None = None  # None: the stream stopped, or its RUN_END was lost
    status: int | None = None  # 0 ok, else the runtime's error code
    gaps: int = 0  # gaps inside it (records missing: damaged bytes or a device's drops)

    @property
    def complete(self) -> bool:
        return self.end is not None and self.start is not None

    @property
    def duration(self) -> int | None:
        return None if self.end is None or self.start is None else self.end - self.start


@dataclass(frozen=True)
class OpEvent:
    """One executed op (only ops with both OP_START and OP_END are reported)."""

    run: int
    op_index: int
    debug_handle: int
    start: int
    end: int

    @property
    def duration(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class TensorDump:
    """An op's output bytes as stored in the arena (program dtype and layout)."""

    run: int
    op_index: int
    output_slot: int
    tensor_index: int
    dtype: str
    data: bytes = field(repr=False)


@dataclass(frozen=True)
class Alloc:
    kind: str  # "arena", "tensor" or "scratch"
    id: int  # tensor index (or op index for scratch); 0 for the arena
    offset: int
    size: int
    first_op: int
    last_op: int


@dataclass
class Gap:
    """Records missing at one place of the stream."""

    offset: int  # byte offset in the received stream
    skipped: int  # bytes skipped there (0: intact records on both sides, records missing between them)
    records_lost: int | None  # records missing (None: unknown, a 1.0 stream without sequence bytes)
    exact: bool  # records_lost is exact (sequence bytes count modulo 256)
    reason: str
    device: bool = False  # the device's sink dropped them (a DROPPED record), they never left it
    run: int | None = None  # the run it falls in, when known


@dataclass
class Trace:
    """A parsed trace stream. ``to_bytes`` gives back the stream exactly as it was read."""

    data: bytes = field(repr=False)
    version: tuple[int, int]
    unit: str  # "ns", "cycles" or "instructions"
    full: bool  # the stream carries TENSOR records
    program_crc: int
    op_count: int
    lossy: bool = False  # the device's sink may drop op records (flags bit 1)
    runs: list[Run] = field(default_factory=list)
    ops: list[OpEvent] = field(default_factory=list, repr=False)
    tensors: list[TensorDump] = field(default_factory=list, repr=False)
    allocs: list[Alloc] = field(default_factory=list, repr=False)
    records: list[Record] = field(default_factory=list, repr=False)  # every intact record, in order
    gaps: list[Gap] = field(default_factory=list)
    record_count: int = 0  # intact records read (STREAM_END included)
    unattributed_ops: int = 0  # complete op events after gaps whose run could not be told
    truncated: bool = False  # the stream was cut short (no intact STREAM_END) or its count disagrees
    truncation_reason: str = ""
    truncation_offset: int | None = None  # byte offset where the readable part ends
    # Estimated cycles of the run (a mcuforge.cycles.run.CycleEstimate, when it ran on QEMU with the
    # cycle plugin): attached by the backend, not part of the stream (to_bytes/save leave it out).
    cycles: Any = field(default=None, repr=False)

    @classmethod
    def from_bytes(cls, data: bytes) -> Trace:
        return parse(bytes(data))

    @classmethod
    def load(cls, path: str | Path) -> Trace:
        return parse(Path(path).read_bytes())

    def to_bytes(self) -> bytes:
        return self.data

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_bytes(self.data)
        return path

    def tensor(self, op_index: int, run: int = 0, output_slot: int = 0) -> TensorDump | None:
        """The dumped output of one op in one run (full traces), or None."""
        for dump in self.tensors:
            if (dump.run, dump.op_index, dump.output_slot) == (run, op_index, output_slot):
                return dump
        return None

    @property
    def intact(self) -> bool:
        """Nothing was lost: no gap and not truncated."""
        return not self.truncated and not self.gaps

    @property
    def dropped_records(self) -> int:
        """Records the device's sink had no room for (its DROPPED records)."""
        return sum(g.records_lost or 0 for g in self.gaps if g.device)

    @property
    def records_lost(self) -> int | None:
        """Records lost on the way (damaged or missing bytes), over all gaps; None if unknown."""
        line = [g for g in self.gaps if not g.device]
        return None if any(g.records_lost is None for g in line) else sum(g.records_lost for g in line)

    @property
    def status_line(self) -> str:
        """One line saying whether the stream was intact, for reports and the CLI."""
        if self.intact:
            return f"trace intact: {len(self.runs)} run(s), {len(self.ops)} op events, unit {self.unit}"
        kept = f"kept {len(self.runs)} run(s), {len(self.ops)} complete op events"
        if not self.gaps:
            return (f"TRACE TRUNCATED at byte {self.truncation_offset} of {len(self.data)}: {self.truncation_reason}; "
                    f"{kept}")
        parts = []
        if self.gaps:
            lost = self.records_lost
            line = [g for g in self.gaps if not g.device]
            if line:
                parts.append(f"{len(line)} gap(s) in the stream ({sum(g.skipped for g in line)} bytes skipped, "
                             f"{'an unknown number of' if lost is None else lost} records lost)")
            if self.dropped_records:
                parts.append(f"{self.dropped_records} records dropped by the device (its UART was slower than "
                             f"the ops)")
            marked = sorted({g.run for g in self.gaps if g.run is not None})
            if marked:
                parts.append(f"runs with gaps: {', '.join(map(str, marked))}")
        if self.truncated:
            parts.append(f"TRACE TRUNCATED at byte {self.truncation_offset} of {len(self.data)}: "
                         f"{self.truncation_reason}")
        if self.unattributed_ops:
            kept += f" ({self.unattributed_ops} more whose run is unknown)"
        return f"TRACE DAMAGED: {'; '.join(parts)}; {kept}"


class _Issue(Exception):
    """Internal: an intact record that breaks the record grammar."""


@dataclass
class _RunBuilder:
    """A run being read. ``index`` None: not known yet (after a gap that may hold a run boundary); it
    is then at least ``lo``, and may still turn out to be ``parent``'s run (and so may the runs of
    ``chain``, read between the two after more such gaps)."""

    index: int | None
    start: int | None
    lo: int = 0
    parent: _RunBuilder | None = None
    chain: list[_RunBuilder] = field(default_factory=list)  # unknown runs between parent and this one
    ops: list[tuple[int, int, int, int]] = field(default_factory=list)  # op, handle, start, end
    dumps: list[tuple[int, int, int, str, bytes]] = field(default_factory=list)  # op, slot, tensor, dtype, data
    gaps: list[Gap] = field(default_factory=list)
    last_op: int = -1  # the highest op index seen in this run

    def absorb(self, other: _RunBuilder) -> None:
        for earlier in other.chain:
            self.absorb(earlier)
        self.ops += other.ops
        self.dumps += other.dumps
        self.gaps += [g for g in other.gaps if all(g is not h for h in self.gaps)]
        self.last_op = max(self.last_op, other.last_op)


class _Walker:
    """The record grammar over intact records, with the decisions to make after each gap."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.sequenced = trace.version >= (1, 1)
        self.run: _RunBuilder | None = None
        self.op: tuple[int, int, int] | None = None  # the open op: index, handle, start
        self.op_dumps: list[tuple[int, int, int, str, bytes]] = []
        self.orphan: int | None = None  # an op whose OP_START was lost: its TENSOR/OP_END records are skipped
        self.last_closed = -1  # index of the last run closed
        self.closed: set[int | None] = set()  # indices of the runs closed
        self.pending: list[Gap] = []  # gaps since the last record that says where in a run it is
        self.after_gap = False
        self.ended = False

    # -- gaps --------------------------------------------------------------------------------------
    def gap(self, gap: Gap) -> None:
        self.trace.gaps.append(gap)
        self.pending.append(gap)

    def _attach(self, builder: _RunBuilder | None, gaps: list[Gap]) -> None:
        if builder is not None:
            builder.gaps += gaps

    def _decide(self, record_type: int, fields: tuple) -> None:
        """Where the record after the gaps in ``pending`` stands: the same run (CONTINUE), the next one
        (NEXT), or unknown. A run boundary costs a RUN_END and a RUN_START (never dropped by a device),
        and, in a stream of a sink that never drops, two records per op before ``op_index`` in the new
        run; a gap that lost fewer records cannot hold one."""
        gaps, self.pending = self.pending, []
        line = [g for g in gaps if not g.device]
        lost = sum(g.records_lost for g in line) if all(g.exact for g in line) else None
        b = self.run
        if record_type in (F.RUN_START, F.RUN_END) or record_type not in (F.OP_START, F.OP_END, F.TENSOR):
            self._attach(b, gaps)
            self._drop_open_op()
            return
        j = fields[0]
        continues_op = self.op is not None and self.op[0] == j and record_type in (F.OP_END, F.TENSOR)
        # records of ops 0 .. j-1 of a new run: two each, or, from a sink that may drop them, at least
        # the DROPPED record it writes before the next record it keeps
        before = min(j, 1) if self.trace.lossy else 2 * j
        before += 0 if record_type == F.OP_START else 1  # and op j's own OP_START
        # the same run only goes on to a later op, or in the op under way (open, or its OP_START lost)
        same_possible = b is not None and (j > b.last_op or (j == b.last_op and record_type != F.OP_START))
        if not (continues_op and lost is not None and same_possible and lost < 2 + before):
            self._drop_open_op()  # only a gap inside one run may lie between an op's OP_START and OP_END
        if b is None:  # outside a run: its RUN_START was lost
            if lost is not None and lost < 1 + 2 + before:  # no room for another RUN_END + RUN_START
                self.run = _RunBuilder(self.last_closed + 1, None, self.last_closed + 1, gaps=list(gaps))
            else:
                self.run = _RunBuilder(None, None, self.last_closed + 1, gaps=list(gaps))
            return
        if lost is not None and same_possible and lost < 2 + before:
            b.gaps += gaps  # CONTINUE
        elif lost is not None and not same_possible and lost < 4 + before:  # NEXT: exactly one boundary
            b.gaps += gaps
            if b.index is not None:
                self._close(b, None, None)
                self.run = _RunBuilder(b.index + 1, None, b.index + 1, gaps=list(gaps))
            else:
                self._discard(b, close_parent=True)
                self.run = _RunBuilder(None, None, b.lo + 1, gaps=list(gaps))
        else:  # unknown: the run is told later, by a RUN_END or RUN_START, or the ops are not reported
            b.gaps += gaps
            if b.index is not None:
                self.run = _RunBuilder(None, None, b.index, parent=b, gaps=list(gaps))
            else:
                chain, b.chain = [*b.chain, b], []
                self.run = _RunBuilder(None, None, b.lo, parent=b.parent, chain=chain, gaps=list(gaps))

    # -- runs ----------------------------------------------------------------------------------------
    def _drop_open_op(self) -> None:
        self.op, self.op_dumps, self.orphan = None, [], None

    def _close(self, b: _RunBuilder, end: int | None, status: int | None) -> None:
        index = b.index
        t = self.trace
        # What a stream with valid CRCs but forged or misplaced records could still make of a run: a second
        # run of one index (its ops cannot be told apart from the first's: not reported) or an end before
        # its start (the end is not known, then). An honest stream never meets either.
        if index is not None and index in self.closed:
            t.unattributed_ops += len(b.ops)
            return
        self.closed.add(index)
        if end is not None and b.start is not None and end < b.start:
            end = status = None
        for g in b.gaps:
            if g.run is None:
                g.run = index
        t.runs.append(Run(index, b.start, end, status, gaps=len(b.gaps)))
        t.ops += [OpEvent(index, op, handle, start, stop) for op, handle, start, stop in b.ops]
        t.tensors += [TensorDump(index, op, slot, tensor, dtype, data) for op, slot, tensor, dtype, data in b.dumps]
        self.last_closed = max(self.last_closed, index)

    def _discard(self, b: _RunBuilder, close_parent: bool) -> None:
        """Ops whose run cannot be told: not reported (their records stay in ``trace.records``)."""
        self.trace.unattributed_ops += len(b.ops) + sum(len(c.ops) for c in b.chain)
        if close_parent and b.parent is not None:
            self._close(b.parent, None, None)

    def _end_run_before(self, next_index: int | None) -> None:
        """The open run ends without its RUN_END, before run ``next_index`` (None: the stream ends)."""
        b, self.run = self.run, None
        self._drop_open_op()
        if b is None:
            return
        if b.index is not None:
            self._close(b, None, None)
            return
        if next_index is not None and next_index - 1 == b.lo:  # only one run it can be
            if b.parent is not None:
                b.parent.absorb(b)
                self._close(b.parent, None, None)
            else:
                merged = _RunBuilder(b.lo, None, b.lo)
                merged.absorb(b)
                self._close(merged, None, None)
            return
        self._discard(b, close_parent=True)

    def _run_start(self, fields: tuple, _payload: bytes) -> None:
        index, time = fields
        if self.run is not None and not self.after_gap:
            raise _Issue(f"RUN_START while run {self.run.index} is open")
        if index <= self.last_closed:
            raise _Issue(f"RUN_START of run {index} after run {self.last_closed}")
        self._end_run_before(index)
        self.run = _RunBuilder(index, time, index)

    def _run_end(self, fields: tuple, _payload: bytes) -> None:
        index, time, status = fields
        b, self.run = self.run, None
        self._drop_open_op()
        if b is None:
            if not self.after_gap or index <= self.last_closed:
                raise _Issue(f"RUN_END of run {index} without its RUN_START")
            self._close(_RunBuilder(index, None, index), time, status)
            return
        if b.index == index:
            if b.start is not None and time < b.start:
                self.run = b
                raise _Issue(f"RUN_END of run {index} earlier than its RUN_START")
            self._close(b, time, status)
            return
        if b.index is None:
            if b.parent is not None and b.parent.index == index:
                b.parent.absorb(b)
                self._close(b.parent, time, status)
                return
            if b.parent is not None:
                self._close(b.parent, None, None)
            if index == b.lo:  # the runs read before it lie in [lo, index]: this one run
                merged = _RunBuilder(index, None, index)
                merged.absorb(b)
                self._close(merged, time, status)
                return
            self.trace.unattributed_ops += sum(len(c.ops) for c in b.chain)  # somewhere in [lo, index]
            b.chain = []
            if index > b.lo:
                b.index = index
                self._close(b, time, status)
            else:
                self._discard(b, close_parent=False)
            return
        if not self.after_gap:
            self.run = b
            raise _Issue(f"RUN_END of run {index} inside run {b.index}")
        self._close(b, None, None)  # only possible if a gap lost more than its sequence bytes tell
        if index > self.last_closed:
            self._close(_RunBuilder(index, None, index), time, status)

    # -- ops -----------------------------------------------------------------------------------------
    def _open_run(self, what: str) -> _RunBuilder:
        if self.run is None:
            raise _Issue(f"{what} outside a run")
        return self.run

    def _op_start(self, fields: tuple, _payload: bytes) -> None:
        op_index, handle, time = fields
        b = self._open_run(f"OP_START of op {op_index}")
        if self.op is not None:
            raise _Issue(f"OP_START of op {op_index} inside op {self.op[0]}")
        if op_index <= b.last_op:
            raise _Issue(f"OP_START of op {op_index} after op {b.last_op} in one run")
        if b.start is not None and time < b.start:
            raise _Issue(f"OP_START of op {op_index} earlier than its RUN_START")
        self.op, self.orphan = (op_index, handle, time), None
        b.last_op = op_index

    def _op_end(self, fields: tuple, _payload: bytes) -> None:
        op_index, handle, time = fields
        b = self._open_run(f"OP_END of op {op_index}")
        if self.op is None or self.op[:2] != (op_index, handle):
            if self.after_gap or self.orphan == op_index:  # its OP_START was lost
                b.last_op = max(b.last_op, op_index)
                self._drop_open_op()
                return
            raise _Issue(f"OP_END of op {op_index} without its OP_START")
        if time < self.op[2]:
            raise _Issue(f"OP_END of op {op_index} earlier than its OP_START")
        b.ops.append((op_index, handle, self.op[2], time))
        b.dumps += self.op_dumps
        self._drop_open_op()

    def _tensor(self, fields: tuple, payload: bytes) -> None:
        op_index, slot, tensor_index, dtype_code = fields
        b = self._open_run(f"TENSOR of op {op_index}")
        if self.op is None or self.op[0] != op_index:
            if self.after_gap or self.orphan == op_index:  # its op's OP_START was lost
                b.last_op = max(b.last_op, op_index)
                self._drop_open_op()
                self.orphan = op_index
                return
            raise _Issue(f"TENSOR of op {op_index} outside that op")
        if dtype_code not in DTYPE_BY_CODE:
            raise _Issue(f"TENSOR of op {op_index} with unknown dtype code {dtype_code}")
        self.op_dumps.append((op_index, slot, tensor_index, DTYPE_BY_CODE[dtype_code],
                              payload[F.PAYLOADS[F.TENSOR].size:]))

    # -- the rest ------------------------------------------------------------------------------------
    def _alloc(self, fields: tuple, _payload: bytes) -> None:
        kind, ident, offset, size, first_op, last_op = fields
        if kind not in F.ALLOC_KINDS:
            raise _Issue(f"ALLOC with unknown kind {kind}")
        self.trace.allocs.append(Alloc(F.ALLOC_KINDS[kind], ident, offset, size, first_op, last_op))

    def _dropped(self, fields: tuple, _payload: bytes, record: Record) -> None:
        records, nbytes = fields
        self.gap(Gap(record.offset, 0, records, True, f"the device dropped {records} records ({nbytes} bytes): "
                     f"its sink had no room", device=True))

    def _stream_end(self, fields: tuple, _payload: bytes) -> None:
        (count,) = fields
        t = self.trace
        if self.run is not None and not self.after_gap and not self.run.gaps:
            self.gap(Gap(t.records[-1].offset, 0, 0, False, f"STREAM_END while run {self.run.index} is open"))
        self._attach(self.run, self.pending)
        self.pending = []
        self._end_run_before(None)
        self.ended = True
        before = len(t.records) - 1  # intact records before this one
        line = [g for g in t.gaps if not g.device and g.records_lost is not None]
        missing = count - before
        if not line and not any(not g.device for g in t.gaps):
            if missing != 0:
                self._truncate(t.records[-1].offset, f"STREAM_END counts {count} records, {before} were read")
            return
        if len(line) < sum(1 for g in t.gaps if not g.device):
            return  # some gap's count is unknown (a 1.0 stream): nothing to check
        extra = missing - sum(g.records_lost for g in line)
        if extra > 0 and extra % 256 == 0:  # a long gap lost 256 records more than its sequence bytes say
            widest = max(line, key=lambda g: g.skipped)
            widest.records_lost += extra
        elif extra != 0:
            self._truncate(t.records[-1].offset, f"STREAM_END counts {count} records; {before} were read and the "
                                                 f"gaps account for {missing - extra}")

    def _truncate(self, offset: int, reason: str) -> None:
        t = self.trace
        if not t.truncated:
            t.truncated, t.truncation_offset, t.truncation_reason = True, offset, reason

    def record(self, record: Record) -> None:
        handlers = {
            F.RUN_START: self._run_start, F.RUN_END: self._run_end, F.OP_START: self._op_start,
            F.OP_END: self._op_end, F.TENSOR: self._tensor, F.ALLOC: self._alloc, F.STREAM_END: self._stream_end,
        }
        rtype = record.type
        try:
            if rtype == F.STREAM_START:
                raise _Issue("a second STREAM_START")
            if rtype not in F.PAYLOADS:
                return  # a later minor version's record: framed, skipped
            fields = _fields(rtype, record.payload)
            if rtype == F.DROPPED:
                self._dropped(fields, record.payload, record)
                return
            self.after_gap = bool(self.pending)
            if self.pending and rtype != F.ALLOC and rtype != F.STREAM_END:
                self._decide(rtype, fields)
            handlers[rtype](fields, record.payload)
            self.after_gap = False
        except _Issue as issue:
            # An intact record out of order: skipped, and what follows is read as after any gap.
            self.after_gap = False
            self.gap(Gap(record.offset, record.size, 0, False, f"{record.name} record out of order: {issue}"))

    def finish(self, end_offset: int, reason: str) -> None:
        """The stream stopped before STREAM_END."""
        self._attach(self.run, self.pending)
        self.pending = []
        self._end_run_before(None)
        self._truncate(end_offset, reason)


def _fields(record_type: int, payload: bytes) -> tuple:
    layout = F.PAYLOADS[record_type]
    exact = record_type != F.TENSOR
    if len(payload) < layout.size or (exact and len(payload) != layout.size):
        raise _Issue(f"{F.RECORD_NAMES[record_type]} payload of {len(payload)} bytes (expected "
                     f"{layout.size}{'' if exact else ' or more'})")
    return layout.unpack_from(payload)


def _stream_start(data: bytes, items: list[Record | Damage]) -> Trace:
    first = items[0] if items else None
    if not isinstance(first, Record) or first.offset != 0:
        why = first.reason if isinstance(first, Damage) else "the stream is empty"
        raise TraceFormatError(f"not a trace stream: it does not begin with a valid STREAM_START ({why})")
    if first.type != F.STREAM_START:
        raise TraceFormatError(f"not a trace stream: it does not begin with a valid STREAM_START (first record is "
                               f"{first.name})")
    try:
        major, minor, unit, flags, _reserved, crc, op_count = _fields(F.STREAM_START, first.payload)
    except _Issue as issue:
        raise TraceFormatError(f"not a trace stream: it does not begin with a valid STREAM_START ({issue})") from None
    if major != F.VERSION[0]:
        raise TraceFormatError(f"trace format {major}.{minor} is not supported (this reader reads {F.VERSION[0]}.x)")
    if unit not in F.TIME_UNITS:
        raise TraceFormatError(f"unknown time unit code {unit} in STREAM_START")
    return Trace(data=data, version=(major, minor), unit=F.TIME_UNITS[unit], full=bool(flags & F.FLAG_TENSORS),
                 program_crc=crc, op_count=op_count, lossy=bool(flags & F.FLAG_LOSSY), records=[first])


def parse(data: bytes) -> Trace:
    """Read a trace stream; see the module docstring for what is kept of a damaged one."""
    items = scan(data)
    trace = _stream_start(data, items)
    walker = _Walker(trace)
    expected_seq = (trace.records[0].seq + 1) & 0xFF
    damage: Damage | None = None
    for item in items[1:]:
        if isinstance(item, Damage):
            if item.at_end:
                walker.finish(item.offset, item.reason)
                break
            damage = item
            continue
        if damage is not None or (walker.sequenced and item.seq != expected_seq):
            lost = (item.seq - expected_seq) & 0xFF if walker.sequenced else None
            skipped = damage.skipped if damage else 0
            reason = damage.reason if damage else "records missing between two intact records (sequence bytes jump)"
            walker.gap(Gap(damage.offset if damage else item.offset, skipped, lost,
                           walker.sequenced and gap_count_is_exact(lost, skipped), reason))
            damage = None
        expected_seq = (item.seq + 1) & 0xFF
        trace.records.append(item)
        walker.record(item)
        if walker.ended:
            break
    else:
        walker.finish(len(data), "the stream ends without STREAM_END")
    trace.record_count = len(trace.records)
    return trace
