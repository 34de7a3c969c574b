"""Plan → timeline report in Markdown and HTML, rendered from jinja2 templates.

`report_context` gathers everything the templates show — phases with dates, the schedule
breakdown, the failure budget, the cost summary, the key assumptions with their sources — and
the geometry of the HTML's SVG charts, already formatted, so the templates only lay it out.
HTML is autoescaped; Markdown text from the scenario goes through the `md` filter; both use
StrictUndefined, so a missing value is an error, not a blank.

Every word is a message of the plan's language (budget/messages/<lang>/report.yaml), which the
templates ask for as `t("report.x", days=...)`; money, dates and units follow that language's
formats in the same catalog (`Words`). The Gantt chart's Mermaid data stays ISO.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from dataclasses import dataclass

import jinja2
from markupsafe import Markup

from .. import __version__
from ..inputs.catalog import data_dir
from ..model.model import AFTER_SUBTOTAL, COST_LINES, MEMO_LINES, build_model
from ..core.dates import from_serial
from ..plan.plan import Plan
from ..plan.sensitivity import cases, range_figures
from .decision import decision, status   # status: re-exported (the reports lead with it)
from .words import Words, count, figure

PHASES = ("data_prep", "validation", "scaling", "training", "evaluation", "deployment")
SEGMENTS = ("queue_days", "setup_days", "transfer_days", "train_days", "failure_loss_days", "rollback_days",
            "evaluation_days")
FAILURE_ROWS = ("job_mtbi_hours", "expected_interruptions", "checkpoint_full_gb", "checkpoint_write_hours",
                "checkpoint_interval_hours", "checkpoint_interval_steps", "restart_hours", "failure_loss_days",
                "gpu_hours_lost", "goodput", "gpu_failure_probability")
# The total's lines, in the model's order (budget/model.py: COST_LINES, AFTER_SUBTOTAL).
REPORT_LINES = (*COST_LINES, *AFTER_SUBTOTAL)
KEY_INPUTS = ("model_params", "train_tokens", "gpu_type", "gpu_count", "calibrated_mfu", "tp_size", "pp_size",
              "zero_stage", "recompute", "price_tier", "price_per_gpu_hour", "price_per_gb_month", "buffer_rate",
              "queue_days", "setup_days", "interruption_rate_per_gpu_hour", "storage_write_gb_per_s",
              "start_date")
PALETTE = ("#9dc3e6", "#a9d18e", "#ffd966", "#f4b183", "#c9c9c9", "#b4a7d6")
@dataclass(frozen=True)
class Bar:
    label: str
    x: float
    y: float
    width: float
    colour: str
    text: str

    @property
    def lines(self) -> list[str]:
        """The label's lines: a translation may break a long label where it reads best."""
        return self.label.split("\n")


def _value(name: str, value, unit: str, words: Words) -> str:
    if value is None:
        return words("report.formats.blank")
    if isinstance(value, str):
        return value
    if unit == "date":
        return words.date(value)
    if unit == "fraction":
        return f"{value:.1%}"
    if unit == "per GPU-hour":
        return f"{value:.3g}"
    return figure(value, unit)


def report_context(plan: Plan) -> dict:
    """Everything the templates show. `t` is the plan language's messages (`t("report.x",
    days=3)`); render_html swaps in their HTML form. Gathered once for the Markdown and the HTML
    of one plan."""
    if _LAST_CONTEXT and _LAST_CONTEXT[0] is plan:
        return _LAST_CONTEXT[1]
    context = _report_context(plan)
    _LAST_CONTEXT[:] = [plan, context]
    return context


_LAST_CONTEXT: list = []    # [plan, context]: the last rendered plan's


