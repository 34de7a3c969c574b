"""The approval package: every scenario's workbook and reports, machine-readable plans, an index
page and a checksum list, as one set of files that is byte-identical from run to run.

    trainbudget package A.yaml [B.yaml ...] -o DIR

writes into DIR, per scenario, what plain `trainbudget` writes (NAME.xlsx, NAME.md, NAME.html)
and NAME.plan.json (every input with its value and source, every named output, the checks and
warnings, and the options' headline figures); once per package plan.schema.json (the JSON Schema,
draft 2020-12, that every NAME.plan.json validates against), index.html (links to every file with
each scenario's headline) and SHA256SUMS (`sha256sum -c SHA256SUMS` in DIR verifies every file
above). The set is written by budget/output.py like any run: staged, locked, recorded in its
manifest, never over a file a reviewer changed unless --force. The manifest and the lock are the
tool's bookkeeping, not part of the package, and SHA256SUMS does not list them.

Nothing depends on the clock or the machine: keys are sorted, floats are written as Python's
`repr` (the shortest text that reads back as the same number), no timestamps.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Mapping

import jinja2

from .. import __version__
from ..core.dates import from_serial
from ..inputs.catalog import data_dir, load_catalog
from ..core.errors import InputError, Msg, Problem, ScenarioError
from ..core.i18n import DEFAULT_LANG
from .common import (EXIT_BAD_INPUT, EXIT_OK, _help, _print_error, add_lang_argument, failing_check_labels,
                     fewer_collections, print_warnings, render, report_failing_checks, requested_lang, terminal_safe,
                     write_reporting)
from .output import Output
from ..model.cashflow import cashflow_names
from ..plan.options import chosen_plan
from ..plan.plan import Plan, build_model

# /2 (issue 25): total_cost is the point estimate without the flat buffer; the headline gains the ask
# /3 (issue 29): the decision's plan (recommendation, range, cashflow); each option its own range
PLAN_FORMAT = "trainbudget-plan/3"
SCHEMA_NAME = "plan.schema.json"
INDEX_NAME = "index.html"
SUMS_NAME = "SHA256SUMS"
PACKAGE_FILES = (SCHEMA_NAME, INDEX_NAME, SUMS_NAME)


# --- plan.json --------------------------------------------------------------------------------

def _json_value(value):
    """A plan value as JSON: numbers (finite), text, null, or a list of those (table columns)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"not a finite number: {value!r}")  # i18n: not text
        return value
    if isinstance(value, (tuple, list)):
        return [_json_value(v) for v in value]
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dt.date):
        return value.isoformat()
    raise TypeError(f"cannot write {type(value).__name__} into plan.json")  # i18n: not text


def _iso(serial) -> str | None:
    if isinstance(serial, (int, float)) and not isinstance(serial, bool) and math.isfinite(serial):
        return from_serial(serial).isoformat()
    return None


def _described(value, label: str, unit: str, is_date: bool, **extra) -> dict:
    out = {"value": _json_value(value), "label": label, "unit": unit, **extra}
    if is_date:
        out["date"] = _iso(value)
    return out


def check_results(plan: Plan) -> list[dict]:
    """Every check (failing blocks approval) and warning (shown, does not block), in the model's
    order, with the sentence the workbook's Checks sheet reads: the failure in words when it
    fails, the statement that holds when it passes."""
    model = plan.model or build_model(plan.lang)
    out = []
    for item in (*model.checks(), *model.warnings()):
        passed = plan.values[item.name] == 0
        status = "pass" if passed else ("fail" if item.kind == "check" else "warn")
        out.append({"name": item.name, "kind": item.kind, "label": item.label, "status": status,
                    "passed": passed, "sentence": item.label if passed else item.sentence(plan.values),
                    "fix": plan.fix_of(item)})
    return out


