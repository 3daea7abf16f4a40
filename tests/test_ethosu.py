"""Ethos-U partial delegation: partitions of MobileNetV2 and DS-CNN for ethos-u55-128 (NPU MAC share,
reasons, Vela's estimates in ``mcuforge info``), each delegated subgraph on the TOSA reference model
against the host kernels, whole programs against the all-CPU program, an NPU - CPU - NPU split that
runs end to end, the delegate op in the program file (both readers), and the C runtime's delegate
interface on the host build and on QEMU.
"""

from __future__ import annotations

import ctypes
import functools
import re
import warnings

import numpy as np
import pytest

import mcuforge
from mcuforge import cruntime
from mcuforge.cli import main as cli_main
from mcuforge.ethosu import NPU_CONFIGS, delegate, get_npu, split_target
from mcuforge.ethosu.partition import COMPUTE_KINDS
from mcuforge.ethosu.report import npu_mac_share
from mcuforge.ir import Graph, Op, QParams, Tensor
from mcuforge.plan import plan_arena
from mcuforge.program import deserialize
from mcuforge.runtime import execute
from mcuforge.tosa import run_reference

from conftest import calibration_set, compiled, invoke_host_context, op_outputs

NPU = "ethos-u55-128"
#: Per op kind, the most the TOSA reference model may differ from the host kernels (LSB); none: every
#: lowered op is byte-exact (avgpool_s8 included, see test_tosa_lowering.TOLERANCE).
TOLERANCE: dict[str, int] = {}


@functools.cache
def delegated(name: str):
    _model, _example, cpu = compiled(name)
    return cpu, delegate(cpu, NPU)


def program_inputs(graph: Graph, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(-128, 128, graph.tensors[n].shape).astype(np.int8) if graph.tensors[n].dtype == "int8"
            else rng.standard_normal(graph.tensors[n].shape).astype(graph.tensors[n].dtype) for n in graph.inputs]


# -- partitions ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["mobilenet_v2", "ds_cnn"])
def test_partition_zoo_model(name, capsys, tmp_path):
    """>= 90% of the MACs on the NPU; every CPU op has a reason; Vela's estimates in prog.delegates and
    `mcuforge info`; delegated ops in prog.ops carry the NPU config and their MACs."""
    cpu, prog = delegated(name)
    share, npu_macs, total = npu_mac_share(prog)
    assert share >= 0.90, share
    assert total == sum(op.macs for op in cpu.ops)  # the same model: MACs are only moved
    delegates = prog.delegates
    assert delegates
    covered = [i for d in delegates for i in d.ops]
    assert len(covered) == len(set(covered))
    for d in delegates:
        assert d.npu == NPU and d.npu_cycles > 0 and d.sram_bytes > 0 and d.flash_bytes > 0
        assert d.command_stream_bytes > 0 and list(d.ops) == list(range(d.ops[0], d.ops[-1] + 1))
        assert all(prog.ops[i].backend == NPU for i in d.ops)
    assert sum(prog.ops[i].macs for i in covered) == npu_macs
    # Vela's per-layer cycles, mapped back to the ops they were lowered from, add up to its totals.
    assert sum(prog.ops[i].npu_cycles for i in covered) == sum(d.npu_cycles for d in delegates)
    assert all(prog.ops[i].npu_cycles > 0 for i in covered if prog.ops[i].macs)
    for op in prog.ops:
        if op.backend in ("int8", "fp32"):
            assert op.reason, op
    path = prog.save(tmp_path / f"{name}.mfp")
    assert cli_main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"NPU             {NPU}: {len(delegates)} partition(s)" in out
    assert re.search(r"NPU estimates   [\d,]+ NPU cycles \(Vela\), SRAM [\d,]+ bytes", out)
    assert "NPU cycles" in out.splitlines()[0] and f"{prog.ops[covered[0]].npu_cycles:,}" in out
    for d in delegates:
        assert f"partition {d.index}: " in out and f"{d.npu_cycles:,} NPU cycles" in out
    print(f"\n{name}: {share:.1%} of {total:,} MACs on {NPU}, {len(delegates)} partition(s), "
          f"{sum(d.npu_cycles for d in delegates):,} NPU cycles", file=__import__("sys").stderr)


