"""The MLPerf Tiny reference models, written as PyTorch modules (random weights).

- DS-CNN keyword spotting: 1x1x49x10 MFCC -> 12 classes
- MobileNetV1 (width 0.25) visual wake words: 1x3x96x96 -> 2 classes
- ResNet-8 image classification: 1x3x32x32 -> 10 classes
- FC autoencoder anomaly detection: 1x640 -> 640
"""

from __future__ import annotations

import torch
from torch import nn

from .common import conv_bn_relu, randomize_batch_norm


class DSCNN(nn.Module):
    def __init__(self, classes: int = 12, width: int = 64) -> None:
        super().__init__()
        self.stem = conv_bn_relu(1, width, (10, 4), stride=(2, 2), padding=(5, 1))
        blocks = []
        for _ in range(4):
            blocks.append(nn.Sequential(
                conv_bn_relu(width, width, 3, padding=1, groups=width),  # depthwise
                conv_bn_relu(width, width, 1),  # pointwise
            ))
        self.blocks = nn.Sequential(*blocks)
        self.pool = nn.AvgPool2d((25, 5))
        self.classifier = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.blocks(self.stem(x))
        x = self.pool(x)
        return self.classifier(torch.flatten(x, 1))


class MobileNetV1(nn.Module):
    # (out channels at width 1.0, stride) of the 13 depthwise-separable blocks
    BLOCKS = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1), (512, 1),
              (512, 1), (512, 1), (1024, 2), (1024, 1)]

    def __init__(self, alpha: float = 0.25, classes: int = 2) -> None:
        super().__init__()
        ch = int(32 * alpha)
        layers = [conv_bn_relu(3, ch, 3, stride=2, padding=1)]
        for out, stride in self.BLOCKS:
            out = int(out * alpha)
            layers.append(nn.Sequential(
                conv_bn_relu(ch, ch, 3, stride=stride, padding=1, groups=ch),
                conv_bn_relu(ch, out, 1),
            ))
            ch = out
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(ch, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.features(x))
        return self.classifier(x.view(x.size(0), -1))


class ResidualStack(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Conv2d(cin, cout, 1, stride=stride) if stride != 1 or cin != cout else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + self.shortcut(x))


class ResNet8(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.stack1 = ResidualStack(16, 16, 1)
        self.stack2 = ResidualStack(16, 32, 2)
        self.stack3 = ResidualStack(32, 64, 2)
        self.pool = nn.AvgPool2d(8)
        self.fc = nn.Linear(64, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stack3(self.stack2(self.stack1(self.stem(x))))
        return self.fc(self.pool(x).flatten(1))


class FCAutoencoder(nn.Module):
    def __init__(self, features: int = 640, hidden: int = 128, bottleneck: int = 8) -> None:
        super().__init__()

        def block(i: int, o: int) -> nn.Sequential:
            return nn.Sequential(nn.Linear(i, o), nn.BatchNorm1d(o), nn.ReLU())

        self.encoder = nn.Sequential(block(features, hidden), block(hidden, hidden), block(hidden, hidden),
                                     block(hidden, hidden), block(hidden, bottleneck))
        self.decoder = nn.Sequential(block(bottleneck, hidden), block(hidden, hidden), block(hidden, hidden),
                                     block(hidden, hidden), nn.Linear(hidden, features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.encoder(x))


def _seeded(seed: int) -> None:
    torch.manual_seed(seed)


def make_ds_cnn() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    _seeded(1)
    return randomize_batch_norm(DSCNN(), 1), (torch.randn(1, 1, 49, 10),)


def make_mobilenet_v1_025() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    _seeded(2)
    return randomize_batch_norm(MobileNetV1(0.25), 2), (torch.randn(1, 3, 96, 96),)


def make_resnet8() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    _seeded(3)
    return randomize_batch_norm(ResNet8(), 3), (torch.randn(1, 3, 32, 32),)


def make_fc_autoencoder() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    _seeded(4)
    return randomize_batch_norm(FCAutoencoder(), 4), (torch.randn(1, 640),)
