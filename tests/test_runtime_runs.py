"""Many runs at once (``execute(..., runs=G)``, what ``prog.run`` does for a batch) give every run
the bytes of that run alone: the vectorized host runtime (arena views reused across ops, fp32 ops
folded over the runs or vmapped, table kernels) changes the speed, never an output byte."""

import numpy as np
import pytest

from mcuforge.runtime import execute

from conftest import compiled, program_inputs

# fp32 islands (layer norm: folded over the runs), attention (softmax, batch matmul), SE blocks
# (mul and LUT tables), residual adds.
MODELS = ("transformer_block", "custom_fallback", "mobilenet_v3_small")
RUNS = 5


@pytest.mark.parametrize("name", MODELS)
def test_many_runs_give_each_run_its_own_bytes(name):
    graph = compiled(name)[2].graph
    rng = np.random.default_rng(11)
    per_run = [program_inputs(graph, rng) for _ in range(RUNS)]
    batched = execute(graph, [np.stack(xs) for xs in zip(*per_run, strict=True)], runs=RUNS)
    for g, inputs in enumerate(per_run):
        alone = execute(graph, inputs)
        for i, (b, a) in enumerate(zip(batched, alone, strict=True)):
            assert b[g].dtype == a.dtype and b[g].shape == a.shape, (name, g, i)
            assert b[g].tobytes() == a.tobytes(), f"{name} output {i}: run {g} of {RUNS} != the same run alone"