@pytest.mark.parametrize("name", ["mobilenet_v2", "ds_cnn", "custom_fallback"])
def test_delegated_subgraphs_match_host_kernels(name):
    """Each delegated subgraph on the TOSA reference model, fed the values the all-CPU program computes:
    the same bytes as the host kernels (within TOLERANCE only where the subgraph holds such an op)."""
    cpu, prog = delegated(name)
    values = op_outputs(cpu.graph, program_inputs(cpu.graph, 1))
    for op in prog.graph.ops:
        if op.kind != "delegate":
            continue
        n_act = op.attrs["input_count"]
        tosa = prog.graph.tensors[op.inputs[n_act + 2]].data.tobytes()
        got = run_reference(tosa, [values[n] for n in op.inputs[:n_act]])
        allowed = max((TOLERANCE.get(c["kind"], 0) for c in op.debug["covers"]), default=0)
        for n, g in zip(op.outputs, got, strict=True):
            diff = np.abs(g.astype(np.int32) - values[n].astype(np.int32))
            assert diff.max() <= allowed, (name, n, diff.max())


@pytest.mark.parametrize("name", ["mobilenet_v2", "ds_cnn", "custom_fallback"])
def test_whole_program_agrees_with_cpu_program(name):
    """prog.run of the partially delegated program against the all-CPU program: within 1 LSB on >= 99% of
    elements (measured: identical bytes)."""
    cpu, prog = delegated(name)
    x = np.random.default_rng(2).standard_normal(cpu.input_shapes[0]).astype(np.float32)
    a, b = cpu.run_raw(x), prog.run_raw(x)
    for u, v in zip(a, b, strict=True):
        diff = np.abs(u.astype(np.float64) - v.astype(np.float64))
        assert np.mean(diff <= 1) >= 0.99
    np.testing.assert_allclose(prog.run(x)[0], cpu.run(x)[0], atol=1e-6)


def test_npu_cpu_npu_split_runs_end_to_end():
    """custom_fallback has an fp32 layer_norm between int8 layers: NPU - CPU (fp32) - NPU, still one
    program that runs (batched too)."""
    cpu, prog = delegated("custom_fallback")
    kinds = ["npu" if op.kind == "delegate" else op.backend for op in prog.graph.ops]
    assert kinds[0] == "npu" and kinds[-1] == "npu" and "fp32" in kinds[1:-1], kinds
    assert len(prog.delegates) == 2
    fp32 = [op for op in prog.ops if op.backend == "fp32"]
    assert fp32 and all("NPU runs int8 only" in op.reason for op in fp32)
    x = np.random.default_rng(3).standard_normal((3, *cpu.input_shapes[0][1:])).astype(np.float32)
    np.testing.assert_allclose(prog.run(x)[0], cpu.run(x)[0], atol=1e-6)


def test_compile_with_npu_target():
    """mcuforge.compile(..., target="cortex-m55+ethos-u55-128") partitions while compiling."""
    model, example = mcuforge.zoo.MODELS["ds_cnn"]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = mcuforge.compile(model, example, calibration=calibration_set(example, 16, seed=1),
                                target=f"cortex-m55+{NPU}", progress=False)
    assert prog.target == "cortex-m55" and prog.meta["target"] == f"cortex-m55+{NPU}"
    assert prog.delegates and npu_mac_share(prog)[0] >= 0.9
    cpu = compiled("ds_cnn")[2]
    x = example.numpy() if hasattr(example, "numpy") else np.asarray(example[0])
    np.testing.assert_array_equal(prog.run_raw(x)[0], cpu.run_raw(x)[0])


def test_targets_and_configs():
    assert split_target(f"cortex-m55+{NPU}") == ("cortex-m55", NPU)
    assert split_target("cortex-m4") == ("cortex-m4", None)
    assert {"ethos-u55-64", "ethos-u55-128", "ethos-u65-256", "ethos-u85-256"} <= set(NPU_CONFIGS)
    with pytest.raises(ValueError, match="unknown NPU configuration"):
        split_target("cortex-m55+ethos-u99-1")