def headline(plan: Plan) -> dict:
    """The figures an index or a dashboard shows first. The ask (issue 25): the approval percentile
    of the total, where the total (the point estimate) and the total with the flat buffer sit,
    each from the plan's own range (an option's from its own what-ifs, issue 29)."""
    from ..plan.sensitivity import cases, range_figures
    v = plan.values
    rng = range_figures(plan, cases(plan))
    failing = [c.name for c in plan.model.checks() if v[c.name] != 0] if plan.model else plan.failing_checks
    warnings = [w.name for w in plan.model.warnings() if v[w.name] != 0] if plan.model else []
    return {"gpu_count": plan.gpu_count, "accelerator": plan.scenario.hardware.accelerator,
            "accelerator_name": v["accelerator_name"], "layout": v["layout_label"],
            "fits": plan.fits, "train_days": plan.train_days, "gpu_hours": plan.gpu_hours,
            "project_start": _iso(v["start_date"]) if "start_date" in v else None,
            "project_end": _iso(v["project_end"]),
            # null: an owned cluster given no rental price (issue 28), whose rental memo is words
            "rental_cost": None if isinstance(plan.rental_cost, str) else plan.rental_cost,
            "cluster_cost": v["cluster_cost"],
            "total_cost": plan.total_cost, "currency": plan.scenario.prices.currency,
            "approval_percentile": v["approval_percentile"], "ask": rng["total_cost_ask"],
            "point_percentile": rng["point_percentile"], "buffered_total_cost": v["buffered_total_cost"],
            "buffer_percentile": rng["buffer_percentile"],
            "energy_mwh": v["energy_mwh"], "co2_tonnes": v["co2_tonnes"],
            "checks_failing": failing, "warnings": warnings,
            "status": "fail" if failing else ("warn" if warnings else "pass")}


def plan_range(plan: Plan) -> dict:
    """The plan's own range (the Sensitivity sheet's figures over its own what-ifs): P10/P50/P90 of
    the total, the ask at the approval percentile, P90 of the project end, and the training days'
    and billed card-hours' P10/P50/P90."""
    from ..plan.sensitivity import cases, range_figures
    rng, v = range_figures(plan, cases(plan)), plan.values
    return {"total_cost_p10": rng["total_cost_p10"], "total_cost_p50": rng["total_cost_p50"],
            "total_cost_p90": rng["total_cost_p90"], "ask": rng["total_cost_ask"],
            "approval_percentile": v["approval_percentile"], "total_cost": plan.total_cost,
            "point_percentile": rng["point_percentile"], "buffer_percentile": rng["buffer_percentile"],
            "project_end_p90": _iso(rng["project_end_p90"]),
            **{f"{figure}_{q}": rng[f"{figure}_{q}"] for figure in ("train_days", "card_gpu_hours")
               for q in ("p10", "p50", "p90")}}


def monthly_cashflow(plan: Plan) -> list[dict]:
    """The plan's spend by calendar month (the Cashflow sheet's month totals, sized there for a
    reviewer's edits): every month from the first to the last that spends, with the cumulative."""
    v = plan.values
    months = list(zip(v["cashflow_month_start"], v["cashflow_month_total"]))
    last = max((k for k, (_, total) in enumerate(months) if total != 0), default=-1)
    out, running = [], 0.0
    for start, total in months[:last + 1]:
        running += total
        out.append({"month": _iso(start)[:7], "total": total, "cumulative": running})
    return out


def recommendation(plan: Plan) -> dict:
    """Which plan the decision asks for and why: the cheapest option whose checks all pass (the
    Compare sheet's rule), else the plan itself; the decision page shows that plan's own figures."""
    from ..plan.options import chosen_plan, recommended
    from ..render.words import Words

    words = Words(plan.lang)
    plans = [(plan.scenario.name, plan), *plan.options]
    best = recommended([p.values for _, p in plans]) if plan.options else None
    index, name, chosen = chosen_plan(plan)
    if not plan.options:
        rule, reason = "no_options", ""
    elif best is None:
        rule, reason = "none_passes", words("report.decision.none_passes")
    else:
        rule, reason = "cheapest_passing", words("report.decision.recommended", option=name)
    return {"option": name, "index": index, "base": index == 0, "rule": rule, "reason": reason,
            "status": headline(chosen)["status"], "total_cost": chosen.total_cost,
            "ask": plan_range(chosen)["ask"]}


