"""Sensitivity cases and the range: each uncertain input at its low and its high value, the model
evaluated at each, and the P10/P50/P90 of the total these give (the Sensitivity sheet renders them
live; the decision page and the Compare sheet read them).

The range reads each input's low and high as its P10 and P90 and treats the inputs as
independent. Each input's effect on the log of the total is taken as normal, with its median
halfway between the logs at low and high and its spread from their distance (÷ 2·z, z =
NORMSINV(0.9)); the effects add, so the total is lognormal: P50 = total × e^M, P10/P90 = total ×
e^(M ∓ z·S), M = Σ means, S = √Σ spreads². The project end adds the same way, in days; the
training days and the billed card-hours are lognormal the same way as the total (issue 25). The ask
(issue 25) is the approval percentile p of the total, total × e^(M + NORMSINV(p)·S); the point
estimate sits at NORMSDIST(−M/S), the total with the flat buffer at NORMSDIST((ln(1 + rate) − M)/S).
What it leaves out: interactions between inputs (it is first order), correlation, and any input not in
the table. The tests hold it against a 20,000-sample Monte Carlo of the Python model.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist
from typing import Callable, Mapping

from ..formula.expr import (ABS, AND, EXP, IF, LN, NORMSDIST, NORMSINV, SQRT, SUM, SUMPRODUCT, Expr, Group, Num,
                            Ref, compile_items)
from ..model.model import UNCERTAIN

Z90 = NormalDist().inv_cdf(0.9)
# z of the range, as the workbook writes it (its cell named sensitivity_z; Z90 is its value)
SENSITIVITY_Z = NORMSINV(Ref("p90_probability"))
# z of the ask (issue 25): the approval percentile's, its cell named approval_z
APPROVAL_Z = NORMSINV(Ref("approval_percentile") / 100)


@dataclass(frozen=True)
class Case:
    key: str
    end: str            # low | high
    target: str         # the input it sets
    value: float
    formula: Expr       # the target's cell formula, over the workbook's names
    values: dict        # the model evaluated with the target at `value`


def cases(plan) -> list[Case]:
    """The low and high what-if of every uncertain input, evaluated by the planner's model
    (once per plan: the Sensitivity sheet and both reports' decision page ask for them)."""
    if _LAST_CASES and _LAST_CASES[0] is plan:
        return _LAST_CASES[1]
    out = _cases(plan)
    _LAST_CASES[:] = [plan, out]
    return out


_LAST_CASES: list = []      # [plan, its cases]: the last plan's, held until the next plan's
_PLANS_SEEN = [0]           # plans whose cases this process has evaluated


def _cases(plan) -> list[Case]:
    model, v = plan.model, plan.values
    lookups = {name: t.lookup() for name, t in plan.tables.items()}
    base_inputs = {k: v[k] for k in model.inputs}
    # From a process's second plan on, the model runs at the plan's inputs once and each what-if
    # recomputes only the items its input affects (model.dependents), the others being the
    # same: the values a whole evaluation at the what-if's inputs gives, in the same order.
    # Compiling those functions costs about two plans' whole evaluations, so a process with
    # one plan evaluates whole.
    # That run's values are the plan's own (the same inputs, the same compiled items), taken in
    # its order (the inputs, then the items) rather than run again.
    _PLANS_SEEN[0] += 1
    base = {**base_inputs, **{k: v[k] for k in model.items}} if _PLANS_SEEN[0] > 1 else None
    everything = tuple(model.items)
    out = []
    for key, (target, *_) in UNCERTAIN.items():
        for end in ("low", "high"):
            formula = case_formula(key, end)
            # a blank input (an owned cluster's absent rental price, issue 28) times a factor is 0,
            # as the sheet's formula computes it
            value = 0.0 if v[target] is None else _evaluate({"value": formula}, v)["value"]
            values = (model.evaluate({**base_inputs, target: value}, lookups) if base is None else
                      model.dependents({target}, everything)({**base, target: value}, lookups))
            out.append(Case(key, end, target, value, formula, values))
    return out


def case_formula(key: str, end: str) -> Expr:
    """The what-if's value of the input UNCERTAIN[key] sets: the input times its low or high
    factor, or (a spread in points) the factor itself, ± points on the MFU in use
    (calibrated_mfu keeps it within half and 100%)."""
    target, _, spread, _, _, _ = UNCERTAIN[key]
    factor = Ref(f"unc_{key}_{end}")
    return factor if spread == "points" else Ref(target) * factor


# The other figures whose range the table gives beside the total's (issue 25): training days and
# billed card-hours, each by the same lognormal rule; (figure, its columns at low and high, the
# prefix of its row figures)
LOG_FIGURES = (("train_days", "days_low", "days_high", "days"), ("card_gpu_hours", "gpuh_low", "gpuh_high", "gpuh"))


def _log_parts(low: Expr, high: Expr, base: Expr, z: Expr) -> tuple[Expr, Expr]:
    """An input's effect on the log of a figure: its mean (halfway between the logs at low and high)
    and spread (their distance ÷ 2z); a figure of 0 (a free plan) has no logarithm and adds none."""
    positive = AND(low > 0, high > 0, base > 0)
    return (IF(positive, (LN(low / base) + LN(high / base)) / 2, 0),
            IF(positive, ABS(LN(high / base) - LN(low / base)) / 2 / z, 0))


def row_figures(cell: Callable[[str], Expr]) -> dict[str, Expr]:
    """An uncertain input's part of the range, over its row of the Sensitivity table: `cell(id)`
    is the row's figure in column `id` (total_low, total_high, end_low, end_high, days_low, ...):
    the sheet's cell there, or in Python a Ref that range_figures gives the case's value."""
    z = Ref("sensitivity_z")
    log_mean, log_spread = _log_parts(cell("total_low"), cell("total_high"), Ref("total_cost"), z)
    end_low, end_high, end = cell("end_low"), cell("end_high"), Ref("project_end")
    out = {"log_mean": log_mean, "log_spread": log_spread,
           # each end's days from the base end, added as differences (Group keeps that order)
           "end_mean": (Group(end_low - end) + Group(end_high - end)) / 2,
           "end_spread": ABS(end_high - end_low) / 2 / z}
    for figure, low, high, prefix in LOG_FIGURES:
        out[f"{prefix}_mean"], out[f"{prefix}_spread"] = _log_parts(cell(low), cell(high), Ref(figure), z)
    return out


def range_exprs(column: Callable[[str], Expr]) -> dict[str, Expr]:
    """P10/P50/P90 of the total, of the training days and of the card-hours, and P90 of the project
    end over every input's row figures: `column(id)` is the figure `id` of row_figures for all
    inputs (the table's column on the sheet; in Python a Ref to their tuple)."""
    total, end, z = Ref("total_cost"), Ref("project_end"), Ref("sensitivity_z")
    mean = SUM(column("log_mean"))
    spread = SQRT(SUMPRODUCT(column("log_spread"), column("log_spread")))
    days = SQRT(SUMPRODUCT(column("end_spread"), column("end_spread")))

    def percentile(ratio_log: Expr) -> Expr:
        """Where total × e^ratio_log sits in the range, in percent (no spread: 100 at or above
        the median, else 0)."""
        return IF(spread > 0, NORMSDIST((ratio_log - mean) / spread) * 100, IF(ratio_log >= mean, 100, 0))

    out = {"total_cost_p10": total * EXP(mean - z * spread), "total_cost_p50": total * EXP(mean),
           "total_cost_p90": total * EXP(mean + z * spread),
           "project_end_p90": end + SUM(column("end_mean")) + z * days,
           # issue 25: the ask, the approval percentile of the total; where the point estimate and
           # the total with the flat buffer sit
           "total_cost_ask": total * EXP(mean + Ref("approval_z") * spread),
           "point_percentile": percentile(Num(0)), "buffer_percentile": percentile(LN(1 + Ref("buffer_rate")))}
    for figure, _, _, prefix in LOG_FIGURES:
        m = SUM(column(f"{prefix}_mean"))
        sp = SQRT(SUMPRODUCT(column(f"{prefix}_spread"), column(f"{prefix}_spread")))
        out |= {f"{figure}_p10": Ref(figure) * EXP(m - z * sp), f"{figure}_p50": Ref(figure) * EXP(m),
                f"{figure}_p90": Ref(figure) * EXP(m + z * sp)}
    return out


_ROW_FIGURES = row_figures(Ref)
_RANGE = range_exprs(Ref)


class _Compiled:
    """Expressions compiled once by the planner's compiler: the names they read, and the function."""

    def __init__(self, exprs: Mapping[str, Expr]):
        self.exprs = dict(exprs)
        self.names = set().union(*(e.refs() for e in self.exprs.values()))
        self.run = compile_items(self.exprs.items())

    def __call__(self, values: Mapping) -> dict:
        """The expressions' values over `values` (the names they read copied, so `values` is left as it is)."""
        done = self.run({n: values[n] for n in self.names}, {})
        return {name: done[name] for name in self.exprs}


def _evaluate(exprs: Mapping[str, Expr], values: Mapping) -> dict:
    """The expressions' values over `values`, by the planner's compiled formulas."""
    return _Compiled(exprs)(values)


# the range's expressions, compiled at first use (a plan evaluates its row figures once per input)
_COMPILED: dict[str, _Compiled] = {}


def _compiled(name: str) -> _Compiled:
    if name not in _COMPILED:
        _COMPILED[name] = _Compiled(_ROW_FIGURES if name == "rows" else _RANGE)
    return _COMPILED[name]


def range_figures(plan, all_cases: list[Case]) -> dict:
    """range_figures' figures for the plan, computed once per plan (the Sensitivity sheet, the
    Summary's ask rows, the Compare sheet and the decision page all ask for them)."""
    if _LAST_RANGE and _LAST_RANGE[0] is plan and _LAST_RANGE[1] is all_cases:
        return _LAST_RANGE[2]
    out = _range_figures(plan, all_cases)
    _LAST_RANGE[:] = [plan, all_cases, out]
    return out


_LAST_RANGE: list = []      # [plan, its cases, its range]: the last plan's


def _range_figures(plan, all_cases: list[Case]) -> dict:
    """P10/P50/P90 of the total, training days and card-hours and P90 of the project end, by the
    expressions the workbook writes (row_figures, range_exprs); "rows" holds each input's row figures, in UNCERTAIN's order."""
    v = plan.values
    base = {"total_cost": v["total_cost"], "project_end": v["project_end"], "sensitivity_z": Z90,
            **{figure: v[figure] for figure, *_ in LOG_FIGURES},
            "approval_z": NormalDist().inv_cdf(v["approval_percentile"] / 100), "buffer_rate": v["buffer_rate"]}
    rows = []
    for key in UNCERTAIN:
        low, high = (c for c in all_cases if c.key == key)
        case = {"total_low": low.values["total_cost"], "total_high": high.values["total_cost"],
                "end_low": low.values["project_end"], "end_high": high.values["project_end"],
                **{c: case.values[figure] for figure, lo, hi, _ in LOG_FIGURES for c, case in ((lo, low), (hi, high))}}
        rows.append(_compiled("rows")({**base, **case}))
    columns = {name: tuple(row[name] for row in rows) for name in _ROW_FIGURES}
    return {**_compiled("range")({**base, **columns}), "approval_z": base["approval_z"], "rows": rows}
