"""The C runtime's run-time guards, on the host build and on an emulated board: an arena smaller than
the program needs is refused before one byte of it is written; an input of the wrong size is refused;
a conv2d_s8 whose planned scratch is smaller than its kernel's need is refused at load (by every
reader, and the writer); the firmware's trace buffer, when writing it out fails, drops the rest of the
stream, counts what it dropped and says so, and never overflows.
"""

from __future__ import annotations

import ctypes
import functools
import tempfile
from pathlib import Path

import numpy as np
import pytest
from test_c_validation import patch

from mcuforge import cruntime
from mcuforge.firmware import FirmwareRunError
from mcuforge.firmware.qemu import boot
from mcuforge.ir import Graph, Op, Tensor, input_bytes, kernel_scratch_bytes, least_scratch_bytes
from mcuforge.plan import plan_arena
from mcuforge.program import ProgramFormatError, deserialize, serialize
from mcuforge.runtime import execute
from mcuforge.trace import Trace

BOARD = "cortex-m4"


def conv_graph(scratch: int | None = None, channels: int = 8) -> Graph:
    """x (1, 6, 6, 3) -> conv2d_s8 3x3 -> (1, 6, 6, channels), with the planned scratch or ``scratch``."""
    rng = np.random.default_rng(0)
    tensors = {
        "x": Tensor("x", (1, 6, 6, 3), "int8"),
        "w": Tensor("w", (channels, 3, 3, 3), "int8", data=rng.integers(-128, 128, (channels, 3, 3, 3), dtype=np.int8)),
        "b": Tensor("b", (channels,), "int32", data=rng.integers(-500, 500, channels).astype(np.int32)),
        "m": Tensor("m", (channels,), "int32", data=np.full(channels, 1 << 30, np.int32)),
        "s": Tensor("s", (channels,), "int8", data=np.full(channels, -6, np.int8)),
        "y": Tensor("y", (1, 6, 6, channels), "int8"),
    }
    op = Op("conv2d_s8", ["x", "w", "b", "m", "s"], ["y"],
            {"input_offset": 1, "output_offset": -3, "stride": [1, 1], "padding": [1, 1], "dilation": [1, 1],
             "act_min": -128, "act_max": 127},
            scratch_bytes=kernel_scratch_bytes("conv2d_s8", (channels, 3, 3, 3), BOARD) if scratch is None else scratch)
    graph = Graph(tensors, [op], ["x"], ["y"], target=BOARD)
    plan_arena(graph)
    return graph


def x_value() -> np.ndarray:
    return np.random.default_rng(1).integers(-128, 128, (1, 6, 6, 3), dtype=np.int8)


def with_scratch(data: bytes, scratch: int) -> bytes:
    """The program with op 0's scratch_bytes replaced (the CRCs recomputed): what the writer refuses."""
    ops_offset = int.from_bytes(data[44:48], "little")
    return patch(data, ops_offset + 28, "<I", scratch)


# ---------------------------------------------------------------------------------------------
# Host C build, through the ctypes binding's own calls


class HostRun:
    """One program loaded by the host C runtime, with raw access to mf_init and mf_set_input."""

    def __init__(self, data: bytes) -> None:
        self.loaded = cruntime.LoadedProgram(data)
        self.lib = self.loaded.lib
        self.ctx = ctypes.create_string_buffer(self.lib.mf_host_sizeof_context())
        self.need = self.loaded.arena_bytes

    def init(self, arena: np.ndarray, size: int) -> str:
        return cruntime.status_name(self.lib.mf_init(self.ctx, self.loaded._program, arena.ctypes.data, size))

    def set_input(self, value: bytes) -> str:
        buf = ctypes.create_string_buffer(value, len(value))
        return cruntime.status_name(self.lib.mf_set_input(self.ctx, 0, buf, len(value)))


def marked_arena(nbytes: int) -> np.ndarray:
    arena = cruntime._aligned(nbytes)
    arena[:] = 0xA5
    return arena


@pytest.mark.parametrize("short_by", [1, 16, 10**9])
def test_host_arena_too_small_is_refused_before_any_write(short_by):
    run = HostRun(serialize(conv_graph()))
    assert run.need > kernel_scratch_bytes("conv2d_s8", (8, 3, 3, 3), BOARD)  # activations and the conv's scratch
    arena = marked_arena(run.need)
    assert run.init(arena, max(run.need - short_by, 0)) == "MF_ERR_ARENA_TOO_SMALL"
    assert (arena == 0xA5).all(), "mf_init wrote into an arena it refused"
    assert run.set_input(x_value().tobytes()) == "MF_ERR_STATE"  # nothing runs on a refused context
    assert run.init(arena, run.need) == "MF_OK"
    assert (arena == 0).all()  # accepted: zeroed, as documented


