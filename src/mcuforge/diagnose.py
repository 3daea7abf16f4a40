"""Why a model cannot be compiled, in one line a user can act on: the module path, the op or line of
code, the cause and the fix.

``check_model(model, inputs)`` refuses before capture what no export can fix (float64 or complex
inputs and parameters, inputs the forward does not take); ``explain_export_failure`` turns a
torch.export exception into the line (data-dependent control flow, inputs whose shapes do not fit the
model, the rest); ``check_captured`` refuses what torch.export captured but no int8/fp32 program can
hold (tensors whose size depends on the data, complex or float64 values inside the model).
"""

from __future__ import annotations

import inspect
import linecache
from pathlib import Path
from types import TracebackType

import torch
from torch import fx, nn

UNSUPPORTED_DTYPES = {
    torch.float64: "mcuforge computes in float32 and int8: call model.float() and pass float32 inputs",
    torch.complex64: "mcuforge has no complex kernels: compute the complex part (e.g. an FFT) before the model "
                     "and feed it real features such as magnitudes",
    torch.complex128: "mcuforge has no complex kernels: feed real features (e.g. magnitudes) instead",
    torch.float16: "mcuforge calibrates from float32: call model.float() and pass float32 inputs",
    torch.bfloat16: "mcuforge calibrates from float32: call model.float() and pass float32 inputs",
}


def _describe(x: torch.Tensor) -> str:
    return f"{str(x.dtype).removeprefix('torch.')}{list(x.shape)}"


def _forward_signature(model: nn.Module) -> str:
    try:
        params = list(inspect.signature(model.forward).parameters)
    except (TypeError, ValueError):
        return "forward(...)"
    return f"{type(model).__name__}.forward({', '.join(params)})"


def check_model(model: object, inputs: tuple[torch.Tensor, ...]) -> str | None:
    """What is wrong with the model or its example inputs before capture, or None."""
    if not isinstance(model, nn.Module):
        return f"the model is a {type(model).__name__}, not a torch.nn.Module"
    for i, x in enumerate(inputs):
        if x.dtype in UNSUPPORTED_DTYPES:
            return f"example input {i} is {_describe(x)}: {UNSUPPORTED_DTYPES[x.dtype]}"
    for kind, items in (("parameter", model.named_parameters()), ("buffer", model.named_buffers())):
        for name, value in items:
            if value.dtype in UNSUPPORTED_DTYPES:
                module, _, leaf = name.rpartition(".")
                return (f"module '{module or '<top>'}' has {str(value.dtype).removeprefix('torch.')} {kind} "
                        f"'{leaf}': {UNSUPPORTED_DTYPES[value.dtype]}")
    try:
        inspect.signature(model.forward).bind(*inputs)
    except TypeError as exc:
        return (f"the example inputs do not match {_forward_signature(model)}: {len(inputs)} given "
                f"({', '.join(map(_describe, inputs)) or 'none'}): {exc}")
    except ValueError:  # a forward without an inspectable signature: torch.export will say
        pass
    return None


# -- export failures -------------------------------------------------------------------------------


def _frames(exc: BaseException) -> list:
    """Every frame of the exception's traceback and of the exceptions it was raised from, outermost first."""
    frames, seen, pending = [], set(), [exc]
    while pending:
        e = pending.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        tb: TracebackType | None = e.__traceback__
        while tb is not None:
            frames.append((tb.tb_frame, tb.tb_lineno))
            tb = tb.tb_next
        pending += [e.__cause__, e.__context__]
    return frames


_MODULE_PY = inspect.getfile(nn.Module)


def _where(exc: BaseException, model: nn.Module) -> str:
    """ "module 'gate' (Gate) at models.py:12 `if x.sum() > 0:`" for the innermost frame of one of the
    model's modules in the traceback, or "" when none is there."""
    paths = {id(m): name or "<top>" for name, m in model.named_modules()}
    found = None
    for frame, line in _frames(exc):
        code = frame.f_code
        module = frame.f_locals.get(code.co_varnames[0]) if code.co_argcount else None  # `self`, by any name
        # a method of the module's own class (its forward, a helper), not nn.Module's call machinery
        if isinstance(module, nn.Module) and id(module) in paths and code.co_filename != _MODULE_PY:
            found = (module, frame, line)
    if found is None:
        return ""
    module, frame, line = found
    text = linecache.getline(frame.f_code.co_filename, line).strip()
    return (f" in module '{paths[id(module)]}' ({type(module).__name__}) at "
            f"{Path(frame.f_code.co_filename).name}:{line}" + (f" `{text}`" if text else ""))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


DATA_DEPENDENT = ("GuardOnDataDependentSymNode", "DataDependentOutputException")


def explain_export_failure(exc: BaseException, model: nn.Module, inputs: tuple[torch.Tensor, ...]) -> str:
    """One line for a torch.export failure: where in the model, what, and the fix when there is one."""
    where = _where(exc, model)
    text = str(exc)
    name = type(model).__name__
    if "data-dependent" in text or type(exc).__name__ in DATA_DEPENDENT:
        return (f"data-dependent control flow{where or f' in {name}'}: the branch depends on the input's values and "
                "a compiled program is one fixed graph; write it with torch.cond(pred, true_fn, false_fn, operands) "
                "or make the condition static (decided when the module is built, not from the data)")
    if isinstance(exc, RuntimeError | TypeError | ValueError | IndexError) and where:
        return (f"the example inputs do not fit {name}{where}: {_first_line(exc)} "
                f"(example inputs: {', '.join(map(_describe, inputs))})")
    return f"torch.export could not capture {name}{where}: {type(exc).__name__}: {_first_line(exc)}"


# -- what export captured but a program cannot hold ------------------------------------------------


def _node_where(node: fx.Node) -> str:
    from .nodes import module_path, module_type

    path = module_path(node) or "<top>"
    kind = module_type(node)
    return f"module '{path}'{f' ({kind})' if kind else ''} op {node.target}"


def check_captured(gm: fx.GraphModule) -> str | None:
    """The first value in the captured graph that no program can hold, as one line; or None."""
    for node in gm.graph.nodes:
        value = node.meta.get("val")
        if not isinstance(value, torch.Tensor):
            continue
        if any(not isinstance(d, int) for d in value.shape):
            shape = ", ".join(str(d) for d in value.shape)
            return (f"dynamic shape: {_node_where(node)} gives a tensor of shape [{shape}], whose size depends "
                    "on the input's values; a program's shapes and arena are fixed at compile time: compute a "
                    "fixed-size result instead (e.g. torch.where(mask, x, 0) for x[mask] or nonzero)")
        if value.dtype in UNSUPPORTED_DTYPES and node.op != "placeholder":
            return (f"unsupported dtype: {_node_where(node)} gives {_describe(value)}: "
                    f"{UNSUPPORTED_DTYPES[value.dtype]}")
    return None