def plan_document(plan: Plan, options: list[tuple[str, Plan]] | None = None,
                  files: Mapping[str, str] | None = None) -> dict:
    """Everything a tool needs to read the plan without opening the workbook."""
    model = plan.model or build_model(plan.lang)
    left_out = cashflow_names(model)      # the Cashflow sheet's month and year tables: the workbook's
    inputs = {}
    for name, iv in plan.inputs.items():
        if name in left_out:
            continue
        d = model.inputs.get(name)
        inputs[name] = _described(iv.value, d.label if d else name, d.unit if d else "",
                                  bool(d) and d.kind == "date", source=iv.source)
    outputs = {}
    for name, value in plan.values.items():
        if name in plan.inputs or name in left_out:
            continue
        item = model.items.get(name)
        outputs[name] = _described(value, item.label if item else name, item.unit if item else "",
                                   bool(item) and item.unit == "date")
    s = plan.scenario
    # the options as the plan carries them (the Compare sheet's), or as given here
    decided = plan if plan.options or not options else replace(plan, options=tuple(options[1:]))
    chosen, _, picked = chosen_plan(decided)
    return {
        "$schema": SCHEMA_NAME,
        "format": PLAN_FORMAT,
        "generator": {"tool": "trainbudget", "version": __version__},
        "scenario": {"id": plan.scenario_id, "name": s.name, "description": s.description},
        "files": dict(files or {}),
        "headline": headline(plan),
        "layout": plan.layout.explanation if plan.layout is not None else None,
        "inputs": inputs,
        "outputs": outputs,
        "checks": check_results(plan),
        "options": [{"name": name, "base": i == 0, "recommended": i == chosen,
                     **headline(p), "range": plan_range(p)} for i, (name, p) in enumerate(options or [])],
        # issue 29: the decision page's plan (the recommended option's, else the base's): which and
        # why, its range and its monthly spend, so a dashboard can rebuild the page
        "recommendation": recommendation(decided),
        "range": plan_range(picked),
        "cashflow": monthly_cashflow(picked),
    }


def json_bytes(document) -> bytes:
    """Sorted keys, two-space indent, UTF-8, floats as repr, no NaN: the same bytes every run."""
    return (json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
            + "\n").encode("utf-8")


def _nullable(schema: dict) -> dict:
    return {"anyOf": [schema, {"type": "null"}]}


_SCALAR = {"type": ["number", "string", "boolean", "null"]}
_VALUE = {"anyOf": [_SCALAR, {"type": "array", "items": _SCALAR}]}
_DATE = {"type": "string", "pattern": r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}
_STATUS = {"enum": ["pass", "warn", "fail"]}


