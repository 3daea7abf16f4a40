"""Coverage-guided fuzzing of everything that reads bytes from outside: the C runtime (loader,
executor, kernels, trace writer) under libFuzzer with AddressSanitizer and UBSan, and the Python
program reader and trace reader under atheris. docs/fuzzing.md says how to run a campaign.

    python -m mcuforge.fuzz corpus DIR             # the seed corpus: valid programs, every op kind
    python -m mcuforge.fuzz run --c-runs 1000000 --py-runs 100000      # all three harnesses
    python -m mcuforge.fuzz c|program|trace [libFuzzer flags...]       # one harness

The seeds are compiled from small models at run time (about 3 s), so they always follow the
current program format and op table; ``seed_kinds`` says which op kinds they cover.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import warnings
import zlib
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path

HARNESSES = ("c", "program", "trace")
#: libFuzzer's input size limit for the C harness: the seed programs are 5-30 KB.
MAX_LEN = 65536
#: Which outside bytes each harness reads (for the summary table).
WHAT = {
    "c": "C runtime: mf_program_load + mf_init + mf_set_input + traced mf_invoke (ASan + UBSan)",
    "program": "Python program reader: read_header, deserialize (+ serialize of what it accepts)",
    "trace": "Python trace reader: parse",
}


def fuzz_root() -> Path:
    """Where campaigns keep their corpora and crash files (beside the build cache)."""
    from .firmware.builder import cache_root

    path = cache_root() / "fuzz"
    path.mkdir(parents=True, exist_ok=True)
    return path


# -- seeds ------------------------------------------------------------------------------------------


def _seed_models() -> list[tuple[str, object, tuple, str, str]]:
    """(name, model, example inputs, target, quantization): small models whose programs hold every op kind
    (one of them partly delegated to an Ethos-U NPU, one with int4 weights, one with int16 activations) and most
    of the C runtime's fp32 fallback kernels."""
    import torch
    import torch.nn.functional as F  # noqa: N812 - torch's own convention
    from torch import nn

    class EveryInt8Kernel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.dw = nn.Conv2d(4, 4, 3, padding=1, groups=4)
            self.up = nn.ConvTranspose2d(4, 4, 2, stride=2)
            self.fc = nn.Linear(64, 8)
            self.fc2 = nn.Linear(8, 8)

        def forward(self, x):
            y = F.relu(self.conv(x))
            z = F.relu6(self.dw(y))
            y = (y + z) * torch.sigmoid(z)
            y = torch.maximum(y, torch.minimum(z, z.mean((2, 3), keepdim=True)))  # maximum_s8, minimum_s8
            y = torch.cat([F.avg_pool2d(y, 2), F.max_pool2d(y, 2)], 1)[:, :4]
            y = torch.clamp(self.up(F.pad(y, (1, 1, 1, 1)))[:, :, :4, :4], -1, 1)
            q = y.flatten(2)
            attention = F.softmax(torch.matmul(q.transpose(1, 2), q), -1)
            return F.gelu(self.fc2(self.fc(attention.flatten(1)[:, :64]))), y.permute(0, 2, 3, 1)

    class EveryS16Kernel(nn.Module):
        """Every op with an s16 kernel under "a16w8", and int8-only ops (pad, concatenation, a transposed
        convolution) between int16 ones, so that the program also converts between the widths."""

        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
            self.up = nn.ConvTranspose2d(8, 4, 2, stride=2)
            self.fc = nn.Linear(64, 8)
            self.head = nn.Linear(8, 8)

        def forward(self, x):
            y = F.relu(self.conv(x))
            z = self.dw(y)
            gate = torch.tanh(self.dw(y))  # sole user of its producer: a power-of-two input, activation_s16
            y = (y + F.relu6(z)) * gate  # add_s16, mul_s16
            pooled = torch.cat([torch.clamp(F.avg_pool2d(y, 2), -1.0, 1.0),  # avgpool_s16, clamp_s16 (unfused)
                                F.max_pool2d(y, 2)], 1)  # maxpool_s16, concat int8
            small = self.up(F.pad(pooled[:, :8], (1, 1, 1, 1)))[:, :, :4, :4]  # int8 pad and transposed conv
            q = small.flatten(2)  # (1, 4, 16)
            attention = F.softmax(torch.matmul(q.transpose(1, 2), q), -1)  # batch_matmul_s16, softmax_s16
            features = F.gelu(self.fc(attention.flatten(1)[:, :64]))  # fully_connected_s16, lut_s16
            return torch.sigmoid(self.head(features)), y.mean(dim=(2, 3))

    class Fp32AndNpu(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.norm = nn.LayerNorm(8)

        def forward(self, x):
            y = self.conv(x).permute(0, 2, 3, 1)
            return self.norm(y).mean(dim=(1, 2)), torch.amax(y, 1)

    class Fp32Kernels(nn.Module):
        """Ops without an int8 kernel, so that the seeds reach the C runtime's fp32 fallback kernels."""

        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(10, 8)
            self.group = nn.GroupNorm(2, 4)

        def forward(self, x, idx):
            a = torch.rsqrt(torch.sqrt(torch.exp(x) + 1)) + torch.log(x.abs() + 1) / (x.abs() + 1)
            b = torch.where(x > 0, torch.erf(x), F.elu(x)).pow(3).clamp_min(-2).floor()
            c = F.interpolate(self.group(a), scale_factor=2, mode="bilinear") + F.interpolate(b, scale_factor=2)
            v = c.var(dim=(2, 3)) + c.std(dim=1).sum(dim=(1, 2)).unsqueeze(1)
            # fp32 operands (floor, round), so maximum / minimum stay fp32 (int8 operands: maximum_s8 / minimum_s8)
            w = torch.maximum(v.floor(), torch.minimum(v.round(), x.mean(dim=(2, 3)))).reciprocal()
            return w, self.embed(idx).round(), c.argmax(dim=1)

    class Recurrent(nn.Module):
        """The fused recurrent kernels: an LSTM layer (lstm_s8) feeding a GRU layer (gru_s8)."""

        def __init__(self) -> None:
            super().__init__()
            self.lstm = nn.LSTM(3, 4, batch_first=True)
            self.gru = nn.GRU(4, 3, batch_first=True)

        def forward(self, x):
            return self.gru(self.lstm(x)[0])[0]

    class PatchChain(nn.Module):
        """A convolution stem compiled with patches=2 (mcuforge.patches): slices and insert_tile."""

        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, stride=2, padding=1)
            self.dw = nn.Conv2d(4, 4, 3, padding=1, groups=4)

        def forward(self, x):
            return F.relu(self.dw(F.relu(self.conv(x)))).mean((2, 3))

    class InPlaceDepthwise(nn.Module):
        """A depthwise convolution at the arena's peak, written over its input (plan.choose_in_place)."""

        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 16, 1)
            self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16)

        def forward(self, x):
            return F.relu(self.dw(F.relu(self.conv(x)))).mean((2, 3))

    torch.manual_seed(0)
    x = (torch.randn(1, 3, 8, 8),)
    every = EveryInt8Kernel()
    with torch.no_grad():  # fc's rows of very different ranges (quantized per channel), fc2's all alike (per tensor)
        every.fc.weight.mul_(torch.logspace(-2, 1, 8).unsqueeze(1))
        every.fc2.weight.copy_(0.3 * torch.sign(torch.randn(8, 8)))
    return [("every_int8_kernel", every, x, "cortex-m55", "int8"),
            ("int4_weights", EveryInt8Kernel(), x, "cortex-m4", "w4a8"),
            ("fp32_and_npu", Fp32AndNpu(), x, "cortex-m55+ethos-u55-128", "int8"),
            ("fp32_kernels", Fp32Kernels(), (torch.randn(1, 4, 4, 4), torch.tensor([[1, 7, 3]])), "cortex-m4",
             "int8"),
            ("every_s16_kernel", EveryS16Kernel(), x, "cortex-m55", "a16w8"),
            ("recurrent", Recurrent(), (torch.randn(1, 5, 3),), "cortex-m4", "int8"),
            ("patch_chain", PatchChain(), x, "cortex-m4", "int8"),
            ("in_place_depthwise", InPlaceDepthwise(), x, "cortex-m55", "int8"),
            *_kind_examples()]