def _report_context(plan: Plan) -> dict:
    from ..plan.plan import scenario_digest

    v, cur, words = plan.values, plan.scenario.prices.currency, Words(plan.lang)
    model = plan.model or build_model(plan.lang)
    state = status(plan)
    phases = []
    for n, key in enumerate(PHASES):
        start, end = v[f"{key}_start"], v[f"{key}_end"]
        phases.append({"key": key, "label": words(f"report.phases.names.{key}"),
                       "start": words.date(start), "end": words.date(end),
                       "start_iso": from_serial(start).isoformat(), "end_iso": from_serial(end).isoformat(),
                       "days": f"{end - start:,.1f}",
                       "weeks": f"{(end - start) / 7:,.1f}", "colour": PALETTE[n % len(PALETTE)]})
    segments = [{"label": words(f"report.schedule.segments.{name}"), "days": f"{v[name]:,.1f}",
                 "share": f"{v[name] / v['run_days']:.1%}"} for name in SEGMENTS]
    costs = [{"label": model.items[name].label, "amount": words.money(v[name], cur),
              "share": f"{v[name] / v['total_cost']:.1%}" if v["total_cost"] else "-"}
             for name in REPORT_LINES]
    assumptions = []
    for name in KEY_INPUTS:
        if name in model.items:       # derived in the workbook from inputs: say how
            d, value, source = model.items[name], v[name], model.items[name].note
        else:
            d, value, source = model.inputs[name], plan.inputs[name].value, plan.inputs[name].source
        assumptions.append({"label": d.label, "value": _value(name, value, d.unit, words),
                            "unit": "" if d.unit in {"text", "date"} else
                            words.unit(d.unit, v.get(getattr(d, "currency", "")) or cur),
                            "source": source})
    stages = _stages(plan, words)
    failures = [_failure_row(name, words(f"report.failures.rows.{name}"), v[name], model.items[name].unit, words)
                for name in FAILURE_ROWS]
    return {
        "t": words,
        "version": __version__,
        "name": plan.scenario.name,
        "description": plan.scenario.description,
        "scenario_file": f"{plan.scenario_id}.yaml",
        "currency": cur,
        "headline": {
            "accelerator": v["accelerator_name"], "gpus": f"{plan.gpu_count:,}",
            "reserved": f"{v['reserved_gpus']:,.0f}", "layout": v["layout_label"],
            "train_days": f"{plan.train_days:,.1f}", "stretched_days": f"{v['stretched_training_days']:,.1f}",
            "run_days": f"{v['run_days']:,.1f}", "project_weeks": f"{v['project_weeks']:,.1f}",
            "start": words.date(v["start_date"]), "end": words.date(v["project_end"]),
            "gpu_hours": f"{plan.gpu_hours:,.0f}", "billed_gpu_hours": f"{v['billed_gpu_hours']:,.0f}",
            "total": words.money(plan.total_cost, cur), "subtotal": words.money(plan.subtotal_cost, cur),
            # issue 25: the ask, the approval percentile of the total (the Sensitivity sheet's)
            "ask": words.money(range_figures(plan, cases(plan))["total_cost_ask"], cur),
            "ask_label": words("report.status.ask" if state["ok"] else "report.status.ask_indicative",
                               percentile=f"{v['approval_percentile']:.0f}"),
            "pure_rental": _amount(plan.rental_cost, cur, words),
            "billed_rental": _amount(v["billed_rental_cost"], cur, words),
            "rental_gap": _amount(v["rental_gap_cost"], cur, words), "goodput": f"{v['goodput']:.1%}",
            "non_training_margin": f"{v['non_training_margin']:.1%}",
            "memory_per_gpu": f"{plan.memory_per_gpu_gb:,.1f}", "usable_hbm": f"{v['usable_hbm_gb']:,.1f}",
            "fits": plan.fits,
        },
        "gpu_count_source": plan.inputs["gpu_count"].source,
        "layout_explanation": plan.layout.explanation if plan.layout else "",
        "phases": phases,
        "segments": segments,
        "costs": costs,
        "failures": failures,
        "assumptions": assumptions,
        "warnings": list(plan.warnings),
        "status": state,
        "decision": decision(plan, state, scenario_digest(plan)),
        # the memo lines that say something for this plan (a zero VAT or unused reservation does not)
        "memo": [{"label": model.items[name].label, "amount": _amount(v[name], cur, words)}
                 for name in MEMO_LINES if _memo_applies(name, v)],
        "energy": {"mwh": f"{v['energy_mwh']:,.0f}", "co2": f"{v['co2_tonnes']:,.0f}",
                   "pue": f"{v['pue']:g}", "grid": f"{v['grid_intensity']:g}",
                   "kwh_per_gpu_hour": f"{v['training_kwh_per_gpu_hour']:.2f}",
                   "electricity": words.money(v["energy_cost_equivalent"], cur),
                   "owned": v["ownership"] == "owned", "region": plan.region_note},
        "stages": stages,
        "reference": _reference(plan, words),
        "curve": curve_context(plan, words),
        "calibration": _calibration(plan),
        "gantt": _gantt(plan, phases, words, stages),
        "cost_chart": _cost_chart(plan, words),
    }


