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


def docs_section(path: Path, name: str, title: str, text: str) -> None:
    """Put ``text`` under ``## title`` in the docs page ``path``, replacing the section ``benchmarks/<name>.py``
    wrote before (marked, so that :func:`marked_sections` keeps it when another benchmark rewrites the page)."""
    marker = f"<!-- section of benchmarks/{name}.py -->"
    page = path.read_text() if path.exists() else ""
    section = f"{marker}\n## {title}\n\nRegenerate with `python benchmarks/{name}.py`.\n\n{text}\n"
    start = page.find(marker)
    if start < 0:
        page = page.rstrip("\n") + "\n\n" + section
    else:
        end = page.find("<!-- section of benchmarks/", start + len(marker))
        page = page[:start] + section + ("\n" + page[end:] if end >= 0 else "")
    path.write_text(page)


def marked_sections(path: Path) -> str:
    """The sections other benchmarks wrote into the docs page ``path`` (:func:`docs_section`), "" if none."""
    page = path.read_text() if path.exists() else ""
    start = page.find("<!-- section of benchmarks/")
    return page[start:] if start >= 0 else ""
