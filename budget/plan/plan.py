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

from ..inputs.catalog import OPTIONAL_FIGURES, Catalog
from ..core import limits
from ..core.errors import InputError, Joined, Msg, Problem as _Problem, ScenarioError
from ..core.i18n import DEFAULT_LANG, fmt, text
from .layout import (LAYOUT_INPUTS, layout_domains, Candidate, Evaluator, Layout, NoLayoutFits, SearchResult, Space,
                     first_count_that_fits, fits_at, nearest_batches, nearest_counts, search,
                     smallest_count_for_deadline, smallest_count_that_fits)
from ..core.dates import excel_serial
from ..inputs.bind import InputValue, bind, fx_rows, schema_paths
from ..model.lineitems import Model
from ..model.model import (ACCELERATOR_TABLE, ACTIVATION_TABLE, ARCHITECTURE_TABLE, FX_TABLE, RECOMPUTE_MODES, SEARCH_INPUTS, SEARCH_ITEMS,
                    build_model)
from ..inputs.scenario import Scenario, resolved_shape



@dataclass(frozen=True)
class TableData:
    """A lookup table's rows, in the order the Catalog sheet shows them."""
    rows: tuple[dict, ...]
    sources: tuple[str, ...]      # one citation per row, shown beside it

    def lookup(self) -> dict[str, dict[str, object]]:
        """column -> row id (lower case) -> value; made once per table (the plan, its what-ifs
        and the writers read it, none changes it)."""
        found = self.__dict__.get("_lookup")
        if found is None:
            columns = self.rows[0].keys() if self.rows else ()
            found = self.__dict__["_lookup"] = {c: {str(r["id"]).lower(): r[c] for r in self.rows} for c in columns}
        return found


# Korthikanti et al. 2022, Table 2, as (replicated, split-by-TP, attention coefficient), and
# the compute each mode adds: full recomputation repeats the forward pass (2 of 6 FLOPs per
# parameter per token, 8ND instead of 6ND); selective recomputation adds a few percent. What
# each row is, in words: plan.tables.activation_modes.<recompute>_<sequence parallel>.
SELECTIVE_OVERHEAD = 0.04
FULL_OVERHEAD = 2 / 6
ACTIVATION_MODES = {
    "none/no": (10, 24, 5, 0.0),
    "none/yes": (0, 34, 5, 0.0),
    "selective/no": (10, 24, 0, SELECTIVE_OVERHEAD),
    "selective/yes": (0, 34, 0, SELECTIVE_OVERHEAD),
    "full/no": (2, 0, 0, FULL_OVERHEAD),
    "full/yes": (0, 2, 0, FULL_OVERHEAD),
}


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


def architecture_table(catalog: Catalog, lang: str = DEFAULT_LANG) -> TableData:
    """Each accelerator's architecture date and fitted matmul factor (issue 13), blank where the
    catalog has none (a scenario's own row) or no published row measured the architecture."""
    rows, sources = [], []
    for acc in catalog.accelerators:
        launched, fit = acc.architecture_launched, catalog.efficiency
        factor = fit.matmul_factor_of(acc.id) if fit else None
        rows.append({"id": acc.id,
                     "architecture_launched": None if launched is None else excel_serial(launched.value),
                     "fitted_matmul_factor": factor})
        cites = [] if launched is None else [launched.cite()]
        if factor is not None:
            cites.append(fmt("plan.bind.fitted_default", lang, rows=fit.rows, as_of=fit.as_of.isoformat()))
        sources.append("; ".join(cites))
    return TableData(tuple(rows), tuple(sources))


_LAST_ACCELERATOR_TABLE: list = []   # [catalog, key, table]: the last one made


def accelerator_table(catalog: Catalog, scenario: Scenario | None = None) -> TableData:
    """The accelerators' rows, each with its citations; the last one made is kept for the same
    catalog and the same scenario figures it reads (a sweep's scenarios share it)."""
    key = (None if scenario is None else
           (scenario.language, scenario.hardware.accelerator, scenario.hardware.peak_tflops,
            tuple(r.id for r in scenario.catalog.accelerators)))
    last = _LAST_ACCELERATOR_TABLE
    if last and last[0] is catalog and last[1] == key:
        return last[2]
    table = _accelerator_table(catalog, scenario)
    last[:] = [catalog, key, table]
    return table


