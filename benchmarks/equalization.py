"""Cross-layer equalization and bias correction, before and after, on the zoo and the torchvision
networks of tests/test_public_models.py: the output SQNR against the fp32 model.

    python benchmarks/equalization.py                  # every model; writes results/equalization.md
    python benchmarks/equalization.py ds_cnn resnet18  # some only (prints, does not publish)

Each model's rows are kept in ``$MCUFORGE_CACHE/equalization/<model>.json`` (keyed by the sources of
mcuforge and of this script): runs on a loaded machine can share the models, and a full run that finds a
model measured reads it back instead (``--fresh`` measures everything again).

Per model and precision (int8, w4a8): the logits' SQNR (dB) of the program compiled without either
correction, with cross-layer equalization (CLE), with bias correction (BC), with both; calibrated on 8
random normal inputs, measured on 16 others (held out). Every option is given explicitly (the table does
not depend on the defaults), without compile's opt-in guard. The summary gives each option's mean gain
and its worst case (a negative worst case: the option loses somewhere on held-out data, so it is not on
by default).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import torch

import mcuforge
from mcuforge.accuracy.sensitivity import fp32_outputs, output_sqnr, stacked
from mcuforge.report import table
from mcuforge.zoo import MODELS

from results_file import publish

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the tested models, one definition
from torchvision_zoo import NAMES, build  # noqa: E402

CONFIGS = {"none": {"equalization": False, "bias_correction": False},
           "CLE": {"equalization": True, "bias_correction": False},
           "BC": {"equalization": False, "bias_correction": True},
           "CLE+BC": {"equalization": True, "bias_correction": True}}
PRECISIONS = ("int8", "w4a8")


def inputs_like(example: tuple[torch.Tensor, ...], count: int, seed: int) -> list[tuple[torch.Tensor, ...]]:
    gen = torch.Generator().manual_seed(seed)
    return [tuple(torch.randn(x.shape, generator=gen) if x.is_floating_point() else x for x in example)
            for _ in range(count)]


TORCHVISION = "torchvision."  # the torchvision networks' prefix (mobilenet_v3_small is in both sets)


def model_of(name: str) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    model, example = build(name.removeprefix(TORCHVISION)) if name.startswith(TORCHVISION) else MODELS[name]()
    return model.eval(), tuple(example) if isinstance(example, (tuple, list)) else (example,)


def sources_key() -> str:
    h = hashlib.sha256(Path(__file__).read_bytes())
    for source in sorted(Path(mcuforge.__file__).parent.rglob("*.py")):
        h.update(source.read_bytes())
    return h.hexdigest()[:16]


def measured(name: str, fresh: bool) -> list[list[object]]:
    from mcuforge.firmware.builder import cache_root

    path = cache_root() / "equalization" / f"{name}.json"
    key = sources_key()
    if not fresh and path.exists():
        stored = json.loads(path.read_text())
        if stored["key"] == key:
            for row in stored["rows"]:
                print(row, "(cached)", flush=True)
            return stored["rows"]
    rows = measure(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"key": key, "rows": rows}))
    return rows


def measure(name: str) -> list[list[object]]:
    model, example = model_of(name)
    calibration, held_out = inputs_like(example, 8, seed=1), inputs_like(example, 16, seed=2)
    batch = stacked(held_out)
    reference = fp32_outputs(model, batch)
    rows = []
    for precision in PRECISIONS:
        row: list[object] = [name, precision]
        for options in CONFIGS.values():
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    prog = mcuforge.compile(model, example, calibration=calibration, progress=False,
                                            quantization=precision, fit_check=False, **options)
                row.append(round(output_sqnr(prog, reference, batch), 2))
            except Exception as exc:  # noqa: BLE001 - the table says which model fails and why
                row.append(f"{type(exc).__name__}: {str(exc)[:50]}")
        print(row, flush=True)
        rows.append(row)
    return rows


def summary(rows: list[list[object]]) -> str:
    lines = []
    for precision in PRECISIONS:
        mine = [r for r in rows if r[1] == precision and all(isinstance(v, float) for v in r[2:])]
        for j, config in enumerate(CONFIGS, start=2):
            if config == "none":
                continue
            gains = np.array([r[j] - r[2] for r in mine])
            worst = mine[int(np.argmin(gains))][0]
            lines.append(f"{precision:5s} {config:7s}: mean gain {gains.mean():+.2f} dB, "
                         f"median {np.median(gains):+.2f}, worst {gains.min():+.2f} dB ({worst}), "
                         f"lower on {int((gains < -0.05).sum())} of {len(gains)} models")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", help="models to measure (default: the zoo and the torchvision eight, "
                                                  "named torchvision.NAME)")
    parser.add_argument("--fresh", action="store_true", help="measure again even what is kept from a run before")
    args = parser.parse_args()
    names = args.models or [*MODELS, *(TORCHVISION + n for n in NAMES)]
    rows = [row for name in names for row in measured(name, args.fresh)]
    text = table(["model", "precision", *[f"{c} dB" for c in CONFIGS]], rows) + "\n\n" + summary(rows)
    if args.models:
        print(text)
    else:
        publish("equalization", "Cross-layer equalization and bias correction: output SQNR before and after", text,
                "; calibration 8 random normal inputs, SQNR on 16 held-out ones; machine loaded (timings not shown)")


if __name__ == "__main__":
    main()
