"""Ethos-U partitions of the zoo: NPU share of MACs, partitions, CPU ops, Vela's estimates, and whether
the partially delegated program gives the all-CPU program's output bytes.

    python benchmarks/ethos_u.py                               # ds_cnn, mobilenet_v2, custom_fallback
    python benchmarks/ethos_u.py --npu ethos-u65-256 resnet8   # another NPU, other models

Calibration: 16 random normal inputs (as the tests). Needs the ``ethos-u`` extra.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import torch

import mcuforge
from mcuforge.ethosu import delegate
from mcuforge.ethosu.report import npu_mac_share
from mcuforge.report import table
from mcuforge.zoo import MODELS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=["ds_cnn", "mobilenet_v2", "custom_fallback"])
    parser.add_argument("--npu", default="ethos-u55-128")
    args = parser.parse_args()
    rows = []
    for name in args.models:
        model, example = MODELS[name]()
        example = (example,) if isinstance(example, torch.Tensor) else tuple(example)
        gen = torch.Generator().manual_seed(1)
        calib = [tuple(torch.randn(x.shape, generator=gen) for x in example) for _ in range(16)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cpu = mcuforge.compile(model, example, calibration=calib, progress=False)
        prog = delegate(cpu, args.npu)
        share, _npu, total = npu_mac_share(prog)
        d = prog.delegates
        x = [e.numpy() for e in example]
        same = all(np.array_equal(a, b) for a, b in zip(cpu.run_raw(*x), prog.run_raw(*x), strict=True))
        rows.append([name, f"{share:.1%}", f"{total:,}", len(d), sum(o.backend in ("int8", "fp32") for o in prog.ops),
                     f"{sum(s.npu_cycles for s in d):,}", f"{max((s.sram_bytes for s in d), default=0):,}",
                     f"{sum(s.flash_bytes for s in d):,}", f"{sum(s.command_stream_bytes for s in d):,}",
                     "yes" if same else "NO"])
    print(f"{args.npu} (Vela 5.2.0, Shared_Sram)")
    print(table(["model", "NPU MACs", "MACs", "partitions", "CPU ops", "NPU cycles", "SRAM peak B", "weights B",
                 "command stream B", "same bytes as CPU"], rows))


if __name__ == "__main__":
    main()
