"""The trace stream's byte layout (docs/trace.md, format 1.0): framing, record types, payloads.

Shared by the writer and the reader so that the two cannot drift apart. Little-endian.
"""

from __future__ import annotations

import struct
import zlib

VERSION = (1, 0)  # (major, minor): a reader accepts its own major and any minor
SYNC = b"\xa5\x5a"
FRAME = struct.Struct("<2sBBI")  # sync, type, reserved, payload length
CRC = struct.Struct("<I")
MAX_PAYLOAD = 1 << 24

STREAM_START, RUN_START, RUN_END, OP_START, OP_END, TENSOR, ALLOC, STREAM_END = range(1, 9)
RECORD_NAMES = {
    STREAM_START: "STREAM_START", RUN_START: "RUN_START", RUN_END: "RUN_END", OP_START: "OP_START",
    OP_END: "OP_END", TENSOR: "TENSOR", ALLOC: "ALLOC", STREAM_END: "STREAM_END",
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
    STREAM_END: struct.Struct("<I"),  # record_count (records before this one)
}

TIME_UNITS = {0: "ns", 1: "cycles", 2: "instructions"}
TIME_UNIT_CODES = {name: code for code, name in TIME_UNITS.items()}
FLAG_TENSORS = 1  # flags bit 0: the stream carries TENSOR records (full tracing)
ALLOC_KINDS = {0: "arena", 1: "tensor", 2: "scratch"}
ALLOC_KIND_CODES = {name: code for code, name in ALLOC_KINDS.items()}


def encode_record(record_type: int, payload: bytes) -> bytes:
    """One framed record: sync, type, reserved, length, payload, CRC-32 of [type .. payload]."""
    if len(payload) > MAX_PAYLOAD:
        raise ValueError(f"trace record payload of {len(payload)} bytes exceeds {MAX_PAYLOAD}")
    head = FRAME.pack(SYNC, record_type, 0, len(payload))
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
