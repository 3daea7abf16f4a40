"""Running CMSIS-NN's own kernels on cases, on the host (ctypes) and on the QEMU boards (one boot).

A :class:`Case` names a comparison function of ``c/cases_*.c`` (``mfcmp_<name>``, see ``c/mfcmp.h``), its
integer parameters and its input arrays, and the output it writes. Every ``mfcmp_*`` function defined in
every ``c/cases_*.c`` is picked up by scanning the files (:func:`functions`): adding a file or a function needs
no edit here.

    outs = run_host(cases)                                # CMSIS-NN built for this machine (its plain C path)
    outs, instructions = run_board(cases, "cortex-m55")   # its MVE path, every case in one QEMU boot

The host build is one shared library (the case files and ``support.c``, linked against ``build_host``'s
libcmsisnn.so), cached by a hash of the sources and flags. The board build is a firmware of the case files, a
generated dispatch table, ``c/board/main.c`` (which reads the case stream from a semihosting file and writes
each case's status, instructions and output back) with mcuforge's start-up code, semihosting and SysTick timer
(csrc/firmware, csrc/board), the board's linker script and ``build_target``'s libcmsisnn.a; cached like
``mcuforge.firmware.builder`` caches the test firmware. Scratch (``ctx.buf``) on the board is one static
buffer of :data:`BOARD_SCRATCH_BYTES`; on the host it grows to what a case asks.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import struct
import subprocess
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import build as _build

C_DIR = Path(__file__).resolve().parent / "c"
BOARD_DIR = C_DIR / "board"
#: The harness's own C sources besides the case files (shared state of mfcmp.h).
SUPPORT_SOURCES = ("support.c",)

#: ``c/board/main.c``'s static scratch buffer (MFC_SCRATCH_BYTES): the most ``ctx.buf`` a case gets on a board.
BOARD_SCRATCH_BYTES = 256 * 1024
#: The host's first scratch buffer; a case that asks more (MFCMP_ERR_SCRATCH) is run again with what it asked.
HOST_SCRATCH_BYTES = 1 << 20
#: Guard bytes after the host's output and scratch buffers: a case that writes past either is an error.
GUARD_BYTES, GUARD = 256, 0xA7

#: Harness errors (c/mfcmp.h) and CMSIS-NN's arm_cmsis_nn_status, by value, for messages.
STATUS_NAMES = {
    0: "ARM_CMSIS_NN_SUCCESS", -1: "ARM_CMSIS_NN_ARG_ERROR", -2: "ARM_CMSIS_NN_NO_IMPL_ERROR",
    -3: "ARM_CMSIS_NN_FAILURE", -1001: "MFCMP_ERR_SCRATCH", -1002: "MFCMP_ERR_ARGS",
}
MFCMP_ERR_SCRATCH = -1001

# c/board/main.c's stream and result records.
CASES_MAGIC = 0x5343464D
RESULTS_MAGIC = 0x5252464D
STREAM_VERSION = 1

_DEFINITION = re.compile(r"^int32_t[ \t]+(mfcmp_\w+)[ \t]*\([^;{)]*\)\s*\{", re.M)


@dataclass
class Case:
    function: str                 # "mfcmp_conv_s8"
    ints: list[int]
    inputs: list[np.ndarray]      # C-contiguous, exact dtypes the C side reads
    out_shape: tuple[int, ...]
    out_dtype: np.dtype
    name: str = ""                # for messages

    @property
    def label(self) -> str:
        return f"{self.name} ({self.function})" if self.name else self.function

    @property
    def out_bytes(self) -> int:
        return int(np.prod(self.out_shape, dtype=np.int64)) * np.dtype(self.out_dtype).itemsize


class CmsisNNCaseError(RuntimeError):
    """A case's comparison function returned a nonzero status (CMSIS-NN's or the harness's)."""

    def __init__(self, case: Case, status: int, where: str, detail: str = ""):
        self.case, self.status = case, status
        name = STATUS_NAMES.get(status, "unknown status")
        super().__init__(f"{where}: case {case.label} returned {status} ({name}){detail}")