def _calibration(plan: Plan) -> dict | None:
    """The measured pilot's figures, as the Parallelism sheet computes them (None: no pilot)."""
    v = plan.values
    if not isinstance(v["pilot_measured_mfu"], (int, float)):
        return None
    return {"gpus": f"{v['pilot_gpu_count_used']:,.0f}", "layout": v["pilot_layout_label"],
            "measured": f"{v['pilot_measured_mfu']:.1%}", "predicted": f"{v['pilot_effective_mfu']:.1%}",
            "factor": f"{v['calibration_factor']:.3f}", "model": f"{v['effective_mfu']:.1%}",
            "mfu": f"{v['calibrated_mfu']:.1%}"}


def _reference(plan: Plan, words: Words) -> dict:
    """The published runs near the plan and the planner's estimate of each (the Reference runs
    sheet's figures): how far to trust the plan's throughput."""
    from ..plan.reference_runs import reference_rows
    runs = [{"name": r["name"], "accelerator": r["accelerator"], "gpus": f"{r['gpus']:,.0f}",
             "params": words("report.reference.params", billions=r["params"] / 1e9), "layout": r["layout"],
             "published": f"{r['published']:,.0f}", "estimate": f"{r['estimate']:,.0f}",
             "mfu": f"{r['mfu']:.1%}", "error": f"{r['error']:+.0%}", "source": r["source"]}
            for r in reference_rows(plan)]
    within = sum(1 for r in reference_rows(plan) if abs(r["error"]) <= 0.10)
    return {"runs": runs, "within": within, "count": len(runs)}


def curve_context(plan: Plan, words: Words) -> dict | None:
    """The days-against-GPUs curve as the Curve sheet computes it: what it varies and the
    sentences generation wrote (the point where adding GPUs stops paying, its rule, the
    deadline), and each point with its marks (None: no curve was drawn)."""
    from ..plan.curve import deadline_sentence, rule_sentence
    curve, lang = plan.curve, plan.lang
    if curve is None:
        return None
    sentences = [curve.varies.render(lang)]
    rows = []
    if curve.points:
        deadline = deadline_sentence(curve)
        sentences += [words("plan.curve.left_out"), curve.knee_reason.render(lang), rule_sentence().render(lang)]
        sentences += [deadline.render(lang)] if deadline is not None else []
    for k, p in enumerate(curve.points):
        marks = [words("workbook.curve.marks.plan")] if p.is_plan else []
        if k == curve.knee:
            marks.append(words("workbook.curve.marks.knee"))
        if p.values["check_memory_fits"] != 0:
            marks.append(words("report.curve.does_not_fit"))
        if curve.misses_deadline(p):
            marks.append(words("report.curve.over_deadline"))
        if p.note is not None:
            marks.append(p.note.render(lang))
        rows.append({"gpus": f"{p.gpu_count:,}", "plan": p.is_plan, "knee": k == curve.knee,
                     "layout": words("report.curve.layout", tp=p.layout.tp, pp=p.layout.pp, dp=p.values["dp_size"]),
                     "days": f"{p.days:,.1f}", "total": words.money(p.cost, plan.scenario.prices.currency),
                     "marks": words("workbook.curve.marks.join").join(marks)})
    return {"sentences": sentences, "points": rows}


def _stages(plan: Plan, words: Words) -> list[dict]:
    """The stages of a multi-stage run, as the Stages sheet computes them (empty: one stage)."""
    v = plan.values
    out = []
    for k, name in enumerate(v["stage_name"]):
        def at(item, k=k):
            return v[item][k]
        out.append({"id": f"stage{k + 1}",  # i18n: not text (a Mermaid task id)
                    "name": name or words("report.stages.unnamed", n=k + 1),
                    "tokens": count(at("stage_tokens")),
                    "gpus": f"{at('stage_gpu_count_used'):,.0f}", "seq_len": f"{at('stage_seq_len_used'):,.0f}",
                    "layout": at("stage_layout_label"),
                    "mfu": f"{at('stage_mfu_used'):.1%}", "gpu_hours": f"{at('stage_gpu_hours'):,.0f}",
                    "days": f"{at('stage_train_days'):,.1f}",
                    "memory": f"{at('stage_memory_per_gpu_gb'):,.1f}",
                    "fits": at("stage_check_memory_fits") == 0,
                    "start": words.date(at("stage_start")), "end": words.date(at("stage_end")),
                    "start_iso": from_serial(at("stage_start")).isoformat(),
                    "end_iso": from_serial(at("stage_end")).isoformat()})
    return out


