"""The trace over a UART: the ring-buffer sink on the host with a slow fake UART (under ASan and
UBSan), the firmware's UART0 on QEMU read over ``socket://`` by ``mcuforge capture`` (the same per-op
table as the semihosting path), ``mcuforge run --via uart``, and the trace's timing sources."""

import math
import re
import subprocess

import numpy as np
import pandas as pd
import pytest

from mcuforge import cruntime, firmware
from mcuforge.cli import main
from mcuforge.firmware.qemu import free_port, qemu_command, run_on_qemu, write_run_files
from mcuforge.inspect import Inspector
from mcuforge.trace import Trace

from conftest import compiled, program_inputs


@pytest.fixture(scope="module")
def ds_cnn_m4(tmp_path_factory):
    _, _, prog = compiled("ds_cnn", "cortex-m4")
    return prog, prog.save(tmp_path_factory.mktemp("uart") / "ds_cnn.mfp")


def uart_check(tmp_path, program_path, *, ring, take, every, runs, full=False, dead_after=0, patience=100_000):
    """The sink with a fake UART taking ``take`` bytes every ``every`` polls: its counters and the bytes
    the UART took. A sanitizer report fails the run (-fno-sanitize-recover)."""
    driver = cruntime.build("uart_check", sanitize=True)
    out = tmp_path / "uart.bin"
    done = subprocess.run([str(driver), str(program_path), str(out), str(ring), str(take), str(every), str(runs),
                           str(int(full)), str(dead_after), str(patience)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0 and "Sanitizer" not in done.stderr and "runtime error" not in done.stderr, \
        done.stderr[-3000:]
    return {k: int(v) for k, v in (kv.split("=") for kv in done.stdout.split())}, out.read_bytes()


def test_slow_uart_drops_op_records_counts_and_reports_them(tmp_path, ds_cnn_m4):
    """20 runs through a 256-byte ring on a UART that takes 4 bytes per poll: far more trace than
    ring. Op records that find no room are dropped in pairs and reported; runs are all there."""
    prog, path = ds_cnn_m4
    counters, data = uart_check(tmp_path, path, ring=256, take=4, every=1, runs=20)
    ops = len(prog.graph.ops)
    trace = Trace.from_bytes(data)
    assert len(data) == counters["sent"] > 10 * 256 and counters["failed"] == 0 and counters["lost"] == 0
    assert counters["end"] == 0 and counters["flush"] == 0 and counters["invoke"] == 0
    assert 0 < counters["dropped"] < 20 * ops * 2
    assert trace.lossy and trace.dropped_records == counters["dropped"] and trace.record_count == counters["records"]
    assert not trace.truncated and trace.records_lost == 0 and all(g.device for g in trace.gaps)
    assert [r.index for r in trace.runs] == list(range(20)) and all(r.complete and r.status == 0 for r in trace.runs)
    assert 0 < len(trace.ops) and 2 * len(trace.ops) + trace.dropped_records == 20 * ops * 2
    for event in trace.ops:
        run = trace.runs[event.run]
        assert run.start <= event.start <= event.end <= run.end
    # a fast UART through the same ring drops nothing
    counters, data = uart_check(tmp_path, path, ring=256, take=64, every=1, runs=3)
    assert counters["dropped"] == 0 and Trace.from_bytes(data).intact


def test_full_trace_waits_through_a_ring_smaller_than_its_records(tmp_path, ds_cnn_m4):
    """In full mode every record waits for room (tensors of KBs through a 64-byte ring, four bytes per
    two polls): nothing is dropped and each op's output is the host C runtime's."""
    prog, path = ds_cnn_m4
    counters, data = uart_check(tmp_path, path, ring=64, take=4, every=2, runs=1, full=True)
    assert counters["dropped"] == 0 and counters["failed"] == 0
    trace = Trace.from_bytes(data)
    assert trace.intact and trace.full and len(trace.ops) == len(prog.graph.ops)
    zeros = [np.zeros(prog.graph.tensors[n].shape, np.dtype(prog.graph.tensors[n].dtype)) for n in prog.graph.inputs]
    _, host = cruntime.run_program(prog.to_bytes(), zeros, trace="full")
    host = Trace.from_bytes(host)
    assert max(len(d.data) for d in trace.tensors) > 64
    assert [(d.op_index, d.data) for d in trace.tensors] == [(d.op_index, d.data) for d in host.tensors]


def test_a_dead_uart_stops_the_stream_without_hanging(tmp_path, ds_cnn_m4):
    _prog, path = ds_cnn_m4
    counters, data = uart_check(tmp_path, path, ring=128, take=8, every=1, runs=3, dead_after=500, patience=1000)
    assert counters["failed"] == 1 and counters["flush"] == -1 and counters["end"] != 0
    assert counters["sent"] == len(data) == 500 and counters["lost"] > 0
    trace = Trace.from_bytes(data)
    assert trace.truncated and trace.records_lost == 0


# -- on QEMU: UART0 -> socket:// -> mcuforge capture -> mcuforge inspect -----------------------------

def inspected(prog, trace: Trace) -> pd.DataFrame:
    return Inspector(prog, trace).to_dataframe()[["op_index", "kind", "module", "duration"]]


def assert_same_op_table(got: pd.DataFrame, want: pd.DataFrame, resolution: float) -> None:
    """Op count, kinds and modules equal; each op's instructions equal to the count's resolution
    (a SysTick period: the sinks' code between ops differs, so the count's phase does)."""
    assert list(got["op_index"]) == list(want["op_index"])
    assert list(got["kind"]) == list(want["kind"])
    assert list(got["module"].fillna("")) == list(want["module"].fillna(""))
    diff = (got["duration"].to_numpy() - want["duration"].to_numpy())
    assert np.abs(diff).max() <= math.ceil(resolution), diff  # one period, counted in whole instructions
    assert (want["duration"] > 0).all()


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
def test_uart_capture_gives_the_semihosting_op_table(target, tmp_path, capsys):
    _, _, prog = compiled("ds_cnn", target)
    program = prog.save(tmp_path / "ds_cnn.mfp")
    inputs = program_inputs(prog.graph, np.random.default_rng(8))
    _, semihosted, facts = run_on_qemu(prog.to_bytes(), inputs, target, trace=True)
    # by hand, as on a real board: the firmware writes its trace to UART0, which QEMU serves on a port
    folder = tmp_path / "board"
    folder.mkdir()
    write_run_files(folder, prog.to_bytes(), inputs, trace=True, via="uart")
    port = free_port()
    qemu = subprocess.Popen(qemu_command(target, firmware.build(target, trace=True), port), cwd=folder,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        captured = tmp_path / "uart.trace"
        assert main(["capture", f"socket://127.0.0.1:{port}", "-o", str(captured), "-q", "--timeout", "60",
                     "--open-timeout", "30"]) == 0  # QEMU listens a moment after it starts
        assert qemu.wait(timeout=120) == 0, qemu.stdout.read().decode(errors="replace")
    finally:
        qemu.kill()
        qemu.wait()
    out = capsys.readouterr().out
    assert "STREAM_END received" in out and "trace intact" in out
    trace = Trace.load(captured)
    assert trace.intact and trace.lossy and trace.unit == "instructions" and trace.dropped_records == 0
    csv = tmp_path / "ops.csv"
    assert main(["inspect", str(program), str(captured), "--csv", str(csv)]) == 0
    table = capsys.readouterr().out
    assert "trace intact: 1 run(s)" in table and all(op.kind in table for op in prog.graph.ops)
    got = pd.read_csv(csv)[["op_index", "kind", "module", "duration"]]
    assert_same_op_table(got, inspected(prog, Trace.from_bytes(semihosted)), facts["instruction_resolution"])


def test_run_via_uart_end_to_end(tmp_path, capsys, ds_cnn_m4):
    prog, program = ds_cnn_m4
    inputs = tmp_path / "x.npy"
    np.save(inputs, np.random.default_rng(2).standard_normal(prog.input_shapes[0]).astype(np.float32))
    for via in ("semihosting", "uart"):
        assert main(["run", str(program), "--on", "qemu", "--via", via, "--inputs", str(inputs),
                     "--trace", str(tmp_path / f"{via}.trace"), "-o", str(tmp_path / f"{via}.npz")]) == 0
    out = capsys.readouterr().out
    assert "trace over UART0 (0 records dropped)" in out
    uart, semihosted = (Trace.load(tmp_path / f"{via}.trace") for via in ("uart", "semihosting"))
    assert uart.intact and semihosted.intact and not semihosted.lossy and uart.lossy
    assert_same_op_table(inspected(prog, uart), inspected(prog, semihosted), firmware.BOARDS["cortex-m4"].
                         instructions_per_tick)
    a, b = np.load(tmp_path / "uart.npz"), np.load(tmp_path / "semihosting.npz")
    assert all(np.array_equal(a[k], b[k]) for k in a.files)


@pytest.mark.parametrize(("target", "program_target"), [("cortex-m3", "cortex-m3"), ("cortex-m7", "cortex-m4"),
                                                      ("cortex-m33", "cortex-m4")])
def test_every_board_sends_its_trace_on_uart0(target, program_target):
    """UART0's address on each board (the secure alias on the M33 and M55 boards, which boot secure)."""
    _, _, prog = compiled("ds_cnn", program_target)  # the programs test_firmware runs on these boards
    inputs = program_inputs(prog.graph, np.random.default_rng(4))
    outputs, recorded, facts = run_on_qemu(prog.to_bytes(), inputs, target, trace=True, via="uart")
    trace = Trace.from_bytes(recorded)
    assert trace.intact and len(trace.ops) == len(prog.graph.ops) and facts["trace_bytes"] == len(recorded)
    assert all(np.array_equal(a, b) for a, b in zip(outputs, run_on_qemu(prog.to_bytes(), inputs, target)[0],
                                                    strict=True))


def test_capture_says_when_no_trace_arrives(tmp_path, capsys):
    port = free_port()
    import socket
    import threading

    with socket.socket() as server:
        server.bind(("127.0.0.1", port))
        server.listen(1)

        def talk():
            conn, _ = server.accept()
            conn.sendall(b"boot banner, no trace\r\n")
            conn.close()

        threading.Thread(target=talk, daemon=True).start()
        assert main(["capture", f"socket://127.0.0.1:{port}", "-o", str(tmp_path / "t.bin"), "-q"]) == 2
    assert "no trace stream arrived" in capsys.readouterr().err


# -- timing sources --------------------------------------------------------------------------------------

@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
def test_trace_timers(target, tmp_path, capsys):
    """SysTick counts the processor's cycles (under QEMU: 1e9 / clock instructions each); DWT CYCCNT
    builds and runs, and reads 0 under QEMU; the Inspector turns cycles into milliseconds."""
    _, _, prog = compiled("ds_cnn", target)
    board = firmware.BOARDS[target]
    inputs = program_inputs(prog.graph, np.random.default_rng(9))
    traces = {timer: Trace.from_bytes(run_on_qemu(prog.to_bytes(), inputs, target, trace=True, timer=timer)[1])
              for timer in firmware.builder.TIMERS}
    assert {t: tr.unit for t, tr in traces.items()} == {"icount": "instructions", "systick": "cycles", "dwt": "cycles"}
    # Both clocks read SysTick (the icount one scaled to instructions and floored: board/timer.c), each at its own
    # phase: a duration is within a tick of the truth in either, and the floor adds one instruction.
    for cycles, instructions in zip(traces["systick"].ops, traces["icount"].ops, strict=True):
        assert abs(cycles.duration * board.instructions_per_tick - instructions.duration) <= \
            2 * board.instructions_per_tick + 1
    assert all(e.duration == 0 for e in traces["dwt"].ops)  # QEMU 7.2 does not count CYCCNT
    df = Inspector(prog, traces["systick"], clock_hz=board.clock_hz).to_dataframe()
    np.testing.assert_allclose(df["ms"], df["duration"] * 1e3 / board.clock_hz)
    path = traces["systick"].save(tmp_path / "cycles.trace")
    program = prog.save(tmp_path / "p.mfp")
    assert main(["inspect", str(program), str(path), "--clock-hz", str(board.clock_hz)]) == 0
    assert re.search(r"time \(cycles\)\s+ms", capsys.readouterr().out)
    icount = traces["icount"].save(tmp_path / "instructions.trace")
    assert main(["inspect", str(program), str(icount), "--clock-hz", "1e8"]) == 2
    assert "counts instructions, not cycles" in capsys.readouterr().err


def test_every_board_builds_every_timer():
    for target in firmware.BOARDS:
        for timer in firmware.builder.TIMERS:
            assert firmware.build(target, trace=True, timer=timer).is_file()
