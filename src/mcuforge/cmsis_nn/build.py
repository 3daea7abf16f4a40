"""Arm's CMSIS-NN built from a source tree the user points at, for side-by-side comparison.

mcuforge's kernels promise CMSIS-NN's arithmetic bit for bit; the tests and benchmarks check that
promise against the real library, never against our own transcription of it. CMSIS-NN is never
vendored or linked into mcuforge: this module only compiles a tree that is already on disk (by
default the one beside the project, ``../shared/third_party/cmsis-nn``) into a cache, for the host
(a shared library for ctypes, the plain C path) or for a board's core (a static archive built with
that core's flags, so its DSP or MVE paths are the ones compiled).

    root = cmsis_nn.locate(option)            # None, with cmsis_nn.missing_reason(option), when absent
    lib = cmsis_nn.build_host(root)           # .so
    archive = cmsis_nn.build_target("cortex-m55", root)   # libcmsisnn.a for the MVE path
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

#: Where the project keeps a copy of CMSIS-NN's sources: ``shared/third_party/cmsis-nn`` beside the
#: project's folder (this file is ``<project>/src/mcuforge/cmsis_nn/build.py``).
DEFAULT_LOCATION = Path(__file__).resolve().parents[4] / "shared" / "third_party" / "cmsis-nn"
#: Set to a CMSIS-NN source tree to use another copy (the ``--cmsis-nn`` options default to it).
ENV_VARIABLE = "MCUFORGE_CMSIS_NN"


class CmsisNNBuildError(RuntimeError):
    """The compiler rejected CMSIS-NN's sources."""


def default_location() -> Path:
    """``$MCUFORGE_CMSIS_NN`` if set, else the project's ``../shared/third_party/cmsis-nn``."""
    env = os.environ.get(ENV_VARIABLE)
    return Path(env) if env else DEFAULT_LOCATION


def missing_reason(root: Path | str | None = None) -> str | None:
    """Why ``root`` (default: ``default_location()``) is not a usable CMSIS-NN tree, or None."""
    root = Path(root) if root is not None else default_location()
    if not (root / "Include" / "arm_nnfunctions.h").is_file():
        return f"no CMSIS-NN sources at {root} (Include/arm_nnfunctions.h missing; pass --cmsis-nn DIR)"
    if not (root / "Source").is_dir():
        return f"no CMSIS-NN sources at {root} (Source/ missing; pass --cmsis-nn DIR)"
    return None


def locate(root: Path | str | None = None) -> Path | None:
    """The CMSIS-NN tree at ``root`` (default: ``default_location()``) if usable, else None."""
    root = Path(root) if root is not None else default_location()
    return None if missing_reason(root) else root.resolve()


def sources(root: Path) -> list[Path]:
    """CMSIS-NN's integer kernels: every .c under Source/ except the experimental float API (*_f16.c,
    *_f32.c, which need a float16 type) and the Python bindings."""
    found = []
    for path in sorted((root / "Source").rglob("*.c")):
        if "Bindings" in path.relative_to(root).parts or path.stem.endswith(("_f16", "_f32")):
            continue
        found.append(path)
    return found


def _headers(root: Path) -> list[Path]:
    return sorted((root / "Include").rglob("*.h")) + sorted((root / "Source").rglob("*.h"))


def _cache_root() -> Path:
    from ..firmware.builder import cache_root

    return cache_root() / "cmsis-nn"


def _key(root: Path, compiler: str, flags: list[str]) -> str:
    digest = hashlib.sha256()
    version = subprocess.run([compiler, "--version"], capture_output=True, text=True, check=False).stdout
    for part in (version, *flags):
        digest.update(part.encode() + b"\0")
    for path in [*sources(root), *_headers(root)]:
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


def _run(cmd: list[str], what: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise CmsisNNBuildError(f"{what} failed (exit {done.returncode}):\n{' '.join(cmd)}\n{done.stderr[-4000:]}")


def _build_into(final: Path, build) -> None:
    """Run ``build(work_dir)`` in a private folder, then rename it to ``final`` (concurrent builds never
    see a half-written cache entry)."""
    final.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=final.parent))
    try:
        build(work)
        try:
            work.rename(final)
        except OSError:
            if not final.is_dir():
                raise
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


#: Host flags: the plain C path (no __ARM_FEATURE_* macro is defined on the host), optimized as on
#: the boards; -ffp-contract=off as mcuforge's own builds.
HOST_FLAGS = ["-O2", "-fPIC", "-ffp-contract=off", "-fno-strict-aliasing"]


def build_host(root: Path | str | None = None) -> Path:
    """CMSIS-NN's integer kernels as a shared library for this machine (its plain C path), cached."""
    root = _checked(root)
    cc = os.environ.get("CC", "cc")
    flags = [*HOST_FLAGS, f"-I{root / 'Include'}"]
    final = _cache_root() / f"host-{_key(root, cc, flags)}"
    lib = final / "libcmsisnn.so"
    if lib.is_file():
        return lib

    def build(work: Path) -> None:
        _run([cc, *flags, "-shared", *map(str, sources(root)), "-o", str(work / "libcmsisnn.so")],
             "building CMSIS-NN for the host")

    _build_into(final, build)
    return lib


def target_flags(target: str) -> list[str]:
    """CMSIS-NN's flags on ``target``: the core's CPU/FPU flags (which select its DSP or MVE paths),
    Thumb, -O3 as mcuforge's firmware, without mcuforge's own warning set (not our code)."""
    from ..targets import get_target

    return [*get_target(target).gcc_flags, "-mthumb", "-O3", "-ffunction-sections", "-fdata-sections",
            "-fno-strict-aliasing"]


def build_target(target: str, root: Path | str | None = None) -> Path:
    """CMSIS-NN's integer kernels as a static archive for ``target``'s core (arm-none-eabi-gcc), cached."""
    from ..firmware import toolchain

    root = _checked(root)
    gcc = toolchain.require("arm-none-eabi-gcc")
    ar = toolchain.require("arm-none-eabi-ar")
    flags = [*target_flags(target), f"-I{root / 'Include'}"]
    final = _cache_root() / f"{target}-{_key(root, gcc, flags)}"
    archive = final / "libcmsisnn.a"
    if archive.is_file():
        return archive

    def build(work: Path) -> None:
        srcs = sources(root)
        objects = [work / f"{i:03d}_{src.stem}.o" for i, src in enumerate(srcs)]
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            list(pool.map(lambda so: _run([gcc, *flags, "-c", str(so[0]), "-o", str(so[1])],
                                          f"compiling CMSIS-NN's {so[0].name} for {target}"),
                          zip(srcs, objects, strict=True)))
        _run([ar, "rcs", str(work / "libcmsisnn.a"), *map(str, objects)], f"archiving CMSIS-NN for {target}")

    _build_into(final, build)
    return archive


def include_dir(root: Path | str | None = None) -> Path:
    """CMSIS-NN's public headers (``arm_nnfunctions.h``), for harnesses that call it."""
    return _checked(root) / "Include"


def _checked(root: Path | str | None) -> Path:
    reason = missing_reason(root)
    if reason:
        raise FileNotFoundError(reason)
    return (Path(root) if root is not None else default_location()).resolve()
