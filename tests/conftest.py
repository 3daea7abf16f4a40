import ctypes
import functools
import warnings

import numpy as np
import pytest
import torch

import mcuforge
from mcuforge.ir import DTYPES
from mcuforge.runtime import execute
from mcuforge.zoo import MODELS


def calibration_set(example, count, seed):
    gen = torch.Generator().manual_seed(seed)
    return [tuple(torch.randn(x.shape, generator=gen) for x in example) for _ in range(count)]


@functools.cache
def compiled(name: str, target: str = "cortex-m55"):
    """(model, example, program) for a zoo model, calibrated on 16 random normal inputs."""
    model, example = MODELS[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = mcuforge.compile(model, example, calibration=calibration_set(example, 16, seed=1),
                                target=target, progress=False)
    return model, example, prog


def program_inputs(graph, rng):
    """Random inputs in the program's dtype and layout (full int8 range for int8 inputs)."""
    values = []
    for name in graph.inputs:
        t = graph.tensors[name]
        dtype = DTYPES[t.dtype]
        if np.issubdtype(dtype, np.integer):
            info = np.iinfo(dtype)
            values.append(rng.integers(max(info.min, -128), min(info.max, 127) + 1, t.shape).astype(dtype))
        else:
            values.append(rng.standard_normal(t.shape).astype(dtype))
    return values


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def pytest_generate_tests(metafunc):
    """Every test of tests/test_kernels_*.py runs twice: with the kernels' compiled loops (mcuforge.kernels.jit)
    and with the numpy routes alone (``_kernel_route``), so both stay checked against the references."""
    if metafunc.module.__name__.startswith("test_kernels_"):
        metafunc.fixturenames.append("kernel_route")
        metafunc.parametrize("kernel_route", ["jit", "numpy"])


@pytest.fixture(autouse=True)
def _kernel_route(request, monkeypatch):
    """The route of a test parametrized by ``pytest_generate_tests`` (others run as configured)."""
    callspec = getattr(request.node, "callspec", None)
    route = callspec.params.get("kernel_route") if callspec is not None else None
    if route is None:
        return
    import sys

    from mcuforge.kernels import jit

    # Each route starts from empty kernel caches (tests count the tables they build).
    for name, module in list(sys.modules.items()):
        if name.startswith("mcuforge.kernels."):
            for value in list(vars(module).values()):
                if callable(getattr(value, "cache_clear", None)) and getattr(value, "__module__", None) == name:
                    value.cache_clear()
    if route == "numpy":
        monkeypatch.setattr(jit, "ENABLED", False)
    elif not jit.ENABLED:
        pytest.skip("the compiled loops are off (numba missing or MCUFORGE_JIT=0)")


def op_outputs(graph, xs):
    """Every tensor's value in one host run of ``graph`` on ``xs`` (inputs and each op's outputs)."""
    values = dict(zip(graph.inputs, xs, strict=True))

    class Observer:
        def run_start(self, arena): ...
        def op_start(self, index, op): ...
        def run_end(self, status): ...

        def op_end(self, index, op, outs):
            for n, o in zip(op.outputs, outs, strict=True):
                values[n] = np.array(o[0])

    execute(graph, xs, Observer())
    return values


def invoke_host_context(lib, ctx, graph, xs):
    """Set ``xs`` as the inputs of an initialized host C context ``ctx`` (``lib``: the host runtime's ctypes
    library), run one ``mf_invoke`` and return copies of the outputs as ``graph`` declares them."""
    for i, x in enumerate(xs):
        x = np.ascontiguousarray(x)
        assert lib.mf_set_input(ctx, i, x.ctypes.data, x.nbytes) == 0
    assert lib.mf_invoke(ctx, None) == 0
    outs = []
    for i, name in enumerate(graph.outputs):
        n = ctypes.c_size_t()
        ptr = lib.mf_output(ctx, i, ctypes.byref(n))
        t = graph.tensors[name]
        outs.append(np.frombuffer(ctypes.string_at(ptr, n.value), t.dtype).reshape(t.shape).copy())
    return outs


def pytest_addoption(parser):
    parser.addoption("--cmsis-nn", metavar="DIR", default=None,
                     help="Arm CMSIS-NN source tree for the tests against the real library "
                          "(default: $MCUFORGE_CMSIS_NN or ../shared/third_party/cmsis-nn)")
    parser.addoption("--update-guards", action="store_true", default=False,
                     help="tests/test_guards.py: write the measured figures into tests/guards/*.json instead of "
                          "checking them (after a change that moves them on purpose)")


@pytest.fixture(scope="session")
def cmsis_nn_root(request):
    """The CMSIS-NN source tree of ``--cmsis-nn`` (or the default); the test skips, saying why, without it."""
    from mcuforge import cmsis_nn

    option = request.config.getoption("--cmsis-nn")
    reason = cmsis_nn.missing_reason(option)
    if reason:
        pytest.skip(reason)
    return cmsis_nn.locate(option)
