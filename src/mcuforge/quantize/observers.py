"""mcuforge's calibration observers: torchao's, giving the same qparams, in a fraction of the time.

- ``HistogramObserver`` is torchao's ``HistogramObserver`` with the same histogram and the same
  range search, bit for bit; only the work differs:

  - torchao's ``_non_linear_param_search`` steps its quantile bounds by 1e-5 in a Python loop of up
    to 100,000 iterations, and only a few of them move a bin (those evaluate the quantization error).
    Here each bound's whole sequence of thresholds is computed at once, the bin each threshold
    selects is a ``searchsorted`` on the cumulative histogram, and the steps that move nothing are
    skipped in one jump. The steps that move a bin evaluate torchao's own error function, in the
    same order, so the search takes the same path and stops at the same bins.
  - Its histograms (``torch.histc``, ``aminmax``, the re-binning) run on one intra-op thread: on
    activation-sized tensors torch's threaded ``histc`` costs many times the work of one thread,
    and far more on a shared machine. The counts are integers, exact either way.

- ``PerChannelMinMaxObserver``: torchao's, with its reductions on one intra-op thread too (a min or
  a max does not depend on the order).

``tests/test_observers.py`` compares the qparams with torchao's observers over many distributions.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
from collections.abc import Iterator

import numpy as np
import torch
from torchao.quantization.pt2e import HistogramObserver as TorchaoHistogramObserver
from torchao.quantization.pt2e import PerChannelMinMaxObserver as TorchaoPerChannelMinMaxObserver

#: torchao's step of the quantile bounds, and the most steps its search can take (alpha < beta).
STEP = 1e-5
_MAX_STEPS = 100_010


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """torch's intra-op parallelism off for the block (restored after it)."""
    threads = torch.get_num_threads()
    if threads == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@functools.cache
def _bounds() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """torchao's successive bounds: ``alpha_i = alpha_{i-1} + 1e-5`` from 0.0 and ``beta_j = beta_{j-1} -
    1e-5`` from 1.0, each the rounded float64 sum of the previous one (``add.accumulate`` adds in order,
    as the Python loop does); and -beta (increasing, for searchsorted)."""
    alpha = np.add.accumulate(np.concatenate([[0.0], np.full(_MAX_STEPS, STEP)]))
    beta = np.add.accumulate(np.concatenate([[1.0], np.full(_MAX_STEPS, -STEP)]))
    arrays = (alpha, beta, -beta)
    for array in arrays:
        array.flags.writeable = False
    return arrays


class HistogramObserver(TorchaoHistogramObserver):
    """torchao's ``HistogramObserver`` (same histogram, same qparams), with the range search done
    in a few vectorized steps and the histograms on one thread (see the module notes)."""

    def forward(self, x_orig: torch.Tensor) -> torch.Tensor:
        with one_thread():
            return super().forward(x_orig)

    def calculate_qparams(self):  # noqa: ANN201 - torchao's signature
        with one_thread():
            return super().calculate_qparams()

    def _non_linear_param_search(self) -> tuple[torch.Tensor, torch.Tensor]:
        """torchao's ``_non_linear_param_search``, the same steps and result (see the module notes).

        Per step torchao moves ``l`` right from the start bin while ``l < end`` and ``cSum[l] < alpha'
        * total``, and ``r`` left from the end bin while ``r > start`` and ``cSum[r] > beta' * total``,
        comparing float32 ``cSum`` with the float64 product rounded to float32 (torch's rule for a
        Python scalar). ``cSum`` does not decrease (the counts are >= 0), so ``l`` is the first bin at
        or after the start whose sum reaches the threshold and ``r`` the last bin up to the end whose
        sum does not exceed it, both held in [start, end]: two ``searchsorted``. A step moves nothing
        exactly when ``l`` is the start bin and ``r`` the end bin; it then only lowers beta, and ``l``
        stays put until ``r`` moves, so the run of such steps ends at the first beta whose threshold is
        below ``cSum[end]``, or at the loop's end (alpha >= beta), whichever comes first.
        """
        assert self.histogram.size()[0] == self.bins, "bins mismatch"
        bin_width = (self.max_val - self.min_val) / self.bins
        total = torch.sum(self.histogram).item()
        csum = torch.cumsum(self.histogram, dim=0).numpy()
        alpha, beta, negated_beta = _bounds()

        def low(i: int) -> np.float32:  # the thresholds as torch compares them: float64 product -> float32
            return np.float32(alpha[i] * total)

        def high(j: int) -> np.float32:
            return np.float32(beta[j] * total)

        ia = ib = 0  # alpha = alpha[ia], beta = beta[ib]
        start_bin, end_bin = 0, self.bins - 1
        norm_min = float("inf")
        while alpha[ia] < beta[ib]:
            left = int(np.searchsorted(csum, low(ia + 1), side="left"))
            right = int(np.searchsorted(csum, high(ib + 1), side="right")) - 1
            l = min(end_bin, max(start_bin, left))  # noqa: E741 - torchao's names
            r = max(start_bin, min(end_bin, right))
            if l - start_bin > end_bin - r:
                next_start_bin, next_end_bin = l, end_bin
                ia += 1
            else:
                next_start_bin, next_end_bin = start_bin, r
                ib += 1
                if r == end_bin:  # nothing moves: jump to the step where r moves, or to the loop's end
                    # the first j with high(j) < csum[end] (high falls with j): the step with beta[j] moves r
                    # (when end > start: otherwise r cannot move and the loop runs out)
                    edge = csum[end_bin]
                    moves = (bisect.bisect_left(range(len(beta)), True, lo=ib, key=lambda j: high(j) < edge)
                             if end_bin > start_bin else len(beta))
                    # the loop ends at the first beta <= alpha (beta falls, alpha stays)
                    ends = int(np.searchsorted(negated_beta, -alpha[ia], side="left"))
                    if ends <= moves - 1:
                        break
                    ib = max(ib, moves - 1)
                    continue
            norm = self._compute_quantization_error(next_start_bin, next_end_bin)
            if norm > norm_min:
                break
            norm_min = norm
            start_bin, end_bin = next_start_bin, next_end_bin

        new_min = self.min_val + bin_width * start_bin
        new_max = self.min_val + bin_width * (end_bin + 1)
        return new_min, new_max


class PerChannelMinMaxObserver(TorchaoPerChannelMinMaxObserver):
    """torchao's ``PerChannelMinMaxObserver`` with its reductions on one intra-op thread."""

    def forward(self, x_orig: torch.Tensor) -> torch.Tensor:
        with one_thread():
            return super().forward(x_orig)

    def calculate_qparams(self):  # noqa: ANN201 - torchao's signature
        return zero_channels_take_largest_scale(*super().calculate_qparams(), self.min_val, self.max_val)


def zero_channels_take_largest_scale(scale: torch.Tensor, zero_point: torch.Tensor, min_val: torch.Tensor,
                                     max_val: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A channel whose weights are all zero (a dead channel) gets the tensor's largest scale instead of
    torchao's eps: its weights are exact at any scale, but its int32 bias is quantized at input scale x
    weight scale, and at eps a bias of a few units overflows int32 (the channel then outputs garbage)."""
    dead = (min_val == 0) & (max_val == 0)
    if scale.ndim == 0 or not bool(dead.any()) or bool(dead.all()):
        return scale, zero_point
    return torch.where(dead.reshape(scale.shape), scale.max(), scale), zero_point
