"""The nn.LSTM / nn.GRU / nn.RNN rewrite: equal to the fused modules in fp32, and capturable."""

import pytest
import torch
from torch import nn

from mcuforge.capture import capture
from mcuforge.rnn import RecurrentRewriteError, UnrolledRecurrent, rewrite_recurrent

CONFIGS = [
    dict(num_layers=1, batch_first=True),
    dict(num_layers=2, batch_first=True),
    dict(num_layers=1, batch_first=False),
    dict(num_layers=3, batch_first=False, bias=False),
    dict(num_layers=2, batch_first=True, bidirectional=True),
]


def _inputs(cfg, batch=3, steps=7, features=5, seed=0):
    gen = torch.Generator().manual_seed(seed)
    shape = (batch, steps, features) if cfg.get("batch_first") else (steps, batch, features)
    return torch.randn(shape, generator=gen)


def _state(rnn, batch, seed=1):
    gen = torch.Generator().manual_seed(seed)
    d = 2 if rnn.bidirectional else 1
    h_size = rnn.proj_size if getattr(rnn, "proj_size", 0) else rnn.hidden_size
    h0 = torch.randn(rnn.num_layers * d, batch, h_size, generator=gen)
    if isinstance(rnn, nn.LSTM):
        return h0, torch.randn(rnn.num_layers * d, batch, rnn.hidden_size, generator=gen)
    return h0


def _assert_same(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _assert_same(g, w)
        return
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU, nn.RNN])
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
@pytest.mark.parametrize("with_state", [False, True], ids=["zero-state", "given-state"])
def test_rewrite_equals_fused_module(cls, cfg, with_state):
    torch.manual_seed(0)
    rnn = cls(5, 6, **cfg).eval()
    x = _inputs(cfg)
    args = (x, _state(rnn, 3)) if with_state else (x,)
    unrolled = rewrite_recurrent(rnn)
    assert isinstance(unrolled, UnrolledRecurrent)
    with torch.no_grad():
        want, got = rnn(*args), unrolled(*args)
    _assert_same(got, want)  # (output, h_n) or (output, (h_n, c_n))


@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
def test_lstm_projection_and_unbatched_input():
    torch.manual_seed(0)
    rnn = nn.LSTM(4, 8, num_layers=2, proj_size=3).eval()
    x = torch.randn(6, 4)  # unbatched (L, H_in)
    with torch.no_grad():
        _assert_same(rewrite_recurrent(rnn)(x), rnn(x))
        xb = torch.randn(6, 2, 4)
        _assert_same(rewrite_recurrent(rnn)(xb, _state(rnn, 2)), rnn(xb, _state(rnn, 2)))


class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(10, 10), nn.ReLU())
        self.rnn = nn.GRU(10, 16, batch_first=True, num_layers=2)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        _, h = self.rnn(self.encoder(x))
        return self.head(h[-1])


def test_nested_module_is_replaced_in_a_copy_and_captured():
    torch.manual_seed(0)
    model = Classifier().eval()
    x = torch.randn(2, 9, 10)
    rewritten = rewrite_recurrent(model)
    assert isinstance(model.rnn, nn.GRU), "the user's model must not be modified"
    assert isinstance(rewritten.rnn, UnrolledRecurrent)
    with torch.no_grad():
        _assert_same(rewritten(x), model(x))
    gm = capture(model, (x,))  # capture fuses each GRU layer into one mcuforge::gru op (mcuforge.lstm_op)
    targets = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    assert targets.count("mcuforge.gru.default") == 2 and "aten.gru.input" not in targets, targets
    with torch.no_grad():
        torch.testing.assert_close(gm(x), model(x), rtol=1e-5, atol=1e-6)


def test_model_without_recurrence_is_returned_as_is():
    model = nn.Linear(3, 3)
    assert rewrite_recurrent(model) is model


def test_subclass_with_own_forward_is_rejected_with_its_path():
    class MyLSTM(nn.LSTM):
        def forward(self, x, hx=None):
            return super().forward(x * 2, hx)

    model = nn.Sequential(nn.Linear(3, 3), nn.Sequential(MyLSTM(3, 4)))
    with pytest.raises(RecurrentRewriteError, match=r"1\.0 \(MyLSTM\)"):
        rewrite_recurrent(model)
