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

Learned scales (``prepare_qat(learn_scales=True)``, 4-bit weights): instead of observing, the weight's fake
quant trains its per-channel scale by gradient, as LSQ (Esser et al., "Learned Step Size Quantization") does,
in the log domain as TQT (Jain et al., "Trained Quantization Thresholds") does so that Adam's step is a relative
one whatever the scale's size: ``log_scale`` is a parameter and the forward is torch's learnable fake quant at
``exp(log_scale)``. While it learns, the ``scale`` buffer follows it (the int32 bias's derived scale reads the
buffer); frozen, the buffer takes the learned scale, snapped (snap.py), and the forward is the frozen one.
"""

from __future__ import annotations

import functools
import math

import torch
from torchao.quantization.pt2e import DerivedObserverOrFakeQuantize
from torchao.quantization.pt2e.fake_quantize import FakeQuantize


class ObserverFakeQuantize(FakeQuantize):
    """torch's FakeQuantize over ``observer_cls``; frozen (observer disabled), its qparams are its buffers."""

    observer_cls: type = object
    weight: bool = False

    def __init__(self, **kwargs: object) -> None:
        super().__init__(observer=self.observer_cls, **kwargs)

    def learn_scale(self) -> None:
        """From now on, while not frozen, the scale trains (``log_scale``, a parameter) instead of observing."""
        self.log_scale = torch.nn.Parameter(self.scale.detach().clone().float().clamp_min(1e-12).log())

    def _learned_forward(self, X: torch.Tensor) -> torch.Tensor:  # noqa: N803 - torch's name
        scale = self.log_scale.exp()
        with torch.no_grad():
            self.scale.copy_(scale.detach().reshape(self.scale.shape))
        zero_point = self.zero_point.float()
        # LSQ's gradient scale: 1 / sqrt(weights per scale x the positive levels)
        grad_factor = 1.0 / math.sqrt(X.numel() / max(self.scale.numel(), 1) * self.quant_max)
        if self.is_per_channel:
            return torch._fake_quantize_learnable_per_channel_affine(
                X, scale, zero_point, self.ch_axis, self.quant_min, self.quant_max, grad_factor)
        return torch._fake_quantize_learnable_per_tensor_affine(
            X, scale.reshape(1), zero_point.reshape(1), self.quant_min, self.quant_max, grad_factor)

    @torch.jit.export
    def enable_observer(self, enabled: bool = True) -> None:
        super().enable_observer(enabled)
        if not enabled and getattr(self, "log_scale", None) is not None:
            with torch.no_grad():  # frozen: the buffer the program reads is the learned scale, snapped
                self.scale.copy_(self.log_scale.detach().exp().reshape(self.scale.shape))
                from .snap import snap

                snap(self)

    def forward(self, X: torch.Tensor) -> torch.Tensor:  # noqa: N803 - torch's name
        observer = self.activation_post_process
        observing = self.observer_enabled[0] == 1
        if observing and self.fake_quant_enabled[0] == 1 and getattr(self, "log_scale", None) is not None:
            return self._learned_forward(X)
        if self.weight and observing and hasattr(observer, "reset_min_max_vals"):
            observer.reset_min_max_vals()
        if observing and getattr(self, "snap_to", None) is not None:
            self.activation_post_process(X.detach())  # observe, store the scale snapped (snap.py), then quantize
            scale, zero_point = observer.calculate_qparams()
            self.scale.resize_(scale.shape).copy_(scale)
            self.zero_point.resize_(zero_point.shape).copy_(zero_point)
            from .snap import snap

            snap(self)
            self.enable_observer(False)
            try:
                return super().forward(X)
            finally:
                self.enable_observer(True)
        return super().forward(X)

    def calculate_qparams(self) -> tuple[torch.Tensor, torch.Tensor]:
        learned = getattr(self, "log_scale", None) is not None
        if self.observer_enabled[0] == 1 and getattr(self, "snap_to", None) is None and not learned:
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


class BiasFakeQuantize(DerivedObserverOrFakeQuantize):
    """The int32 bias, fake-quantized in the forward as convert_pt2e quantizes it (PT2E's derived observer passes
    the float bias through): scale input_scale x weight_scale from the same function, rounded by the same
    quantize op. Left float, the bias's rounding (up to half of input_scale x weight_scale) shifts outputs by up
    to half the requantization multiplier in output steps, enough to move a few percent of the codes across a
    rounding boundary; fake-quantized, the forward's bias is the program's exactly."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not all(getattr(fq, "fake_quant_enabled", torch.ones(1))[0] == 1 for fq in self.obs_or_fqs):
            return x  # calibrating: float values, as PTQ's observers see them
        scale, zero_point = self.calculate_qparams()
        ops = torch.ops.quantized_decomposed
        if scale.numel() > 1 or self.qscheme in (torch.per_channel_symmetric, torch.per_channel_affine):
            q = ops.quantize_per_channel(x, scale, zero_point, self.ch_axis, self.quant_min, self.quant_max, self.dtype)
            dq = ops.dequantize_per_channel(q, scale, zero_point, self.ch_axis, self.quant_min, self.quant_max,
                                            self.dtype)
        else:
            s, z = float(scale.reshape(-1)[0]), int(zero_point.reshape(-1)[0])
            q = ops.quantize_per_tensor(x, s, z, self.quant_min, self.quant_max, self.dtype)
            dq = ops.dequantize_per_tensor(q, s, z, self.quant_min, self.quant_max, self.dtype)
        return x + (dq - x).detach()  # straight-through: the bias trains as a float


def fake_quantize_biases(model: torch.nn.Module) -> int:
    """PT2E's derived (bias) observers of ``model`` become :class:`BiasFakeQuantize` (in place); how many."""
    count = 0
    for m in model.modules():
        if type(m) is DerivedObserverOrFakeQuantize and m.dtype == torch.int32:
            m.__class__ = BiasFakeQuantize
            count += 1
    return count
