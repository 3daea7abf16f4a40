"""A small U-Net for 1x3x32x32 images (random weights): two pooling levels down, transposed
convolutions up, concatenated skip connections, a 1x1 head with 2 class maps."""

from __future__ import annotations

import torch
from torch import nn

from .common import conv_bn_relu, randomize_batch_norm


def double_conv(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(conv_bn_relu(cin, cout, 3, padding=1), conv_bn_relu(cout, cout, 3, padding=1))


class UNet(nn.Module):
    def __init__(self, cin: int = 3, classes: int = 2, width: int = 8) -> None:
        super().__init__()
        w = width
        self.enc1 = double_conv(cin, w)
        self.enc2 = double_conv(w, 2 * w)
        self.pool = nn.MaxPool2d(2)
        self.bottleneck = double_conv(2 * w, 4 * w)
        self.up2 = nn.ConvTranspose2d(4 * w, 2 * w, 2, stride=2)
        self.dec2 = double_conv(4 * w, 2 * w)
        self.up1 = nn.ConvTranspose2d(2 * w, w, 2, stride=2)
        self.dec1 = double_conv(2 * w, w)
        self.head = nn.Conv2d(w, classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s1 = self.enc1(x)
        s2 = self.enc2(self.pool(s1))
        y = self.bottleneck(self.pool(s2))
        y = self.dec2(torch.cat([self.up2(y), s2], dim=1))
        y = self.dec1(torch.cat([self.up1(y), s1], dim=1))
        return self.head(y)


def make_unet() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(12)
    return randomize_batch_norm(UNet(), 12), (torch.randn(1, 3, 32, 32),)
