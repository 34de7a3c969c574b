"""How wrong the planner has been on runs it was not fitted on, as the spread of the range
(issue 25, item 4), and the calibration test of that spread.

The errors are the step-time model's own (budget/plan/calibrate.py: its rows, its fit_model, its
prediction with the stack unknown, as a scenario that does not state its stack gets), held out by
**source group** (each row's `source_group` in catalogs/throughput_runs.yaml: NVIDIA's DGX Cloud,
NeMo and Megatron tables are one group, the same stack measured by the same team): the model is
refitted on the other groups and the group's rows predicted.
A row's error is ln(measured step time ÷ predicted step time); GPU-hours scale with the step
time, so the same ratio is the error of the GPU-hours.

- The spread a plan uses (`python -m budget.plan.uncertainty --write` stores it in
  catalogs/model_error.yaml, each figure sourced): the P10 and P90 of the held-out errors of
  every group, pooled over rows, as factors on the step time. A plan whose utilisation is typed
  (an MFU, effective TFLOPS, an HFU) is a constant-MFU rule: it uses that rule's held-out
  spread instead, centred on the typed figure (the team's own median).
- The calibration test (`calibration`): nested, so the spread applied to a group is learnt
  without that group. For each group G: the model is fitted without G, and the spread is the
  quantiles of the errors of every other group H predicted by a fit without G and H. The
  share of G's rows below the P10 and above the P90 is each tail's miss; the P90/P10 ratio is
  exp(q90 − q10). The constant-MFU rule on the same rows (6·N·D ÷ (BF16 peak × the median
  implied MFU of the training folds)) gives the empirical 80% interval it is compared with.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import yaml

from ..inputs.catalog import Catalog, data_dir, load_catalog
from . import calibrate as C

TAILS = (0.1, 0.9)          # the range's P10 and P90
TAIL_MISS = (0.03, 0.17)    # issue 25: each tail misses 10 ± 7% of held-out rows
CONSTANT_MFU = 0.30         # the rule of thumb's constant, reported beside the fitted one
MIN_STACK_ROWS = 10         # held-out rows a stack needs for a spread of its own (else the pooled one)
WITHIN = 0.20               # issue 25: the share of held-out rows within ±20%
FILE = "model_error.yaml"   # i18n: not text (a file name)


def fit_rows(catalog: Catalog | None = None) -> list[C.Row]:
    """The step-time fit's rows (calibrate.fit_rows) that can be scored: the pair-only FP8/BF16 rows
    (an accelerator the catalog lacks) only tell ρ, they are fitted on but never predicted."""
    rows, _ = C.fit_rows(catalog or load_catalog())
    return rows


class _Fits:
    """calibrate.fit_model on the rows without some source groups, each fit made once (the nested
    test asks for every pair of groups from both sides)."""

    def __init__(self, rows: Sequence[C.Row]):
        self.rows, self.done = list(rows), {}

    def without(self, groups: frozenset) -> C.Model:
        if groups not in self.done:
            self.done[groups] = C.fit_model([r for r in self.rows if r.group not in groups])
        return self.done[groups]


def error(m: C.Model, r: C.Row) -> float:
    """ln(measured step time ÷ predicted step time), the stack unknown (what a scenario that does not
    state its stack gets): positive when the run was slower."""
    return math.log(r.measured_step_s / m.step_s(r, C.UNKNOWN))


def rule_error(mfu: float, r: C.Row) -> float:
    """The constant-MFU rule's error on the row: ln(measured step ÷ the rule's step)."""
    return math.log(r.measured_step_s / C.constant_mfu_step_s(r, mfu))


def _scorable(rows: Sequence[C.Row]) -> list[C.Row]:
    return [r for r in rows if not r.pair_only]


def held_out(rows: Sequence[C.Row], fits: _Fits | None = None, without: frozenset = frozenset()
             ) -> dict[str, list[tuple[C.Row, float, float]]]:
    """Leave one source group out (besides `without`): group -> [(row, model error, constant-MFU rule
    error)], the rule's constant the median implied MFU of the other groups' rows. A group whose
    architecture no other group measured is left out (its factor would be the unmeasured-architecture
    rule's, which calibrate.cross_validate scores apart)."""
    fits = fits or _Fits(rows)
    rows = [r for r in rows if r.group not in without]
    out = {}
    for group in sorted({r.group for r in rows}):
        scored = _held_out_group(rows, group, fits, without)
        if scored:
            out[group] = scored
    return out


def _held_out_group(rows: Sequence[C.Row], group: str, fits: _Fits, without: frozenset = frozenset()
                    ) -> list[tuple[C.Row, float, float]]:
    """held_out's scores of one group (rows: those not `without`); none where its architecture is unfitted."""
    train = _scorable(r for r in rows if r.group != group)
    test = _scorable(r for r in rows if r.group == group)
    m = fits.without(without | {group})
    if not test or not {r.architecture for r in test} <= set(m.architectures):
        return []
    mfu = statistics.median(C.implied_mfu(r) for r in train)
    return [(r, error(m, r), rule_error(mfu, r)) for r in test]


def held_out_by_stack(rows: Sequence[C.Row], fits: _Fits | None = None) -> dict[str, list[tuple[C.Row, float]]]:
    """The spread for a scenario that states its stack: stack -> [(row, error)] of the held-out rows
    of that stack, each predicted with its stack's own factor, where the fit without the row's group
    still gives the stack its own factor (rows of at least calibrate.MIN_GROUPS other groups) and the
    held-out rows come from at least MIN_GROUPS groups and number MIN_STACK_ROWS. A stack with fewer
    uses the pooled spread (December 2026: every stack does; DeepSpeed has 3 such rows, in-house
    tuned stacks 5, and a P10 of 3 rows is no P10)."""
    fits = fits or _Fits(rows)
    out: dict[str, list[tuple[C.Row, float]]] = {}
    for group in sorted({r.group for r in rows}):
        m = fits.without(frozenset({group}))
        for r in _scorable(r for r in rows if r.group == group):
            own = r.stack in m.stack_factors and len(m.stack_groups.get(r.stack, ())) >= C.MIN_GROUPS
            if own and r.architecture in m.architectures:
                out.setdefault(r.stack, []).append((r, math.log(r.measured_step_s / m.step_s(r, r.stack))))
    return {k: v for k, v in sorted(out.items())
            if len({r.group for r, _ in v}) >= C.MIN_GROUPS and len(v) >= MIN_STACK_ROWS}


def quantiles(errors: Sequence[tuple[C.Row, float]], qs: Sequence[float]) -> list[float]:
    """Quantiles of (row, error) pairs, each source group weighing the same whatever its number of
    rows: NVIDIA's 61 near-identical tuned rows would otherwise be most of every tail."""
    return C.weighted_quantiles([e for _, e in errors], qs, C.group_weights([r for r, _ in errors]))


@dataclass(frozen=True)
class Spread:
    """Held-out errors as factors on the step time: P10, P50, P90."""
    rows: int
    groups: int
    low: float
    median: float
    high: float


def spreads(rows: Sequence[C.Row], fits: _Fits | None = None) -> tuple[Spread, Spread]:
    """The spread a plan uses: the fitted model's held-out errors, and the constant-MFU rule's
    centred on its median (a typed utilisation is its team's median)."""
    done = held_out(rows, fits)
    model = [(r, e) for scored in done.values() for r, e, _ in scored]
    rule = [(r, e) for scored in done.values() for r, _, e in scored]
    q = quantiles(model, (TAILS[0], 0.5, TAILS[1]))
    c = quantiles(rule, (TAILS[0], 0.5, TAILS[1]))
    return (Spread(len(model), len(done), *(math.exp(x) for x in q)),
            Spread(len(rule), len(done), math.exp(c[0] - c[1]), 1.0, math.exp(c[2] - c[1])))


@dataclass(frozen=True)
class Scored:
    """One row held out in the nested test."""
    id: str
    group: str
    error: float            # the model fitted without the row's group: ln(measured ÷ predicted step)
    low: float              # the spread learnt without the group: ln of its P10, P50, P90 factors
    median: float
    high: float
    rule_error: float       # the constant-MFU rule, its constant the training folds' median MFU
    rule_030_error: float   # the same rule at a constant 0.30 MFU


def stack_spreads(rows: Sequence[C.Row], fits: _Fits | None = None) -> dict[str, Spread]:
    """held_out_by_stack's spreads, each group weighing the same."""
    out = {}
    for stack, errors in held_out_by_stack(rows, fits).items():
        q = quantiles(errors, (TAILS[0], 0.5, TAILS[1]))
        out[stack] = Spread(len(errors), len({r.group for r, _ in errors}), *(math.exp(x) for x in q))
    return out


def nested(rows: Sequence[C.Row], fits: _Fits | None = None) -> list[Scored]:
    """Each group held out (held_out's errors of a fit without it), with the spread of the errors
    the other groups make when each is held out of a fit that also lacks G."""
    fits = fits or _Fits(rows)
    return [s for group in held_out(rows, fits) for s in nested_group(rows, group, fits)]


def nested_group(rows: Sequence[C.Row], group: str, fits: _Fits | None = None) -> list[Scored]:
    """One group's rows in the nested test: every fit behind them lacks the group."""
    fits = fits or _Fits(rows)
    done = _held_out_group(rows, group, fits)
    if not done:
        return []
    inner = [(r, e) for scored in held_out(rows, fits, frozenset({group})).values() for r, e, _ in scored]
    low, median, high = quantiles(inner, (TAILS[0], 0.5, TAILS[1]))
    return [Scored(r.id, group, e, low, median, high, rule, rule_error(CONSTANT_MFU, r))
            for r, e, rule in done]


@dataclass(frozen=True)
class Calibration:
    rows: int
    groups: int
    lower_miss: float              # share of rows whose measured step is below its P10
    upper_miss: float              # ... above its P90
    median_ratio: float            # median P90/P10 of the rows' ranges
    rule_interval: float           # the constant-MFU rule's empirical P90/P10 on the same rows
    p50_median_error: float        # |P50 step ÷ measured − 1|, median over rows
    p50_within: float              # share within ±20%
    rule_median_error: float
    rule_within: float
    rule_030_median_error: float
    rule_030_within: float
    per_group: dict                # group -> Calibration of its rows (per_group empty)


def _relative(log_error: float) -> float:
    """|predicted ÷ measured − 1| of a log error ln(measured ÷ predicted)."""
    return abs(math.exp(-log_error) - 1)


def score(scored: Sequence[Scored], per_group: bool = True) -> Calibration:
    """The figures of held-out rows, each source group weighing the same (a group's rows share one
    weight): the tails' misses, the median P90/P10, the P50's median error and share within ±20%,
    and the constant-MFU rules' on the same rows."""
    counts: dict[str, int] = {}
    for s in scored:
        counts[s.group] = counts.get(s.group, 0) + 1
    w = [1 / counts[s.group] for s in scored]
    total = sum(w)

    def share(flags) -> float:
        return sum(x for x, f in zip(w, flags) if f) / total

    def median(values) -> float:
        return C.weighted_quantiles(list(values), (0.5,), w)[0]

    rule = C.weighted_quantiles([s.rule_error for s in scored], TAILS, w)
    p50 = [_relative(s.error - s.median) for s in scored]
    fixed = [_relative(s.rule_error) for s in scored]
    fixed_030 = [_relative(s.rule_030_error) for s in scored]
    groups = sorted(counts)
    return Calibration(
        len(scored), len(groups),
        share(s.error < s.low for s in scored), share(s.error > s.high for s in scored),
        math.exp(median(s.high - s.low for s in scored)), math.exp(rule[1] - rule[0]),
        median(p50), share(e <= WITHIN + 1e-12 for e in p50), median(fixed), share(e <= WITHIN + 1e-12 for e in fixed),
        median(fixed_030), share(e <= WITHIN + 1e-12 for e in fixed_030),
        {g: score([s for s in scored if s.group == g], False) for g in groups} if per_group else {})


def calibration(rows: Sequence[C.Row], fits: _Fits | None = None) -> Calibration:
    return score(nested(rows, fits))


# --- the catalog file ----------------------------------------------------------------------

SOURCE = ("held-out errors of the step-time model of budget/plan/calibrate.py on catalogs/throughput_runs.yaml, "  # i18n: not text
          "one source group left out at a time (budget/plan/uncertainty.py)")  # i18n: not text


def document(rows: Sequence[C.Row], as_of: dt.date, fits: _Fits | None = None) -> dict:
    """catalogs/model_error.yaml's content (budget.inputs.catalog.ModelError reads it)."""
    fits = fits or _Fits(rows)
    fitted, rule = spreads(rows, fits)
    cal = calibration(rows, fits)

    def figure(value: float, note: str) -> dict:
        return {"value": round(value, 6), "source": "model_error_fit", "as_of": as_of.isoformat(), "note": note}

    def spread(s: Spread, what: str) -> dict:
        factor = ", as a factor on the step time"  # i18n: not text (data file)
        return {"rows": s.rows, "groups": s.groups,  # i18n: not text (data file)
                "low": figure(s.low, "P10 of " + what + factor),  # i18n: not text
                "median": figure(s.median, "P50 of " + what),  # i18n: not text
                "high": figure(s.high, "P90 of " + what + factor)}  # i18n: not text

    def figures(c: Calibration) -> dict:
        return {"rows": c.rows, "lower_tail_miss": round(c.lower_miss, 6), "upper_tail_miss": round(c.upper_miss, 6),
                "median_p90_p10": round(c.median_ratio, 6), "constant_mfu_p90_p10": round(c.rule_interval, 6),
                "p50_median_abs_error": round(c.p50_median_error, 6), "p50_within_20": round(c.p50_within, 6),
                "constant_mfu_median_abs_error": round(c.rule_median_error, 6),
                "constant_mfu_within_20": round(c.rule_within, 6),
                "mfu_030_median_abs_error": round(c.rule_030_median_error, 6),
                "mfu_030_within_20": round(c.rule_030_within, 6)}

    return {  # i18n: not text (data file)
        "source": SOURCE, "as_of": as_of.isoformat(),
        "sources": {"model_error_fit": SOURCE},
        "fitted": spread(fitted, "the fitted model's held-out step-time errors"),
        "by_stack": {stack: spread(sp, f"the fitted model's held-out step-time errors on {stack} rows, "
                                       "each predicted with that stack's factor")  # i18n: not text
                     for stack, sp in stack_spreads(rows, fits).items()},
        "constant_mfu": spread(rule, "a constant MFU's held-out step-time errors, centred"),
        "calibration": {**figures(cal), "groups": cal.groups,
                        "per_group": {g: figures(c) for g, c in cal.per_group.items()}},
    }


def write(path: Path, doc: Mapping) -> None:
    C.write_catalog(path, doc, (  # i18n: not text
        "Written by `python -m budget.plan.uncertainty --write` (do not edit by hand: tests/test_uncertainty.py",  # i18n: not text
        "recomputes it and compares). How wrong the step-time model has been on source groups it was not",  # i18n: not text
        "fitted on: the spread of the range (fitted; constant_mfu for a typed utilisation), and the nested",  # i18n: not text
        "calibration test of that spread (issue 25)."))  # i18n: not text


def main(argv: Sequence[str] | None = None) -> int:      # pragma: no cover - a report for people
    import sys
    argv = list(sys.argv[1:] if argv is None else argv)
    rows = fit_rows()
    as_of = dt.date.today()
    for arg in argv:
        if arg.startswith("--as-of="):
            as_of = dt.date.fromisoformat(arg.split("=", 1)[1])
    doc = document(rows, as_of)
    if "--write" in argv:
        write(data_dir("catalogs") / FILE, doc)
    print(yaml.safe_dump({k: doc[k] for k in ("fitted", "constant_mfu", "calibration")},  # i18n: not text
                         sort_keys=False, allow_unicode=True))
    return 0


if __name__ == "__main__":      # pragma: no cover
    raise SystemExit(main())
