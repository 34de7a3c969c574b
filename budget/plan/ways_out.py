"""Ways out, not refusals (issue 13 item 4): the fix of a plan that cannot be laid out, or whose
pinned layout does not fit in memory, lists what would plan instead, each lever planned anew."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Mapping

from ..core import limits
from ..core.errors import InputError, Joined, Msg, Problem as _Problem
from ..inputs.bind import InputValue, bind
from ..inputs.catalog import Catalog
from ..inputs.scenario import Scenario
from ..model.model import RECOMPUTE_MODES
from .layout import Evaluator, NoLayoutFits, SearchResult, Space
from .counts import (first_count_that_fits, fits_at, nearest_batches, nearest_counts, smallest_count_for_deadline,
                     smallest_count_that_fits)
from .guardrails import MAX_PROJECT_DAYS
from .sizing import deadline_of, deadline_start, search_setup


def no_layout_problem(s: Scenario, why: Msg, ways: Msg | None = None):
    if s.hardware.gpu_count:
        return _Problem("hardware.gpu_count", why, ways or Msg("plan.problems.no_layout_at_count.fix"))
    return _Problem("hardware", why, ways or Msg("plan.problems.no_layout_for_deadline.fix"))


# --- ways out, not refusals (issue 13 item 4) -------------------------------------------------
# A refusal at a given GPU count names what would plan instead, each found by the search itself
# at the changed input (budget/plan/counts.py: nearest_batches, nearest_counts, smallest_count_that_fits)
# and costed by the model's own items (training days, total cost, recomputation overhead). The
# user's inputs never change: a way out is a suggestion with its numbers, the user chooses.

def refusal_fix(s: Scenario, catalog: Catalog, inputs: Mapping[str, InputValue], lookups: Mapping,
              why: Msg, file: str) -> Msg | None:
    """The fix that lists the ways out of a refusal; None where there is none to compute."""
    key = why.key
    if key == "layout.none_fits.deadline_fastest":
        return Msg("plan.problems.no_layout_for_deadline.fix_fastest", **why.figures)
    if key == "layout.none_fits.deadline_date_fastest":
        return Msg("plan.problems.no_layout_for_deadline.fix_fastest_date", **why.figures)
    if key == "layout.none_fits.no_count":
        return Msg("plan.problems.no_split_at_count.fix")
    _model, pins, _base, evaluate, space = search_setup(s, catalog, inputs, lookups)
    if key == "layout.none_fits.no_split" and s.hardware.gpu_count:
        return _split_ways_out(evaluate, space, s.hardware.gpu_count)
    if key in ("layout.none_fits.no_memory", "layout.none_fits.deadline_no_fit"):
        return _memory_ways_out(s, catalog, inputs, file, evaluate, space, pins)
    return None


WAYS_OUT_COUNTS = 16     # memory-first counts a lever is tried at (the plan itself tries 256)


def _lever_result(s: Scenario, evaluate: Evaluator, space: Space) -> SearchResult | None:
    """A lever planned the way the scenario sets its count (given, from the deadline, memory
    first): the search's result, or None when no layout fits (or meets the deadline)."""
    try:
        if s.hardware.gpu_count:
            return fits_at(evaluate, space, s.hardware.gpu_count)
        deadline = deadline_of(s, evaluate.base)
        if deadline is not None:
            return smallest_count_for_deadline(evaluate, space, deadline, deadline_start(evaluate.base, deadline))[0]
        return first_count_that_fits(evaluate, space, int(evaluate.base["memory_first_gpus"]), WAYS_OUT_COUNTS)
    except NoLayoutFits:
        return None


def _either(items: list):
    """'a' or 'a or b', in the reader's language."""
    return items[0] if len(items) == 1 else Msg("errors.list.or", items=items[0], last=items[1])


def _split_ways_out(evaluate: Evaluator, space: Space, gpus: int) -> Msg:
    """The nearest batches that split over the asked GPUs, the nearest counts that split the batch."""
    batches = [Msg("plan.ways_out.batch", batch=w.value, tokens=w.evaluate.base["global_batch_tokens"])
               for w in nearest_batches(evaluate, space, gpus) if w is not None]
    counts = [Msg("plan.ways_out.count", gpus=w.value)
              for w in nearest_counts(evaluate, space, gpus) if w is not None]
    figures = {"gpus": gpus, "batch": space.global_batch}
    if batches and counts:
        return Msg("plan.problems.no_split_at_count.fix_both", batches=_either(batches),
                   counts=_either(counts), **figures)
    if batches:
        return Msg("plan.problems.no_split_at_count.fix_batch", batches=_either(batches), **figures)
    if counts:
        return Msg("plan.problems.no_split_at_count.fix_count", counts=_either(counts), **figures)
    return Msg("plan.problems.no_split_at_count.fix")


