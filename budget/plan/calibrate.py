"""Fit the step-time model of issue 13 on published throughput rows, and say how well it predicts
runs it has not seen (leave-one-source-out).

The model is linear in its coefficients, so the fit is least squares (non-negative, with Huber
weights so that one run on an unusual cluster does not steer it) and each fold of the
cross-validation refits in milliseconds:

    step time = (1 + bubble) · [ matmul time at peak · (α_arch + β/(h/TP) + κ·immaturity)
                                 + attention time at peak · (γ + κₐ·immaturity) ]
                + δ · DP time (ZeRO 0–2) + δ₃ · DP time (ZeRO-3/FSDP) + PP, CP and EP time

- matmul and attention time at peak: the run's hardware FLOPs per GPU per step (recomputation
  counted) over the accelerator's BF16 peak, the attention scores apart (FlashAttention-style
  kernels run at their own rate);
- α per architecture (Ampere, Hopper, TPU v5e: the ones with rows); β: narrow per-GPU matmuls
  (small models, wide TP) run further from peak;
- immaturity = max(0, cap − years between the architecture's first shipments and the run's
  software): the same H100 ran 30–50% slower under 2023 software than under 2025 software, and
  its attention kernels further still (FlashAttention-2 in 2023, FlashAttention-3 in 2024);
- the communication times are the planner's own items at the catalog's bandwidths.

The terms come from the planner's own plan of each row (budget/model/model.py items), so the fit and
the planner share every definition; only the coefficients are fitted. `python -m budget.calibrate`
prints the fit and the cross-validated error.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import yaml

from ..inputs.catalog import Catalog, data_dir, load_catalog
from .reference_runs import published_rows, software_date, tokens_per_gpu_s

# Architectures with rows, and the accelerators that share their kernels (same chip or die)
ARCHITECTURES = {"ampere": ("nvidia_a100_80gb_sxm", "nvidia_a100_40gb_sxm", "nvidia_a800_sxm"),
                 "hopper": ("nvidia_h100_sxm", "nvidia_h800_sxm", "nvidia_h200_sxm"),
                 "tpu_v5e": ("google_tpu_v5e",)}
TERMS = ("width", "attention", "dp_exposed", "zero3_exposed", "immaturity", "attention_immaturity")
IMMATURITY_CAP_YEARS = 2.0     # chosen by cross-validation among 1, 1.5, 2, 2.5, 3 (all within 4 points)
TOLERANCE = 0.10               # issue 13: ±10%
HUBER_DELTA = TOLERANCE        # relative step error beyond which a row's pull grows linearly, not squared
IRLS_ROUNDS = 100


@dataclass(frozen=True)
class Row:
    """One published row as the fit sees it: its terms (seconds per step) and the measurement."""
    id: str
    source_id: str
    architecture: str
    tokens_per_gpu_s: float        # measured
    tokens_per_gpu_step: float
    features: tuple[float, ...]    # one per coefficient: α of each architecture, then TERMS
    fixed_s: float                 # PP, CP and EP time (coefficient 1)


SHAPE_KEYS = ("layers", "hidden_size", "attention_heads", "num_kv_heads", "head_dim", "ffn_hidden_size",
              "vocab_size", "seq_len")


def row_scenario(row: Mapping, catalog: Catalog) -> dict:
    """The row as a scenario: its shape, accelerator, GPUs, layout and batch; BF16; attention
    counted (flops_basis with_attention), so the attention term has its FLOPs."""
    shape, lay = dict(row.get("shape") or {}), row["layout"]
    model: dict = {}
    preset = shape.get("preset")
    if preset:
        published = next(m for m in catalog.models if m.id == preset)
        if shape.get("layers") and shape["layers"] != published.layers:
            # a proxy with fewer layers (DGX Cloud's 405B at 32-192 GPUs): the preset's shape, not its total
            model.update({k: getattr(published, k) for k in (*SHAPE_KEYS, "activation", "tied_embeddings")
                          if getattr(published, k, None) is not None})
        else:
            model["preset"] = preset
    model.update({k: int(shape[k]) for k in SHAPE_KEYS if shape.get(k) is not None})
    if shape.get("activation") in ("gelu", "swiglu"):
        model["activation"] = shape["activation"]
    if shape.get("tied_embeddings") is not None:
        model["tied_embeddings"] = bool(shape["tied_embeddings"])
    model["position_embeddings"] = "learned" if str(shape.get("position_embeddings") or "").startswith(
        "learned") else "rotary"
    recompute = str(lay.get("recompute") or "none").split()[0].split("(")[0]
    par = {"tp": int(lay.get("tp") or 1), "pp": int(lay.get("pp") or 1), "cp": int(lay.get("cp") or 1),
           "ep": int(lay.get("ep") or 1), "micro_batch_size": int(lay.get("micro_batch_size") or 1),
           "zero_stage": int(lay["zero_stage"]) if lay.get("zero_stage") is not None else 1,
           "recompute": recompute if recompute in ("none", "selective", "full") else "none",
           "sequence_parallel": bool(lay.get("sequence_parallel"))}
    if lay.get("virtual_pipeline_stages") and int(lay["virtual_pipeline_stages"]) > 1:
        par["virtual_pipeline_stages"] = int(lay["virtual_pipeline_stages"])
    assumed = row.get("assumed") or {}
    for key in ("virtual_pipeline_stages", "first_last_stage_layers_fewer"):
        if key in assumed:
            par[key] = assumed[key]
    if "dropout" in assumed:
        model["dropout"] = assumed["dropout"]
    return {"name": row["id"], "model": model,
            "data": {"train_tokens": "1T", "global_batch_sequences": int(row["global_batch_sequences"])},
            "hardware": {"accelerator": row["accelerator"], "gpu_count": int(row["gpu_count"]),
                         "flops_basis": "with_attention"},
            "prices": {"per_gpu_hour": 1.0}, "parallelism": par,
            # the run's software date as the start: the model's architecture_years is its maturity
            "schedule": {"start_date": software_date(row)},
            "efficiency": {"model": "fitted", "fitted": {"immaturity_cap_years": IMMATURITY_CAP_YEARS}}}


def architecture_of(accelerator: str) -> str | None:
    return next((a for a, ids in ARCHITECTURES.items() if accelerator in ids), None)


def terms_of(values: Mapping, architecture: str) -> tuple[tuple[float, ...], float]:
    """The features of one planned run and its fixed seconds, from the plan's items of the fitted
    step-time model (budget/model/model.py `_fitted_step_time`): fitted_step_s is Σ coefficient × feature
    + fixed with the same items, so the fit and the workbook share every definition."""
    v = values
    k = 1 + v["bubble_fraction"]
    matmul = k * v["matmul_at_peak_s"]
    zero3 = v["zero_stage"] > 2
    arch = tuple(matmul if a == architecture else 0.0 for a in ARCHITECTURES)
    attention, short = k * v["attention_at_peak_s"], v["software_years_short"]
    rest = (matmul / (v["hidden_size"] / v["tp_size"]),
            attention,
            0.0 if zero3 else v["dp_comm_s"],
            v["dp_comm_s"] if zero3 else 0.0,
            matmul * short,
            attention * short)
    return arch + rest, v["fitted_fixed_comm_s"]


def fit_rows(catalog: Catalog | None = None, rows: Iterable[Mapping] | None = None
             ) -> tuple[list[Row], list[tuple[str, str]]]:
    """The rows the fit can use, planned; and (id, reason) for those it cannot."""
    from .plan import build_plan
    from ..inputs.options import parse_scenario
    from ..core.errors import ScenarioError
    catalog = catalog or load_catalog()
    used, left = [], []
    for row in rows if rows is not None else published_rows():
        arch = architecture_of(row["accelerator"])
        tokens = tokens_per_gpu_s(row)
        if "fp8" in str(row.get("precision", "")).lower():
            left.append((row["id"], "fp8"))
            continue
        if row["layout"].get("tp") is None or row["layout"].get("pp") is None:
            # planned as plain data parallelism it would contradict its paper (Llama 1: "model and
            # sequence parallelism", degrees not given): no layout, no row
            left.append((row["id"], "layout not published"))  # i18n: not text
            continue
        if arch is None or not tokens:
            left.append((row["id"], "no architecture" if arch is None else "no tokens/s"))  # i18n: not text
            continue
        try:
            plan = build_plan(parse_scenario(row_scenario(row, catalog), f"{row['id']}.yaml", catalog),
                              catalog, row["id"])
        except ScenarioError as e:
            left.append((row["id"], str(e).splitlines()[0]))
            continue
        features, fixed = terms_of(plan.values, arch)
        used.append(Row(row["id"], row["source_id"], arch, tokens,
                        plan.values["global_batch_tokens"] / plan.values["gpu_count"], features, fixed))
    return used, left


def fit(rows: Sequence[Row]) -> tuple[float, ...]:
    """Robust non-negative least squares on the relative error of the step time (each row weighs
    the same whatever its step length). Robust: Huber weights by iteratively reweighted least
    squares, so a run on a cluster unlike the others (a slower network, an in-house stack) pulls
    the coefficients no harder than HUBER_DELTA of error does, instead of by its square."""
    import numpy as np
    X = np.array([[f / _measured_step(r) for f in r.features] for r in rows])
    y = np.array([1 - r.fixed_s / _measured_step(r) for r in rows])
    weight = np.ones(len(rows))
    for _ in range(IRLS_ROUNDS):
        coef = _nnls(X * weight[:, None], y * weight)
        residual = np.abs(X @ coef - y)
        new = np.sqrt(np.where(residual <= HUBER_DELTA, 1.0, HUBER_DELTA / np.maximum(residual, 1e-12)))
        if np.allclose(new, weight, rtol=0, atol=1e-10):
            break
        weight = new
    return tuple(float(c) for c in coef)


def _nnls(X, y):
    """Least squares with non-negative coefficients. Active set: drop negative ones and refit."""
    import numpy as np
    active = [c for c in range(X.shape[1]) if X[:, c].any()]
    while True:
        coef, *_ = np.linalg.lstsq(X[:, active], y, rcond=None)
        negative = [c for c, v in zip(active, coef) if v < 0]
        if not negative:
            out = np.zeros(X.shape[1])
            out[active] = coef
            return out
        active = [c for c in active if c not in negative]


def _measured_step(r: Row) -> float:
    return r.tokens_per_gpu_step / r.tokens_per_gpu_s


def predict(coef: Sequence[float], r: Row) -> float:
    """Predicted tokens per GPU-second."""
    step = sum(c * f for c, f in zip(coef, r.features)) + r.fixed_s
    return r.tokens_per_gpu_step / step


@dataclass(frozen=True)
class Validation:
    held_out: int                  # rows predicted by a fit without their source
    within: float                  # share of them within ±10%
    median_abs_error: float
    in_sample_within: float
    sources: int
    per_source: dict               # source_id -> (rows, share within ±10%)


def cross_validate(rows: Sequence[Row]) -> Validation:
    """Leave one source out: no paper's rows in both the fit and the test. A source whose
    architecture no other source measured cannot be held out (its α would be unfitted)."""
    coef = fit(rows)
    inside = [abs(predict(coef, r) / r.tokens_per_gpu_s - 1) for r in rows]
    errors, per_source = [], {}
    for source in sorted({r.source_id for r in rows}):
        train = [r for r in rows if r.source_id != source]
        test = [r for r in rows if r.source_id == source]
        if not {r.architecture for r in test} <= {r.architecture for r in train}:
            continue
        c = fit(train)
        e = [abs(predict(c, r) / r.tokens_per_gpu_s - 1) for r in test]
        per_source[source] = (len(e), _share(e))
        errors += e
    return Validation(len(errors), _share(errors), statistics.median(errors), _share(inside),
                      len(per_source), per_source)


def _share(errors: Sequence[float]) -> float:
    return sum(e <= TOLERANCE + 1e-12 for e in errors) / len(errors)


def coefficient_names() -> tuple[str, ...]:
    return tuple(f"arch_{a}" for a in ARCHITECTURES) + TERMS


SOURCE = ("fit of catalogs/throughput_runs.yaml by budget/calibrate.py, robust (Huber) non-negative "  # i18n: not text
          "least squares")  # i18n: not text


def fit_document(rows: Sequence[Row], as_of: dt.date, reference: str = "nvidia_h100_sxm") -> dict:
    """catalogs/efficiency.yaml's content: the coefficients as sourced figures, the architectures
    they cover, and the cross-validated error (budget.inputs.catalog.EfficiencyFit reads it)."""
    coef = dict(zip(coefficient_names(), fit(rows)))
    v = cross_validate(rows)
    fitted = {a for a in ARCHITECTURES if any(r.architecture == a for r in rows)}

    def figure(value: float, note: str) -> dict:
        return {"value": round(value, 6), "source": "throughput_fit", "as_of": as_of.isoformat(), "note": note}

    n = {a: sum(r.architecture == a for r in rows) for a in fitted}
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
        "validation": {"held_out": v.held_out, "sources": v.sources, "within": round(v.within, 6),
                       "median_abs_error": round(v.median_abs_error, 6)},
    }


def write_fit(path: Path, doc: Mapping) -> None:
    header = "".join(f"# {line}\n" for line in (  # i18n: not text
        "Written by `python -m budget.calibrate --write` (do not edit by hand: tests/test_calibrate.py",  # i18n: not text
        "refits the rows and compares). The step-time model of budget/calibrate.py, its coefficients",  # i18n: not text
        "fitted on catalogs/throughput_runs.yaml, and its leave-one-source-out error."))  # i18n: not text
    path.write_text(header + yaml.safe_dump(dict(doc), sort_keys=False, allow_unicode=True), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:      # pragma: no cover - a report for people
    import sys
    argv = list(sys.argv[1:] if argv is None else argv)
    rows, left = fit_rows()
    coef = fit(rows)
    v = cross_validate(rows)
    if "--write" in argv:
        write_fit(data_dir("catalogs") / "efficiency.yaml", fit_document(rows, dt.date.today()))
    for name, c in zip(coefficient_names(), coef):
        print(f"{name:16} {c:.4f}")    # i18n: not text
    print(f"rows {len(rows)} (left out {len(left)}); in-sample within ±10%: {v.in_sample_within:.0%}")  # i18n: not text
    print(f"leave-one-source-out: {v.held_out} rows of {v.sources} sources, within ±10%: "  # i18n: not text
          f"{v.within:.0%}, median |error| {v.median_abs_error:.1%}")  # i18n: not text
    for s, (n, w) in v.per_source.items():
        print(f"  {s:28} {n:3} {w:.0%}")  # i18n: not text
    return 0


if __name__ == "__main__":      # pragma: no cover
    raise SystemExit(main())
