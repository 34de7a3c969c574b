"""The days-against-GPUs curve (issue 27, item 2): for the plan's accelerator, the training days
and the total at other GPU counts, each with the layout the search finds there, and the count
from which adding GPUs stops paying (seed 002's question).

Which counts: the plan's; the NEAR counts nearest it that split the global batch (whole nodes,
some TP × PP × DP with DP × micro-batch dividing the batch); then counts log-spaced by STEP out to
SPAN times the plan's count either side, each the split count nearest its target. A count where
no layout fits in memory is left out. Each point is the model at that count with its searched
layout (or the scenario's pinned dimensions): the search (budget/plan/layout.py) evaluates the
layouts with the model specialised to the scenario, and the point's workings are the model's
items that the count and the layout affect, re-evaluated over the plan's values (as the Layout
candidates are). The Curve sheet writes those same items as formulas over each point's row.

A run in stages is not drawn: its stages set their own GPU counts and layouts, so one count for
the whole run would not be the plan's run at another size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Mapping

from ..core.dates import from_serial
from ..core.message import Msg
from ..inputs.bind import InputValue
from ..model.lineitems import Model
from .layout import LAYOUT_INPUTS, Evaluator, Layout, NoLayoutFits, layout_space, search

MAX_POINTS = 40       # the bound on the curve's points
# Few points, since each is a layout search and a row of ~200 formulas (the 100-scenario sweep
# must stay fast): the split counts nearest the plan's, then one per doubling out to SPAN.
NEAR = 4              # split counts nearest the plan's (the batch's own steps around the answer)
STEP = 2.0            # log spacing beyond them: one point per doubling
SPAN = 16.0           # out to 16x fewer and 16x more GPUs than the plan's
# A point's search holds the plan's micro-batch, ZeRO stage and recomputation and searches the
# split (TP, PP, CP, EP, sequence parallelism) — the dimensions the count moves most — a
# twentieth to a hundredth of the layouts; where none of those fits, every dimension the
# scenario leaves free is searched.
HELD = ("micro_batch_size", "zero_stage", "recompute")
# Where adding GPUs stops paying: the smallest count on the curve at which doubling the GPUs cuts
# the training days (with failures and checkpoints) by less than KNEE_MIN_DAYS_CUT, or raises the
# total by more than KNEE_MAX_COST_RISE. Perfect scaling halves the days (a 50% cut) at about the
# same total; a cut under 25% means the second half of the cluster does less than half the work
# of the first (25 / 50), and a total up by more than 10% is a tenth of the budget for that.
KNEE_MIN_DAYS_CUT = 0.25
KNEE_MAX_COST_RISE = 0.10
DOUBLING = (1.5, 2.5)  # a point stands for "twice the GPUs" between these multiples of the count

# The figures a point shows first (after its count and layout), then every item of the model the
# count and the layout affect that these need (the workings)
KEYS = ("dp_size", "memory_per_gpu_gb", "check_memory_fits", "train_days", "stretched_training_days", "total_cost")
DAYS = "stretched_training_days"          # the curve's days: what the deadline is held to
DATE_END = "deadline_end_at_approval"     # what a date deadline (schedule.deadline) is held to
POINT_INPUTS = ("gpu_count", *LAYOUT_INPUTS)
# What evaluating the model at an extreme count may raise (the plan's own count was computed)
POINT_ERRORS = (ArithmeticError, ValueError, TypeError, OverflowError)


@dataclass(frozen=True)
class CurvePoint:
    gpu_count: int
    layout: Layout
    values: Mapping[str, object]           # the point's inputs and workings (curve_items)
    is_plan: bool = False
    note: Msg | None = None                # why the days rise from the previous point

    @property
    def days(self) -> float:
        return self.values[DAYS]

    @property
    def cost(self) -> float:
        return self.values["total_cost"]


@dataclass(frozen=True)
class Curve:
    points: tuple[CurvePoint, ...] = ()
    varies: Msg | None = None              # what the curve varies, in words
    knee: int | None = None                # index of the point where adding GPUs stops paying
    knee_reason: Msg | None = None         # the rule's figures there, or why no point is marked
    deadline_days: float | None = None
    items: tuple[str, ...] = field(default=())   # the workings each point's row holds
    deadline_date: float | None = None     # schedule.deadline (a serial), met at the approval percentile
    deadline_applies_to: str = "training_end"

    @property
    def plan_index(self) -> int | None:
        return next((k for k, p in enumerate(self.points) if p.is_plan), None)

    @property
    def has_deadline(self) -> bool:
        return self.deadline_days is not None or self.deadline_date is not None

    def misses_deadline(self, p: CurvePoint) -> bool:
        """Whether the point misses the deadline: its training days with failures past
        hardware.deadline_days, or its end at the approval percentile past the deadline's day
        (as check_meets_deadline and check_meets_deadline_date judge the plan)."""
        if self.deadline_days is not None:
            return not 0 < p.days <= self.deadline_days * (1 + 1e-12)
        if self.deadline_date is not None:
            return not p.values[DATE_END] < self.deadline_date + 1
        return False


def curve_items(model: Model, extra: tuple[str, ...] = ()) -> list[str]:
    """The items a point's row holds: those the count and the layout affect that the key figures
    (and `extra`) need, in model order (a stage's row items are the Stages sheet's: a run in
    stages has no curve)."""
    needed = model.closure((*KEYS, *extra))
    return [n for n in model.affected_by(set(POINT_INPUTS))
            if n in needed and model.items[n].kind != "rows"]


def choose_counts(split: list[int], plan_count: int) -> list[int]:
    """The plan's count, the NEAR split counts nearest it, then one split count nearest each
    log-spaced target out to SPAN either side, ascending, at most MAX_POINTS."""
    if not split:
        return [plan_count]
    chosen = {plan_count}
    dist = lambda n, target: abs(math.log(n / target))  # noqa: E731
    for n in sorted(split, key=lambda n: (dist(n, plan_count), n))[:NEAR]:
        chosen.add(n)
    k = 1
    while STEP ** k <= SPAN * (1 + 1e-9):
        for target in (plan_count * STEP ** k, plan_count / STEP ** k):
            nearest = min(split, key=lambda n: (dist(n, target), n))
            if dist(nearest, target) < math.log(STEP) / 2:
                chosen.add(nearest)
        k += 1
    out = sorted(chosen)
    while len(out) > MAX_POINTS:      # drop the farthest from the plan's count
        out.remove(max(out, key=lambda n: (dist(n, plan_count), n)))
    return out


def plan_curve(s, catalog, model: Model, inputs: Mapping[str, InputValue], pins: Mapping[str, object],
               values: Mapping[str, object], lookups: Mapping, searched: bool) -> Curve:
    """The curve of a plan whose inputs (after sizing) are `inputs` and values `values`; `pins` the
    scenario's own layout dimensions; `searched` whether the search chose any of the layout."""
    deadline = s.hardware.deadline_days
    dated = {"deadline_date": values["deadline_date"], "deadline_applies_to": s.schedule.deadline_applies_to} \
        if s.schedule.deadline is not None else {}
    if s.stages:
        return Curve(varies=Msg("plan.curve.varies.stages"), deadline_days=deadline, **dated)
    plan_count = int(values["gpu_count"])
    # the search over the plan's values (the model evaluated once already), in the space the
    # sizing searched (budget/plan/sizing.py search_setup), at the plan's interleaving
    evaluate = Evaluator(model, {k: iv.value for k, iv in inputs.items()}, lookups, base=values)
    space = layout_space(s, catalog, model, pins, int(values["virtual_pipeline_stages"] or 1))
    plan_layout = Layout.from_inputs(values)
    held = replace(space, pins={**space.pins, **{name: values[name] for name in HELD}})
    least = values["min_gpus_for_memory"]       # below it no layout fits (memory first)
    items = curve_items(model, (DATE_END,) if dated else ())
    rerun = model.dependents(set(POINT_INPUTS), tuple(items))
    env = dict(values)
    points = []
    split = [n for n in space.split_counts() if not isinstance(least, float) or n >= least]
    for count in choose_counts(split, plan_count):
        if count == plan_count:
            layout = plan_layout
        elif searched:
            layout = _searched(evaluate, held, space, count)
            if layout is None:
                continue
        else:
            layout = plan_layout
            if count % (layout.tp * layout.pp * layout.cp):
                continue
        try:
            got = rerun({**env, **layout.as_inputs(), "gpu_count": float(count)}, lookups)
        except POINT_ERRORS:         # a count the model cannot compute (the plan's own was computed)
            continue
        if count != plan_count and not _finite(got):
            continue
        point_values = {name: got[name] for name in (*POINT_INPUTS, *items)}
        points.append(CurvePoint(count, layout, point_values, count == plan_count))
    points = _explained(points)
    knee, reason = knee_of(points)
    if not searched:
        varies = Msg("plan.curve.varies.pinned", layout=plan_layout.described(values["dp_size"]))
    elif pins:
        varies = Msg("plan.curve.varies.partly_pinned", pinned=", ".join(model.inputs[n].short for n in LAYOUT_INPUTS if n in pins))
    else:
        varies = Msg("plan.curve.varies.searched")
    return Curve(tuple(points), varies, knee, reason, deadline, tuple(items), **dated)


