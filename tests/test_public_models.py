"""Public model-zoo networks end to end (issue 9): the eight torchvision classification networks a
new user tries first (random weights, randomized BatchNorm statistics, 64x64, 10 classes) compile
for cortex-m55; at least 99% of their multiply-accumulates run on int8 kernels, counted
independently of mcuforge by PyTorch's FlopCounterMode; the C runtime on the host gives the host
Python runtime's bytes; and the three smallest give the same bytes as firmware on QEMU.
"""

import functools
import warnings

import numpy as np
import pytest

import mcuforge
from mcuforge import cruntime, firmware
from mcuforge.runtime import execute

from conftest import calibration_set, program_inputs
from torchvision_zoo import NAMES, build, reference_macs

# The three smallest by MACs (and all three well inside the board's memory).
ON_BOARD = ("shufflenet_v2_x0_5", "mobilenet_v2_035", "mobilenet_v3_small")
INT8_MAC_SHARE = 0.99


@functools.cache
def compiled(name: str):
    """(model, example, program, compile warnings): each network is compiled once per session."""
    model, example = build(name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        prog = mcuforge.compile(model, example, calibration=calibration_set(example, 8, seed=1),
                                target="cortex-m55", progress=False)
    return model, example, prog, [str(w.message) for w in caught]


@pytest.mark.parametrize("name", NAMES)
def test_compiles_to_a_runnable_program(name):
    model, example, prog, _ = compiled(name)
    (logits,) = prog.run(example[0])
    assert logits.shape == (1, 10) and np.isfinite(logits).all()
    # An op that stays fp32 says why, so that a user can act on it.
    assert all(op.reason for op in prog.ops if op.backend != "int8"), \
        [(op.index, op.kind, op.aten) for op in prog.ops if op.backend != "int8" and not op.reason]


@pytest.mark.parametrize("name", NAMES)
def test_macs_run_on_int8_kernels(name):
    model, example, prog, _ = compiled(name)
    expected = reference_macs(model, example)
    int8 = sum(op.macs for op in prog.ops if op.backend == "int8")
    fp32 = [(op.index, op.aten or op.kind, op.macs) for op in prog.ops if op.backend != "int8" and op.macs]
    total = int8 + sum(m for _, _, m in fp32)
    # Honest accounting first: every MAC of the model is counted, whatever backend runs it (an fp32
    # conv counted as 0 would make the share below read 100%).
    assert abs(total - expected) <= 0.01 * expected, \
        f"mcuforge counts {total} MACs, PyTorch {expected}; fp32 ops with MACs: {fp32}"
    assert int8 >= INT8_MAC_SHARE * expected, \
        f"{int8 / expected:.2%} of {expected} MACs on int8 kernels; fp32 ops with MACs: {fp32}"


@pytest.mark.parametrize("name", NAMES)
def test_host_c_runtime_gives_the_python_bytes(name):
    graph = compiled(name)[2].graph
    program = compiled(name)[2].to_bytes()
    for seed in (3, 4):
        inputs = program_inputs(graph, np.random.default_rng(seed))  # the whole int8 input range
        python = execute(graph, inputs)
        c_host, _ = cruntime.run_program(program, inputs)
        for i, (p, c) in enumerate(zip(python, c_host, strict=True)):
            assert p.dtype == c.dtype and p.shape == c.shape, (name, i)
            assert p.tobytes() == c.tobytes(), f"{name} output {i} (inputs seed {seed}): host Python != C runtime"


@pytest.mark.parametrize("name", ON_BOARD)
def test_board_gives_the_host_bytes(name):
    prog = compiled(name)[2]
    inputs = program_inputs(prog.graph, np.random.default_rng(5))
    python = execute(prog.graph, inputs)
    board, _, _ = firmware.run_on_qemu(prog.to_bytes(), inputs, "cortex-m55")
    for i, (p, b) in enumerate(zip(python, board, strict=True)):
        assert p.dtype == b.dtype and p.shape == b.shape, (name, i)
        assert p.tobytes() == b.tobytes(), f"{name} output {i}: host Python != cortex-m55 on QEMU"
