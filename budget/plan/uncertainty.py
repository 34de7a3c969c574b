"""How wrong the planner has been on runs it was not fitted on, as the spread of the range
(issue 25, item 4), and the calibration test of that spread.

The errors are the step-time model's own (budget/plan/calibrate.py: its rows, its fit, its
prediction), held out by **source group**: the rows of one publisher and software stack are
left out together (NVIDIA's DGX Cloud, NeMo and Megatron tables are one group: the same stack
measured by the same team), the model refitted on the others and the group's rows predicted.
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

# Source groups: publisher and software. A source not named here is a group of its own.
SOURCE_GROUPS = {"nvidia_megatron": ("nvidia_dgxc_benchmarking", "nemo_perf_summary_2407", "narayanan2021_sc21",
                                     "korthikanti2022", "nemotron4_15b")}
TAILS = (0.1, 0.9)          # the range's P10 and P90
TAIL_MISS = (0.03, 0.17)    # issue 25: each tail misses 10 ± 7% of held-out rows
CONSTANT_MFU = 0.30         # the rule of thumb's constant, reported beside the fitted one
WITHIN = 0.20               # issue 25: the share of held-out rows within ±20%
FILE = "model_error.yaml"   # i18n: not text (a file name)


def group_of(source_id: str) -> str:
    return next((g for g, ids in SOURCE_GROUPS.items() if source_id in ids), source_id)


@dataclass(frozen=True)
class Planned:
    """A fit row with what the constant-MFU rule needs: its 6·N FLOPs per token over the BF16
    peak (seconds per token per GPU at 100% MFU)."""
    row: C.Row
    group: str
    rule_s_per_token: float

    def implied_mfu(self) -> float:
        return self.rule_s_per_token * self.row.tokens_per_gpu_s


def planned_rows(catalog: Catalog | None = None) -> list[Planned]:
    """calibrate.fit_rows's rows, each with its plan's 6·N and BF16 peak."""
    from ..inputs.options import parse_scenario
    from .plan import build_plan
    catalog = catalog or load_catalog()
    rows, _ = C.fit_rows(catalog)
    raw = {r["id"]: r for r in C.published_rows()}
    out = []
    for r in rows:
        v = build_plan(parse_scenario(C.row_scenario(raw[r.id], catalog), f"{r.id}.yaml", catalog),
                       catalog, r.id).values
        out.append(Planned(r, group_of(r.source_id),
                           6 * v["model_params"] / (v["peak_tflops"] * 1e12)))
    return out


def error(coef: Sequence[float], r: C.Row) -> float:
    """ln(measured step time ÷ predicted step time): positive when the run was slower."""
    return math.log(C.predict(coef, r) / r.tokens_per_gpu_s)


def rule_error(mfu: float, p: Planned) -> float:
    """The constant-MFU rule's error on the row: ln(its implied MFU's step over the measured)."""
    return math.log(mfu / p.implied_mfu())


def _holdable(test: Sequence[Planned], train: Sequence[Planned]) -> bool:
    """A group whose architecture no other group measured cannot be held out (its α unfitted)."""
    return {p.row.architecture for p in test} <= {p.row.architecture for p in train}


def held_out(rows: Sequence[Planned]) -> dict[str, list[tuple[Planned, float, float]]]:
    """Leave one source group out: group -> [(row, model error, constant-MFU rule error)], the
    rule's constant the median implied MFU of the other groups' rows."""
    out = {}
    for group in sorted({p.group for p in rows}):
        train = [p for p in rows if p.group != group]
        test = [p for p in rows if p.group == group]
        if not _holdable(test, train):
            continue
        coef = C.fit([p.row for p in train])
        mfu = statistics.median(p.implied_mfu() for p in train)
        out[group] = [(p, error(coef, p.row), rule_error(mfu, p)) for p in test]
    return out


def quantiles(errors: Sequence[float], qs: Sequence[float]) -> list[float]:
    """Quantiles of the pooled errors (linear between order statistics, numpy's default)."""
    import numpy as np
    return [float(x) for x in np.quantile(np.asarray(errors, dtype=float), qs)]


@dataclass(frozen=True)
class Spread:
    """Held-out errors as factors on the step time: P10, P50, P90."""
    rows: int
    groups: int
    low: float
    median: float
    high: float


def spreads(rows: Sequence[Planned]) -> tuple[Spread, Spread]:
    """The spread a plan uses: the fitted model's held-out errors, and the constant-MFU rule's
    centred on its median (a typed utilisation is its team's median)."""
    done = held_out(rows)
    model = [e for scored in done.values() for _, e, _ in scored]
    rule = [e for scored in done.values() for _, _, e in scored]
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


def nested(rows: Sequence[Planned]) -> list[Scored]:
    """Each holdable group predicted by a fit without it, with the spread of the errors the
    other groups make when each is held out of a fit that also lacks G."""
    out = []
    for group in sorted({p.group for p in rows}):
        train = [p for p in rows if p.group != group]
        test = [p for p in rows if p.group == group]
        if not _holdable(test, train):
            continue
        coef = C.fit([p.row for p in train])
        inner = [e for scored in held_out(train).values() for _, e, _ in scored]
        low, median, high = quantiles(inner, (TAILS[0], 0.5, TAILS[1]))
        mfu = statistics.median(p.implied_mfu() for p in train)
        out += [Scored(p.row.id, group, error(coef, p.row), low, median, high, rule_error(mfu, p),
                       rule_error(CONSTANT_MFU, p)) for p in test]
    return out


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
    n = len(scored)
    rule = quantiles([s.rule_error for s in scored], TAILS)
    p50 = [_relative(s.error - s.median) for s in scored]
    fixed = [_relative(s.rule_error) for s in scored]
    fixed_030 = [_relative(s.rule_030_error) for s in scored]
    groups = sorted({s.group for s in scored})
    return Calibration(
        n, len(groups),
        sum(s.error < s.low for s in scored) / n, sum(s.error > s.high for s in scored) / n,
        statistics.median(math.exp(s.high - s.low) for s in scored), math.exp(rule[1] - rule[0]),
        statistics.median(p50), _share(p50), statistics.median(fixed), _share(fixed),
        statistics.median(fixed_030), _share(fixed_030),
        {g: score([s for s in scored if s.group == g], False) for g in groups} if per_group else {})


def _share(errors: Sequence[float]) -> float:
    return sum(e <= WITHIN + 1e-12 for e in errors) / len(errors)


def calibration(rows: Sequence[Planned]) -> Calibration:
    return score(nested(rows))


# --- the catalog file ----------------------------------------------------------------------

SOURCE = ("held-out errors of the step-time model of budget/plan/calibrate.py on catalogs/throughput_runs.yaml, "  # i18n: not text
          "one source group left out at a time (budget/plan/uncertainty.py)")  # i18n: not text


def document(rows: Sequence[Planned], as_of: dt.date) -> dict:
    """catalogs/model_error.yaml's content (budget.inputs.catalog.ModelError reads it)."""
    fitted, rule = spreads(rows)
    cal = calibration(rows)

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
        "groups": {g: list(ids) for g, ids in SOURCE_GROUPS.items()},
        "fitted": spread(fitted, "the fitted model's held-out step-time errors"),
        "constant_mfu": spread(rule, "a constant MFU's held-out step-time errors, centred"),
        "calibration": {**figures(cal), "groups": cal.groups,
                        "per_group": {g: figures(c) for g, c in cal.per_group.items()}},
    }


def write(path: Path, doc: Mapping) -> None:
    header = "".join(f"# {line}\n" for line in (  # i18n: not text
        "Written by `python -m budget.plan.uncertainty --write` (do not edit by hand: tests/test_uncertainty.py",  # i18n: not text
        "recomputes it and compares). How wrong the step-time model has been on source groups it was not",  # i18n: not text
        "fitted on: the spread of the range (fitted; constant_mfu for a typed utilisation), and the nested",  # i18n: not text
        "calibration test of that spread (issue 25)."))  # i18n: not text
    path.write_text(header + yaml.safe_dump(dict(doc), sort_keys=False, allow_unicode=True), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:      # pragma: no cover - a report for people
    import sys
    argv = list(sys.argv[1:] if argv is None else argv)
    rows = planned_rows()
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
