"""Model factories for the command line, e.g.

    mcuforge compile examples/models.py:make_kws --target cortex-m4 -o kws.mfp

A factory returns ``(model, example_inputs)``: an ordinary NCHW PyTorch model and its inputs.
"""

import torch
from torch import nn

from mcuforge.zoo.mlperf_tiny import DSCNN


def make_kws():
    """DS-CNN keyword spotting (MLPerf Tiny), 49x10 MFCC features -> 12 keywords, random weights."""
    torch.manual_seed(0)
    return DSCNN().eval(), (torch.randn(1, 1, 49, 10),)


class SensorNet(nn.Module):
    """A small custom model: two inputs (an image and a feature vector), two outputs."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU6())
        self.fc_features = nn.Linear(6, 8)
        self.head = nn.Linear(8 + 8, 3)

    def forward(self, image, features):
        x = self.conv(image).mean((2, 3))
        y = torch.relu(self.fc_features(features))
        logits = self.head(torch.cat([x, y], dim=1))
        return logits, torch.sigmoid(logits)


def make_sensor_net():
    torch.manual_seed(0)
    return SensorNet().eval(), (torch.randn(1, 1, 12, 12), torch.randn(1, 6))
