"""torch.maximum / minimum, max / min of two tensors, fmax / fmin and clamp by tensors lower to maximum_s8 /
minimum_s8 with no fp32 left, share one quantization (so each op equals PT2E's reference exactly on its own
inputs), broadcast as torch does; what cannot be int8 falls back with its reason; a whole model gives the same
bytes on the host (Python, C) and on the cortex-m4 / cortex-m55 boards, and runs delegated to an Ethos-U."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from test_lowering_ops import (
    LAYOUT_KINDS,
    ConvThen,
    TwoBranch,
    assert_all_int8,
    compile_model,
    forced_op_gaps,
    kinds,
    output_gaps,
)
from torch import fx, nn

from mcuforge import cruntime, firmware
from mcuforge.ir import QParams
from mcuforge.kernels import dequantize_per_tensor, quantize_per_tensor
from mcuforge.lower.builder import GraphBuilder
from mcuforge.lower.int8.minmax import _requantized
from mcuforge.program import serialize
from mcuforge.runtime import execute

MINMAX = {"maximum_s8", "minimum_s8"}


class ClampBuffers(nn.Module):
    """clamp with per-channel tensor bounds (buffers): a maximum_s8 then a minimum_s8."""

    def __init__(self, lo: bool = True, hi: bool = True):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.register_buffer("lo", torch.randn(1, 8, 1, 1) * 0.3 if lo else None)
        self.register_buffer("hi", torch.rand(1, 8, 1, 1) + 0.2 if hi else None)

    def forward(self, x):
        return torch.clamp(self.conv(x), min=self.lo, max=self.hi)


class Inputs(nn.Module):
    """Model inputs straight into the ops (no int8 producer): torch.max(x, y) and torch.min(x, y) of 3-D
    tensors (plain layout), y broadcast along the middle dim."""

    def forward(self, x, y):
        return torch.max(x, y), torch.min(x, y)


class Linears(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(12, 16), nn.Linear(12, 16)

    def forward(self, x):
        a, b = self.a(x), self.b(x)
        return torch.fmax(a, b), torch.fmin(a, torch.tensor(0.1))


class Tiny(nn.Module):
    """The three-way model: a gated conv block using every form."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.gate = nn.Conv2d(3, 8, 1)
        self.head = nn.Conv2d(8, 4, 1)
        self.register_buffer("floor", torch.randn(1, 8, 1, 1) * 0.2)

    def forward(self, x):
        y, g = self.conv(x), self.gate(x)
        y = torch.maximum(y, g)  # equal shapes
        y = torch.minimum(y, g.mean((2, 3), keepdim=True))  # broadcast (N, C, 1, 1)
        y = torch.clamp(y, min=self.floor, max=F.relu(g))  # clamp by a buffer and an activation
        return self.head(torch.clamp_min(y, g[:, :1]))  # clamp_min by a (1-channel) tensor


CASES = {
    # name: (factory, input shapes, kinds that must appear)
    "torch.maximum": (lambda: TwoBranch(lambda a, b: torch.maximum(a, b[:, :4])), [(1, 3, 5, 5)], {"maximum_s8"}),
    "torch.minimum broadcast (N,C,1,1)": (
        lambda: TwoBranch(lambda a, b: torch.minimum(a, b[:, :4].mean((2, 3), keepdim=True))), [(1, 3, 5, 5)],
        {"minimum_s8", "avgpool_s8"}),
    "torch.max(a, b) broadcast (N,1,H,W)": (lambda: TwoBranch(lambda a, b: torch.max(b[:, :1], a)), [(1, 3, 5, 6)],
                                            {"maximum_s8"}),
    "torch.min(a, b)": (lambda: TwoBranch(lambda a, b: torch.min(a, b[:, 2:])), [(1, 3, 4, 7)], {"minimum_s8"}),
    "clamp(min=t, max=u) buffers": (ClampBuffers, [(1, 3, 5, 5)], MINMAX),
    "clamp(min=t)": (lambda: ClampBuffers(hi=False), [(1, 3, 5, 5)], {"maximum_s8"}),
    "clamp(max=u)": (lambda: ClampBuffers(lo=False), [(1, 3, 5, 5)], {"minimum_s8"}),
    "clamp_min / clamp_max by tensors": (
        lambda: TwoBranch(lambda a, b: torch.clamp_max(torch.clamp_min(a, b[:, :4]), b[:, 2:])), [(1, 3, 5, 5)],
        MINMAX),
    "maximum by a 0-d constant": (lambda: ConvThen(lambda y: torch.maximum(y, torch.tensor(0.25))), [(1, 3, 5, 5)],
                                  {"maximum_s8"}),
    "model inputs, 3-D": (Inputs, [(2, 5, 9), (2, 1, 9)], MINMAX),
    "fmax / fmin of linears": (Linears, [(3, 12)], MINMAX),
    "tiny gated block": (Tiny, [(1, 3, 6, 7)], MINMAX),
}


