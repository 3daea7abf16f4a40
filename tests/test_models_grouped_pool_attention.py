"""Tiny models for grouped convolution, ceil_mode pooling and attention (issue 9), end to end: every
compute op on an int8 kernel, the output close to the fp32 model, and the same bytes from the host
Python kernels, the C runtime on the host and the firmware on QEMU (Cortex-M4 and Cortex-M55).
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import mcuforge
from mcuforge import cruntime, firmware
from mcuforge.program import serialize
from mcuforge.runtime import execute

from conftest import calibration_set, program_inputs


class GroupedPool(nn.Module):
    """ResNeXt/RegNet-style grouped convs (2-D and 1-D) and SqueezeNet-style ceil_mode pools."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.grouped = nn.Conv2d(8, 12, 3, stride=2, padding=1, groups=4)  # 4 groups of 2 -> 3 channels
        self.pool = nn.MaxPool2d(3, 2, ceil_mode=True)  # 8x8 -> 4x4 (floor: 3x3)
        self.avg = nn.AvgPool2d(3, 2, ceil_mode=True)  # 4x4 -> 2x2 (floor: 1x1), no padding
        self.pool1d = nn.MaxPool1d(3, 2, ceil_mode=True)  # 4 -> 2 (floor: 1)
        self.grouped1d = nn.Conv1d(12, 6, 1, groups=3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.pool(F.relu(self.grouped(F.relu(self.stem(x)))))
        y = self.avg(y) + self.pool(y)[:, :, :2, :2]
        return self.grouped1d(self.pool1d(y.flatten(2)))


class MobileViTBlock(nn.Module):
    """MobileViT-style: local conv, unfold into 2x2-pixel patch sequences, a transformer layer with
    F.scaled_dot_product_attention, fold back, fuse with the input."""

    def __init__(self, channels: int = 8, dim: int = 16, heads: int = 2, patch: int = 2) -> None:
        super().__init__()
        self.patch, self.heads = patch, heads
        self.local = nn.Conv2d(channels, channels, 3, padding=1)
        self.proj = nn.Conv2d(channels, dim, 1)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.fc2 = nn.Linear(2 * dim, dim)
        self.back = nn.Conv2d(dim, channels, 1)
        self.fuse = nn.Conv2d(2 * channels, channels, 3, padding=1)

    def _heads(self, z: torch.Tensor) -> torch.Tensor:
        return z.reshape(z.shape[0], z.shape[1], self.heads, -1).transpose(1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.proj(F.relu(self.local(x)))
        n, d, h, w = y.shape
        p = self.patch
        t = y.reshape(n, d, h // p, p, w // p, p).permute(0, 3, 5, 2, 4, 1).reshape(n * p * p, -1, d)  # unfold
        q, k, v = self.qkv(t).chunk(3, dim=-1)
        a = F.scaled_dot_product_attention(self._heads(q), self._heads(k), self._heads(v))
        t = t + self.out(a.transpose(1, 2).reshape(t.shape))
        t = t + self.fc2(F.silu(self.fc1(t)))
        y = t.reshape(n, p, p, h // p, w // p, d).permute(0, 5, 3, 1, 4, 2).reshape(n, d, h, w)  # fold
        return self.fuse(torch.cat([x, self.back(y)], 1))


class MultiheadAttention(nn.Module):
    """nn.MultiheadAttention (need_weights=False: exported as scaled_dot_product_attention)."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(16, 16)
        self.mha = nn.MultiheadAttention(16, 2, batch_first=True)
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.embed(x)
        return self.head(self.mha(x, x, x, need_weights=False)[0])


# name: (factory, input shape, op kinds that must appear, SQNR floor in dB ~3 dB below the lowest measured)
MODELS = {
    "grouped_pool": (GroupedPool, (1, 3, 15, 15), {"conv2d_s8", "maxpool_s8", "avgpool_s8"}, 40.0),  # 43.1-45.5
    "mobilevit_block": (MobileViTBlock, (1, 8, 8, 8), {"batch_matmul_s8", "softmax_s8", "mul_s8"}, 32.0),  # 35.2-35.9
    "multihead_attention": (MultiheadAttention, (1, 6, 16), {"batch_matmul_s8", "softmax_s8", "mul_s8"},
                            36.5),  # 39.7-43.0
}
#: Ops that compute (the rest is int8 data movement: reshape, transpose, slice, concat).
MOVEMENT = {"reshape", "transpose", "slice", "concat_s8"}


@functools.cache
def compiled(name: str):
    factory, shape, _, _ = MODELS[name]
    torch.manual_seed(5)
    model = factory().eval()
    example = (torch.randn(shape),)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = mcuforge.compile(model, example, calibration=calibration_set(example, 16, seed=1), progress=False)
    return model, example, prog


def sqnr_db(ref: np.ndarray, got: np.ndarray) -> float:
    return float(10 * np.log10(np.sum(ref**2) / np.sum((ref - got) ** 2)))


@pytest.mark.parametrize("name", MODELS)
def test_every_op_is_int8_and_close_to_fp32(name: str) -> None:
    model, _, prog = compiled(name)
    kinds = {op.kind for op in prog.ops}
    assert MODELS[name][2] <= kinds, kinds
    fp32 = [(op.kind, op.aten, op.reason) for op in prog.ops if op.backend != "int8"]
    assert fp32 == [], fp32
    assert {"aten_fp32", "quantize", "dequantize"}.isdisjoint(kinds)
    assert any(op.kind not in MOVEMENT for op in prog.ops)
    for (x,) in calibration_set(compiled(name)[1], 3, seed=9):
        ref = model(x).detach().numpy()
        got = np.asarray(prog.run(x)[0])
        assert sqnr_db(ref, got) >= MODELS[name][3], (name, sqnr_db(ref, got))


def test_grouped_and_ceil_mode_ops_are_the_new_ones() -> None:
    prog = compiled("grouped_pool")[2]
    convs = [op for op in prog.ops if op.kind == "conv2d_s8"]
    # the grouped 2-D conv (filter channels 8 / 4 = 2) and the grouped 1-D conv (12 / 3 = 4)
    weight_channels = sorted(prog.graph.tensors[prog.graph.ops[op.index].inputs[1]].shape[3] for op in convs)
    assert weight_channels == [2, 3, 4]
    pools = {(op.kind, op.output_shapes[0]) for op in prog.ops if "pool" in op.kind}
    assert ("maxpool_s8", (1, 4, 4, 12)) in pools and ("avgpool_s8", (1, 2, 2, 12)) in pools  # ceil sizes
    assert ("maxpool_s8", (1, 1, 2, 12)) in pools  # 1-D, ceil size 2
    ceil_ops = [op for op in prog.graph.ops if op.kind in ("maxpool_s8", "avgpool_s8")]
    assert all(len(op.attrs["output_hw"]) == 2 for op in ceil_ops)


def test_attention_transposes_are_int8_and_k_folds_into_the_matmul() -> None:
    prog = compiled("mobilevit_block")[2]
    matmuls = [op for op in prog.graph.ops if op.kind == "batch_matmul_s8"]
    assert [op.attrs["adj_y"] for op in matmuls] == [1, 0]  # q @ k^T reads k as is (adj_y)
    assert all(op.backend == "int8" for op in prog.graph.ops if op.kind == "transpose")


def test_numeric_gap_reads_the_decomposed_attention() -> None:
    """The Inspector's fp32 side is decomposed like the compiled graph: the attention module's last op
    (the matmul with v) finds its fp32 reference node."""
    from test_decompose_attention import Wrapper

    torch.manual_seed(0)
    model = Wrapper().eval()
    example = tuple(torch.randn(1, 2, 6, 8) for _ in range(3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = mcuforge.compile(model, example, calibration=calibration_set(example, 8, seed=2), progress=False)
    _, trace = prog.run(*example, trace=True)
    gap = mcuforge.Inspector(prog, trace).numeric_gap(model, example)
    row = gap[gap["module"] == "attn"]
    assert list(row["kind"]) == ["batch_matmul_s8"] and float(row["sqnr_db"].iloc[0]) > 25


@pytest.mark.parametrize("kwargs", [{"is_causal": True}, {}])
def test_masked_attention_compiles_and_runs_in_c(kwargs) -> None:
    """Causal and boolean (a model input) masks: compiled with a warning about int8 accuracy, every op
    with a C kernel (no LoweringError), host C == host Python."""
    from test_decompose_attention import Wrapper

    torch.manual_seed(0)
    model = Wrapper(**kwargs).eval()
    example = tuple(torch.randn(1, 2, 6, 8) for _ in range(3))
    if not kwargs:
        keep = torch.rand(1, 2, 6, 6) > 0.3
        keep[..., 0] = True
        example += (keep,)
    with pytest.warns(UserWarning, match="masked positions become -inf"):
        prog = mcuforge.compile(model, example, calibration=[example] * 4, progress=False)
    np.testing.assert_array_equal(prog.run(*example)[0], prog.run(*example, backend="c")[0])


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
@pytest.mark.parametrize("name", MODELS)
def test_same_bytes_host_python_c_and_board(name: str, target: str) -> None:
    graph = compiled(name)[2].graph
    graph = type(graph)(graph.tensors, graph.ops, graph.inputs, graph.outputs, target, graph.arena_bytes)
    program = serialize(graph)
    inputs = program_inputs(graph, np.random.default_rng(11))
    python = execute(graph, inputs)
    c_host, _ = cruntime.run_program(program, inputs)
    board, _, _ = firmware.run_on_qemu(program, inputs, target)
    for i, (p, c, b) in enumerate(zip(python, c_host, board, strict=True)):
        assert p.dtype == c.dtype == b.dtype and p.shape == c.shape == b.shape, (name, i)
        assert p.tobytes() == c.tobytes(), f"{name} output {i}: host Python != C runtime"
        assert c.tobytes() == b.tobytes(), f"{name} output {i}: C on the host != {target} on QEMU"