def test_host_input_of_the_wrong_size_is_refused():
    run = HostRun(serialize(conv_graph()))
    arena = cruntime._aligned(run.need)
    assert run.init(arena, run.need) == "MF_OK"
    x = x_value().tobytes()
    before = arena.copy()
    for wrong in (x[:-1], x + b"\0", b""):
        assert run.set_input(wrong) == "MF_ERR_ARG", len(wrong)
    assert (arena == before).all(), "a refused input was written into the arena"
    assert run.set_input(x) == "MF_OK"


@pytest.mark.parametrize("scratch", [1, 159])
def test_scratch_smaller_than_the_kernel_needs_is_refused_by_every_reader(scratch):
    planned = least_scratch_bytes("conv2d_s8", (8, 3, 3, 3), BOARD)  # the im2col plan (the few-channel one: optional)
    assert planned == 160 and scratch < planned
    with pytest.raises(ValueError, match=rf"op 0 \(conv2d_s8\): scratch_bytes {scratch} is less than the 160"):
        serialize(conv_graph(scratch))
    damaged = with_scratch(serialize(conv_graph()), scratch)
    with pytest.raises(ProgramFormatError, match=rf"op 0 \(conv2d_s8\): scratch_bytes {scratch} is less"):
        deserialize(damaged)
    with pytest.raises(cruntime.CRuntimeError, match=r"MF_ERR_SHAPE at op 0 \(conv2d_s8\)") as err:
        cruntime.run_program(damaged, [x_value()])
    assert err.value.op_index == 0


def test_no_scratch_and_more_scratch_run_the_same_bytes():
    expected = execute(deserialize(serialize(conv_graph())), [x_value()])[0]
    for scratch in (0, 160, 4096):
        got, _ = cruntime.run_program(serialize(conv_graph(scratch)), [x_value()])
        assert got[0].tobytes() == expected.tobytes(), scratch


# ---------------------------------------------------------------------------------------------
# The same guards in the firmware on an emulated board


def boot_board(data: bytes, inputs: list[bytes], mode: str = "off", prepare=None, **options):
    with tempfile.TemporaryDirectory(prefix="mcuforge-guard-") as tmp:
        folder = Path(tmp)
        if prepare:
            prepare(folder)
        result, _seconds, _trace = boot(folder, BOARD, data, inputs, mode, **options)
        trace = (folder / "trace.bin").read_bytes() if mode != "off" else None
        return result, trace


@functools.cache
def board_program() -> bytes:
    return serialize(conv_graph())


def test_board_arena_too_small_is_refused_before_any_write():
    data = board_program()
    x = input_bytes(deserialize(data), [x_value()])
    for short_by in (1, 200):
        with pytest.raises(FirmwareRunError, match=r"mf_init failed with MF_ERR_ARENA_TOO_SMALL \(9\): "
                                                   r"mf_init failed \(arena untouched\)"):
            boot_board(data, x, arena_shortfall=short_by)
    result, _ = boot_board(data, x)  # the same firmware with the whole arena runs
    assert result["status"] == 0


def test_board_input_of_the_wrong_size_is_refused():
    data = board_program()
    (x,) = input_bytes(deserialize(data), [x_value()])
    for wrong in (x[:-1], x + b"\0"):
        with pytest.raises(FirmwareRunError, match=r"mf_set_input failed with MF_ERR_ARG \(10\)"):
            boot_board(data, [wrong])


def test_board_scratch_smaller_than_the_kernel_needs_is_refused():
    with pytest.raises(FirmwareRunError, match=r"mf_program_load failed with MF_ERR_SHAPE \(11\), op 0"):
        boot_board(with_scratch(board_program(), 100), [x_value().tobytes()])


def test_board_trace_buffer_smaller_than_a_record_still_gives_the_whole_stream():
    """A 64-byte buffer (a full trace's TENSOR record is 300 bytes): flushed whenever full, never overrun."""
    data = board_program()
    x = input_bytes(deserialize(data), [x_value()])
    _, reference = boot_board(data, x, "full")
    result, small = boot_board(data, x, "full", trace_buffer_bytes=64)
    assert result["trace_dropped_bytes"] == 0 and result["trace_bytes"] == len(small)
    a, b = Trace.from_bytes(reference), Trace.from_bytes(small)
    assert not a.truncated and not b.truncated
    assert [t.data for t in a.tensors] == [t.data for t in b.tensors] and len(b.tensors) == 1
    assert [op.op_index for op in b.ops] == [0]


def test_board_trace_write_failure_drops_counts_and_reports():
    """trace.bin is /dev/full: every write of the buffer fails. The firmware drops the stream from
    there, counts it all and fails the run with the count; nothing is written past the buffer."""
    data = board_program()
    x = input_bytes(deserialize(data), [x_value()])

    def full_disk(folder: Path) -> None:
        (folder / "trace.bin").symlink_to("/dev/full")

    with pytest.raises(FirmwareRunError, match=r"tracing failed .*writing trace.bin failed: bytes dropped; "
                                               r"(\d[\d,]*) of \1 trace bytes dropped"):
        boot_board(data, x, "full", prepare=full_disk, trace_buffer_bytes=256)