def case_sources() -> list[Path]:
    """Every ``c/cases_*.c``, sorted."""
    return sorted(C_DIR.glob("cases_*.c"))


def functions() -> list[str]:
    """Every comparison function defined in ``c/cases_*.c``, sorted: the board's dispatch table order."""
    found: dict[str, Path] = {}
    for path in case_sources():
        for name in _DEFINITION.findall(path.read_text()):
            if name in found:
                raise ValueError(f"{name} is defined in both {found[name].name} and {path.name}")
            found[name] = path
    return sorted(found)


def _headers() -> list[Path]:
    return sorted(C_DIR.rglob("*.h"))


def _digest(parts: Sequence[str], paths: Sequence[Path]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() + b"\0")
    for path in paths:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


def _check_cases(cases: Sequence[Case], known: set[str]) -> list[tuple[Case, list[np.ndarray]]]:
    checked = []
    for case in cases:
        if case.function not in known:
            raise ValueError(f"case {case.label}: no comparison function {case.function!r} in c/cases_*.c")
        for v in case.ints:
            if not -(1 << 31) <= int(v) < (1 << 31):
                raise ValueError(f"case {case.label}: int {v} does not fit int32")
        arrays = []
        for i, x in enumerate(case.inputs):
            x = np.asarray(x)
            if not x.flags.c_contiguous:
                raise ValueError(f"case {case.label}: input {i} is not C-contiguous")
            arrays.append(x)
        checked.append((case, arrays))
    return checked


# ------------------------------------------------------------------------------------------------- host

HOST_FLAGS = ["-O2", "-fPIC", "-std=c99", "-Wall", "-Wextra", "-Werror", "-ffp-contract=off",
              "-fno-strict-aliasing"]


def build_host_library(root: Path | None = None) -> Path:
    """The case files + support.c as a shared library linked against ``build_host``'s CMSIS-NN, cached."""
    cmsis = _build.build_host(root)
    include = _build.include_dir(root)
    cc = os.environ.get("CC", "cc")
    flags = [*HOST_FLAGS, "-isystem", str(include), f"-I{C_DIR}"]
    sources = [*(C_DIR / s for s in SUPPORT_SOURCES), *case_sources()]
    version = subprocess.run([cc, "--version"], capture_output=True, text=True, check=False).stdout
    key = _digest([version, str(cmsis), *flags], [*sources, *_headers()])
    final = _build._cache_root() / f"harness-host-{key}"
    lib = final / "libmfcmp.so"
    if lib.is_file():
        return lib

    def build(work: Path) -> None:
        _build._run([cc, *flags, "-shared", *map(str, sources), "-L", str(cmsis.parent), "-lcmsisnn",
                     f"-Wl,-rpath,{cmsis.parent}", "-o", str(work / "libmfcmp.so")],
                    "building the CMSIS-NN comparison library")

    _build._build_into(final, build)
    return lib


_HOST_LIBS: dict[Path, ctypes.CDLL] = {}


def _host_library(root: Path | None) -> ctypes.CDLL:
    path = build_host_library(root)
    lib = _HOST_LIBS.get(path)
    if lib is None:
        lib = _HOST_LIBS[path] = ctypes.CDLL(str(path))
    return lib


