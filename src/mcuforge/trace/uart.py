"""Capturing a trace stream from a serial port: a board's UART, or QEMU's ``-serial tcp:...``.

``capture(port)`` opens ``port`` with pyserial (a device path such as ``/dev/ttyACM0``, or any URL
pyserial knows: ``socket://host:port`` reaches QEMU's ``-serial tcp:host:port,server=on``), reads
until the stream's STREAM_END arrives, or no byte came for ``timeout`` seconds, or the port closed,
and returns the stream from its STREAM_START on (bytes before it, such as a boot banner, are
skipped). Records are framed as they arrive (:class:`~mcuforge.trace.framing.FrameScanner`), so the
progress bar counts records and runs while they come, and damaged stretches are skipped as the
reader skips them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from tqdm import tqdm

from . import format as F
from .framing import Damage, FrameScanner, Record

DEFAULT_BAUDRATE = 115200
READ_CHUNK = 4096


class SerialCaptureError(RuntimeError):
    """The port could not be opened, or no trace stream arrived on it."""


@dataclass
class Capture:
    data: bytes  # the stream: from its STREAM_START to its STREAM_END, or to where the capture stopped
    skipped_before: int  # bytes received before the STREAM_START
    records: int  # intact records received
    runs: int  # RUN_END records received
    damaged: int  # damaged stretches skipped
    ended: bool  # the STREAM_END arrived
    reason: str  # why the capture stopped
    seconds: float

    def summary(self) -> str:
        skipped = f", {self.skipped_before} bytes before it skipped" if self.skipped_before else ""
        damaged = f", {self.damaged} damaged stretch(es)" if self.damaged else ""
        return (f"{len(self.data):,} bytes in {self.seconds:.1f} s: {self.records} records, {self.runs} run(s)"
                f"{damaged}{skipped}; {self.reason}")


def open_port(port: str, baudrate: int = DEFAULT_BAUDRATE, *, open_timeout: float = 0.0,
              alive: Callable[[], bool] | None = None):  # noqa: ANN201 - a serial.SerialBase
    """The port opened with pyserial, retrying for ``open_timeout`` seconds (a QEMU that is starting
    listens a moment later); ``alive`` returning False stops the retries early."""
    import serial

    deadline = time.monotonic() + open_timeout
    while True:
        try:
            return serial.serial_for_url(port, baudrate=baudrate, timeout=0.05)
        except (serial.SerialException, ValueError) as exc:
            if time.monotonic() >= deadline or (alive is not None and not alive()):
                raise SerialCaptureError(f"cannot open {port}: {exc}") from None
            time.sleep(0.05)


class _Stream:
    """The records of the stream as they arrive: where it starts, what it holds, whether it ended."""

    def __init__(self) -> None:
        self.scanner = FrameScanner()
        self.start: int | None = None
        self.end: int | None = None
        self.records = self.runs = self.damaged = 0

    def take(self, items: list[Record | Damage]) -> int:
        """Counts the items; returns how many records of the stream they held."""
        counted = self.records
        for item in items:
            if self.end is not None:
                break
            if isinstance(item, Damage):
                self.damaged += self.start is not None
                continue
            if self.start is None:
                if item.type != F.STREAM_START:
                    continue  # the tail of an earlier stream, before this one's start
                self.start = item.offset
            self.records += 1
            self.runs += item.type == F.RUN_END
            if item.type == F.STREAM_END:
                self.end = item.end
        return self.records - counted

    def data(self) -> bytes:
        if self.start is None:
            return b""
        return bytes(self.scanner.data[self.start:self.end])


def capture(port: str, *, baudrate: int = DEFAULT_BAUDRATE, timeout: float = 10.0,
            max_seconds: float | None = None, progress: bool = True, open_timeout: float = 0.0,
            alive: Callable[[], bool] | None = None) -> Capture:
    """Read one trace stream from ``port``; see the module docstring. ``timeout``: seconds without a
    byte after which the capture stops; ``max_seconds``: at most this long in all."""
    import serial

    stream = _Stream()
    started = time.monotonic()
    reason = ""
    link = open_port(port, baudrate, open_timeout=open_timeout, alive=alive)
    bar = tqdm(desc=f"capturing {port}", unit=" records", disable=not progress, leave=False)
    try:
        last_byte = time.monotonic()
        while stream.end is None:
            now = time.monotonic()
            if now - last_byte > timeout:
                reason = f"no byte for {timeout:g} s"
                break
            if max_seconds is not None and now - started > max_seconds:
                reason = f"stopped after {max_seconds:g} s"
                break
            try:
                # What is waiting (at least 1 byte, up to the read timeout): pyserial drops the bytes a
                # read already holds when the peer closes during it (QEMU exiting), one at a time it
                # loses none. A socket says 1 when anything is waiting.
                chunk = link.read(min(max(link.in_waiting, 1), READ_CHUNK))
            except serial.SerialException as exc:
                reason = f"the port closed ({exc})"
                break
            if not chunk:
                continue
            last_byte = time.monotonic()
            bar.update(stream.take(stream.scanner.feed(chunk)))
            bar.set_postfix(runs=stream.runs, bytes=len(stream.scanner.data), damaged=stream.damaged, refresh=False)
        if stream.end is None:
            stream.take(stream.scanner.finish())
        else:
            reason = "STREAM_END received"
    finally:
        bar.close()
        link.close()
    skipped = stream.start if stream.start is not None else len(stream.scanner.data)
    return Capture(stream.data(), skipped, stream.records, stream.runs, stream.damaged, stream.end is not None,
                   reason, time.monotonic() - started)
