"""Scenario + catalog → plan. Pure functions, no IO; the result is a frozen `Plan`.

`resolve_inputs` turns a validated scenario into the model's input values, each with the
source a reviewer will read next to it. `build_plan` evaluates the model over them.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Mapping

from ..core.errors import Joined, Msg, Problem as _Problem, ScenarioError
from ..core.i18n import fmt, text
from ..inputs.bind import InputValue, bind, fx_rows, region_note, schema_paths
from ..inputs.catalog import Catalog
from ..inputs.scenario import Scenario
from ..model.lineitems import Model
from ..model.model import (ACCELERATOR_TABLE, ACTIVATION_TABLE, ARCHITECTURE_TABLE, FX_TABLE, SEARCH_INPUTS, SEARCH_ITEMS,
                           build_model)
from .guardrails import INERT_SETTINGS, check_displayable, evaluate_or_refuse, failing, inert_settings, plan_warnings
from .layout import LAYOUT_INPUTS, NoLayoutFits
from .sizing import LayoutChoice, StagesNeedLayout, size_and_lay_out
from .curve import Curve, plan_curve
from .tables import TableData, accelerator_table, activation_table, architecture_table
from .ways_out import memory_fix, no_layout_problem, refusal_fix


CURRENCY_MARK = "\x00"     # i18n: not text (stands for the currency code in a rendered fix)


def _with_currency(figure, currency: str):
    """A message with every `currency` figure in it, nested ones too, set to `currency`."""
    if isinstance(figure, Msg):
        return Msg(figure.key, **{k: currency if k == "currency" else _with_currency(v, currency)
                                  for k, v in figure.figures.items()})
    if isinstance(figure, Joined):
        return Joined([_with_currency(x, currency) for x in figure.items], figure.sep)
    return figure


@dataclass(frozen=True)
class Plan:
    scenario: Scenario
    scenario_id: str                       # the file stem: names the output files
    inputs: Mapping[str, InputValue]
    values: Mapping[str, object]
    tables: Mapping[str, TableData]
    warnings: tuple[str, ...] = field(default=())
    layout: LayoutChoice | None = None
    candidate_values: tuple[Mapping[str, object], ...] = ()   # full model values per candidate
    model: Model | None = None              # the model the values come from; writers read it
    options: tuple[tuple[str, "Plan"], ...] = ()   # the scenario's options, each a plan of its own
    # a failing check's fix written for this plan at generation (issue 25: the memory check's
    # lists the levers that bring the layout under the usable memory, each with its figures)
    fixes: Mapping[str, Msg] = field(default_factory=lambda: MappingProxyType({}))
    curve: Curve | None = None              # the days-against-GPUs curve (None: not asked for)
    region_note: str = ""                   # issue 28: the region the defaults came from, and how

    def fix_of(self, item) -> str:
        """A check's or warning's fix: the plan's own where generation wrote one, else the model's."""
        fix = self.fixes.get(item.name)
        return item.fix if fix is None else fix.render(self.lang)

    def fix_pieces(self, name: str) -> list[str] | None:
        """The plan's own fix of check `name` cut where the plan's currency stands (the workbook
        puts its live currency cell there), or None where the model's fix stands."""
        fix = self.fixes.get(name)
        return None if fix is None else _with_currency(fix, CURRENCY_MARK).render(self.lang).split(CURRENCY_MARK)


    def __getitem__(self, name: str):
        return self.values[name]

    # Headline figures, typed, for readers and tests.
    @property
    def lang(self) -> str:
        """The language its texts are written in (the scenario's, after --lang)."""
        return self.scenario.language

    @property
    def train_flops(self) -> float: return self.values["train_flops"]
    @property
    def effective_tflops(self) -> float: return self.values["effective_tflops"]
    @property
    def gpu_seconds(self) -> float: return self.values["gpu_seconds"]
    @property
    def gpu_hours(self) -> float: return self.values["gpu_hours"]
    @property
    def gpu_days(self) -> float: return self.values["gpu_days"]
    @property
    def train_days(self) -> float: return self.values["train_days"]
    @property
    def gpu_count(self) -> int: return int(self.values["gpu_count"])
    @property
    def dp_size(self) -> float: return self.values["dp_size"]
    @property
    def memory_total_gb(self) -> float: return self.values["memory_total_gb"]
    @property
    def memory_per_gpu_gb(self) -> float: return self.values["memory_per_gpu_gb"]
    @property
    def fits(self) -> bool: return self.values["check_memory_fits"] == 0
    @property
    def rental_cost(self) -> float: return self.values["rental_cost"]
    @property
    def storage_cost(self) -> float: return self.values["storage_cost"]
    @property
    def network_cost(self) -> float: return self.values["network_cost"]
    @property
    def staffing_cost(self) -> float: return self.values["staffing_cost"]
    @property
    def subtotal_cost(self) -> float: return self.values["subtotal_cost"]
    @property
    def buffer_cost(self) -> float: return self.values["buffer_cost"]
    @property
    def total_cost(self) -> float: return self.values["total_cost"]

    @property
    def failing_checks(self) -> list[str]:
        return [c.name for c in failing(self.values)]


