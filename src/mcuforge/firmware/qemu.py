"""Running a program on an emulated board: the cached firmware, QEMU, and host files.

The firmware (csrc/firmware/main.c) reads ``run.cfg``, ``program.mfp`` and ``input<i>.bin`` from
QEMU's working directory over semihosting, and writes ``output<i>.bin``, ``trace.bin`` and
``result.bin`` back: binary-safe, no framing needed, one firmware build for every model.
"""

from __future__ import annotations

import struct
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..ir import DTYPES, input_bytes
from ..program import deserialize
from ..targets import get_target
from ..trace.format import trace_mode
from . import toolchain
from .boards import get_board
from .builder import build

TRACE_MODES = {"off": 0, "events": 1, "full": 2}
DEFAULT_TIMEOUT_SECONDS = 300.0

# fw_result in csrc/firmware/firmware.h
RESULT_FORMAT = "<2I i I 2i 2Q 10I 32s 56s"
RESULT_FIELDS = ("magic", "version", "status", "stage", "error_op", "error_tensor", "invoke_instructions",
                 "calibration_instructions", "calibration_expected", "stack_bytes", "invoke_stack_bytes",
                 "stack_size", "arena_bytes", "program_bytes", "output_count", "trace_bytes", "clock_hz",
                 "reserved", "status_name", "message")
RESULT_MAGIC = 0x5352464D
STAGES = ("none", "reading host files", "mf_program_load", "mf_init", "mf_set_input", "mf_invoke",
          "writing outputs", "tracing", "memory")
EXIT_FAULT = 3


class FirmwareRunError(RuntimeError):
    """The firmware failed on the board: QEMU died, timed out, or the runtime returned an error."""


def _parse_result(data: bytes) -> dict[str, Any]:
    if len(data) != struct.calcsize(RESULT_FORMAT):
        raise FirmwareRunError(f"result.bin has {len(data)} bytes, expected {struct.calcsize(RESULT_FORMAT)}")
    values = dict(zip(RESULT_FIELDS, struct.unpack(RESULT_FORMAT, data), strict=True))
    for text in ("status_name", "message"):
        values[text] = values[text].split(b"\0", 1)[0].decode("ascii", "replace")
    return values


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _read_outputs(folder: Path, graph: Any) -> list[np.ndarray]:
    outputs = []
    for i, name in enumerate(graph.outputs):
        tensor = graph.tensors[name]
        dtype = DTYPES[tensor.dtype].newbyteorder("<")
        data = (folder / f"output{i}.bin").read_bytes()
        if len(data) != tensor.nbytes:
            raise FirmwareRunError(f"output {i} ({name!r}) has {len(data)} bytes, expected {tensor.nbytes}")
        outputs.append(np.frombuffer(data, dtype=dtype).astype(DTYPES[tensor.dtype]).reshape(tensor.shape))
    return outputs


def qemu_command(target: str, elf: Path) -> list[str]:
    """The QEMU command line that runs ``elf`` on the board of ``target``, counting instructions."""
    board = get_board(target)
    return [toolchain.require("qemu-system-arm"), "-M", board.machine, "-nographic", "-monitor", "none",
            "-semihosting-config", "enable=on,target=native", "-icount", "shift=0", "-kernel", str(elf)]