#: Compile options of the seed models that need more than their target and quantization.
_SEED_OPTIONS: dict[str, dict] = {"patch_chain": {"patches": 2}, "in_place_depthwise": {"in_place": True}}


def _kind_examples() -> list[tuple[str, object, tuple, str, str]]:
    """A seed per kind whose lowering declares an example model (``int8_lowering(example=...)``), named
    ``kind_<kind>``: a kind added that way brings its own seed."""
    import torch

    from .lower.int8 import EXAMPLES

    seeds = []
    for kind, make in sorted(EXAMPLES.items()):
        torch.manual_seed(0)
        model, example = make()
        seeds.append((f"kind_{kind}", model, example, "cortex-m4", "int8"))
    return seeds


def kind_seed_names() -> list[str]:
    """The names of the per-kind seeds (:func:`_kind_examples`)."""
    from .lower.int8 import EXAMPLES

    return [f"kind_{kind}" for kind in sorted(EXAMPLES)]


def seed_model(name: str) -> tuple[object, tuple, str, str]:
    """(model in eval mode, example inputs, target, quantization) of the seed model ``name``."""
    for seed, model, example, target, quantization in _seed_models():
        if seed == name:
            return model.eval(), example, target, quantization
    raise KeyError(f"no seed model {name!r}")