def _accelerator_table(catalog: Catalog, scenario: Scenario | None = None) -> TableData:
    lang = scenario.language if scenario is not None else DEFAULT_LANG
    rows, sources = [], []
    for acc in catalog.accelerators:
        row = {"id": acc.id, "name": acc.name, "vendor": acc.vendor}
        cites = []
        for col in ("peak_bf16_tflops", "hbm_gb", "gpus_per_node", "intra_node_gb_per_s",
                    "inter_node_gbit_per_s", "typical_mfu", "tdp_w"):
            fig = getattr(acc, col)
            row[col] = None if fig is None else float(fig.value)
            if fig is not None:
                cites.append(fig.cite())
        added = scenario is not None and acc.id in {r.id for r in scenario.catalog.accelerators}
        row.update(_node_figures(catalog, acc.id, cites, stand_in=not added, lang=lang))
        for col in OPTIONAL_FIGURES:     # blank where not published
            fig = getattr(acc, col)
            row[col] = None if fig is None else float(fig.value)
            if fig is not None:
                cites.append(fig.cite())
        if scenario and scenario.hardware.peak_tflops and acc.id == scenario.hardware.accelerator:
            row["peak_bf16_tflops"] = float(scenario.hardware.peak_tflops)
            cites[0] = fmt("plan.tables.peak_overridden", lang, datasheet=acc.peak_bf16_tflops.value,
                           cite=cites[0])
        rows.append(row)
        sources.append(text("plan.tables.join", lang).join(dict.fromkeys(cites)))
    return TableData(tuple(rows), tuple(sources))


def _node_figures(catalog: Catalog, acc_id: str, cites: list, stand_in: bool = True,
                  lang: str = DEFAULT_LANG) -> dict:
    """The accelerator's node from catalogs/prices.yaml: its own power and purchase price. A
    node's own power hardly depends on its GPUs, so without a row of its own the catalog's
    first node stands in for the power (the citation says so); the price stays blank."""
    prices = catalog.prices
    if prices is None or not prices.purchase:
        return {"node_overhead_kw": None, "node_price": None, "node_price_currency": None}
    node = prices.purchase_for(acc_id)
    like = prices.node_for_power(acc_id) if stand_in else node
    if like is None:      # a row the scenario (or a reviewer) added: its own figures or none
        return {"node_overhead_kw": None, "node_price": None, "node_price_currency": None}
    # short citations, as the other figures' (source key and date; catalogs/prices.yaml expands them)
    cites.append(fmt("plan.tables.node_power" if node else "plan.tables.node_power_stand_in", lang,
                     node=like.id, cite=like.overhead_kw_per_node.cite()))
    if node is not None:
        cites.append(fmt("plan.tables.node_price", lang, node=node.id, cite=node.price_per_node.cite()))
    return {"node_overhead_kw": float(like.overhead_kw_per_node.value),
            "node_price": float(node.price_per_node.value) if node else None,
            "node_price_currency": node.price_per_node.currency if node else None}


def activation_table(lang: str = DEFAULT_LANG) -> TableData:
    rows = tuple({"id": k, "replicated": float(a), "split": float(b), "attention": float(c),
                  "recompute_overhead": float(o)}
                 for k, (a, b, c, o) in ACTIVATION_MODES.items())
    sources = tuple(fmt("plan.tables.activation", lang,
                        mode=text(f"plan.tables.activation_modes.{k.replace('/', '_')}", lang))
                    for k in ACTIVATION_MODES)
    return TableData(rows, sources)


def resolve_inputs(s: Scenario, catalog: Catalog, scenario_file: str = "scenario") -> dict[str, InputValue]:
    return bind(build_model(s.language), s, catalog, scenario_file)