def plan_schema() -> dict:
    """The JSON Schema (draft 2020-12) of NAME.plan.json: a file format, its descriptions for
    the developers who read the files, in English."""
    headline_props = {  # i18n: not text
        "gpu_count": {"type": "integer", "minimum": 1},
        "accelerator": {"type": "string", "description": "catalog id"},
        "accelerator_name": {"type": "string"},
        "layout": {"type": "string", "description": "TP × PP × DP"},
        "fits": {"type": "boolean", "description": "the layout fits in the accelerator's memory"},
        "train_days": {"type": "number", "minimum": 0},
        "gpu_hours": {"type": "number", "minimum": 0},
        "project_start": _nullable(_DATE),
        "project_end": _nullable(_DATE),
        "rental_cost": _nullable({"type": "number", "minimum": 0,
                                  "description": "a memo: GPU-hours at the tier's rate (seed 002's arithmetic), not "
                                                 "the bill; null: an owned cluster with no rental price to compare"}),
        "cluster_cost": {"type": "number", "minimum": 0,
                         "description": "the GPU cluster's line of the total: the billed rental, or the owned cluster's cost"},
        "total_cost": {"type": "number", "minimum": 0,
                       "description": "the point estimate: the cost lines and VAT, no contingency"},
        "approval_percentile": {"type": "number", "minimum": 50, "maximum": 95,
                                "description": "the percentile of the total asked for approval"},
        "ask": {"type": "number", "minimum": 0,
                "description": "the total at approval_percentile of its range (Sensitivity sheet): "
                               "the amount to approve, contingency included"},
        "point_percentile": {"type": "number", "minimum": 0, "maximum": 100,
                             "description": "the percentile of the range at which total_cost sits"},
        "buffered_total_cost": {"type": "number", "minimum": 0,
                                "description": "total_cost with the flat buffer_rate added (not asked)"},
        "buffer_percentile": {"type": "number", "minimum": 0, "maximum": 100,
                              "description": "the percentile of the range buffered_total_cost would cover"},
        "currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "energy_mwh": {"type": "number", "minimum": 0,
                       "description": "energy of training and its runs, PUE included (serving not)"},
        "co2_tonnes": {"type": "number", "minimum": 0, "description": "location-based emissions, t CO2e"},
        "checks_failing": {"type": "array", "items": {"type": "string"},
                           "description": "names of the failing checks (each blocks approval)"},
        "warnings": {"type": "array", "items": {"type": "string"},
                     "description": "names of the plausibility warnings raised"},
        "status": {**_STATUS, "description": "fail: a check fails; warn: only warnings; pass"},
    }
    headline = {"type": "object", "required": sorted(headline_props), "additionalProperties": False,
                "properties": headline_props}
    money = {"type": "number", "minimum": 0}
    percentile = {"type": "number", "minimum": 0, "maximum": 100}
    range_props = {  # i18n: not text
        "total_cost_p10": money, "total_cost_p50": money, "total_cost_p90": money,
        "ask": {**money, "description": "the total at approval_percentile of the range: the amount to approve"},
        "approval_percentile": headline_props["approval_percentile"],
        "total_cost": {**money, "description": "the point estimate"},
        "point_percentile": {**percentile, "description": "the percentile of the range at which total_cost sits"},
        "buffer_percentile": {**percentile, "description": "the percentile the flat buffer would cover"},
        "project_end_p90": _nullable(_DATE),
        **{f"{figure}_{q}": {"type": "number", "minimum": 0} for figure in ("train_days", "card_gpu_hours")
           for q in ("p10", "p50", "p90")}}
    plan_range = {"type": "object", "required": sorted(range_props), "additionalProperties": False,  # i18n: not text
                  "description": "the plan's own range (its Sensitivity what-ifs; an option's from its own "
                                 "plan, not the base's scaled)", "properties": range_props}
    described = {"type": "object", "required": ["value", "label", "unit"],  # i18n: not text
                 "properties": {"value": _VALUE, "label": {"type": "string"},
                                "unit": {"type": "string"},
                                "date": {**_nullable(_DATE),
                                         "description": "for dates: the value (a spreadsheet "
                                                        "serial, days since 1899-12-30) as ISO 8601"}}}
    return {  # i18n: not text
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://trainbudget.example/schemas/plan.schema.json",
        "title": "trainbudget plan",
        "description": "One scenario's plan as trainbudget computed it: every input with its "
                       "value and source, every named output (the workbook's defined names), the "
                       "checks and warnings, the options' headline figures and ranges, and the "
                       "decision's plan (recommendation, range, monthly cash flow). Money is in "
                       "headline.currency; dates are spreadsheet serials with an ISO copy.",
        "type": "object",
        "required": ["$schema", "format", "generator", "scenario", "files", "headline", "layout",
                     "inputs", "outputs", "checks", "options", "recommendation", "range", "cashflow"],
        "additionalProperties": False,
        "properties": {
            "$schema": {"const": SCHEMA_NAME},
            "format": {"const": PLAN_FORMAT},
            "generator": {"type": "object", "required": ["tool", "version"], "additionalProperties": False,
                          "properties": {"tool": {"const": "trainbudget"}, "version": {"type": "string"}}},
            "scenario": {"type": "object", "required": ["id", "name", "description"],
                         "additionalProperties": False,
                         "properties": {"id": {"type": "string", "description": "the scenario file's stem"},
                                        "name": {"type": "string"}, "description": {"type": "string"}}},
            "files": {"type": "object", "description": "the package's files for this scenario",
                      "additionalProperties": {"type": "string"},
                      "properties": {k: {"type": "string"} for k in ("workbook", "markdown", "html", "plan")}},
            "headline": headline,
            "layout": _nullable({"type": "string", "description": "how the GPU count and layout were chosen"}),
            "inputs": {"type": "object", "description": "every input (the workbook's Inputs sheet) by defined name",
                       "additionalProperties": {**described, "required": [*described["required"], "source"],
                                                "properties": {**described["properties"],
                                                               "source": {"type": "string"}}}},
            "outputs": {"type": "object", "description": "every computed figure by defined name",
                        "additionalProperties": described},
            "checks": {"type": "array", "items": {
                "type": "object", "additionalProperties": False,
                "required": ["name", "kind", "label", "status", "passed", "sentence", "fix"],
                "properties": {"name": {"type": "string"}, "kind": {"enum": ["check", "warning"]},
                               "label": {"type": "string"}, "status": _STATUS,
                               "passed": {"type": "boolean"},
                               "sentence": {"type": "string", "description": "the failure in words, "
                                            "or the statement that holds when it passes"},
                               "fix": {"type": "string"}}}},
            "options": {"type": "array", "description": "the base scenario then each option; empty "
                        "when the scenario has no options", "items": {
                "type": "object", "additionalProperties": False,
                "required": ["name", "base", "recommended", "range", *headline["required"]],
                "properties": {"name": {"type": "string"}, "base": {"type": "boolean"},
                               "recommended": {"type": "boolean",
                                               "description": "the option the decision asks for"},
                               "range": plan_range, **headline_props}}},
            "recommendation": {
                "type": "object", "additionalProperties": False,
                "description": "the plan the decision page asks for: the cheapest option whose checks all "
                               "pass (the Compare sheet's rule), else the scenario's own plan",
                "required": ["option", "index", "base", "rule", "reason", "status", "total_cost", "ask"],
                "properties": {"option": {"type": "string", "description": "its name (the scenario's for the base)"},
                               "index": {"type": "integer", "minimum": 0,
                                         "description": "its place in options (0: the base)"},
                               "base": {"type": "boolean"},
                               "rule": {"enum": ["cheapest_passing", "none_passes", "no_options"]},
                               "reason": {"type": "string", "description": "why, in the plan's language "
                                          "(empty without options)"},
                               "status": _STATUS, "total_cost": money, "ask": money}},
            "range": {**plan_range, "description": "the range of the plan the decision asks for "
                      "(recommendation): the decision page's"},
            "cashflow": {"type": "array", "description": "the monthly spend of the plan the decision asks "
                         "for (the Cashflow sheet's month totals), first to last month that spends",
                         "items": {"type": "object", "additionalProperties": False,
                                   "required": ["month", "total", "cumulative"],
                                   "properties": {"month": {"type": "string", "pattern": r"^[0-9]{4}-[0-9]{2}$"},
                                                  "total": {"type": "number"},
                                                  "cumulative": {"type": "number"}}}},
        },
    }


