"""Model factories for the sweep's failure tests (tests/test_sweep.py): each fails in its own way."""

from __future__ import annotations

import os

import torch
from torch import nn


def raises(width: float = 1.0) -> nn.Module:
    raise RuntimeError(f"this factory cannot build width {width}")


def dies(width: float = 1.0) -> nn.Module:
    """The worker process ends without a word, as a segfault or the OOM killer would end it."""
    os._exit(7)


class DataDependent(nn.Module):
    """Output shape depends on the values: not compilable (a compile-stage error)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nonzero(x > 0).float()


def data_dependent(width: float = 1.0) -> nn.Module:
    return DataDependent()


def segfaults(width: float = 1.0) -> nn.Module:
    """The worker process reads address 0: a real SIGSEGV in the child, not an exception."""
    import ctypes

    ctypes.string_at(0)
    raise AssertionError("unreachable: reading address 0 did not fault")


def reports_threads(width: float = 1.0) -> nn.Module:
    """Fails with the worker's thread settings in its message (one thread per worker, as on Ray)."""
    raise RuntimeError(f"threads: OMP {os.environ.get('OMP_NUM_THREADS')} torch {torch.get_num_threads()}")
