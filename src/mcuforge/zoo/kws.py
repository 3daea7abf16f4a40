"""Keyword spotting on 49 frames of MFCC features: a 1-D CNN, an LSTM and a GRU (random weights).

All three map a clip to 12 classes. The conv net takes channels-first (1, 40, 49) features (40
MFCC bins as channels, time along the last axis); the recurrent nets take batch-first (1, 49, 10)
frames and classify the last hidden state.
"""

from __future__ import annotations

import torch
from torch import nn

from .common import randomize_batch_norm


def conv1d_bn_relu(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv1d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
                         nn.BatchNorm1d(cout), nn.ReLU())


class KWSConv1d(nn.Module):
    def __init__(self, features: int = 40, width: int = 48, classes: int = 12) -> None:
        super().__init__()
        self.stem = conv1d_bn_relu(features, width, 3)
        self.pool1 = nn.MaxPool1d(2)
        self.block1 = conv1d_bn_relu(width, width, 3)
        self.block2 = nn.Sequential(conv1d_bn_relu(width, width, 5, groups=width),  # depthwise
                                    conv1d_bn_relu(width, 2 * width, 1))  # pointwise
        self.pool2 = nn.AvgPool1d(2)
        self.block3 = conv1d_bn_relu(2 * width, 2 * width, 3, stride=2)
        self.classifier = nn.Linear(2 * width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool1(self.stem(x))
        x = self.pool2(self.block2(self.block1(x)))
        x = self.block3(x)
        return self.classifier(x.mean(-1))


class KWSRecurrent(nn.Module):
    def __init__(self, cell: type[nn.Module], features: int = 10, hidden: int = 32, classes: int = 12) -> None:
        super().__init__()
        self.rnn = cell(features, hidden, batch_first=True)
        self.classifier = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _, state = self.rnn(x)
        h_n = state[0] if isinstance(state, tuple) else state  # LSTM: (h_n, c_n)
        return self.classifier(h_n[-1])


def make_kws_conv1d() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(8)
    return randomize_batch_norm(KWSConv1d(), 8), (torch.randn(1, 40, 49),)


def make_kws_lstm() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(9)
    return KWSRecurrent(nn.LSTM).eval(), (torch.randn(1, 49, 10),)


def make_kws_gru() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(10)
    return KWSRecurrent(nn.GRU).eval(), (torch.randn(1, 49, 10),)
