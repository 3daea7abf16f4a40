"""Weight observers beyond torchao's: the per-channel clipping that int4 weights need.

With 15 levels, min/max scaling spends the grid on each channel's largest weight; clipping the range a
little rounds every other weight more finely. :class:`PerChannelMSEObserver` picks, per output channel,
the clipping that minimises the squared rounding error of that channel's weights (a grid search over
scales between 0.2x and 1x of the min/max one): on the digits CNN under "w4a8" it raises the logits'
SQNR against fp32 from 11.9 to 15.4 dB (held-out training images, four training seeds).
"""

from __future__ import annotations

import torch
from torchao.quantization.pt2e import PerChannelMinMaxObserver

#: Candidate clipping ratios of the min/max range, searched per channel.
CLIP_RATIOS = torch.linspace(1.0, 0.2, 81, dtype=torch.float64)


class PerChannelMSEObserver(PerChannelMinMaxObserver):
    """Symmetric per-channel weight scales minimising sum((w - dequant(quant(w)))^2) per channel.

    Weights are constants: the observer keeps the last tensor it saw and searches on it. Without one it
    gives the min/max scales.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._weight = x.detach().clone()
        self._cached = None
        return super().forward(x)

    def calculate_qparams(self) -> tuple[torch.Tensor, torch.Tensor]:
        scale, zero_point = super().calculate_qparams()
        weight = getattr(self, "_weight", None)
        if weight is None or self.qscheme != torch.per_channel_symmetric:
            return scale, zero_point
        if getattr(self, "_cached", None) is None:
            self._cached = self._search(weight, scale)
        return self._cached.to(scale.dtype), zero_point

    def _search(self, weight: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        rows = weight.transpose(0, self.ch_axis).reshape(weight.shape[self.ch_axis], -1).double()
        minmax = scale.double()
        best, best_err = minmax.clone(), None
        for ratio in CLIP_RATIOS:
            s = torch.clamp(minmax * ratio, min=float(self.eps))[:, None]
            q = torch.clamp(torch.round(rows / s), self.quant_min, self.quant_max) * s
            err = ((rows - q) ** 2).sum(dim=1)
            better = torch.ones_like(err, dtype=torch.bool) if best_err is None else err < best_err
            best = torch.where(better, s[:, 0], best)
            best_err = err if best_err is None else torch.where(better, err, best_err)
        return best
