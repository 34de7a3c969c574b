"""The GPU counts the search is run at: the smallest whole-node count that meets a deadline, the
first count from the memory-first one that fits, and the ways out of a refusal (the nearest
batches and counts that split, the smallest count that fits). Each count is planned by the
layout search of budget/plan/layout.py."""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass, replace

from typing import Mapping

from ..core.dates import from_serial
from ..core.errors import Msg
from ..core.i18n import fmt, text
from .layout import MAX_GPUS, Evaluator, NoLayoutFits, SearchResult, Space, search, splits


# what a date deadline reads of a count's best layout (the model's Timeline items)
DATE_FIGURES = ("deadline_end_at_approval", "deadline_end_p50")


@dataclass(frozen=True)
class Deadline:
    """What a deadline-sized count must meet: training days with failures (hardware.deadline_days),
    or a date (schedule.deadline, as a serial) by whose end the training (or the project) ends at
    the approval percentile of the training days (the model's deadline_end_at_approval)."""
    days: float | None = None
    date: float | None = None
    percentile: float = 80.0

    def figure(self, values: Mapping) -> float | None:
        """The figure held to the deadline: the training days with failures, or the end's serial;
        None where the run never ends (interruptions come faster than each one costs)."""
        days = values["stretched_training_days"]
        if not days > 0:
            return None
        return days if self.date is None else values["deadline_end_at_approval"]

    def meets(self, values: Mapping) -> bool:
        figure = self.figure(values)
        if figure is None:
            return False
        # the deadline is on the calendar: failures and spot preemptions count against it; a date
        # is met by an end anywhere in its day
        return figure <= self.days * (1 + 1e-12) if self.date is None else figure < self.date + 1

    def shown(self, values: Mapping, lang: str) -> str:
        """The figure as a message states it, rounded the way the verdict goes: a count that
        meets shows at most the deadline, one that does not shows more (days to the tenth, up or
        down; a date is the day the end falls in)."""
        figure = self.figure(values)
        if self.date is not None:
            return fmt("layout.deadline_figure.date", lang, date=from_serial(figure).isoformat(),
                       percentile=self.percentile)
        tenth = math.floor(figure * 10) / 10 if self.meets(values) else math.ceil(figure * 10) / 10
        return fmt("layout.deadline_figure.days", lang, days=tenth)


def smallest_count_for_deadline(evaluate: Evaluator, space: Space, deadline: Deadline,
                                start_gpus: int) -> tuple[SearchResult, str]:
    """The smallest whole-node GPU count whose best layout meets `deadline`, with why the counts
    below it do not.

    Only counts that split the batch (TP × PP × CP × DP, DP dividing the batch) are candidates;
    `start_gpus` is a lower bound (no smaller count can meet it). Days do not fall steadily as GPUs
    rise (a count whose DP splits the batch fewer ways, or needs another layout, trains slower
    than a smaller one; failures grow with the count), so nothing is bisected: bracket first
    (the counts at each doubling from the first, then the largest) until one meets, then scan
    every count that splits the batch from the first up to it and take the first that meets.
    When no probe meets, every count is scanned before the deadline is refused."""
    counts = [n for n in space.split_counts() if n >= start_gpus]
    if not counts:      # the batch, not the deadline: no count from the start splits it
        raise NoLayoutFits(Msg("layout.none_fits.no_count", start=start_gpus))
    cache: dict[int, SearchResult | None] = {}

    def at(i: int) -> SearchResult | None:
        if i not in cache:
            cache[i] = _at_count(evaluate, space, counts[i], deadline)
        return cache[i]

    def meets(i: int) -> bool:
        result = at(i)
        return result is not None and deadline.meets(result.best.values)

    hit, i = None, 0
    while hit is None and i < len(counts):     # the bracket: each doubling, then the largest
        if meets(i):
            hit = i
        elif i == len(counts) - 1:
            break
        else:
            i = max(i + 1, min(bisect_left(counts, 2 * counts[i]), len(counts) - 1))
    scan = range(hit + 1) if hit is not None else range(len(counts))
    answer = next((k for k in scan if meets(k)), None)
    if answer is None:
        # the fastest of every count that splits the batch, those below the bound too: a deadline
        # that can be met
        below = [n for n in space.split_counts() if n < start_gpus]
        results = [_at_count(evaluate, space, n, deadline) for n in below] + [at(k) for k in range(len(counts))]
        raise NoLayoutFits(_fastest(below + counts, results, deadline))
    return at(answer), _why_not_smaller(evaluate, space, counts, answer, at, deadline, start_gpus)


