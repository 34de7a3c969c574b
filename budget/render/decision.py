"""The decision page: what a budget committee reads first, on one printed page.

`decision(plan)` gathers, from the plan and its options, the decision asked for, the recommended
option and the alternatives, the P10/P50/P90 total, spend by quarter, the top risks (the largest
swings of the Sensitivity sheet and every failing or warning check), the key assumptions and the
sign-off block with the scenario's version digest. The reports lay it out; nothing here is
computed twice: options are the plans the Compare sheet shows, the range and swings are the
Sensitivity sheet's, the quarters sum the plan's months (the Cashflow sheet's). When an option
other than the base is recommended, every one of those figures is that option's own plan's (its
own what-ifs, its own months): one plan per page, the base one row of the options table.
"""

from __future__ import annotations

from ..core.dates import from_serial
from ..core.i18n import text
from ..model.model import UNCERTAIN, build_model
from ..plan.options import chosen_plan, recommended
from ..plan.sensitivity import cases, range_figures
from .words import figure

TOP_RISKS = 5
KEY_ASSUMPTIONS = ("gpu_type", "calibrated_mfu", "price_per_gpu_hour", "train_tokens", "approval_percentile",
                   "buffer_rate")


def quarters(plan) -> list[dict]:
    """Spend by calendar quarter: the plan's months (the Cashflow sheet's) summed, empty quarters
    left out."""
    from .words import Words

    words, v = Words(plan.lang), plan.values
    out: dict[str, float] = {}
    for start, total in zip(v["cashflow_month_start"], v["cashflow_month_total"]):
        day = from_serial(start)
        key = words("report.formats.quarter", year=day.year, quarter=(day.month - 1) // 3 + 1)
        out[key] = out.get(key, 0.0) + total
    return [{"label": k, "value": x} for k, x in out.items() if abs(x) > 0.005]


def _first_failing(plan) -> str:
    """The sentence of a plan's first failing check (the reason an option is not recommended)."""
    model, v = plan.model, plan.values
    return next((c.sentence(v) for c in model.checks() if v[c.name] != 0), "")


def decision(plan, state: dict, digest: str) -> dict:
    """The page. Every figure on it — the ask, the range, the quarters, the risks, the
    assumptions, the GPUs, days and end date — is the chosen plan's own (chosen_plan: the
    recommended option, else the plan); the base plan, when it is not chosen, is one row of the
    options table."""
    from .words import Words

    cur, words = plan.scenario.prices.currency, Words(plan.lang)
    plans = [(plan.scenario.name, plan), *plan.options]
    best = recommended([p.values for _, p in plans])
    index, option, pick = chosen_plan(plan)
    own = pick is not plan                  # an option other than the base is asked for
    state = status(pick) if own else state
    v = pick.values
    rows = []
    for i, (title, p) in enumerate(plans):
        pv = p.values
        failing = int(pv["master_check"])
        rows.append({"name": title,
                     "gpus": words("report.decision.accelerators", gpus=f"{p.gpu_count:,}",
                                   accelerator=pv["accelerator_name"]),
                     "days": f"{p.train_days:,.1f}", "end": words.date(pv["project_end"]),
                     "total": words.money(pv["total_cost"], cur),
                     "checks": words("report.decision.checks_pass") if not failing
                     else words("report.decision.checks_failing", count=failing, first=_first_failing(p)),
                     "recommended": i == best, "base": i == 0})
    all_cases = cases(pick)
    rng = range_figures(pick, all_cases)
    model = pick.model
    swings = []
    for key in UNCERTAIN:
        label = text(f"uncertain.{key}.label", plan.lang)
        low, high = (c for c in all_cases if c.key == key)
        lo, hi = low.values["total_cost"] - v["total_cost"], high.values["total_cost"] - v["total_cost"]
        swings.append((abs(hi - lo), label, lo, hi))
    swings.sort(key=lambda s: (-s[0], s[1]))
    risks = [words("report.decision.risk_swing", label=label, low=words.signed_money(lo, cur),
                   high=words.signed_money(hi, cur))
             for swing, label, lo, hi in swings if swing > 0][:TOP_RISKS]
    risks += [words("report.decision.risk_check", text=c["text"]) for c in state["checks"]]
    risks += [words("report.decision.risk_warning", text=w["text"]) for w in state["warnings"]]
    shown, more = risks[:TOP_RISKS + 3], max(0, len(risks) - TOP_RISKS - 3)
    chosen = plans[best][0] if best is not None else None
    assumptions = []
    for name in KEY_ASSUMPTIONS:
        d = model.inputs.get(name) or model.items[name]
        value = v["accelerator_name"] if name == "gpu_type" else v[name]
        # an amount is shown in the currency it is typed in (its own currency cell)
        currency = v.get(getattr(d, "currency", "")) or cur
        assumptions.append({"label": d.label, "value": _shown(value, d.unit, currency, words)})
    at = approval(rng, v["approval_percentile"])
    ask = {"ask": words.money(rng["total_cost_ask"], cur), **at,
           "point": words.money(v["total_cost"], cur), "buffered": words.money(v["buffered_total_cost"], cur),
           "buffer": f"{v['buffer_rate']:.0%}",
           "p50": words.money(rng["total_cost_p50"], cur),
           "p90": words.money(rng["total_cost_p90"], cur), "name": plan.scenario.name,
           "gpus": f"{pick.gpu_count:,}", "accelerator": v["accelerator_name"],
           "start": words.date(v["start_date"]), "end": words.date(v["project_end"])}
    return {
        "deadline": deadline(pick, words),
        "ask": (words("report.decision.ask_option", option=option, **ask) if own
                else words("report.decision.ask", **ask)),
        "approvable": state["ok"],
        "recommended": chosen if plan.options else None,
        "none_passes": best is None and bool(plan.options),
        "base_chosen": not own,      # the status line speaks of the base plan only when it is asked for
        "option": option, "option_index": index,
        "options": rows,
        "range": {"p10": words.money(rng["total_cost_p10"], cur), "p50": words.money(rng["total_cost_p50"], cur),
                  "p90": words.money(rng["total_cost_p90"], cur), "point": words.money(v["total_cost"], cur),
                  "ask": words.money(rng["total_cost_ask"], cur), **at,
                  "end_p90": words.date(rng["project_end_p90"]),
                  # issue 25: the training days' and the billed card-hours' ranges
                  **{f"days_{q}": f"{rng[f'train_days_{q}']:,.1f}" for q in ("p10", "p50", "p90")},
                  **{f"gpuh_{q}": f"{rng[f'card_gpu_hours_{q}']:,.0f}" for q in ("p10", "p50", "p90")}},
        "quarters": [{"label": q["label"], "amount": words.money(q["value"], cur)}
                     for q in quarters(pick)],
        "risks": shown, "more_risks": more,
        "assumptions": assumptions,
        "digest": digest,
    }


def deadline(plan, words) -> dict | None:
    """A plan with a deadline date (schedule.deadline): whether it is met (check_meets_deadline_date's
    verdict) and, in words, the date and the end it applies to at the approval percentile of the
    training days; None without one."""
    v = plan.values
    if v.get("deadline_date") is None:
        return None
    met = v["check_meets_deadline_date"] == 0
    key = "report.decision.deadline_met" if met else "report.decision.deadline_missed"
    return {"met": met,
            "text": words(key, deadline=words.date(v["deadline_date"]), percentile=f"{v['approval_percentile']:.0f}",
                          what=words(f"report.decision.deadline_what.{v['deadline_applies_to']}"),
                          end=words.date(v["deadline_end_at_approval"]))}


def status(plan) -> dict:
    """What the report leads with: approvable or not, each failing check and each warning in
    words with its fix. The same sentences as the workbook's Summary rows."""
    from .words import Words

    model, v, words = plan.model or build_model(plan.lang), plan.values, Words(plan.lang)
    checks = [{"text": c.sentence(v), "fix": plan.fix_of(c)} for c in model.checks() if v[c.name] != 0]
    warnings = [{"text": w.sentence(v), "fix": plan.fix_of(w)} for w in model.warnings() if v[w.name] != 0]
    n = len(checks)
    state = (words("report.status.all_pass") if not n else words("report.status.one_fails") if n == 1
             else words("report.status.many_fail", count=n))
    return {"ok": not n, "text": state, "checks": checks, "warnings": warnings,
            "total_label": words("report.status.total") if not n else words("report.status.total_indicative")}


def approval(rng: dict, percentile: float) -> dict[str, str]:
    """The percentiles the ask states (issue 25), as the workbook shows them ("P"0): the one asked,
    and where the point estimate and the total with the flat buffer sit."""
    return {"percentile": f"{percentile:.0f}",
            "point_percentile": f"{rng['point_percentile']:.0f}",
            "buffer_percentile": f"{rng['buffer_percentile']:.0f}"}


def _shown(value, unit: str, currency: str, words) -> str:
    if value is None:       # a blank input: an owned cluster's absent rental price (issue 28)
        return words("report.formats.blank")
    if isinstance(value, str):
        return value
    if unit.startswith("fraction"):
        return f"{value:.1%}"
    if unit == "percentile":
        return f"P{value:.0f}"
    if unit.startswith("currency"):
        return words.quantity(f"{value:,.2f}", words.unit(unit, currency))
    return words.quantity(figure(value, unit), words.unit(unit))
