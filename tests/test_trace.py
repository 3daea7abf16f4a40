"""The trace stream (docs/trace.md): byte layout, the host recorder, damaged streams, debug record."""

import json
import struct
import zlib

import numpy as np
import pytest

import mcuforge
from mcuforge import runtime
from mcuforge.program.layout import DTYPE_CODES
from mcuforge.trace import HostTraceRecorder, Trace, TraceFormatError, TraceWriter, program_crc
from mcuforge.trace import format as F

from conftest import compiled


def record_offsets(data: bytes) -> list[int]:
    """Start offset of every record of an intact stream, plus the end of the stream."""
    offsets, pos = [], 0
    while pos < len(data):
        offsets.append(pos)
        (length,) = struct.unpack_from("<I", data, pos + 4)
        pos += 8 + length + 4
    return offsets + [pos]


def synthetic_stream(runs: int = 2, ops: int = 3, full: bool = True) -> bytes:
    w = TraceWriter(unit="cycles", full=full, program_crc=0xDEADBEEF, op_count=ops)
    w.alloc("arena", 0, 0, 4096, 0, ops - 1)
    t = 100
    for r in range(runs):
        w.run_start(r, t)
        for i in range(ops):
            w.op_start(i, i, t + 1)
            if full:
                w.tensor(i, 0, 10 + i, DTYPE_CODES["int8"], bytes(range(i, i + 8)))
            w.op_end(i, i, t + 10 * (i + 1))
            t += 10 * (i + 1) + 1
        w.run_end(r, t + 2, 0)
        t += 5
    return w.finish()


def rows(trace: Trace) -> list[tuple]:
    return [(e.run, e.op_index, e.debug_handle, e.start, e.end) for e in trace.ops]


# -- the byte layout ----------------------------------------------------------------------------------

def test_record_framing_matches_the_spec_byte_for_byte():
    record = F.encode_record(F.RUN_START, struct.pack("<IQ", 7, 0x0102030405060708))
    assert record[:8] == bytes([0xA5, 0x5A, 2, 0, 12, 0, 0, 0])
    assert record[8:20] == bytes([7, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1])
    assert struct.unpack_from("<I", record, 20)[0] == zlib.crc32(record[2:20])
    assert len(record) == 24


def test_stream_start_payload_layout():
    data = TraceWriter(unit="instructions", full=True, program_crc=0x11223344, op_count=5).finish()
    payload = data[8:8 + 16]
    assert payload == bytes([1, 0, 1, 0, 2, 1, 0, 0, 0x44, 0x33, 0x22, 0x11, 5, 0, 0, 0])  # format 1.1
    # STREAM_END (sequence byte 1: one record before it) counts the records before it
    assert data[-16:-4] == bytes([0xA5, 0x5A, 8, 1, 4, 0, 0, 0, 1, 0, 0, 0])


def test_every_record_carries_its_sequence_byte():
    data = synthetic_stream(runs=40, ops=3, full=False)  # more than 256 records: the byte wraps
    offsets = record_offsets(data)[:-1]
    assert len(offsets) > 256
    assert [data[o + 3] for o in offsets] == [i % 256 for i in range(len(offsets))]
    assert [r.seq for r in Trace.from_bytes(data).records] == [i % 256 for i in range(len(offsets))]


def test_writer_reader_round_trip(tmp_path):
    data = synthetic_stream()
    trace = Trace.from_bytes(data)
    assert not trace.truncated
    assert (trace.version, trace.unit, trace.full, trace.program_crc, trace.op_count) == \
        ((1, 1), "cycles", True, 0xDEADBEEF, 3)
    assert trace.intact and not trace.lossy and trace.gaps == []
    assert [r.index for r in trace.runs] == [0, 1] and all(r.status == 0 and r.complete for r in trace.runs)
    assert [(e.run, e.op_index) for e in trace.ops] == [(r, i) for r in range(2) for i in range(3)]
    assert trace.ops[1].duration == 19
    assert trace.tensor(2, run=1).data == bytes(range(2, 10)) and trace.tensor(2, run=1).dtype == "int8"
    assert trace.allocs[0].kind == "arena" and trace.allocs[0].size == 4096
    assert trace.record_count == len(record_offsets(data)) - 1
    assert trace.to_bytes() == data
    path = trace.save(tmp_path / "t.trace")
    assert Trace.load(path).to_bytes() == data and rows(Trace.load(path)) == rows(trace)


