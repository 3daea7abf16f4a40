"""Tree hygiene: no machine-specific path in the package, one manifest of the C runtime's sources, and no import
circle between mcuforge's first-level modules and packages (issue 28)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import mcuforge
from mcuforge import cruntime
from mcuforge.firmware import builder

SRC = Path(mcuforge.__file__).resolve().parent

#: The circles tolerated (imports inside functions included): none. A new one fails the test below.
KNOWN_CIRCLES: list[set[str]] = []


def test_no_machine_specific_path() -> None:
    bad = [f"{p.relative_to(SRC)}:{i}" for p in sorted(SRC.rglob("*.py"))
           for i, line in enumerate(p.read_text().splitlines(), 1) if re.search(r"(?<![\w.])/(work|root|home)/", line)]
    assert not bad, bad


def test_one_runtime_manifest() -> None:
    assert cruntime.runtime_sources() == builder.runtime_sources()
    assert {p.parent.relative_to(builder.CSRC).parts[0] for p in builder.runtime_files()} == set(builder.RUNTIME_DIRS)


def test_one_start_up_file() -> None:
    # the test firmware and export-c's board projects start from the same start.c (MF_TEST_FIRMWARE picks the half)
    assert sorted(builder.CSRC.rglob("start.c")) == [builder.FIRMWARE_SRC / "start.c"]
    assert "-DMF_TEST_FIRMWARE=1" in builder._compile_flags(builder.get_board("cortex-m4"), trace=False)


def _first_level_imports() -> dict[str, set[str]]:
    names = {p.stem for p in SRC.glob("*.py")} | {p.name for p in SRC.iterdir() if (p / "__init__.py").exists()}
    edges: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).with_suffix("").parts
        me, package = rel[0], list(rel[:-1])
        if me in ("__init__", "__main__"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[list[str]] = []
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package[:len(package) - (node.level - 1)]
                targets = [[*base, *node.module.split(".")]] if node.module else [[*base, a.name] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mcuforge"):
                parts = node.module.split(".")[1:]
                targets = [parts] if parts else [[a.name] for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [n.name.split(".")[1:] for n in node.names if n.name.startswith("mcuforge.")]
            edges.setdefault(me, set()).update(t[0] for t in targets if t and t[0] in names and t[0] != me)
    return edges


def _circles(edges: dict[str, set[str]]) -> list[set[str]]:
    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in edges.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    reachable = {name: reach(name) for name in edges}
    circles: list[set[str]] = []
    for name in sorted(edges):
        circle = {name} | {other for other in reachable[name] if name in reachable.get(other, set())}
        if len(circle) > 1 and circle not in circles:
            circles.append(circle)
    return circles


def test_circles_are_found() -> None:
    # the walker itself: a circle through a function-level import, one through three modules, none in a chain
    edges = {"a": {"b"}, "b": {"a", "c"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"a"}}
    assert _circles(edges) == [{"a", "b"}, {"c", "d", "e"}]
    assert _first_level_imports()["backends"] >= {"runtime", "firmware"}  # imports inside functions are walked


def test_no_import_circle() -> None:
    circles = _circles(_first_level_imports())
    assert all(any(c <= known for known in KNOWN_CIRCLES) for c in circles), circles
    assert "kinds" not in set().union(*circles), "the kind table imports nothing of the package but itself"
