"""Firmware on the emulated Cortex-M boards: bit-exact with the host runtime, repeatable counts.

Needs arm-none-eabi-gcc (+ newlib) and qemu-system-arm: without them these tests fail with the
install command, they are not skipped (CI installs them).
"""

import numpy as np
import pytest

from mcuforge import firmware
from mcuforge.firmware import FirmwareRunError, run_on_qemu
from mcuforge.runtime import execute
from mcuforge.trace import HostTraceRecorder, Trace, program_crc

from conftest import compiled, program_inputs

MLPERF_TINY = ("ds_cnn", "mobilenet_v1_025", "resnet8", "fc_autoencoder")


@pytest.fixture(scope="module", autouse=True)
def toolchain():
    for tool in ("arm-none-eabi-gcc", "arm-none-eabi-size", "qemu-system-arm"):
        try:
            firmware.toolchain.require(tool)
        except firmware.ToolchainMissing as exc:
            pytest.fail(str(exc), pytrace=False)


def assert_same_as_host(prog, inputs, target, trace=False):
    expected = execute(prog.graph, inputs)
    outputs, recorded, facts = run_on_qemu(prog.to_bytes(), inputs, target, trace=trace)
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected, strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    return outputs, recorded, facts


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
@pytest.mark.parametrize("name", MLPERF_TINY)
def test_zoo_model_bit_exact_on_board(name, target, rng):
    _, _, prog = compiled(name, target)
    _, recorded, facts = assert_same_as_host(prog, program_inputs(prog.graph, rng), target)
    assert recorded is None
    assert facts["board"] == firmware.BOARDS[target].machine
    assert facts["instructions"] > 1000 * len(prog.graph.ops)
    assert 0 < facts["invoke_stack_bytes"] < facts["stack_bytes"] < facts["stack_size"]
    assert facts["program_bytes"] == len(prog.to_bytes())


def test_systick_counts_instructions():
    """A loop of exactly 1,000,000 instructions measures 1,000,000 to within a SysTick period."""
    rng = np.random.default_rng(1)
    for target in ("cortex-m4", "cortex-m55"):
        _, _, prog = compiled("fc_autoencoder", target)
        _, _, facts = run_on_qemu(prog.to_bytes(), program_inputs(prog.graph, rng), target)
        assert facts["calibration_expected"] == 1_000_000
        assert abs(facts["calibration_instructions"] - 1_000_000) <= facts["instruction_resolution"]


def test_board_reports_runtime_status():
    """A program for the M55 (MVE) on the M4 board: the runtime's MF_ERR_TARGET, named."""
    _, _, prog = compiled("fc_autoencoder", "cortex-m55")
    inputs = program_inputs(prog.graph, np.random.default_rng(2))
    with pytest.raises(FirmwareRunError, match=r"cortex-m4 on QEMU mps2-an386: mf_program_load failed with "
                                               r"MF_ERR_TARGET"):
        run_on_qemu(prog.to_bytes(), inputs, "cortex-m4")


def test_run_on_a_board_of_another_isa_says_how_to_fix_it():
    """prog.run checks the board before building firmware: the message names both targets and the fix."""
    _, example, prog = compiled("fc_autoencoder", "cortex-m55")
    with pytest.raises(FirmwareRunError, match=r"compiled for cortex-m55 \(isa mve\).*cortex-m4 \(isa dsp\).*"
                                               r"--target cortex-m4"):
        prog.run(*example, backend="qemu", target="cortex-m4")


def test_inputs_are_checked_before_the_board_runs():
    _, _, prog = compiled("fc_autoencoder", "cortex-m4")
    t = prog.graph.tensors[prog.graph.inputs[0]]
    with pytest.raises(ValueError, match="expected"):
        run_on_qemu(prog.to_bytes(), [np.zeros(t.shape, np.float64)], "cortex-m4")


def test_missing_toolchain_says_how_to_install(monkeypatch):
    monkeypatch.setattr(firmware.toolchain.shutil, "which", lambda tool: None)
    hint = "arm-none-eabi-gcc not found.*apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm"
    with pytest.raises(firmware.ToolchainMissing, match=hint):
        firmware.build("cortex-m4")


