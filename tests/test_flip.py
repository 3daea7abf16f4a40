"""The int8 flip_s8 kind (torch.flip), added in the kind's four files (docs/adding-an-op.md): the Python kernel
against torch, a compiled model lowering torch.flip to it (not the fp32 fallback), the C kernel equal to the Python
one on the host and on the cortex-m4 (DSP) and cortex-m55 (MVE) boards, and the writer, the Python reader and the C
loader refusing the same malformed ops."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from board_sweep import BoardSweep
from test_c_kernels import act, assert_same_bytes, int8, one_op_program, run_both

import mcuforge
from mcuforge import cruntime
from mcuforge.kernels.flip import flip_s8
from mcuforge.lower.int8.movement import _FlipHead
from mcuforge.program import ProgramFormatError, deserialize

#: (shape, stored dims flipped): the last dim flipped or not, several dims, rank 1 to 6, a size-1 and a 0-size dim.
CASES = [((7,), [0]), ((3, 5), [0]), ((3, 5), [1]), ((3, 5), [0, 1]), ((1, 4, 6, 3), [2]), ((1, 4, 6, 3), [1, 3]),
         ((2, 3, 4, 5), [0, 2]), ((2, 1, 3, 2, 2, 17), [1, 3, 5]), ((2, 3, 1), [2]), ((4, 6), []), ((2, 0, 3), [1]),
         ((2, 3, 4), [2, 0, 1])]


def flip_program(shape: tuple[int, ...], dims: list[int]) -> bytes:
    return one_op_program([act("x", shape)], [act("y", shape)], "flip_s8", {"dims": dims})


def test_python_kernel_equals_torch():
    rng = np.random.default_rng(0)
    for shape, dims in CASES:
        x = int8(rng, shape)
        want = torch.flip(torch.from_numpy(x), dims).numpy()
        np.testing.assert_array_equal(flip_s8(x, dims), want, err_msg=f"{shape} {dims}")
    with pytest.raises(ValueError, match="not distinct"):
        flip_s8(int8(rng, (2, 3)), [1, 1])


def test_c_kernel_equals_python_on_host():
    rng = np.random.default_rng(1)
    for shape, dims in CASES:
        assert_same_bytes(*run_both(flip_program(shape, dims), [int8(rng, shape)]), f"flip {shape} {dims}")


class Unflipped(_FlipHead):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x))


def compiled(model: torch.nn.Module) -> tuple[mcuforge.api.Program, tuple[torch.Tensor, ...]]:
    example = (torch.randn(1, 3, 6, 7, generator=torch.Generator().manual_seed(0)),)
    gen = torch.Generator().manual_seed(1)
    calibration = [(torch.randn(1, 3, 6, 7, generator=gen),) for _ in range(8)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mcuforge.compile(model.eval(), example, calibration, target="cortex-m4", progress=False), example


def test_compiled_model_lowers_flip():
    """torch.flip(x, (1, 3)) of an NCHW activation is a flip of stored dims W and C of its NHWC bytes: the output
    is exactly the flip of the same model's unflipped output (the flip shares the relu's quantization), and the
    host C runtime gives the Python one's bytes."""
    torch.manual_seed(0)
    model = _FlipHead()
    plain = Unflipped()
    plain.load_state_dict(model.state_dict())
    prog, example = compiled(model)
    flips = [op for op in prog.graph.ops if op.kind == "flip_s8"]
    assert len(flips) == 1 and all(op.backend == "int8" for op in prog.ops), [(op.kind, op.reason) for op in prog.ops]
    assert prog.graph.tensors[flips[0].inputs[0]].layout == "nhwc" and flips[0].attrs["dims"] == [2, 3]
    assert_same_bytes(prog.run_raw(*example), prog.run_raw(*example, backend="c"), "flip head: python vs host C")
    reference, _ = compiled(plain)
    [plain_out], [out] = reference.run(*example), prog.run(*example)
    torch.testing.assert_close(torch.as_tensor(out), torch.flip(torch.as_tensor(plain_out), (1, 3)), rtol=0, atol=0)


def board_sweep(seed: int) -> BoardSweep:
    rng = np.random.default_rng(seed)
    sweep = BoardSweep()
    for i, (shape, dims) in enumerate(CASES):
        sweep.add(f"flip_{i}", "flip_s8", {"dims": dims}, [(act("x", shape), int8(rng, shape))], [act("y", shape)])
    return sweep


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
def test_sweep_on_board(target):
    sweep = board_sweep(seed=3)
    assert len(sweep) == len(CASES)
    facts = sweep.assert_same_on_board(target)
    assert facts["board"]


BAD = [  # (what, shape in, shape out, dims)
    ("dims repeated", (2, 3), (2, 3), [1, 1]),
    ("dim past the rank", (2, 3), (2, 3), [2]),
    ("negative dim", (2, 3), (2, 3), [-1]),
    ("shapes differ", (2, 3), (3, 2), [0]),
]


@pytest.mark.parametrize("what", [b[0] for b in BAD])
def test_bad_ops_refused_by_the_writer_and_both_readers(what, monkeypatch):
    from mcuforge.program import writer

    _, shape, out, dims = next(b for b in BAD if b[0] == what)

    def program() -> bytes:
        return one_op_program([act("x", shape)], [act("y", out)], "flip_s8", {"dims": dims})

    with pytest.raises(ValueError, match="flip_s8"):
        program()
    with monkeypatch.context() as m:  # written anyway, as a damaged file would hold it
        m.setattr(writer, "kernel_shape_problem", lambda op, tensors: None)
        data = program()
    with pytest.raises(ProgramFormatError, match="flip_s8"):
        deserialize(data)
    with pytest.raises(cruntime.CRuntimeError, match=r"MF_ERR_SHAPE at op 0"):
        cruntime.LoadedProgram(data)