def build_plan(s: Scenario, catalog: Catalog, scenario_id: str = "scenario",
               scenario_file: str | None = None) -> Plan:
    """bind → tables → size and lay out → evaluate; the Plan carries the model it was built from."""
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
        ways = _ways_out(s, catalog, inputs, lookups, err.message, file)
        raise ScenarioError(file, [_no_layout_problem(s, err.message, ways)], s.language) from None
    except _StagesNeedLayout as err:
        raise ScenarioError(file, [err.problem], s.language) from None
    inputs.update(layout.inputs)
    searched = "yes" if layout.search is not None else "no"
    inputs["layout_searched"] = InputValue(searched, text("plan.sources.layout_searched", s.language))
    values = _evaluate(model, _values(inputs), lookups, file)
    inputs.update(run_inputs(catalog, s.language, values))
    # What the search saw, kept beside the inputs (and the Timeline grid, sized for edits):
    # the checks compare the live cells with these.
    weeks = min(max(TIMELINE_MIN_WEEKS, 2 * math.ceil(min(values["project_weeks"], TIMELINE_MAX_WEEKS))),
                TIMELINE_MAX_WEEKS)
    held = values["spend_months"]
    months = min(max(CASHFLOW_MIN_MONTHS, 2 * math.ceil(min(held, CASHFLOW_MAX_MONTHS))), CASHFLOW_MAX_MONTHS)
    inputs.update(_structure(inputs, s.language, weeks, values, months))
    values = _evaluate(model, _values(inputs), lookups, file)
    if values["failure_fraction"] >= 1:
        raise ScenarioError(file, [_Problem(
            "reliability.interruption_rate_per_gpu_hour",
            Msg("plan.problems.never_ends.message", mtbi=values["job_mtbi_hours"],
                loss=values["loss_per_interruption_hours"]),
            Msg("plan.problems.never_ends.fix"))], s.language)
    inert = _inert_settings(s, model, inputs, values, lookups, file)
    if inert:
        inputs.update(inert)
        values = _evaluate(model, _values(inputs), lookups, file)
        said = [fmt(f"plan.layout.inert.{name}", s.language, value=iv.value) for name, iv in inert.items()
                if iv.value != "no"]
        if said and layout.explanation:
            layout = replace(layout, explanation=layout.explanation + fmt(
                "plan.layout.inert.sentence", s.language, settings=fmt("plan.layout.inert.join", s.language).join(said)))
    fixes = {}
    if values["check_memory_fits"] != 0:
        fix = _memory_fix(s, catalog, inputs, lookups, file)
        if fix is not None:
            fixes["check_memory_fits"] = fix
    candidates = _candidate_values(model, _values(inputs), values, lookups, layout.candidates)
    _check_displayable(model, s, values, candidates, file)
    return Plan(s, scenario_id, MappingProxyType(inputs), MappingProxyType(values),
                MappingProxyType(tables),
                tuple(_warnings(model, values, {k: m.render(s.language) for k, m in fixes.items()})),
                layout, candidates, model,
                fixes=MappingProxyType(fixes))


# issue 25: a pinned setting is inert when the plan without it has the same memory per GPU,
# stretched training days and total within this share
INERT_TOLERANCE = 0.001
INERT_FIGURES = ("memory_per_gpu_gb", "stretched_training_days", "total_cost")
# input found inert -> (the setting's input, its value when removed)
INERT_SETTINGS = {"inert_recompute": ("recompute", "none"), "inert_compute_precision": ("compute_precision", "bf16")}


def _inert_settings(s: Scenario, model, inputs: Mapping[str, InputValue], values: Mapping, lookups: Mapping,
                    file: str) -> dict[str, InputValue]:
    """The pinned recomputation and compute precision whose removal leaves the memory, the days
    and the cost within INERT_TOLERANCE: each its value (blank when it changes the plan), the
    model evaluated without it."""
    pinned = {"recompute": s.parallelism.recompute is not None, "compute_precision": True}
    base = _values(inputs)
    out = {}
    for name, (setting, removed) in INERT_SETTINGS.items():
        value = base.get(setting)
        inert = False
        if pinned[setting] and value not in (None, removed):
            try:
                without = _evaluate(model, {**base, setting: removed}, lookups, file)
            except InputError:
                without = None
            inert = without is not None and all(
                abs(float(without[f]) - float(values[f])) <= INERT_TOLERANCE * abs(float(values[f])) for f in INERT_FIGURES)
        out[name] = InputValue(value if inert else "no", text("plan.sources.inert", s.language))
    return out if any(iv.value != "no" for iv in out.values()) else {}


def _memory_fix(s: Scenario, catalog: Catalog, inputs: Mapping[str, InputValue], lookups: Mapping,
                file: str) -> Msg | None:
    """The fix of a layout that does not fit (a pinned one: the search plans only those that
    fit): the levers the ways-out search finds that bring it under the usable memory, each with
    its memory, days and total, cheapest first, or that none does; None where the search cannot
    replan the plan (the model's generic fix stands)."""
    try:
        _model, pins, _base, evaluate, space = _search_setup(s, catalog, inputs, lookups)
        return _memory_ways_out(s, catalog, inputs, file, evaluate, space, pins, only_fitting=True)
    except (NoLayoutFits, InputError):      # a plan the search cannot replan (stages): the model's fix
        return None


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
             "cashflow_month_cells": tuple(range(months)), "cashflow_year_cells": tuple(range(years))}
    out = {"layout_searched": inputs.get("layout_searched", InputValue("no", "")),
           **{name: InputValue(value, text(f"plan.sources.{name}", lang)) for name, value in cells.items()}}
    for name in (*SEARCH_INPUTS, *SEARCH_ITEMS):
        value = values[name] if values is not None else (inputs[name].value if name in inputs else None)
        out[f"gen_{name}"] = InputValue(value, text("plan.sources.at_generation", lang))
    for name in INERT_SETTINGS:     # none found yet (_inert_settings, once the plan is evaluated)
        out[name] = inputs.get(name, InputValue("no", text("plan.sources.inert", lang)))
    return out


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


