"""Post-training quantization with PT2E and mcuforge's Cortex-M quantizer."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence

import torch
from torch import fx
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
from tqdm.auto import tqdm

from ..capture import as_input_tuple
from ..nodes import module_path
from .gptq import gptq_weights
from .linear_choice import gram_collector, input_grams
from .quantizer import CortexMQuantizer, ObserverConfig
from .schemes import SCHEMES, Scheme, get_scheme

__all__ = ["SCHEMES", "CortexMQuantizer", "ObserverConfig", "Scheme", "calibration_batches", "get_scheme", "quantize"]


def calibration_batches(calibration: Iterable, num_inputs: int) -> Iterable[tuple[torch.Tensor, ...]]:
    """Each item is a tensor or a tuple/list of tensors; the first ``num_inputs`` are the model's
    inputs, so a labelled DataLoader yielding ``(x, y)`` works for a one-input model."""
    for i, item in enumerate(calibration):
        inputs = as_input_tuple(item)
        if len(inputs) < num_inputs:
            raise ValueError(f"calibration item {i} has {len(inputs)} tensors; the model takes {num_inputs}")
        yield inputs[:num_inputs]


def quantize(
    captured: fx.GraphModule,
    calibration: Iterable[Sequence[torch.Tensor]],
    num_inputs: int,
    *,
    progress: bool = True,
    observers: ObserverConfig | None = None,
    threads: int | None = 1,
    scheme: Scheme | None = None,
) -> fx.GraphModule:
    """prepare_pt2e -> run every calibration item -> convert_pt2e; returns the reference
    quantized model (float ops between quantize/dequantize nodes, int8 weights folded). ``scheme``: the
    quantization scheme (mcuforge.quantize.schemes; int8 by default).

    ``threads``: torch's intra-op threads while calibrating (None: leave torch's setting). One by
    default: calibration items are single samples of small models, where intra-op threads cost more
    than they save (on a shared 2-core machine efficientnet_b0 compiled in 3.0 CPU s with one thread,
    14.2 with two), and with one thread the float results, hence the qparams, do not depend on the
    machine's core count. The setting is restored afterwards.
    """
    with _torch_threads(threads):
        return _quantize(captured, calibration, num_inputs, progress, observers, scheme)


@contextlib.contextmanager
def _torch_threads(threads: int | None) -> Iterator[None]:
    before = torch.get_num_threads()
    if threads is None or threads == before:
        yield
        return
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _quantize(captured: fx.GraphModule, calibration: Iterable[Sequence[torch.Tensor]], num_inputs: int,
              progress: bool, observers: ObserverConfig | None, scheme: Scheme | None) -> fx.GraphModule:
    scheme = scheme or SCHEMES["int8"]
    if scheme.any_gptq:
        calibration = list(calibration_batches(calibration, num_inputs))  # read twice: by GPTQ, then the observers
        gptq_weights(captured, calibration, lambda node: scheme.layer_scheme(module_path(node)).gptq)
    collector = gram_collector(captured, scheme)
    if collector is not None:  # the per-channel choice needs the linear layers' inputs: one pass of the float graph
        calibration = list(calibration_batches(calibration, num_inputs))
        _run_each(calibration, num_inputs, collector.run)
    prepared = prepare_pt2e(captured, CortexMQuantizer(observers, scheme, linear_inputs=input_grams(collector)))
    total = len(calibration) if hasattr(calibration, "__len__") else None
    batches = tqdm(calibration_batches(calibration, num_inputs), total=total, desc="calibrating", unit="batch",
                   disable=not progress)
    if _run_each(batches, num_inputs, prepared) == 0:
        raise ValueError("the calibration data is empty: give at least one input tuple")
    return convert_pt2e(prepared)


def _run_each(calibration: Iterable[Sequence[torch.Tensor]], num_inputs: int, run: Callable[..., object]) -> int:
    """``run(*inputs)`` on every calibration item, without gradients; an item that fails is named with its
    index and shapes. Returns the number of items."""
    seen = 0
    with torch.no_grad():
        for inputs in calibration_batches(calibration, num_inputs):
            try:
                run(*inputs)
            except Exception as exc:  # noqa: BLE001 - re-raised with the item's index and shapes
                shapes = ", ".join(str(list(x.shape)) for x in inputs)
                raise ValueError(f"calibration item {seen} (input shapes {shapes}) failed in the model: "
                                 f"{type(exc).__name__}: {exc}") from exc
            seen += 1
    return seen
