"""Models whose outputs depend on their inputs, for accuracy figures (tests' guards and benchmarks).

The zoo's MLPerf Tiny models have random weights and mild BatchNorm statistics: PyTorch's default
initialization shrinks the signal layer after layer while the BatchNorm shifts stay, so their outputs barely
depend on the input (DS-CNN: a standard deviation over inputs of 4.5e-6 against an rms of 0.12), and a
program's SQNR against fp32 measures a rounding draw of a near-constant. Here each BatchNorm instead gets the
statistics of its own input on random normal data (what training leaves in it: every channel normalized) and
a random affine of a trained network's magnitude, as ``torchvision_zoo.randomize_batch_norm`` does for the
public networks; the weights are drawn from ``seed``, so several seeds are several models.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from mcuforge.zoo.mlperf_tiny import DSCNN, FCAutoencoder, MobileNetV1, ResNet8

MLPERF_TINY: dict[str, tuple[Callable[[], nn.Module], tuple[int, ...]]] = {
    "ds_cnn": (DSCNN, (1, 1, 49, 10)),
    "mobilenet_v1_025": (lambda: MobileNetV1(0.25), (1, 3, 96, 96)),
    "resnet8": (ResNet8, (1, 3, 32, 32)),
    "fc_autoencoder": (FCAutoencoder, (1, 640)),
}
NAMES = tuple(MLPERF_TINY)
#: random normal inputs whose statistics the BatchNorms take
FIT_ITEMS = 32


def fit_batch_norm(model: nn.Module, shape: tuple[int, ...], gen: torch.Generator) -> None:
    """Each BatchNorm's running statistics: those of its input on FIT_ITEMS random normal inputs (one batch,
    the exact mean and variance: ``momentum=None`` averages cumulatively); then a random affine (gamma in
    [0.5, 1.5], beta ~ 0.2 N(0, 1))."""
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    with torch.no_grad():
        model(torch.randn((FIT_ITEMS, *shape[1:]), generator=gen))
        for m in norms:
            m.momentum = 0.1
            m.weight.copy_(0.5 + torch.rand(m.num_features, generator=gen))
            m.bias.copy_(0.2 * torch.randn(m.num_features, generator=gen))
    model.eval()


def build(name: str, seed: int = 0) -> tuple[nn.Module, tuple[torch.Tensor]]:
    """(model in eval mode, example input) of MLPerf Tiny model ``name``, weights drawn from ``seed``."""
    make, shape = MLPERF_TINY[name]
    torch.manual_seed(seed)  # the layers initialize with the global generator
    model = make()
    gen = torch.Generator().manual_seed(10_000 + seed)
    fit_batch_norm(model, shape, gen)
    return model, (torch.randn(shape, generator=gen),)


def items(example: tuple[torch.Tensor, ...], count: int, seed: int) -> list[tuple[torch.Tensor, ...]]:
    """``count`` random normal input tuples shaped as ``example``."""
    gen = torch.Generator().manual_seed(seed)
    return [tuple(torch.randn(x.shape, generator=gen) for x in example) for _ in range(count)]