@cache
def seed_programs() -> dict[str, bytes]:
    """Valid program files: the seed models compiled for their target, the first one also compiled for every
    other Cortex-M (the header's target and ISA differ, and the ops' scratch follows each target's kernel
    path: what the C runtime checks against them)."""
    from .targets import TARGETS

    programs = {}
    for name, model, example, target, quantization in _seed_models():
        for each in [target, *([t for t in TARGETS if t != target] if name == "every_int8_kernel" else [])]:
            options = _SEED_OPTIONS.get(name, {})
            programs[f"{name}-{each}"] = _seed_program(model, example, each, quantization, **options)
    return programs


def seed_programs_of(name: str) -> bytes:
    """The program file of the seed model ``name``, compiled for its target as :func:`seed_programs` does."""
    model, example, target, quantization = seed_model(name)
    return _seed_program(model, example, target, quantization, **_SEED_OPTIONS.get(name, {}))


def _seed_program(model, example: tuple, target: str, quantization: str, in_place: bool = False,
                  **options: object) -> bytes:
    import torch

    from . import api
    from .plan import choose_in_place
    from .program import serialize

    gen = torch.Generator().manual_seed(1)
    calibration = [tuple(torch.randn(t.shape, generator=gen) if t.is_floating_point() else t for t in example)
                   for _ in range(8)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = api.compile(model, example, calibration=calibration, target=target, progress=False,
                            quantization=quantization, **options).graph
    if in_place and not choose_in_place(graph):
        raise AssertionError("the in-place seed model no longer has a depthwise convolution written in place")
    return serialize(graph)


def seed_kinds(programs: dict[str, bytes] | None = None) -> set[str]:
    """The op kinds the seed programs hold."""
    from .program import deserialize

    return {op.kind for data in (programs or seed_programs()).values() for op in deserialize(data).ops}


@cache
def seed_traces() -> dict[str, bytes]:
    """Valid trace streams of the seed programs: events and full, from the Python runtime and the C
    runtime built for the host (programs with NPU ops only from the Python runtime)."""
    import numpy as np

    from . import cruntime
    from .program import deserialize
    from .runtime import execute
    from .trace import HostTraceRecorder

    traces = {}
    for name, data in seed_programs().items():
        if name.startswith("every_int8_kernel") and not name.endswith("cortex-m55"):
            continue  # the same program for another target: the same trace
        graph = deserialize(data)
        rng = np.random.default_rng(0)
        values = [_seed_input(rng, graph.tensors[n]) for n in graph.inputs]
        for full in (False, True):
            recorder = HostTraceRecorder(graph, data, full=full)
            execute(graph, values, recorder)
            traces[f"{name}-python-{'full' if full else 'events'}"] = recorder.finish()
            if not any(op.kind == "delegate" for op in graph.ops):
                _out, stream = cruntime.run_program(data, values, trace="full" if full else True)
                traces[f"{name}-c-{'full' if full else 'events'}"] = stream
    return traces


def _seed_input(rng, tensor):
    """An input for a seed run: int8 / int16 codes over their whole range, floats from a normal, indices 0."""
    import numpy as np

    if tensor.dtype in ("int8", "int16"):
        info = np.iinfo(tensor.dtype)
        return rng.integers(info.min, info.max + 1, tensor.shape).astype(tensor.dtype)
    if tensor.dtype == "float32":
        return rng.standard_normal(tensor.shape).astype(np.float32)
    return np.zeros(tensor.shape, tensor.dtype)


def write_seeds(directory: Path, harness: str) -> list[Path]:
    """The harness's seed files in ``directory`` (programs for "c" and "program", traces for "trace")."""
    directory.mkdir(parents=True, exist_ok=True)
    seeds = seed_traces() if harness == "trace" else seed_programs()
    paths = []
    for name, data in seeds.items():
        path = directory / f"seed-{name}"
        path.write_bytes(data)
        paths.append(path)
    return paths


# -- the Python harnesses ---------------------------------------------------------------------------


def fix_program_crcs(data: bytes) -> bytes:
    """``data`` with both program CRCs recomputed from its own header sizes (when they are sane), so
    that a mutation reaches the structural checks behind the CRCs. Unchanged below 128 bytes."""
    from .program.layout import HEADER_CRC_OFFSET, header_crc

    if len(data) < 128:
        return data
    buf = bytearray(data)
    header_size, file_size = int.from_bytes(buf[8:12], "little"), int.from_bytes(buf[12:16], "little")
    if not (128 <= header_size <= len(buf) and header_size % 4 == 0):
        header_size = 128
    if not header_size <= file_size <= len(buf):
        file_size = len(buf)
    buf[16:20] = zlib.crc32(bytes(buf[header_size:file_size])).to_bytes(4, "little")
    buf[HEADER_CRC_OFFSET:HEADER_CRC_OFFSET + 4] = header_crc(bytes(buf[:header_size])).to_bytes(4, "little")
    return bytes(buf)


def program_one_input(data: bytes) -> None:
    """The program reader on ``data`` as it is and with its CRCs fixed: it may only accept or raise
    ProgramFormatError; what it accepts must serialize and read back to the same graph shape."""
    from .program import ProgramFormatError, deserialize, read_header, serialize

    for candidate in {data, fix_program_crcs(data)}:
        try:
            read_header(candidate)
            graph = deserialize(candidate)
        except ProgramFormatError:
            continue
        again = deserialize(serialize(graph))
        if (list(again.tensors), [op.kind for op in again.ops], again.inputs, again.outputs) != \
                (list(graph.tensors), [op.kind for op in graph.ops], graph.inputs, graph.outputs):
            raise AssertionError("an accepted program does not survive serialize + deserialize")


def trace_one_input(data: bytes) -> None:
    """The trace reader on ``data``: TraceFormatError or a Trace whose flags tell the truth."""
    from .trace.reader import TraceFormatError, parse

    try:
        trace = parse(data)
    except TraceFormatError:
        return
    if trace.to_bytes() != data:
        raise AssertionError("Trace.to_bytes() differs from the bytes read")
    if trace.truncated != (trace.truncation_offset is not None) or \
            (trace.truncated and not 0 <= trace.truncation_offset <= len(data)):
        raise AssertionError(f"truncation flags disagree: {trace.truncated}, {trace.truncation_offset}")
    if any(op.end < op.start for op in trace.ops) or any(r.duration is not None and r.duration < 0 for r in trace.runs):
        raise AssertionError("an event ends before it starts")
    trace.status_line  # noqa: B018 - formatting it must not fail either


PYTHON_TARGETS: dict[str, Callable[[bytes], None]] = {"program": program_one_input, "trace": trace_one_input}


#: The atheris process: torch and numpy are imported before instrumentation (not ours to fuzz), every
#: mcuforge module inside it, so the readers' branches guide the mutations.
_ATHERIS_BOOT = """
import sys, atheris, numpy, torch
with atheris.instrument_imports(include=["mcuforge"]):
    import mcuforge.fuzz, mcuforge.program.reader, mcuforge.trace.reader
mcuforge.fuzz.atheris_fuzz(sys.argv[1], sys.argv[2:])
"""


def atheris_command(harness: str, args: Sequence[str]) -> list[str]:
    return [sys.executable, "-c", _ATHERIS_BOOT, harness, *args]


def atheris_fuzz(harness: str, argv: Sequence[str]) -> None:
    """Run one Python harness under atheris in this process (started by :func:`atheris_command`)."""
    import atheris

    one = PYTHON_TARGETS[harness]
    atheris.Setup([f"mcuforge-fuzz-{harness}", *argv], lambda data: one(bytes(data)))
    atheris.Fuzz()


# -- campaigns --------------------------------------------------------------------------------------


def build_fuzzer() -> Path:
    """The libFuzzer binary of csrc/fuzz/fuzz_program.c (cached like the other C builds)."""
    from . import cruntime

    return cruntime.build("fuzzer")


def harness_command(harness: str, corpus: Path, args: Sequence[str]) -> list[str]:
    """The command that runs ``harness`` on ``corpus`` with libFuzzer flags ``args``."""
    if harness == "c":
        return [str(build_fuzzer()), f"-max_len={MAX_LEN}", "-timeout=20", *args, str(corpus)]
    return atheris_command(harness, [*args, str(corpus)])


#: What one input may make a harness allocate (libFuzzer's -malloc_limit_mb) and grow its resident memory by.
MEMORY_LIMIT_MB = 2048


def memory_limits() -> list[str]:
    """libFuzzer's memory flags: at most MEMORY_LIMIT_MB in one allocation, and a resident-memory limit of
    that much above this process's peak. Linux keeps a process's peak RSS across fork and exec, so a
    harness started from a large process (a long pytest run) reports that process's peak as its own from
    its first input: an absolute -rss_limit_mb would call that an out-of-memory crash."""
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024  # kilobytes on Linux
    return [f"-malloc_limit_mb={MEMORY_LIMIT_MB}", f"-rss_limit_mb={MEMORY_LIMIT_MB + peak_mb}"]


def campaign(harness: str, runs: int | None = None, seconds: int | None = None, *,
             corpus: Path | None = None, artifacts: Path | None = None,
             log: Path | None = None) -> dict[str, object]:
    """Run one harness for ``runs`` executions (or ``seconds``) on its corpus (seeded first) and
    return what libFuzzer reports: executions, seconds, exit code, crash files, corpus size."""
    corpus = corpus or fuzz_root() / harness / "corpus"
    artifacts = artifacts or fuzz_root() / harness / "crashes"
    write_seeds(corpus, harness)
    artifacts.mkdir(parents=True, exist_ok=True)
    args = ["-print_final_stats=1", f"-artifact_prefix={artifacts}/", *memory_limits()]
    if runs is not None:
        args.append(f"-runs={runs}")
    if seconds is not None:
        args.append(f"-max_total_time={seconds}")
    env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0",
           "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1"}
    before = set(artifacts.iterdir())
    start = time.monotonic()
    with tempfile.TemporaryFile("w+") if log is None else open(log, "w+") as out:  # noqa: SIM115
        code = subprocess.run(harness_command(harness, corpus, args), stdout=out, stderr=subprocess.STDOUT,
                              env=env, check=False).returncode
        out.seek(0)
        text = out.read()
    found = sorted(set(artifacts.iterdir()) - before)
    stats = dict(re.findall(r"^stat::(\w+):\s+(\d+)", text, re.M))
    return {
        "harness": harness, "exit_code": code, "seconds": time.monotonic() - start,
        "executions": int(stats.get("number_of_executed_units", 0)),
        "corpus_files": sum(1 for _ in corpus.iterdir()), "crashes": found,
        "peak_rss_mb": int(stats.get("peak_rss_mb", 0)), "output": text,
    }