def _searched(evaluate, held, space, count: int) -> Layout | None:
    """The best layout at `count`: of the split with the plan's HELD dimensions, else of the
    whole space; None where none fits."""
    for where in (held, space):
        try:
            return search(evaluate, where, count, keep=1).best.layout
        except NoLayoutFits:
            continue
        except POINT_ERRORS:         # a count the model cannot compute is left out
            return None
    return None


def _finite(v: Mapping) -> bool:
    return all(isinstance(v[k], float) and math.isfinite(v[k]) and v[k] > 0 for k in (DAYS, "total_cost"))


def _explained(points: list[CurvePoint]) -> list[CurvePoint]:
    """Each point slower than the fastest point of fewer GPUs, with why: the best layout differs
    from that point's, the batch splits into fewer micro-batches per pipeline there (its bubble
    grows), or interruptions and checkpoints, which grow with the count, stretch the run more
    than the compute shrinks."""
    out, best = [], None
    for p in points:
        note = None
        if best is not None and p.days > best.days * (1 + 1e-9):
            if p.layout != best.layout:
                note = Msg("plan.curve.notes.layout_change", than=best.gpu_count,
                           layout=p.layout.described(p.values["dp_size"]),
                           previous=best.layout.described(best.values["dp_size"]))
            elif p.values["train_days"] > best.values["train_days"] * (1 + 1e-9):
                note = Msg("plan.curve.notes.batch_split", than=best.gpu_count,
                           microbatches=p.values["microbatches_per_step"],
                           previous=best.values["microbatches_per_step"], bubble=p.values["bubble_fraction"],
                           comm=p.values["comm_fraction"])
            else:
                note = Msg("plan.curve.notes.failures", than=best.gpu_count)
        out.append(replace(p, note=note))
        if best is None or p.days < best.days:
            best = p
    return out


