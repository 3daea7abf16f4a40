"""mf_math (csrc/kernels/fp32/mf_math.c): the portable float32 math of the C runtime's fp32 ops.

(a) accuracy against float64 references over a dense sweep of float32 (max ulp errors below);
(b) determinism: the same output bits on the host (gcc) and on QEMU Cortex-M3 (soft float),
    Cortex-M4/M7/M33/M55 (hard float), compared as FNV-1a hashes of 100k outputs per function;
(c) special values (inf, nan, -0, overflow, underflow) and the runtime's ops use mf_math;
(d) its numpy statement (kernels/fp32_math.py, the host runtime's) gives the same bits on the sweep.
"""

from __future__ import annotations

import ctypes
import math
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from mcuforge import cruntime

TESTS = Path(__file__).resolve().parent
DRIVER = TESTS / "fp32_math_check.c"
CSRC = cruntime.CSRC
MF_MATH = CSRC / "kernels" / "fp32" / "mf_math.c"

FUNCTIONS = ["exp", "log", "tanh", "erf", "sigmoid", "silu", "gelu", "gelu_tanh", "sqrt"]
#: Max error in float32 ulps (of the float64 reference) asserted over the sweep; measured maxima
#: are in the comments. Subnormal results count ulps of 2^-149.
MAX_ULP = {
    "exp": 1.0,  # measured 0.88
    "log": 1.0,  # measured 0.80
    "tanh": 1.5,  # measured 1.39
    "erf": 1.5,  # measured 1.20
    "sigmoid": 2.5,  # measured 2.29 (x < 0: t / (1 + t), three roundings after exp)
    "sqrt": 0.5,  # correctly rounded (libm sqrtf, kept)
}
#: silu / gelu combine the above with roundings of their own, and gelu's 1 + erf(x / sqrt 2)
#: cancels for x << 0 exactly as torch's formula does: these are asserted within
#: max(this many ulp, 2 |x| 2^-24 absolute). Measured: silu 1.90, gelu 0.50, gelu_tanh 0.50.
COMPOSITE_ULP = {"silu": 2.0, "gelu": 1.0, "gelu_tanh": 1.0}


def _flags() -> list[str]:
    return [*cruntime.WARNING_FLAGS, *cruntime.CODEGEN_FLAGS, f"-I{CSRC}", f"-I{CSRC / 'include'}"]


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    out = tmp_path_factory.mktemp("mfmath") / "libmfmath.so"
    cmd = [cruntime.compiler(), *_flags(), "-fPIC", "-shared", str(DRIVER), str(MF_MATH), "-lm", "-o", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    so = ctypes.CDLL(str(out))
    so.mf_math_eval.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32]
    so.mf_math_hash.restype = ctypes.c_uint32
    return so


def evaluate(lib, name: str, x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x, dtype=np.float32)
    y = np.empty_like(x)
    lib.mf_math_eval(FUNCTIONS.index(name), x.ctypes.data, y.ctypes.data, x.size)
    return y


def reference(name: str, x: np.ndarray) -> np.ndarray:
    """float64 reference of each function (torch's float64 erf; numpy otherwise)."""
    with np.errstate(all="ignore"):  # signaling NaNs in the sweep; overflow to inf
        d = x.astype(np.float64)
    erf = lambda v: torch.special.erf(torch.from_numpy(v)).numpy()  # noqa: E731
    with np.errstate(all="ignore"):
        if name == "exp":
            return np.exp(d)
        if name == "log":
            return np.log(d)
        if name == "tanh":
            return np.tanh(d)
        if name == "erf":
            return erf(d)
        if name == "sigmoid":
            return np.where(d >= 0, 1 / (1 + np.exp(-d)), np.exp(d) / (1 + np.exp(d)))
        if name == "silu":
            return d * np.where(d >= 0, 1 / (1 + np.exp(-d)), np.exp(d) / (1 + np.exp(d)))
        if name == "gelu":
            return 0.5 * d * (1 + erf(d / math.sqrt(2)))
        if name == "gelu_tanh":
            return 0.5 * d * (1 + np.tanh(math.sqrt(2 / math.pi) * (d + 0.044715 * d**3)))
        if name == "sqrt":
            return np.sqrt(d)
    raise KeyError(name)