def _at_count(evaluate: Evaluator, space: Space, gpu_count: int, deadline: Deadline) -> SearchResult | None:
    """The search's result at `gpu_count` (None where no layout fits), its best layout with the
    deadline's figures."""
    try:
        result = search(evaluate, space, gpu_count)
    except NoLayoutFits:
        return None
    if deadline.date is None:
        return result
    best = evaluate.more(result.best, gpu_count, DATE_FIGURES)
    return replace(result, ranked=(best, *result.ranked[1:]))


def _fastest(counts: list[int], results: list, deadline: Deadline) -> Msg:
    """Why no count meets the deadline (every count that splits the batch was searched), with
    the fastest of them: a deadline that can be met."""
    tried = [(deadline.figure(r.best.values), n, r) for n, r in zip(counts, results) if r is not None]
    if not tried:     # memory, not time: no layout fits at any of them
        return Msg("layout.none_fits.deadline_no_fit", start=counts[0], largest=counts[-1])
    ending = [t for t in tried if t[0] is not None]
    if deadline.date is not None:
        figures = {"deadline": from_serial(deadline.date).isoformat(), "percentile": deadline.percentile,
                   "max_gpus": MAX_GPUS}
        if not ending:
            return Msg("layout.none_fits.deadline_date", **figures)
        end, gpus, _ = min(ending, key=lambda t: (t[0], t[1]))
        return Msg("layout.none_fits.deadline_date_fastest", **figures, gpus=gpus, tried=len(tried),
                   date=from_serial(end).isoformat())
    if not ending:
        return Msg("layout.none_fits.deadline", max_gpus=MAX_GPUS, deadline=deadline.days)
    days, gpus, _ = min(ending, key=lambda t: (t[0], t[1]))
    # rounded up to the tenth the message shows: a deadline of that many days is met
    return Msg("layout.none_fits.deadline_fastest", max_gpus=MAX_GPUS, deadline=deadline.days, gpus=gpus,
               tried=len(tried), days=math.ceil(days * 10) / 10)


def _why_not_smaller(evaluate: Evaluator, space: Space, counts: list[int], i: int, at, deadline: Deadline,
                     start_gpus: int) -> str:
    """Why the counts below the answer were not enough, in words: the next smaller count that
    splits the batch, a smaller count that trains faster than a larger one, the whole-node counts
    between that do not split the batch."""
    lang = evaluate.lang
    node = space.gpus_per_node
    if i == 0:
        if not (start_gpus > node and space.split_counts(counts[0] - 1)):
            return text("layout.next_smaller.none", lang)
        parts = [fmt("layout.next_smaller.below_bound", lang, start=start_gpus)]
        if counts[0] - start_gpus >= node:
            parts.append(fmt("layout.next_smaller.no_split", lang, below=start_gpus, gpu_count=counts[0]))
        return fmt("layout.next_smaller.join", lang).join(parts)
    below = at(i - 1)
    if below is None:
        parts = [fmt("layout.next_smaller.no_fit", lang, gpu_count=counts[i - 1])]
    else:
        parts = [fmt("layout.next_smaller.too_slow", lang, gpu_count=counts[i - 1],
                     figure=deadline.shown(below.best.values, lang))]
    if counts[i] - counts[i - 1] > node:
        parts.append(fmt("layout.next_smaller.no_split", lang, below=counts[i - 1], gpu_count=counts[i]))
    # the largest count below the answer that a smaller count beats, and the fastest below it
    ended = [(k, deadline.figure(at(k).best.values)) for k in range(i) if at(k) is not None]
    ended = [(k, f) for k, f in ended if f is not None]
    for k, figure in reversed(ended):
        faster = [(f, j) for j, f in ended if j < k and f < figure]
        if faster:
            _, j = min(faster)
            slow, fast = at(k).best, at(j).best
            parts.append(fmt("layout.next_smaller.slower", lang, slower=counts[k], faster=counts[j],
                             slow_figure=deadline.shown(slow.values, lang),
                             fast_figure=deadline.shown(fast.values, lang),
                             slow_layout=slow.layout.describe(slow.values["dp_size"], lang),
                             fast_layout=fast.layout.describe(fast.values["dp_size"], lang)))
            break
    return fmt("layout.next_smaller.join", lang).join(parts)


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
MAX_BATCH = 1 << 24          # the scenario's largest batch (budget/inputs/schema/training.py)


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
