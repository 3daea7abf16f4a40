"""Three-way equality: host Python kernels == C runtime on the host == firmware on QEMU, byte for
byte, for every zoo model, on the Cortex-M4 and Cortex-M55 boards (all five boards: marked slow,
still run in CI).

The lowering depends on the target only through the op scratch its kernel path asks for, and the
DSP and MVE paths ask the same: so each model is compiled once for cortex-m55 and its graph
re-targeted for the DSP boards (``test_lowering_is_the_same_on_dsp_and_mve_targets`` checks that
premise, and fails the day it stops holding), and compiled for cortex-m3 itself (the scalar paths
plan more scratch).
"""

import copy

import numpy as np
import pytest

from mcuforge import compile as compile_model
from mcuforge import cruntime, firmware
from mcuforge.program import serialize
from mcuforge.runtime import execute
from mcuforge.targets import get_target
from mcuforge.zoo import MODELS

from conftest import calibration_set, compiled, program_inputs

BOARDS_FAST = ("cortex-m4", "cortex-m55")
BOARDS_ALL = ("cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55")


def program_for(name: str, target: str) -> tuple[object, bytes]:
    if get_target(target).kernel_path not in ("dsp", "mve"):
        graph = compiled(name, target)[2].graph
        return graph, serialize(graph)
    graph = compiled(name)[2].graph
    if target != graph.target:
        graph = copy.copy(graph)
        graph.target = target
    return graph, serialize(graph)


def assert_three_way(name: str, target: str, seed: int) -> None:
    graph, program = program_for(name, target)
    inputs = program_inputs(graph, np.random.default_rng(seed))
    python = execute(graph, inputs)
    c_host, _ = cruntime.run_program(program, inputs)
    board, _, _ = firmware.run_on_qemu(program, inputs, target)
    for i, (p, c, b) in enumerate(zip(python, c_host, board, strict=True)):
        assert p.dtype == c.dtype == b.dtype and p.shape == c.shape == b.shape, (name, i)
        assert c.tobytes() == b.tobytes(), f"{name} output {i}: C on the host != {target} on QEMU"
        assert p.tobytes() == c.tobytes(), f"{name} output {i}: host Python != C runtime"


@pytest.mark.parametrize("target", BOARDS_FAST)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_same_bytes_host_python_c_and_board(name, target):
    assert_three_way(name, target, seed=7)


@pytest.mark.slow
@pytest.mark.parametrize("target", [t for t in BOARDS_ALL if t not in BOARDS_FAST])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_same_bytes_on_every_board(name, target):
    assert_three_way(name, target, seed=8)


def test_lowering_is_the_same_on_dsp_and_mve_targets():
    """The lowering depends on the target only through the kernels' scratch plans (DS-CNN's depthwise layers
    plan the DSP path's rings on cortex-m4, none on cortex-m55): the cortex-m4 program re-planned for
    cortex-m55 (scratch recomputed, arena planned again) is the cortex-m55 program, byte for byte."""
    from mcuforge.sweep.retarget import retarget

    model, example = MODELS["ds_cnn"]()
    calibration = calibration_set(example, 4, seed=3)
    m4 = compile_model(model, example, calibration=calibration, target="cortex-m4", progress=False)
    m55 = compile_model(model, example, calibration=calibration, target="cortex-m55", progress=False)
    assert serialize(retarget(m4, "cortex-m55").graph) == serialize(m55.graph)
    assert [op.scratch_bytes for op in m4.graph.ops] != [op.scratch_bytes for op in m55.graph.ops]
