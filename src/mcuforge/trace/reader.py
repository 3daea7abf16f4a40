"""Reading a trace stream: :class:`Trace` holds what was intact, flagged when the rest was not.

The reader walks records from the start and stops at the first one that is not intact (sync,
length, CRC) or that breaks the record grammar (an OP_END without its OP_START, ...): everything
before it is kept, the rest dropped, and the trace is flagged ``truncated`` with the byte offset
and the reason. Only a stream that does not begin with a valid STREAM_START is an error.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from pathlib import Path

from ..program.layout import DTYPE_BY_CODE
from . import format as F


class TraceFormatError(ValueError):
    """The bytes are not a trace stream (no valid STREAM_START) or of an unsupported version."""


class _Damaged(Exception):
    """Internal: the record at ``offset`` is not intact or breaks the grammar; stop reading there."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(reason)
        self.offset = offset
        self.reason = reason


@dataclass(frozen=True)
class Run:
    index: int
    start: int
    end: int | None = None  # None: the stream stopped before RUN_END
    status: int | None = None  # 0 ok, else the runtime's error code

    @property
    def complete(self) -> bool:
        return self.end is not None

    @property
    def duration(self) -> int | None:
        return None if self.end is None else self.end - self.start


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
class Trace:
    """A parsed trace stream. ``to_bytes`` gives back the stream exactly as it was read."""

    data: bytes = field(repr=False)
    version: tuple[int, int]
    unit: str  # "ns", "cycles" or "instructions"
    full: bool  # the stream carries TENSOR records
    program_crc: int
    op_count: int
    runs: list[Run] = field(default_factory=list)
    ops: list[OpEvent] = field(default_factory=list, repr=False)
    tensors: list[TensorDump] = field(default_factory=list, repr=False)
    allocs: list[Alloc] = field(default_factory=list, repr=False)
    record_count: int = 0  # intact records read (STREAM_END included)
    truncated: bool = False
    truncation_reason: str = ""
    truncation_offset: int | None = None  # byte offset where the intact part ends

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
    def status_line(self) -> str:
        """One line saying whether the stream was intact, for reports and the CLI."""
        if not self.truncated:
            return f"trace intact: {len(self.runs)} run(s), {len(self.ops)} op events, unit {self.unit}"
        return (f"TRACE TRUNCATED at byte {self.truncation_offset} of {len(self.data)}: {self.truncation_reason}; "
                f"kept {len(self.runs)} run(s), {len(self.ops)} complete op events")


def _frame(data: bytes, pos: int) -> tuple[int, bytes, int]:
    """(type, payload, next offset) of the record at ``pos``, or _Damaged."""
    if len(data) - pos < F.FRAME.size:
        raise _Damaged(pos, f"the stream ends inside a record header ({len(data) - pos} of {F.FRAME.size} bytes)")
    sync, record_type, _reserved, length = F.FRAME.unpack_from(data, pos)
    if sync != F.SYNC:
        raise _Damaged(pos, f"bad sync bytes {sync.hex()} (expected {F.SYNC.hex()})")
    if length > F.MAX_PAYLOAD:
        raise _Damaged(pos, f"record length {length} exceeds the maximum {F.MAX_PAYLOAD}")
    end = pos + F.FRAME.size + length
    if end + F.CRC.size > len(data):
        raise _Damaged(pos, f"record length {length} runs past the end of the stream")
    (stored,) = F.CRC.unpack_from(data, end)
    computed = zlib.crc32(memoryview(data)[pos + 2:end])
    if stored != computed:
        raise _Damaged(pos, f"CRC mismatch in a {F.RECORD_NAMES.get(record_type, f'type-{record_type}')} record "
                            f"(stored 0x{stored:08x}, computed 0x{computed:08x})")
    return record_type, data[pos + F.FRAME.size:end], end + F.CRC.size


def _fields(record_type: int, payload: bytes, pos: int) -> tuple:
    layout = F.PAYLOADS[record_type]
    exact = record_type != F.TENSOR
    if len(payload) < layout.size or (exact and len(payload) != layout.size):
        raise _Damaged(pos, f"{F.RECORD_NAMES[record_type]} payload of {len(payload)} bytes (expected "
                            f"{layout.size}{'' if exact else ' or more'})")
    return layout.unpack_from(payload)


def _stream_start(data: bytes) -> tuple[Trace, int]:
    try:
        record_type, payload, pos = _frame(data, 0)
        if record_type != F.STREAM_START:
            raise _Damaged(0, f"first record is {F.RECORD_NAMES.get(record_type, f'type {record_type}')}")
        major, minor, unit, flags, _reserved, crc, op_count = _fields(F.STREAM_START, payload, 0)
    except _Damaged as exc:
        raise TraceFormatError(f"not a trace stream: it does not begin with a valid STREAM_START ({exc.reason})") \
            from None
    if major != F.VERSION[0]:
        raise TraceFormatError(f"trace format {major}.{minor} is not supported (this reader reads {F.VERSION[0]}.x)")
    if unit not in F.TIME_UNITS:
        raise TraceFormatError(f"unknown time unit code {unit} in STREAM_START")
    trace = Trace(data=data, version=(major, minor), unit=F.TIME_UNITS[unit], full=bool(flags & F.FLAG_TENSORS),
                  program_crc=crc, op_count=op_count, record_count=1)
    return trace, pos