def _failure_row(name: str, label: str, value: float, unit: str, words: Words) -> tuple[str, str, str]:
    if unit == "hours" and value < 1:
        return label, f"{value * 60:,.1f}", words.unit("minutes")
    if unit in {"GPU-h", "interruptions"}:
        return label, f"{value:,.0f}", words.unit(unit)
    if unit == "fraction":
        return label, f"{value:.1%}", ""
    return label, _value(name, value, unit, words), words.unit(unit)


def _gantt(plan: Plan, phases: list[dict], words: Words, stages: list[dict] = ()) -> dict:
    """Bars in an SVG 700 units wide: labels on the left, time on the right; the stages of a
    multi-stage run below the phases, in the full-training phase's colour."""
    v = plan.values
    left, width, row = 200.0, 480.0, 28.0
    start, total = v["start_date"], max(v["project_days"], 1.0)
    scale = width / total
    spans = [(p["label"], v[f"{p['key']}_start"], v[f"{p['key']}_end"], p["start"], p["end"], p["colour"])
             for p in phases]
    training = next(p["colour"] for p in phases if p["key"] == "training")
    spans += [(st["name"], v["stage_start"][k], v["stage_end"][k], st["start"], st["end"], training)
              for k, st in enumerate(stages)]
    bars = []
    for n, (label, begin, end, first, last, colour) in enumerate(spans):
        s, e = begin - start, end - start
        bars.append(Bar(label, left + s * scale, 30 + n * row, max((e - s) * scale, 1.5), colour,
                        words("report.gantt.bar", phase=label, start=first, end=last)))
    ticks = []
    first = from_serial(start)
    month = dt.date(first.year + (first.month == 12), first.month % 12 + 1, 1)
    while (month - first).days <= total:
        offset = (month - first).days
        ticks.append({"x": left + offset * scale,
                      "label": words.date(month, "report.formats.month_year" if month.month in (1, 7)
                                          else "report.formats.month")})
        month = dt.date(month.year + (month.month == 12), month.month % 12 + 1, 1)
    return {"bars": bars, "ticks": ticks, "height": 30 + len(spans) * row + 24,
            "axis_y": 30 + len(spans) * row + 4, "left": left, "right": left + width}


def _amount(value, cur: str, words: Words) -> str:
    """An amount in the plan's currency; a blank memo line (an owned cluster given no rental
    price, issue 28) says there is no rental price to compare."""
    return words("report.cost.no_rental_price") if isinstance(value, str) else words.money(value, cur)


def _memo_applies(name: str, v) -> bool:
    """The seed's arithmetic always; what renting would cost only beside an owned cluster (a
    rented one's cluster line is that rental); the others when they are not zero."""
    if name in ("rental_cost", "rental_gap_cost"):
        return True
    if name == "billed_rental_cost":
        return v["ownership"] == "owned"
    return bool(v[name])


CHART_WIDTH, AMOUNT_ROOM = 700.0, 120.0   # the SVG's width; room right of a bar for its amount
CHART_EM, CHART_COLUMN_EM = 11.0, 0.56    # svg text is 11px; a Latin character ~0.56 em, CJK ~1 em


def _label_room(labels) -> float:
    """Left of the bars: room for the longest label line (CJK counted double), 160-400 units."""
    from ..core.text import display_width
    longest = max((display_width(line) for label in labels for line in label.split("\n")), default=0)
    return min(max(160.0, round(longest * CHART_COLUMN_EM * CHART_EM + 12)), 400.0)


def _cost_chart(plan: Plan, words: Words) -> dict:
    v, cur = plan.values, plan.scenario.prices.currency
    model = plan.model or build_model(plan.lang)
    lines = [(model.items[name].label, v[name]) for name in REPORT_LINES if v[name]]
    memo_at = len(lines)        # the rental memo's bar, grey; none without a rental price (issue 28)
    if not isinstance(v["rental_cost"], str):
        lines.append((words("report.cost.chart_memo", label=model.items["rental_cost"].label), v["rental_cost"]))
    biggest = max((amount for _, amount in lines), default=1.0) or 1.0
    left, row = _label_room(label for label, _ in lines), 26.0
    width = CHART_WIDTH - left - AMOUNT_ROOM
    bars = [Bar(label, left, 10 + n * row, max(amount / biggest * width, 1.0),
                "#8faadc" if n < memo_at else "#d0cece", words.money(amount, cur))
            for n, (label, amount) in enumerate(lines)]
    return {"bars": bars, "height": 10 + len(lines) * row + 6, "left": left}


