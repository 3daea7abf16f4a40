"""The compile pipeline of one fixed quantization scheme (or a QAT model): capture, float passes, quantize,
lower, plan. ``mcuforge.compile`` (``mcuforge.api``) calls it, and so does the precision search
(``mcuforge.accuracy``) for each variant it measures: that is why it lives under both.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import torch
from torch import nn

from .budget import decide
from .capture import as_input_tuple, capture, check_compilable
from .compiled import Program
from .fit import check_fit
from .float_passes.cleanup import prepare_float_graph
from .float_passes.decompose import decompose
from .lower import lower_to_ir
from .plan import choose_concat_placement, choose_free_in_place, trim_optional_scratch
from .quantize import ObserverConfig, Scheme, get_scheme, quantize
from .targets import get_target


def random_calibration(example: tuple[torch.Tensor, ...], count: int = 16) -> list[tuple[torch.Tensor, ...]]:
    """``count`` random normal inputs shaped as ``example``: the calibration when none is given."""
    gen = torch.Generator().manual_seed(0)
    # Integer inputs (indices) cannot be drawn from a normal: the example itself stands in for them.
    return [tuple(torch.randn(x.shape, generator=gen, dtype=x.dtype) if x.is_floating_point() else x
                  for x in example) for _ in range(count)]


def compile_fixed(
    model: nn.Module,
    example_inputs: torch.Tensor | Sequence[torch.Tensor],
    calibration: Iterable[Any] | None = None,
    target: str = "cortex-m55",
    *,
    progress: bool = True,
    observers: ObserverConfig | None = None,
    quantization: str | Scheme = "int8",
    flash_bytes: int | None = None,
    ram_bytes: int | None = None,
    fit_check: bool = True,
    equalization: bool | None = None,
    bias_correction: bool | None = None,
    guard: bool = False,
    precision: str | None = None,
    ram_budget: int | None = None,
    patches: int | tuple[int, int] | None = None,
    flash_budget: int | None = None,
    board: Any = None,
    stacklevel: int = 2,
) -> Program:
    """:func:`mcuforge.compile` with one scheme for the whole model (``precision`` is not "auto"), or of a QAT
    model: the same arguments. ``stacklevel``: the warning's, counted from here (the caller's caller's line)."""
    from .ethosu.npu import split_target  # "cortex-m55+ethos-u55-128": the CPU, then the NPU to delegate to

    cpu_target, npu = split_target(target)
    get_target(cpu_target)
    from .qat.prepare import is_qat_model

    if is_qat_model(model):  # trained with fake quantization: its own qparams, no calibration
        return compile_qat(model, example_inputs, calibration, target, flash_bytes=flash_bytes, ram_bytes=ram_bytes,
                           fit_check=fit_check, flash_budget=flash_budget, ram_budget=ram_budget, board=board,
                           stacklevel=stacklevel + 1)
    if precision is not None:
        quantization = precision
    scheme = get_scheme(quantization)
    start = time.perf_counter()
    example = as_input_tuple(example_inputs)
    if calibration is None:
        warnings.warn("no calibration data given: calibrating on random normal inputs; int8 accuracy "
                      "will suffer. Give representative inputs (calibration= in Python, --calibration "
                      "in the CLI).", stacklevel=stacklevel)
        calibration = random_calibration(example)
    captured = capture(model, example)
    check_compilable(captured)  # data-dependent shapes, complex or float64 values: one line, before quantizing
    decompose(captured)  # fused ops (scaled_dot_product_attention) -> ops with int8 kernels
    prepare_float_graph(captured)  # identities out; BatchNorm folded, or else a depthwise conv
    from .equalize import DEFAULT_EQUALIZATION, FOUR_BIT_LAYERS

    equalization = DEFAULT_EQUALIZATION if equalization is None else equalization
    correct: bool | str = bias_correction
    if bias_correction is None:  # by default the layers with 4-bit weights (there it never lost)
        correct = FOUR_BIT_LAYERS if scheme.any_four_bit else False
    corrections: dict[str, Any] = {}
    if equalization or correct:
        from . import equalize
        from .quantize import calibration_batches

        calibration = list(calibration_batches(calibration, len(example)))
        converted, corrections = equalize.quantize_corrected(
            captured, calibration, scheme, observers, equalization=equalization, bias_correction=correct,
            guard=guard, progress=progress)
    else:
        converted = quantize(captured, calibration, len(example), progress=progress, observers=observers,
                             scheme=scheme)
    graph = lower_to_ir(converted, cpu_target)
    if npu is not None:
        from .ethosu.partition import partition_graph

        graph, _subgraphs = partition_graph(graph, npu)
    trim_optional_scratch(graph, ram_budget)  # plans the arena; faster paths' scratch only within RAM asked for
    choose_free_in_place(graph)  # depthwise over its input where that costs no speed and lowers the arena
    choose_concat_placement(graph)  # producers write into a concat's output where that lowers the arena
    trim_optional_scratch(graph, ram_budget)  # again: within the arena those choices lowered
    patch_plan = None
    if ram_budget is not None or patches is not None:  # patch-based execution to meet the budget
        from .patches import choose

        graph, patch_plan = choose(graph, ram_budget, patches)
    check_memory(graph, target, flash_bytes, ram_bytes, fit_check=fit_check, flash_budget=flash_budget,
                 ram_budget=ram_budget, board=board)
    return Program(graph, compile_seconds=time.perf_counter() - start,
                   meta={"model": type(model).__name__, "target": target, "quantization": scheme.name,
                         **({"corrections": corrections} if corrections else {}),
                         **({"patch_plan": patch_plan.to_dict()} if patch_plan else {})},
                   reference=converted)


