"""The eight torchvision classification networks of issue 9, as a new user would try them: random
weights, randomized BatchNorm statistics, 10 classes, 64x64 inputs (the smallest size at which all
eight still reduce to a spatial map before their classifier; every one keeps at least 2x2).

Shared by tests/test_public_models.py and the benchmarks (benchmarks/public_models.py,
benchmarks/compile_time.py), so that the table in the closing note is about the tested models.
Nothing is downloaded: no ``weights=`` is ever given.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable

import torch
from torch import nn

# torchvision 0.28.0 from the package registry is built against CUDA: its C extension does not load
# with the CPU torch, and `import torchvision` then fails in `_meta_registrations` (it registers
# meta kernels for torchvision::nms, which does not exist). The model definitions do not need the
# extension (only detection ops do), so an empty module stands in for it before the first import.
sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))
from torchvision import models  # noqa: E402 - after the stub above

INPUT_HW = 64
NUM_CLASSES = 10

BUILDERS: dict[str, Callable[[], nn.Module]] = {
    "mobilenet_v2_035": lambda: models.mobilenet_v2(width_mult=0.35, num_classes=NUM_CLASSES),
    "mobilenet_v3_small": lambda: models.mobilenet_v3_small(num_classes=NUM_CLASSES),
    "shufflenet_v2_x0_5": lambda: models.shufflenet_v2_x0_5(num_classes=NUM_CLASSES),
    "squeezenet1_1": lambda: models.squeezenet1_1(num_classes=NUM_CLASSES),
    "mnasnet0_5": lambda: models.mnasnet0_5(num_classes=NUM_CLASSES),
    "regnet_x_400mf": lambda: models.regnet_x_400mf(num_classes=NUM_CLASSES),
    "efficientnet_b0": lambda: models.efficientnet_b0(num_classes=NUM_CLASSES),
    "resnet18": lambda: models.resnet18(num_classes=NUM_CLASSES),
}
NAMES = tuple(BUILDERS)


def randomize_batch_norm(model: nn.Module, gen: torch.Generator) -> None:
    """Fresh BatchNorms are identities (mean 0, var 1, weight 1, bias 0), which would hide any
    folding error: give every one statistics and an affine of a trained network's magnitude."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                c = m.num_features
                m.running_mean.copy_(0.2 * torch.randn(c, generator=gen))
                m.running_var.copy_(0.5 + torch.rand(c, generator=gen))
                if m.affine:
                    m.weight.copy_(0.5 + torch.rand(c, generator=gen))
                    m.bias.copy_(0.2 * torch.randn(c, generator=gen))


def build(name: str, seed: int = 0) -> tuple[nn.Module, tuple[torch.Tensor]]:
    """(model in eval mode, example input) for one of :data:`NAMES`; the same weights for a seed."""
    torch.manual_seed(seed)  # torchvision initializes with the global generator
    model = BUILDERS[name]()
    randomize_batch_norm(model, torch.Generator().manual_seed(seed + 1))
    model.eval()
    return model, (torch.randn(1, 3, INPUT_HW, INPUT_HW, generator=torch.Generator().manual_seed(seed + 2)),)


def reference_macs(model: nn.Module, example: tuple[torch.Tensor, ...]) -> int:
    """Multiply-accumulates of one inference counted by PyTorch itself (FlopCounterMode counts
    2 FLOPs per MAC of conv, linear and matmul), independently of mcuforge."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        model(*example)
    flops = counter.get_total_flops()
    assert flops % 2 == 0
    return flops // 2