# --- index.html and SHA256SUMS ----------------------------------------------------------------

def _environment() -> jinja2.Environment:
    from ..render.report import keep_together

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(data_dir("templates"))),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["keep"] = keep_together
    return env


def render_index(entries: list[dict], lang: str = DEFAULT_LANG) -> str:
    """`entries`: per scenario, its plan.json document (files, headline, options); the page in
    `lang`."""
    from ..render.words import Words

    words = Words(lang)
    return _environment().get_template("index.html.j2").render(
        entries=entries, version=__version__, schema=SCHEMA_NAME, sums=SUMS_NAME, t=words.html,
        money=words.money, date=lambda iso: words.date(dt.date.fromisoformat(iso)))


def sha256sums(outputs: list[Output]) -> bytes:
    """`sha256sum -c` format, sorted by name; names with a backslash or a line break escaped as
    GNU coreutils does."""
    lines = []
    for out in sorted(outputs, key=lambda o: str(o.path)):
        name, digest = str(out.path), hashlib.sha256(out.data).hexdigest()
        if "\\" in name or "\n" in name or "\r" in name:
            name = name.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
            lines.append(f"\\{digest}  {name}\n")
        else:
            lines.append(f"{digest}  {name}\n")
    return "".join(lines).encode("utf-8")


# --- the package ------------------------------------------------------------------------------

