"""The guardrails a plan is held to after it is evaluated: a model that cannot be computed names
its line item, every figure shown is finite and the project ends within a century, the checks
and warnings in the reader's words, and the pinned settings that change nothing (inert)."""

from __future__ import annotations

import math
from typing import Mapping

from ..core import limits
from ..core.errors import InputError, Msg, Problem as _Problem, ScenarioError
from ..core.i18n import fmt, text
from ..inputs.bind import InputValue
from ..inputs.scenario import Scenario
from ..model.lineitems import Model
from ..model.model import build_model
from .layout import LAYOUT_INPUTS


MAX_PROJECT_DAYS = limits.MAX_PROJECT_DAYS   # a century: dates stay displayable, the week grid fits a sheet


def evaluate_or_refuse(model, inputs: dict, lookups: Mapping, file: str) -> dict:
    """Evaluate the model; a division by zero names the line item it happened in."""
    try:
        return model.evaluate(inputs, lookups)
    except (ZeroDivisionError, OverflowError, ValueError):
        from ..formula.expr import compile_items
        env = dict(inputs)
        for item in model.items.values():
            try:
                compile_items([(item.name, item.expr)])(env, lookups)
            except ZeroDivisionError:
                raise ScenarioError(file, [item_problem(model, item.name, "divides_by_zero")],
                                    model.lang) from None
            except (OverflowError, ValueError):
                raise ScenarioError(file, [item_problem(model, item.name, "cannot_compute")],
                                    model.lang) from None
        raise


def item_problem(model: Model, name: str, kind: str):
    """A line item that cannot be computed (plan.problems.<kind>): its label (the model's
    message, in the reader's language), and the inputs its formula uses as the place to look."""
    item = model.items.get(name)
    label = Msg(f"items.{name}.label") if item is not None else name
    refs = ", ".join(sorted(item.expr.refs())) if item is not None else name
    return _Problem(name, Msg(f"plan.problems.{kind}.message", label=label),
                    Msg(f"plan.problems.{kind}.fix", refs=refs))


def check_displayable(model, s: Scenario, values: Mapping, candidates, file: str) -> None:
    """Every figure the workbook shows is a finite number, and the project ends within a
    century: the schema's bounds keep each input plausible, this keeps their combination so."""
    for name, value in values.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise ScenarioError(file, [item_problem(model, name, "not_finite")], s.language)
    # a candidate's other figures are those of `values`, checked above
    changed = set(LAYOUT_INPUTS).union(model.affected_by(set(LAYOUT_INPUTS))) if candidates else ()
    names = [name for name in candidates[0] if name in changed] if candidates else ()
    for table in candidates:
        for name in (names if table.keys() == candidates[0].keys() else table):
            value = table[name]
            if isinstance(value, float) and not math.isfinite(value):
                raise ScenarioError(file, [item_problem(model, name, "not_finite")], s.language)
    days = values["project_days"]
    if days > MAX_PROJECT_DAYS:
        training = values["training_end"] - values["training_start"]
        where, fix = (("data.train_tokens", "plan.problems.too_long.fix_tokens") if training > days / 2
                      else ("schedule", "plan.problems.too_long.fix_schedule"))
        raise ScenarioError(file, [_Problem(
            where, Msg("plan.problems.too_long.message", years=days / 365.25, limit=limits.MAX_PROJECT_YEARS),
            Msg(fix))], s.language)


def failing(values: Mapping[str, object], model: Model | None = None) -> list:
    """The checks that are not 0 (of `model`, whose texts they carry; the English model's by default)."""
    return [c for c in (model or build_model()).checks() if values[c.name] != 0]


def plan_warnings(model: Model, values: Mapping[str, object], fixes: Mapping[str, str] | None = None) -> list[str]:
    """One line per failing check, then per plausibility warning, in the model's words (a
    check's fix the plan's own where generation wrote one)."""
    fixes = fixes or {}
    return ([fmt("plan.warnings.check_failing", model.lang, sentence=c.sentence(values), fix=fixes.get(c.name, c.fix))
             for c in failing(values, model)]
            + [fmt("plan.warnings.warning", model.lang, sentence=w.sentence(values), fix=w.fix)
               for w in model.warnings() if values[w.name]])


# issue 25: a pinned setting is inert when the plan without it has the same memory per GPU,
# stretched training days and total within this share
INERT_TOLERANCE = 0.001
INERT_FIGURES = ("memory_per_gpu_gb", "stretched_training_days", "total_cost")
# input found inert -> (the setting's input, its value when removed)
INERT_SETTINGS = {"inert_recompute": ("recompute", "none"), "inert_compute_precision": ("compute_precision", "bf16")}


def inert_settings(s: Scenario, model, inputs: Mapping[str, InputValue], values: Mapping, lookups: Mapping,
                    file: str) -> dict[str, InputValue]:
    """The pinned recomputation and compute precision whose removal leaves the memory, the days
    and the cost within INERT_TOLERANCE: each its value (blank when it changes the plan), the
    model evaluated without it."""
    pinned = {"recompute": s.parallelism.recompute is not None, "compute_precision": True}
    base = {k: iv.value for k, iv in inputs.items()}
    out = {}
    for name, (setting, removed) in INERT_SETTINGS.items():
        value = base.get(setting)
        inert = False
        if pinned[setting] and value not in (None, removed):
            try:
                without = evaluate_or_refuse(model, {**base, setting: removed}, lookups, file)
            except InputError:
                without = None
            inert = without is not None and all(
                abs(float(without[f]) - float(values[f])) <= INERT_TOLERANCE * abs(float(values[f])) for f in INERT_FIGURES)
        out[name] = InputValue(value if inert else "no", text("plan.sources.inert", s.language))
    return out if any(iv.value != "no" for iv in out.values()) else {}
