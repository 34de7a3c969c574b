"""Seed 000 steps 1-3: the GPU count (given, from a deadline, or memory-first) and the layout the
search chooses there, with what the Parallelism sheet shows of how they were decided."""

from __future__ import annotations

import math

from dataclasses import dataclass, replace
from typing import Mapping

from ..core.dates import excel_serial, from_serial
from ..core.errors import Msg, Problem as _Problem
from ..core.i18n import fmt, text
from ..inputs.bind import InputValue
from ..inputs.catalog import Catalog
from ..inputs.scenario import Scenario
from ..model.model import build_model
from .layout import (LAYOUT_INPUTS, Candidate, Evaluator, Layout, NoLayoutFits, SearchResult, Space,
                     layout_space, search)
from .counts import Deadline, first_count_that_fits, smallest_count_for_deadline


@dataclass(frozen=True)
class LayoutChoice:
    """How the GPU count and the layout were decided, and the rows the Parallelism sheet shows."""
    mode: str                                  # fixed | deadline | memory-first
    search: SearchResult | None                # None when the scenario pins every dimension
    candidates: tuple[Candidate, ...]          # ranked fitting layouts, then rejected faster ones
    inputs: Mapping[str, InputValue]           # gpu_count and the six layout inputs
    explanation: str
    evaluations: int = 0                       # layouts evaluated, over every GPU count tried

    @property
    def rejected_from(self) -> int:
        """Index in `candidates` where the rejected (not fitting) rows start."""
        return len(self.search.ranked) if self.search else len(self.candidates)


class StagesNeedLayout(Exception):
    def __init__(self, problem):
        super().__init__()
        self.problem = problem


def size_and_lay_out(s: Scenario, catalog: Catalog, inputs: dict[str, InputValue],
                     lookups: Mapping) -> LayoutChoice:
    """Seed 000 steps 1-3: the GPU count (given, from a deadline, or memory-first) and a layout."""
    model, pins, base, evaluate, space = search_setup(s, catalog, inputs, lookups)
    given = s.hardware.gpu_count

    lang = s.language
    # a dimension with one possible value (CP below 16K tokens) is as good as pinned
    held = (set(pins) | ({"cp_size"} if len(space.cp_choices()) == 1 else set())
            | ({"ep_size"} if len(space.ep_choices()) == 1 else set()))
    if s.stages and not (given and held >= set(LAYOUT_INPUTS)):
        # the stages sum the plan at each stage's values: the search would rank the sums
        free = [model.inputs[n].path for n in LAYOUT_INPUTS if n not in held] or ["hardware.gpu_count"]
        raise StagesNeedLayout(_Problem("stages", Msg("plan.problems.stages_need_layout.message"),
                                         Msg("plan.problems.stages_need_layout.fix", keys=", ".join(free))))
    if s.parallelism.search_interleaving:
        # interleaving searched (budget/layout.py INTERLEAVING): the best over each admissible v
        try:
            return _interleaved_choice(s, model, inputs, pins, base, lookups, space)
        except NoLayoutFits:
            if not (given and held >= set(LAYOUT_INPUTS)):
                raise
    if given and held >= set(LAYOUT_INPUTS):
        pinned = evaluate.one(Layout.from_inputs({"cp_size": space.cp_choices()[0], "ep_size": space.ep_choices()[0], **pins}),
                          given)
        explanation = fmt("plan.layout.pinned_fits" if pinned.fits else "plan.layout.pinned_does_not_fit", lang,
                          layout=pinned.layout.describe(pinned.values["dp_size"], lang),
                          memory=pinned.values["memory_per_gpu_gb"], usable=pinned.values["usable_hbm_gb"])
        held_cp = {name: InputValue(float(value), model.inputs[name].cite)
                   for name, value in (("cp_size", pinned.layout.cp), ("ep_size", pinned.layout.ep))
                   if name not in pins}
        return LayoutChoice("fixed", None, (pinned,), held_cp, explanation, evaluate.calls)

    mode, result, count_source = _choose_count_and_layout(s, evaluate, space)
    return _layout_choice(s, model, inputs, pins, evaluate, mode, result, count_source)


def search_setup(s: Scenario, catalog: Catalog, inputs: Mapping[str, InputValue], lookups: Mapping,
                  run=None):
    """The model, the scenario's pinned layout inputs, the inputs the search starts from, its
    evaluator and the space it searches."""
    gpn = int(catalog.accelerator(s.hardware.accelerator).gpus_per_node.value)
    pins = {name: iv.value for name, iv in inputs.items()
            if name in LAYOUT_INPUTS and iv.value is not None}
    model = build_model(s.language)
    dims = model.layout_inputs()
    base = {k: iv.value for k, iv in inputs.items()}
    # Until the search chooses, free dimensions take their simplest value (PP: one stage).
    base.update({d.name: _cell(d.domain[0] if d.domain else 1) for d in dims if d.name not in pins})
    base["gpu_count"] = base["gpu_count"] or float(gpn)
    evaluate = Evaluator(model, base, lookups, run)
    space = layout_space(s, catalog, model, pins, s.parallelism.virtual_pipeline_stages)
    return model, pins, base, evaluate, space


