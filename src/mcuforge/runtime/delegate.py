"""The host runtime's ``delegate`` kernel: the delegated subgraph runs on tosa-tools' reference model
(the TOSA flatbuffer the delegate op carries), one run at a time."""

from __future__ import annotations

import numpy as np

from ..ir import Op
from ..tosa.reference import run_reference


def run_delegate(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> list[np.ndarray]:
    n_act = op.attrs["input_count"]
    if len(ins) - n_act < 3:
        raise ValueError("this delegate op carries no TOSA graph (it was stripped): the host cannot run it; "
                         "run the program on a board with the NPU")
    flatbuffer = ins[n_act + 2][0].tobytes()
    acts = ins[:n_act]
    runs = outs[0].shape[0] if outs else 1
    results: list[list[np.ndarray]] = [[] for _ in outs]
    for g in range(runs):
        values = run_reference(flatbuffer, [x[g if x.shape[0] > 1 else 0] for x in acts])
        for k, v in enumerate(values):
            results[k].append(np.asarray(v).reshape(outs[k].shape[1:]))
    return [np.stack(r) for r in results]
