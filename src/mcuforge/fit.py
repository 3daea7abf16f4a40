"""Does a compiled program fit a board? The flash its file needs and the RAM its arena needs, against
the target's reference board (``targets.py``) or the part the user names (``flash_bytes=``,
``ram_bytes=``). A program that does not fit is a compile error that says by how much and what is
largest, so the user knows what to shrink.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ir import Graph
from .targets import BoardMemory, get_target

USER_PART = "the given part"


class FitError(ValueError):
    """The program does not fit the board's flash or RAM (a user error: the message says by how much)."""


@dataclass(frozen=True)
class Fit:
    board: BoardMemory  # the limits checked (the reference board, or one with the user's figures)
    program_bytes: int  # flash: the program file (constants included)
    ram_bytes: int  # the arena: activations and the largest op scratch

    @property
    def shared(self) -> bool:
        """The program is read into the arena's RAM (no flash of its own)."""
        return self.board.flash_bytes is None

    @property
    def overflows(self) -> list[tuple[str, int, int]]:
        """(memory, bytes needed, bytes the board has) of each memory that is too small."""
        if self.shared:
            need = self.program_bytes + self.ram_bytes
            return [("RAM (program + arena)", need, self.board.ram_bytes)] if need > self.board.ram_bytes else []
        out = []
        if self.program_bytes > self.board.flash_bytes:
            out.append(("flash", self.program_bytes, self.board.flash_bytes))
        if self.ram_bytes > self.board.ram_bytes:
            out.append(("RAM", self.ram_bytes, self.board.ram_bytes))
        return out


def board_for(target: str, flash_bytes: int | None = None, ram_bytes: int | None = None) -> BoardMemory:
    """The limits to check: the target's reference board, with the user's figures where given."""
    ref = get_target(target.split("+", 1)[0]).reference_board
    for name, value in (("flash_bytes", flash_bytes), ("ram_bytes", ram_bytes)):
        if value is not None and (not isinstance(value, int) or value <= 0):
            raise ValueError(f"{name} must be a positive number of bytes, got {value!r}")
    if flash_bytes is None and ram_bytes is None:
        return ref
    # Only RAM given against a board without flash of its own: the part's flash is not checked (a
    # program file is at most 4 GiB anyway).
    flash = flash_bytes if flash_bytes is not None else ref.flash_bytes or 0xFFFF_FFFF
    ram = ram_bytes if ram_bytes is not None else ref.ram_bytes
    return BoardMemory(USER_PART, flash, ram)


def _largest(graph: Graph, constants: bool, count: int = 3) -> str:
    """The ``count`` largest constants (or activations), each with the module and op that use it."""
    user = {}
    for op in graph.ops:
        for name in (*op.inputs, *op.outputs):
            user.setdefault(name, f"module '{op.debug.get('module') or '?'}', {op.kind}")
    tensors = sorted((t for t in graph.tensors.values() if t.is_constant == constants),
                     key=lambda t: -t.nbytes)[:count]
    return ", ".join(f"{t.nbytes:,} B {t.name} ({user.get(t.name, 'graph I/O')})" for t in tensors) or "none"


def fit_problem(graph: Graph, program_bytes: int, board: BoardMemory) -> str | None:
    """One line saying why the program does not fit ``board`` (None when it fits)."""
    fit = Fit(board, program_bytes, graph.ram_bytes)
    if not fit.overflows:
        return None
    parts = [f"{what} needs {need:,} bytes, it has {have:,} ({need - have:,} bytes too many)"
             for what, need, have in fit.overflows]
    largest = []
    if any(what != "RAM" for what, _n, _h in fit.overflows):
        largest.append(f"largest constants: {_largest(graph, True)}")
    if any(what != "flash" for what, _n, _h in fit.overflows):
        largest.append(f"largest activations: {_largest(graph, False)}")
    where = board.name if board.name == USER_PART else f"{board.name}, the {graph.target} reference board"
    return (f"the program does not fit {where}: {'; '.join(parts)}; {'; '.join(largest)}. "
            "Give your part's flash_bytes=/ram_bytes= (--flash-bytes/--ram-bytes), shrink the model, "
            "or pass fit_check=False (--no-fit-check) to write it anyway")


def check_fit(graph: Graph, program_bytes: int, target: str, flash_bytes: int | None = None,
              ram_bytes: int | None = None) -> Fit:
    """The program's fit on the board; FitError (one line) if it does not fit."""
    board = board_for(target, flash_bytes, ram_bytes)
    problem = fit_problem(graph, program_bytes, board)
    if problem:
        raise FitError(problem)
    return Fit(board, program_bytes, graph.ram_bytes)