def resolve_inputs(s: Scenario, catalog: Catalog, scenario_file: str = "scenario") -> dict[str, InputValue]:
    return bind(build_model(s.language), s, catalog, scenario_file)


def build_plan(s: Scenario, catalog: Catalog, scenario_id: str = "scenario",
               scenario_file: str | None = None, curve: bool = True) -> Plan:
    """bind → tables → size and lay out → evaluate; the Plan carries the model it was built from
    (and, with `curve`, the days-against-GPUs curve: an option's plan or a calibration row's
    needs none)."""
    file = scenario_file or f"{scenario_id}.yaml"
    catalog = catalog.with_accelerators(s.catalog.accelerators)
    model = build_model(s.language)
    inputs = bind(model, s, catalog, file)
    from .reference_runs import run_inputs       # the Reference runs: chosen once the plan's size is known
    inputs.update(run_inputs(catalog, s.language))
    tables = {ACCELERATOR_TABLE: accelerator_table(catalog, s), ARCHITECTURE_TABLE: architecture_table(catalog, s.language),
              ACTIVATION_TABLE: activation_table(s.language),
              FX_TABLE: TableData(*fx_rows(s, catalog))}
    lookups = {name: t.lookup() for name, t in tables.items()}
    inputs.update(_structure(inputs, s.language, weeks=0))
    try:
        layout = size_and_lay_out(s, catalog, inputs, lookups)
    except NoLayoutFits as err:
        ways = refusal_fix(s, catalog, inputs, lookups, err.message, file)
        raise ScenarioError(file, [no_layout_problem(s, err.message, ways)], s.language) from None
    except StagesNeedLayout as err:
        raise ScenarioError(file, [err.problem], s.language) from None
    pins = {name: iv.value for name, iv in inputs.items() if name in LAYOUT_INPUTS and iv.value is not None}
    inputs.update(layout.inputs)
    searched = "yes" if layout.search is not None else "no"
    inputs["layout_searched"] = InputValue(searched, text("plan.sources.layout_searched", s.language))
    values = evaluate_or_refuse(model, _values(inputs), lookups, file)
    inputs.update(run_inputs(catalog, s.language, values))
    # What the search saw, kept beside the inputs (and the Timeline grid, sized for edits):
    # the checks compare the live cells with these.
    weeks = min(max(TIMELINE_MIN_WEEKS, 2 * math.ceil(min(values["project_weeks"], TIMELINE_MAX_WEEKS))),
                TIMELINE_MAX_WEEKS)
    held = values["spend_months"]
    months = min(max(CASHFLOW_MIN_MONTHS, 2 * math.ceil(min(held, CASHFLOW_MAX_MONTHS))), CASHFLOW_MAX_MONTHS)
    inputs.update(_structure(inputs, s.language, weeks, values, months))
    values = evaluate_or_refuse(model, _values(inputs), lookups, file)
    if values["failure_fraction"] >= 1:
        raise ScenarioError(file, [_Problem(
            "reliability.interruption_rate_per_gpu_hour",
            Msg("plan.problems.never_ends.message", mtbi=values["job_mtbi_hours"],
                loss=values["loss_per_interruption_hours"]),
            Msg("plan.problems.never_ends.fix"))], s.language)
    inert = inert_settings(s, model, inputs, values, lookups, file)
    if inert:
        inputs.update(inert)
        values = evaluate_or_refuse(model, _values(inputs), lookups, file)
        said = [fmt(f"plan.layout.inert.{name}", s.language, value=iv.value) for name, iv in inert.items()
                if iv.value != "no"]
        if said and layout.explanation:
            layout = replace(layout, explanation=layout.explanation + fmt(
                "plan.layout.inert.sentence", s.language, settings=fmt("plan.layout.inert.join", s.language).join(said)))
    fixes = {}
    if values["check_memory_fits"] != 0:
        fix = memory_fix(s, catalog, inputs, lookups, file)
        if fix is not None:
            fixes["check_memory_fits"] = fix
    candidates = _candidate_values(model, _values(inputs), values, lookups, layout.candidates)
    check_displayable(model, s, values, candidates, file)
    drawn = (plan_curve(s, catalog, model, inputs, pins, values, lookups, layout.search is not None)
             if curve else None)
    return Plan(s, scenario_id, MappingProxyType(inputs), MappingProxyType(values),
                MappingProxyType(tables),
                tuple(plan_warnings(model, values, {k: m.render(s.language) for k, m in fixes.items()})),
                layout, candidates, model,
                fixes=MappingProxyType(fixes), curve=drawn, region_note=region_note(s, catalog, values["grid_intensity"]))


