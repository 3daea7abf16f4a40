"""The trace reader on a noisy line: random byte flips, dropped bytes and inserted garbage.

At rates from 1e-5 to 1e-2 per byte (each kind), on lossless full traces and on lossy event traces
with a device's DROPPED records: every record the reader keeps is byte-identical to the clean
stream's, every record whose bytes were not touched is kept, each gap reports where it is, the
bytes it skipped and the records it lost, and no op event, tensor or run differs from the clean
trace's (an op whose records were all untouched is reported, or counted as one whose run is unknown).
"""

import numpy as np
import pytest

from mcuforge.program.layout import DTYPE_CODES
from mcuforge.trace import Trace, TraceFormatError, TraceWriter
from mcuforge.trace import format as F

RATES = (1e-5, 1e-4, 1e-3, 1e-2)


def make_stream(rng: np.random.Generator, *, runs: int, ops: int, full: bool, lossy: bool,
                max_tensor: int = 300) -> bytes:
    """A stream as a runtime writes it, with random times and tensor bytes (which hold sync bytes
    and false headers now and then); a lossy one has DROPPED records where op pairs were dropped."""
    w = TraceWriter(unit="cycles", full=full, program_crc=0x5EED, op_count=ops, lossy=lossy)
    w.alloc("arena", 0, 0, 1 << 16, 0, ops - 1)
    for i in range(ops):
        w.alloc("tensor", i, 16 * i, 64, i, i + 1)
    t = 1000
    for r in range(runs):
        w.run_start(r, t)
        dropped = 0
        for i in range(ops):
            start, t = t + int(rng.integers(1, 50)), t + int(rng.integers(60, 5000))
            if lossy and rng.random() < 0.1:
                dropped += 1
                continue
            if dropped:
                w.dropped(2 * dropped, 56 * dropped)
                dropped = 0
            w.op_start(i, i, start)
            if full:
                data = rng.integers(0, 256, int(rng.integers(1, max_tensor)), dtype=np.uint8).tobytes()
                if rng.random() < 0.2:
                    data = data[:10] + F.SYNC + data[10:]
                w.tensor(i, 0, i, DTYPE_CODES["int8"], data)
            w.op_end(i, i, t)
        if dropped:
            w.dropped(2 * dropped, 56 * dropped)
        t += 20
        w.run_end(r, t, 0)
    return w.finish()


def add_noise(data: bytes, rate: float, rng: np.random.Generator,
              spare: int = 0) -> tuple[bytes, np.ndarray, np.ndarray]:
    """Each byte from ``spare`` on flipped, dropped, or preceded by 1-8 garbage bytes with probability
    ``rate`` each. Returns the noisy bytes and, per input byte, whether it was flipped or dropped, and
    whether garbage was inserted right before it."""
    n = len(data)
    flip, drop, insert = (rng.random(n) < rate for _ in range(3))
    for mask in (flip, drop, insert):
        mask[:spare] = False
    out = bytearray()
    last = 0
    for i in np.flatnonzero(flip | drop | insert):
        out += data[last:i]
        if insert[i]:
            out += rng.integers(0, 256, int(rng.integers(1, 9)), dtype=np.uint8).tobytes()
        if not drop[i]:
            out.append(data[i] ^ int(rng.integers(1, 256)) if flip[i] else data[i])
        last = i + 1
    out += data[last:]
    # Dropping one byte of a run of equal bytes reads the same as dropping any other of the run: it
    # may take a byte of the next record (the reader then keeps this one, intact, and loses that one).
    for i in np.flatnonzero(drop):
        k = i + 1
        while k < n and data[k] == data[i]:
            drop[k] = True
            k += 1
    return bytes(out), flip | drop, insert


def key(record):
    return record.type, record.seq, record.payload