def _memory_ways_out(s: Scenario, catalog: Catalog, inputs: Mapping[str, InputValue], file: str,
                     evaluate: Evaluator, space: Space, pins: Mapping, only_fitting: bool = False) -> Msg:
    """Each lever (a higher ZeRO stage, selective then full recomputation, more GPUs, a larger
    accelerator), planned: the ones that fit, cheapest first, then (unless only_fitting) the
    ones that do not."""
    currency, gpus = s.prices.currency, s.hardware.gpu_count
    fitting: list[tuple[float, Msg]] = []
    failing: list[Msg] = []

    def way(key: str, result: SearchResult, lever, ev: Evaluator = evaluate, **figures) -> None:
        v = result.best.values
        refused = _refused_way(ev, result)
        if refused is not None:     # a way out is one the planner itself would accept
            failing.append(Msg("plan.ways_out.refused", lever=lever, reason=refused))
            return
        fitting.append((v["total_cost"], Msg(key, layout=result.best.layout.described(v["dp_size"]),
                                             gpus=result.gpu_count, days=v["train_days"],
                                             memory=v["memory_per_gpu_gb"], usable=v["usable_hbm_gb"],
                                             total=v["total_cost"], currency=currency, **figures)))

    def pinned(**values) -> SearchResult | None:
        return _lever_result(s, evaluate, replace(space, pins={**space.pins, **values}))

    if "zero_stage" in pins:
        stages = [z for z in space.domains["zero_stage"] if float(z) > float(pins["zero_stage"])]
        found = next(((z, r) for z in stages if (r := pinned(zero_stage=z))), None)
        if found:
            way("plan.ways_out.zero", found[1], Msg("plan.ways_out.lever.zero", stage=int(found[0])),
                stage=int(found[0]))
        elif stages:
            failing.append(Msg("plan.ways_out.zero_none", stage=int(stages[-1])))
    if "recompute" in pins and pins["recompute"] != RECOMPUTE_MODES[-1]:
        modes = RECOMPUTE_MODES[RECOMPUTE_MODES.index(pins["recompute"]) + 1:]
        found = next(((m, r) for m in modes if (r := pinned(recompute=m))), None)
        if found:
            way("plan.ways_out.recompute", found[1], Msg(f"layout.recompute.{found[0]}"), mode=found[0],
                recompute=Msg(f"layout.recompute.{found[0]}"),
                overhead=found[1].best.values["recompute_overhead"])
        else:
            failing.append(Msg("plan.ways_out.recompute_none"))
    if gpus:     # otherwise the scenario's own mode chose the count
        more = smallest_count_that_fits(evaluate, space, gpus)
        if more is not None:
            way("plan.ways_out.more_gpus", more, Msg("plan.ways_out.lever.more_gpus", gpus=more.gpu_count))
        else:
            failing.append(Msg("plan.ways_out.more_gpus_none"))
    larger = _larger_accelerator(s, catalog, inputs, file, evaluate)
    if larger is not None:
        acc, result, prices, ev = larger
        if prices:
            way("plan.ways_out.accelerator_scaled", result, acc.name, ev, accelerator=acc.name, id=acc.id,
                ratio=prices[0] / prices[1], alt_price=prices[0], own_price=prices[1])
        else:
            way("plan.ways_out.accelerator", result, acc.name, ev, accelerator=acc.name, id=acc.id)
    else:
        failing.append(Msg("plan.ways_out.accelerator_none", gpus=gpus) if gpus
                       else Msg("plan.ways_out.accelerator_none_any"))
    fitting.sort(key=lambda t: t[0])
    listed = [fitting[0][1]] + [Msg("plan.ways_out.dearer", way=m, delta=cost - fitting[0][0], currency=currency)
                                for cost, m in fitting[1:]] if fitting else []
    if only_fitting:
        return (Msg("plan.problems.no_layout_at_count.check_fix_ways", ways=Joined(listed, "plan.ways_out.join"))
                if listed
                else Msg("plan.problems.no_layout_at_count.fix_no_lever"))
    if not listed:
        return Msg("plan.problems.no_layout_at_count.fix_none",
                   ways=Joined(failing, "plan.ways_out.join"))
    return Msg("plan.problems.no_layout_at_count.fix_ways",
               ways=Joined(listed + failing, "plan.ways_out.join"))