TIMELINE_MIN_WEEKS = 104   # two years of week columns, at least twice the generated project
TIMELINE_MAX_WEEKS = 5300  # a century (the longest project accepted) fits a sheet's 16,384 columns
CASHFLOW_MIN_MONTHS = 24   # two years of month columns, at least twice the project (and storage, staff)
CASHFLOW_MAX_MONTHS = 1202  # the longest project accepted (a century) from any day of its first month
SCHEMA_PATHS = schema_paths()


def _values(inputs: Mapping[str, InputValue]) -> dict[str, object]:
    return {k: iv.value for k, iv in inputs.items()}


def _structure(inputs: Mapping[str, InputValue], lang: str, weeks: int,
               values: Mapping[str, object] | None = None, months: int = 0) -> dict[str, InputValue]:
    """The workbook-structure inputs and the values at generation (gen_<name>)."""
    # the Cashflow sheet's year tables: a row for every year its months can touch
    years = math.ceil(months / 12) + 1 if months else 0
    cells = {"staff_rows_below": (), "stage_rows_below": (), "catalog_rows_below": (), "timeline_week_cells": tuple(range(weeks)),
             "cashflow_month_cells": tuple(range(months)), "cashflow_year_cells": tuple(range(years)),
             # the Cost sheet's value column: its lines as evaluated (a line left blank, an owned
             # cluster's rental memo without a price, is no figure), the rows below it blank
             "cost_sheet_cells": tuple(values[i.name] if values is not None else 0.0
                                       for i in build_model(lang).sheet_items("Cost"))}
    out = {"layout_searched": inputs.get("layout_searched", InputValue("no", "")),
           **{name: InputValue(value, text(f"plan.sources.{name}", lang)) for name, value in cells.items()}}
    for name in (*SEARCH_INPUTS, *SEARCH_ITEMS):
        value = values[name] if values is not None else (inputs[name].value if name in inputs else None)
        out[f"gen_{name}"] = InputValue(value, text("plan.sources.at_generation", lang))
    for name in INERT_SETTINGS:     # none found yet (inert_settings, once the plan is evaluated)
        out[name] = inputs.get(name, InputValue("no", text("plan.sources.inert", lang)))
    return out


_PLANS_WITH_CANDIDATES = itertools.count()


def _candidate_values(model: Model, inputs: dict, values: dict, lookups: Mapping,
                      candidates) -> tuple[Mapping[str, object], ...]:
    """Every model value at each candidate's layout: the model evaluated over `inputs` with the
    layout's, which is `values` (the model over `inputs`) with the items the layout affects
    evaluated anew, in the model's order (the same numbers, the same order of names)."""
    layouts = [c.layout.as_inputs() for c in candidates]
    # the re-evaluating function compiles in about the time of 40 whole evaluations: a process
    # compiles it when it plans its second scenario (a sweep, a package, options)
    if next(_PLANS_WITH_CANDIDATES) == 0 or any(name not in inputs for layout in layouts for name in layout):
        return tuple(MappingProxyType(model.evaluate({**inputs, **layout}, lookups)) for layout in layouts)
    rerun = model.dependents(set(LAYOUT_INPUTS), tuple(model.items))
    return tuple(MappingProxyType(rerun({**values, **layout}, lookups)) for layout in layouts)


def scenario_digest(plan: Plan) -> str:
    """The version a workbook shows: sha256 of the scenario's canonical JSON, 12 hex digits. The
    language is left out: the English and the Chinese books of one scenario are one version; so
    are values equal to the schema's defaults, so that a scenario keeps its version as the
    schema grows."""
    # Defaults left out: a key the schema gains later (at its default) keeps every version.
    dump = plan.scenario.model_dump_json(exclude={"language"}, exclude_defaults=True)
    return hashlib.sha256(dump.encode("utf-8")).hexdigest()[:12]