# -- damaged streams ------------------------------------------------------------------------------------

def assert_prefix(partial: Trace, intact: Trace) -> None:
    """A cut trace keeps an exact prefix of the intact trace's results, nothing else."""
    assert rows(partial) == rows(intact)[:len(partial.ops)]
    kept = [(d.run, d.op_index, d.output_slot, d.data) for d in partial.tensors]
    assert kept == [(d.run, d.op_index, d.output_slot, d.data) for d in intact.tensors][:len(kept)]
    for run in partial.runs:
        whole = intact.runs[run.index]
        assert run.start == whole.start and run.end in (None, whole.end)
    assert partial.allocs == intact.allocs[:len(partial.allocs)]


def assert_subset(damaged: Trace, intact: Trace) -> None:
    """Everything a damaged trace reports is exactly as in the intact trace: never a wrong value."""
    assert set(rows(damaged)) <= set(rows(intact))
    whole = {(d.run, d.op_index, d.output_slot): d for d in intact.tensors}
    assert all(whole[(d.run, d.op_index, d.output_slot)] == d for d in damaged.tensors)
    runs = {r.index: r for r in intact.runs}
    for run in damaged.runs:
        assert run.start in (None, runs[run.index].start) and run.end in (None, runs[run.index].end)
        assert run.status == runs[run.index].status or run.end is None
    assert set(damaged.allocs) <= set(intact.allocs)


def resequenced(records: list[bytes]) -> bytes:
    """Records re-encoded with sequence bytes counting from 0 (for streams spliced by hand)."""
    out = b""
    for i, rec in enumerate(records):
        out += F.encode_record(rec[2], rec[8:-4], seq=i)
    return out


def split(data: bytes) -> list[bytes]:
    offsets = record_offsets(data)
    return [data[a:b] for a, b in zip(offsets, offsets[1:], strict=False)]


