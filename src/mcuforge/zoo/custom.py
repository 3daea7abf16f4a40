"""A user-style custom nn.Module mixing int8-able layers with ops that fall back to fp32."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .common import randomize_batch_norm


class ChannelGate(nn.Module):
    """Squeeze-and-excite style gate written by hand: mean, sigmoid, broadcast multiply."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = torch.sigmoid(x.mean((2, 3), keepdim=True))
        return x * w


class CustomFallbackNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.gate = ChannelGate()
        self.conv2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.norm = nn.LayerNorm(32)
        self.head = nn.Linear(32, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu6(self.bn1(self.conv1(x)))
        x = self.gate(x)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.gelu(x.mean((2, 3)))
        return self.head(self.norm(x))


def make_custom_fallback() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(5)
    return randomize_batch_norm(CustomFallbackNet(), 5), (torch.randn(1, 3, 16, 16),)
