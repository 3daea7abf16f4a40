"""The trace stream (docs/trace.md): writer, reader, the host runtime's recorder, debug record.

A trace is what a runtime emits while it runs a program: run and op events with times,
optionally every op's output bytes, and the arena's allocations; framed and numbered record by
record so that a truncated or damaged stream is detected, never misread, and read on past the damage.
"""

from .debug_record import build_debug_record, program_crc, tensor_info
from .framing import Damage, FrameScanner, Record
from .reader import Alloc, Gap, OpEvent, Run, TensorDump, Trace, TraceFormatError, parse
from .recorder import HostTraceRecorder
from .writer import TraceWriter

__all__ = [
    "Alloc", "Damage", "FrameScanner", "Gap", "HostTraceRecorder", "OpEvent", "Record", "Run", "TensorDump", "Trace",
    "TraceFormatError", "TraceWriter", "build_debug_record", "parse", "program_crc", "tensor_info",
]
