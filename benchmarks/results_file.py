"""Shared by the benchmarks: print a table and keep it in benchmarks/results/ with its context."""

from __future__ import annotations

import platform
from pathlib import Path

import torch

import mcuforge


def publish(name: str, title: str, text: str, note: str = "") -> Path:
    """Print ``text`` and write it to ``results/<name>.md`` under a heading with the command."""
    print(text)
    out = Path(__file__).parent / "results" / f"{name}.md"
    out.parent.mkdir(exist_ok=True)
    context = f"mcuforge {mcuforge.__version__}, torch {torch.__version__}, {platform.machine()}"
    out.write_text(f"# {title} (`python benchmarks/{name}.py`)\n\n{context}{note}\n\n```\n{text}\n```\n")
    return out