def test_firmware_build_is_cached():
    first = firmware.build("cortex-m4", trace=False)
    stamp = first.stat().st_mtime_ns
    assert firmware.build("cortex-m4", trace=False) == first
    assert first.stat().st_mtime_ns == stamp
    assert firmware.build("cortex-m4", trace=True) != first


def test_size_report():
    _, _, prog = compiled("ds_cnn", "cortex-m4")
    report = firmware.size_report("cortex-m4", prog)
    assert report.runtime_code_bytes == sum(report.runtime_objects.values()) > 1000
    assert report.runtime_code_bytes_traced > report.runtime_code_bytes
    assert report.constant_bytes == prog.constant_bytes
    assert report.arena_bytes >= prog.arena_bytes
    assert 0 < report.invoke_stack_bytes < report.stack_bytes
    assert "runtime code" in firmware.format_size_report(report)


# A program runs on every core of its ISA: the M7 and M33 boards run the M4's (DSP) program, built
# into firmware with their own -mcpu flags; this saves two model compilations.
PROGRAM_TARGET_FOR_BOARD = {"cortex-m3": "cortex-m3", "cortex-m4": "cortex-m4", "cortex-m7": "cortex-m4",
                            "cortex-m33": "cortex-m4", "cortex-m55": "cortex-m55"}


@pytest.mark.slow
@pytest.mark.parametrize("target", list(firmware.BOARDS))
def test_every_board_bit_exact(target, rng):
    _, _, prog = compiled("ds_cnn", PROGRAM_TARGET_FOR_BOARD[target])
    _, _, facts = assert_same_as_host(prog, program_inputs(prog.graph, rng), target)
    assert abs(facts["calibration_instructions"] - 1_000_000) <= facts["instruction_resolution"]


def test_trace_from_board_parses_and_repeats_exactly():
    """Two runs of the same program and inputs: the same instruction count for every op."""
    _, _, prog = compiled("ds_cnn", "cortex-m4")
    inputs = program_inputs(prog.graph, np.random.default_rng(3))
    traces, totals = [], []
    for _ in range(2):
        _, recorded, facts = assert_same_as_host(prog, inputs, "cortex-m4", trace=True)
        trace = Trace.from_bytes(recorded)
        assert not trace.truncated, trace.truncation_reason
        assert trace.unit == "instructions" and not trace.full
        assert trace.program_crc == program_crc(prog.to_bytes())
        assert [ev.op_index for ev in trace.ops] == list(range(len(prog.graph.ops)))
        assert len(trace.runs) == 1 and trace.runs[0].status == 0
        durations = [ev.duration for ev in trace.ops]
        assert all(d > 0 for d in durations)
        assert sum(durations) <= trace.runs[0].duration <= facts["instructions"]
        traces.append(durations)
        totals.append(facts["instructions"])
    assert traces[0] == traces[1]
    assert totals[0] == totals[1]


def test_full_trace_matches_host_op_by_op():
    """Every op's output from the board's full trace equals the host runtime's, byte for byte."""
    _, _, prog = compiled("resnet8", "cortex-m55")
    inputs = program_inputs(prog.graph, np.random.default_rng(4))
    _, recorded, _ = assert_same_as_host(prog, inputs, "cortex-m55", trace="full")
    board = Trace.from_bytes(recorded)
    recorder = HostTraceRecorder(prog.graph, prog.to_bytes(), full=True)
    execute(prog.graph, inputs, recorder)
    host = Trace.from_bytes(recorder.finish())
    assert board.full and not board.truncated
    assert len(board.tensors) == len(host.tensors) >= len(prog.graph.ops)
    for got, want in zip(board.tensors, host.tensors, strict=True):
        assert (got.op_index, got.output_slot, got.tensor_index, got.dtype) == \
            (want.op_index, want.output_slot, want.tensor_index, want.dtype)
        assert got.data == want.data, f"op {got.op_index} ({prog.graph.ops[got.op_index].kind})"
