"""Small models trained here, in seconds, on synthetic data (nothing is downloaded): where the zoo's random
weights would make a meaningless accuracy measure, these have outputs that depend on their inputs as a
trained model's do.

- The MLPerf Tiny FC autoencoder (``mlperf_tiny.FCAutoencoder``) trained to reconstruct synthetic
  machine-sound log-mel frames (``log_mel_frames``: 5 frames x 128 mel bins in dB, a spectral tilt, three
  harmonics of a drifting fundamental, a per-clip level and frame noise): the anomaly-detection
  benchmark's input and task, without its audio.
- A regression MLP (``SensorMLP``) fitted to a sensor's calibration curve, ``y = 10 log(1 + r) + sqrt(r)``,
  over raw readings ``r`` that are log-normal (``sensor_readings``: most readings small, a few large), the
  wide-dynamic-range input of a regression head.

Each ``make_*`` returns ``(model, example_inputs)`` like the zoo's factories; training is deterministic
(seeded, one torch thread).
"""

from __future__ import annotations

import torch
from torch import nn

from .mlperf_tiny import FCAutoencoder

LOG_MEL_BINS, LOG_MEL_FRAMES = 128, 5


def log_mel_frames(count: int, seed: int) -> torch.Tensor:
    """``count`` synthetic machine-sound inputs of the FC autoencoder: (count, 640) log-mel values in dB."""
    gen = torch.Generator().manual_seed(seed)
    f = torch.arange(float(LOG_MEL_BINS))
    tilt = -30.0 - 25.0 * f / (LOG_MEL_BINS - 1)
    f0 = 10.0 + 30.0 * torch.rand(count, 1, generator=gen)  # the machine's fundamental, in mel bins
    harmonic = torch.arange(1.0, 4.0)
    amplitude = 15.0 + 5.0 * torch.randn(count, 3, generator=gen)
    peaks = torch.exp(-((f[None, None] - harmonic[None, :, None] * f0[:, :, None]) ** 2) / 8.0)
    spectrum = tilt + (peaks * amplitude[:, :, None]).sum(1) + 5.0 * torch.randn(count, 1, generator=gen)
    frames = spectrum[:, None] + 2.0 * torch.randn(count, LOG_MEL_FRAMES, LOG_MEL_BINS, generator=gen)
    return frames.reshape(count, LOG_MEL_FRAMES * LOG_MEL_BINS)


def sensor_readings(count: int, seed: int) -> torch.Tensor:
    """``count`` raw sensor readings (count, 1): log-normal, median e (about 2.7), 1% above 45."""
    gen = torch.Generator().manual_seed(seed)
    return torch.exp(torch.randn(count, 1, generator=gen) * 1.2 + 1.0)


def sensor_curve(r: torch.Tensor) -> torch.Tensor:
    """The calibration curve the regression MLP learns: physical value of a raw reading."""
    return 10.0 * torch.log1p(r) + torch.sqrt(r)


class SensorMLP(nn.Module):
    """1 -> 64 -> 64 -> 64 -> 1 with ReLUs: a regression head."""

    def __init__(self, hidden: int = 64) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def _train(model: nn.Module, batches, lr: float, steps: int) -> nn.Module:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the same floats on every machine
    try:
        opt = torch.optim.Adam(model.parameters(), lr)
        for step in range(steps):
            x, y = batches(step)
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    finally:
        torch.set_num_threads(threads)
    return model.eval()


def make_fc_autoencoder_trained(steps: int = 1500) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """The FC autoencoder trained ``steps`` Adam steps (batches of 64) to reconstruct ``log_mel_frames``."""
    torch.manual_seed(4)
    model = FCAutoencoder()

    def batch(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        x = log_mel_frames(64, 10_000 + step)
        return x, x

    return _train(model, batch, 1e-3, steps), (log_mel_frames(1, 0),)


def make_sensor_regression(steps: int = 1500) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """``SensorMLP`` fitted ``steps`` Adam steps (batches of 256) to ``sensor_curve`` on ``sensor_readings``."""
    torch.manual_seed(5)
    model = SensorMLP()

    def batch(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        r = sensor_readings(256, 20_000 + step)
        return r, sensor_curve(r)

    return _train(model, batch, 3e-3, steps), (sensor_readings(1, 0),)


def trained_task(name: str) -> tuple[nn.Module, tuple[torch.Tensor, ...], list[tuple[torch.Tensor]], torch.Tensor]:
    """(model, example inputs, calibration items, held-out test batch) of ``"fc_autoencoder"`` (64 calibration
    frames, 256 test frames) or ``"sensor_regression"`` (1024 calibration readings: enough to see the log-normal
    tail, which otherwise clips at every width; 4096 test readings). Calibration and test data are disjoint."""
    if name == "fc_autoencoder":
        model, example = make_fc_autoencoder_trained()
        return model, example, [(x[None],) for x in log_mel_frames(64, 1)], log_mel_frames(256, 2)
    if name == "sensor_regression":
        model, example = make_sensor_regression()
        return model, example, [(x[None],) for x in sensor_readings(1024, 1)], sensor_readings(4096, 2)
    raise ValueError(f"unknown trained task {name!r}; known: 'fc_autoencoder', 'sensor_regression'")