def run_host(cases: Sequence[Case], root: Path | None = None) -> list[np.ndarray]:
    """Each case's output from CMSIS-NN built for this machine; CmsisNNCaseError names a case that fails."""
    lib = _host_library(root)
    checked = _check_cases(cases, set(functions()))
    needed = ctypes.c_int32.in_dll(lib, "mfc_scratch_needed")
    scratch_bytes = HOST_SCRATCH_BYTES
    scratch = np.full(scratch_bytes + GUARD_BYTES, GUARD, np.uint8)
    outputs = []
    for case, arrays in checked:
        fn = getattr(lib, case.function)
        fn.restype = ctypes.c_int32
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32]
        ints = np.asarray([int(v) for v in case.ints] or [0], np.int32)
        pointers = (ctypes.c_void_p * max(1, len(arrays)))(*(a.ctypes.data for a in arrays))
        raw = np.full(case.out_bytes + GUARD_BYTES, GUARD, np.uint8)
        while True:
            needed.value = 0
            status = fn(ints.ctypes.data, ctypes.addressof(pointers), raw.ctypes.data, scratch.ctypes.data,
                        scratch_bytes)
            if status == MFCMP_ERR_SCRATCH and needed.value > scratch_bytes:
                scratch_bytes = needed.value
                scratch = np.full(scratch_bytes + GUARD_BYTES, GUARD, np.uint8)
                continue
            break
        for what, buf, end in (("output", raw, case.out_bytes), ("scratch", scratch, scratch_bytes)):
            if (buf[end:] != GUARD).any():
                raise CmsisNNCaseError(case, status, "host", f"; and it wrote past the end of its {what}")
            buf[end:] = GUARD
        if status != 0:
            raise CmsisNNCaseError(case, status, "host")
        outputs.append(raw[:case.out_bytes].view(np.dtype(case.out_dtype)).reshape(case.out_shape).copy())
    return outputs


# ------------------------------------------------------------------------------------------------ board

def _dispatch_source(names: Sequence[str]) -> str:
    lines = ["/* Generated by mcuforge.cmsis_nn.harness: every mfcmp_* of c/cases_*.c, sorted. */",
             '#include "mfcmp.h"', ""]
    lines += [f"int32_t {n}(const int32_t *ints, const void *const *inputs, void *output, void *scratch, "
              f"int32_t scratch_bytes);" for n in names]
    table = ", ".join(names) if names else "0"
    lines += ["", f"const mfcmp_fn mfc_table[] = {{{table}}};", f"const uint32_t mfc_table_size = {len(names)}u;", ""]
    return "\n".join(lines)


def build_firmware(target: str, root: Path | None = None) -> tuple[Path, list[str]]:
    """The comparison firmware for ``target``'s QEMU board and its dispatch table's function names, cached."""
    from ..firmware import builder, toolchain
    from ..firmware.boards import get_board

    board = get_board(target)
    archive = _build.build_target(target, root)
    include = _build.include_dir(root)
    gcc = toolchain.require("arm-none-eabi-gcc")
    names = functions()
    dispatch = _dispatch_source(names)
    cflags = [*builder._compile_flags(board, trace=False), f"-DMFC_SCRATCH_BYTES={BOARD_SCRATCH_BYTES}u",
              "-isystem", str(include), f"-I{C_DIR}"]
    platform = [builder.FIRMWARE_SRC / "start.c", builder.FIRMWARE_SRC / "semihost.c", builder.BOARD_SRC / "timer.c"]
    sources = [*platform, BOARD_DIR / "main.c", *(C_DIR / s for s in SUPPORT_SOURCES), *case_sources()]
    script = builder._linker_script(board)
    headers = [*_headers(), *sorted(builder.FIRMWARE_SRC.glob("*.h")), *sorted(builder.BOARD_SRC.glob("*.h"))]
    key = _digest([repr(board), toolchain.version("arm-none-eabi-gcc"), str(archive), *cflags,
                   *builder.LINK_FLAGS, script, dispatch], [*sources, *headers])
    final = _build._cache_root() / f"harness-{target}-{key}"
    elf = final / "firmware.elf"
    if elf.is_file():
        return elf, names

    def build(work: Path) -> None:
        (work / "dispatch.c").write_text(dispatch)
        all_sources = [*sources, work / "dispatch.c"]
        objects = [work / f"{i:02d}_{src.stem}.o" for i, src in enumerate(all_sources)]
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            list(pool.map(lambda so: _build._run([gcc, *cflags, "-c", str(so[0]), "-o", str(so[1])],
                                                 f"compiling {so[0].name} for {target}"),
                          zip(all_sources, objects, strict=True)))
        (work / "link.ld").write_text(script)
        _build._run([gcc, *builder.target_flags(target), *builder.LINK_FLAGS, "-T", str(work / "link.ld"),
                     f"-Wl,-Map={work / 'firmware.map'}", *map(str, objects), str(archive), "-lm",
                     "-o", str(work / "firmware.elf")], f"linking the CMSIS-NN comparison firmware for {target}")

    _build._build_into(final, build)
    return elf, names


