"""Whole programs on the C runtime built for the host: same output bytes as the host runtime,
trace stream per docs/trace.md, tracing compiled out costs nothing, and the sources build for
Cortex-M with -Werror."""

from __future__ import annotations

import functools
import re
import shutil
import struct
import subprocess
import warnings
import zlib

import numpy as np
import pytest
import torch

import mcuforge
from mcuforge import cruntime
from mcuforge.program import deserialize, read_header
from mcuforge.runtime import execute
from mcuforge.trace import HostTraceRecorder, Trace
from mcuforge.zoo import MODELS

from conftest import compiled

KERNEL_LIST = (cruntime.CSRC / "kernels" / "kernel_list.h").read_text()
C_KINDS = set(re.findall(r"^MF_KERNEL\((\w+)\)", KERNEL_LIST, re.M))
C_ATEN = cruntime.c_aten_ops()
#: Zoo models checked here (compiling is what costs): MLPerf Tiny DS-CNN, ResNet-8 and the FC autoencoder,
#: the custom fp32-fallback net and a transformer block. MobileNets and the recurrent KWS models use the
#: same kernels and take minutes to compile on a loaded 2-core machine.
ZOO = ["ds_cnn", "resnet8", "fc_autoencoder", "custom_fallback", "transformer_block"]


def test_zoo_list_names_existing_models():
    """A renamed or removed zoo model fails here instead of silently dropping out of the checks."""
    assert set(ZOO) <= set(MODELS), sorted(set(ZOO) - set(MODELS))