def package_outputs(paths: list[Path], catalog, lang: str | None = None) -> tuple[list[Plan], list[Output]]:
    """Every file of the package, in memory. Raises InputError for bad input."""
    from ..plan.options import build_option_plans, plan_file

    plans, outputs, entries = [], [], []
    for path in paths:
        plan = plan_file(path, catalog, lang)
        # The base then each option: as the plan carries them (built for the Compare sheet),
        # or built here from the scenario file.
        attached = tuple(getattr(plan, "options", ()) or ())
        if attached:
            options = [(plan.scenario.name, plan), *attached]
        else:
            options = build_option_plans(plan.scenario, catalog, path=path) if plan.scenario.options else []
        rendered = render(plan)
        kinds = {".xlsx": "workbook", ".md": "markdown", ".html": "html"}
        files = {kinds.get(Path(o.path).suffix, Path(o.path).suffix.lstrip(".")): str(o.path)
                 for o in rendered}
        files["plan"] = f"{plan.scenario_id}.plan.json"
        document = plan_document(plan, options, files)
        outputs += [*rendered, Output(Path(files["plan"]), json_bytes(document))]
        plans.append(plan)
        entries.append(document)
    outputs.append(Output(Path(SCHEMA_NAME), json_bytes(plan_schema())))
    outputs.append(Output(Path(INDEX_NAME), render_index(entries, package_lang(plans, lang)).encode("utf-8")))
    outputs.append(Output(Path(SUMS_NAME), sha256sums(outputs)))
    return plans, outputs


def package_lang(plans: list[Plan], lang: str | None = None) -> str:
    """The language of the package's own texts (its index, its summary): --lang when given,
    else the scenarios' language when they share one, else English."""
    if lang is not None:
        return lang
    langs = {plan.lang for plan in plans}
    return langs.pop() if len(langs) == 1 else DEFAULT_LANG


def parser(lang: str = DEFAULT_LANG) -> argparse.ArgumentParser:
    from ..render.words import Words

    t = Words(lang)
    p = argparse.ArgumentParser(prog="trainbudget package",  # i18n: not text (the command)
                                description=t("package.cli.description"), epilog=t("package.cli.epilog"))
    p.add_argument("scenarios", nargs="+", type=Path, metavar="SCENARIO.yaml")
    p.add_argument("-o", "--output-dir", type=Path, default=Path("package"), metavar="DIR",
                   help=t("package.cli.output_dir"))
    p.add_argument("-q", "--quiet", action="store_true", help=t("package.cli.quiet"))
    p.add_argument("-f", "--force", action="store_true", help=t("package.cli.force"))
    p.add_argument("--fail-on-checks", action="store_true", help=_help("cli.args.fail_on_checks", lang))
    add_lang_argument(p, lang)
    return p


def _reserved(paths: list[Path]) -> InputError | None:
    stems = [p.stem for p in paths]
    duplicates = sorted({s for s in stems if stems.count(s) > 1})
    if duplicates:
        return ScenarioError(duplicates[0], [Problem("", Msg("errors.run.same_name.message"),
                                                     Msg("errors.run.same_name.fix"))])
    for path in paths:
        if f"{path.stem}.html" == INDEX_NAME:
            return ScenarioError(path, [Problem("", Msg("package.errors.index_name", index=INDEX_NAME),
                                                Msg("package.errors.index_name_fix"))])
    return None


def package_main(argv: list[str]) -> int:
    from ..render.words import Words

    args = parser(requested_lang(argv)).parse_args(argv)
    clash = _reserved(args.scenarios)
    if clash:
        _print_error(clash, args.lang)
        return EXIT_BAD_INPUT
    try:
        with fewer_collections():
            plans, outputs = package_outputs(args.scenarios, load_catalog(), args.lang)
    except InputError as err:
        _print_error(err, args.lang)
        return EXIT_BAD_INPUT
    t = Words(package_lang(plans, args.lang))
    result = write_reporting(args.output_dir, outputs, args.force, "package.cli.interrupted_written", t.lang)
    if isinstance(result, int):
        return result
    for plan in plans:
        print_warnings(plan)
    if not args.quiet:
        for plan in plans:
            h, own = headline(plan), Words(plan.lang)
            print(terminal_safe(own("package.cli.summary", scenario=plan.scenario_id,
                                    gpus=f"{h['gpu_count']:,}", accelerator=h["accelerator_name"],
                                    days=f"{h['train_days']:,.1f}", total=own.money(h["total_cost"], h["currency"]),
                                    percentile=f"{h['approval_percentile']:.0f}", ask=own.money(h["ask"], h["currency"]),
                                    status=own(f"package.cli.status.{h['status']}"))))
        print("  " + t("package.cli.wrote", count=len(outputs), folder=args.output_dir, sums=SUMS_NAME))
    if args.fail_on_checks:
        return report_failing_checks([(p.name, failing_check_labels(plan)) for p, plan in zip(args.scenarios, plans)],
                                     len(plans), t.lang)
    return EXIT_OK