def knee_of(points: list[CurvePoint]) -> tuple[int | None, Msg]:
    """The smallest count on the curve at which doubling the GPUs (the point nearest twice the
    count, between DOUBLING's multiples) cuts the days by less than KNEE_MIN_DAYS_CUT or raises
    the total by more than KNEE_MAX_COST_RISE; with the figures that decided it."""
    rule = dict(min_cut=KNEE_MIN_DAYS_CUT, max_rise=KNEE_MAX_COST_RISE)
    judged = False
    for i, p in enumerate(points):
        twice = [q for q in points if DOUBLING[0] * p.gpu_count <= q.gpu_count <= DOUBLING[1] * p.gpu_count]
        if not twice:
            continue
        judged = True
        q = min(twice, key=lambda q: (abs(math.log(q.gpu_count / (2 * p.gpu_count))), q.gpu_count))
        cut, rise = 1 - q.days / p.days, q.cost / p.cost - 1
        if cut < KNEE_MIN_DAYS_CUT or rise > KNEE_MAX_COST_RISE:
            return i, Msg("plan.curve.knee.found", gpus=p.gpu_count, doubled=q.gpu_count, days_cut=cut,
                          cost_rise=rise, **rule)
    return None, Msg("plan.curve.knee.none" if judged else "plan.curve.knee.too_few", **rule)


def rule_sentence() -> Msg:
    """The rule that marks where adding GPUs stops paying, in words."""
    return Msg("plan.curve.knee.rule", min_cut=KNEE_MIN_DAYS_CUT, max_rise=KNEE_MAX_COST_RISE)


def deadline_sentence(curve: Curve) -> Msg | None:
    """The deadline against the curve: the smallest count on it that meets it (None without a
    deadline, hardware.deadline_days or schedule.deadline)."""
    if not curve.has_deadline or not curve.points:
        return None
    meets = [p.gpu_count for p in curve.points if not curve.misses_deadline(p)]
    if curve.deadline_days is not None:
        figures = {"deadline": curve.deadline_days}
        met, none = "plan.curve.deadline", "plan.curve.deadline_none"
    else:
        figures = {"deadline": from_serial(curve.deadline_date).isoformat(),
                   "applies": Msg(f"plan.sources.deadline_applies.{curve.deadline_applies_to}")}
        met, none = "plan.curve.deadline_date", "plan.curve.deadline_date_none"
    return Msg(met, gpus=min(meets), **figures) if meets else Msg(none, **figures)