def assert_exact_ops_and_outputs(prog, calib) -> None:
    """Each maximum_s8 / minimum_s8 equals the reference exactly on its own inputs (no requantization, one
    quantization: the max of the codes is the code of the max); every op is matched but layout plumbing and
    a clamp's intermediate (``*_lower``: no reference node); the outputs are within 1 LSB end to end."""
    for inputs in calib[:3]:
        gaps = forced_op_gaps(prog, inputs)
        ops = prog.graph.ops
        for index, gap in gaps.items():
            assert gap <= (0 if ops[index].kind in MINMAX else 1), f"op {index} {ops[index].kind} off by {gap} LSB"
        assert any(ops[i].kind in MINMAX for i in gaps)
        plumbing = [op.kind in LAYOUT_KINDS or (op.kind == "maximum_s8" and op.outputs[0].endswith("_lower"))
                    for op in ops]
        unmatched = [(i, op.kind) for i, op in enumerate(ops) if i not in gaps and not plumbing[i]]
        assert not unmatched, f"ops not matched against the reference: {unmatched}"
        for gap in output_gaps(prog, inputs):
            assert gap.max() <= 1, f"output off by {gap.max()} LSB"


def one_quantization(prog) -> None:
    """Both inputs and the output of every maximum_s8 / minimum_s8 carry the same qparams."""
    for op in prog.graph.ops:
        if op.kind in MINMAX:
            qps = {prog.graph.tensors[n].qparams for n in [*op.inputs, *op.outputs]}
            assert len(qps) == 1, (op.kind, qps)


@pytest.mark.parametrize("name", list(CASES))
def test_form_lowers_to_int8_exactly(name):
    factory, shapes, expected = CASES[name]
    torch.manual_seed(0)
    prog, calib = compile_model(factory(), *shapes)
    assert expected <= set(kinds(prog)), kinds(prog)
    assert_all_int8(prog)
    one_quantization(prog)
    assert_exact_ops_and_outputs(prog, calib)


def test_fp32_operand_keeps_the_op_in_fp32():
    """maximum of an fp32 island's result (floor has no int8 kernel): not quantized just to compare; it runs in
    fp32 with the reason, beside int8 ops."""
    torch.manual_seed(0)
    prog, _calib = compile_model(ConvThen(lambda y: torch.maximum(torch.floor(y), y)), (1, 3, 5, 5))
    (op,) = [op for op in prog.ops if op.kind == "aten_fp32" and "maximum.default" in op.aten]
    assert op.backend == "fp32" and "not quantized" in op.reason, (op.backend, op.reason)
    assert "conv2d_s8" in kinds(prog) and not MINMAX & set(kinds(prog))