class _StagesNeedLayout(Exception):
    def __init__(self, problem):
        super().__init__()
        self.problem = problem


def size_and_lay_out(s: Scenario, catalog: Catalog, inputs: dict[str, InputValue],
                     lookups: Mapping) -> LayoutChoice:
    """Seed 000 steps 1-3: the GPU count (given, from a deadline, or memory-first) and a layout."""
    model, pins, base, evaluate, space = _search_setup(s, catalog, inputs, lookups)
    given = s.hardware.gpu_count

    lang = s.language
    # a dimension with one possible value (CP below 16K tokens) is as good as pinned
    held = (set(pins) | ({"cp_size"} if len(space.cp_choices()) == 1 else set())
            | ({"ep_size"} if len(space.ep_choices()) == 1 else set()))
    if s.stages and not (given and held >= set(LAYOUT_INPUTS)):
        # the stages sum the plan at each stage's values: the search would rank the sums
        free = [model.inputs[n].path for n in LAYOUT_INPUTS if n not in held] or ["hardware.gpu_count"]
        raise _StagesNeedLayout(_Problem("stages", Msg("plan.problems.stages_need_layout.message"),
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


def _search_setup(s: Scenario, catalog: Catalog, inputs: Mapping[str, InputValue], lookups: Mapping,
                  run=None):
    """The model, the scenario's pinned layout inputs, the inputs the search starts from, its
    evaluator and the space it searches."""
    shape = resolved_shape(s, catalog)
    acc = catalog.accelerator(s.hardware.accelerator)
    gpn = int(acc.gpus_per_node.value)
    pins = {name: iv.value for name, iv in inputs.items()
            if name in LAYOUT_INPUTS and iv.value is not None}
    model = build_model(s.language)
    dims = model.layout_inputs()
    base = {k: iv.value for k, iv in inputs.items()}
    # Until the search chooses, free dimensions take their simplest value (PP: one stage).
    base.update({d.name: _cell(d.domain[0] if d.domain else 1) for d in dims if d.name not in pins})
    base["gpu_count"] = base["gpu_count"] or float(gpn)
    evaluate = Evaluator(model, base, lookups, run)
    space = Space(shape["attention_heads"], shape["layers"], shape["global_batch_sequences"], gpn, pins,
                  layout_domains(model), int(shape["seq_len"]), s.parallelism.virtual_pipeline_stages,
                  2 if s.parallelism.first_last_stage_layers_fewer else 0, int(shape.get("moe_experts") or 0))
    return model, pins, base, evaluate, space


def _choose_count_and_layout(s: Scenario, evaluate: Evaluator, space: Space):
    """The GPU count (given, from the deadline, or memory-first) and the search's result there."""
    given, lang = s.hardware.gpu_count, s.language
    if given:
        mode, result = "fixed", search(evaluate, space, given)
        count_source = None
    elif s.hardware.deadline_days:
        mode = "deadline"
        start = max(evaluate.base["min_gpus_for_memory"], _ideal_gpus(evaluate.base, s.hardware.deadline_days))
        result, below = smallest_count_for_deadline(evaluate, space, s.hardware.deadline_days, int(start))
        count_source = fmt("plan.sources.deadline", lang, deadline=s.hardware.deadline_days,
                           days=result.best.values["stretched_training_days"], below=below)
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


def _ideal_gpus(base: Mapping, deadline_days: float) -> int:
    """A lower bound: GPUs needed if the layout lost nothing at all."""
    best_eff = (base["layout_efficiency_override"] if base["layout_efficiency_override"] is not None
                else 1 / base["reference_layout_efficiency"])
    ideal_gpu_days = base["gpu_days"] * base["layout_efficiency"] / best_eff
    return max(1, int(ideal_gpu_days / deadline_days))


def _no_layout_problem(s: Scenario, why: Msg, ways: Msg | None = None):
    if s.hardware.gpu_count:
        return _Problem("hardware.gpu_count", why, ways or Msg("plan.problems.no_layout_at_count.fix"))
    return _Problem("hardware", why, ways or Msg("plan.problems.no_layout_for_deadline.fix"))


# --- ways out, not refusals (issue 13 item 4) -------------------------------------------------
# A refusal at a given GPU count names what would plan instead, each found by the search itself
# at the changed input (budget/layout.py: nearest_batches, nearest_counts, smallest_count_that_fits)
# and costed by the model's own items (training days, total cost, recomputation overhead). The
# user's inputs never change: a way out is a suggestion with its numbers, the user chooses.

def _ways_out(s: Scenario, catalog: Catalog, inputs: Mapping[str, InputValue], lookups: Mapping,
              why: Msg, file: str) -> Msg | None:
    """The fix that lists the ways out of a refusal; None where there is none to compute."""
    key = why.key
    if key == "layout.none_fits.deadline_fastest":
        return Msg("plan.problems.no_layout_for_deadline.fix_fastest", **why.figures)
    if key == "layout.none_fits.no_count":
        return Msg("plan.problems.no_split_at_count.fix")
    _model, pins, _base, evaluate, space = _search_setup(s, catalog, inputs, lookups)
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
        if s.hardware.deadline_days:
            start = max(evaluate.base["min_gpus_for_memory"], _ideal_gpus(evaluate.base, s.hardware.deadline_days))
            return smallest_count_for_deadline(evaluate, space, s.hardware.deadline_days, int(start))[0]
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
        _m, _p, _b, ev, space = _search_setup(other, catalog, changed, lookups)
        result = _lever_result(other, ev, space)
        if result is not None:
            return acc, result, prices, ev
    return None


def _evaluate(model, inputs: dict, lookups: Mapping, file: str) -> dict:
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
                raise ScenarioError(file, [_item_problem(model, item.name, "divides_by_zero")],
                                    model.lang) from None
            except (OverflowError, ValueError):
                raise ScenarioError(file, [_item_problem(model, item.name, "cannot_compute")],
                                    model.lang) from None
        raise


def _item_problem(model: Model, name: str, kind: str):
    """A line item that cannot be computed (plan.problems.<kind>): its label (the model's
    message, in the reader's language), and the inputs its formula uses as the place to look."""
    item = model.items.get(name)
    label = Msg(f"items.{name}.label") if item is not None else name
    refs = ", ".join(sorted(item.expr.refs())) if item is not None else name
    return _Problem(name, Msg(f"plan.problems.{kind}.message", label=label),
                    Msg(f"plan.problems.{kind}.fix", refs=refs))


MAX_PROJECT_DAYS = limits.MAX_PROJECT_DAYS   # a century: dates stay displayable, the week grid fits a sheet


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


def _check_displayable(model, s: Scenario, values: Mapping, candidates, file: str) -> None:
    """Every figure the workbook shows is a finite number, and the project ends within a
    century: the schema's bounds keep each input plausible, this keeps their combination so."""
    for name, value in values.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise ScenarioError(file, [_item_problem(model, name, "not_finite")], s.language)
    # a candidate's other figures are those of `values`, checked above
    changed = set(LAYOUT_INPUTS).union(model.affected_by(set(LAYOUT_INPUTS))) if candidates else ()
    names = [name for name in candidates[0] if name in changed] if candidates else ()
    for table in candidates:
        for name in (names if table.keys() == candidates[0].keys() else table):
            value = table[name]
            if isinstance(value, float) and not math.isfinite(value):
                raise ScenarioError(file, [_item_problem(model, name, "not_finite")], s.language)
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


def _warnings(model: Model, values: Mapping[str, object], fixes: Mapping[str, str] | None = None) -> list[str]:
    """One line per failing check, then per plausibility warning, in the model's words (a
    check's fix the plan's own where generation wrote one)."""
    fixes = fixes or {}
    return ([fmt("plan.warnings.check_failing", model.lang, sentence=c.sentence(values), fix=fixes.get(c.name, c.fix))
             for c in failing(values, model)]
            + [fmt("plan.warnings.warning", model.lang, sentence=w.sentence(values), fix=w.fix)
               for w in model.warnings() if values[w.name]])


def scenario_digest(plan: Plan) -> str:
    """The version a workbook shows: sha256 of the scenario's canonical JSON, 12 hex digits. The
    language is left out: the English and the Chinese books of one scenario are one version; so
    are values equal to the schema's defaults, so that a scenario keeps its version as the
    schema grows."""
    # Defaults left out: a key the schema gains later (at its default) keeps every version.
    dump = plan.scenario.model_dump_json(exclude={"language"}, exclude_defaults=True)
    return hashlib.sha256(dump.encode("utf-8")).hexdigest()[:12]
