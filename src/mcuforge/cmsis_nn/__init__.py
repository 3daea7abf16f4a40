"""Arm's CMSIS-NN beside mcuforge: built from a source tree on disk (``build``), never vendored or linked.

``build`` compiles the library for the host or a board's core; the comparison harness (``harness``) runs
CMSIS-NN's kernels on cases that mirror mcuforge's ops, on the host and on the QEMU boards.
"""

from .build import (
    CmsisNNBuildError,
    build_host,
    build_target,
    default_location,
    include_dir,
    locate,
    missing_reason,
)

__all__ = ["CmsisNNBuildError", "build_host", "build_target", "default_location", "include_dir", "locate",
           "missing_reason"]