def format_summary(results: list[dict[str, object]]) -> str:
    lines = [f"{'harness':8} {'executions':>12} {'seconds':>8} {'exec/s':>8} {'corpus':>7} {'crashes':>8}  reads"]
    for r in results:
        rate = r["executions"] / r["seconds"] if r["seconds"] else 0
        lines.append(f"{r['harness']:8} {r['executions']:>12,} {r['seconds']:>8.0f} {rate:>8.0f} "
                     f"{r['corpus_files']:>7} {len(r['crashes']):>8}  {WHAT[r['harness']]}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in PYTHON_TARGETS:  # one harness; the rest of the arguments are libFuzzer's
        return subprocess.run(atheris_command(argv[0], argv[1:]), check=False).returncode
    if argv and argv[0] == "c":
        return subprocess.run([str(build_fuzzer()), f"-max_len={MAX_LEN}", *argv[1:]], check=False).returncode
    parser = argparse.ArgumentParser(prog="python -m mcuforge.fuzz", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("corpus", help="write the seed corpus (programs and traces) to a folder")
    p.add_argument("directory", type=Path)
    p = sub.add_parser("run", help="a campaign: each harness for a number of executions, then a summary")
    p.add_argument("--c-runs", type=int, default=1_000_000)
    p.add_argument("--py-runs", type=int, default=100_000)
    p.add_argument("--only", choices=HARNESSES, action="append", help="run only this harness (repeatable)")
    p.add_argument("--log-dir", type=Path, help="keep each harness's libFuzzer output here")
    args = parser.parse_args(argv)
    if args.command == "corpus":
        for harness in ("program", "trace"):
            paths = write_seeds(args.directory / ("programs" if harness == "program" else "traces"), harness)
            print(f"wrote {len(paths)} seed {'programs' if harness == 'program' else 'traces'} to "
                  f"{paths[0].parent}")
        print(f"op kinds covered: {', '.join(sorted(seed_kinds()))}")
        return 0
    results = []
    for harness in args.only or HARNESSES:
        runs = args.c_runs if harness == "c" else args.py_runs
        log = args.log_dir / f"{harness}.log" if args.log_dir else None
        if args.log_dir:
            args.log_dir.mkdir(parents=True, exist_ok=True)
        result = campaign(harness, runs=runs, log=log)
        results.append(result)
        for crash in result["crashes"]:
            print(f"{harness}: crash input {crash}", file=sys.stderr)
        if result["exit_code"] != 0:
            print(result["output"][-3000:], file=sys.stderr)
    print(format_summary(results))
    return 0 if all(r["exit_code"] == 0 and not r["crashes"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