def _choose_count_and_layout(s: Scenario, evaluate: Evaluator, space: Space):
    """The GPU count (given, from the deadline, or memory-first) and the search's result there."""
    given, lang = s.hardware.gpu_count, s.language
    if given:
        mode, result = "fixed", search(evaluate, space, given)
        count_source = None
    elif deadline_of(s, evaluate.base) is not None:
        mode = "deadline"
        deadline = deadline_of(s, evaluate.base)
        result, below = smallest_count_for_deadline(evaluate, space, deadline, deadline_start(evaluate.base, deadline))
        v = result.best.values
        if deadline.date is None:
            count_source = fmt("plan.sources.deadline", lang, deadline=deadline.days,
                               days=deadline.shown(v, lang), below=below)
        else:
            count_source = fmt("plan.sources.deadline_date", lang, deadline=from_serial(deadline.date).isoformat(),
                               applies=text(f"plan.sources.deadline_applies.{s.schedule.deadline_applies_to}", lang),
                               end=deadline.shown(v, lang), p50=from_serial(v["deadline_end_p50"]).isoformat(),
                               below=below)
    else:
        mode = "memory-first"
        start = int(evaluate.base["memory_first_gpus"])
        result = first_count_that_fits(evaluate, space, start)
        count_source = fmt("plan.sources.memory_first_raised" if result.gpu_count > start
                           else "plan.sources.memory_first", lang,
                           memory=evaluate.base["memory_total_gb"], usable=evaluate.base["usable_hbm_gb"],
                           margin=s.sizing.split_margin, gpus=start, raised=result.gpu_count)
    return mode, result, count_source


def _layout_choice(s: Scenario, model, inputs, pins, evaluate: Evaluator, mode: str, result: SearchResult,
                   count_source, interleaving: int | None = None, calls: int | None = None) -> LayoutChoice:
    chosen = result.best.layout.as_inputs()
    rank = fmt("plan.sources.search", s.language, fitting=result.fitting)
    layout_inputs = {name: (inputs[name] if name in pins else InputValue(chosen[name], rank))
                     for name in LAYOUT_INPUTS}
    if interleaving is not None:
        layout_inputs["virtual_pipeline_stages"] = InputValue(float(interleaving), rank)
    if count_source:
        layout_inputs["gpu_count"] = InputValue(float(result.gpu_count), count_source)
    return LayoutChoice(mode, result, result.ranked + result.rejected, layout_inputs,
                        result.explanation, evaluate.calls if calls is None else calls)


def _interleaved_choice(s: Scenario, model, inputs, pins, base: dict, lookups: Mapping,
                        space: Space) -> LayoutChoice:
    """The search at each interleaving degree the layers allow (DualPipe: none), the smallest GPU
    count first, then the faster layout; every candidate shown shares the chosen degree."""
    tried, calls, error = [], 0, None
    degrees = [1] if s.parallelism.pipeline_schedule == "dualpipe" else space.interleavings()
    for v in degrees:
        ev = Evaluator(model, {**base, "virtual_pipeline_stages": float(v)}, lookups)
        try:
            tried.append((v, ev, *_choose_count_and_layout(s, ev, replace(space, virtual_stages=v))))
        except NoLayoutFits as err:
            error = err
        calls += ev.calls
    if not tried:
        raise error
    v, ev, mode, result, count_source = min(tried, key=lambda t: (t[3].gpu_count, t[3].best.sort_key()))
    return _layout_choice(s, model, inputs, pins, ev, mode, result, count_source, v, calls)


def _cell(value):
    return value if isinstance(value, str) else float(value)


def deadline_of(s: Scenario, base: Mapping) -> Deadline | None:
    """The scenario's deadline for the sizing: training days, or a date; None when it has none."""
    if s.hardware.deadline_days:
        return Deadline(days=s.hardware.deadline_days)
    if s.schedule.deadline is not None:
        return Deadline(date=excel_serial(s.schedule.deadline), percentile=base["approval_percentile"])
    return None


def deadline_start(base: Mapping, deadline: Deadline) -> int:
    """A count below which no count can meet the deadline: the memory's, and the GPUs the days it
    leaves would need if the layout lost nothing (ideal_gpus). A date leaves the days from the end
    of what comes before training at any count (the phases, queue, setup and transfer; with
    project_end, evaluation and deployment after it) to the end of the deadline's day, and the
    training days at the approval percentile are at least their point × √(each uncertain
    factor's low × high) that moves them (a percentile of 50 or more; the model error's at least its factor)."""
    memory = base["min_gpus_for_memory"]
    if deadline.date is None:
        return int(max(memory, ideal_gpus(base, deadline.days)))
    scaled = base["stretched_training_days"] + base["rollback_days"] + base["card_allowance_days"]
    fixed = base["deadline_end"] - scaled
    factor = math.sqrt(max(0.0, base["unc_model_error_low"] * base["unc_model_error_high"]
                           * base["unc_train_tokens_low"] * base["unc_train_tokens_high"]))
    left = deadline.date + 1 - fixed
    if not (left > 0 and factor > 0):
        return int(memory)      # the search finds no count meets it, and says so
    return int(max(memory, ideal_gpus(base, left / factor)))


def ideal_gpus(base: Mapping, deadline_days: float) -> int:
    """A lower bound: GPUs needed if the layout lost nothing at all."""
    best_eff = (base["layout_efficiency_override"] if base["layout_efficiency_override"] is not None
                else 1 / base["reference_layout_efficiency"])
    ideal_gpu_days = base["gpu_days"] * base["layout_efficiency"] / best_eff
    return max(1, int(ideal_gpu_days / deadline_days))
