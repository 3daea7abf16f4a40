"""``precision="auto"``: each layer's precision chosen from the sensitivity analysis to meet a flash and a
RAM budget with the least loss of output SQNR on the calibration data.

Each weighted layer has its options: the base precision (int8), W4A8 (int4 weights: saves flash, adds
noise) or A16W8 (int16 activations, int8 GPTQ weights, int64 bias: costs flash and RAM, lowers noise),
each with the flash it saves (negative: costs), the RAM of the program with it, and the noise it adds
(negative: removes) -- measured alone by :func:`sensitivity.sensitivity`. The noises of layers changed
together are taken to add up (relative noise power, 10^(-SQNR/10), above the base program's), the flash
saved too: the choice is then a multiple-choice knapsack, solved exactly by dynamic programming over the
bytes saved -- signed, from what every A16W8 option together would cost up to the bytes the flash budget
asks to save, in steps of at most 1/``DP_STEPS`` of that span, each option's bytes rounded down (so the
sum the DP sees never overstates what is saved).

The arena is the largest of its ops' needs, not a sum, so an option whose own program exceeds the RAM
budget is left out. The chosen program is compiled and measured: should its arena still exceed the RAM
budget (two int16 layers whose peaks meet), the chosen option with the largest arena of its own is left
out and the choice made again; should its flash exceed the budget (sizes are nearly but not exactly
additive), the choice is made again asking that many bytes more. Last, the program's output SQNR is
measured and a uniform program meeting the budgets with a higher one (from the sensitivity analysis) takes
its place: A16W8's gains are not additive -- one int16 layer among int8 ones removes little of the noise,
all of them together most of it (DS-CNN: -0.1 .. +6.1 dB per layer alone, +23.8 dB all at once).

A W4A8 option measured alone above the base program is counted as adding no noise: narrower weights add
error, the gain is their error cancelling the other layers' by chance, which the other choices undo.
Without any budget there is nothing to trade: every layer stays int8.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import budget
from .sensitivity import Sensitivity

#: Precisions a layer may take besides int8, in the order they are tried.
CANDIDATES: tuple[str, ...] = ("w4a8", "a16w8")
DP_STEPS = 8000
#: Compiles of the chosen program at most (each retry leaves out one option or asks more bytes).
MAX_ROUNDS = 24


class BudgetError(budget.BudgetError):
    """No per-layer choice meets the budget; the message names the smallest program that fits (a
    :class:`mcuforge.budget.BudgetError`, as every compile that misses its budget raises)."""


@dataclass(frozen=True)
class Option:
    """One layer at one candidate precision, as the sensitivity analysis measured it alone."""

    module: str
    precision: str
    flash_saved: int  # negative: the option costs flash
    added_noise: float  # relative noise power above the base program's; negative: it removes noise
    sqnr_loss_db: float  # output SQNR lost against the base program (negative: gained)
    ram_bytes: int  # the arena of the program with this layer alone at this precision


@dataclass(frozen=True)
class LayerChoice:
    module: str
    precision: str
    reason: str
    flash_saved: int = 0
    sqnr_loss_db: float = 0.0  # the loss of this layer's change measured alone
    ram_bytes: int = 0  # the arena of the program with this layer's change alone (0: the base precision)


def _noise(sqnr_db: float) -> float:
    return 10.0 ** (-sqnr_db / 10.0)


def smallest_program(sens: Sensitivity) -> tuple[str, dict[str, float]]:
    """The uniform program with the least flash (what to name when a budget cannot be met)."""
    name = min(sens.uniform, key=lambda n: (sens.uniform[n]["flash_bytes"], sens.uniform[n]["ram_bytes"]))
    return name, sens.uniform[name]


def _smallest_text(sens: Sensitivity) -> str:
    smallest, small = smallest_program(sens)
    return (f"the smallest program is uniform {smallest} at {small['flash_bytes']:,} B flash "
            f"({small['ram_bytes']:,} B RAM)")


def options_of(sens: Sensitivity) -> dict[str, list[Option]]:
    """Every layer's options (its rows of the sensitivity table), by module."""
    from ..quantize import get_scheme

    base_noise = _noise(sens.uniform[sens.base]["output_sqnr_db"])
    base_bits = get_scheme(sens.base).weight_bits
    options: dict[str, list[Option]] = {m: [] for m in sens.layers}
    for row in sens.table.itertuples():
        added = _noise(row.output_sqnr_db) - base_noise
        if get_scheme(row.precision).weight_bits < base_bits:
            # Narrower weights add noise; a gain measured alone is their error cancelling the other layers'
            # by chance, which the other layers' changes undo: counted as none.
            added = max(added, 0.0)
        options[row.module].append(Option(row.module, row.precision, int(row.flash_saved), added,
                                          float(row.sqnr_loss_db), int(row.ram_bytes)))
    return options