class _Walker:
    """The record grammar: runs hold ops, ops hold tensor dumps; results only once complete."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.run: Run | None = None  # the open run
        self.op: tuple[int, int, int] | None = None  # the open op: index, handle, start
        self.dumps: list[TensorDump] = []  # tensors of the open op
        self.ended = False

    def record(self, record_type: int, payload: bytes, pos: int) -> None:
        handler = {
            F.RUN_START: self._run_start, F.RUN_END: self._run_end, F.OP_START: self._op_start,
            F.OP_END: self._op_end, F.TENSOR: self._tensor, F.ALLOC: self._alloc, F.STREAM_END: self._stream_end,
        }.get(record_type)
        if record_type == F.STREAM_START:
            raise _Damaged(pos, "a second STREAM_START")
        if handler is not None:  # unknown types of a later minor version are framed: skip them
            handler(_fields(record_type, payload, pos), payload, pos)
        self.trace.record_count += 1

    def _run_start(self, fields: tuple, _payload: bytes, pos: int) -> None:
        if self.run is not None:
            raise _Damaged(pos, f"RUN_START while run {self.run.index} is open")
        self.run = Run(index=fields[0], start=fields[1])

    def _run_end(self, fields: tuple, _payload: bytes, pos: int) -> None:
        index, time, status = fields
        if self.run is None or self.run.index != index:
            raise _Damaged(pos, f"RUN_END of run {index} without its RUN_START")
        if time < self.run.start:
            raise _Damaged(pos, f"RUN_END of run {index} earlier than its RUN_START")
        # An op left open here failed (the runtime ends the run with an error): not reported.
        self.trace.runs.append(Run(index, self.run.start, time, status))
        self.run, self.op, self.dumps = None, None, []

    def _op_start(self, fields: tuple, _payload: bytes, pos: int) -> None:
        op_index, handle, time = fields
        if self.run is None or self.op is not None:
            raise _Damaged(pos, f"OP_START of op {op_index} outside a run or inside another op")
        if time < self.run.start:
            raise _Damaged(pos, f"OP_START of op {op_index} earlier than its RUN_START")
        self.op = (op_index, handle, time)

    def _op_end(self, fields: tuple, _payload: bytes, pos: int) -> None:
        op_index, handle, time = fields
        if self.op is None or self.op[:2] != (op_index, handle):
            raise _Damaged(pos, f"OP_END of op {op_index} without its OP_START")
        if time < self.op[2]:
            raise _Damaged(pos, f"OP_END of op {op_index} earlier than its OP_START")
        self.trace.ops.append(OpEvent(self.run.index, op_index, handle, self.op[2], time))
        self.trace.tensors.extend(self.dumps)
        self.op, self.dumps = None, []

    def _tensor(self, fields: tuple, payload: bytes, pos: int) -> None:
        op_index, slot, tensor_index, dtype_code = fields
        if self.op is None or self.op[0] != op_index:
            raise _Damaged(pos, f"TENSOR of op {op_index} outside that op")
        if dtype_code not in DTYPE_BY_CODE:
            raise _Damaged(pos, f"TENSOR of op {op_index} with unknown dtype code {dtype_code}")
        self.dumps.append(TensorDump(self.run.index, op_index, slot, tensor_index, DTYPE_BY_CODE[dtype_code],
                                     payload[F.PAYLOADS[F.TENSOR].size:]))

    def _alloc(self, fields: tuple, _payload: bytes, pos: int) -> None:
        kind, ident, offset, size, first_op, last_op = fields
        if kind not in F.ALLOC_KINDS:
            raise _Damaged(pos, f"ALLOC with unknown kind {kind}")
        self.trace.allocs.append(Alloc(F.ALLOC_KINDS[kind], ident, offset, size, first_op, last_op))

    def _stream_end(self, fields: tuple, _payload: bytes, pos: int) -> None:
        (count,) = fields
        if count != self.trace.record_count:
            raise _Damaged(pos, f"STREAM_END counts {count} records, {self.trace.record_count} were read")
        if self.run is not None:
            raise _Damaged(pos, f"STREAM_END while run {self.run.index} is open")
        self.ended = True


def parse(data: bytes) -> Trace:
    """Read a trace stream; see the module docstring for what is kept of a damaged one."""
    trace, pos = _stream_start(data)
    walker = _Walker(trace)
    try:
        while not walker.ended:
            if pos == len(data):
                raise _Damaged(pos, "the stream ends without STREAM_END")
            record_type, payload, next_pos = _frame(data, pos)
            walker.record(record_type, payload, pos)
            pos = next_pos
    except _Damaged as exc:
        trace.truncated = True
        trace.truncation_reason = exc.reason
        trace.truncation_offset = exc.offset
        if walker.run is not None and not any(r.index == walker.run.index for r in trace.runs):
            trace.runs.append(walker.run)  # the open run: its complete ops are kept, its end is unknown
    return trace
