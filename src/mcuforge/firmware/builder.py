"""Building the test firmware of one board: the C runtime + board support + the firmware main, cached.

One firmware per (board, tracing on/off, trace timer) runs every model: the program and the inputs
are read from host files at run time (see csrc/firmware/main.c), and the trace goes to a host file
or to UART0 as run.cfg says. A build is cached under
``$MCUFORGE_CACHE`` (default ``~/.cache/mcuforge``) in a folder named by a hash of the sources,
the flags, the board and the compiler, so it happens once per machine and source change.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from pathlib import Path

from ..targets import get_target
from . import toolchain
from .boards import STACK_BYTES, Board, get_board
from .toolchain import PORTABLE_C_FLAGS

CSRC = Path(__file__).resolve().parent.parent / "csrc"
FIRMWARE_SRC = CSRC / "firmware"
BOARD_SRC = CSRC / "board"
INCLUDE = CSRC / "include"
# The one manifest of the portable C runtime: these folders of csrc/ (the public header, the runtime, its kernels),
# which the host builds (mcuforge.cruntime), the firmware and export-c all take. The other folders are the
# firmware, board support (UART trace sink, timers), the export-c templates and host-only code (host test
# programs, the fuzzer harness).
RUNTIME_DIRS = ("include", "runtime", "kernels")
# The trace's timing source (csrc/board/mf_timer.h): instructions under QEMU, or what a real core has.
TIMERS = ("icount", "systick", "dwt")

WARNINGS = ("-Wall", "-Wextra", "-Werror")
COMMON_FLAGS = ("-mthumb", "-O3", *PORTABLE_C_FLAGS, *WARNINGS, "-ffunction-sections", "-fdata-sections")
LINK_FLAGS = ("-nostartfiles", "--specs=nano.specs", "--specs=nosys.specs", "-Wl,--gc-sections")


class FirmwareBuildError(RuntimeError):
    """The cross compiler rejected the runtime or the firmware."""


def cache_root() -> Path:
    """``$MCUFORGE_CACHE`` or ``~/.cache/mcuforge``: where built firmware is kept."""
    env = os.environ.get("MCUFORGE_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "mcuforge"


def runtime_files() -> list[Path]:
    """Every .c and .h of the portable runtime (:data:`RUNTIME_DIRS`)."""
    return sorted(p for d in RUNTIME_DIRS for p in (CSRC / d).rglob("*") if p.suffix in (".c", ".h") and p.is_file())


def runtime_sources() -> list[Path]:
    """The portable runtime's C sources: what every build of it compiles."""
    return [p for p in runtime_files() if p.suffix == ".c"]


def firmware_sources() -> list[Path]:
    """The test firmware's own sources and the board support it uses."""
    return sorted(FIRMWARE_SRC.glob("*.c")) + sorted(BOARD_SRC.glob("*.c"))


def timer_define(timer: str) -> str:
    """The -D flag that selects a trace timer ("icount", "systick" or "dwt")."""
    if timer not in TIMERS:
        raise ValueError(f"unknown trace timer {timer!r}; choose one of {', '.join(TIMERS)}")
    return f"-DMF_TIMER=MF_TIMER_{timer.upper()}"


def target_flags(target: str) -> list[str]:
    """The compiler flags of ``target``: its CPU/FPU flags, Thumb, -O3 (as CMSIS-NN's reference figures),
    C99 and strict warnings."""
    return [*get_target(target).gcc_flags, *COMMON_FLAGS]


def _headers() -> list[Path]:
    return sorted(p for p in CSRC.rglob("*.h") if "export" not in p.relative_to(CSRC).parts)


def _linker_script(board: Board) -> str:
    text = (FIRMWARE_SRC / "link.ld.in").read_text()
    values = {"CODE": board.code, "CODE_BYTES": board.code_bytes, "RAM": board.ram, "RAM_BYTES": board.ram_bytes,
              "HEAP": board.heap, "HEAP_BYTES": board.heap_bytes, "STACK_BYTES": STACK_BYTES}
    for name, value in values.items():
        text = text.replace(f"@{name}@", hex(value))
    return text


def icount_scale(board: Board) -> tuple[int, int]:
    """(multiplier, shift) with multiplier / 2**shift = instructions per SysTick tick, exactly."""
    ratio = Fraction(10**9, board.clock_hz)
    shift = ratio.denominator.bit_length() - 1
    if ratio.denominator != 1 << shift:
        raise ValueError(f"{board.machine}: 1e9 / {board.clock_hz} Hz is not a multiple of a power of two")
    return ratio.numerator, shift


