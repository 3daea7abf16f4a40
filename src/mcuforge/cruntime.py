"""The C runtime on the host: build csrc/ with the host C compiler, load it with ctypes, run programs.

``run_program(program_bytes, inputs, trace=False) -> (outputs, trace_bytes)`` takes and returns
arrays exactly as :func:`mcuforge.runtime.execute` does (the program's dtype and NHWC layout).
The shared library is cached under ``$MCUFORGE_CACHE`` (default ``~/.cache/mcuforge``), keyed by a
hash of the C sources, the flags and the compiler, so a rebuild happens only when one changes.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import struct
import subprocess
import tempfile
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from .aten_table import aten_table_index, c_aten_table  # noqa: F401 - re-exported: their old home
from .firmware.builder import cache_root
from .firmware.builder import runtime_sources as builder_runtime_sources
from .firmware.toolchain import PORTABLE_C_FLAGS, ToolchainMissing
from .trace.format import trace_mode

CSRC = Path(__file__).parent / "csrc"

#: Warnings as errors, strict C99: the same code must build for every Cortex-M with -Werror.
WARNING_FLAGS = (*PORTABLE_C_FLAGS, "-pedantic", "-Wall", "-Wextra", "-Werror", "-Wdouble-promotion", "-Wshadow")
CODEGEN_FLAGS = ("-O2",)
SANITIZE_FLAGS = ("-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
                  "-fno-sanitize-recover=undefined")
#: The libFuzzer harness (csrc/fuzz/fuzz_program.c): clang's coverage-guided fuzzer with both sanitizers.
FUZZ_FLAGS = ("-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=fuzzer,address,undefined",
              "-fno-sanitize-recover=undefined")

# mf_status codes (csrc/include/mcuforge.h)
STATUS_NAMES = (
    "MF_OK", "MF_ERR_MAGIC", "MF_ERR_VERSION", "MF_ERR_TRUNCATED", "MF_ERR_CRC", "MF_ERR_BOUNDS",
    "MF_ERR_FORMAT", "MF_ERR_TARGET", "MF_ERR_UNSUPPORTED_OP", "MF_ERR_ARENA_TOO_SMALL", "MF_ERR_ARG",
    "MF_ERR_SHAPE", "MF_ERR_STATE", "MF_ERR_NO_DELEGATE", "MF_ERR_NPU_UNREACHABLE",
)
_DTYPES = {0: np.int8, 1: np.int16, 2: np.int32, 3: np.float32, 4: np.int64, 5: np.bool_}


class CRuntimeBuildError(RuntimeError):
    """The host compiler failed to build the C runtime (the message carries its command and output)."""


class CRuntimeError(RuntimeError):
    """The C runtime returned an error status; ``status`` is its name, ``op_index`` the failing op
    (None when the error is not in an op)."""

    def __init__(self, message: str, status: str, op_index: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.op_index = op_index


def c_aten_ops() -> frozenset[str]:
    """The aten ops the C runtime implements as fp32 fallback kernels (read from the sources of
    ``csrc/kernels/fp32``: each defines its ``mf_aten_op`` with the aten name as a string)."""
    return frozenset(c_aten_table())


def ops_without_c_kernel(graph: Any) -> list[int]:
    """Indices of fp32 fallback ops that the C runtime (and so the firmware) cannot run."""
    known = c_aten_ops()
    return [i for i, op in enumerate(graph.ops) if op.kind == "aten_fp32" and op.attrs["target"] not in known]


def status_name(code: int) -> str:
    return STATUS_NAMES[code] if 0 <= code < len(STATUS_NAMES) else f"MF_ERR_UNKNOWN({code})"


# ----------------------------------------------------------------------------------------------
# Building
# ----------------------------------------------------------------------------------------------


def runtime_sources() -> list[Path]:
    """The portable runtime and kernels (the firmware's manifest, mcuforge.firmware.builder.RUNTIME_DIRS)."""
    return builder_runtime_sources()


def _all_inputs() -> list[Path]:
    return sorted(p for p in CSRC.rglob("*") if p.suffix in (".c", ".h") and p.is_file())


def compiler() -> str:
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if not cc or not shutil.which(cc):
        raise ToolchainMissing(f"no host C compiler found{f' (CC={cc!r})' if cc else ''}: install gcc "
                               "(Debian: apt-get install gcc) or set CC")
    return cc


def fuzz_compiler() -> str:
    """clang with libFuzzer's runtime (the fuzzer harness is built with it, whatever CC says)."""
    cc = os.environ.get("MCUFORGE_FUZZ_CC") or shutil.which("clang")
    if not cc or not shutil.which(cc):
        raise ToolchainMissing("clang not found: the libFuzzer harness needs it "
                               "(Debian: apt-get install clang libclang-rt-14-dev)")
    return cc


def cache_dir() -> Path:
    """Where host builds of the C runtime are kept (beside the firmware builds)."""
    path = cache_root() / "cruntime"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _key(parts: Sequence[str], cc: str) -> str:
    h = hashlib.sha256()
    for p in _all_inputs():
        h.update(str(p.relative_to(CSRC)).encode() + b"\0" + p.read_bytes())
    version = subprocess.run([cc, "--version"], capture_output=True, text=True, check=False).stdout
    h.update("\0".join([cc, version, *parts]).encode())
    return h.hexdigest()[:20]


def build(kind: str = "shared", *, trace: bool = True, sanitize: bool = False,
          extra_flags: Sequence[str] = ()) -> Path:
    """Compile csrc/ for the host and return the cached artifact.

    ``kind="shared"``: the ctypes library (runtime + host helpers); ``kind="driver"``: the
    ``mf_run`` command-line driver; ``kind="uart_check"``: the UART trace sink (board support) with a
    slow fake UART, ``mf_trace_uart_check``; ``kind="fuzzer"``: the libFuzzer harness (clang, always
    with AddressSanitizer, UBSan and tracing). ``trace`` compiles tracing in (``-DMF_TRACE=1``);
    ``sanitize`` builds with AddressSanitizer and UBSan. Raises RuntimeError with the compiler's
    output if the build fails (warnings are errors).
    """
    cc = fuzz_compiler() if kind == "fuzzer" else compiler()
    codegen = FUZZ_FLAGS if kind == "fuzzer" else SANITIZE_FLAGS if sanitize else CODEGEN_FLAGS
    flags = [*WARNING_FLAGS, *codegen, f"-I{CSRC / 'include'}",
             *(["-DMF_TRACE=1"] if trace or kind == "fuzzer" else []), *extra_flags]
    if kind == "shared":
        sources = [*runtime_sources(), CSRC / "host" / "mf_host.c"]
        flags += ["-fPIC", "-shared"]
        suffix = ".so"
    elif kind == "driver":
        sources = [*runtime_sources(), CSRC / "host" / "mf_run.c"]
        suffix = ""
    elif kind == "uart_check":
        sources = [*runtime_sources(), CSRC / "board" / "trace_uart.c", CSRC / "host" / "mf_host.c",
                   CSRC / "host" / "mf_trace_uart_check.c"]
        flags.append(f"-I{CSRC / 'board'}")
        suffix = ""
    elif kind == "fuzzer":
        sources = [*runtime_sources(), CSRC / "fuzz" / "fuzz_program.c"]
        flags.append(f"-I{CSRC / 'runtime'}")  # the harness fixes CRCs with the runtime's own CRC-32
        suffix = ""
    else:
        raise ValueError(f"unknown build kind {kind!r}: 'shared', 'driver', 'uart_check' or 'fuzzer'")
    target = cache_dir() / f"mcuforge-{kind}-{_key([kind, *flags], cc)}{suffix}"
    if target.exists():
        return target
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        out = Path(tmp) / target.name
        cmd = [cc, *flags, *map(str, sources), "-lm", "-o", str(out)]
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise CRuntimeBuildError(f"C runtime build failed:\n{' '.join(cmd)}\n{result.stderr}")
        os.replace(out, target)  # atomic: parallel test workers may build the same key
    return target


# ----------------------------------------------------------------------------------------------
# ctypes binding
# ----------------------------------------------------------------------------------------------


class TensorInfo(ctypes.Structure):
    """mf_tensor_info"""

    _fields_ = [
        ("name", ctypes.c_char_p), ("name_length", ctypes.c_uint32),
        ("dtype", ctypes.c_uint8), ("rank", ctypes.c_uint8), ("layout", ctypes.c_uint8),
        ("is_constant", ctypes.c_uint8), ("shape", ctypes.c_uint32 * 6), ("has_qparams", ctypes.c_uint8),
        ("scale", ctypes.c_float), ("zero_point", ctypes.c_int32), ("offset", ctypes.c_uint32),
        ("nbytes", ctypes.c_uint32),
    ]

    @property
    def shape_tuple(self) -> tuple[int, ...]:
        return tuple(int(self.shape[k]) for k in range(self.rank))


WRITE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint8), ctypes.c_size_t)


