"""The TB-counting QEMU plugin (plugin/tbcount.c): built with the host gcc on first use, cached; its
QEMU arguments; reading its counts back.

Why a plugin and not QEMU's execution log: the log (``-d exec,nochain``) of one DS-CNN inference is
~0.6 GB and takes minutes to write and parse; the plugin counts each translation block's executions
and taken exits in C and writes a few hundred kilobytes, at little extra run time (docs/cycles.md).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..firmware.builder import cache_root

SOURCE = Path(__file__).resolve().parent / "plugin" / "tbcount.c"
FLAGS = ("-shared", "-fPIC", "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror", "-fvisibility=hidden")


class PluginError(RuntimeError):
    """The plugin could not be built, or its output is missing or incomplete."""


def host_compiler() -> str:
    """The host C compiler (``$CC`` or gcc)."""
    cc = os.environ.get("CC", "gcc")
    path = shutil.which(cc)
    if path is None:
        raise PluginError(f"{cc} not found: the QEMU plugin that counts cycles is built with the host C compiler "
                          f"(apt-get install gcc)")
    return path


def build() -> Path:
    """The plugin's shared library, built once per source version and compiler (cached)."""
    cc = host_compiler()
    version = subprocess.run([cc, "--version"], capture_output=True, text=True, check=False).stdout.split("\n")[0]
    key = hashlib.sha256(SOURCE.read_bytes() + " ".join((cc, version, *FLAGS)).encode()).hexdigest()[:20]
    folder = cache_root() / "cycles-plugin" / key
    library = folder / "libtbcount.so"
    if library.is_file():
        return library
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        built = Path(tmp) / library.name
        done = subprocess.run([cc, *FLAGS, "-o", str(built), str(SOURCE)], capture_output=True, text=True,
                              check=False)
        if done.returncode != 0:
            raise PluginError(f"building the QEMU plugin failed:\n{done.stderr.strip()}")
        os.replace(built, library)  # atomic: concurrent builders agree
    return library


def qemu_args(out: Path, marks: Sequence[int] = ()) -> list[str]:
    """QEMU's arguments that load the plugin, writing its counts to ``out``; a new segment starts
    each time code at one of ``marks`` (function addresses) runs."""
    spec = f"{build()},out={out}"
    if marks:
        spec += ",marks=" + ":".join(f"0x{m & ~1:x}" for m in marks)
    return ["-plugin", spec]


@dataclass(frozen=True)
class Block:
    """A translation block: where it starts and its instructions (address, bytes)."""

    id: int
    pc: int
    insns: tuple[tuple[int, bytes], ...]


@dataclass
class Segment:
    """Executions between two marks: block id -> (executions, taken exits); and (predecessor id, block id)
    -> how many of the block's executions came right after the predecessor fell through to it."""

    index: int
    mark: int  # the address whose execution started it (0: boot)
    counts: dict[int, tuple[int, int]] = field(default_factory=dict)
    falls: dict[tuple[int, int], int] = field(default_factory=dict)


@dataclass
class Counts:
    blocks: dict[int, Block]
    segments: list[Segment]

    def instructions(self, segments: Sequence[Segment] | None = None) -> int:
        """Instructions executed in ``segments`` (all by default)."""
        total = 0
        for seg in self.segments if segments is None else segments:
            for bid, (runs, _taken) in seg.counts.items():
                total += runs * len(self.blocks[bid].insns)
        return total


def parse(path: Path) -> Counts:
    """The plugin's output file; PluginError when QEMU did not let it finish (no end record)."""
    if not path.is_file():
        raise PluginError(f"the QEMU plugin wrote no {path.name}")
    blocks: dict[int, Block] = {}
    segments: list[Segment] = []
    ended = False
    with open(path) as f:
        for line in f:
            kind = line[:1]
            if kind == "C":
                _, bid, runs, taken = line.split()
                segments[-1].counts[int(bid)] = (int(runs), int(taken))
            elif kind == "F":
                _, source, bid, entries = line.split()
                segments[-1].falls[int(source), int(bid)] = int(entries)
            elif kind == "B":
                parts = line.split()
                insns = []
                for item in parts[4:]:
                    address, data = item.split(":")
                    insns.append((int(address, 16), bytes.fromhex(data)))
                blocks[int(parts[1])] = Block(int(parts[1]), int(parts[2], 16), tuple(insns))
            elif kind == "S":
                _, index, mark = line.split()
                segments.append(Segment(int(index), int(mark, 16)))
            elif kind == "E":
                ended = True
    if not ended:
        raise PluginError(f"{path.name} is incomplete: QEMU stopped before the plugin wrote its counts")
    return Counts(blocks, segments)


def run_qemu(target: str, elf: Path, folder: Path, marks: Sequence[int], timeout: float = 600.0
             ) -> tuple[subprocess.CompletedProcess, Counts]:
    """Boot ``elf`` on ``target``'s QEMU board in ``folder`` (its semihosting files are there) with the
    plugin segmenting at ``marks``; (QEMU's result, the counts). For any firmware, e.g. CMSIS-NN's
    comparison firmware: ``run_qemu(target, elf, folder, [symbols(elf)["mf_icount_now"]])`` then
    :func:`mcuforge.cycles.run.timed_calls`."""
    from ..firmware.qemu import qemu_command

    out = folder / "cycles-counts.txt"
    command = qemu_command(target, elf, extra=qemu_args(out, marks))
    done = subprocess.run(command, cwd=folder, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
                          check=False)
    if not out.is_file():
        raise PluginError(f"QEMU exited with {done.returncode} before the plugin wrote its counts: "
                          f"{(done.stdout + done.stderr).decode(errors='replace')[-1000:]}")
    return done, parse(out)
