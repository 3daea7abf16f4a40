"""maximum_s8 / minimum_s8 against Arm's CMSIS-NN itself (arm_maximum_s8 / arm_minimum_s8, built from the
source tree of ``--cmsis-nn``; skipped with the reason without it).

The cases: every broadcast pattern of two rank-4 inputs (each dim full or 1, either side) and random ones of
rank 1 to 4 with long rows (the MVE and DSP loops' tails). Each runs through our Python kernels, our host C
runtime and CMSIS-NN built for the host: byte-identical; then on the cortex-m4 (CMSIS-NN's plain C loop vs our
DSP rows) and cortex-m55 (both MVE) boards, one QEMU boot for CMSIS-NN and one for ours, compared byte for byte.

Difference on purpose: the dims where CMSIS-NN's broadcast walk reads past an input (an input with one value
per row, H > 1 and W = C = 1, beside one with W > 1; ``ops_minmax.walk_overruns``) have no counterpart; the
converter refuses them and the test checks that it refuses exactly those.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from board_sweep import BoardSweep
from test_c_kernels import act, broadcast_shapes, int8

from mcuforge import cruntime, firmware
from mcuforge.cmsis_nn import harness, ops
from mcuforge.cmsis_nn.ops_minmax import nhwc_dims, walk_overruns
from mcuforge.program import deserialize
from mcuforge.runtime import execute

KINDS = ("maximum_s8", "minimum_s8")


def minmax_sweep(seed: int) -> BoardSweep:
    rng = np.random.default_rng(seed)
    sweep = BoardSweep()
    full = (2, 3, 4, 5)
    for kind in KINDS:
        for i, (m1, m2) in enumerate(itertools.product(itertools.product([0, 1], repeat=4), repeat=2)):
            d1 = tuple(f if k else 1 for f, k in zip(full, m1, strict=True))
            d2 = tuple(f if k else 1 for f, k in zip(full, m2, strict=True))
            out = tuple(np.broadcast_shapes(d1, d2))
            sweep.add(f"{kind}_pattern_{i}", kind, {}, [(act("a", d1), int8(rng, d1)), (act("b", d2), int8(rng, d2))],
                      [act("y", out)])
        for i in range(60):
            a_shape, b_shape = broadcast_shapes(rng)
            if i % 3 == 0:  # long rows
                n = int(rng.integers(16, 80))
                a_shape, b_shape = (2, n), ((1, n) if i % 2 else (2, 1))
            out = tuple(np.broadcast_shapes(a_shape, b_shape))
            sweep.add(f"{kind}_random_{i}", kind, {}, [(act("a", a_shape), int8(rng, a_shape)),
                                                      (act("b", b_shape), int8(rng, b_shape))], [act("y", out)])
    return sweep


def cmsis_cases(sweep: BoardSweep, target: str) -> tuple[bytes, list[harness.Case], list[int]]:
    """The sweep's program, the CMSIS-NN case of every op that has one and those ops' output positions;
    asserts that exactly the overrunning dims were refused."""
    program = sweep.program(target)
    graph = deserialize(program)
    value_of = dict(zip(sweep.inputs, sweep.values, strict=True))
    cases, kept = [], []
    for i, op in enumerate(graph.ops):
        dims = [nhwc_dims(tuple(graph.tensors[n].shape)) for n in op.inputs]
        try:
            cases.append(ops.case_for_op(graph, op, [value_of[n] for n in op.inputs], name=op.outputs[0]))
            kept.append(i)
            assert not walk_overruns(*dims)
        except NotImplementedError:
            assert walk_overruns(*dims), (op.outputs[0], dims)
    assert len(kept) >= 400 and len(kept) < len(graph.ops)
    return program, cases, kept


def assert_same(ours: list[np.ndarray], theirs: list[np.ndarray], names: list[str], where: str) -> None:
    bad = [n for o, t, n in zip(ours, theirs, names, strict=True) if o.tobytes() != t.tobytes() or o.shape != t.shape]
    assert not bad, f"{where}: {len(bad)} of {len(names)} cases differ: {bad[:10]}"


def test_minmax_matches_cmsis_nn_on_host(cmsis_nn_root):
    sweep = minmax_sweep(seed=31)
    program, cases, kept = cmsis_cases(sweep, "cortex-m4")
    python = execute(deserialize(program), sweep.values)
    host_c, _ = cruntime.run_program(program, sweep.values)
    cmsis = harness.run_host(cases, cmsis_nn_root)
    names = [sweep.outputs[i] for i in kept]
    assert_same([python[i] for i in kept], [host_c[i] for i in kept], names, "host Python vs host C")
    assert_same([host_c[i] for i in kept], cmsis, names, "host C vs CMSIS-NN on the host")


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
def test_minmax_matches_cmsis_nn_on_board(cmsis_nn_root, target):
    sweep = minmax_sweep(seed=31)
    program, cases, kept = cmsis_cases(sweep, target)
    ours, _, _ = firmware.run_on_qemu(program, sweep.values, target)
    cmsis, instructions = harness.run_board(cases, target, cmsis_nn_root)
    assert len(instructions) == len(cases)
    assert_same([ours[i] for i in kept], cmsis, [sweep.outputs[i] for i in kept], f"ours vs CMSIS-NN on {target}")
