"""Budgets that are kept: ``compile(..., ram_budget=, flash_budget=)`` and a named board (``board=``) either
fit the compiled program or refuse it, with the op and tensors at the RAM peak and the bytes missing.

``decide`` is the one place that says "fits / how to make it fit / refuse": today a program that does not
fit is refused; a later pass (patch-based execution of the first layers) can try to make it fit here before
refusing, and say what it did.
"""

from __future__ import annotations

from dataclasses import dataclass

from .fit import FitError, _largest
from .ir import Graph
from .plan import Key, allocations
from .program import serialize
from .regions import BoardSpec, RegionError, place


class BudgetError(FitError):
    """The program does not meet ``ram_budget`` / ``flash_budget`` (or a named board's memories): the message
    names the op and the tensors at the RAM peak, or the largest constants, and the bytes missing."""


@dataclass(frozen=True)
class Peak:
    """Where the live allocations add up to the most: no placement of the arena fits in less."""

    op: int  # the op index (-1: before the first op, only the graph inputs are live)
    live: tuple[tuple[Key, int], ...]  # (allocation, aligned bytes), largest first

    @property
    def bytes(self) -> int:
        return sum(size for _key, size in self.live)


def peak(graph: Graph) -> Peak:
    """The op at which the most bytes are live (the first such op), with the allocations live there."""
    spans = allocations(graph)
    best = Peak(-1, ())
    for i in sorted({first for first, _l, _s in spans.values()}):
        live = tuple(sorted(((k, s) for k, (f, last, s) in spans.items() if f <= i <= last),
                            key=lambda item: (-item[1], str(item[0]))))
        if sum(s for _k, s in live) > best.bytes:
            best = Peak(i, live)
    return best


def _op_name(graph: Graph, i: int) -> str:
    if i < 0:
        return "the start (graph inputs)"
    op = graph.ops[i]
    module = op.debug.get("module") or ""
    return f"op {i} ({op.kind}{f' {module!r}' if module else ''})"


def describe_peak(graph: Graph, count: int = 4) -> str:
    """"at op 3 (conv2d_s8 'features.0.0') the live buffers are a (4,096 B), ... (12,288 B in all)"."""
    p = peak(graph)
    names = [f"op {k}'s scratch ({s:,} B)" if isinstance(k, int) else f"{k} ({s:,} B)" for k, s in p.live]
    more = f", and {len(names) - count} more" if len(names) > count else ""
    return f"at {_op_name(graph, p.op)} the live buffers are {', '.join(names[:count])}{more} ({p.bytes:,} B in all)"


def ram_problem(graph: Graph, limit: int, what: str) -> str | None:
    """Why the arena does not fit ``limit`` bytes (``what`` names the limit), or None."""
    need = graph.ram_bytes
    if need <= limit:
        return None
    return f"{what} {limit:,} B: the arena needs {need:,} B; {describe_peak(graph)}; short by {need - limit:,} B"


def flash_problem(graph: Graph, program_bytes: int, limit: int, what: str) -> str | None:
    """Why the program file does not fit ``limit`` bytes, or None."""
    if program_bytes <= limit:
        return None
    return (f"{what} {limit:,} B: the program needs {program_bytes:,} B ({graph.constant_bytes:,} B of constants); "
            f"largest constants: {_largest(graph, True)}; short by {program_bytes - limit:,} B")


def decide(graph: Graph, program_bytes: int | None = None, *, ram_budget: int | None = None,
           flash_budget: int | None = None, board: BoardSpec | None = None, fit_check: bool = True) -> int:
    """Make the planned program meet its budgets and board, or refuse it: places it into ``board``'s RAM
    regions (``mcuforge.regions.place``), then raises :class:`BudgetError` with every budget it misses and
    ``RegionError`` / ``FitError`` when it does not fit the board (``fit_check=False``: the board's check
    is skipped and a program that fits no region split keeps its one arena; budgets are always kept).
    Returns the program file's bytes. (The hook where a pass that lowers the peak -- patch-based
    execution -- would be tried before refusing.)"""
    for name, value in (("ram_budget", ram_budget), ("flash_budget", flash_budget)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            raise ValueError(f"{name} must be a positive number of bytes, got {value!r}")
    if board is not None:
        try:
            place(graph, board)
        except RegionError:
            if fit_check:
                raise
    if program_bytes is None or board is not None:
        program_bytes = len(serialize(graph))
    problems = []
    if ram_budget is not None:
        problems.append(ram_problem(graph, ram_budget, "ram_budget"))
    if flash_budget is not None:
        problems.append(flash_problem(graph, program_bytes, flash_budget, "flash_budget"))
    problems = [p for p in problems if p]
    if problems:
        raise BudgetError("the program does not meet its budget: " + "; and ".join(problems)
                          + ". Shrink the model, try precision='auto' (narrower weights and activations where they "
                            "cost least), or raise the budget")
    if board is not None and fit_check:
        flash = board.flash  # the program file's home, also when its constants are copied to RAM
        problem = flash_problem(graph, program_bytes, flash.size, f"{board.name}'s {flash.name}")
        if problem:
            raise FitError(f"the program does not fit {board.name}: {problem}")
    return program_bytes
