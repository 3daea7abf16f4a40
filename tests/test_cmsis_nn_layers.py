"""The benchmark's CMSIS-NN column, its plumbing (mcuforge.cmsis_nn.layers): a real model's ops as
CMSIS-NN calls on a board in one boot, each call's output bytes against our op's, instructions per call.
The figures themselves are benchmarks/firmware.py's."""

from __future__ import annotations

import numpy as np
import pytest

import mcuforge
from mcuforge.cmsis_nn.layers import Layer, LayerRun, activation_inputs, layer_cases, op_values, run_layers
from mcuforge.runtime import execute

from conftest import compiled as zoo_compiled


def compiled(name: str, target: str) -> mcuforge.Program:
    """As benchmarks/firmware.py compiles it (16 random calibration inputs, seed 1): conftest's cached program."""
    return zoo_compiled(name, target)[2]


def int8_inputs(prog: mcuforge.Program) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.integers(-128, 128, prog.graph.tensors[n].shape).astype(np.int8) for n in prog.graph.inputs]


def test_ds_cnn_layers_on_cortex_m4_equal_ours(cmsis_nn_root):
    """DS-CNN's ops through CMSIS-NN's DSP path in one boot: every op with a CMSIS-NN call gives our bytes
    and counts instructions; the others are listed, with why."""
    prog = compiled("ds_cnn", "cortex-m4")
    run = run_layers(prog.graph, int8_inputs(prog), "cortex-m4", cmsis_nn_root)
    assert [la.index for la in run.layers] == list(range(len(prog.graph.ops)))
    assert any(la.kind == "conv2d_s8" for la in run.matched), "the convolutions have a CMSIS-NN call"
    assert all(la.equal for la in run.matched), run.verdict()
    assert run.verdict() == "outputs equal"
    assert all(la.instructions > 0 for la in run.matched)
    assert run.kernel_instructions == sum(la.instructions for la in run.matched)
    assert all(la.instructions == 0 and la.equal is None and la.kind in la.why_none for la in run.unmatched)


def test_op_values_are_the_runs_tensors():
    """The recorded values are each op's output as it was written (later ops reuse the arena bytes):
    the last op's recorded output is the program's output, and each op's activation inputs are found."""
    prog = compiled("fc_autoencoder", "cortex-m4")
    xs = int8_inputs(prog)
    values = op_values(prog.graph, xs)
    (out,) = execute(prog.graph, xs)
    np.testing.assert_array_equal(values[prog.graph.outputs[0]].reshape(-1), np.asarray(out).reshape(-1))
    for op in prog.graph.ops:
        assert len(activation_inputs(prog.graph, op, values)) == 1  # a fully connected layer's one activation


def test_an_op_without_a_cmsis_nn_call_is_listed(monkeypatch):
    """A kind the harness has no converter for becomes a Layer without a call (0 on CMSIS-NN's side)."""
    from mcuforge.cmsis_nn import ops

    prog = compiled("fc_autoencoder", "cortex-m4")
    kind = prog.graph.ops[-1].kind  # a fully connected kind: per tensor or per channel, as the data chose
    monkeypatch.delitem(ops.CONVERTERS, kind)
    layers, cases = layer_cases(prog.graph, op_values(prog.graph, int8_inputs(prog)))
    last = layers[-1]
    assert kind.startswith("fully_connected")
    assert last.kind == kind and last.function is None and kind in last.why_none
    assert len(cases) == sum(la.function is not None for la in layers)


def test_verdict_names_the_first_op_that_differs():
    run = LayerRun("cortex-m4", [Layer(0, "conv2d_s8", "mfcmp_conv_wrapper_s8", 10, True),
                                 Layer(1, "reshape", None, why_none="no call"),
                                 Layer(2, "add_s8", "mfcmp_add_s8", 5, False),
                                 Layer(3, "add_s8", "mfcmp_add_s8", 5, False)])
    assert run.verdict() == "op 2 (add_s8, mfcmp_add_s8) differs first (2 of 3 differ)"
    assert run.kernel_instructions == 20 and [la.index for la in run.unmatched] == [1]
    assert LayerRun("cortex-m4", [Layer(0, "reshape", None)]).verdict() == "no op has a CMSIS-NN call"
    run.layers[2].equal = run.layers[3].equal = True
    assert run.verdict() == "outputs equal"


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
def test_same_bytes_ignores_shape_not_dtype(dtype):
    from mcuforge.cmsis_nn.layers import same_bytes

    a = np.arange(12, dtype=dtype).reshape(1, 3, 4)
    assert same_bytes(a, a.reshape(12))
    assert not same_bytes(a, a.astype(np.int32))
    b = a.copy()
    b.flat[5] += 1
    assert not same_bytes(a, b)