def run_on_qemu(program_bytes: bytes, inputs: Sequence[np.ndarray], target: str, trace: bool | str = False,
                *, timeout: float = DEFAULT_TIMEOUT_SECONDS,
                trace_compiled_in: bool | None = None) -> tuple[list[np.ndarray], bytes | None, dict[str, Any]]:
    """Run a program once on the emulated board of ``target``.

    ``inputs`` and the returned outputs are as :func:`mcuforge.runtime.execute` takes and returns
    them (program dtype, NHWC layout). ``trace``: False, True/"events" (per-op instruction counts)
    or "full" (also every op's output). ``trace_compiled_in``: a firmware built with ``MF_TRACE=1``
    (by default exactly when tracing; True with ``trace=False`` runs the traced build untraced).
    Returns ``(outputs, trace stream or None, facts)``; facts hold ``instructions`` (the whole
    mf_invoke), ``stack_bytes`` (high-water mark of the firmware's stack), ``invoke_stack_bytes``,
    ``arena_bytes``, the board and the count resolution.
    """
    board = get_board(target)
    mode = trace_mode(trace)
    graph = deserialize(bytes(program_bytes))
    if trace_compiled_in is False and mode != "off":
        raise ValueError("a trace needs a firmware with tracing compiled in")
    elf = build(target, trace=mode != "off" if trace_compiled_in is None else trace_compiled_in)
    command = qemu_command(target, elf)
    with tempfile.TemporaryDirectory(prefix="mcuforge-qemu-") as tmp:
        folder = Path(tmp)
        (folder / "run.cfg").write_bytes(struct.pack("<I", TRACE_MODES[mode]))
        (folder / "program.mfp").write_bytes(bytes(program_bytes))
        for i, data in enumerate(input_bytes(graph, inputs)):
            (folder / f"input{i}.bin").write_bytes(data)
        where = f"{target} on QEMU {board.machine}"
        started = time.perf_counter()
        try:
            done = subprocess.run(command, cwd=folder, stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            tail = _tail((exc.stderr or b"").decode(errors="replace") + (exc.stdout or b"").decode(errors="replace"))
            raise FirmwareRunError(f"{where}: no result after {timeout:.0f} s (hung or too slow); "
                                   f"QEMU output:\n{tail}") from None
        seconds = time.perf_counter() - started
        console = _tail(done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace"))
        console = f"; QEMU output:\n{console}" if console else " (QEMU printed nothing)"
        result_file = folder / "result.bin"
        if not result_file.is_file():
            why = "the CPU faulted" if done.returncode == EXIT_FAULT else f"QEMU exited with {done.returncode}"
            raise FirmwareRunError(f"{where}: the firmware stopped without a result ({why}){console}")
        result = _parse_result(result_file.read_bytes())
        if result["magic"] != RESULT_MAGIC:
            raise FirmwareRunError(f"{where}: result.bin is not a firmware result")
        if result["status"] != 0 or done.returncode != 0:
            stage = STAGES[result["stage"]] if result["stage"] < len(STAGES) else str(result["stage"])
            op = f", op {result['error_op']}" if result["error_op"] >= 0 else ""
            tensor = f", tensor {result['error_tensor']}" if result["error_tensor"] >= 0 else ""
            raise FirmwareRunError(f"{where}: {stage} failed with {result['status_name']} "
                                   f"({result['status']}){op}{tensor}: {result['message']} "
                                   f"(QEMU exit {done.returncode}){console}")
        outputs = _read_outputs(folder, graph)
        recorded = (folder / "trace.bin").read_bytes() if mode != "off" else None
    facts = {
        "target": target, "board": board.machine, "firmware": str(elf),
        "instructions": result["invoke_instructions"],
        "instruction_resolution": board.instructions_per_tick,
        "calibration_instructions": result["calibration_instructions"],
        "calibration_expected": result["calibration_expected"],
        "stack_bytes": result["stack_bytes"], "invoke_stack_bytes": result["invoke_stack_bytes"],
        "stack_size": result["stack_size"], "arena_bytes": result["arena_bytes"],
        "program_bytes": result["program_bytes"], "trace_bytes": result["trace_bytes"],
        "qemu_seconds": seconds,
    }
    return outputs, recorded, facts


def check_board_target(program_target: str, board_target: str) -> None:
    """A program runs on a board whose kernels use the same ISA path; the firmware would refuse any
    other with MF_ERR_TARGET, so say it plainly before building and booting a board."""
    compiled_for, runs_on = get_target(program_target), get_target(board_target)
    if compiled_for.isa != runs_on.isa:
        raise FirmwareRunError(f"the program was compiled for {compiled_for.name} (isa {compiled_for.isa}) and "
                               f"cannot run on {runs_on.name} (isa {runs_on.isa}): compile it with --target "
                               f"{runs_on.name}")


def describe_run(facts: dict[str, Any]) -> str:
    """One line for the CLI: board, instructions of the inference (with their resolution), stack."""
    return (f"{facts['target']} on QEMU {facts['board']}: {facts['instructions']:,} instructions per inference "
            f"(counted to {facts['instruction_resolution']:g}), stack high-water {facts['stack_bytes']} B "
            f"({facts['invoke_stack_bytes']} B in mcuforge), arena {facts['arena_bytes']} B")
