"""``precision="auto"``: each layer's precision chosen from the sensitivity analysis to meet a flash and a
RAM budget with the least loss of output SQNR on the calibration data.

Each layer has its options: the base precision (int8), or one of the candidates (W4A8 today; A16W8 is
one more entry of ``CANDIDATES`` once it lands), each with the flash it saves, the RAM of the program
with it, and the noise it adds -- measured alone by :func:`sensitivity.sensitivity`. The noises of
layers changed together are taken to add up (relative noise power, 10^(-SQNR/10), above the base
program's), the flash saved too: the choice is then a multiple-choice knapsack, solved exactly by
dynamic programming over the bytes to save (in steps of at most 1/4000 of them). The arena is the
largest of its ops' needs, not a sum, so an option whose own program exceeds the RAM budget is left
out. The chosen program is compiled and measured; should its flash still exceed the budget (sizes are
nearly but not exactly additive), the next best layer is changed too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .sensitivity import Sensitivity

#: Precisions a layer may take besides int8, in the order they are tried. A16W8 joins here.
CANDIDATES: tuple[str, ...] = ("w4a8",)
DP_STEPS = 4000


class BudgetError(ValueError):
    """No per-layer choice meets the budget; the message names the smallest program that fits."""


@dataclass(frozen=True)
class LayerChoice:
    module: str
    precision: str
    reason: str
    flash_saved: int = 0
    sqnr_loss_db: float = 0.0  # the loss of this layer's change measured alone


def _noise(sqnr_db: float) -> float:
    return 10.0 ** (-sqnr_db / 10.0)


def smallest_program(sens: Sensitivity) -> tuple[str, dict[str, float]]:
    """The uniform program with the least flash (what to name when a budget cannot be met)."""
    name = min(sens.uniform, key=lambda n: (sens.uniform[n]["flash_bytes"], sens.uniform[n]["ram_bytes"]))
    return name, sens.uniform[name]


def choose(sens: Sensitivity, flash_budget: int | None, ram_budget: int | None,
           forced: frozenset[str] = frozenset()) -> list[LayerChoice]:
    """The per-layer choice (every weighted layer, program order) meeting the budgets with the least added
    noise; ``forced``: layers that must take a candidate (the retry after a program came out too large)."""
    base = sens.uniform[sens.base]
    smallest, small = smallest_program(sens)
    if ram_budget is not None and min(u["ram_bytes"] for u in sens.uniform.values()) > ram_budget:
        arena = min(u["ram_bytes"] for u in sens.uniform.values())
        raise BudgetError(f"precision='auto': no choice meets ram_budget {ram_budget:,} B: the smallest arena is "
                          f"{arena:,} B; the smallest program is uniform {smallest} ({small['flash_bytes']:,} B "
                          f"flash, {small['ram_bytes']:,} B RAM)")
    if flash_budget is not None and small["flash_bytes"] > flash_budget:
        raise BudgetError(f"precision='auto': no per-layer choice meets flash_budget {flash_budget:,} B: the "
                          f"smallest program is uniform {smallest} at {small['flash_bytes']:,} B flash "
                          f"({small['ram_bytes']:,} B RAM)")
    base_noise = _noise(base["output_sqnr_db"])
    options: dict[str, list[tuple[str, int, float, float]]] = {m: [] for m in sens.layers}
    for row in sens.table.itertuples():
        if ram_budget is not None and row.ram_bytes > ram_budget:
            continue
        added = max(_noise(row.output_sqnr_db) - base_noise, 0.0)
        options[row.module].append((row.precision, int(row.flash_saved), added, float(row.sqnr_loss_db)))
    need = 0 if flash_budget is None else max(base["flash_bytes"] - flash_budget, 0)
    if ram_budget is not None and base["ram_bytes"] > ram_budget:
        raise BudgetError(f"precision='auto': the {sens.base} arena ({base['ram_bytes']:,} B) exceeds ram_budget "
                          f"{ram_budget:,} B and no candidate precision lowers it")
    picked = _knapsack(sens.layers, options, need, forced)
    if picked is None:
        raise BudgetError(f"precision='auto': no per-layer choice saves the {need:,} B of flash needed within "
                          f"ram_budget {ram_budget:,} B; the smallest program is uniform {smallest} at "
                          f"{small['flash_bytes']:,} B flash ({small['ram_bytes']:,} B RAM)")
    choices = []
    for module in sens.layers:
        opts = sorted(options[module], key=lambda o: o[2])
        if module in picked:
            precision, saved, _added, loss = picked[module]
            choices.append(LayerChoice(module, precision, f"{precision}: saves {saved:,} B of flash, output SQNR "
                                       f"{-loss:+.1f} dB (alone): among the cheapest bytes to meet the flash budget",
                                       saved, loss))
        elif opts:
            precision, saved, _added, loss = opts[0]
            why = (f"{sens.base}: {precision} would save {saved:,} B, output SQNR {-loss:+.1f} dB (alone); "
                   + ("the budget is met without it" if need else "no flash budget to meet"))
            choices.append(LayerChoice(module, sens.base, why))
        else:
            choices.append(LayerChoice(module, sens.base, f"{sens.base}: no candidate fits the RAM budget"))
    return choices


def _knapsack(layers: list[str], options: dict[str, list[tuple[str, int, float, float]]], need: int,
              forced: frozenset[str]) -> dict[str, tuple[str, int, float, float]] | None:
    """Least total added noise with at least ``need`` bytes saved: one option (or none) per layer."""
    if need <= 0 and not forced:
        return {}
    step = max(1, math.ceil(need / DP_STEPS))
    target = math.ceil(need / step)
    # best[s]: (noise, picks) with s = min(saved // step, target) units saved so far
    best: dict[int, tuple[float, dict]] = {0: (0.0, {})}
    for module in layers:
        nxt: dict[int, tuple[float, dict]] = {}
        for s, (noise, picks) in best.items():
            choices = [(None, 0, 0.0, 0.0)] if module not in forced else []
            for option in (*choices, *options[module]):
                units = max(0, min(target, s + option[1] // step))
                total = noise + option[2]
                if units not in nxt or total < nxt[units][0]:
                    nxt[units] = (total, picks if option[0] is None else {**picks, module: option})
        best = nxt
    return best[target][1] if target in best else None


def compile_auto(model, example, calibration, target, flash_budget, ram_budget, progress, compile_options):  # noqa: ANN001, ANN201
    """Sensitivity analysis, the choice, then the program (see the module notes); the program's
    ``meta["precision_choice"]`` lists every weighted layer's precision and why."""
    from ..quantize import Scheme
    from .sensitivity import compile_variant, sensitivity

    sens = sensitivity(model, example, calibration, target, base="int8", candidates=CANDIDATES, progress=progress,
                       **compile_options)
    forced: frozenset[str] = frozenset()
    while True:
        choices = choose(sens, flash_budget, ram_budget, forced)
        layers = tuple((c.module, c.precision) for c in choices if c.precision != sens.base)
        prog = compile_variant(model, example, calibration, target, Scheme("auto", layers=layers), compile_options)
        over_flash = flash_budget is not None and prog.program_bytes > flash_budget
        over_ram = ram_budget is not None and prog.arena_bytes > ram_budget
        if not (over_flash or over_ram):
            break
        if over_ram or len(layers) == len(sens.layers):
            smallest, small = smallest_program(sens)
            raise BudgetError(f"precision='auto': the chosen program ({prog.program_bytes:,} B flash, "
                              f"{prog.arena_bytes:,} B RAM) exceeds the budget; the smallest program is uniform "
                              f"{smallest} at {small['flash_bytes']:,} B flash ({small['ram_bytes']:,} B RAM)")
        forced = frozenset(m for m, _p in layers) | {_next_layer(sens, choices)}
    prog.meta["precision_choice"] = [{"module": c.module, "precision": c.precision, "reason": c.reason}
                                     for c in choices]
    prog.meta["budgets"] = {"flash_budget": flash_budget, "ram_budget": ram_budget,
                            "uniform": sens.uniform}
    return prog


def _next_layer(sens: Sensitivity, choices: list[LayerChoice]) -> str:
    """The base layer whose change costs least SQNR per byte saved (the retry's extra layer)."""
    kept = {c.module for c in choices if c.precision == sens.base}
    rows = sens.table[sens.table["module"].isin(kept) & (sens.table["flash_saved"] > 0)]
    cost = rows["sqnr_loss_db"].clip(lower=0) / rows["flash_saved"]
    return str(rows.loc[cost.idxmin(), "module"])
