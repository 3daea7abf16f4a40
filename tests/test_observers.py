"""mcuforge's observers give torchao's qparams exactly (src/mcuforge/quantize/observers.py).

Each case feeds the same calibration batches to torchao's HistogramObserver and to mcuforge's, then
compares the histogram state, the searched range and the scale and zero point bit for bit. The
distributions cover what calibration meets: normal, skewed, ReLU'd, bimodal, constant, all-zero,
tiny ranges, a handful of samples, outliers, ranges that grow batch after batch (re-binning) and
histograms whose search runs to the very end.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torchao.quantization.pt2e import HistogramObserver as TorchaoHistogramObserver
from torchao.quantization.pt2e import PerChannelMinMaxObserver as TorchaoPerChannelMinMaxObserver

from mcuforge.quantize import ObserverConfig
from mcuforge.quantize import observers as obs


def _batches(kind: str, seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    n = int(torch.randint(2, 20000, (1,), generator=g))

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g)

    if kind == "normal":
        return [randn(n) * (seed + 1)]
    if kind == "skewed":
        return [randn(n).exp(), randn(n // 2 + 1).exp() * 2]
    if kind == "relu":
        return [torch.relu(randn(n)), torch.relu(randn(n) * 3 - 1)]
    if kind == "relu6":
        return [torch.clamp(randn(n) * 4, 0, 6)]
    if kind == "bimodal":
        return [torch.cat([randn(n) - 5, randn(n // 7 + 1) * 0.1 + 3])]
    if kind == "constant":
        return [torch.full((n,), float(seed) - 3.5)]
    if kind == "zeros":
        return [torch.zeros(n)]
    if kind == "tiny":
        return [randn(n) * 1e-7 + 1e-3]
    if kind == "few":
        return [randn(int(torch.randint(1, 6, (1,), generator=g)))]
    if kind == "outliers":
        return [torch.cat([randn(n), torch.tensor([40.0 * (seed + 1), -70.0])])]
    if kind == "uniform":
        return [torch.rand(n, generator=g) * 10 - 2]
    if kind == "growing":  # every batch widens the range: the histogram is re-binned each time
        return [randn(n // 4 + 2) * (i + 1) + i for i in range(5)]
    if kind == "shrinking":  # later batches inside the first range: histograms added as they are
        return [randn(n) * 5] + [randn(n // 3 + 1) * 0.5 for _ in range(3)]
    if kind == "sparse":  # most mass in one bin, a few values far out
        return [torch.cat([torch.zeros(n), randn(5)])]
    if kind == "activation_map":
        return [torch.relu(randn(4, 16, 12, 12) + 0.3) for _ in range(3)]
    raise AssertionError(kind)


KINDS = ["normal", "skewed", "relu", "relu6", "bimodal", "constant", "zeros", "tiny", "few", "outliers", "uniform",
         "growing", "shrinking", "sparse", "activation_map"]


def _observe(cls: type, batches: list[torch.Tensor], **kwargs) -> torch.nn.Module:
    observer = cls(dtype=torch.int8, quant_min=-128, quant_max=127, qscheme=torch.per_tensor_affine, **kwargs)
    for x in batches:
        observer(x)
    return observer


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind", KINDS)
def test_histogram_observer_qparams_equal_torchao(kind: str, seed: int) -> None:
    batches = _batches(kind, seed)
    theirs = _observe(TorchaoHistogramObserver, batches)
    ours = _observe(obs.HistogramObserver, batches)
    assert torch.equal(ours.histogram, theirs.histogram)
    assert torch.equal(ours.min_val, theirs.min_val) and torch.equal(ours.max_val, theirs.max_val)
    new_min, new_max = ours._non_linear_param_search()
    ref_min, ref_max = theirs._non_linear_param_search()
    assert torch.equal(new_min, ref_min) and torch.equal(new_max, ref_max)
    scale, zero_point = ours.calculate_qparams()
    ref_scale, ref_zero_point = theirs.calculate_qparams()
    assert torch.equal(scale, ref_scale) and torch.equal(zero_point, ref_zero_point)


@pytest.mark.parametrize("bins", [16, 256])
@pytest.mark.parametrize("seed", range(6))
def test_histogram_observer_other_bin_counts(bins: int, seed: int) -> None:
    """Fewer bins make many steps move a bin and searches that run to the end of the loop."""
    batches = _batches(KINDS[seed % len(KINDS)], seed)
    theirs = _observe(TorchaoHistogramObserver, batches, bins=bins)
    ours = _observe(obs.HistogramObserver, batches, bins=bins)
    assert all(torch.equal(a, b) for a, b in zip(ours.calculate_qparams(), theirs.calculate_qparams(), strict=True))


def test_histogram_search_of_hand_made_histograms() -> None:
    """Histograms set directly, including ones no input produces (empty bins at both ends, all mass in one
    bin, equal counts everywhere): the search paths the sampled cases may miss."""
    g = torch.Generator().manual_seed(7)
    hists = [torch.zeros(2048), torch.ones(2048), torch.zeros(2048).index_fill_(0, torch.tensor([1000]), 5.0)]
    hists.append(torch.cat([torch.zeros(300), torch.rand(1400, generator=g) * 9, torch.zeros(348)]))
    hists.append(torch.rand(2048, generator=g).pow(8) * 1000)
    hists.append(torch.zeros(2048).index_fill_(0, torch.tensor([0, 2047]), 1.0))
    for hist in hists:
        pair = []
        for cls in (TorchaoHistogramObserver, obs.HistogramObserver):
            observer = cls(dtype=torch.int8, quant_min=-128, quant_max=127)
            observer.histogram.copy_(hist)
            observer.min_val.fill_(-1.5)
            observer.max_val.fill_(2.25)
            pair.append(observer._non_linear_param_search())
        assert all(torch.equal(a, b) for a, b in zip(*pair, strict=True))


def test_bounds_are_torchao_running_sums() -> None:
    alpha, beta, negated_beta = obs._bounds()
    a, b = 0.0, 1.0
    for i in range(1, 100_001):
        a += obs.STEP
        b -= obs.STEP
        if i % 9973 == 0 or i > 99_990:
            assert alpha[i] == a and beta[i] == b
    assert np.array_equal(negated_beta, -beta)
    assert alpha[len(alpha) - 1] >= beta[len(beta) - 1]  # the arrays outlast any search (alpha < beta)


@pytest.mark.parametrize("seed", range(3))
def test_per_channel_min_max_equal_torchao(seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    weights = [torch.randn(16, 8, 3, 3, generator=g) * (i + 1) for i in range(3)]
    pair = []
    for cls in (TorchaoPerChannelMinMaxObserver, obs.PerChannelMinMaxObserver):
        observer = cls(ch_axis=0, dtype=torch.int8, quant_min=-127, quant_max=127, qscheme=torch.per_channel_symmetric)
        for w in weights:
            observer(w)
        pair.append(observer.calculate_qparams())
    assert all(torch.equal(a, b) for a, b in zip(*pair, strict=True))


def test_defaults_and_thread_setting_restored() -> None:
    assert ObserverConfig().activation is obs.HistogramObserver
    assert ObserverConfig().weight is obs.PerChannelMinMaxObserver
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        observer = _observe(obs.HistogramObserver, [torch.randn(100)])
        observer.calculate_qparams()
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
