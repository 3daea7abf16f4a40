"""Gradients for the fused recurrent ops (mcuforge.lstm_op), so that models with LSTM / GRU layers train under QAT.

The ops are torch custom ops without an autograd formula (compilation never differentiates them); here each
one's backward recomputes its float definition with autograd on and takes the vector-Jacobian product.
Registered when mcuforge.qat is imported; the forward is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from .. import lstm_op


def _lstm_hidden(x: Tensor, _cell_states: Tensor, w_ih: Tensor, w_hh: Tensor, bias: Tensor) -> Tensor:
    return lstm_op._run_lstm(x, w_ih, w_hh, bias)[0]


def _lstm_cells(x: Tensor, w_ih: Tensor, w_hh: Tensor, bias: Tensor) -> Tensor:
    return lstm_op._run_lstm(x, w_ih, w_hh, bias)[1]


def _setup(ctx: object, inputs: tuple[Tensor, ...], output: Tensor) -> None:
    ctx.save_for_backward(*inputs)  # type: ignore[attr-defined]


def _backward(definition: Callable[..., Tensor]) -> Callable[..., tuple[Tensor | None, ...]]:
    def backward(ctx: object, grad: Tensor) -> tuple[Tensor | None, ...]:
        saved = ctx.saved_tensors  # type: ignore[attr-defined]
        with torch.enable_grad():
            leaves = [t.detach().requires_grad_(True) for t in saved]
            out = definition(*leaves)
            grads = torch.autograd.grad(out, leaves, grad, allow_unused=True)
        return tuple(grads)

    return backward


def register() -> None:
    """Attach the backward formulas (idempotent: torch keeps the last registration)."""
    torch.library.register_autograd("mcuforge::lstm", _backward(_lstm_hidden), setup_context=_setup)
    torch.library.register_autograd("mcuforge::lstm_cell_states", _backward(_lstm_cells), setup_context=_setup)
    torch.library.register_autograd("mcuforge::gru", _backward(lstm_op._run_gru), setup_context=_setup)