def choose(sens: Sensitivity, flash_budget: int | None, ram_budget: int | None, margin: int = 0,
           left_out: dict[tuple[str, str], str] | None = None) -> list[LayerChoice]:
    """The per-layer choice (every weighted layer, program order) meeting the budgets with the least added
    noise. ``margin``: bytes to save beyond what the budget asks (the retry after a program came out too
    large); ``left_out``: (module, precision) options not to take, with why (the retry after a program's
    arena came out too large)."""
    left_out = left_out or {}
    base = sens.uniform[sens.base]
    if ram_budget is not None and min(u["ram_bytes"] for u in sens.uniform.values()) > ram_budget:
        arena = min(u["ram_bytes"] for u in sens.uniform.values())
        raise BudgetError(f"precision='auto': no choice meets ram_budget {ram_budget:,} B: the smallest arena is "
                          f"{arena:,} B; {_smallest_text(sens)}")
    small = smallest_program(sens)[1]
    if flash_budget is not None and small["flash_bytes"] > flash_budget:
        raise BudgetError(f"precision='auto': no per-layer choice meets flash_budget {flash_budget:,} B: "
                          f"{_smallest_text(sens)}")
    if ram_budget is not None and base["ram_bytes"] > ram_budget:
        raise BudgetError(f"precision='auto': the {sens.base} arena ({base['ram_bytes']:,} B) exceeds ram_budget "
                          f"{ram_budget:,} B and no candidate precision lowers it")
    every = options_of(sens)
    if flash_budget is None and ram_budget is None:
        return [LayerChoice(m, sens.base, f"{sens.base}: no budget given, nothing to trade; "
                            + "; ".join(f"{o.precision} would {_figures(o, base)}" for o in every[m]))
                for m in sens.layers]
    why_not: dict[tuple[str, str], str] = dict(left_out)
    options: dict[str, list[Option]] = {}
    for module, opts in every.items():
        options[module] = []
        for o in opts:
            if (module, o.precision) in why_not:
                continue
            if ram_budget is not None and o.ram_bytes > ram_budget:
                why_not[(module, o.precision)] = f"its arena ({o.ram_bytes:,} B) exceeds the RAM budget"
                continue
            options[module].append(o)
    need = None if flash_budget is None else base["flash_bytes"] - flash_budget + margin
    picked = _knapsack(sens.layers, options, need)
    if picked is None:
        ram = "" if ram_budget is None else f" within ram_budget {ram_budget:,} B"
        raise BudgetError(f"precision='auto': no per-layer choice saves the {need:,} B of flash needed{ram}; "
                          f"{_smallest_text(sens)}")
    choices = []
    for module in sens.layers:
        if module in picked:
            o = picked[module]
            goal = ("among the cheapest bytes to meet the flash budget" if o.flash_saved > 0
                    else "the least noise within the budgets")
            choices.append(LayerChoice(module, o.precision, f"{o.precision}: {_figures(o, base)}: {goal}",
                                       o.flash_saved, o.sqnr_loss_db, o.ram_bytes))
            continue
        alternatives = [f"{o.precision} would {_figures(o, base)}" for o in options[module]]
        alternatives += [f"{p} left out: {why}" for (m, p), why in why_not.items() if m == module]
        verdict = "no choice with them meets the budgets with less noise" if options[module] else "nothing else fits"
        choices.append(LayerChoice(module, sens.base, f"{sens.base}: " + "; ".join([*alternatives, verdict])))
    return choices


def _figures(o: Option, base: dict[str, float]) -> str:
    """What an option does alone: flash, arena (when it grows) and output SQNR."""
    flash = f"save {o.flash_saved:,} B of flash" if o.flash_saved >= 0 else f"cost {-o.flash_saved:,} B more flash"
    ram = f", arena {o.ram_bytes:,} B" if o.ram_bytes > base["ram_bytes"] else ""
    return f"{flash}{ram}, output SQNR {-o.sqnr_loss_db:+.1f} dB (alone)"


