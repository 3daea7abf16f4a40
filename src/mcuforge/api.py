"""The public API: compile a model, save/load the program, run it on the host.

:class:`Program`, :class:`OpRecord` and :func:`load` live in the layers they describe (mcuforge.compiled,
mcuforge.records) and are re-exported here; ``compile`` dispatches to the pipeline of one scheme
(mcuforge.compiler) or to the precision search (mcuforge.accuracy.auto).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import torch
from torch import nn

from .capture import as_input_tuple
from .compiled import DEBUG_SUFFIX, Program, load
from .compiler import check_memory, compile_fixed, random_calibration
from .quantize import ObserverConfig, Scheme
from .records import OpRecord
from .regions import BoardSpec
from .targets import get_target

__all__ = ["DEBUG_SUFFIX", "OpRecord", "Program", "compile", "load"]


def compile(  # noqa: A001 - the public name the flow reads as
    model: nn.Module,
    example_inputs: torch.Tensor | Sequence[torch.Tensor],
    calibration: Iterable[Any] | None = None,
    target: str | None = None,
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
    flash_budget: int | None = None,
    ram_budget: int | None = None,
    patches: int | tuple[int, int] | None = None,
    board: str | BoardSpec | None = None,
) -> Program:
    """Capture, quantize (PT2E, calibrated on ``calibration``), lower, plan: a :class:`Program`.

    ``calibration`` is any iterable of input tuples (a DataLoader works; extra items such as
    labels are ignored). Without it, random normal inputs are used and a warning says so.
    ``observers`` overrides the calibration observers (histogram activations, per-channel
    min/max weights by default). ``quantization``: the scheme, uniform over the model -- "int8"
    (int8 activations and weights, the default), "w4a8" (int4 weights for convolutions and
    linear layers, packed two per byte: about half the flash) or "a16w8" (int16 activations with int8
    weights and int64 bias on CMSIS-NN's s16 kernels, for the ops that have one; the others stay int8
    between inserted int8 <-> int16 conversions); each op's ``precision`` says what it runs in. ``target``: a Cortex-M
    ("cortex-m55"), or a Cortex-M with an Ethos-U NPU ("cortex-m55+ethos-u55-128"): the ops the
    NPU can run are then delegated to it, compiled by Vela (``prog.delegates``; needs the
    ``ethos-u`` extra).

    ``equalization``: cross-layer equalization of consecutive layers with a ReLU (or nothing) between
    (Nagel et al. 2019; scales from the calibration ranges of the activation between); ``bias_correction``:
    empirical bias correction -- each layer's mean output error per channel against the fp32 model, measured
    on the calibration data with the layers before it quantized and corrected, taken out of its int32 bias
    (``mcuforge.equalize``). None, the defaults: what lost on no model of
    benchmarks/results/equalization.md -- no equalization, bias correction of the layers with 4-bit weights.
    ``guard=True``: the configurations asked for (without; with each correction) are scored by
    cross-validation on the calibration data and the best is kept (``prog.meta["corrections"]`` gives the
    scores); off by default: with a few calibration items its choice is noisy (docs/accuracy.md has the
    figures).

    ``precision``: the same as ``quantization`` for one scheme everywhere; ``"auto"`` chooses each weighted
    layer's precision (int8, W4A8 or A16W8) from a sensitivity analysis on the calibration data
    (``mcuforge.accuracy``) to meet ``flash_budget`` (program bytes) and ``ram_budget`` (arena bytes; both
    default to ``flash_bytes`` / ``ram_bytes``) with the least loss of output SQNR; ``prog.meta
    ["precision_choice"]`` (and ``mcuforge info``) gives each layer's precision and why. A budget no choice
    meets raises ``mcuforge.accuracy.auto.BudgetError`` naming the smallest program.

    Without ``precision="auto"``, ``ram_budget`` is met by patch-based execution (``mcuforge.patches``, MCUNetV2)
    when the whole program's arena exceeds it: the leading ops run over a grid of spatial patches (split point and
    grid chosen for the fewest extra MACs); a program that fits is left whole. ``patches`` (n, or (rows, cols))
    forces that grid. ``prog.patch_plan`` (and ``mcuforge info``) gives the arena before and after and the MAC
    overhead. Without either, the plan is today's exactly.

    ``board``: a named board (``mcuforge.regions.BOARDS``: "stm32h743", "stm32l4r5", "nrf5340", "mps3-an547")
    instead of the target's reference board: its core is the target (``target`` defaults to it), its flash
    holds the program and its RAM regions the arena -- in the fastest region that holds it whole, else split
    across them, the shortest-lived buffers in the fastest (``prog.memory_plan``); a program that fits no split
    is refused with :class:`mcuforge.regions.RegionError`.

    ``model`` may also be a model from :func:`mcuforge.prepare_qat`, trained: its frozen fake quants give the
    qparams (``calibration`` and the quantization options are then not used; ``mcuforge.qat``).

    ``ram_budget`` / ``flash_budget`` (bytes of arena / of program file) are kept with every precision: a
    program over either (after patch-based execution, for ``ram_budget``) is refused with
    :class:`mcuforge.budget.BudgetError`, naming the op and the tensors at the RAM peak (or the largest
    constants) and the bytes missing.

    The program must fit the target's reference board (``mcuforge.targets``: its QEMU board, or a named
    part) or the part given by ``flash_bytes`` / ``ram_bytes``: else :class:`mcuforge.fit.FitError` says by
    how much and which constants or activations are the largest. ``fit_check=False`` skips the check.
    """
    from .ethosu.npu import split_target  # "cortex-m55+ethos-u55-128": the CPU, then the NPU to delegate to
    from .qat.prepare import is_qat_model
    from .regions import resolve_target

    target, spec = resolve_target(target, board)
    get_target(split_target(target)[0])  # an unknown target fails here, before any precision search
    if precision == "auto" and not is_qat_model(model):  # a QAT model keeps its trained qparams (compile_fixed)
        return _compile_auto(model, example_inputs, calibration, target, progress=progress, observers=observers,
                             flash_bytes=flash_bytes, ram_bytes=ram_bytes, fit_check=fit_check,
                             equalization=equalization, bias_correction=bias_correction,
                             flash_budget=flash_budget, ram_budget=ram_budget, board=spec)
    return compile_fixed(model, example_inputs, calibration, target, progress=progress, observers=observers,
                         quantization=quantization, flash_bytes=flash_bytes, ram_bytes=ram_bytes, fit_check=fit_check,
                         equalization=equalization, bias_correction=bias_correction, guard=guard,
                         precision=precision, ram_budget=ram_budget, patches=patches, flash_budget=flash_budget,
                         board=spec, stacklevel=3)


def _compile_auto(model: nn.Module, example_inputs: Any, calibration: Iterable[Any] | None, target: str, *,
                  progress: bool, observers: ObserverConfig | None, flash_bytes: int | None, ram_bytes: int | None,
                  fit_check: bool, equalization: bool, bias_correction: bool, flash_budget: int | None,
                  ram_budget: int | None, board: Any) -> Program:
    from .accuracy.auto import compile_auto
    from .capture import reusing_captures
    from .quantize import calibration_batches

    start = time.perf_counter()
    example = as_input_tuple(example_inputs)
    if calibration is None:
        warnings.warn("no calibration data given: calibrating (and choosing precisions) on random normal "
                      "inputs; give representative inputs (calibration=).", stacklevel=3)
        calibration = random_calibration(example)
    items = list(calibration_batches(calibration, len(example)))
    options: dict[str, Any] = {"equalization": equalization, "bias_correction": bias_correction}
    if observers is not None:
        options["observers"] = observers
    with reusing_captures():  # the search compiles this one model ~25 times: one torch.export, copied
        prog = compile_auto(model, example, items, target, flash_budget if flash_budget is not None else flash_bytes,
                            ram_budget if ram_budget is not None else ram_bytes, progress, options)
    check_memory(prog.graph, target, flash_bytes, ram_bytes, fit_check=fit_check, flash_budget=flash_budget,
                 ram_budget=ram_budget, board=board)  # as every compile
    prog.compile_seconds = time.perf_counter() - start
    prog.meta.update({"model": type(model).__name__, "quantization": "auto"})
    return prog
