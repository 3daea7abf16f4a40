"""The example sweep's model factory and data loader (examples/sweep_dscnn.yaml).

DS-CNN (MLPerf Tiny keyword spotting) at a width multiplier of its 64 channels, with random weights and
randomized BatchNorm statistics (seeded: the same model in every process), and random MFCC-shaped inputs:
no labels, so the sweep's quality is the top-1 agreement with the fp32 model and the output SQNR.
"""

from __future__ import annotations

from typing import Any

import torch

from ..zoo.common import randomize_batch_norm
from ..zoo.mlperf_tiny import DSCNN


def ds_cnn(width: float = 1.0, seed: int = 1) -> torch.nn.Module:
    """DS-CNN with ``round(64 * width)`` channels."""
    torch.manual_seed(seed)
    return randomize_batch_norm(DSCNN(width=max(1, round(64 * width))), seed)


def kws_inputs(calibration: int = 8, evaluation: int = 64, seed: int = 0) -> dict[str, Any]:
    """Random 1x49x10 MFCC-shaped inputs: ``calibration`` items to calibrate on, ``evaluation`` to measure."""
    gen = torch.Generator().manual_seed(seed)
    return {"calibration": [(torch.randn(1, 1, 49, 10, generator=gen),) for _ in range(calibration)],
            "inputs": torch.randn(evaluation, 1, 49, 10, generator=gen), "labels": None}