def _knapsack(layers: list[str], options: dict[str, list[Option]], need: int | None) -> dict[str, Option] | None:
    """Least total added noise with at least ``need`` bytes saved (None: no flash constraint), one option
    (or none) per layer. Savings and noises are signed; the state is the bytes saved so far in units of
    ``step``, kept exactly from the most the options could cost up to the target -- a state above the target
    by more than the later layers could still cost is as good as one that much above, so it is capped there."""
    cost = [max([0, *(-o.flash_saved for o in options[m])]) for m in layers]
    gain = [max([0, *(o.flash_saved for o in options[m])]) for m in layers]
    step = max(1, math.ceil((sum(cost) + sum(gain)) / DP_STEPS))
    cost_units = [math.ceil(c / step) for c in cost]
    # the target in units: saving target * step bytes is enough; with no budget, a state no choice goes below
    target = -sum(cost_units) - 1 if need is None else math.ceil(need / step)
    best: dict[int, tuple[float, dict[str, Option]]] = {0: (0.0, {})}
    for i, module in enumerate(layers):
        cap = target + sum(cost_units[i + 1:])
        nxt: dict[int, tuple[float, dict[str, Option]]] = {}
        for s, (noise, picks) in best.items():
            for option in (None, *options[module]):
                saved = 0 if option is None else option.flash_saved // step  # rounded down: never overstated
                units = min(cap, s + saved)
                total = noise + (0.0 if option is None else option.added_noise)
                if units not in nxt or total < nxt[units][0]:
                    nxt[units] = (total, picks if option is None else {**picks, module: option})
        best = nxt
    feasible = [v for s, v in best.items() if s >= target]
    return min(feasible, key=lambda v: v[0])[1] if feasible else None


def _better_uniform(sens: Sensitivity, flash_budget: int | None, ram_budget: int | None,
                    sqnr_db: float) -> str | None:
    """The uniform program (measured by the sensitivity analysis) that meets the budgets with a higher output
    SQNR than ``sqnr_db`` (the per-layer choice's, measured), the best such; None if there is none."""
    fits = [name for name, u in sens.uniform.items()
            if (flash_budget is None or u["flash_bytes"] <= flash_budget)
            and (ram_budget is None or u["ram_bytes"] <= ram_budget) and u["output_sqnr_db"] > sqnr_db]
    return max(fits, key=lambda n: sens.uniform[n]["output_sqnr_db"], default=None)


def compile_auto(model, example, calibration, target, flash_budget, ram_budget, progress, compile_options):  # noqa: ANN001, ANN201
    """Sensitivity analysis, the choice, then the program (see the module notes); the program's
    ``meta["precision_choice"]`` lists every weighted layer's precision and why."""
    from ..quantize import Scheme, get_scheme
    from .sensitivity import compile_variant, fp32_outputs, output_sqnr, sensitivity, stacked

    sens = sensitivity(model, example, calibration, target, base="int8", candidates=CANDIDATES, progress=progress,
                       **compile_options)
    margin, left_out = 0, {}
    for _round in range(MAX_ROUNDS):
        choices = choose(sens, flash_budget, ram_budget, margin, left_out)
        layers = tuple((c.module, c.precision) for c in choices if c.precision != sens.base)
        prog = compile_variant(model, example, calibration, target, Scheme("auto", layers=layers), compile_options)
        if ram_budget is not None and prog.arena_bytes > ram_budget:
            # the options that raise the arena alone; the one raising it most is left out
            raising = [c for c in choices if c.ram_bytes > sens.uniform[sens.base]["ram_bytes"]]
            if not raising:
                break
            drop = max(raising, key=lambda c: (c.ram_bytes, c.sqnr_loss_db))
            left_out[(drop.module, drop.precision)] = (f"with the other choices the program's arena came to "
                                                       f"{prog.arena_bytes:,} B, over the RAM budget")
            continue
        if flash_budget is not None and prog.program_bytes > flash_budget:
            margin += prog.program_bytes - flash_budget
            continue
        batch = stacked(calibration)
        sqnr = output_sqnr(prog, fp32_outputs(model, batch), batch)
        budgets = flash_budget is not None or ram_budget is not None  # without, nothing to trade
        better = _better_uniform(sens, flash_budget, ram_budget, sqnr) if budgets else None
        if better is not None:
            prog = compile_variant(model, example, calibration, target, get_scheme(better), compile_options)
            u = sens.uniform[better]["output_sqnr_db"]
            choices = [LayerChoice(c.module, better, f"{better}: the uniform {better} program meets the budgets "
                                   f"with {u:.1f} dB output SQNR, above the per-layer choice's {sqnr:.1f} dB")
                       for c in choices]
            sqnr = u
        prog.meta["precision_choice"] = [{"module": c.module, "precision": c.precision, "reason": c.reason}
                                         for c in choices]
        prog.meta["budgets"] = {"flash_budget": flash_budget, "ram_budget": ram_budget, "uniform": sens.uniform,
                                "output_sqnr_db": sqnr}
        return prog
    raise BudgetError(f"precision='auto': the chosen program ({prog.program_bytes:,} B flash, {prog.arena_bytes:,} B "
                      f"RAM) exceeds the budget; {_smallest_text(sens)}")
