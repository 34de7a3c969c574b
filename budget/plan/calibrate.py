"""The efficiency fit's catalog and report: `python -m budget.calibrate` fits the step-time model
(budget/plan/calibrate_fit.py) on the planned rows (budget/plan/calibrate_rows.py), prints the fit and
its cross-validated error, and with --write rewrites catalogs/efficiency.yaml. The names of both
modules are importable from here, as the tests and budget/plan/uncertainty.py read them."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Mapping, Sequence

import yaml

from ..inputs.catalog import data_dir
from .calibrate_fit import (FIT_ROUNDS, HUBER_DELTA, IRLS_ROUNDS, MIN_GROUPS, REFERENCE_STACK, STACKS, TOLERANCE,
                            UPPER, VENDOR_GROUPS, WIDE_TOLERANCE, constant_mfu_step_s, cross_validate, effective,
                            fit, fit_model, fp8_pairs, group_weights, implied_mfu, Model, predict, Scores,
                            Validation, weighted_median)  # noqa: F401 (read from here)
from .calibrate_rows import (ARCHITECTURES, IMMATURITY_CAP_YEARS, MATURITY_LEVELS, SHAPE_KEYS, TERMS,
                             THROUGHPUT_DERIVED, UNFITTED_REFERENCE, UNKNOWN, WALL_CLOCK, allowance_errors,
                             allowances, architecture_of, fit_rows, full_runs, FullRun, published_rows, Row,
                             row_scenario, software_date, terms_of, tokens_per_gpu_s)  # noqa: F401 (read from here)


def coefficient_names() -> tuple[str, ...]:
    return tuple(f"arch_{a}" for a in ARCHITECTURES) + TERMS


SOURCE = ("fit of catalogs/throughput_runs.yaml by budget/calibrate.py, robust (Huber) non-negative "  # i18n: not text
          "least squares")  # i18n: not text
ERROR_DEFINITION = ("predicted ÷ published step time (= GPU-hours) − 1 of rows held out by source group, "  # i18n: not text
                    "+ = the prediction needs more GPU-hours than the run took")  # i18n: not text
RULES = ("unknown", "typed", "constant", "constant_030")
NOT_HELD_OUT = ("no other source group measured its architecture; under the unmeasured-architecture rule "  # i18n: not text
                "its median error is {:+.3f}")  # i18n: not text


def weighted_quantiles(errors: Sequence[float], qs: Sequence[float], weights: Sequence[float] | None = None
                       ) -> list[float]:
    """Quantiles of errors with weights (each source group weighing the same), linear between the
    midpoints of the sorted values' cumulative weights."""
    import numpy as np
    e = np.array(errors, dtype=float)
    w = np.ones(len(e)) if weights is None else np.array(weights, dtype=float)
    order = np.argsort(e, kind="stable")
    e, w = e[order], w[order]
    cum = (np.cumsum(w) - w / 2) / w.sum()
    return [float(np.interp(q, cum, e)) for q in qs]


def _quantiles(errors: Sequence[float], weights: Sequence[float] | None = None) -> dict:
    """P10, P50 and P90 of errors (with weights: each source group weighing the same)."""
    found = weighted_quantiles(errors, (0.1, 0.5, 0.9), weights)
    return {f"p{q}": round(x, 6) for q, x in zip((10, 50, 90), found)} | {"rows": len(errors)}


def _figures(s: Scores) -> dict:
    return {"median_abs_error": round(s.median_abs, 6), "within_20": round(s.within, 6),
            "median_abs_error_by_group": round(s.median_abs_by_group, 6),
            "within_20_by_group": round(s.within_by_group, 6)}


