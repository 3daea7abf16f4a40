"""An LSTM layer as one graph op: the ``mcuforge::lstm`` custom op that the compiler lowers to one fused
``lstm_s8`` kernel (CMSIS-NN's ``arm_lstm_unidirectional_s8``: int8 input and output, int16 gates and
cell state).

torch.export keeps a custom op as one node, PT2E's prepare/convert pass it through like any op, and the
quantizer annotates it. What an LSTM's integer kernel needs beyond its input and output quantization is
the cell state's range; one op cannot have it observed (an op's output carries one quantization), so a
layer is two ops:

- ``mcuforge::lstm_cell_states(x, w_ih, w_hh, bias)``: the cell state of every step, (N, T, H), whose
  output the quantizer observes (int16 symmetric, power-of-two scale: the cell state's quantization);
- ``mcuforge::lstm(x, cell_states, w_ih, w_hh, bias)``: the hidden state of every step, (N, T, H). It
  takes the cell states only to carry their quantization to the lowering (it recomputes them in fp32).

Both are batch first, gates in torch's order (i, f, g, o), one bias (``b_ih + b_hh``), zero initial
state. :class:`FusedLSTM` replaces an nn.LSTM with them (one pair per layer); calls it does not cover (an
initial state, a packed sequence) run the unrolled rewrite it holds (:mod:`mcuforge.rnn`).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


def _run_lstm(x: Tensor, w_ih: Tensor, w_hh: Tensor, bias: Tensor) -> tuple[Tensor, Tensor]:
    """fp32 LSTM over (N, T, I) from the zero state: (hidden states, cell states), each (N, T, H)."""
    n, steps, _ = x.shape
    hidden = w_hh.shape[1]
    gates_x = torch.nn.functional.linear(x, w_ih, bias)
    h = x.new_zeros(n, hidden)
    c = x.new_zeros(n, hidden)
    hs, cs = [], []
    for t in range(steps):
        gates = gates_x[:, t] + torch.nn.functional.linear(h, w_hh)
        i, f, g, o = gates.chunk(4, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        hs.append(h)
        cs.append(c)
    return torch.stack(hs, 1), torch.stack(cs, 1)


@torch.library.custom_op("mcuforge::lstm_cell_states", mutates_args=())
def lstm_cell_states(x: Tensor, w_ih: Tensor, w_hh: Tensor, bias: Tensor) -> Tensor:
    """The cell state of every time step of one LSTM layer, (N, T, H) (observed for its quantization)."""
    return _run_lstm(x, w_ih, w_hh, bias)[1]


@lstm_cell_states.register_fake
def _lstm_cell_states_fake(x: Tensor, w_ih: Tensor, w_hh: Tensor, bias: Tensor) -> Tensor:
    return x.new_empty(x.shape[0], x.shape[1], w_hh.shape[1])


@torch.library.custom_op("mcuforge::lstm", mutates_args=())
def lstm(x: Tensor, cell_states: Tensor, w_ih: Tensor, w_hh: Tensor, bias: Tensor) -> Tensor:
    """The hidden state (output) of every time step of one LSTM layer, (N, T, H); ``cell_states`` is only
    read for its quantization."""
    out, _ = torch.lstm(x, (x.new_zeros(1, x.shape[0], w_hh.shape[1]),) * 2,
                        [w_ih, w_hh, bias, torch.zeros_like(bias)], True, 1, 0.0, False, False, True)[:2]
    return out


@lstm.register_fake
def _lstm_fake(x: Tensor, cell_states: Tensor, w_ih: Tensor, w_hh: Tensor, bias: Tensor) -> Tensor:
    return x.new_empty(x.shape[0], x.shape[1], w_hh.shape[1])


LSTM_OPS = {torch.ops.mcuforge.lstm.default}
LSTM_CELL_STATE_OPS = {torch.ops.mcuforge.lstm_cell_states.default}


def cell_states_escape(gm: torch.fx.GraphModule) -> bool:
    """Whether the captured graph reads an LSTM layer's cell states beyond its ``mcuforge::lstm`` (the model
    uses c_n): lstm_s8 computes only the hidden states, so such a model is captured unrolled instead. Dead
    nodes (the c_n that FusedLSTM always builds) are removed first."""
    if not any(node.target in LSTM_CELL_STATE_OPS for node in gm.graph.nodes):
        return False  # no fused LSTM: the graph is left as captured
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return any(node.target in LSTM_CELL_STATE_OPS and any(user.target not in LSTM_OPS for user in node.users)
               for node in gm.graph.nodes)


def fusable(rnn: nn.Module) -> bool:
    """Whether :class:`FusedLSTM` runs ``rnn`` as fused layers: a unidirectional nn.LSTM without projection."""
    return isinstance(rnn, nn.LSTM) and not rnn.bidirectional and getattr(rnn, "proj_size", 0) == 0


class _Fused(nn.Module):
    """One op per layer of a unidirectional nn.LSTM / nn.GRU, the layers' weights as buffers; calls with an
    initial state or an unbatched input run ``unrolled`` (the plain-layer rewrite of mcuforge.rnn)."""

    def __init__(self, rnn: nn.RNNBase, unrolled: nn.Module, fold_bias: bool) -> None:
        super().__init__()
        self.batch_first = rnn.batch_first
        self.num_layers = rnn.num_layers
        # Not a registered submodule: its copies of the weights would be dead constants of the export.
        object.__setattr__(self, "unrolled", unrolled)
        for layer in range(rnn.num_layers):
            get = lambda name: getattr(rnn, f"{name}_l{layer}").detach().clone()  # noqa: E731, B023
            w_ih, w_hh = get("weight_ih"), get("weight_hh")
            b_ih = get("bias_ih") if rnn.bias else torch.zeros(w_ih.shape[0])
            b_hh = get("bias_hh") if rnn.bias else torch.zeros(w_hh.shape[0])
            self.register_buffer(f"w_ih_{layer}", w_ih)
            self.register_buffer(f"w_hh_{layer}", w_hh)
            biases = [b_ih + b_hh] if fold_bias else [b_ih, b_hh]
            for k, bias in enumerate(biases):
                self.register_buffer(f"bias{k}_{layer}", bias)
        self.biases = 1 if fold_bias else 2

    def params(self, layer: int) -> list[Tensor]:
        names = ["w_ih", "w_hh", *(f"bias{k}" for k in range(self.biases))]
        return [getattr(self, f"{name}_{layer}") for name in names]

    def layer(self, seq: Tensor, layer: int) -> tuple[Tensor, Tensor | None]:
        raise NotImplementedError

    def forward(self, x: Tensor, hx=None):
        if hx is not None or not isinstance(x, Tensor) or x.dim() != 3:
            return self.unrolled(x, hx)
        seq = x if self.batch_first else x.transpose(0, 1)
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            seq, cells = self.layer(seq, layer)
            h_n.append(seq[:, -1].unsqueeze(0))
            if cells is not None:
                c_n.append(cells[:, -1].unsqueeze(0))
        output = seq if self.batch_first else seq.transpose(0, 1)
        cat = (lambda ts: ts[0] if len(ts) == 1 else torch.cat(ts, 0))  # noqa: E731
        return output, ((cat(h_n), cat(c_n)) if c_n else cat(h_n))


class FusedLSTM(_Fused):
    """nn.LSTM (unidirectional, no projection) as one ``mcuforge::lstm`` per layer; same call signature."""

    def __init__(self, rnn: nn.LSTM, unrolled: nn.Module) -> None:
        super().__init__(rnn, unrolled, fold_bias=True)

    def layer(self, seq: Tensor, layer: int) -> tuple[Tensor, Tensor]:
        w_ih, w_hh, bias = self.params(layer)
        cells = torch.ops.mcuforge.lstm_cell_states(seq, w_ih, w_hh, bias)
        return torch.ops.mcuforge.lstm(seq, cells, w_ih, w_hh, bias), cells


def _run_gru(x: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor, b_hh: Tensor) -> Tensor:
    out, _ = torch.gru(x, x.new_zeros(1, x.shape[0], w_hh.shape[1]), [w_ih, w_hh, b_ih, b_hh], True, 1, 0.0, False,
                       False, True)
    return out


@torch.library.custom_op("mcuforge::gru", mutates_args=())
def gru(x: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor, b_hh: Tensor) -> Tensor:
    """The hidden state (output) of every time step of one GRU layer, (N, T, H), batch first, zero initial
    state, gates in torch's order (r, z, n). Its integer kernel (gru_s8) keeps the state in int16 Q0.15
    (|h| <= 1 from the zero state), so only the input and output quantization are observed."""
    return _run_gru(x, w_ih, w_hh, b_ih, b_hh)


@gru.register_fake
def _gru_fake(x: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor, b_hh: Tensor) -> Tensor:
    return x.new_empty(x.shape[0], x.shape[1], w_hh.shape[1])


GRU_OPS = {torch.ops.mcuforge.gru.default}


def fusable_gru(rnn: nn.Module) -> bool:
    """Whether :class:`FusedGRU` runs ``rnn`` as fused layers: a unidirectional nn.GRU."""
    return isinstance(rnn, nn.GRU) and not rnn.bidirectional


class FusedGRU(_Fused):
    """nn.GRU (unidirectional) as one ``mcuforge::gru`` per layer; same call signature."""

    def __init__(self, rnn: nn.GRU, unrolled: nn.Module) -> None:
        super().__init__(rnn, unrolled, fold_bias=False)

    def layer(self, seq: Tensor, layer: int) -> tuple[Tensor, None]:
        return torch.ops.mcuforge.gru(seq, *self.params(layer)), None
