"""The built-in example: a small CNN trained in seconds on scikit-learn's digits (shipped with
scikit-learn, no download), compiled to int8 and evaluated beside its fp32 self."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm


class DigitsCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


@dataclass
class DigitsData:
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor


def load_digits_data(seed: int = 0) -> DigitsData:
    """8x8 digit images scaled to [0, 1], NCHW, split 80/20 with a fixed seed."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.images.astype(np.float32) / 16.0)[:, None, :, :]
    y = digits.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.2, random_state=seed, stratify=y)
    return DigitsData(*(torch.from_numpy(a) for a in (x_tr, y_tr, x_te, y_te)))


#: Significant bits the trained parameters keep (float32 has 24): see ``train_digits_cnn``.
KEPT_BITS = 12


def train_digits_cnn(data: DigitsData, epochs: int = 12, seed: int = 0, progress: bool = True) -> DigitsCNN:
    """Adam, batches of 64, ``epochs`` passes in a seeded order; the same model on every x86 CPU.

    Trained in float32, the weights depend on the CPU: oneDNN and MKL pick kernels by instruction set (AVX-512,
    AVX2) and torch splits sums over its threads, each summing in its own order, and 276 steps of Adam carry
    the last-bit differences into every weight (here, default vs ``ONEDNN_MAX_CPU_ISA=AVX2`` or one thread:
    different float32 weights, different int8 programs, SQNR figures a few tenths of a dB apart). So it trains
    in float64 on one thread (float64 convolutions do not go through oneDNN) -- the weights then differ between
    those set-ups by ~1e-11 relative -- and rounds every parameter and statistic to KEPT_BITS significant bits
    (2.4e-4 relative, far below int8's resolution), where such differences almost never cross a rounding
    boundary (docs/accuracy.md, "Figures that move between CPUs")."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(seed)
        model = DigitsCNN().double()
        opt = torch.optim.Adam(model.parameters(), lr=3e-3)
        loss_fn = nn.CrossEntropyLoss()
        gen = torch.Generator().manual_seed(seed)
        x_train = data.x_train.double()
        model.train()
        for _ in tqdm(range(epochs), desc="training", unit="epoch", disable=not progress):
            order = torch.randperm(len(x_train), generator=gen)
            for i in range(0, len(order), 64):
                idx = order[i:i + 64]
                opt.zero_grad()
                loss_fn(model(x_train[idx]), data.y_train[idx]).backward()
                opt.step()
    finally:
        torch.set_num_threads(threads)
    with torch.no_grad():
        for value in (*model.parameters(), *model.buffers()):
            if value.is_floating_point():
                mantissa, exponent = torch.frexp(value)
                value.copy_(torch.ldexp(torch.round(mantissa * 2**KEPT_BITS) / 2**KEPT_BITS, exponent))
    return model.float().eval()


def make_digits_cnn() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Factory for ``mcuforge compile mcuforge.examples.digits:make_digits_cnn`` (trains first)."""
    data = load_digits_data()
    return train_digits_cnn(data, progress=False), (data.x_test[:1],)


def fp32_accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return float((model(x).argmax(1) == y).float().mean())