def program_inputs(graph, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    values = []
    for name in graph.inputs:
        t = graph.tensors[name]
        if t.dtype == "int8":
            values.append(rng.integers(-128, 128, size=t.shape, dtype=np.int8))
        else:
            values.append(rng.standard_normal(t.shape).astype(t.dtype))
    return values


def c_supports(op) -> bool:
    if op.kind == "aten_fp32":
        return op.attrs["target"] in C_ATEN
    return op.kind in C_KINDS


@pytest.mark.parametrize("name", ZOO)
def test_zoo_program_same_bytes_as_host_runtime(name):
    _model, _example, prog = compiled(name)
    data = prog.to_bytes()
    graph = deserialize(data)
    unsupported = [i for i, op in enumerate(graph.ops) if not c_supports(op)]
    assert not unsupported, f"the C runtime lacks {sorted({graph.ops[i].kind for i in unsupported})}"
    for seed in range(3):
        values = program_inputs(graph, seed)
        expected = execute(graph, values)
        got, trace = cruntime.run_program(data, values)
        assert trace is None
        for i, (e, g) in enumerate(zip(expected, got, strict=True)):
            assert e.dtype == g.dtype and e.shape == g.shape
            assert e.tobytes() == g.tobytes(), f"{name} output {i}: {int(np.count_nonzero(e != g))} values differ"
        # Op by op, why the outputs are exact: every op, int8 and fp32, gives the same bytes (the host runtime
        # computes the fp32 islands as the C kernels do: runtime/fp32_exact.py).
        _, stream = cruntime.run_program(data, values, trace="full")
        recorder = HostTraceRecorder(graph, data, full=True)
        execute(graph, values, recorder)
        c_trace, host_trace = Trace.from_bytes(stream), Trace.from_bytes(recorder.finish())
        assert len(c_trace.tensors) == len(host_trace.tensors) == sum(len(op.outputs) for op in graph.ops)
        for c_out, py_out in zip(c_trace.tensors, host_trace.tensors, strict=True):
            op = graph.ops[c_out.op_index]
            where = f"{name} op {c_out.op_index} ({op.kind} {op.attrs.get('target', '')})"
            assert (c_out.op_index, c_out.tensor_index) == (py_out.op_index, py_out.tensor_index), where
            assert c_out.data == py_out.data, where


@functools.cache
def digits_program():
    from mcuforge.examples.digits import load_digits_data, train_digits_cnn

    data = load_digits_data()
    model = train_digits_cnn(data, epochs=1, progress=False)  # bytes, not accuracy, are compared
    calibration = [(data.x_train[i:i + 1],) for i in range(32)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = mcuforge.compile(model, (data.x_test[:1],), calibration=calibration, progress=False)
    return prog, data


def test_digits_model_same_bytes_on_real_images():
    prog, data = digits_program()
    data_bytes = prog.to_bytes()
    graph = deserialize(data_bytes)
    loaded = cruntime.LoadedProgram(data_bytes)
    t = graph.tensors[graph.inputs[0]]
    assert t.dtype == "float32" or t.dtype == "int8"
    for i in range(20):
        x = data.x_test[i:i + 1].numpy()
        if t.layout == "nhwc":
            x = x.transpose(0, 2, 3, 1)
        if t.dtype == "int8":
            x = mcuforge.kernels.quantize_per_tensor(x, t.qparams.scale, t.qparams.zero_point)
        x = np.ascontiguousarray(x.astype(t.dtype)).reshape(t.shape)
        expected = execute(graph, [x])
        got, _ = loaded.run([x])
        for e, g in zip(expected, got, strict=True):
            assert e.tobytes() == g.tobytes(), f"image {i}"


# ---------------------------------------------------------------------------------------------
# Trace stream
# ---------------------------------------------------------------------------------------------


def parse_records(stream: bytes) -> list[tuple[int, bytes]]:
    """(type, payload) of every record; asserts framing, sequence byte and CRC of each."""
    records, pos = [], 0
    while pos < len(stream):
        assert stream[pos:pos + 2] == b"\xa5\x5a", f"sync at {pos}"
        rtype, seq, length = struct.unpack_from("<BBI", stream, pos + 2)
        assert seq == len(records) % 256
        end = pos + 8 + length
        (crc,) = struct.unpack_from("<I", stream, end)
        assert crc == zlib.crc32(stream[pos + 2:end]), f"record CRC at {pos}"
        records.append((rtype, stream[pos + 8:end]))
        pos = end + 4
    return records


@pytest.mark.parametrize("mode", [True, "full"])
def test_trace_stream(mode):
    _model, _example, prog = compiled("resnet8")
    data = prog.to_bytes()
    graph = deserialize(data)
    values = program_inputs(graph, 1)
    expected = execute(graph, values)
    outputs, stream = cruntime.run_program(data, values, trace=mode)
    assert all(e.tobytes() == g.tobytes() for e, g in zip(expected, outputs, strict=True))
    records = parse_records(stream)
    types = [r[0] for r in records]
    assert types[0] == 1 and types[-1] == 8
    version, minor, unit, flags, _res, program_crc, op_count = struct.unpack("<HHBBHII", records[0][1])
    assert (version, minor, unit) == (1, 1, 0)
    assert flags == (1 if mode == "full" else 0)  # no lossy flag: the host sink never drops
    assert program_crc == read_header(data).crc32 and op_count == len(graph.ops)
    assert struct.unpack("<I", records[-1][1])[0] == len(records) - 1
    starts = [struct.unpack("<IIQ", p) for t, p in records if t == 4]
    ends = [struct.unpack("<IIQ", p) for t, p in records if t == 5]
    assert len(starts) == len(ends) == len(graph.ops)
    assert [s[0] for s in starts] == list(range(len(graph.ops))) == [s[1] for s in starts]
    times = [t for _i, _h, t in sorted(starts + ends, key=lambda r: r[2])]
    run_start = struct.unpack("<IQ", next(p for t, p in records if t == 2))
    run_end = struct.unpack("<IQi", next(p for t, p in records if t == 3))
    assert run_end[2] == 0 and run_start[1] <= times[0] and times[-1] <= run_end[1]
    for (i, _h, t0), (j, _h2, t1) in zip(starts, ends, strict=True):
        assert i == j and t1 - t0 >= 0
    allocs = [struct.unpack("<B3xIIIII", p) for t, p in records if t == 7]
    assert allocs[0][0] == 0 and allocs[0][3] == graph.arena_bytes
    activations = [n for n, t in graph.tensors.items() if not t.is_constant]
    assert [a[0] for a in allocs[1:]] == [1] * len(activations) + [2] * sum(op.scratch_bytes > 0 for op in graph.ops)
    # kind 2: each op's scratch buffer, inside the arena, live during its op
    assert [a[1:] for a in allocs if a[0] == 2] == [(i, op.scratch_offset, op.scratch_bytes, i, i)
                                                    for i, op in enumerate(graph.ops) if op.scratch_bytes]
    # Both runtimes say the same about where every tensor and scratch buffer lives, and when.
    host = parse_records(HostTraceRecorder(graph, data, full=False).finish())
    assert sorted(p for t, p in host if t == 7) == sorted(p for t, p in records if t == 7)
    tensors = [p for t, p in records if t == 6]
    if mode == "full":
        names = list(graph.tensors)
        assert len(tensors) == sum(len(op.outputs) for op in graph.ops)
        last = tensors[-1]
        op_index, slot, tensor_index, dtype = struct.unpack_from("<IIIB", last)
        assert names[tensor_index] == graph.outputs[0] and op_index == len(graph.ops) - 1 and slot == 0
        assert last[16:] == expected[0].tobytes()
    else:
        assert tensors == []


def test_trace_compiled_out_records_nothing():
    lib = cruntime.load_library(trace=False)
    assert lib.mf_host_trace_compiled() == 0
    # No trace code in the library at all: the record writers are not even built.
    path = cruntime.build("shared", trace=False)
    nm = shutil.which("nm")
    if nm is None:
        pytest.fail("nm not found on PATH (install binutils: apt-get install binutils)", pytrace=False)
    symbols = subprocess.run([nm, "-D", "--defined-only", str(path)], capture_output=True, text=True,
                             check=True).stdout
    assert "mf_trace_begin" in symbols and "mf_trace_run_start" not in symbols
    _model, _example, prog = compiled("fc_autoencoder")
    loaded = cruntime.LoadedProgram(prog.to_bytes(), lib=lib)
    graph = deserialize(prog.to_bytes())
    with pytest.raises(RuntimeError, match="compiled out"):
        loaded.run(program_inputs(graph, 0), trace=True)
    outputs, trace = loaded.run(program_inputs(graph, 0))
    assert trace is None
    assert outputs[0].tobytes() == execute(graph, program_inputs(graph, 0))[0].tobytes()


def test_errors_name_status_and_arguments_are_checked():
    _model, _example, prog = compiled("fc_autoencoder")
    data = prog.to_bytes()
    graph = deserialize(data)
    with pytest.raises(ValueError, match="expected int8"):
        cruntime.run_program(data, [np.zeros(graph.tensors[graph.inputs[0]].shape, np.float32)])
    with pytest.raises(ValueError, match="takes 1 inputs"):
        cruntime.run_program(data, [])
    with pytest.raises(cruntime.CRuntimeError, match="MF_ERR_MAGIC") as err:
        cruntime.run_program(b"ELF\0" + data[4:], [])
    assert err.value.status == "MF_ERR_MAGIC" and err.value.op_index is None


# ---------------------------------------------------------------------------------------------
# Build hygiene
# ---------------------------------------------------------------------------------------------


def test_host_build_is_warning_free_c99():
    """The cached library was built with -std=c99 -pedantic -Wall -Wextra -Werror; a fresh driver
    build with tracing off must be clean too."""
    assert {"-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror"} <= set(cruntime.WARNING_FLAGS)
    assert cruntime.build("driver", trace=False).exists()


ARM_CPUS = [("cortex-m0plus", ["-mfloat-abi=soft"]), ("cortex-m3", ["-mfloat-abi=soft"]),
            ("cortex-m4", ["-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]),
            ("cortex-m7", ["-mfloat-abi=hard", "-mfpu=fpv5-d16"]),
            ("cortex-m33", ["-mfloat-abi=hard", "-mfpu=fpv5-sp-d16"]), ("cortex-m55", ["-mfloat-abi=hard"])]


@pytest.mark.parametrize("cpu,fpu", ARM_CPUS, ids=[c for c, _ in ARM_CPUS])
def test_sources_compile_for_cortex_m(cpu, fpu, tmp_path):
    """Every runtime and kernel file (portable and DSP/MVE paths) compiles with -Werror, with and
    without tracing, and without double-precision promotion, at the firmware's -O3 and at the levels a
    user's own build may pick (the inline asm needs registers that -O0 and -Os do not leave: guarded)."""
    for level, trace in (("-O3", 0), ("-O3", 1), ("-O0", 0), ("-O1", 0), ("-O2", 0), ("-Os", 0)):
        cmd = ["arm-none-eabi-gcc", f"-mcpu={cpu}", "-mthumb", *fpu, *cruntime.WARNING_FLAGS, level,
               "-ffp-contract=off", "-fno-strict-aliasing", f"-DMF_TRACE={trace}",
               f"-I{cruntime.CSRC / 'include'}", "-c", *map(str, cruntime.runtime_sources())]
        result = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
        assert result.returncode == 0, f"{cpu}, {level}, MF_TRACE={trace}:\n{result.stderr}"


@pytest.mark.parametrize("name", sorted(MODELS))
def test_zoo_program_clean_under_sanitizers(name, tmp_path):
    """Every zoo program through the C runtime built with -fsanitize=address,undefined: no report
    (exit status 0) and the same output bytes as the normal build."""
    driver = str(cruntime.build("driver", sanitize=True))
    data = compiled(name)[2].to_bytes()
    graph = deserialize(data)
    values = program_inputs(graph, 11)
    (tmp_path / "p.mfp").write_bytes(data)
    args = [driver, str(tmp_path / "p.mfp"), str(tmp_path / "out.bin")]
    for i, value in enumerate(values):
        (tmp_path / f"in{i}.bin").write_bytes(value.tobytes())
        args.append(str(tmp_path / f"in{i}.bin"))
    env = {"ASAN_OPTIONS": "exitcode=99:detect_leaks=1", "UBSAN_OPTIONS": "halt_on_error=1:exitcode=98"}
    done = subprocess.run(args, capture_output=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    expected, _ = cruntime.run_program(data, values)
    assert (tmp_path / "out.bin").read_bytes() == b"".join(o.tobytes() for o in expected)


def test_compile_refuses_fp32_ops_without_c_kernel(monkeypatch):
    """Known before flashing: an fp32 op the C runtime lacks is a compile error naming the op, never a
    program that runs on the host but not on the board (tests/test_fp32_table.py checks the table)."""

    class Net(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.relu(x) + 1.0

    monkeypatch.setattr(cruntime, "c_aten_ops", lambda: frozenset())  # as if the C side had no fp32 op
    with pytest.raises(mcuforge.lower.LoweringError, match=r"aten\.add\.\w+ .*no fp32 kernel"):
        mcuforge.compile(Net().eval(), (torch.randn(1, 8),), calibration=[(torch.randn(1, 8),)], progress=False)


@pytest.mark.parametrize("mode", [True, "full"])
def test_prog_run_on_the_c_backend_with_a_trace(mode):
    """prog.run(..., backend="c", trace=...) gives the host runtime's outputs and a trace with one
    event per op (op outputs too with trace="full")."""
    _model, example, prog = compiled("ds_cnn")
    outputs, trace = prog.run(*example, backend="c", trace=mode)
    np.testing.assert_array_equal(outputs[0], prog.run(*example)[0])
    assert not trace.truncated and len(trace.ops) == len(prog.graph.ops)
    assert trace.full == (mode == "full") and (len(trace.tensors) > 0) == (mode == "full")