@pytest.mark.parametrize("npu", ["ethos-u55-64", "ethos-u65-256", "ethos-u85-256"])
def test_other_npu_configs(npu):
    cpu, _ = delegated("ds_cnn")
    prog = delegate(cpu, npu)
    assert prog.delegates and all(d.npu == npu and d.npu_cycles > 0 for d in prog.delegates)
    x = np.random.default_rng(4).standard_normal(cpu.input_shapes[0]).astype(np.float32)
    np.testing.assert_array_equal(prog.run_raw(x)[0], cpu.run_raw(x)[0])


def _conv_graph(stride: int) -> Graph:
    """conv (stride s) -> conv (stride 1): with s = 4 the first exceeds the U55's stride limit."""
    rng = np.random.default_rng(0)
    t = {}
    t["x"] = Tensor("x", (1, 16, 16, 4), "int8", QParams(0.05, 0), layout="nhwc")
    oh = (16 + 2 - 3) // stride + 1
    t["y"] = Tensor("y", (1, oh, oh, 8), "int8", QParams(0.05, 0), layout="nhwc")
    t["z"] = Tensor("z", (1, oh, oh, 8), "int8", QParams(0.05, 0), layout="nhwc")
    ops = []
    for i, (src, dst, cin, st) in enumerate([("x", "y", 4, stride), ("y", "z", 8, 1)]):
        w = rng.integers(-127, 128, (8, 3, 3, cin)).astype(np.int8)
        t[f"w{i}"] = Tensor(f"w{i}", w.shape, "int8", data=w)
        t[f"m{i}"] = Tensor(f"m{i}", (8,), "int32", data=np.full(8, 1 << 30, np.int32))
        t[f"s{i}"] = Tensor(f"s{i}", (8,), "int32", data=np.full(8, -9, np.int32))
        ops.append(Op("conv2d_s8", [src, f"w{i}", "", f"m{i}", f"s{i}"], [dst], {
            "input_offset": 0, "output_offset": 0, "stride": [st, st], "padding": [1, 1], "dilation": [1, 1],
            "act_min": -128, "act_max": 127}))
    g = Graph(t, ops, ["x"], ["z"])
    plan_arena(g)
    return g


def test_constraint_keeps_op_on_cpu_with_reason():
    """A stride-4 conv breaks the U55's 1..3 stride limit: it stays on the CPU, saying so; the rest is
    delegated; the U85 takes it... within its own envelope (same check), so it stays there too."""
    from mcuforge.api import Program

    prog = delegate(Program(_conv_graph(4)), NPU)
    assert [op.backend for op in prog.ops] == ["int8", NPU]
    assert "stride (4, 4) outside 1..3" in prog.ops[0].reason
    x = np.random.default_rng(5).integers(-128, 128, (1, 16, 16, 4)).astype(np.int8)
    np.testing.assert_array_equal(execute(prog.graph, [x])[0], execute(_conv_graph(4), [x])[0])
    assert [op.backend for op in delegate(Program(_conv_graph(2)), NPU).ops] == [NPU, NPU]


def test_compute_free_runs_stay_on_cpu():
    assert "reshape" not in COMPUTE_KINDS and "conv2d_s8" in COMPUTE_KINDS
    assert get_npu(NPU).macs == 128


# -- program file ----------------------------------------------------------------------------------------
def test_program_file_round_trip(tmp_path):
    """save/load keeps the delegate op (blobs, attrs) and, with the debug record, prog.ops/prog.delegates."""
    cpu, prog = delegated("custom_fallback")
    path = prog.save(tmp_path / "npu.mfp")
    loaded = mcuforge.load(path)
    assert [op.kind for op in loaded.graph.ops] == [op.kind for op in prog.graph.ops]
    assert loaded.delegates == prog.delegates
    assert [(o.kind, o.backend, o.macs) for o in loaded.ops] == [(o.kind, o.backend, o.macs) for o in prog.ops]
    x = np.random.default_rng(6).standard_normal(cpu.input_shapes[0]).astype(np.float32)
    np.testing.assert_array_equal(loaded.run_raw(x)[0], cpu.run_raw(x)[0])