def test_a16w8_runs_them_in_int8_between_int16_layers():
    """No s16 maximum in CMSIS-NN: under "a16w8" the quantizer gives the op int8 quantization, and the int16
    values of the convolutions around it reach it through convert_s16_s8 (requantizing casts), all integer."""
    import warnings

    import mcuforge

    torch.manual_seed(0)
    model = TwoBranch(lambda a, b: torch.maximum(a, b[:, :4])).eval()
    calib = [(torch.randn(1, 3, 5, 5),) for _ in range(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = mcuforge.compile(model, calib[0], calibration=calib, progress=False, quantization="a16w8")
    assert_all_int8(prog)
    assert {"conv2d_s16", "convert_s16_s8", "maximum_s8"} <= set(kinds(prog)), kinds(prog)
    one_quantization(prog)


def test_rank_5_falls_back_with_the_reason():
    torch.manual_seed(0)
    model = TwoBranch(lambda a, b: torch.maximum(a.unsqueeze(1), b[:, :4].unsqueeze(1)))
    prog, _calib = compile_model(model, (1, 3, 5, 5))
    (op,) = [op for op in prog.ops if op.kind == "aten_fp32" and "maximum.default" in op.aten]
    assert op.backend == "fp32" and "rank 5" in op.reason, op.reason


def test_constant_of_another_quantization_is_requantized_at_compile_time():
    """A constant operand whose quantization is not the output's (the kernels do not requantize): its codes
    requantized once, quantize(dequantize(code)) with the output's qparams, as the fp32 route would."""
    b = GraphBuilder(fx.GraphModule(nn.Module(), fx.Graph()), "cortex-m4")
    codes = np.arange(-128, 128, dtype=np.int8).reshape(1, 1, 16, 16)
    name = b.add_tensor("t", codes.shape, "int8", qparams=QParams(0.02, 5), data=codes, layout="nhwc")
    same = _requantized(b, name, QParams(0.02, 5))
    assert same == name
    out = QParams(0.05, -3)
    moved = b.tensors[_requantized(b, name, out)]
    want = quantize_per_tensor(dequantize_per_tensor(codes, 0.02, 5), 0.05, -3)
    assert moved.qparams == out and moved.layout == "nhwc" and moved.is_constant
    np.testing.assert_array_equal(moved.data, want)
    assert (moved.data != codes).any()


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
def test_tiny_model_same_bytes_python_c_board(target):
    """A whole model with every form: host Python == host C == QEMU board, byte for byte."""
    torch.manual_seed(0)
    prog, _calib = compile_model(Tiny(), (1, 3, 6, 7))
    graph = prog.graph
    assert MINMAX <= {op.kind for op in graph.ops}
    graph.target = target  # the DSP and MVE paths plan the same scratch (test_three_way's premise)
    program = serialize(graph)
    rng = np.random.default_rng(3)
    for seed in range(2):
        x = rng.integers(-128, 128, graph.tensors[graph.inputs[0]].shape).astype(np.int8)
        python = execute(graph, [x])
        c_host, _ = cruntime.run_program(program, [x])
        board, _, _ = firmware.run_on_qemu(program, [x], target)
        for i, (p, c, b) in enumerate(zip(python, c_host, board, strict=True)):
            assert p.tobytes() == c.tobytes(), f"output {i} (seed {seed}): host Python != host C"
            assert c.tobytes() == b.tobytes(), f"output {i} (seed {seed}): host C != {target} board"


def test_delegated_to_ethos_u():
    """The NPU partitioner takes maximum_s8 / minimum_s8 (TOSA MAXIMUM / MINIMUM, compiled by Vela); the host run
    of the delegated program (TOSA reference model) gives the CPU program's bytes."""
    from mcuforge.ethosu import delegate

    torch.manual_seed(0)
    prog, _calib = compile_model(Tiny(), (1, 3, 6, 7))
    npu = delegate(prog, "ethos-u55-128")
    on_cpu = [op.kind for op in npu.graph.ops if op.kind != "delegate"]
    assert not MINMAX & set(on_cpu), on_cpu
    x = np.random.default_rng(4).integers(-128, 128, prog.graph.tensors[prog.graph.inputs[0]].shape).astype(np.int8)
    for a, b in zip(execute(npu.graph, [x]), execute(prog.graph, [x]), strict=True):
        np.testing.assert_array_equal(a, b)
