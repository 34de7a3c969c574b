"""The GPU counts the search is run at: the smallest whole-node count that meets a deadline, the
first count from the memory-first one that fits, and the ways out of a refusal (the nearest
batches and counts that split, the smallest count that fits). Each count is planned by the
layout search of budget/plan/layout.py."""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass, replace

from ..core.errors import Msg
from ..core.i18n import DEFAULT_LANG, fmt, text
from .layout import MAX_GPUS, Evaluator, NoLayoutFits, SearchResult, Space, search, splits


def smallest_count_for_deadline(evaluate: Evaluator, space: Space, deadline_days: float,
                                start_gpus: int) -> tuple[SearchResult, str]:
    """The smallest whole-node GPU count whose best layout trains within `deadline_days`.

    Only counts that can be split (TP × PP × DP, DP dividing the batch) are candidates. Best
    training days fall roughly as 1/GPUs but not strictly (bubbles grow as DP shrinks the
    micro-batches), so: bisect over the candidate counts, then look a few counts below the
    answer for a smaller one that also meets the deadline.
    """
    counts = [n for n in space.split_counts() if n >= start_gpus]
    cache: dict[int, SearchResult | None] = {}

    def at(i: int) -> SearchResult | None:
        if i not in cache:
            try:
                cache[i] = search(evaluate, space, counts[i])
            except NoLayoutFits:
                cache[i] = None
        return cache[i]

    def meets(i: int) -> bool:
        result = at(i)
        # the deadline is on the calendar: failures and spot preemptions count against it (and
        # where interruptions come faster than each one costs, the run never ends: no days at all)
        return (result is not None
                and 0 < result.best.values["stretched_training_days"] <= deadline_days * (1 + 1e-12))

    if not counts:      # the batch, not the deadline: no count from the start splits it
        raise NoLayoutFits(Msg("layout.none_fits.no_count", start=start_gpus))
    lo, hi = 0, len(counts) - 1
    if not meets(hi):
        # Failures grow with the count, so the largest counts may be slower (or never end):
        # probe the counts at each doubling from the first, bisect below the first that meets.
        probes = sorted({bisect_left(counts, counts[0] << k) for k in range(64) if counts[0] << k <= counts[-1]})
        hit = next((n for n, i in enumerate(probes) if meets(i)), None)
        if hit is None:
            raise NoLayoutFits(_fastest(evaluate, space, deadline_days))
        lo, hi = (probes[hit - 1] + 1 if hit else 0), probes[hit]
    while lo < hi:
        mid = (lo + hi) // 2
        if meets(mid):
            hi = mid
        else:
            lo = mid + 1
    for i in range(max(0, hi - 8), hi):
        if meets(i):
            hi = i
            break
    return at(hi), _next_smaller(counts, hi, at, evaluate.lang)


def _fastest(evaluate: Evaluator, space: Space, deadline_days: float) -> Msg:
    """Why no count meets the deadline, with the fastest of the counts that split the batch at
    each doubling from the smallest (and the largest): a deadline that can be met."""
    counts = space.split_counts()
    probes = {counts[bisect_left(counts, counts[0] << k)] for k in range(64) if counts[0] << k <= counts[-1]}
    tried, fit = [], False
    for n in sorted(probes | {counts[-1]}):
        result = fits_at(evaluate, space, n)
        fit = fit or result is not None
        days = result.best.values["stretched_training_days"] if result is not None else 0
        if days > 0:
            tried.append((days, n))
    if not fit:     # memory, not time: no layout fits at any of them
        return Msg("layout.none_fits.deadline_no_fit", start=counts[0], largest=counts[-1])
    if not tried:
        return Msg("layout.none_fits.deadline", max_gpus=MAX_GPUS, deadline=deadline_days)
    days, gpus = min(tried)
    # rounded up to the tenth the message shows: a deadline of that many days is met
    return Msg("layout.none_fits.deadline_fastest", max_gpus=MAX_GPUS, deadline=deadline_days, gpus=gpus,
               days=math.ceil(days * 10) / 10)


def _next_smaller(counts: list[int], i: int, at, lang: str = DEFAULT_LANG) -> str:
    """Why the count below the answer was not enough, in words."""
    if i == 0:
        return text("layout.next_smaller.none", lang)
    below = at(i - 1)
    if below is None:
        return fmt("layout.next_smaller.no_fit", lang, gpu_count=counts[i - 1])
    return fmt("layout.next_smaller.too_slow", lang, gpu_count=counts[i - 1],
               days=below.best.values["stretched_training_days"])


