"""Rewrite nn.LSTM / nn.GRU / nn.RNN into plain layers before capture.

Capture first fuses what it can (``rewrite_recurrent(model, fused_lstm=True)``): each layer of a
unidirectional LSTM (no projection) or GRU becomes one op (:mod:`mcuforge.lstm_op`, lowered to the
``lstm_s8`` / ``gru_s8`` kernels); what remains, and calls those modules cannot take (an initial state,
an unbatched input), is unrolled as below.

torch.export keeps a recurrent module as one fused ATen op (``aten.lstm.input``,
``aten.gru.input``) that has no int8 kernel. :func:`rewrite_recurrent` swaps every such module
for an equivalent one built from nn.Linear (the same weights), sigmoid/tanh, elementwise
mul/add and slicing, written as a Python loop over the time steps: export unrolls it into a
graph of FC + LUT + mul + add ops that the int8 lowering understands.

Three exact rewrites keep the unrolled graph small (fp32 results equal up to float rounding):

- the hidden-projection bias is folded into the input-projection bias where the equations
  allow it (all LSTM/RNN gates; GRU's r and z gates — GRU's n gate keeps ``b_hn`` under ``r``);
- LSTM gates are reordered (i, f, g, o) -> (i, f, o, g) so that one sigmoid covers the three
  sigmoid gates and one tanh the cell candidate;
- with no initial state given, the first step skips the hidden projection (h0 = c0 = 0).
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from .lstm_op import FusedGRU, FusedLSTM, fusable, fusable_gru

RECURRENT = (nn.LSTM, nn.GRU, nn.RNN)


class RecurrentRewriteError(ValueError):
    """A recurrent module that the rewrite cannot express; the message names its module path."""


def _linear(weight: torch.Tensor, bias: torch.Tensor | None) -> nn.Linear:
    out_features, in_features = weight.shape
    layer = nn.Linear(in_features, out_features, bias=bias is not None)
    with torch.no_grad():
        layer.weight.copy_(weight)
        if bias is not None:
            layer.bias.copy_(bias)
    return layer


class _Direction(nn.Module):
    """One direction of one layer: the projections and the cell update of one time step."""

    def __init__(self, rnn: nn.RNNBase, layer: int, suffix: str) -> None:
        super().__init__()
        self.mode = rnn.mode
        self.hidden_size = rnn.hidden_size
        get = lambda name: getattr(rnn, f"{name}_l{layer}{suffix}").detach()  # noqa: E731
        w_ih, w_hh = get("weight_ih"), get("weight_hh")
        b_ih = get("bias_ih") if rnn.bias else torch.zeros(w_ih.shape[0])
        b_hh = get("bias_hh") if rnn.bias else torch.zeros(w_hh.shape[0])
        H = self.hidden_size
        if self.mode == "LSTM":
            order = torch.cat([torch.arange(0, 2 * H), torch.arange(3 * H, 4 * H), torch.arange(2 * H, 3 * H)])
            self.ih = _linear(w_ih[order], (b_ih + b_hh)[order] if rnn.bias else None)
            self.hh = _linear(w_hh[order], None)
            self.b_hn = None
        elif self.mode == "GRU":
            b_ih = torch.cat([b_ih[: 2 * H] + b_hh[: 2 * H], b_ih[2 * H:]])
            b_hh = torch.cat([torch.zeros(2 * H), b_hh[2 * H:]])
            self.ih = _linear(w_ih, b_ih if rnn.bias else None)
            self.hh = _linear(w_hh, b_hh if rnn.bias else None)
            # r * (W_hn h + b_hn) at h = 0 is r * b_hn: kept as a constant for the first step.
            self.register_buffer("b_hn", b_hh[2 * H:].clone() if rnn.bias and bool(b_hh.any()) else None)
        else:  # RNN_TANH / RNN_RELU
            self.b_hn = None
            self.ih = _linear(w_ih, b_ih + b_hh if rnn.bias else None)
            self.hh = _linear(w_hh, None)
        self.proj = _linear(get("weight_hr"), None) if getattr(rnn, "proj_size", 0) > 0 else None

    def step(self, gates: torch.Tensor, h: torch.Tensor | None, c: torch.Tensor | None):
        """One time step from the projected input ``gates = ih(x_t)``; ``h``/``c`` None means the
        zero state. Returns (h, c)."""
        H = self.hidden_size
        if self.mode == "GRU":
            if h is None:
                r_z = torch.sigmoid(gates[..., : 2 * H])
                r, z = r_z[..., :H], r_z[..., H:]
                pre_n = gates[..., 2 * H:] if self.b_hn is None else gates[..., 2 * H:] + r * self.b_hn
                n = torch.tanh(pre_n)
                return n - z * n, None  # (1 - z) * n + z * 0
            hp = self.hh(h)
            r_z = torch.sigmoid(gates[..., : 2 * H] + hp[..., : 2 * H])
            r, z = r_z[..., :H], r_z[..., H:]
            n = torch.tanh(gates[..., 2 * H:] + r * hp[..., 2 * H:])
            return n + z * (h - n), None  # (1 - z) * n + z * h
        if h is not None:
            gates = gates + self.hh(h)
        if self.mode != "LSTM":
            return (torch.tanh(gates) if self.mode == "RNN_TANH" else torch.relu(gates)), None
        ifo = torch.sigmoid(gates[..., : 3 * H])
        g = torch.tanh(gates[..., 3 * H:])
        i, f, o = ifo[..., :H], ifo[..., H: 2 * H], ifo[..., 2 * H:]
        c = i * g if c is None else f * c + i * g
        h = o * torch.tanh(c)
        if self.proj is not None:
            h = self.proj(h)
        return h, c


class UnrolledRecurrent(nn.Module):
    """nn.LSTM / nn.GRU / nn.RNN (eval mode) as a loop of plain layers; same call signature.

    Inputs: ``(L, N, H_in)`` (``(N, L, H_in)`` if batch_first) or unbatched ``(L, H_in)``;
    optional initial state ``h0`` (GRU/RNN) or ``(h0, c0)`` (LSTM). Returns ``(output, h_n)``
    or ``(output, (h_n, c_n))`` exactly as the original module does.
    """

    def __init__(self, rnn: nn.RNNBase) -> None:
        super().__init__()
        self.mode = rnn.mode
        self.num_layers = rnn.num_layers
        self.batch_first = rnn.batch_first
        self.directions = 2 if rnn.bidirectional else 1
        suffixes = ["", "_reverse"][: self.directions]
        self.cells = nn.ModuleList(
            _Direction(rnn, layer, s) for layer in range(self.num_layers) for s in suffixes)

    def forward(self, x: torch.Tensor, hx=None):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{type(x).__name__} input (packed sequences) is not supported by the recurrent rewrite")
        unbatched = x.dim() == 2
        if unbatched:
            x = x.unsqueeze(1)
            hx = None if hx is None else tuple(s.unsqueeze(1) for s in hx) if isinstance(hx, tuple) \
                else hx.unsqueeze(1)
        time_dim = 1 if self.batch_first and not unbatched else 0
        h0, c0 = (hx if isinstance(hx, tuple) else (hx, None)) if hx is not None else (None, None)
        steps: torch.Tensor | list[torch.Tensor] = x
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(self.directions):
                k = layer * self.directions + d
                cell = self.cells[k]
                h = None if h0 is None else h0[k]
                c = None if c0 is None else c0[k]
                if self.mode == "LSTM" and h is not None and c is None:
                    raise ValueError("an LSTM initial state is a pair (h0, c0)")
                if isinstance(steps, torch.Tensor):
                    # The first layer projects the whole sequence at once: one FC instead of one per step.
                    projected = cell.ih(steps)
                    gates = [projected.select(time_dim, t) for t in range(projected.shape[time_dim])]
                else:
                    gates = [cell.ih(s) for s in steps]
                order = range(len(gates)) if d == 0 else reversed(range(len(gates)))
                seq = [None] * len(gates)
                for t in order:
                    h, c = cell.step(gates[t], h, c)
                    seq[t] = h
                outs.append(seq)
                h_n.append(h)
                c_n.append(c)
            steps = outs[0] if self.directions == 1 else [torch.cat([f, b], -1) for f, b in zip(*outs, strict=True)]
        output = _stack(steps, time_dim)
        h_n = _stack(h_n, 0)
        if unbatched:
            output, h_n = output.squeeze(1), h_n.squeeze(1)
        if self.mode != "LSTM":
            return output, h_n
        c_n = _stack(c_n, 0)
        return output, (h_n, c_n.squeeze(1) if unbatched else c_n)


def _stack(tensors: list[torch.Tensor], dim: int) -> torch.Tensor:
    """torch.stack as unsqueeze (a view) + cat, which the lowering knows; no cat of one tensor."""
    parts = [t.unsqueeze(dim) for t in tensors]
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim)


def _check(path: str, rnn: nn.RNNBase) -> None:
    base = next(b for b in RECURRENT if isinstance(rnn, b))
    if type(rnn).forward is not base.forward:
        # A subclass with its own forward may compute something else: rewriting it would be silent misfit.
        raise RecurrentRewriteError(
            f"{path or '<model>'} ({type(rnn).__name__}) overrides {base.__name__}.forward; the recurrent "
            f"rewrite only replaces plain {base.__name__} modules")


def _replacement(rnn: nn.RNNBase, fused_lstm: bool) -> nn.Module:
    unrolled = UnrolledRecurrent(rnn).eval()
    if fused_lstm and fusable(rnn):
        return FusedLSTM(rnn, unrolled).eval()
    if fused_lstm and fusable_gru(rnn):
        return FusedGRU(rnn, unrolled).eval()
    return unrolled


def rewrite_recurrent(model: nn.Module, fused_lstm: bool = False) -> nn.Module:
    """A copy of ``model`` with every nn.LSTM / nn.GRU / nn.RNN replaced by :class:`UnrolledRecurrent`, or
    with ``fused_lstm`` every unidirectional LSTM without projection by :class:`mcuforge.lstm_op.FusedLSTM`
    and every unidirectional GRU by :class:`mcuforge.lstm_op.FusedGRU` (one op per layer, lowered to the
    fused ``lstm_s8`` / ``gru_s8`` kernels).

    The model itself is returned (no copy) when it holds no recurrent module.
    """
    if not any(isinstance(m, RECURRENT) for m in model.modules()):
        return model
    for path, m in model.named_modules():
        if isinstance(m, RECURRENT):
            _check(path, m)
    if isinstance(model, RECURRENT):
        return _replacement(model, fused_lstm)
    model = copy.deepcopy(model)
    for path, m in list(model.named_modules()):
        if isinstance(m, RECURRENT):
            parent_path, _, attr = path.rpartition(".")
            parent = model.get_submodule(parent_path)
            setattr(parent, attr, _replacement(m, fused_lstm))
    return model
