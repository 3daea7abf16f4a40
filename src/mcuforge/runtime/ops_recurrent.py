"""The adapters of the recurrent kinds (lstm_s8, gru_s8): one layer over the whole sequence, the run axis taken as
more batch rows, the kernel prepared once per op."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..ir import Op
from ..kernels.gru import prepare_gru_s8
from ..kernels.lstm import prepare_lstm_s8
from .operands import constant
from .prepared import prepared


def _recurrent(prepare: Callable[..., Any]) -> Callable[[Op, list[np.ndarray], list[np.ndarray]], np.ndarray]:
    def run_layer(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
        x = ins[0]
        run = prepared(op, ins[1:], (), lambda: prepare(*(constant(c) for c in ins[1:]), **op.attrs))
        return run(x.reshape(-1, *x.shape[2:])).reshape(outs[0].shape)  # the run axis: more batch rows
    return run_layer


RECURRENT_KERNELS = {"lstm_s8": _recurrent(prepare_lstm_s8), "gru_s8": _recurrent(prepare_gru_s8)}
