"""MobileNetV2 and MobileNetV3-Small for 96x96 images (random weights, BatchNorm like the originals).

- MobileNetV2 (width 0.35): inverted residuals with ReLU6, linear bottlenecks, residual adds.
- MobileNetV3-Small (width 0.5): hardswish, squeeze-excite with hardsigmoid and a
  channel-broadcast multiply, 5x5 depthwise convolutions.
"""

from __future__ import annotations

import torch
from torch import nn

from .common import randomize_batch_norm


def make_divisible(value: float, divisor: int = 8) -> int:
    """Channel rounding of the reference implementations (never below 90% of ``value``)."""
    out = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return out + divisor if out < 0.9 * value else out


def conv_bn(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1,
            act: type[nn.Module] | None = nn.ReLU6) -> nn.Sequential:
    layers = [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = cin * expand
        layers = [conv_bn(cin, hidden, 1)] if expand != 1 else []
        layers += [conv_bn(hidden, hidden, 3, stride, groups=hidden), conv_bn(hidden, cout, 1, act=None)]
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.block(x)
        return x + y if self.residual else y


class MobileNetV2(nn.Module):
    # (expansion t, channels c, repeats n, stride s) of the paper's table 2
    SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                (6, 320, 1, 1)]

    def __init__(self, width: float = 0.35, classes: int = 2, last_channels: int = 1280) -> None:
        super().__init__()
        ch = make_divisible(32 * width)
        layers: list[nn.Module] = [conv_bn(3, ch, 3, 2)]
        for t, c, n, s in self.SETTINGS:
            out = make_divisible(c * width)
            for i in range(n):
                layers.append(InvertedResidual(ch, out, s if i == 0 else 1, t))
                ch = out
        layers.append(conv_bn(ch, last_channels, 1))  # kept at 1280 for width < 1, as in the reference
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(last_channels, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


class SqueezeExcite(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        squeeze = make_divisible(channels / 4)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(channels, squeeze, 1)
        self.relu = nn.ReLU()
        self.fc2 = nn.Conv2d(squeeze, channels, 1)
        self.gate = nn.Hardsigmoid()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = self.gate(self.fc2(self.relu(self.fc1(self.pool(x)))))
        return x * scale  # N,C,1,1 broadcast over H,W


class V3Block(nn.Module):
    def __init__(self, cin: int, kernel: int, hidden: int, cout: int, se: bool, act: type[nn.Module],
                 stride: int) -> None:
        super().__init__()
        layers: list[nn.Module] = [conv_bn(cin, hidden, 1, act=act)] if hidden != cin else []
        layers.append(conv_bn(hidden, hidden, kernel, stride, groups=hidden, act=act))
        if se:
            layers.append(SqueezeExcite(hidden))
        layers.append(conv_bn(hidden, cout, 1, act=None))
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.block(x)
        return x + y if self.residual else y


class MobileNetV3Small(nn.Module):
    RE, HS = nn.ReLU, nn.Hardswish
    # (kernel, expanded channels, out channels, squeeze-excite, activation, stride) of the paper's table 2
    SETTINGS = [(3, 16, 16, True, RE, 2), (3, 72, 24, False, RE, 2), (3, 88, 24, False, RE, 1),
                (5, 96, 40, True, HS, 2), (5, 240, 40, True, HS, 1), (5, 240, 40, True, HS, 1),
                (5, 120, 48, True, HS, 1), (5, 144, 48, True, HS, 1), (5, 288, 96, True, HS, 2),
                (5, 576, 96, True, HS, 1), (5, 576, 96, True, HS, 1)]

    def __init__(self, width: float = 0.5, classes: int = 2, head: int = 256) -> None:
        super().__init__()
        ch = make_divisible(16 * width)
        layers: list[nn.Module] = [conv_bn(3, ch, 3, 2, act=nn.Hardswish)]
        for k, exp, out, se, act, s in self.SETTINGS:
            exp, out = make_divisible(exp * width), make_divisible(out * width)
            layers.append(V3Block(ch, k, exp, out, se, act, s))
            ch = out
        last = make_divisible(576 * width)
        layers.append(conv_bn(ch, last, 1, act=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(last, head), nn.Hardswish(), nn.Linear(head, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


def make_mobilenet_v2() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(6)
    return randomize_batch_norm(MobileNetV2(0.35), 6), (torch.randn(1, 3, 96, 96),)


def make_mobilenet_v3_small() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(7)
    return randomize_batch_norm(MobileNetV3Small(0.5), 7), (torch.randn(1, 3, 96, 96),)