def _pad16(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 16)


def case_stream(checked: Sequence[tuple[Case, list[np.ndarray]]], names: Sequence[str]) -> bytes:
    """cases.bin for ``c/board/main.c``."""
    index = {n: i for i, n in enumerate(names)}
    parts = [struct.pack("<4I", CASES_MAGIC, STREAM_VERSION, len(checked), 0)]
    for case, arrays in checked:
        data = [np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes() for a in arrays]
        head = struct.pack(f"<4I{len(data)}I", index[case.function], len(case.ints), len(data), case.out_bytes,
                           *(len(d) for d in data))
        parts.append(_pad16(head + struct.pack(f"<{len(case.ints)}i", *case.ints)))
        parts += [_pad16(d) for d in data]
    return b"".join(parts)


def run_board(cases: Sequence[Case], target: str, root: Path | None = None,
              timeout: float = 600.0) -> tuple[list[np.ndarray], list[int]]:
    """Every case on ``target``'s QEMU board in one boot: (outputs, the instructions each case's call took).
    CmsisNNCaseError names a case that returned a nonzero status; a fault names the case it happened in."""
    from ..firmware import qemu
    from ..firmware.boards import get_board

    elf, names = build_firmware(target, root)
    checked = _check_cases(cases, set(names))
    board = get_board(target)
    where = f"CMSIS-NN on {target} (QEMU {board.machine})"
    with tempfile.TemporaryDirectory(prefix="mcuforge-cmsis-nn-") as tmp:
        folder = Path(tmp)
        (folder / "cases.bin").write_bytes(case_stream(checked, names))
        command = qemu.qemu_command(target, elf)
        started = time.perf_counter()
        try:
            done = subprocess.run(command, cwd=folder, stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise qemu.FirmwareRunError(f"{where}: no result after {timeout:.0f} s") from None
        seconds = time.perf_counter() - started
        console = (done.stdout + done.stderr).decode(errors="replace").strip()
        path = folder / "results.bin"
        data = path.read_bytes() if path.is_file() else b""
    outputs, instructions, at = [], [], 16
    if len(data) < 16 or struct.unpack_from("<I", data)[0] != RESULTS_MAGIC:
        raise qemu.FirmwareRunError(f"{where}: no results (QEMU exit {done.returncode}): {console[-2000:]}")
    scratch_bytes = struct.unpack_from("<I", data, 12)[0]
    for case, _ in checked:
        if at + 16 + case.out_bytes > len(data):
            raise qemu.FirmwareRunError(f"{where}: stopped in case {case.label} (QEMU exit {done.returncode}, "
                                        f"{seconds:.1f} s): {console[-2000:]}")
        status, need, low, high = struct.unpack_from("<iiIi", data, at)
        at += 16
        if status != 0:
            detail = f": it asks {need} bytes of scratch, the board has {scratch_bytes}" \
                if status == MFCMP_ERR_SCRATCH else ""
            raise CmsisNNCaseError(case, status, where, detail)
        raw = np.frombuffer(data, np.uint8, case.out_bytes, at)
        at += case.out_bytes
        dtype = np.dtype(case.out_dtype)
        outputs.append(raw.view(dtype.newbyteorder("<")).astype(dtype).reshape(case.out_shape))
        instructions.append(int(low) | int(high) << 32)
    if done.returncode != 0:
        raise qemu.FirmwareRunError(f"{where}: QEMU exit {done.returncode}: {console[-2000:]}")
    return outputs, instructions