def compile_qat(model: Any, example_inputs: Any, calibration: Iterable[Any] | None, target: str, *,
                flash_bytes: int | None, ram_bytes: int | None, fit_check: bool, flash_budget: int | None = None,
                ram_budget: int | None = None, board: Any = None, stacklevel: int = 2) -> Program:
    """A model from :func:`mcuforge.prepare_qat`, trained: its frozen fake quants' qparams become the program's
    (``mcuforge.qat.convert``); calibration, scheme and corrections were fixed when it was prepared."""
    from .ethosu.npu import split_target
    from .qat.convert import convert_qat
    from .qat.prepare import META_KEY

    if calibration is not None:
        warnings.warn("compiling a QAT model: its qparams come from training, the calibration data is not used",
                      stacklevel=stacklevel)
    start = time.perf_counter()
    cpu_target, npu = split_target(target)
    converted = convert_qat(model, as_input_tuple(example_inputs))
    graph = lower_to_ir(converted, cpu_target)
    if npu is not None:
        from .ethosu.partition import partition_graph

        graph, _subgraphs = partition_graph(graph, npu)
    trim_optional_scratch(graph, ram_budget)  # plans the arena; faster paths' scratch only within RAM asked for
    choose_free_in_place(graph)  # depthwise over its input where that costs no speed and lowers the arena
    choose_concat_placement(graph)  # producers write into a concat's output where that lowers the arena
    trim_optional_scratch(graph, ram_budget)  # again: within the arena those choices lowered
    check_memory(graph, target, flash_bytes, ram_bytes, fit_check=fit_check, flash_budget=flash_budget,
                 ram_budget=ram_budget, board=board)
    scheme = model.meta[META_KEY].scheme
    return Program(graph, compile_seconds=time.perf_counter() - start,
                   meta={"model": "qat", "target": target, "quantization": scheme.name, "qat": True,
                         **({"qat_layers": [list(layer) for layer in scheme.layers]} if scheme.layers else {})},
                   reference=converted)


def check_memory(graph: Any, target: str, flash_bytes: int | None, ram_bytes: int | None, *, fit_check: bool,
                 flash_budget: int | None, ram_budget: int | None, board: Any) -> None:
    """The planned program into the board's regions, against the budgets (always: a budget given is kept,
    never ignored) and the board (unless ``fit_check=False``): BudgetError / FitError naming what is short.
    Without a named board, the target's reference board or the part of ``flash_bytes`` / ``ram_bytes``."""
    program_bytes = decide(graph, ram_budget=ram_budget, flash_budget=flash_budget, board=board, fit_check=fit_check)
    if fit_check and (board is None or flash_bytes is not None or ram_bytes is not None):
        check_fit(graph, program_bytes, target, flash_bytes, ram_bytes)
