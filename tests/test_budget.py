"""Budgets are kept, never ignored: ``compile(..., ram_budget=, flash_budget=)`` with any precision returns a
program that meets them or refuses with the op and tensors at the RAM peak (or the largest constants) and the
bytes missing (mcuforge.budget)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import torch
from torch import nn

import mcuforge
from mcuforge.budget import BudgetError, decide, describe_peak, peak
from mcuforge.fit import FitError
from mcuforge.ir import Graph, Op, Tensor
from mcuforge.lower.fallback import aten_fp32_attrs
from mcuforge.plan import arena_lower_bound, plan_arena


def _model() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 4, 3, stride=2), nn.Flatten(),
                          nn.Linear(4 * 7 * 7, 10)).eval()
    return model, (torch.randn(1, 3, 16, 16),)


def _compile(**kwargs: object) -> mcuforge.Program:
    model, x = _model()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # random calibration
        return mcuforge.compile(model, x, target="cortex-m4", progress=False, **kwargs)


@pytest.fixture(scope="module")
def free() -> mcuforge.Program:
    return _compile()


def _chain(sizes: list[int]) -> Graph:
    """x -> op0 -> t0 -> op1 -> t1 ...: fp32 clones of the given byte sizes (a plain chain, no in-place)."""
    tensors = {"x": Tensor("x", (1, sizes[0]), "int8")}
    ops = []
    prev = "x"
    for i, n in enumerate(sizes[1:]):
        tensors[f"t{i}"] = Tensor(f"t{i}", (1, n), "int8")
        ops.append(Op("aten_fp32", [prev], [f"t{i}"], aten_fp32_attrs("aten.clone.default", [], {}),
                      backend="fp32", debug={"module": f"layer{i}"}))
        prev = f"t{i}"
    graph = Graph(tensors, ops, ["x"], [prev], target="cortex-m4")
    plan_arena(graph)
    return graph


def test_peak_names_the_op_and_the_live_buffers():
    graph = _chain([64, 1000, 4000, 32])
    p = peak(graph)
    assert p.op == 1 and p.live == (("t1", 4000), ("t0", 1008))  # op 1 reads t0 while it writes t1
    assert p.bytes == arena_lower_bound(graph)
    assert describe_peak(graph) == ("at op 1 (aten_fp32 'layer1') the live buffers are t1 (4,000 B), t0 (1,008 B) "
                                    "(5,008 B in all)")


def test_decide_refuses_ram_and_flash_with_the_shortfall():
    graph = _chain([64, 1000, 4000, 32])
    decide(graph, 5000, ram_budget=graph.ram_bytes, flash_budget=5000)  # exactly enough
    with pytest.raises(BudgetError, match=rf"ram_budget 512 B: the arena needs {graph.ram_bytes:,} B; at op 1 "
                                          rf".*short by {graph.ram_bytes - 512:,} B; and flash_budget 4,999 B: the "
                                          r"program needs 5,000 B .* short by 1 B"):
        decide(graph, 5000, ram_budget=512, flash_budget=4999)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="ram_budget must be a positive number of bytes"):
            decide(graph, 5000, ram_budget=bad)  # type: ignore[arg-type]
    assert issubclass(BudgetError, FitError)
    from mcuforge.accuracy import auto

    assert issubclass(auto.BudgetError, BudgetError)  # precision="auto" refuses with the same class


def test_compile_refuses_a_ram_budget_it_cannot_meet(free: mcuforge.Program):
    need = free.arena_bytes
    prog = _compile(ram_budget=need)  # exactly enough: the same program
    assert prog.to_bytes() == free.to_bytes()
    # Below the input image's 768 B no patch grid can help (mcuforge.patches keeps the input whole): refused,
    # naming the unpatched program's peak.
    with pytest.raises(BudgetError) as info:
        _compile(ram_budget=512)
    msg = str(info.value)
    p = peak(free.graph)
    op = free.graph.ops[p.op]
    assert f"ram_budget 512 B: the arena needs {need:,} B; at op {p.op} ({op.kind}" in msg
    assert f"short by {need - 512:,} B" in msg
    for key, size in p.live[:4]:
        assert (f"op {key}'s scratch" if isinstance(key, int) else str(key)) in msg and f"({size:,} B)" in msg


def test_compile_refuses_a_flash_budget_with_any_precision(free: mcuforge.Program):
    with pytest.raises(BudgetError, match=rf"flash_budget 1,000 B: the program needs {free.program_bytes:,} B .*"
                                          rf"short by {free.program_bytes - 1000:,} B"):
        _compile(flash_budget=1000)
    w4 = _compile(quantization="w4a8", ram_budget=free.arena_bytes * 2)  # met: compiles as without a budget
    assert w4.program_bytes < free.program_bytes
    with pytest.raises(BudgetError, match=re.escape(f"flash_budget {w4.program_bytes - 1:,} B") + ".*short by 1 B"):
        _compile(quantization="w4a8", flash_budget=w4.program_bytes - 1)
    # fit_check=False skips the board's check, never a budget the caller gave
    with pytest.raises(BudgetError, match="ram_budget 16 B"):
        _compile(ram_budget=16, fit_check=False)
    assert np.isfinite(free.arena_bytes)
