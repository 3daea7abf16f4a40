"""Run a serialized TOSA graph on tosa-tools' reference model.

The reference model validates the graph before running it; mcuforge's lowering types every zero
point itself (a wrongly typed one would crash the reference model's process), so graphs it emits
run in-process. ``isolated=True`` runs a graph from elsewhere in a child process instead.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from collections.abc import Sequence

import numpy as np


class TosaReferenceError(RuntimeError):
    """The reference model rejected the graph or reported an unpredictable/invalid run."""


def run_reference(flatbuffer: bytes, inputs: Sequence[np.ndarray], *, isolated: bool = False) -> list[np.ndarray]:
    """Outputs of the TOSA graph on ``inputs`` (in graph-input order), as numpy arrays."""
    arrays = [np.ascontiguousarray(x) for x in inputs]
    if isolated:
        proc = subprocess.run([sys.executable, "-m", "mcuforge.tosa.reference"],
                              input=pickle.dumps((flatbuffer, arrays)), capture_output=True, check=False)
        if proc.returncode != 0:
            raise TosaReferenceError(f"the TOSA reference model failed (exit {proc.returncode}): "
                                     f"{proc.stderr.decode(errors='replace')[-2000:]}")
        result = pickle.loads(proc.stdout)
        if isinstance(result, str):
            raise TosaReferenceError(result)
        return result
    import tosa_reference_model as trm

    try:
        outs, status = trm.run(flatbuffer, arrays, verbosity="NONE")
    except ValueError as exc:
        raise TosaReferenceError(f"the TOSA reference model rejected the graph: {exc}") from exc
    if status != trm.GraphStatus.TOSA_VALID:
        raise TosaReferenceError(f"the TOSA reference model reported {status.name}")
    return [np.asarray(o) for o in outs]


def _child() -> None:  # pragma: no cover - runs in a subprocess
    import os

    flatbuffer, arrays = pickle.loads(sys.stdin.buffer.read())
    result_fd = os.dup(1)
    os.dup2(2, 1)  # the reference model prints to stdout: keep it out of the pickled result
    try:
        result = run_reference(flatbuffer, arrays)
    except TosaReferenceError as exc:
        result = str(exc)
    with os.fdopen(result_fd, "wb") as out:
        out.write(pickle.dumps(result))


if __name__ == "__main__":
    _child()