def _bad_offset(prog):
    graph = deserialize(prog.to_bytes())
    op = next(op for op in graph.ops if op.kind == "delegate")
    op.attrs["output_offsets"] = [op.scratch_bytes]  # the output would end outside the scratch region
    return graph


def test_readers_reject_a_bad_delegate():
    from mcuforge.program import ProgramFormatError, serialize

    _, prog = delegated("custom_fallback")
    with pytest.raises(ValueError, match="outside the .*NPU scratch region"):
        serialize(_bad_offset(prog))
    # The same file, forged past the writer: both readers reject it.
    import mcuforge.program.writer as writer

    original = writer.delegate_problem
    writer.delegate_problem = lambda op, tensors: None
    try:
        data = serialize(_bad_offset(prog))
    finally:
        writer.delegate_problem = original
    with pytest.raises(ProgramFormatError, match="NPU scratch region"):
        deserialize(data)
    with pytest.raises(cruntime.CRuntimeError, match="MF_ERR_BOUNDS"):
        cruntime.run_program(data, program_inputs(prog.graph, 0))


# -- C runtime --------------------------------------------------------------------------------------------
class DelegateCall(ctypes.Structure):
    _fields_ = [("op_index", ctypes.c_uint32), ("npu", ctypes.c_char_p),
                ("command_stream", ctypes.c_void_p), ("command_stream_size", ctypes.c_size_t),
                ("weights", ctypes.c_void_p), ("weights_size", ctypes.c_size_t),
                ("scratch", ctypes.c_void_p), ("scratch_size", ctypes.c_size_t),
                ("base_addr", ctypes.c_uint64 * 3), ("base_addr_size", ctypes.c_size_t * 3),
                ("num_base_addr", ctypes.c_int)]


CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(DelegateCall))


class Delegate(ctypes.Structure):
    _fields_ = [("npu", ctypes.c_char_p), ("user", ctypes.c_void_p), ("init", CALLBACK), ("execute", CALLBACK)]


def test_c_runtime_without_delegate_is_a_clear_error():
    _, prog = delegated("custom_fallback")
    with pytest.raises(cruntime.CRuntimeError, match="MF_ERR_NO_DELEGATE"):
        cruntime.run_program(prog.to_bytes(), program_inputs(prog.graph, 0))


def _run_c_with_delegate(data: bytes, graph: Graph, xs: list[np.ndarray], npu: bytes | None, seen: list) -> tuple:
    """The host C runtime with a delegate whose execute runs the subgraph's TOSA graph (as a board's NPU
    driver would run the command stream), checking what the runtime hands it."""
    lib = cruntime.load_library()
    lib.mf_init_delegate.restype = ctypes.c_int
    lib.mf_init_delegate.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_size_t, ctypes.c_void_p]
    file = np.frombuffer(data, np.uint8).copy()
    program = ctypes.create_string_buffer(lib.mf_host_sizeof_program())
    assert lib.mf_program_load(program, file.ctypes.data, len(data)) == 0
    arena_bytes = lib.mf_program_arena_bytes(program)
    raw = np.zeros(arena_bytes + 16, np.uint8)
    arena = raw[(-raw.ctypes.data) % 16:][:arena_bytes]

    def check_call(call) -> Op:
        op = graph.ops[call.op_index]
        n_act = op.attrs["input_count"]
        blobs = [graph.tensors[n].data.tobytes() for n in op.inputs[n_act:]]
        assert ctypes.string_at(call.command_stream, call.command_stream_size) == blobs[0]
        assert blobs[0][:4] == b"COP1"
        assert ctypes.string_at(call.weights, call.weights_size) == blobs[1]
        assert call.num_base_addr == 3 and call.base_addr[0] == call.weights and call.base_addr[1] == call.scratch
        assert call.scratch_size == op.scratch_bytes and call.npu == op.attrs["npu"].encode()
        return op

    def init(_user, call_p):
        check_call(call_p.contents)
        seen.append(("init", call_p.contents.op_index))
        return 0

    def execute_(_user, call_p):
        call = call_p.contents
        op = check_call(call)
        n_act = op.attrs["input_count"]
        ins = [np.frombuffer(ctypes.string_at(call.scratch + off, graph.tensors[n].nbytes), graph.tensors[n].dtype)
               .reshape(graph.tensors[n].shape) for n, off in zip(op.inputs[:n_act], op.attrs["input_offsets"],
                                                                  strict=True)]
        outs = run_reference(graph.tensors[op.inputs[n_act + 2]].data.tobytes(), ins)
        for value, off in zip(outs, op.attrs["output_offsets"], strict=True):
            value = np.ascontiguousarray(value)
            ctypes.memmove(call.scratch + off, value.ctypes.data, value.nbytes)
        seen.append(("execute", call.op_index))
        return 0

    callbacks = (CALLBACK(init), CALLBACK(execute_))
    d = Delegate(npu, None, *callbacks)
    ctx = ctypes.create_string_buffer(lib.mf_host_sizeof_context())
    status = lib.mf_init_delegate(ctx, program, arena.ctypes.data, arena_bytes, ctypes.byref(d))
    if status != 0:
        return lib.mf_status_name(status).decode(), None
    return "MF_OK", invoke_host_context(lib, ctx, graph, xs)