def first_count_that_fits(evaluate: Evaluator, space: Space, start_gpus: int, limit: int = 256) -> SearchResult:
    """From the memory-first count upward, the first splittable count some layout fits (of the
    first `limit` counts that split)."""
    last_error = NoLayoutFits(Msg("layout.none_fits.no_count", start=start_gpus))
    for n in [n for n in space.split_counts() if n >= start_gpus][:limit]:
        try:
            return search(evaluate, space, n)
        except NoLayoutFits as err:
            last_error = err
    raise last_error


# --- ways out of a refusal (issue 13 item 4) --------------------------------------------------
# What to change when no layout splits the batch or fits in memory: the nearest batches and GPU
# counts that split, the smallest count that fits. Each is found by the search itself (its
# divisibility rules, the model's memory), never guessed, so planning it succeeds.

WAYS_OUT_SEARCHES = 6        # searches per direction before a way out is given up
WAYS_OUT_NODES = 4096        # whole nodes looked at per direction for a count that splits
MAX_BATCH = 1 << 24          # the scenario's largest batch (budget/scenario.py PositiveInt)


def fits_at(evaluate: Evaluator, space: Space, gpu_count: int) -> SearchResult | None:
    """The search's result at `gpu_count`, or None when no layout splits or fits there (found by
    the memory check alone, before the search ranks the layouts)."""
    if not evaluate.any_fits(space, gpu_count):
        return None
    return search(evaluate, space, gpu_count, keep=1)


@dataclass(frozen=True)
class WayOut:
    """A changed input that plans: the value, the search's result there and the evaluator
    (its model values at that value: `evaluate.base`)."""
    value: object
    result: SearchResult
    evaluate: Evaluator


def nearest_batches(evaluate: Evaluator, space: Space, gpu_count: int) -> tuple[WayOut | None, WayOut | None]:
    """The nearest global batches (in sequences) below and above the asked one that split over
    `gpu_count` GPUs and fit in memory: the multiples of what the splits need (`batch_steps`)
    nearest the batch, each checked by `options` and planned by the search."""
    batch, steps = space.global_batch, space.batch_steps(gpu_count)

    def first(batches) -> WayOut | None:
        for b in sorted(batches, key=lambda b: abs(b - batch))[:WAYS_OUT_SEARCHES]:
            trial = replace(space, global_batch=b)
            if not splits(trial, gpu_count):
                continue
            ev = evaluate.changed(global_batch_sequences=float(b))
            result = fits_at(ev, trial, gpu_count)
            if result is not None:
                return WayOut(b, result, ev)
        return None

    near = range(WAYS_OUT_SEARCHES)
    below = {((batch - 1) // d - k) * d for d in steps for k in near}
    above = {(batch // d + 1 + k) * d for d in steps for k in near}
    return (first({b for b in below if 0 < b < batch}), first({b for b in above if batch < b <= MAX_BATCH}))


def nearest_counts(evaluate: Evaluator, space: Space, gpu_count: int) -> tuple[WayOut | None, WayOut | None]:
    """The nearest whole-node GPU counts below and above `gpu_count` that split the batch and fit."""
    node = space.gpus_per_node
    start = gpu_count // node * node

    def first(ns) -> WayOut | None:
        searched = 0
        for n in ns:
            if not splits(space, n):
                continue
            result = fits_at(evaluate, space, n)
            if result is not None:
                return WayOut(n, result, evaluate)
            searched += 1
            if searched == WAYS_OUT_SEARCHES:
                break
        return None

    below = (n for n in range(start, max(0, start - WAYS_OUT_NODES * node), -node) if 0 < n < gpu_count)
    above = (n for n in range(start + node, min(MAX_GPUS, start + WAYS_OUT_NODES * node) + 1, node))
    return first(below), first(above)


def smallest_count_that_fits(evaluate: Evaluator, space: Space, gpu_count: int) -> SearchResult | None:
    """The smallest whole-node count above `gpu_count` whose search finds a layout that fits.

    More GPUs split the model further, so fitting grows with the count (not strictly: a count
    with few factors splits less): probe the counts that split at doubling steps, bisect
    between the last that did not fit and the first that did, then look a few counts below."""
    counts = [n for n in space.split_counts() if n > gpu_count]
    cache: dict[int, bool] = {}

    def at(i: int) -> bool:
        if i not in cache:
            cache[i] = evaluate.any_fits(space, counts[i])
        return cache[i]

    lo, hi, step = -1, None, 1
    while lo + step < len(counts):
        if at(lo + step):
            hi = lo + step
            break
        lo, step = lo + step, step * 2
    if hi is None:
        if not counts or not at(len(counts) - 1):
            return None
        hi = len(counts) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if at(mid):
            hi = mid
        else:
            lo = mid
    first = next((i for i in range(max(0, hi - 8), hi) if at(i)), hi)
    return search(evaluate, space, counts[first], keep=1)