def validation_document(v: Validation) -> dict:
    """The validation block: figures per rule, pooled and per group, and the held-out errors."""
    per_rule = {name: getattr(v, name) for name in RULES}
    per_group = {}
    groups = {name: v.per_group(s) for name, s in per_rule.items()}
    for g in v.groups:
        stacks = sorted({r.stack for r in v.rows if r.group == g})
        per_group[g] = {"rows": len(groups["unknown"][g].errors), "stacks": stacks,
                        "constant_mfu": round(v.constants[g], 6),
                        **{name: {"median_abs_error": round(groups[name][g].median_abs, 6),
                                  "within_20": round(groups[name][g].within, 6)} for name in RULES}}
    errors = {g: [round(e, 6) for r, e in zip(v.rows, v.unknown.errors) if r.group == g] for g in v.groups}
    typed = {g: [round(e, 6) for r, e in zip(v.rows, v.typed.errors) if r.group == g] for g in v.groups}
    stacks_of = {g: [r.stack for r in v.rows if r.group == g] for g in v.groups}
    quantiles = {"pooled": _quantiles(v.unknown.errors), "pooled_by_group": _quantiles(v.unknown.errors, v.unknown.weights)}
    for stack in sorted({r.stack for r in v.rows}):
        idx = [i for i, r in enumerate(v.rows) if r.stack == stack]
        rows = [v.rows[i] for i in idx]
        quantiles[stack] = _quantiles([v.unknown.errors[i] for i in idx], group_weights(rows)) | {
            "groups": len({r.group for r in rows})}
    return {"held_out": v.held_out, "sources": len(v.groups), "within": round(v.unknown.within, 6),
            "median_abs_error": round(v.unknown.median_abs, 6), "error_definition": ERROR_DEFINITION,
            "groups_not_held_out": {g: NOT_HELD_OUT.format(e) for g, e in (v.not_held_out or {}).items()},
            "rules": {name: _figures(s) for name, s in per_rule.items()},
            "per_group": per_group, "held_out_errors": errors, "held_out_errors_typed": typed,
            "held_out_stacks": stacks_of, "quantiles": quantiles,
            "in_sample": {"unknown_" + k: x for k, x in _figures(v.in_sample_unknown).items()}
            | {"typed_" + k: x for k, x in _figures(v.in_sample_typed).items()}}


def fp8_speedups(rows: Sequence[Row], m: Model) -> list[tuple[str, float, float]]:
    """(FP8 row, published BF16 ÷ FP8 step, the model's) for each published pair."""
    return [(f.id, b.measured_step_s / f.measured_step_s, m.step_s(b, b.stack) / m.step_s(f, f.stack))
            for b, f in fp8_pairs(rows)]


def fit_document(rows: Sequence[Row], as_of: dt.date, runs: Sequence[FullRun] = (),
                 reference: str = UNFITTED_REFERENCE, validate: bool = True) -> dict:
    """catalogs/efficiency.yaml's content: the coefficients as sourced figures, the architectures
    they cover, each stack's factor, ρ, the full-run allowance, and the held-out validation
    (budget.inputs.catalog.EfficiencyFit reads it)."""
    m = fit_model(rows)
    coef = dict(zip(coefficient_names(), m.coef))
    v = cross_validate(rows) if validate else None
    fitted = set(m.architectures)

    def figure(value: float, note: str) -> dict:
        return {"value": round(value, 6), "source": "throughput_fit", "as_of": as_of.isoformat(), "note": note}

    pairs = fp8_speedups(rows, m)
    rows = [r for r in rows if not r.pair_only]
    n = {a: sum(r.architecture == a for r in rows) for a in fitted}
    stacks = {}
    for s in (UNKNOWN, *STACKS):
        groups = m.stack_groups.get(s, ())
        if s == UNKNOWN:
            general = sorted({r.group for r in rows if r.group not in VENDOR_GROUPS})
            note = f"median over {len(general)} source groups that are not a vendor's benchmark: {', '.join(general)}"  # i18n: not text
        elif len(groups) >= MIN_GROUPS:
            note = f"{sum(r.stack == s for r in rows)} rows of {len(groups)} source groups: {', '.join(groups)}"  # i18n: not text
        else:
            note = (f"rows of {len(groups)} source group(s) ({', '.join(groups) or 'none'}): fewer than "  # i18n: not text
                    f"{MIN_GROUPS}, so unknown's factor")  # i18n: not text
        stacks[s] = figure(m.factor(s), note)
    allowance = allowances(runs) if runs else {}
    loo = allowance_errors(runs) if runs else {}
    return {  # i18n: not text (data file)
        "source": SOURCE, "as_of": as_of.isoformat(), "rows": len(rows),
        "architectures": {a: list(ids) for a, ids in ARCHITECTURES.items()},
        "matmul_factor": {a: figure(coef[f"arch_{a}"], f"{n[a]} rows") for a in ARCHITECTURES if a in fitted},
        "width_factor": figure(coef["width"], "adds this ÷ (h/TP) to the matmul factor"),
        "attention_factor": figure(coef["attention"], "attention-score time at peak × this"),
        "dp_exposed": figure(coef["dp_exposed"], "share of the DP time not hidden (ZeRO 0-2)"),
        "zero3_exposed": figure(coef["zero3_exposed"], "share of the DP time not hidden (ZeRO-3/FSDP)"),
        "immaturity_factor": figure(coef["immaturity"], "per year of software younger than the cap"),
        "attention_immaturity_factor": figure(coef["attention_immaturity"],
                                              "attention's, per year of software younger than the cap"),
        "immaturity_cap_years": figure(IMMATURITY_CAP_YEARS, "chosen by cross-validation (1 to 3 years)"),
        "unfitted_reference": reference,
        "stack_factor": stacks,
        "fp8_gemm_realised": figure(m.rho, f"median of {len(pairs)} FP8/BF16 pairs (NVIDIA's DGX Cloud tables, torchtitan's) "  # i18n: not text
                                           f"(published speed-ups {min(p[1] for p in pairs):.3f}-{max(p[1] for p in pairs):.3f})"  # i18n: not text
                                    if pairs else "no FP8/BF16 pair"),  # i18n: not text
        "card_allowance": {level: {"value": round(a, 6), "source": "full_runs_fit", "as_of": as_of.isoformat(),
                                   "note": note} for level, (a, note) in allowance.items()},
        "full_runs": {r.id: {"kind": r.kind, "maturity": r.maturity, "published_gpu_hours": r.published_gpu_hours,
                             "step_gpu_hours": round(r.step_gpu_hours, 1), "stretch": round(r.stretch, 6),
                             "published_over_step": round(r.over_step, 6), "allowance": round(r.allowance, 6),
                             **({"leave_one_out_error": round(loo[r.id], 6)} if r.id in loo else {})}
                      for r in runs},
        "validation": validation_document(v) if v else {"held_out": 0, "sources": 0, "within": 0.0,
                                                         "median_abs_error": 0.0},
    }


