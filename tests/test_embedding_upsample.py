"""The int8 embedding_s8 and upsample_nearest2d_s8 kinds: the Python kernels against torch, compiled models that
lower them (not the fp32 fallback), the C kernel equal to the Python one on the host and on the cortex-m4 (DSP) and
cortex-m55 (MVE) boards, and the C loader refusing ops whose shapes do not fit."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from board_sweep import BoardSweep
from test_c_kernels import act, assert_same_bytes, const, int8, one_op_program, run_both
from torch import nn
from torch.nn import functional as F  # noqa: N812 - torch's own convention

import mcuforge
from mcuforge import cruntime
from mcuforge.kernels.embedding import embedding_s8
from mcuforge.kernels.quant_utils import quantize_per_tensor
from mcuforge.kernels.upsample import upsample_nearest2d_s8
from mcuforge.program import deserialize
from mcuforge.runtime import execute
from mcuforge.runtime.executor import OpExecutionError


def embedding_case(rng, dtype: str, index_shape: tuple[int, ...], rows: int, depth: int):
    table = int8(rng, (rows, depth))
    indices = rng.integers(0, rows, size=index_shape).astype(dtype)
    program = one_op_program([act("i", index_shape, dtype)], [act("y", (*index_shape, depth))], "embedding_s8", {},
                             [const("table", table)])
    return program, [indices], table


def upsample_case(rng, shape: tuple[int, int, int, int], factors: tuple[int, int]):
    n, h, w, c = shape
    out = (n, h * factors[0], w * factors[1], c)
    program = one_op_program([act("x", shape)], [act("y", out)], "upsample_nearest2d_s8", {})
    return program, [int8(rng, shape)]


def test_python_kernels_equal_torch():
    rng = np.random.default_rng(0)
    table = int8(rng, (11, 5))
    indices = rng.integers(0, 11, size=(3, 4))
    want = F.embedding(torch.from_numpy(indices), torch.from_numpy(table.astype(np.float32))).numpy()
    np.testing.assert_array_equal(embedding_s8(indices, table), want.astype(np.int8))
    for shape, size in (((1, 3, 4, 5), (6, 8)), ((2, 2, 3, 1), (2, 9)), ((1, 1, 1, 3), (4, 4))):
        x = int8(rng, shape)
        nchw = torch.from_numpy(np.transpose(x, (0, 3, 1, 2)).astype(np.float32))
        want = F.interpolate(nchw, size=size, mode="nearest").numpy().transpose(0, 2, 3, 1)
        np.testing.assert_array_equal(upsample_nearest2d_s8(x, size), want.astype(np.int8))
    with pytest.raises(ValueError, match="out of range"):
        embedding_s8(np.array([11]), table)
    with pytest.raises(ValueError, match="whole multiple"):
        upsample_nearest2d_s8(int8(rng, (1, 3, 3, 2)), (4, 6))


def test_c_kernels_equal_python_on_host():
    rng = np.random.default_rng(1)
    cases = 0
    for dtype in ("int64", "int32"):
        for index_shape in ((1,), (7,), (2, 5), (1, 3, 4)):
            for rows, depth in ((1, 1), (13, 8), (50, 17)):
                program, values, _ = embedding_case(rng, dtype, index_shape, rows, depth)
                assert_same_bytes(*run_both(program, values), f"embedding {dtype} {index_shape} ({rows}, {depth})")
                cases += 1
    for shape in ((1, 1, 1, 1), (1, 3, 5, 7), (2, 4, 2, 16), (1, 2, 3, 33)):
        for factors in ((1, 1), (2, 2), (3, 1), (1, 4), (2, 3)):
            program, values = upsample_case(rng, shape, factors)
            assert_same_bytes(*run_both(program, values), f"upsample {shape} x{factors}")
            cases += 1
    assert cases == 44


def test_out_of_range_index_stops_both_runtimes():
    rng = np.random.default_rng(2)
    program, values, _ = embedding_case(rng, "int64", (4,), 6, 3)
    for bad in (6, -1, 1 << 40):
        indices = values[0].copy()
        indices[2] = bad
        with pytest.raises(OpExecutionError, match="index out of range"):
            execute(deserialize(program), [indices])
        with pytest.raises(cruntime.CRuntimeError, match=r"invoke failed: MF_ERR_SHAPE in op 0 \(embedding_s8\)"):
            cruntime.run_program(program, [indices])


BAD = [
    # (what, program)
    ("table not int8", lambda: one_op_program([act("i", (3,), "int64")], [act("y", (3, 4))], "embedding_s8", {},
                                              [const("table", np.zeros((5, 4), np.int16))])),
    ("float indices", lambda: one_op_program([act("i", (3,), "float32")], [act("y", (3, 4))], "embedding_s8", {},
                                             [const("table", np.zeros((5, 4), np.int8))])),
    ("output depth", lambda: one_op_program([act("i", (3,), "int64")], [act("y", (3, 5))], "embedding_s8", {},
                                            [const("table", np.zeros((5, 4), np.int8))])),
    ("fractional factor", lambda: one_op_program([act("x", (1, 3, 3, 2))], [act("y", (1, 4, 6, 2))],
                                                 "upsample_nearest2d_s8", {})),
    ("channels differ", lambda: one_op_program([act("x", (1, 3, 3, 2))], [act("y", (1, 6, 6, 3))],
                                               "upsample_nearest2d_s8", {})),
    ("rank 3", lambda: one_op_program([act("x", (3, 3, 2))], [act("y", (6, 6, 2))], "upsample_nearest2d_s8", {})),
]


@pytest.mark.parametrize("what", [w for w, _ in BAD])
def test_bad_shapes_refused_by_the_writer_and_both_readers(what, monkeypatch):
    """The writer and the Python reader refuse what the C loader refuses (the kernel's registered shape check,
    mcuforge.kernels.registry, states the C kernel's load-time check)."""
    from mcuforge.program import ProgramFormatError, writer

    kind = "embedding_s8" if what in ("table not int8", "float indices", "output depth") else "upsample_nearest2d_s8"
    with pytest.raises(ValueError, match=kind):
        dict(BAD)[what]()
    with monkeypatch.context() as m:  # written anyway, as a damaged file would hold it
        m.setattr(writer, "kernel_shape_problem", lambda op, tensors: None)
        program = dict(BAD)[what]()
    with pytest.raises(ProgramFormatError, match=kind):
        deserialize(program)
    with pytest.raises(cruntime.CRuntimeError, match=r"MF_ERR_SHAPE at op 0"):
        cruntime.LoadedProgram(program)


class Tagger(nn.Module):
    """A keyword model's front (token embedding) and a segmentation head's nearest upsampling."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(40, 12)
        self.fc = nn.Linear(12, 4)
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.head = nn.Conv2d(8, 2, 1)

    def forward(self, tokens, image):
        up = F.interpolate(F.relu(self.conv(image)), scale_factor=2, mode="nearest")
        return self.fc(self.embed(tokens)), self.head(up)


@pytest.fixture(scope="module")
def tagger():
    torch.manual_seed(0)
    model = Tagger().eval()
    example = (torch.randint(0, 40, (2, 5)), torch.randn(1, 3, 6, 6))
    gen = torch.Generator().manual_seed(1)
    calibration = [(torch.randint(0, 40, (2, 5), generator=gen), torch.randn(1, 3, 6, 6, generator=gen))
                   for _ in range(8)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = mcuforge.compile(model, example, calibration, target="cortex-m4", progress=False)
    return model, example, prog


def test_compiled_model_lowers_both_kinds(tagger):
    model, example, prog = tagger
    kinds = [op.kind for op in prog.ops]
    assert "embedding_s8" in kinds and "upsample_nearest2d_s8" in kinds
    assert all(op.backend == "int8" for op in prog.ops), [(op.kind, op.reason) for op in prog.ops]
    # the table is the float weights quantized to the output's quantization: the fp32 route's codes
    op = next(op for op in prog.graph.ops if op.kind == "embedding_s8")
    table, out = prog.graph.tensors[op.inputs[1]], prog.graph.tensors[op.outputs[0]]
    want = quantize_per_tensor(model.embed.weight.detach().numpy(), out.qparams.scale, out.qparams.zero_point)
    np.testing.assert_array_equal(table.data, want)
    python = prog.run_raw(*example)
    c = prog.run_raw(*example, backend="c")
    assert_same_bytes(python, c, "tagger: python vs host C")


def board_sweep(seed: int) -> BoardSweep:
    rng = np.random.default_rng(seed)
    sweep = BoardSweep()
    for i, (dtype, index_shape, rows, depth) in enumerate(
            [("int64", (1,), 1, 1), ("int64", (9,), 30, 16), ("int32", (2, 5), 13, 7), ("int64", (3, 4), 64, 33),
             ("int32", (1, 2, 3), 5, 64)]):
        table = int8(rng, (rows, depth))
        indices = rng.integers(0, rows, size=index_shape).astype(dtype)
        sweep.add(f"embedding_{i}", "embedding_s8", {}, [(act("i", index_shape, dtype), indices)],
                  [act("y", (*index_shape, depth))], constants=[const("table", table)])
    for i, (shape, factors) in enumerate([((1, 1, 1, 1), (2, 2)), ((1, 3, 5, 7), (2, 2)), ((2, 4, 2, 16), (3, 1)),
                                          ((1, 2, 3, 33), (1, 4)), ((1, 5, 5, 8), (2, 3))]):
        n, h, w, c = shape
        sweep.add(f"upsample_{i}", "upsample_nearest2d_s8", {}, [(act("x", shape), int8(rng, shape))],
                  [act("y", (n, h * factors[0], w * factors[1], c))])
    return sweep


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
def test_sweep_on_board(target):
    sweep = board_sweep(seed=3)
    assert len(sweep) == 10
    facts = sweep.assert_same_on_board(target)
    assert facts["board"]