def _refused_way(evaluate: Evaluator, result: SearchResult) -> Msg | None:
    """Why the planner would refuse a way out's own plan (None: it would accept it): the whole
    model evaluated at the lever's inputs, its layout and count (the search's figures are only
    those it ranks by), held to the checks build_plan makes (interruptions outpace the work, a
    figure not finite, a project over the century), with a positive total and training days."""
    try:
        values = evaluate.model.evaluate({**evaluate.inputs, **result.best.layout.as_inputs(),
                                          "gpu_count": float(result.gpu_count)}, evaluate.tables)
    except (ZeroDivisionError, OverflowError, ValueError):
        return Msg("plan.ways_out.reason.not_finite")
    if values["failure_fraction"] >= 1:
        return Msg("plan.ways_out.reason.never_ends")
    if any(isinstance(x, float) and not math.isfinite(x) for x in values.values()):
        return Msg("plan.ways_out.reason.not_finite")
    if not (values["total_cost"] > 0 and values["train_days"] > 0):
        return Msg("plan.ways_out.reason.not_positive")
    if values["project_days"] > MAX_PROJECT_DAYS:
        return Msg("plan.ways_out.reason.too_long", limit=limits.MAX_PROJECT_YEARS)
    return None


def _larger_accelerator(s: Scenario, catalog: Catalog, inputs: Mapping[str, InputValue], file: str,
                        evaluate: Evaluator):
    """The catalog accelerator with the least memory above the scenario's own on which a layout
    fits (at the asked count in its whole nodes, or at the count the scenario's mode chooses),
    at the scenario's other inputs and prices; its price per GPU-hour is the scenario's scaled by
    the two accelerators' median on-demand prices in the catalog, when it quotes both (a GB200
    hour is not an H100 hour), returned as (that one's, the scenario's) or None."""
    own = catalog.accelerator(s.hardware.accelerator)
    own_price = catalog.prices.on_demand_usd(own.id) if catalog.prices else None
    larger = sorted((a for a in catalog.accelerators if a.hbm_gb.value > own.hbm_gb.value),
                    key=lambda a: a.hbm_gb.value)
    model, lookups, gpus = evaluate.model, evaluate.tables, s.hardware.gpu_count
    for acc in larger:
        gpn = int(acc.gpus_per_node.value)
        count = -(-gpus // gpn) * gpn if gpus else None
        other = s.model_copy(update={"hardware": s.hardware.model_copy(
            update={"accelerator": acc.id, "gpu_count": count})})
        try:       # the plan's inputs, with those the accelerator sets bound anew
            changed = {**inputs, **bind(model, other, catalog, file)}
        except InputError:
            continue        # no price or figure for this accelerator: not a way out
        alt_price = catalog.prices.on_demand_usd(acc.id) if own_price else None
        prices = (alt_price, own_price) if alt_price else None
        if prices:      # the tier's price and the on-demand price beyond a commitment
            for name in ("price_per_gpu_hour", "on_demand_per_gpu_hour"):
                price = changed.get(name)
                if price is not None and isinstance(price.value, (int, float)):
                    changed[name] = replace(price, value=price.value * alt_price / own_price)
        _m, _p, _b, ev, space = search_setup(other, catalog, changed, lookups)
        result = _lever_result(other, ev, space)
        if result is not None:
            return acc, result, prices, ev
    return None


def memory_fix(s: Scenario, catalog: Catalog, inputs: Mapping[str, InputValue], lookups: Mapping,
                file: str) -> Msg | None:
    """The fix of a layout that does not fit (a pinned one: the search plans only those that
    fit): the levers the ways-out search finds that bring it under the usable memory, each with
    its memory, days and total, cheapest first, or that none does; None where the search cannot
    replan the plan (the model's generic fix stands)."""
    try:
        _model, pins, _base, evaluate, space = search_setup(s, catalog, inputs, lookups)
        return _memory_ways_out(s, catalog, inputs, file, evaluate, space, pins, only_fitting=True)
    except (NoLayoutFits, InputError):      # a plan the search cannot replan (stages): the model's fix
        return None
