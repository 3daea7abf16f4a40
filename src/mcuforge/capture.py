"""Capture: torch.export of any nn.Module (custom modules included) into an ATen graph."""

from __future__ import annotations

import copy
import io
import logging
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, redirect_stderr

import torch
from torch import nn

from .diagnose import check_captured, check_model, explain_export_failure
from .lstm_op import cell_states_escape
from .rnn import rewrite_recurrent


class CaptureError(RuntimeError):
    """The model cannot be captured as one static graph: the message (one line) names the module, the op
    and the cause, and the fix when there is one."""


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


@contextmanager
def eval_mode(model: nn.Module) -> Iterator[nn.Module]:
    """``model`` in eval mode for the duration, each submodule's own mode restored afterwards.

    A model handed over in training mode is compiled as it runs in inference (dropout off,
    BatchNorm with its running statistics), with a warning that says so: the compiled program
    could not reproduce training-mode behaviour anyway.
    """
    modes = [(m, m.training) for m in model.modules()]
    training = [name or "<top>" for name, m in model.named_modules() if m.training]
    if training:
        more = f" and {len(training) - 3} more" if len(training) > 3 else ""
        names = ", ".join(repr(t) for t in training[:3])
        # stacklevel: the user's line under mcuforge.compile -> compiler.compile_fixed -> capture -> with eval_mode
        warnings.warn(f"{type(model).__name__} is in training mode (module(s) {names}{more}): compiled in eval "
                      "mode (dropout off, BatchNorm with its running statistics). "
                      "Call model.eval() before compiling to silence this.", stacklevel=6)
    try:
        yield model.eval()
    finally:
        for module, mode in modes:
            module.training = mode


def capture(model: nn.Module, example_inputs: Sequence[torch.Tensor]) -> torch.fx.GraphModule:
    """Export ``model`` in eval mode with static shapes; returns the ATen-level GraphModule.

    The model's own training/eval mode is left as it was (see :func:`eval_mode`).
    ``check_guards=False`` keeps torch.export from inserting a ``_guards_fn`` call_module that
    the PT2E passes and our lowering do not expect. A model that cannot be captured is a CaptureError
    of one line naming the module, the line of code and the fix (:mod:`mcuforge.diagnose`).
    """
    args = as_input_tuple(example_inputs)
    key = (id(model), tuple((tuple(x.shape), x.dtype) for x in args))
    if _REUSE is not None and key in _REUSE and _REUSE[key][0] is model:
        return copy.deepcopy(_REUSE[key][1])  # every later pass changes its graph in place: a fresh copy each time
    problem = check_model(model, args)
    if problem:
        raise CaptureError(problem)
    with eval_mode(model):
        # nn.LSTM / nn.GRU -> one fused op per layer (mcuforge.lstm_op), nn.RNN -> unrolled Linear + gates (a copy)
        gm = _export(rewrite_recurrent(model, fused_lstm=True), args)
        if cell_states_escape(gm):  # the model reads an LSTM's c_n, which the fused kernel does not give
            gm = _export(rewrite_recurrent(model, fused_lstm=False), args)
    if _REUSE is not None:
        _REUSE[key] = (model, copy.deepcopy(gm))
    return gm


#: Captures kept while :func:`reusing_captures` is active: (id(model), input shapes and dtypes) -> (model, graph).
_REUSE: dict[tuple[object, ...], tuple[nn.Module, torch.fx.GraphModule]] | None = None


@contextmanager
def reusing_captures() -> Iterator[None]:
    """Within: :func:`capture` exports each model (the same object, inputs of the same shapes and dtypes) once
    and returns a copy of that graph after. torch.export of one module at static shapes gives the same graph
    every time, so the programs are the same byte for byte (tests/test_sweep.py checks an auto compile);
    it takes ~0.5 s a DS-CNN, the copy ~10 ms, and a sensitivity analysis compiles one model ~25 times.
    The model must not change inside (its weights are in the kept graph). Nested uses share one memo."""
    global _REUSE
    outer = _REUSE
    _REUSE = {} if outer is None else outer
    try:
        yield
    finally:
        _REUSE = outer


def _export(exportable: nn.Module, args: tuple[torch.Tensor, ...]) -> torch.fx.GraphModule:
    try:
        with quiet_torch_logs():
            exported = torch.export.export(exportable, args)
    except Exception as exc:  # noqa: BLE001 - torch raises many types here
        raise CaptureError(explain_export_failure(exc, exportable, args)) from exc
    return exported.module(check_guards=False)


def check_compilable(gm: torch.fx.GraphModule) -> None:
    """CaptureError (one line) if the captured graph holds what no program can: a tensor whose size depends
    on the data, complex or float64 values (:func:`mcuforge.diagnose.check_captured`)."""
    problem = check_captured(gm)
    if problem:
        raise CaptureError(problem)


@contextmanager
def quiet_torch_logs() -> Iterator[None]:
    """torch.export logs and prints the partial graph and the failing meta kernel's traceback before it
    raises: the CaptureError says what matters in one line, so those are held back while exporting
    (what was written to stderr comes back out if the export succeeds)."""
    loggers = [logging.getLogger(name) for name in list(logging.root.manager.loggerDict)
               if name == "torch" or name.startswith("torch.")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    held = io.StringIO()
    try:
        with redirect_stderr(held):
            yield
        sys.stderr.write(held.getvalue())
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)
