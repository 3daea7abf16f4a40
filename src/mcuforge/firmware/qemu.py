"""Running a program on an emulated board: the cached firmware, QEMU, and host files.

The firmware (csrc/firmware/main.c) reads ``run.cfg``, ``program.mfp`` and ``input<i>.bin`` from
QEMU's working directory over semihosting, and writes ``output<i>.bin``, ``trace.bin`` and
``result.bin`` back: binary-safe, no framing needed, one firmware build for every model. With
``via="uart"`` the trace goes out on the board's UART0 instead, as on a board without a debugger:
QEMU serves it on a local TCP port (``-serial tcp:...,server=on,wait=on``) and
:func:`mcuforge.trace.uart.capture` reads it from ``socket://127.0.0.1:PORT`` while the board runs.
"""

from __future__ import annotations

import socket
import struct
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..ir import DTYPES, input_bytes
from ..program import deserialize
from ..targets import get_target
from ..trace.format import trace_mode
from . import toolchain
from .boards import get_board
from .builder import build

TRACE_MODES = {"off": 0, "events": 1, "full": 2}
TRACE_SINKS = {"semihosting": 0, "uart": 1}  # FW_SINK_* in csrc/firmware/firmware.h
DEFAULT_TIMEOUT_SECONDS = 300.0

# fw_result in csrc/firmware/firmware.h
RESULT_FORMAT = "<2I i I 2i 2Q 11I 32s 52s"
RESULT_FIELDS = ("magic", "version", "status", "stage", "error_op", "error_tensor", "invoke_instructions",
                 "calibration_instructions", "calibration_expected", "stack_bytes", "invoke_stack_bytes",
                 "stack_size", "arena_bytes", "program_bytes", "output_count", "trace_bytes", "clock_hz",
                 "trace_dropped", "trace_dropped_bytes", "status_name", "message")
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


def write_run_files(folder: Path, program_bytes: bytes, inputs: Sequence[np.ndarray], trace: bool | str = False,
                    via: str = "semihosting", graph: Any = None) -> None:
    """The files the firmware reads from QEMU's working directory (csrc/firmware/firmware.h)."""
    graph = graph if graph is not None else deserialize(bytes(program_bytes))
    _write_run_files(folder, bytes(program_bytes), input_bytes(graph, inputs), trace_mode(trace), via)


def region_addresses(target: str, program_bytes: bytes) -> tuple[int, ...]:
    """Where the firmware puts each RAM region of a program split across regions (format 3.2): the address
    of the board's region of that name (0: the firmware's heap); () for a single-arena program (or a table
    the host cannot read: the board's loader is the one to refuse it)."""
    try:
        offset, count = struct.unpack_from("<II", program_bytes, 108)
        strings = struct.unpack_from("<I", program_bytes, 72)[0]
        table = [struct.unpack_from("<4I", program_bytes, offset + 16 * k) for k in range(count)] if offset else []
        names = [program_bytes[strings + o:strings + o + n].decode() for o, n, _s, _b in table]
    except (struct.error, UnicodeDecodeError):
        return ()
    if not 2 <= len(names) <= 8:
        return ()
    places = {name: (address, size) for name, address, size in get_board(target).regions}
    out = []
    for name, (_o, _n, _start, nbytes) in zip(names, table, strict=True):
        if name not in places:
            raise ValueError(f"the program's RAM region {name!r} is not one of the {target} QEMU board's "
                             f"({', '.join(places) or 'none'}): compile it for that board's preset "
                             "(mcuforge.regions.BOARDS: 'mps3-an547', 'mps2-an386')")
        address, size = places[name]
        if nbytes > size:
            raise ValueError(f"the program's region {name!r} needs {nbytes:,} bytes; the board's has {size:,}")
        out.append(address)
    return tuple(out)


def _write_run_files(folder: Path, program_bytes: bytes, inputs: Sequence[bytes], mode: str, via: str,
                     arena_shortfall: int = 0, trace_buffer_bytes: int = 0,
                     regions: Sequence[int] = ()) -> None:
    config = struct.pack("<4I", TRACE_MODES[mode], TRACE_SINKS[via], arena_shortfall, trace_buffer_bytes)
    if regions:  # word 4: region count, then each region's address (0: the heap)
        config += struct.pack(f"<{1 + len(regions)}I", len(regions), *regions)
    (folder / "run.cfg").write_bytes(config)
    (folder / "program.mfp").write_bytes(program_bytes)
    for i, data in enumerate(inputs):
        (folder / f"input{i}.bin").write_bytes(data)


