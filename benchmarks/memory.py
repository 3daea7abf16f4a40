"""Memory known before flashing, and compile time, per zoo model and target; memory below the per-layer bound
with patch-based execution (mcuforge.patches).

    python benchmarks/memory.py      # prints the tables, writes results/memory.md and its docs/benchmarks.md section

Arena = the exact RAM for activations and op scratch buffers; lower bound = the largest sum of
tensors live at one op, which no plan can beat (``mcuforge.plan.arena_lower_bound``); constants =
weights, biases and requantization parameters read in place from flash; program = the whole
program file.

Patch-based execution (MCUNetV2): per model, the per-layer bound of the whole program (the most bytes live at one
op, scratch included: what no placement of full maps beats), then the least planned arena of a patched program
whose convolution MACs (``mcuforge.patches.macs``) stay within 15 % of the whole program's, and the least at any
MAC cost, each with its split (leading ops run by patches), grid and MAC overhead, the chain's output placed over
the graph input's dead bytes where that lowers the bound (``mcuforge.patches.overlap_input``). MobileNetV2 at
144x144 and 224x224 is torchvision's ``mobilenet_v2(width_mult=0.35)`` architecture (the zoo's MobileNetV2 with
1000 classes: the same stages, channel rounding and 1280-channel head; torchvision itself does not import on this
torch), random weights and BatchNorm statistics: memory does not depend on them. Input maps count: they live in the
arena.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import torch

import mcuforge
from mcuforge.patches import candidates, copy_graph, macs, plan_patched, plan_thin
from mcuforge.plan import arena_lower_bound, choose_in_place
from mcuforge.report import table
from mcuforge.zoo import MODELS
from mcuforge.zoo.common import randomize_batch_norm
from mcuforge.zoo.mobilenet import MobileNetV2

from results_file import docs_section, publish

DOCS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
MAX_OVERHEAD = 0.15
PLANNED = 6  # candidates of least bound planned per column
PATCH_MODELS = ("mobilenet_v1_025", "mobilenet_v2", "mobilenet_v3_small", "resnet8", "ds_cnn")


def _patch_models() -> list[tuple[str, torch.nn.Module, tuple[torch.Tensor, ...]]]:
    models = []
    for size in (144, 224):
        torch.manual_seed(0)
        model = randomize_batch_norm(MobileNetV2(0.35, classes=1000)).eval()
        models.append((f"torchvision mobilenet_v2 0.35 {size}", model, (torch.randn(1, 3, size, size),)))
    for name in PATCH_MODELS:
        model, example = MODELS[name]()
        models.append((f"zoo {name} {'x'.join(map(str, example[0].shape[2:]))}", model, example))
    return models


def patch_rows() -> list[list[object]]:
    rows = []
    for name, model, example in _patch_models():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prog = mcuforge.compile(model, example, calibration=[example], target="cortex-m55", progress=False,
                                    fit_check=False)
        graph, base = prog.graph, macs(prog.graph)
        bound = arena_lower_bound(graph)
        whole = copy_graph(graph)
        choose_in_place(whole)
        found = candidates(graph)
        row: list[object] = [name, f"{base:,}", f"{prog.arena_bytes:,}", f"{bound:,}", f"{whole.arena_bytes:,}"]
        for limit in (MAX_OVERHEAD, None):
            ok = [c for c in found if (limit is None or c.macs <= (1 + limit) * base) and c.bound < bound]
            if not ok:  # no patching lowers the bound
                row += ["-", "-", "-", "-"] + (["-"] if limit else [])
                continue
            # the bound is a floor the placement may miss: the least planned arena of the PLANNED candidates of
            # least bound (each with and without its output over the input's dead bytes, as compile plans them)
            tried = [(plan_patched(graph, c, in_place=False)[0], c) for c in sorted(ok, key=lambda c: (c.bound, c.macs))
                     [:PLANNED]]
            patched, best = min(tried, key=lambda pc: (pc[0].arena_bytes, pc[1].macs))
            arena = patched.arena_bytes
            row += [f"{arena:,}", f"{bound / arena:.2f}x", f"{best.split}, {best.grid[0]}x{best.grid[1]}",
                    f"+{100 * (best.macs / base - 1):.1f} %"]
            if limit:  # and with depthwise in place where that lowers it further, and a thinner first patch row
                # (plan_thin: the input's dead rows then hold every later row's buffers), within the MAC limit
                for p, _c in tried:
                    choose_in_place(p)
                least = min(p.arena_bytes for p, _c in tried)
                thin = [plan_thin(graph, c) for _p, c in tried]
                thin = [(p, c) for p, _n, c in thin if c.first and c.macs <= (1 + limit) * base]
                if thin and min(p.arena_bytes for p, _c in thin) < least:
                    p, c = min(thin, key=lambda pc: pc[0].arena_bytes)
                    least = p.arena_bytes
                    row.append(f"{least:,} ({bound / least:.2f}x; {c.split}, {c.grid[0]}x{c.grid[1]}, first row "
                               f"{c.first}, +{100 * (c.macs / base - 1):.1f} %)")
                else:
                    row.append(f"{least:,} ({bound / least:.2f}x)")
        rows.append(row)
        print(row, flush=True)
    return rows


def main() -> None:
    rows = []
    for name, make in MODELS.items():
        model, example = make()
        gen = torch.Generator().manual_seed(1)
        calibration = [tuple(torch.randn(x.shape, generator=gen) for x in example) for _ in range(16)]
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prog = mcuforge.compile(model, example, calibration=calibration, target="cortex-m55", progress=False)
        seconds = time.perf_counter() - start
        n_int8 = sum(op.backend == "int8" for op in prog.ops)
        bound = arena_lower_bound(prog.graph, scratch=False)
        rows.append([name, len(prog.ops), n_int8, sum(op.macs for op in prog.ops), prog.arena_bytes, bound,
                     f"{prog.arena_bytes / bound:.3f}", prog.constant_bytes, prog.program_bytes, round(seconds, 2)])
    text = table(["model", "ops", "int8 ops", "MACs", "arena B", "lower bound B", "arena / bound", "constants B",
                  "program B", "compile s"], rows)
    patches = table(["model", "MACs", "arena B", "per-layer bound B", "in place B",
                     f"patched B (<= {MAX_OVERHEAD:.0%})", "bound / patched", "split, grid", "MACs +", "+ in place B",
                     "patched B (least)", "bound / least", "split, grid", "MACs +"], patch_rows())
    publish("memory", "Memory and compile time", f"{text}\n\nPatch-based execution (cortex-m55)\n\n{patches}",
            ", 16 calibration inputs")
    docs_section(DOCS, "memory", "Memory below the per-layer bound: patch-based execution",
                 "Per model (cortex-m55 programs): the whole program's arena and per-layer bound (the most bytes live "
                 "at one op, scratch included); in place: the whole program with depthwise convolutions written over "
                 "their input where that lowers the arena (mcuforge.plan.choose_in_place); the least arena of a "
                 "patched program (`compile(ram_budget=...)`, mcuforge.patches) within 15 % extra convolution MACs, "
                 "then with depthwise in place too (and a thinner first patch row where that is smaller: "
                 "mcuforge.patches.plan_thin, the input's dead rows holding later patches' buffers), "
                 "and at any MAC cost (each: the least planned arena of the "
                 f"{PLANNED} candidates of least bound); split = the leading ops run by patches, "
                 "grid = patches (rows x columns); - where no patching lowers the bound. Input maps count (they live "
                 "in the arena); the chain's output overlaps the input's dead bytes where that lowers the bound "
                 "(mcuforge.patches.overlap_input). Random weights: memory does not depend on them."
                 f"\n\n```\n{patches}\n```")

if __name__ == "__main__":
    main()
