"""Evaluate a program on a data set with the host runtime (progress bar included)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm


def top1_accuracy(outputs: np.ndarray, targets: np.ndarray) -> float:
    return float(np.mean(outputs.argmax(axis=-1) == targets))


def _to_numpy(value: Any) -> np.ndarray:
    return value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else np.asarray(value)


def evaluate(prog: Any, data: Iterable[Any], metric: Callable[[np.ndarray, np.ndarray], float] = top1_accuracy,
             *, progress: bool = True) -> float:
    """``metric(outputs, targets)`` over a data set of ``(inputs, target)`` batches.

    ``data`` yields ``(x, y)`` (a labelled DataLoader) or ``(x1, ..., xk, y)`` for k-input
    models; each batch runs through ``prog.run`` at once (vectorized) and the first output is
    collected."""
    outputs, targets = [], []
    total = len(data) if hasattr(data, "__len__") else None
    for batch in tqdm(data, total=total, desc="evaluating", unit="batch", disable=not progress):
        *xs, y = batch
        xs = [_to_numpy(x) for x in xs]
        outputs.append(prog.run(*xs)[0])
        targets.append(_to_numpy(y))
    return metric(np.concatenate(outputs), np.concatenate(targets))