def write_fit(path: Path, doc: Mapping) -> None:
    write_catalog(path, doc, (  # i18n: not text
        "Written by `python -m budget.calibrate --write` (do not edit by hand: tests/test_calibrate.py",  # i18n: not text
        "refits the rows and compares). The step-time model of budget/calibrate.py, its coefficients",  # i18n: not text
        "fitted on catalogs/throughput_runs.yaml, each stack's factor, the FP8 GEMM share, the full-run",  # i18n: not text
        "allowance fitted on catalogs/full_runs.yaml, and the errors of rows held out by source group."), width=120)  # i18n: not text


def write_catalog(path: Path, doc: Mapping, header: Sequence[str], width: int = 80) -> None:
    """A catalog file a fit writes: its header lines as comments, then the document as YAML."""
    comments = "".join(f"# {line}\n" for line in header)
    path.write_text(comments + yaml.safe_dump(dict(doc), sort_keys=False, allow_unicode=True, width=width),
                    encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:      # pragma: no cover - a report for people
    import sys
    argv = list(sys.argv[1:] if argv is None else argv)
    rows, left = fit_rows()
    runs = full_runs()
    m = fit_model(rows)
    v = cross_validate(rows)
    if "--write" in argv:
        write_fit(data_dir("catalogs") / "efficiency.yaml", fit_document(rows, dt.date.today(), runs))
    for name, c in zip(coefficient_names(), m.coef):
        print(f"{name:20} {c:.4f}")    # i18n: not text
    for s in (UNKNOWN, *STACKS):
        print(f"stack {s:20} {m.factor(s):.3f}  groups {', '.join(m.stack_groups.get(s, ())) or '-'}")  # i18n: not text
    print(f"fp8 GEMM share realised {m.rho:.3f}")  # i18n: not text
    for rid, published, model in fp8_speedups(rows, m):
        print(f"  {rid:34} published {published:.3f}  model {model:.3f}")  # i18n: not text
    print(f"rows {len(rows)} (left out {len(left)}); held out by source group: {v.held_out} rows of "  # i18n: not text
          f"{len(v.groups)} groups")  # i18n: not text
    for name in RULES:
        s = getattr(v, name)
        print(f"  {name:13} median |error| {s.median_abs:.1%}, within ±20% {s.within:.0%}; "  # i18n: not text
              f"each group alike: {s.median_abs_by_group:.1%}, {s.within_by_group:.0%}")  # i18n: not text
    for g in v.groups:
        u, c = v.per_group(v.unknown)[g], v.per_group(v.constant)[g]
        print(f"    {g:20} {len(u.errors):3}  P50 {u.median_abs:.1%} {u.within:.0%}  constant "  # i18n: not text
              f"{c.median_abs:.1%} {c.within:.0%}")  # i18n: not text
    for g, e in (v.not_held_out or {}).items():
        print(f"    {g:20} not held out (architecture unmeasured elsewhere): median error {e:+.1%}")  # i18n: not text
    for r in runs:
        print(f"full run {r.id:18} {r.kind:18} published/step {r.over_step:.3f}  allowance {r.allowance:+.3f}")  # i18n: not text
    for level, (a, note) in allowances(runs).items():
        print(f"  allowance {level:16} {a:+.3f}  ({note})")  # i18n: not text
    return 0


if __name__ == "__main__":      # pragma: no cover
    raise SystemExit(main())