def _compile_flags(board: Board, trace: bool, timer: str = "icount", extra: Sequence[str] = ()) -> list[str]:
    mul, shift = icount_scale(board)
    # MF_TEST_FIRMWARE: start.c's test-firmware start-up (fault reports, stack fill); export-c uses its other half
    return [*target_flags(board.target), f"-DBOARD_HZ={board.clock_hz}u", f"-DICOUNT_MUL={mul}u",
            f"-DICOUNT_SHIFT={shift}", f"-DBOARD_UART={board.uart:#x}u", timer_define(timer),
            f"-DMF_TRACE={int(trace)}", "-DMF_TEST_FIRMWARE=1", f"-I{INCLUDE}", f"-I{FIRMWARE_SRC}", f"-I{BOARD_SRC}",
            *extra]


def _build_key(board: Board, trace: bool, timer: str, extra: Sequence[str] = ()) -> str:
    digest = hashlib.sha256()
    for part in (repr(board), str(trace), toolchain.version("arm-none-eabi-gcc"),
                 *_compile_flags(board, trace, timer, extra), *LINK_FLAGS, _linker_script(board)):
        digest.update(part.encode() + b"\0")
    for path in [*runtime_sources(), *firmware_sources(), *_headers()]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


def _run(cmd: list[str], what: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise FirmwareBuildError(f"{what} failed (exit {done.returncode}):\n{' '.join(cmd)}\n{done.stderr[-4000:]}")


def _object_name(source: Path) -> str:
    return "__".join(source.relative_to(CSRC).with_suffix(".o").parts)


def compile_objects(sources: list[Path], flags: list[str], out_dir: Path) -> list[Path]:
    """Compile each source to an object in ``out_dir`` (in parallel); returns the objects."""
    gcc = toolchain.require("arm-none-eabi-gcc")
    objects = [out_dir / _object_name(src) for src in sources]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        list(pool.map(lambda so: _run([gcc, *flags, "-c", str(so[0]), "-o", str(so[1])], f"compiling {so[0].name}"),
                      zip(sources, objects, strict=True)))
    return objects


def build(target: str, trace: bool = False, timer: str = "icount", flags: Sequence[str] = ()) -> Path:
    """The test firmware ELF for the QEMU board of ``target``, with tracing compiled in or out and
    the trace's ``timer``: "icount" (instructions; the only one QEMU makes meaningful), "systick"
    (cycles of the processor clock) or "dwt" (DWT CYCCNT, which QEMU does not count: it reads 0);
    ``flags``: more compiler flags, e.g. ``("-DMF_PORTABLE=1",)`` (every optimized kernel path off).

    Built once and cached; the folder holding the ELF also keeps the runtime objects
    (``runtime/*.o``) for the size report.
    """
    board = get_board(target)
    toolchain.require("arm-none-eabi-gcc")
    key = _build_key(board, trace, timer, flags)
    variant = f"{'trace' if trace else 'notrace'}{'' if timer == 'icount' else '-' + timer}"
    final = cache_root() / "firmware" / f"{target}-{variant}-{key}"
    elf = final / "firmware.elf"
    if elf.is_file():
        return elf
    final.parent.mkdir(parents=True, exist_ok=True)
    # Built in a private folder, then renamed into place: concurrent builds (pytest workers) never
    # see a half-written cache entry.
    work = Path(tempfile.mkdtemp(prefix=f".{target}-", dir=final.parent))
    try:
        cflags = _compile_flags(board, trace, timer, flags)
        (work / "runtime").mkdir()
        (work / "firmware").mkdir()
        runtime_objects = compile_objects(runtime_sources(), cflags, work / "runtime")
        firmware_objects = compile_objects(firmware_sources(), cflags, work / "firmware")
        script = work / "link.ld"
        script.write_text(_linker_script(board))
        gcc = toolchain.require("arm-none-eabi-gcc")
        _run([gcc, *target_flags(target), *LINK_FLAGS, "-T", str(script), f"-Wl,-Map={work / 'firmware.map'}",
              *map(str, firmware_objects + runtime_objects), "-lm", "-o", str(work / "firmware.elf")],
             f"linking the {target} firmware")
        try:
            work.rename(final)
        except OSError:
            if not elf.is_file():  # someone else's build won the race only if it finished
                raise
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    return elf