def test_c_runtime_runs_delegate_ops_through_the_registered_delegate():
    """NPU - CPU - NPU on the host C runtime: CPU ops on the C kernels, each delegate op through the
    registered callbacks (blobs and base addresses as the Ethos-U driver takes them): the host bytes."""
    cpu, prog = delegated("custom_fallback")
    data = prog.to_bytes()
    graph = deserialize(data)
    xs = program_inputs(graph, 7)
    seen: list = []
    status, outs = _run_c_with_delegate(data, graph, xs, NPU.encode(), seen)
    assert status == "MF_OK"
    delegate_ops = [i for i, op in enumerate(graph.ops) if op.kind == "delegate"]
    assert seen == [("init", i) for i in delegate_ops] + [("execute", i) for i in delegate_ops]
    for got, want in zip(outs, execute(cpu.graph, xs), strict=True):
        np.testing.assert_array_equal(got, want)
    # A driver for another NPU configuration is refused at init.
    status, _ = _run_c_with_delegate(data, graph, xs, b"ethos-u85-256", [])
    assert status == "MF_ERR_NO_DELEGATE"


def test_qemu_board_without_npu_rejects_the_program():
    """On the emulated Cortex-M55 (no NPU, no delegate registered): mf_init fails with MF_ERR_NO_DELEGATE."""
    from mcuforge.firmware.qemu import FirmwareRunError

    cpu, prog = delegated("custom_fallback")
    x = np.random.default_rng(8).standard_normal(cpu.input_shapes[0]).astype(np.float32)
    with pytest.raises(FirmwareRunError, match="mf_init failed with MF_ERR_NO_DELEGATE"):
        prog.run(x, backend="qemu")


# -- CLI and Inspector -----------------------------------------------------------------------------------
FACTORY = '''
import torch
from torch import nn

class Mixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 6 * 6, 3)

    def forward(self, x):
        x = torch.relu(self.conv(x))
        return self.fc(torch.erf(x).flatten(1))

def make_mixed():
    torch.manual_seed(0)
    return Mixed(), (torch.randn(1, 1, 6, 6),)
'''


