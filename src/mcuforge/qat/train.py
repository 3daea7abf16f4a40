"""A small training loop for QAT models, for users without one of their own.

The schedule: the weights' fake quants observe the current weights each step until ``freeze_epoch``, then
every observer is frozen (the qparams stop moving and the last epochs train against the program's exact
grid); the activations' qparams are the calibrated ones throughout unless ``observe_activations``.
BatchNorm was folded into the weights by prepare_qat with its running statistics; until ``freeze_bn_epoch``
(default 0: frozen from the first step) the forward normalizes with the batch's statistics (torchao's conv-BN
QAT forward), the running statistics follow the batches, gamma and beta train, and the layers are refolded
after each step (``batchnorm.py``: the usual freeze-BN-stats schedule); from it the forward is the folded layer.
BatchNorm is frozen no later than the observers: a weight scale frozen while the weights are still refolded
would not fit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import fx
from tqdm.auto import tqdm

from ..capture import as_input_tuple
from .batchnorm import recorders, track_batch_norm, update_batch_norm
from .fake_quant import set_observers
from .prepare import META_KEY


@dataclass
class TrainLog:
    """What :func:`train_qat` did: mean loss per epoch, the epoch the observers were frozen at, steps."""

    losses: list[float] = field(default_factory=list)
    frozen_at_epoch: int | None = None
    steps: int = 0
    bn_frozen_at_epoch: int | None = None
    bn_updates: int = 0


def train_qat(
    model: fx.GraphModule,
    data: Iterable[Any],
    loss_fn: Callable[..., torch.Tensor],
    *,
    epochs: int = 3,
    lr: float = 1e-4,
    optimizer: torch.optim.Optimizer | None = None,
    freeze_epoch: int | None = None,
    freeze_bn_epoch: int = 0,
    observe_activations: bool = False,
    progress: bool = True,
) -> TrainLog:
    """Fine-tune a :func:`mcuforge.prepare_qat` model in place. ``data`` yields ``(inputs..., target)``
    tuples (a labelled DataLoader); ``loss_fn(outputs, target)``. Adam at ``lr`` unless ``optimizer``.
    ``freeze_epoch``: the epoch from which every observer is frozen (default: the last one; ``epochs``: never
    during training, compile freezes a copy). ``freeze_bn_epoch``: the epoch from which the folded BatchNorms'
    statistics are frozen (before it they follow the batches; at most ``freeze_epoch``). Returns a
    :class:`TrainLog`."""
    if META_KEY not in model.meta:
        raise ValueError("train_qat trains a model from mcuforge.prepare_qat")
    num_inputs = model.meta[META_KEY].num_inputs
    freeze_epoch = max(epochs - 1, 0) if freeze_epoch is None else freeze_epoch
    if freeze_bn_epoch > freeze_epoch:
        raise ValueError(f"freeze_bn_epoch ({freeze_bn_epoch}) after freeze_epoch ({freeze_epoch}): BatchNorm "
                         "statistics must stop moving the weights before their scales are frozen")
    optimizer = optimizer or torch.optim.Adam(model.parameters(), lr=lr)
    set_observers(model, True, weights=True)
    set_observers(model, observe_activations, weights=False)
    log = TrainLog()
    model.train()
    track_batch_norm(model, freeze_bn_epoch > 0)
    for epoch in tqdm(range(epochs), desc="QAT", unit="epoch", disable=not progress):
        if epoch == freeze_bn_epoch and recorders(model):
            track_batch_norm(model, False)
            log.bn_frozen_at_epoch = epoch
        if epoch == freeze_epoch:
            set_observers(model, False)
            log.frozen_at_epoch = epoch
        total, count = 0.0, 0
        for item in data:
            tensors = as_input_tuple(item)
            if len(tensors) != num_inputs + 1:
                raise ValueError(f"train_qat: each item holds the model's {num_inputs} input(s) and the target, "
                                 f"got {len(tensors)} tensors")
            optimizer.zero_grad()
            loss = loss_fn(model(*tensors[:num_inputs]), tensors[num_inputs])
            loss.backward()
            optimizer.step()
            log.bn_updates += update_batch_norm(model)
            total += float(loss.detach())
            count += 1
            log.steps += 1
        log.losses.append(total / max(count, 1))
    track_batch_norm(model, False)
    model.eval()
    return log