def check(clean: Trace, noisy: bytes, damaged: np.ndarray, inserted: np.ndarray) -> Trace | None:
    records = clean.records
    # a record is touched if one of its bytes was flipped or dropped, or garbage went inside it
    touched = [bool(damaged[r.offset:r.end].any() or inserted[r.offset + 1:r.end].any()) for r in records]
    if touched[0] or inserted[0]:  # the stream must begin with its STREAM_START: else an error
        with pytest.raises(TraceFormatError, match="STREAM_START"):
            Trace.from_bytes(noisy)
        return None
    trace = Trace.from_bytes(noisy)
    # every kept record is a clean record, in order; every untouched record is kept
    kept, j = [], 0
    for record in trace.records:
        while j < len(records) and key(records[j]) != key(record):
            j += 1
        assert j < len(records), f"record at {record.offset} ({record.name}) is not in the clean stream"
        kept.append(j)
        j += 1
    untouched = {i for i, t in enumerate(touched) if not t}
    assert untouched <= set(kept), f"untouched records not recovered: {sorted(untouched - set(kept))[:10]}"
    # every gap: where the next kept record starts, and how many clean records it lost
    line = [g for g in trace.gaps if not g.device]
    assert not any("out of order" in g.reason for g in trace.gaps)
    by_offset = {r.offset: n for n, r in enumerate(trace.records)}
    for gap in line:
        nxt = by_offset[gap.offset + gap.skipped]
        truth = kept[nxt] - kept[nxt - 1] - 1
        assert gap.records_lost == truth if gap.exact else (truth - gap.records_lost) % 256 == 0, (gap, truth)
    if all(g.exact for g in line):
        assert sum(g.records_lost for g in line) == kept[-1] + 1 - len(kept)
    assert trace.truncated == (kept[-1] != len(records) - 1)
    # the meaning: nothing differs from the clean trace, untouched ops are all there
    clean_ops = {(e.run, e.op_index): e for e in clean.ops}
    assert all(clean_ops[(e.run, e.op_index)] == e for e in trace.ops)
    assert len({(e.run, e.op_index) for e in trace.ops}) == len(trace.ops)  # none twice
    assert [(e.run, e.op_index) for e in trace.ops] == sorted((e.run, e.op_index) for e in trace.ops)
    assert len({d.run for d in trace.tensors}) <= len(trace.runs)
    assert len({(d.run, d.op_index, d.output_slot) for d in trace.tensors}) == len(trace.tensors)
    clean_dumps = {(d.run, d.op_index, d.output_slot): d for d in clean.tensors}
    assert all(clean_dumps[(d.run, d.op_index, d.output_slot)] == d for d in trace.tensors)
    clean_runs = {r.index: r for r in clean.runs}
    assert [r.index for r in trace.runs] == sorted({r.index for r in trace.runs})
    for run in trace.runs:
        whole = clean_runs[run.index]
        assert run.start in (None, whole.start) and run.end in (None, whole.end)
        assert run.end is None or run.status == whole.status
    assert {g.run for g in trace.gaps if g.run is not None} <= {r.index for r in trace.runs if r.gaps}
    op_records = {}  # (run, op) -> clean record indices of its OP_START .. OP_END
    run, first = None, None
    for i, r in enumerate(records):
        if r.type == F.RUN_START:
            run = int.from_bytes(r.payload[:4], "little")
        elif r.type == F.OP_START:
            first = i
        elif r.type == F.OP_END:
            op_records[(run, int.from_bytes(r.payload[:4], "little"))] = range(first, i + 1)
    whole_ops = {k for k, span in op_records.items() if not any(touched[i] for i in span)}
    reported = {(e.run, e.op_index) for e in trace.ops}
    assert len(whole_ops - reported) <= trace.unattributed_ops
    return trace


@pytest.mark.parametrize("rate", RATES)
@pytest.mark.parametrize(("full", "lossy"), [(True, False), (False, True)], ids=["full", "lossy-events"])
def test_noisy_line(rate, full, lossy):
    """The STREAM_START is spared here (a stream without one is an error: the test below)."""
    rng = np.random.default_rng(int(rate * 1e6) + 7 * full)
    for _ in range(6):
        data = make_stream(rng, runs=4, ops=60, full=full, lossy=lossy)
        clean = Trace.from_bytes(data)
        assert clean.intact or clean.dropped_records
        trace = check(clean, *add_noise(data, rate, rng, spare=clean.records[0].size))
        assert trace.dropped_records <= clean.dropped_records


def test_damage_of_every_kind_in_one_record_at_a_time():
    """One flip, one dropped byte or one garbage byte at every offset of a short stream."""
    rng = np.random.default_rng(11)
    data = make_stream(rng, runs=2, ops=4, full=True, lossy=False, max_tensor=40)
    clean = Trace.from_bytes(data)
    for pos in range(len(data)):
        here, nowhere = np.zeros(len(data), bool), np.zeros(len(data), bool)
        here[pos] = True
        check(clean, data[:pos] + bytes([data[pos] ^ 0x21]) + data[pos + 1:], here, nowhere)
        check(clean, data[:pos] + data[pos + 1:], here, nowhere)
        check(clean, data[:pos] + b"\x5a" + data[pos:], nowhere, here)


@pytest.mark.parametrize("rate", [0.0, 1e-3, 1e-2])
def test_framing_bytes_as_they_come_is_framing_them_at_once(rate):
    """The capture frames a live stream piece by piece: the same records and damage as reading the
    whole stream, whatever the pieces (a sync byte, a header or a CRC split across two reads)."""
    from mcuforge.trace.framing import Damage, FrameScanner, scan

    rng = np.random.default_rng(5)
    data = make_stream(rng, runs=2, ops=30, full=True, lossy=False)
    noisy, _damaged, _inserted = add_noise(data, rate, rng)
    def where(items):  # a damage's reason may quote fewer bytes when fewer had come
        return [(i.offset, i.skipped, i.at_end) if isinstance(i, Damage) else i for i in items]

    whole = where(scan(noisy))
    for sizes in ((1,), (2, 3, 5, 7), (64, 1000)):
        scanner, items, pos, k = FrameScanner(), [], 0, 0
        while pos < len(noisy):
            n = sizes[k % len(sizes)]
            items += scanner.feed(noisy[pos:pos + n])
            pos, k = pos + n, k + 1
        assert where(items + scanner.finish()) == whole