def qemu_command(target: str, elf: Path, serial_port: int | None = None, extra: Sequence[str] = ()) -> list[str]:
    """The QEMU command line that runs ``elf`` on the board of ``target``, counting instructions;
    with ``serial_port`` its UART0 is served on that local TCP port (QEMU waits for the client);
    ``extra``: more QEMU arguments (e.g. the cycle plugin's, :func:`mcuforge.cycles.plugin.qemu_args`)."""
    board = get_board(target)
    serial = ["-serial", f"tcp:127.0.0.1:{serial_port},server=on,wait=on"] if serial_port is not None else []
    return [toolchain.require("qemu-system-arm"), "-M", board.machine, "-nographic", "-monitor", "none",
            *serial, "-semihosting-config", "enable=on,target=native", "-icount", "shift=0", *extra,
            "-kernel", str(elf)]


def free_port() -> int:
    """A local TCP port nobody listens on now (QEMU binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_with_uart_capture(command: list[str], folder: Path, port: int, timeout: float,
                           progress: bool) -> tuple[subprocess.CompletedProcess, bytes]:
    """Run QEMU and capture the trace from its UART0 meanwhile; (QEMU's result, the trace stream)."""
    from ..trace.uart import SerialCaptureError, capture

    log = folder / "qemu.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, cwd=folder, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        try:
            got = capture(f"socket://127.0.0.1:{port}", timeout=timeout, max_seconds=timeout, progress=progress,
                          open_timeout=30.0, alive=lambda: proc.poll() is None)
            returncode = proc.wait(timeout=timeout)
        except SerialCaptureError as exc:
            proc.kill()
            proc.wait()
            raise FirmwareRunError(f"QEMU's UART0 on port {port}: {exc}; QEMU output:\n"
                                   f"{_tail(log.read_text(errors='replace'))}") from None
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise subprocess.TimeoutExpired(command, timeout, log.read_bytes()) from None
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    return subprocess.CompletedProcess(command, returncode, log.read_bytes(), b""), got.data


class QemuProbe(Protocol):
    """What :func:`run_on_qemu` runs with besides the firmware: QEMU arguments (a TCG plugin writing into the
    run's folder), then a reading of what it wrote, kept in facts[key]. The cycle estimate is one
    (mcuforge.cycles.run.CycleProbe): the timing model sits above the firmware it costs, so this module
    names the protocol and never imports it."""

    key: str

    def qemu_args(self, folder: Path, elf: Path, traced: bool) -> list[str]: ...

    def finish(self, folder: Path, elf: Path, target: str, op_count: int, traced: bool) -> Any: ...


def run_on_qemu(program_bytes: bytes, inputs: Sequence[np.ndarray], target: str, trace: bool | str = False,
                *, timeout: float = DEFAULT_TIMEOUT_SECONDS, via: str = "semihosting", timer: str = "icount",
                progress: bool = False, build_flags: Sequence[str] = (),
                trace_compiled_in: bool | None = None, probe: QemuProbe | None = None,
                graph: Any = None) -> tuple[list[np.ndarray], bytes | None, dict[str, Any]]:
    """Run a program once on the emulated board of ``target``.

    ``graph``: the program's graph (``deserialize(program_bytes)``) when the caller has it already: the bytes are
    then not read a second time.

    ``inputs`` and the returned outputs are as :func:`mcuforge.runtime.execute` takes and returns
    them (program dtype, NHWC layout). ``trace``: False, True/"events" (per-op instruction counts)
    or "full" (also every op's output); ``via``: "semihosting" (a host file) or "uart" (the board's
    UART0, captured over QEMU's serial TCP port, with a progress bar if ``progress``); ``timer``:
    the trace's clock ("icount": instructions; "systick": cycles; "dwt": CYCCNT, which QEMU leaves
    at 0). Returns ``(outputs, trace stream or None, facts)``; facts hold ``instructions`` (the whole
    mf_invoke), ``stack_bytes`` (high-water mark of the firmware's stack), ``invoke_stack_bytes``,
    ``arena_bytes``, ``trace_dropped`` (records the UART sink had no room for), the board and the
    count resolution. ``build_flags``: more compiler flags of the firmware (``build``), e.g.
    ``("-DMF_PORTABLE=1",)``; ``trace_compiled_in``: a firmware built with ``MF_TRACE=1`` (by
    default exactly when tracing; True with ``trace=False`` runs the traced build untraced).
    ``probe``: something that watches the run through QEMU's arguments (a TCG plugin) and reads what it
    wrote after, into facts[probe.key]: :func:`mcuforge.cycles.run.cycle_probe` ESTIMATES the core's cycles
    (facts["cycles"], a :class:`mcuforge.cycles.run.CycleEstimate`; ``board={"cycles": True}`` of
    ``Program.run`` makes one).
    """
    board = get_board(target)
    mode = trace_mode(trace)
    graph = graph if graph is not None else deserialize(bytes(program_bytes))
    elf = firmware_for(target, mode, timer, build_flags, trace_compiled_in)  # cached: the ELF boot runs
    traced = mode != "off"
    estimate = None
    with tempfile.TemporaryDirectory(prefix="mcuforge-qemu-") as tmp:
        folder = Path(tmp)
        plugin_args = probe.qemu_args(folder, elf, traced) if probe is not None else []
        result, seconds, recorded = boot(folder, target, bytes(program_bytes), input_bytes(graph, inputs), mode,
                                         timeout=timeout, via=via, timer=timer, progress=progress,
                                         build_flags=build_flags, trace_compiled_in=trace_compiled_in,
                                         qemu_args=plugin_args)
        outputs = _read_outputs(folder, graph)
        if probe is not None:
            estimate = probe.finish(folder, elf, target, len(graph.ops), traced)
    facts = {
        "target": target, "board": board.machine, "firmware": str(elf),
        "instructions": result["invoke_instructions"],
        "instruction_resolution": board.instructions_per_tick,
        "calibration_instructions": result["calibration_instructions"],
        "calibration_expected": result["calibration_expected"],
        "stack_bytes": result["stack_bytes"], "invoke_stack_bytes": result["invoke_stack_bytes"],
        "stack_size": result["stack_size"], "arena_bytes": result["arena_bytes"],
        "program_bytes": result["program_bytes"], "trace_bytes": result["trace_bytes"],
        "trace_dropped": result["trace_dropped"], "trace_dropped_bytes": result["trace_dropped_bytes"],
        "trace_via": via if mode != "off" else None, "timer": timer,
        "qemu_seconds": seconds,
    }
    if probe is not None:
        facts[probe.key] = estimate
    return outputs, recorded, facts


def firmware_for(target: str, mode: str, timer: str = "icount", build_flags: Sequence[str] = (),
                 trace_compiled_in: bool | None = None) -> Path:
    """The firmware that runs a trace ``mode``: built with tracing exactly when tracing, unless
    ``trace_compiled_in`` says (True with mode "off": the traced build run untraced)."""
    if trace_compiled_in is False and mode != "off":
        raise ValueError("a trace needs a firmware with tracing compiled in")
    traced = mode != "off" if trace_compiled_in is None else trace_compiled_in
    return build(target, trace=traced, timer=timer, flags=build_flags)


def boot(folder: Path, target: str, program_bytes: bytes, inputs: Sequence[bytes], mode: str = "off", *,
         timeout: float = DEFAULT_TIMEOUT_SECONDS, via: str = "semihosting", timer: str = "icount",
         progress: bool = False, build_flags: Sequence[str] = (), trace_compiled_in: bool | None = None,
         arena_shortfall: int = 0, trace_buffer_bytes: int = 0,
         qemu_args: Sequence[str] = ()) -> tuple[dict[str, Any], float, bytes | None]:
    """Boot the firmware once in ``folder`` on these exact bytes (no checks on the host side: the
    board's runtime is the one that must refuse what is wrong). ``via``, ``timer``, ``progress``,
    ``build_flags``, ``trace_compiled_in``: as :func:`run_on_qemu`; ``arena_shortfall``: give mf_init
    that many bytes less than the program needs; ``trace_buffer_bytes``: the firmware's trace buffer (0: its default);
    ``qemu_args``: more QEMU arguments (the cycle plugin's).
    Returns (result.bin's fields, QEMU seconds, the trace stream or None); FirmwareRunError if the
    firmware failed, naming the stage, the mf_status and the op."""
    if via not in TRACE_SINKS:
        raise ValueError(f"via must be one of {', '.join(TRACE_SINKS)}, not {via!r}")
    board = get_board(target)
    uart = via == "uart" and mode != "off"
    port = free_port() if uart else None
    command = qemu_command(target, firmware_for(target, mode, timer, build_flags, trace_compiled_in), port,
                           qemu_args)
    _write_run_files(folder, program_bytes, inputs, mode, via, arena_shortfall, trace_buffer_bytes,
                     region_addresses(target, program_bytes))
    where = f"{target} on QEMU {board.machine}"
    recorded = None
    started = time.perf_counter()
    try:
        if uart:
            done, recorded = _run_with_uart_capture(command, folder, port, timeout, progress)
        else:
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
        dropped = result["trace_dropped_bytes"]
        lost = f"; {dropped:,} of {result['trace_bytes']:,} trace bytes dropped" if dropped else ""
        raise FirmwareRunError(f"{where}: {stage} failed with {result['status_name']} "
                               f"({result['status']}){op}{tensor}: {result['message']}{lost} "
                               f"(QEMU exit {done.returncode}){console}")
    if mode != "off" and not uart:
        recorded = (folder / "trace.bin").read_bytes()
    return result, seconds, recorded


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
            f"({facts['invoke_stack_bytes']} B in mcuforge), arena {facts['arena_bytes']} B"
            + (f"\n  {facts['cycles'].summary()}" if facts.get("cycles") is not None else ""))
