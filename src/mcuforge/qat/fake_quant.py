"""Fake quantization with mcuforge's own observers: the same qparams as post-training quantization.

PT2E builds a QAT model's fake-quant modules from the quantizer's specs
(``spec.observer_or_fake_quant_ctr.with_args(dtype, quant_min, quant_max, qscheme, ch_axis)``), so QAT
only swaps each spec's observer class for a fake-quant class that wraps it: scales, zero points,
per-channel axes, 4-bit ranges and shared/fixed/derived specs all stay the quantizer's. Two details:

- PT2E drops ``ch_axis`` unless the class name contains "PerChannel": the wrapper's name carries the
  observer's name.
- ``calculate_qparams`` of torch's FakeQuantize asks the observer again. Once an observer is frozen the
  forward uses the stored ``scale`` / ``zero_point`` buffers, and convert_pt2e (and the int32 bias's
  derived scale) must read exactly those: a frozen fake quant returns its buffers.

A weight's fake quant observes only the current weights (its min/max restarts each step): weights are
constants of the program, and a range kept from an earlier step of training would waste levels.
"""

from __future__ import annotations

import functools

import torch
from torchao.quantization.pt2e.fake_quantize import FakeQuantize


class ObserverFakeQuantize(FakeQuantize):
    """torch's FakeQuantize over ``observer_cls``; frozen (observer disabled), its qparams are its buffers."""

    observer_cls: type = object
    weight: bool = False

    def __init__(self, **kwargs: object) -> None:
        super().__init__(observer=self.observer_cls, **kwargs)

    def forward(self, X: torch.Tensor) -> torch.Tensor:  # noqa: N803 - torch's name
        observer = self.activation_post_process
        if self.weight and self.observer_enabled[0] == 1 and hasattr(observer, "reset_min_max_vals"):
            observer.reset_min_max_vals()
        return super().forward(X)

    def calculate_qparams(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self.observer_enabled[0] == 1:
            return self.activation_post_process.calculate_qparams()
        return self.scale.detach().clone(), self.zero_point.detach().clone()

    @property
    def frozen(self) -> bool:
        return bool(self.observer_enabled[0] == 0)


@functools.cache
def fake_quant_class(observer_cls: type, weight: bool = False) -> type:
    """One class per observer (equal specs must stay equal: PT2E shares one module between them)."""
    role = "Weight" if weight else ""
    return type(f"{role}FakeQuantize{observer_cls.__name__}", (ObserverFakeQuantize,),
                {"observer_cls": observer_cls, "weight": weight, "__module__": __name__})


def fake_quants(model: torch.nn.Module) -> list[ObserverFakeQuantize]:
    """The model's fake-quant modules of mcuforge's observers (fixed-qparams ones excluded)."""
    return [m for m in model.modules() if isinstance(m, ObserverFakeQuantize)]


def set_observers(model: torch.nn.Module, enabled: bool, weights: bool | None = None) -> None:
    """Enable or freeze observers: all of them (``weights`` None), only weights' (True), only activations'."""
    for fq in fake_quants(model):
        if weights is None or fq.weight == weights:
            fq.enable_observer(enabled)


def set_fake_quant(model: torch.nn.Module, enabled: bool) -> None:
    """Fake quantization on or off in every fake-quant module (fixed-qparams ones included)."""
    for m in model.modules():
        if isinstance(m, FakeQuantize):
            m.enable_fake_quant(enabled)