@cache
def load_library(trace: bool = True, extra_flags: tuple[str, ...] = ()) -> ctypes.CDLL:
    """The host build of the C runtime (built on first use), with argument types declared.
    ``extra_flags``: more compiler flags, e.g. ``("-DMF_SCALAR_FAST=1",)`` for the optimized scalar
    kernel paths (csrc/kernels/mf_scalar.h) that the plain host build leaves out."""
    lib = ctypes.CDLL(str(build("shared", trace=trace, extra_flags=extra_flags)))
    vp, u32, i32, sz = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int32, ctypes.c_size_t
    signatures = {
        "mf_program_load": (ctypes.c_int, [vp, vp, sz]),
        "mf_program_arena_bytes": (u32, [vp]),
        "mf_program_input_count": (u32, [vp]),
        "mf_program_output_count": (u32, [vp]),
        "mf_program_op_count": (u32, [vp]),
        "mf_program_input": (ctypes.c_int, [vp, u32, ctypes.POINTER(TensorInfo)]),
        "mf_program_output": (ctypes.c_int, [vp, u32, ctypes.POINTER(TensorInfo)]),
        "mf_program_op_kind": (ctypes.c_char_p, [vp, u32]),
        "mf_program_op_target": (ctypes.c_char_p, [vp, u32]),
        "mf_init": (ctypes.c_int, [vp, vp, vp, sz]),
        "mf_init_regions": (ctypes.c_int, [vp, vp, ctypes.POINTER(vp), ctypes.POINTER(sz), u32]),
        "mf_program_region_count": (u32, [vp]),
        "mf_program_region_bytes": (u32, [vp, u32]),
        "mf_set_input": (ctypes.c_int, [vp, u32, vp, sz]),
        "mf_invoke": (ctypes.c_int, [vp, vp]),
        "mf_output": (vp, [vp, u32, ctypes.POINTER(sz)]),
        "mf_trace_begin": (ctypes.c_int, [vp, vp]),
        "mf_trace_end": (ctypes.c_int, [vp]),
        "mf_status_name": (ctypes.c_char_p, [ctypes.c_int]),
        "mf_host_sizeof_program": (sz, []),
        "mf_host_sizeof_context": (sz, []),
        "mf_host_sizeof_trace_sink": (sz, []),
        "mf_host_program_error_op": (i32, [vp]),
        "mf_host_program_error_tensor": (i32, [vp]),
        "mf_host_context_error_op": (i32, [vp]),
        "mf_host_trace_compiled": (ctypes.c_int, []),
        "mf_host_trace_init": (None, [vp, WRITE_FN, vp, ctypes.c_uint8]),
        "mf_host_now_ns": (ctypes.c_uint64, [vp]),
    }
    for name, (restype, argtypes) in signatures.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


