"""Capture: torch.export of any nn.Module (custom modules included) into an ATen graph."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from .rnn import rewrite_recurrent


class CaptureError(RuntimeError):
    """torch.export could not capture the model; the message names the model and the cause."""


def as_input_tuple(example_inputs: torch.Tensor | Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """Accept one tensor or a sequence of tensors (numpy arrays are converted)."""
    if isinstance(example_inputs, torch.Tensor):
        return (example_inputs,)
    out = []
    for i, x in enumerate(example_inputs):
        if not isinstance(x, torch.Tensor):
            try:
                x = torch.as_tensor(x)
            except Exception as exc:  # noqa: BLE001 - re-raised with context
                raise TypeError(f"example input {i} is a {type(x).__name__}, not a tensor") from exc
        out.append(x)
    return tuple(out)


def capture(model: nn.Module, example_inputs: Sequence[torch.Tensor]) -> torch.fx.GraphModule:
    """Export ``model`` in eval mode with static shapes; returns the ATen-level GraphModule.

    ``check_guards=False`` keeps torch.export from inserting a ``_guards_fn`` call_module that
    the PT2E passes and our lowering do not expect.
    """
    model = rewrite_recurrent(model.eval())  # nn.LSTM/GRU/RNN -> unrolled Linear + gates (a copy)
    args = as_input_tuple(example_inputs)
    try:
        exported = torch.export.export(model, args)
    except Exception as exc:  # noqa: BLE001 - torch raises many types here
        raise CaptureError(
            f"torch.export could not capture {type(model).__name__}: {type(exc).__name__}: {exc}"
        ) from exc
    return exported.module(check_guards=False)