def ulp_error(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|got - ref| in float32 ulps at ref (2^-149 in the subnormal range); only finite refs."""
    a = np.abs(ref)
    e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    ulp = np.exp2(np.maximum(e, -126) - 23)
    return np.abs(got.astype(np.float64) - ref) / ulp


def sweep() -> np.ndarray:
    """Every 509th float32 bit pattern of the whole range (8.4M, both signs, subnormals, inf, NaN)
    and every 61st float of |x| in [2^-8, 2^7) (4.3M) where the functions vary."""
    whole = np.arange(0, 2**32, 509, dtype=np.uint64).astype(np.uint32)
    lo, hi = 0x3B800000, 0x43000000
    dense = np.arange(lo, hi, 61, dtype=np.uint32)
    bits = np.concatenate([whole, dense, dense | np.uint32(0x80000000)])
    return bits.view(np.float32)


@pytest.fixture(scope="module")
def xs():
    return sweep()


@pytest.mark.parametrize("name", list(MAX_ULP) + list(COMPOSITE_ULP))
def test_accuracy_against_float64(lib, xs, name):
    y = evaluate(lib, name, xs)
    ref = reference(name, xs)
    nan_ref = np.isnan(ref)
    # NaN exactly where the reference is NaN, and always the canonical quiet NaN.
    assert np.array_equal(np.isnan(y), nan_ref), xs[np.isnan(y) != nan_ref][:10]
    assert np.all(y[nan_ref].view(np.uint32) == 0x7FC00000)
    with np.errstate(all="ignore"):
        ref32 = ref.astype(np.float32)  # overflow -> inf, underflow below half of 2^-149 -> 0
    inf_ref = np.isinf(ref32) & ~nan_ref
    assert np.array_equal(y[inf_ref], ref32[inf_ref]), xs[inf_ref][y[inf_ref] != ref32[inf_ref]][:10]
    finite = ~nan_ref & ~inf_ref
    assert np.all(np.isfinite(y[finite])), xs[finite][~np.isfinite(y[finite])][:10]
    err = ulp_error(y[finite], ref[finite])
    limit = MAX_ULP.get(name, COMPOSITE_ULP.get(name))
    if name in COMPOSITE_ULP:
        # 0.5 x (1 + f) and x * sigmoid(x): where the result is much smaller than the terms it is made
        # of, ulps of the result overstate; allow errors of a few ulp of x * 2^-24 too.
        floor = np.abs(xs[finite].astype(np.float64)) * 2.0**-24 * 2
        err = np.where(np.abs(y[finite] - ref[finite]) <= floor, 0.0, err)
    worst = int(np.argmax(err))
    assert err[worst] <= limit, (
        f"{name}: {err[worst]:.3f} ulp at x={xs[finite][worst]!r} "
        f"(got {y[finite][worst]!r}, want {ref[finite][worst]!r})"
    )


PYTHON = {"exp": "expf", "log": "logf", "tanh": "tanhf", "erf": "erff", "sigmoid": "sigmoidf", "silu": "siluf",
          "gelu": "geluf", "gelu_tanh": "gelu_tanhf"}


@pytest.mark.parametrize("name", sorted(PYTHON))
def test_python_port_same_bits(lib, xs, name):
    """kernels/fp32_math.py (the host runtime's fp32 math) gives mf_math's bits on the whole sweep."""
    from mcuforge.kernels import fp32_math

    y = evaluate(lib, name, xs)
    got = getattr(fp32_math, PYTHON[name])(xs)
    differ = np.flatnonzero(got.view(np.uint32) != y.view(np.uint32))
    assert differ.size == 0, f"{differ.size} differ, e.g. x={xs[differ[:5]]}: {got[differ[:5]]} vs {y[differ[:5]]}"


def test_special_values(lib):
    inf, nan = np.float32(np.inf), np.float32(np.nan)
    x = np.array([0.0, -0.0, inf, -inf, nan, 1e-45, -1e-45, 3.4e38, -3.4e38], dtype=np.float32)

    def bits(name):
        return evaluate(lib, name, x).view(np.uint32).tolist()

    f = lambda *v: np.array(v, dtype=np.float32).view(np.uint32).tolist()  # noqa: E731
    n = np.float32(np.nan)
    assert bits("exp") == f(1, 1, inf, 0, n, 1, 1, inf, 0)
    assert bits("log")[:5] == f(-inf, -inf, inf, n, n)
    assert bits("log")[6] == 0x7FC00000 and bits("log")[8] == 0x7FC00000
    assert bits("tanh") == f(0.0, -0.0, 1, -1, n, 1e-45, -1e-45, 1, -1)
    assert bits("erf") == f(0.0, -0.0, 1, -1, n, 1e-45, -1e-45, 1, -1)[:5] + bits("erf")[5:7] + f(1, -1)
    assert bits("sigmoid")[:5] == f(0.5, 0.5, 1, 0, n)
    assert bits("silu")[:5] == f(0.0, -0.0, inf, n, n)  # torch: silu(-inf) = nan
    assert bits("gelu")[:5] == f(0.0, -0.0, inf, n, n)
    assert bits("gelu_tanh")[:5] == f(0.0, -0.0, inf, n, n)
    # exp overflows exactly above 0x42b17217 and underflows gradually to the smallest subnormal.
    e = evaluate(lib, "exp", np.array([0x42B17217, 0x42B17218, 0xC2CFF1B4, 0xC2CFF1B5], np.uint32).view(np.float32))
    assert np.isfinite(e[0]) and np.isinf(e[1]) and e.view(np.uint32)[2] == 1 and e[3] == 0


# ---------------------------------------------------------------------------------------------
# determinism: host gcc == QEMU Cortex-M3 (soft float) == Cortex-M4 / M55 (hard float)
# ---------------------------------------------------------------------------------------------


def parse_hashes(text: str) -> dict[int, str]:
    assert "done" in text, text[-2000:]
    return {int(m[1]): m[2] for m in re.finditer(r"^fn (\d) ([0-9a-f]{8})$", text, re.M)}


@pytest.fixture(scope="module")
def host_hashes(tmp_path_factory):
    exe = tmp_path_factory.mktemp("mfmath-host") / "check"
    cmd = [cruntime.compiler(), *_flags(), "-DMF_MATH_MAIN", str(DRIVER), str(MF_MATH), "-lm", "-o", str(exe)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    hashes = parse_hashes(subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout)
    assert len(hashes) == len(FUNCTIONS)
    return hashes


def test_host_hash_matches_in_process_library(lib, host_hashes):
    assert {i: f"{lib.mf_math_hash(i):08x}" for i in range(len(FUNCTIONS))} == host_hashes


def build_board_check(target: str, out: Path) -> Path:
    """The driver + mf_math linked with the firmware's start-up, semihosting and linker script,
    compiled with the firmware's flags for ``target`` (mcuforge.firmware.builder)."""
    from mcuforge.firmware import builder
    from mcuforge.firmware.boards import get_board

    board = get_board(target)
    flags = [
        *builder._compile_flags(board, trace=False),
        "-ffp-contract=off",
        f"-I{CSRC}",
        "-DMF_MATH_MAIN",
        "-DMF_MATH_BOARD",
    ]
    sources = [DRIVER, MF_MATH, *(builder.FIRMWARE_SRC / n for n in ("start.c", "semihost.c")),
               builder.BOARD_SRC / "timer.c"]  # SysTick_Handler, which start.c's vector table names
    gcc = builder.toolchain.require("arm-none-eabi-gcc")
    script = out / "link.ld"
    script.write_text(builder._linker_script(board))
    elf = out / "check.elf"
    cmd = [gcc, *flags, *builder.LINK_FLAGS, "-T", str(script), *map(str, sources), "-lm", "-o", str(elf)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return elf


@pytest.mark.parametrize("target", ["cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55"])
def test_same_bits_on_qemu_boards_as_on_host(target, host_hashes, tmp_path):
    from mcuforge.firmware import ToolchainMissing
    from mcuforge.firmware.qemu import qemu_command

    try:
        elf = build_board_check(target, tmp_path)
        command = qemu_command(target, elf)
    except ToolchainMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    done = subprocess.run(
        command, cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    board = parse_hashes(done.stdout + done.stderr)
    mismatched = [FUNCTIONS[i] for i in host_hashes if board.get(i) != host_hashes[i]]
    assert not mismatched, f"{target} differs from the host for {mismatched}: {board} vs {host_hashes}"


# ---------------------------------------------------------------------------------------------
# the runtime uses it
# ---------------------------------------------------------------------------------------------


def test_fp32_kernels_call_no_libm_transcendentals():
    fp32 = CSRC / "kernels" / "fp32"
    text = "\n".join(p.read_text() for p in fp32.glob("*.c") if p.name != "mf_math.c")
    used = sorted(set(re.findall(r"\b(expf|logf|tanhf|erff|erfcf|powf|expm1f|log1pf|exp|log|tanh|erf)\s*\(", text)))
    assert not used, used


# ---------------------------------------------------------------------------------------------
# end to end: the C runtime on the host and the firmware on a board give the same output bytes
# ---------------------------------------------------------------------------------------------

E2E_OPS = [
    ("aten.exp.default", {}),
    ("aten.log.default", {}),
    ("aten.tanh.default", {}),
    ("aten.sigmoid.default", {}),
    ("aten.silu.default", {}),
    ("aten.gelu.default", {}),
    ("aten.gelu.default", {"approximate": "tanh"}),
    ("aten._softmax.default", None),
]


def e2e_program(target: str, aten: str, kwargs: dict | None, shape: tuple[int, ...]) -> bytes:
    from mcuforge.ir import Graph, Op, Tensor, TensorRef
    from mcuforge.plan import plan_arena
    from mcuforge.program import serialize

    x, y = Tensor("x", shape, "float32"), Tensor("y", shape, "float32")
    args = [TensorRef(0), -1, False] if kwargs is None else [TensorRef(0)]
    from mcuforge.lower.fallback import aten_fp32_attrs

    op = Op("aten_fp32", ["x"], ["y"], aten_fp32_attrs(aten, args, kwargs or {}), backend="fp32")
    graph = Graph({"x": x, "y": y}, [op], ["x"], ["y"], target=target)
    plan_arena(graph)
    return serialize(graph)


def e2e_input(shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(int(np.prod(shape))) * 6).astype(np.float32)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 88.72, -103.9, 3e38, -3e38], np.float32)
    x[: specials.size] = specials
    return x.reshape(shape)


@pytest.mark.parametrize("target", ["cortex-m3", "cortex-m4"])
def test_host_c_runtime_and_firmware_same_bytes(target):
    from mcuforge.firmware import ToolchainMissing, run_on_qemu

    shape = (64, 32)
    x = e2e_input(shape)
    for aten, kwargs in E2E_OPS:
        program = e2e_program(target, aten, kwargs, shape)
        host, _ = cruntime.run_program(program, [x])
        try:
            board, _, _ = run_on_qemu(program, [x], target)
        except ToolchainMissing as exc:
            pytest.fail(str(exc), pytrace=False)
        differ = int(np.sum(host[0].view(np.uint32) != board[0].view(np.uint32)))
        assert differ == 0, f"{aten} {kwargs}: {differ} of {x.size} outputs differ between host C and {target}"