_MD_SPECIAL = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;",
                             **{c: "\\" + c for c in "\\`*_[]|#~"}})
# Every character Python or CommonMark takes as a line break, and tabs, become one space.
_MD_BREAKS = re.compile("[\t\n\v\f\r\x1c-\x1e\x85\u2028\u2029]+")
# What opens a block when it starts a line: a list item (-, +, 1. or 1)), a setext or
# thematic-break line (=, -), a block quote (> is an entity by then) or a heading (# escaped).
_MD_LEADING = re.compile(r"^([-+=]|[0-9]+(?=[.)](?: |$)))")


def md_escape(text: str) -> str:
    """Scenario text in Markdown: one line of inline text. No markup (escaped), no raw HTML
    (entities), no table breaks, and no structure: line breaks and tabs become spaces and
    leading blanks go (no indented code), so fences, lists, headings and quotes cannot start."""
    one_line = _MD_BREAKS.sub(" ", str(text)).lstrip(" \u00a0\u3000")  # i18n: not text (blanks)
    escaped = one_line.translate(_MD_SPECIAL)
    return _MD_LEADING.sub(lambda m: m.group(1) + "\\" if m.group(1)[0].isdigit()
                           else "\\" + m.group(1), escaped, count=1).replace(
                               "%%", "%\\%")


# Where a line may break beside a CJK character: between two characters of which one is CJK, or
# at a space beside one.
_CJK_BREAK = re.compile(r"(?<=[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef])(?=\S)|(?<=\S)(?=[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef])")  # i18n: not text
_CJK_SPACE = re.compile(r"(?<=[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef]) | (?=[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef])")  # i18n: not text


def keep_together(text):
    """A short figure in HTML (a date, a count of checks) on one line however narrow its column:
    no break between CJK characters (a word joiner, U+2060) nor at a space beside one (a no-break
    space). Text without CJK characters is returned as it is, and markup stays markup."""
    joined = _CJK_SPACE.sub("\u00a0", _CJK_BREAK.sub("\u2060", str(text)))
    return Markup(joined) if isinstance(text, Markup) else joined


def mermaid_text(text: str) -> str:
    """A Mermaid task or section name: one line with nothing Mermaid reads as syntax (the
    colon ends a name, %% starts a directive or comment, # and ; start entities and statements)."""
    return " ".join(re.sub(r"[:;#%{}<>`~\\\[\]|]", " ", str(text)).split())  # not formula text


class _TemplateCache(jinja2.FileSystemBytecodeCache):
    """jinja2's own bytecode cache (a private folder under the system's temporary folder,
    checked by jinja2 to be the user's alone), so a run loads the templates' compiled code
    instead of compiling them again (about 70 ms a process, issue 14). jinja2 recompiles when a
    template's source changes; the file names carry this version and the environment's
    options, which the compiled code depends on. A folder that cannot be used means no cache,
    never a failed run."""

    def load_bytecode(self, bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except (OSError, ValueError, EOFError):
            bucket.reset()

    def dump_bytecode(self, bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass


_ENV_OPTIONS = {"trim_blocks": True, "lstrip_blocks": True, "keep_trailing_newline": True}


def _template_cache() -> jinja2.BytecodeCache | None:
    import hashlib

    options = (__version__, getattr(jinja2, "__version__", ""), sorted(_ENV_OPTIONS.items()))
    key = hashlib.sha256(repr(options).encode()).hexdigest()[:12]
    try:
        return _TemplateCache(pattern=f"trainbudget-{key}-%s.cache")  # i18n: not text (a file name); not formula text
    except (OSError, RuntimeError):     # no usable temporary folder: compile every time
        return None


@functools.lru_cache(maxsize=None)
def environment() -> jinja2.Environment:
    """One environment per process, so each template is compiled once (and loaded from
    jinja2's bytecode cache when an earlier run compiled it)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(data_dir("templates"))),
        autoescape=lambda name: bool(name) and name.endswith(".html.j2"),
        undefined=jinja2.StrictUndefined, bytecode_cache=_template_cache(), **_ENV_OPTIONS)
    env.filters["md"] = md_escape
    env.filters["mermaid"] = mermaid_text
    env.filters["keep"] = keep_together
    return env


def render_markdown(plan: Plan) -> str:
    return environment().get_template("timeline.md.j2").render(report_context(plan))


def render_html(plan: Plan) -> str:
    context = report_context(plan)
    return environment().get_template("timeline.html.j2").render({**context, "t": context["t"].html})