def _aligned(nbytes: int, alignment: int = 16) -> np.ndarray:
    """A zeroed uint8 buffer whose data pointer is ``alignment``-aligned."""
    raw = np.zeros(nbytes + alignment, np.uint8)
    start = (-raw.ctypes.data) % alignment
    return raw[start:start + nbytes]


def _op_kind_from_bytes(data: bytes, op_index: int) -> str:
    """Best effort name of op ``op_index`` of a program the C loader rejected."""
    from mcuforge.ir import OP_KIND_BY_ID

    try:
        ops_offset, op_count, op_record_size = struct.unpack_from("<III", data, 44)
        if op_index >= op_count:
            return "?"
        kind_id = struct.unpack_from("<H", data, ops_offset + op_index * op_record_size)[0]
        return OP_KIND_BY_ID.get(kind_id, f"kind id {kind_id}")
    except struct.error:
        return "?"


class LoadedProgram:
    """A program loaded by the C runtime, with its arena; run it as many times as needed."""

    def __init__(self, program_bytes: bytes, *, lib: ctypes.CDLL | None = None) -> None:
        self.lib = lib or load_library()
        data = bytes(program_bytes)
        self._data = _aligned(max(len(data), 1))
        self._data[:len(data)] = np.frombuffer(data, np.uint8)
        self._program = ctypes.create_string_buffer(self.lib.mf_host_sizeof_program())
        status = self.lib.mf_program_load(self._program, self._data.ctypes.data, len(data))
        if status != 0:
            op = self.lib.mf_host_program_error_op(self._program)
            tensor = self.lib.mf_host_program_error_tensor(self._program)
            where = ""
            if op >= 0:
                where = f" at op {op} ({_op_kind_from_bytes(data, op)})"
            elif tensor >= 0:
                where = f" at tensor {tensor}"
            raise CRuntimeError(f"C runtime rejected the program: {status_name(status)}{where}",
                                status_name(status), op if op >= 0 else None)
        self.inputs = [self._info(self.lib.mf_program_input, i)
                       for i in range(self.lib.mf_program_input_count(self._program))]
        self.outputs = [self._info(self.lib.mf_program_output, i)
                        for i in range(self.lib.mf_program_output_count(self._program))]
        self.arena_bytes = int(self.lib.mf_program_arena_bytes(self._program))
        self.op_count = int(self.lib.mf_program_op_count(self._program))
        # each RAM region's bytes of a program split across regions (empty: one arena)
        self.region_bytes = [int(self.lib.mf_program_region_bytes(self._program, k))
                             for k in range(self.lib.mf_program_region_count(self._program))]

    def _info(self, getter, i: int) -> TensorInfo:
        info = TensorInfo()
        status = getter(self._program, i, ctypes.byref(info))
        if status != 0:
            raise CRuntimeError(f"tensor info {i}: {status_name(status)}", status_name(status))
        return info

    def _fail(self, what: str, status: int, op: int) -> CRuntimeError:
        where = ""
        if op >= 0:
            kind = self.lib.mf_program_op_kind(self._program, op).decode()
            target = self.lib.mf_program_op_target(self._program, op).decode()
            where = f" in op {op} ({kind}{' ' + target if target else ''})"
        return CRuntimeError(f"C runtime {what} failed: {status_name(status)}{where}", status_name(status),
                             op if op >= 0 else None)

    def run(self, inputs: Sequence[np.ndarray], trace: bool | str = False) -> tuple[list[np.ndarray], bytes | None]:
        if len(inputs) != len(self.inputs):
            raise ValueError(f"program takes {len(self.inputs)} inputs, got {len(inputs)}")
        mode = trace_mode(trace)
        lib = self.lib
        ctx = ctypes.create_string_buffer(lib.mf_host_sizeof_context())
        if self.region_bytes:  # a program split across regions: one buffer of its own per region
            arena = [_aligned(n) for n in self.region_bytes]
            bases = (ctypes.c_void_p * len(arena))(*(a.ctypes.data for a in arena))
            sizes = (ctypes.c_size_t * len(arena))(*self.region_bytes)
            status = lib.mf_init_regions(ctx, self._program, bases, sizes, len(arena))
        else:
            arena = _aligned(max(self.arena_bytes, 1))
            status = lib.mf_init(ctx, self._program, arena.ctypes.data, self.arena_bytes)
        if status != 0:
            raise self._fail("init", status, -1)
        for i, (info, value) in enumerate(zip(self.inputs, inputs, strict=True)):
            value = np.asarray(value)
            dtype, shape = np.dtype(_DTYPES[info.dtype]), info.shape_tuple
            if value.dtype != dtype or value.shape != shape:
                raise ValueError(f"input {i} ({info.name.decode()!r}): expected {dtype}{list(shape)}, got "
                                 f"{value.dtype}{list(value.shape)}")
            buf = np.ascontiguousarray(value)
            status = lib.mf_set_input(ctx, i, buf.ctypes.data, buf.nbytes)
            if status != 0:
                raise self._fail("set_input", status, -1)
        trace_bytes = None
        if mode != "off":
            trace_bytes, status = self._invoke_traced(ctx, full=mode == "full")
        else:
            status = lib.mf_invoke(ctx, None)
        if status != 0:
            raise self._fail("invoke", status, lib.mf_host_context_error_op(ctx))
        outputs = []
        for i, info in enumerate(self.outputs):
            nbytes = ctypes.c_size_t()
            ptr = lib.mf_output(ctx, i, ctypes.byref(nbytes))
            raw = ctypes.string_at(ptr, nbytes.value) if nbytes.value else b""
            outputs.append(np.frombuffer(raw, _DTYPES[info.dtype]).reshape(info.shape_tuple).copy())
        return outputs, trace_bytes

    def _invoke_traced(self, ctx, full: bool) -> tuple[bytes, int]:
        lib = self.lib
        if not lib.mf_host_trace_compiled():
            raise RuntimeError("this build of the C runtime has tracing compiled out (MF_TRACE=0)")
        chunks: list[bytes] = []

        def write(_user, data, n):
            chunks.append(ctypes.string_at(data, n))

        callback = WRITE_FN(write)  # kept alive until the end of this function
        sink = ctypes.create_string_buffer(lib.mf_host_sizeof_trace_sink())
        lib.mf_host_trace_init(sink, callback, None, 1 if full else 0)
        status = lib.mf_trace_begin(sink, ctx)
        if status != 0:
            raise self._fail("trace_begin", status, -1)
        status = lib.mf_invoke(ctx, sink)
        lib.mf_trace_end(sink)
        return b"".join(chunks), status


def run_program(program_bytes: bytes, inputs: Sequence[np.ndarray],
                trace: bool | str = False) -> tuple[list[np.ndarray], bytes | None]:
    """Run a program file with the C runtime built for the host.

    ``inputs`` and the returned outputs are in the program's dtype and layout (as
    :func:`mcuforge.runtime.execute`). ``trace``: False (no trace, returns None), True (run and
    op events, docs/trace.md, time unit ns) or ``"full"`` (plus each op's output bytes).
    Raises :class:`CRuntimeError` naming the mf_status (and the op) when the C runtime fails,
    ValueError for inputs of the wrong dtype or shape.
    """
    return LoadedProgram(program_bytes).run(inputs, trace=trace)