def test_cut_at_every_record_boundary_and_inside_every_record():
    data = synthetic_stream()
    intact = Trace.from_bytes(data)
    offsets = record_offsets(data)
    first_record_end = offsets[1]
    cuts = sorted({c for start, end in zip(offsets, offsets[1:], strict=False)
                   for c in (start, start + 1, start + 5, start + 9, (start + end) // 2, end - 1)})
    for cut in cuts:
        if cut < first_record_end:
            with pytest.raises(TraceFormatError, match="STREAM_START"):
                Trace.from_bytes(data[:cut])
            continue
        partial = Trace.from_bytes(data[:cut])
        assert partial.truncated and not partial.gaps, cut
        assert partial.truncation_offset <= cut and partial.truncation_reason
        assert_prefix(partial, intact)
    # the cut before STREAM_END loses no event, but is still flagged
    partial = Trace.from_bytes(data[:offsets[-2]])
    assert partial.truncated and "STREAM_END" in partial.truncation_reason and rows(partial) == rows(intact)


def test_every_flipped_byte_costs_only_the_record_it_hit():
    """Resynchronization: a damaged record is skipped, reported as one gap, and every other record
    is read (an op loses its event only when its own OP_START or OP_END was hit)."""
    data = synthetic_stream(runs=2, ops=3, full=False)
    intact = Trace.from_bytes(data)
    offsets = record_offsets(data)
    records = intact.records
    for pos in range(len(data)):
        damaged = bytearray(data)
        damaged[pos] ^= 0x40
        hit = next(i for i, (a, b) in enumerate(zip(offsets, offsets[1:], strict=False)) if a <= pos < b)
        if hit == 0:
            with pytest.raises(TraceFormatError):
                Trace.from_bytes(bytes(damaged))
            continue
        trace = Trace.from_bytes(bytes(damaged))
        assert_subset(trace, intact)
        assert trace.records == records[:hit] + records[hit + 1:] or hit == len(records) - 1, pos
        if hit == len(records) - 1:  # STREAM_END itself: the stream is cut there, nothing else lost
            assert trace.truncated and not trace.gaps and rows(trace) == rows(intact)
            continue
        assert not trace.truncated, (pos, trace.truncation_reason)
        (gap,) = trace.gaps
        assert (gap.offset, gap.skipped, gap.records_lost, gap.exact) == (offsets[hit], offsets[hit + 1] - offsets[hit],
                                                                           1, True), pos
        lost = records[hit]
        if lost.type in (F.OP_START, F.OP_END):
            op_index = struct.unpack_from("<I", lost.payload)[0]
            run = next(r.index for r in intact.runs if r.start <= struct.unpack_from("<Q", lost.payload, 8)[0]
                       <= r.end)
            assert set(rows(intact)) - set(rows(trace)) == {e for e in rows(intact) if e[:2] == (run, op_index)}
        else:
            assert rows(trace) == rows(intact)
        assert len(trace.runs) == 2 and trace.records_lost == 1
        if lost.type in (F.RUN_START, F.RUN_END, F.OP_START, F.OP_END):
            assert gap.run in (0, 1) and trace.runs[gap.run].gaps == 1


def test_inserted_garbage_loses_nothing():
    data = synthetic_stream(runs=2, ops=3, full=True)
    intact = Trace.from_bytes(data)
    offsets = record_offsets(data)
    garbage = bytes([0xA5, 0x5A, 0x04, 0x00, 0x10, 0, 0, 0]) + b"noise on the line"  # a false header too
    spliced = data[:offsets[5]] + garbage + data[offsets[5]:]
    trace = Trace.from_bytes(spliced)
    assert rows(trace) == rows(intact) and trace.tensors == intact.tensors and not trace.truncated
    (gap,) = trace.gaps
    assert (gap.offset, gap.skipped, gap.records_lost, gap.exact) == (offsets[5], len(garbage), 0, True)
    assert trace.runs[0].gaps == 1 and trace.runs[1].gaps == 0
    assert "TRACE DAMAGED" in trace.status_line and "runs with gaps: 0" in trace.status_line


def test_wrong_crc_names_the_record_and_reading_goes_on():
    data = bytearray(synthetic_stream(full=False))
    offsets = record_offsets(bytes(data))
    crc_at = offsets[4] - 4  # the CRC of record 3 (the OP_START of op 0)
    data[crc_at] ^= 0xFF
    trace = Trace.from_bytes(bytes(data))
    intact = Trace.from_bytes(synthetic_stream(full=False))
    (gap,) = trace.gaps
    assert "CRC mismatch" in gap.reason and "OP_START" in gap.reason and gap.offset == offsets[3]
    assert rows(trace) == [e for e in rows(intact) if e[:2] != (0, 0)]  # only op 0 of run 0 is lost
    assert trace.runs[0].end == intact.runs[0].end and trace.runs[0].gaps == 1 and trace.runs[1].gaps == 0


def test_missing_stream_end_and_wrong_record_count_are_flagged():
    data = synthetic_stream(full=False)
    offsets = record_offsets(data)
    intact = Trace.from_bytes(data)
    no_end = Trace.from_bytes(data[:offsets[-2]])
    assert no_end.truncated and "without STREAM_END" in no_end.truncation_reason
    assert rows(no_end) == rows(intact)
    bad_count = data[:offsets[-2]] + F.encode_record(F.STREAM_END, struct.pack("<I", 3), seq=len(offsets) - 2)
    trace = Trace.from_bytes(bad_count)
    assert trace.truncated and "counts 3 records" in trace.truncation_reason and not trace.gaps


def test_a_gap_counts_the_records_it_lost():
    data = synthetic_stream(runs=2, ops=3, full=True)
    offsets = record_offsets(data)
    intact = Trace.from_bytes(data)
    # records 6 .. 9 gone (op 1's OP_START, TENSOR and OP_END, op 2's OP_START), garbage in their place
    trace = Trace.from_bytes(data[:offsets[6]] + b"\x00" * 7 + data[offsets[10]:])
    (gap,) = trace.gaps
    assert (gap.offset, gap.skipped, gap.records_lost, gap.exact, gap.run) == (offsets[6], 7, 4, True, 0)
    assert rows(trace) == [e for e in rows(intact) if e[:2] not in ((0, 1), (0, 2))]
    assert trace.records_lost == 4 and not trace.truncated  # STREAM_END's count agrees with the gap


def test_a_lost_run_boundary_is_never_guessed():
    """Records lost across RUN_END/RUN_START: ops after the gap are given to a run only when its
    RUN_END (or a RUN_START after it) says which, never by guessing."""
    data = synthetic_stream(runs=3, ops=3, full=False)
    offsets = record_offsets(data)
    intact = Trace.from_bytes(data)
    # run 0's last OP_END, its RUN_END, run 1's RUN_START and op 0 (records 8 .. 11) are lost
    trace = Trace.from_bytes(data[:offsets[8]] + b"\xff" * 5 + data[offsets[12]:])
    assert_subset(trace, intact)
    assert [(r.index, r.start is None, r.end is None) for r in trace.runs] == [(0, False, True), (1, True, False),
                                                                                (2, False, False)]
    assert rows(trace) == [e for e in rows(intact) if e[:2] not in ((0, 2), (1, 0))]
    # the same with run 1's RUN_END lost too: its ops cannot be placed, and are not reported
    trace = Trace.from_bytes(data[:offsets[8]] + b"\xff" * 5 + data[offsets[12]:offsets[15]] + b"\xff" * 3
                             + data[offsets[16]:])
    assert_subset(trace, intact)
    assert trace.unattributed_ops == 0 or all(e[0] != 1 for e in rows(trace))
    assert all(e[0] in (0, 1, 2) for e in rows(trace))


def test_a_device_drop_is_a_gap_with_its_count():
    w = TraceWriter(unit="cycles", full=False, program_crc=1, op_count=4, lossy=True)
    w.run_start(0, 0)
    w.op_start(0, 0, 1)
    w.op_end(0, 0, 5)
    w.dropped(4, 112)  # ops 1 and 2 never left the device
    w.op_start(3, 3, 30)
    w.op_end(3, 3, 40)
    w.run_end(0, 41, 0)
    trace = Trace.from_bytes(w.finish())
    assert trace.lossy and not trace.truncated and trace.dropped_records == 4 and trace.records_lost == 0
    (gap,) = trace.gaps
    assert gap.device and gap.records_lost == 4 and gap.skipped == 0 and gap.run == 0
    assert [e.op_index for e in trace.ops] == [0, 3] and trace.runs[0].complete and trace.runs[0].gaps == 1
    assert "4 records dropped by the device" in trace.status_line


def test_missing_records_between_intact_ones_are_a_gap():
    data = synthetic_stream(runs=1, ops=3, full=False)
    recs = split(data)
    trace = Trace.from_bytes(b"".join(recs[:4] + recs[6:]))  # two whole records gone, no byte damaged
    (gap,) = trace.gaps
    assert gap.skipped == 0 and gap.records_lost == 2 and "sequence" in gap.reason


def test_a_format_1_0_stream_is_read_without_sequence_bytes():
    data = synthetic_stream(runs=2, ops=3, full=False)
    recs = split(data)
    v10 = [F.encode_record(F.STREAM_START, recs[0][8:10] + b"\x00\x00" + recs[0][12:-4])] + \
        [F.encode_record(r[2], r[8:-4]) for r in recs[1:]]  # minor 0, every sequence byte 0
    trace = Trace.from_bytes(b"".join(v10))
    assert trace.version == (1, 0) and trace.intact and rows(trace) == rows(Trace.from_bytes(data))
    v10[4] = v10[4][:10] + b"?" + v10[4][11:]  # op 0's OP_END of run 0 damaged
    trace = Trace.from_bytes(b"".join(v10))
    (gap,) = trace.gaps
    assert gap.records_lost is None and not gap.exact and trace.records_lost is None
    assert_subset(trace, Trace.from_bytes(data))
    # without sequence bytes the gap's size is unknown: run 0's later ops are placed by its RUN_END
    assert rows(trace) == [e for e in rows(Trace.from_bytes(data)) if e[:2] != (0, 0)]


def test_grammar_errors_are_skipped_and_reported_even_with_valid_crcs():
    w = TraceWriter(unit="ns", full=False, program_crc=1, op_count=2)
    w.run_start(0, 5)
    w.op_end(0, 0, 9)  # no OP_START
    trace = Trace.from_bytes(w.finish())
    assert trace.ops == [] and any("without its OP_START" in g.reason for g in trace.gaps)
    w = TraceWriter(unit="ns", full=False, program_crc=1, op_count=2)
    w.run_start(0, 5)
    w.op_start(0, 0, 9)
    w.op_end(0, 0, 8)  # backwards
    w.run_end(0, 10, 0)
    trace = Trace.from_bytes(w.finish())
    assert trace.ops == [] and any("earlier" in g.reason for g in trace.gaps)
    assert [r.index for r in trace.runs] == [0]


def test_a_stream_without_a_valid_stream_start_is_an_error():
    data = synthetic_stream()
    with pytest.raises(TraceFormatError, match="does not begin with a valid STREAM_START"):
        Trace.from_bytes(b"\x00" + data)
    with pytest.raises(TraceFormatError, match="first record is ALLOC"):
        Trace.from_bytes(data[28:])
    with pytest.raises(TraceFormatError):
        Trace.from_bytes(b"")
    v2 = F.encode_record(F.STREAM_START, struct.pack("<HHBBHII", 2, 0, 0, 0, 0, 1, 1))
    with pytest.raises(TraceFormatError, match="2.0 is not supported"):
        Trace.from_bytes(v2)


def test_an_unknown_record_type_is_skipped():
    data = synthetic_stream(full=False)
    recs = split(data)
    extra = F.encode_record(42, b"from a later minor version")
    end = F.encode_record(F.STREAM_END, struct.pack("<I", len(recs)))
    spliced = resequenced(recs[:3] + [extra] + recs[3:-1] + [end])
    trace = Trace.from_bytes(spliced)
    assert trace.intact and rows(trace) == rows(Trace.from_bytes(data))


def test_an_op_left_open_by_a_failed_run_is_not_reported():
    w = TraceWriter(unit="ns", full=False, program_crc=1, op_count=2)
    w.run_start(0, 0)
    w.op_start(0, 0, 1)
    w.op_end(0, 0, 2)
    w.op_start(1, 1, 3)
    w.run_end(0, 4, 7)  # the runtime's error code
    trace = Trace.from_bytes(w.finish())
    assert trace.intact
    assert [e.op_index for e in trace.ops] == [0] and trace.runs[0].status == 7


# -- the host runtime's trace ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["ds_cnn", "mobilenet_v1_025"])
def test_host_trace_has_one_event_per_executed_op(name):
    _model, example, prog = compiled(name)
    outputs, trace = prog.run(*example, trace=True)
    assert isinstance(trace, Trace) and not trace.truncated and trace.unit == "ns" and not trace.full
    assert trace.program_crc == program_crc(prog.to_bytes()) and trace.op_count == len(prog.graph.ops)
    assert [e.op_index for e in trace.ops] == list(range(len(prog.graph.ops)))
    assert all(e.debug_handle == e.op_index for e in trace.ops)
    run = trace.runs[0]
    assert run.status == 0 and all(run.start <= e.start <= e.end <= run.end for e in trace.ops)
    assert sum(e.duration for e in trace.ops) <= run.duration
    assert all(a.end <= b.start for a, b in zip(trace.ops, trace.ops[1:], strict=False))
    np.testing.assert_array_equal(outputs[0], prog.run(*example)[0])
    assert trace.tensors == []


def test_full_trace_dumps_each_output_as_stored_in_the_arena():
    _model, example, prog = compiled("ds_cnn")
    g = prog.graph
    _outputs, trace = prog.run(*example, trace="full")
    assert trace.full and len(trace.tensors) == sum(len(op.outputs) for op in g.ops)
    names = list(g.tensors)
    for dump in trace.tensors:
        t = g.tensors[g.ops[dump.op_index].outputs[dump.output_slot]]
        assert names[dump.tensor_index] == t.name and dump.dtype == t.dtype and len(dump.data) == t.nbytes
    last = trace.tensor(len(g.ops) - 1)
    raw = prog.run_raw(*example)[0]
    assert last.data == raw.tobytes()  # the program output, int8 bytes in program layout
    # ALLOC: the arena and every activation at its planned offset
    arena = [a for a in trace.allocs if a.kind == "arena"]
    assert len(arena) == 1 and arena[0].size == g.arena_bytes
    placed = {names[a.id]: a for a in trace.allocs if a.kind == "tensor"}
    activations = {n for op in g.ops for n in op.inputs + op.outputs if n and not g.tensors[n].is_constant}
    assert set(placed) == activations
    for name, a in placed.items():
        assert (a.offset, a.size) == (g.tensors[name].offset, g.tensors[name].nbytes)
        assert 0 <= a.first_op <= a.last_op < len(g.ops)
    assert placed[g.inputs[0]].first_op == 0 and placed[g.outputs[0]].last_op == len(g.ops) - 1


def test_several_runs_share_one_stream():
    _model, example, prog = compiled("ds_cnn")
    batch = np.concatenate([example[0].numpy()] * 3)
    _outputs, trace = prog.run(batch, trace=True)
    assert [r.index for r in trace.runs] == [0, 1, 2]
    assert [(e.run, e.op_index) for e in trace.ops] == [(r, i) for r in range(3) for i in range(len(prog.graph.ops))]


def test_tracing_off_records_nothing(monkeypatch):
    _model, example, prog = compiled("ds_cnn")
    made, observers = [], []

    class CountingRecorder(HostTraceRecorder):
        def __init__(self, *args, **kwargs):
            made.append(self)
            super().__init__(*args, **kwargs)

    real_execute = runtime.execute

    def spy(graph, inputs, observer=None, **kwargs):
        observers.append(observer)
        return real_execute(graph, inputs, observer, **kwargs)

    monkeypatch.setattr("mcuforge.trace.HostTraceRecorder", CountingRecorder)
    monkeypatch.setattr(runtime, "execute", spy)
    result = prog.run(*example)
    assert isinstance(result, tuple) and len(result) == 1 and isinstance(result[0], np.ndarray)
    assert made == [] and observers == [None]
    outputs, trace = prog.run(*example, trace=True)  # the same spies do see a traced run
    assert len(made) == 1 and isinstance(observers[-1], CountingRecorder) and len(trace.ops) == len(prog.graph.ops)


# -- the debug record ---------------------------------------------------------------------------------------

def test_debug_record_maps_every_op_to_module_source_and_reference(tmp_path):
    model, _example, prog = compiled("ds_cnn")
    modules = dict(model.named_modules())
    record = prog.debug_record()
    assert record["program_crc32"] == program_crc(prog.to_bytes())
    assert len(record["ops"]) == len(prog.graph.ops)
    for i, (op, info) in enumerate(zip(prog.graph.ops, record["ops"], strict=True)):
        assert info["index"] == info["debug_handle"] == i and info["kind"] == op.kind
        assert info["module"] in modules and info["module_type"] == type(modules[info["module"]]).__name__ \
            or info["module"] == ""
        assert info["source_file"].endswith("mlperf_tiny.py") and info["source_line"] > 0
        assert info["aten"] and info["nodes"]
        outs = info["outputs"]
        assert [o["name"] for o in outs] == op.outputs
        t = prog.graph.tensors[op.outputs[0]]
        assert outs[0]["shape"] == list(t.shape) and outs[0]["layout"] == t.layout
        assert outs[0]["scale"] == t.qparams.scale and outs[0]["zero_point"] == t.qparams.zero_point
        assert info["inputs"][0]["name"] == op.inputs[0]
    first = record["ops"][0]
    assert first["module"] == "stem.0" and first["aten"] == ["conv2d.default", "relu_.default"]
    # conv + BN + ReLU fused: the fp32 value of the op's output is the ReLU node's, in module stem.2
    assert first["reference"] == {"node": "relu_", "module": "stem.2"}
    path = prog.save(tmp_path / "ds.mfp")
    stored = json.loads((tmp_path / "ds.mfp.dbg.json").read_text())
    assert stored == json.loads(json.dumps(record))
    assert json.loads(json.dumps(mcuforge.load(path).debug_record())) == stored
