"""Splitting a received byte stream into intact records, resynchronizing after damage.

A record is intact when its sync bytes, its length and its CRC-32 check (docs/trace.md). After a
record that is not, the scanner looks for the next offset where an intact record of a known type
starts (sync bytes, a length its type allows, the CRC), skips the bytes in between as one
:class:`Damage` and goes on: a flipped, dropped or inserted byte costs the records it touched, not
the rest of the stream. A false frame in the skipped bytes would need its CRC to match by chance
(2^-32 per candidate offset that also has the sync bytes and a plausible length).

:class:`FrameScanner` takes the bytes as they come (``feed``), for the capture of a live serial
port, and ``finish`` ends the stream; :func:`scan` does both for bytes already received.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

from . import format as F

_VALID, _BAD, _PARTIAL = range(3)


@dataclass(frozen=True)
class Record:
    """An intact record: its byte offset in the received stream, type, sequence byte and payload."""

    offset: int
    type: int
    seq: int
    payload: bytes = field(repr=False)

    @property
    def size(self) -> int:
        return F.FRAME.size + len(self.payload) + F.CRC.size

    @property
    def end(self) -> int:
        return self.offset + self.size

    @property
    def name(self) -> str:
        return F.RECORD_NAMES.get(self.type, f"type-{self.type}")


@dataclass(frozen=True)
class Damage:
    """Bytes ``[offset, offset + skipped)`` hold no intact record; ``reason`` says what was wrong at
    ``offset``. ``at_end``: the stream ended inside it (nothing intact follows)."""

    offset: int
    skipped: int
    reason: str
    at_end: bool = False


def _payload_size_ok(record_type: int, length: int) -> bool:
    layout = F.PAYLOADS.get(record_type)
    if layout is None:
        return True  # a later minor version's record: framed, any length
    return length >= layout.size if record_type == F.TENSOR else length == layout.size


def _classify(data: bytes | bytearray, pos: int, final: bool, known_only: bool) -> tuple[int, int | str]:
    """(_VALID, record size) | (_BAD, reason) | (_PARTIAL, bytes the frame claims, or 0 if its
    header is incomplete) for a frame at ``pos``. ``final``: no more bytes will come.
    ``known_only``: only known record types with a payload size their type allows (resync targets)."""
    available = len(data) - pos
    if available < F.FRAME.size:
        if data[pos:pos + 2] != F.SYNC[:available][:2]:
            return _BAD, f"bad sync bytes {bytes(data[pos:pos + 2]).hex()} (expected {F.SYNC.hex()})"
        if final:
            return _BAD, f"the stream ends inside a record header ({available} of {F.FRAME.size} bytes)"
        return _PARTIAL, 0
    sync, record_type, _seq, length = F.FRAME.unpack_from(data, pos)
    if sync != F.SYNC:
        return _BAD, f"bad sync bytes {sync.hex()} (expected {F.SYNC.hex()})"
    name = F.RECORD_NAMES.get(record_type, f"type-{record_type}")
    if length > F.MAX_PAYLOAD:
        return _BAD, f"{name} record length {length} exceeds the maximum {F.MAX_PAYLOAD}"
    if known_only and (record_type not in F.RECORD_NAMES or not _payload_size_ok(record_type, length)):
        return _BAD, f"{name} record of length {length}"
    size = F.FRAME.size + length + F.CRC.size
    if size > available:
        if final:
            return _BAD, f"{name} record length {length} runs past the end of the stream"
        return _PARTIAL, size
    end = pos + F.FRAME.size + length
    (stored,) = F.CRC.unpack_from(data, end)
    computed = zlib.crc32(memoryview(data)[pos + 2:end])
    if stored != computed:
        return _BAD, f"CRC mismatch in a {name} record (stored 0x{stored:08x}, computed 0x{computed:08x})"
    return _VALID, size


def _resync(data: bytes | bytearray, start: int, final: bool, limit: int | None = None) -> tuple[int | None, bool]:
    """The first offset >= ``start`` (and < ``limit``) where an intact record begins: (offset, True);
    or, when more bytes may still come, the first offset where one might begin: (offset, False);
    (None, False) if there is none."""
    partial, partial_end = None, None
    pos = start
    while True:
        pos = data.find(F.SYNC, pos)
        if pos < 0 and not final and start <= len(data) - 1 and data[-1:] == F.SYNC[:1]:
            pos = len(data) - 1  # a sync byte at the very end: its pair may come next
        if pos < 0 or (limit is not None and pos >= limit) or (partial_end is not None and pos >= partial_end):
            break
        state, info = _classify(data, pos, final, known_only=True)
        if state == _VALID:
            return pos, True
        if state == _PARTIAL and partial is None:
            # Only an intact record that starts before this candidate's claimed end rules it out.
            partial, partial_end = pos, pos + info if info else None
        pos += 1
        if pos >= len(data):
            break
    return partial, False


class FrameScanner:
    """Intact records and damaged stretches of a stream received piece by piece, in stream order."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.pos = 0  # where the next record is expected
        self._damage: tuple[int, str] | None = None  # (start, reason) of the stretch being skipped
        self.finished = False

    def feed(self, chunk: bytes) -> list[Record | Damage]:
        """Add received bytes; returns the records and damage that are now certain."""
        self.data += chunk
        return self._advance(final=False)

    def finish(self) -> list[Record | Damage]:
        """No more bytes: what is left becomes records or a final damaged stretch."""
        self.finished = True
        items = self._advance(final=True)
        if self._damage is not None:  # the stream ended inside a damaged stretch
            start, reason = self._damage
            items.append(Damage(start, len(self.data) - start, reason, at_end=True))
            self._damage = None
        return items

    def _record_at(self, pos: int, size: int) -> Record:
        _sync, record_type, seq, _length = F.FRAME.unpack_from(self.data, pos)
        return Record(pos, record_type, seq, bytes(self.data[pos + F.FRAME.size:pos + size - F.CRC.size]))

    def _advance(self, final: bool) -> list[Record | Damage]:
        items: list[Record | Damage] = []
        data = self.data
        while self.pos < len(data):
            pos = self.pos
            state, info = _classify(data, pos, final, known_only=self._damage is not None)
            if state == _VALID:
                if self._damage is not None:
                    start, reason = self._damage
                    items.append(Damage(start, pos - start, reason))
                    self._damage = None
                items.append(self._record_at(pos, info))
                self.pos = pos + info
                continue
            if state == _PARTIAL:
                # A frame not yet complete is waited for, unless an intact record starts inside the
                # bytes it claims: then it was a damaged (or false) frame.
                found, intact = _resync(data, pos + 1, final, limit=pos + info if info else None)
                if not intact:
                    break
                reason = "a record overlapped by the next intact record (damaged length)"
                if self._damage is None:
                    self._damage = (pos, reason)
                self.pos = found
                continue
            if self._damage is None:
                self._damage = (pos, info)
            found, intact = _resync(data, pos + 1, final)
            if found is None:  # nothing here can start a record (a trailing sync byte would have)
                self.pos = len(data)
                break
            self.pos = found
            if not intact:
                break
        return items


def scan(data: bytes) -> list[Record | Damage]:
    """The intact records and damaged stretches of a whole received stream, in order."""
    scanner = FrameScanner()
    items = scanner.feed(data)
    return items + scanner.finish()
