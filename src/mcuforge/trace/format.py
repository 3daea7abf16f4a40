"""The trace stream's byte layout (docs/trace.md, format 1.1): framing, record types, payloads.

Shared by the writer and the reader so that the two cannot drift apart. Little-endian.
"""

from __future__ import annotations

import struct
import zlib

VERSION = (1, 1)  # (major, minor): a reader accepts its own major and any minor
SYNC = b"\xa5\x5a"
FRAME = struct.Struct("<2sBBI")  # sync, type, sequence number (1.1; 0 in 1.0), payload length
CRC = struct.Struct("<I")
MAX_PAYLOAD = 1 << 24

STREAM_START, RUN_START, RUN_END, OP_START, OP_END, TENSOR, ALLOC, STREAM_END, DROPPED = range(1, 10)
RECORD_NAMES = {
    STREAM_START: "STREAM_START", RUN_START: "RUN_START", RUN_END: "RUN_END", OP_START: "OP_START",
    OP_END: "OP_END", TENSOR: "TENSOR", ALLOC: "ALLOC", STREAM_END: "STREAM_END", DROPPED: "DROPPED",
}

# Fixed payloads. TENSOR's fixed part is followed by the tensor's bytes.
PAYLOADS = {
    STREAM_START: struct.Struct("<HHBBHII"),  # major, minor, time_unit, flags, reserved, program_crc32, op_count
    RUN_START: struct.Struct("<IQ"),  # run_index, time
    RUN_END: struct.Struct("<IQi"),  # run_index, time, status
    OP_START: struct.Struct("<IIQ"),  # op_index, debug_handle, time
    OP_END: struct.Struct("<IIQ"),
    TENSOR: struct.Struct("<IIIB3x"),  # op_index, output_slot, tensor_index, dtype
    ALLOC: struct.Struct("<B3xIIIII"),  # kind, id, offset, size, first_op, last_op
    STREAM_END: struct.Struct("<I"),  # record_count (records written before this one)
    DROPPED: struct.Struct("<II"),  # records and bytes the device's sink had no room for, since the last DROPPED
}
SMALLEST_RECORD = FRAME.size + PAYLOADS[STREAM_END].size + CRC.size  # 16 bytes

TIME_UNITS = {0: "ns", 1: "cycles", 2: "instructions"}
TIME_UNIT_CODES = {name: code for code, name in TIME_UNITS.items()}
FLAG_TENSORS = 1  # flags bit 0: the stream carries TENSOR records (full tracing)
FLAG_LOSSY = 2  # flags bit 1 (1.1): the device's sink may drop op records when it has no room (DROPPED records)
ALLOC_KINDS = {0: "arena", 1: "tensor", 2: "scratch"}
ALLOC_KIND_CODES = {name: code for code, name in ALLOC_KINDS.items()}


def encode_record(record_type: int, payload: bytes, seq: int = 0) -> bytes:
    """One framed record: sync, type, sequence number (records written before it, mod 256), length,
    payload, CRC-32 of [type .. payload]."""
    if len(payload) > MAX_PAYLOAD:
        raise ValueError(f"trace record payload of {len(payload)} bytes exceeds {MAX_PAYLOAD}")
    head = FRAME.pack(SYNC, record_type, seq & 0xFF, len(payload))
    crc = zlib.crc32(payload, zlib.crc32(head[2:]))
    return head + payload + CRC.pack(crc)


def trace_mode(trace: bool | str | None) -> str:
    """``False``/``None`` -> "off", ``True``/"events" -> "events" (op times), "full" (with op outputs)."""
    if trace in (False, None, "off"):
        return "off"
    if trace is True or trace == "events":
        return "events"
    if trace == "full":
        return "full"
    raise ValueError(f"trace must be False, True, 'events' or 'full', got {trace!r}")