def test_cli_compile_and_info_with_npu_target(tmp_path, capsys):
    """`mcuforge compile --target cortex-m55+ethos-u55-128`: conv on the NPU, erf in fp32 on the CPU, the
    linear layer on the NPU again; `mcuforge info` shows both partitions, Vela's estimates, the reasons."""
    (tmp_path / "models.py").write_text(FACTORY)
    calib = tmp_path / "calib.npz"
    np.savez(calib, np.random.default_rng(0).standard_normal((20, 1, 6, 6)).astype(np.float32))
    out = tmp_path / "mixed.mfp"
    assert cli_main(["compile", f"{tmp_path / 'models.py'}:make_mixed", "--target", f"cortex-m55+{NPU}",
                     "--calibration", str(calib), "-o", str(out)]) == 0
    capsys.readouterr()
    assert cli_main(["info", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"NPU {NPU}" in text and "fp32 fallback" in text and "why on the CPU" in text
    assert f"NPU             {NPU}: 2 partition(s)" in text and "partition 1: " in text
    assert "NPU runs int8 only" in text and "NPU cycles" in text
    prog = mcuforge.load(out)
    assert [d.npu for d in prog.delegates] == [NPU, NPU]
    x = np.random.default_rng(9).standard_normal((4, 1, 6, 6)).astype(np.float32)
    assert prog.run(x)[0].shape == (4, 3)
    # argparse: the error on stderr as one line, exit code 2
    assert cli_main(["compile", f"{tmp_path / 'models.py'}:make_mixed", "--target", "cortex-m55+npu-9"]) == 2
    assert "unknown NPU configuration 'npu-9'" in capsys.readouterr().err


def test_inspector_report_shows_ops_on_the_npu(tmp_path):
    from mcuforge.inspect import Inspector

    cpu, prog = delegated("custom_fallback")
    x = np.random.default_rng(10).standard_normal(cpu.input_shapes[0]).astype(np.float32)
    _out, trace = prog.run(x, trace=True)
    insp = Inspector(prog, trace)
    df = insp.to_dataframe()
    assert set(df["backend"]) >= {"npu", "fp32"}
    assert df.loc[df["kind"] == "delegate", "macs"].sum() == sum(d.macs for d in prog.delegates)
    html = insp.to_html(tmp_path / "report.html").read_text()
    assert "Ops on the NPU" in html and NPU in html
    for d in prog.delegates:
        for i in d.ops:
            assert prog.ops[i].kind in html


def test_data_movement_alone_stays_on_cpu():
    """A run without compute (a lone pad) is not worth an NPU round trip: CPU, with that reason."""
    from mcuforge.api import Program

    g = Graph({"x": Tensor("x", (1, 4, 4, 8), "int8", QParams(0.1, 0), layout="nhwc"),
               "y": Tensor("y", (1, 6, 6, 8), "int8", QParams(0.1, 0), layout="nhwc")},
              [Op("pad_s8", ["x"], ["y"], {"pads": [0, 0, 1, 1, 1, 1, 0, 0], "pad_value": 0})], ["x"], ["y"])
    plan_arena(g)
    prog = delegate(Program(g), NPU)
    assert not prog.delegates and "data movement only" in prog.ops[0].reason


def test_program_without_tosa_blobs_is_smaller_and_says_why_the_host_cannot_run_it():
    cpu, prog = delegated("custom_fallback")
    lean = delegate(cpu, NPU, keep_tosa=False)
    assert lean.program_bytes < prog.program_bytes and lean.delegates == prog.delegates
    with pytest.raises(Exception, match="carries no TOSA graph"):
        lean.run_raw(np.zeros(cpu.input_shapes[0], np.float32))
    deserialize(lean.to_bytes())  # still a valid file


def test_export_c_of_a_delegated_program(tmp_path):
    """export-c keeps the delegate support (runtime/delegate.c) and only the CPU ops' kernels; the board's
    main.c then registers its NPU driver with mf_init_delegate (docs/ethos-u.md)."""
    from mcuforge.export import export_c

    _, prog = delegated("custom_fallback")
    export_c(prog.to_bytes(), tmp_path / "out")
    runtime = tmp_path / "out" / "mcuforge"
    assert (runtime / "runtime" / "delegate.c").exists()
    assert "mf_init_delegate" in (runtime / "include" / "mcuforge.h").read_text()
    kernels = (runtime / "kernels" / "kernel_list.h").read_text()
    assert "MF_KERNEL(delegate)" not in kernels and "MF_KERNEL(quantize)" in kernels
