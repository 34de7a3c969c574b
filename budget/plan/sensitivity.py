"""Sensitivity cases and the range: each uncertain input at its low and its high value, the model
evaluated at each, and the P10/P50/P90 of the total these give (the Sensitivity sheet renders them
live; the decision page and the Compare sheet read them).

The range reads each input's low and high as its P10 and P90 and treats the inputs as
independent. Each input's effect on the log of the total is taken as normal, with its median
halfway between the logs at low and high and its spread from their distance (÷ 2·z, z =
NORMSINV(0.9)); the effects add, so the total is lognormal: P50 = total × e^M, P10/P90 = total ×
e^(M ∓ z·S), M = Σ means, S = √Σ spreads². The project end adds the same way, in days. What it
leaves out: interactions between inputs (it is first order), correlation, and any input not in
the table. The tests hold it against a 20,000-sample Monte Carlo of the Python model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Mapping

from ..formula.expr import Expr, Ref, compile_items
from ..model.model import UNCERTAIN

Z90 = NormalDist().inv_cdf(0.9)


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
            value = _evaluate({"value": formula}, v)["value"]
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


def _evaluate(exprs: Mapping[str, Expr], values: Mapping) -> dict:
    """The expressions' values over `values`, by the planner's compiled formulas (the names
    they read copied, so `values` is left as it is)."""
    names = set().union(*(e.refs() for e in exprs.values()))
    done = compile_items(exprs.items())({n: values[n] for n in names}, {})
    return {name: done[name] for name in exprs}


def range_figures(plan, all_cases: list[Case]) -> dict[str, float]:
    """P10/P50/P90 of the total and P90 of the project end, as the workbook computes them."""
    total, end = plan.values["total_cost"], plan.values["project_end"]
    means, spreads, day_means, day_spreads = [], [], [], []
    for key in UNCERTAIN:
        low, high = (c for c in all_cases if c.key == key)
        lo, hi = low.values["total_cost"], high.values["total_cost"]
        if min(lo, hi, total) > 0:
            a, b = math.log(lo / total), math.log(hi / total)
            means.append((a + b) / 2)
            spreads.append(abs(b - a) / (2 * Z90))
        else:        # a total of 0 (a free plan) has no logarithm: it adds no spread
            means.append(0.0)
            spreads.append(0.0)
        da, db = low.values["project_end"] - end, high.values["project_end"] - end
        day_means.append((da + db) / 2)
        day_spreads.append(abs(db - da) / (2 * Z90))
    m, s = sum(means), math.sqrt(sum(x * x for x in spreads))
    dm, ds = sum(day_means), math.sqrt(sum(x * x for x in day_spreads))
    return {"total_cost_p10": total * math.exp(m - Z90 * s), "total_cost_p50": total * math.exp(m),
            "total_cost_p90": total * math.exp(m + Z90 * s), "project_end_p90": end + dm + Z90 * ds,
            "_means": means, "_spreads": spreads, "_day_means": day_means, "_day_spreads": day_spreads}
