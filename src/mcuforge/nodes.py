"""What an exported graph's node says about the user's model: its module path and type, the source line and a
one-line description. A leaf module (torch only), so capture, diagnose, quantize and lower all read it without
importing each other."""

from __future__ import annotations

import re

from torch import fx


def module_path(node: fx.Node) -> str:
    """The user's module path of a node, e.g. ``features.3.conv.0`` (empty for the top module)."""
    stack = node.meta.get("nn_module_stack")
    if not stack:
        return ""
    path, _cls = list(stack.values())[-1]
    return re.sub(r"^L__self__[._]?", "", str(path)).replace("L__self___", "")


def module_type(node: fx.Node) -> str:
    stack = node.meta.get("nn_module_stack")
    if not stack:
        return ""
    _path, cls = list(stack.values())[-1]
    return getattr(cls, "__name__", str(cls)).rsplit(".", 1)[-1]


def source_line(node: fx.Node) -> str:
    """The innermost ``file:line`` of the user's code that produced the node."""
    trace = node.meta.get("stack_trace") or ""
    frames = re.findall(r'File "([^"]+)", line (\d+)', trace)
    user = [f for f in frames if "/torch/" not in f[0]] or frames
    return f"{user[-1][0]}:{user[-1][1]}" if user else ""


def op_name(node: fx.Node) -> str:
    target = node.target
    return str(getattr(target, "__name__", target)) if node.op == "call_function" else node.op


def describe(node: fx.Node) -> str:
    path = module_path(node)
    return f"{op_name(node)} in module '{path or '<top>'}' (node {node.name})"
