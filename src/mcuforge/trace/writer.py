"""TraceWriter: builds a trace stream record by record, as a runtime emits it."""

from __future__ import annotations

from . import format as F


class TraceWriter:
    """Appends framed records to an in-memory stream, numbers them (each record's sequence byte) and
    counts them for ``STREAM_END``. ``lossy`` sets the flag of a device whose sink may drop op records."""

    def __init__(self, *, unit: str, full: bool, program_crc: int, op_count: int, lossy: bool = False) -> None:
        self._stream = bytearray()
        self.record_count = 0
        self.closed = False
        flags = (F.FLAG_TENSORS if full else 0) | (F.FLAG_LOSSY if lossy else 0)
        self._record(F.STREAM_START, F.PAYLOADS[F.STREAM_START].pack(
            *F.VERSION, F.TIME_UNIT_CODES[unit], flags, 0, program_crc, op_count))

    def _record(self, record_type: int, payload: bytes) -> None:
        if self.closed:
            raise RuntimeError("the trace stream is closed (STREAM_END written)")
        self._stream += F.encode_record(record_type, payload, seq=self.record_count)
        self.record_count += 1

    def run_start(self, run_index: int, time: int) -> None:
        self._record(F.RUN_START, F.PAYLOADS[F.RUN_START].pack(run_index, time))

    def run_end(self, run_index: int, time: int, status: int) -> None:
        self._record(F.RUN_END, F.PAYLOADS[F.RUN_END].pack(run_index, time, status))

    def op_start(self, op_index: int, debug_handle: int, time: int) -> None:
        self._record(F.OP_START, F.PAYLOADS[F.OP_START].pack(op_index, debug_handle, time))

    def op_end(self, op_index: int, debug_handle: int, time: int) -> None:
        self._record(F.OP_END, F.PAYLOADS[F.OP_END].pack(op_index, debug_handle, time))

    def tensor(self, op_index: int, output_slot: int, tensor_index: int, dtype_code: int, data: bytes) -> None:
        self._record(F.TENSOR, F.PAYLOADS[F.TENSOR].pack(op_index, output_slot, tensor_index, dtype_code) + data)

    def alloc(self, kind: str, ident: int, offset: int, size: int, first_op: int, last_op: int) -> None:
        self._record(F.ALLOC, F.PAYLOADS[F.ALLOC].pack(F.ALLOC_KIND_CODES[kind], ident, offset, size,
                                                       first_op, last_op))

    def dropped(self, records: int, nbytes: int) -> None:
        """A DROPPED record: ``records`` records (``nbytes`` bytes) were not written since the last one
        (what a device's sink writes when it had no room for some op records)."""
        self._record(F.DROPPED, F.PAYLOADS[F.DROPPED].pack(records, nbytes))

    def finish(self) -> bytes:
        """Close the stream with ``STREAM_END`` (once) and return all its bytes."""
        if not self.closed:
            self._record(F.STREAM_END, F.PAYLOADS[F.STREAM_END].pack(self.record_count))
            self.closed = True
        return bytes(self._stream)
