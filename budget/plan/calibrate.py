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
    features: tuple[float, ...]    # one per coefficient: α of each architecture, then TERMS (BF16 GEMMs)
    fixed_s: float                 # PP, CP and EP time (coefficient 1)
    group: str = ""                # source group (publisher and software): held out together
    stack: str = "unknown"         # the software stack (issue 25)
    fp8_saving: float = 0.0        # FP8 rows: 1 − BF16 peak ÷ FP8 peak (the share of GEMM time FP8 can save); 0: BF16
    six_n: float = 0.0             # 6·N (active) FLOPs per token: the constant-MFU rule's
    peak_bf16: float = 0.0         # FLOP/s
    typical_ratio: float = 1.0     # the unfitted reference's typical MFU ÷ this accelerator's
    pair_only: bool = False        # one of a BF16/FP8 pair on an accelerator the catalog lacks: ρ's only

    @property
    def measured_step_s(self) -> float:
        return self.tokens_per_gpu_step / self.tokens_per_gpu_s


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
    if str(lay.get("pipeline_schedule") or "").lower().startswith("dualpipe"):
        # DeepSeek-V3's DualPipe: its two chunks per rank are the schedule's own, not interleaving
        par["pipeline_schedule"] = "dualpipe"
    elif lay.get("virtual_pipeline_stages") and int(lay["virtual_pipeline_stages"]) > 1:
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
        acc, ref = catalog.accelerator(row["accelerator"]), catalog.accelerator(UNFITTED_REFERENCE)
        fp8 = "fp8" in str(row.get("precision", "")).lower() and acc.peak_fp8_tflops is not None
        saving = 1 - acc.peak_bf16_tflops.value / acc.peak_fp8_tflops.value if fp8 else 0.0
        used.append(Row(row["id"], row["source_id"], arch, tokens,
                        plan.values["global_batch_tokens"] / plan.values["gpu_count"], features, fixed,
                        group=row.get("source_group") or row["source_id"], stack=row.get("stack") or "unknown",
                        fp8_saving=saving, six_n=plan.values["flops_per_token_6n"],
                        peak_bf16=acc.peak_bf16_tflops.value * 1e12,
                        typical_ratio=ref.typical_mfu.value / acc.typical_mfu.value,
                        pair_only=bool(row.get("pair_only"))))
    return used, left


# The software stacks a scenario may state (efficiency.stack, issue 25): a factor on the compute time
# (matmul and attention) of each, fitted on its rows; `unknown` (the default) on every source group that
# is not a vendor's tuned benchmark. The reference stack's factor is 1 (the architecture factors are its).
STACKS = ("megatron_nemo_tuned", "inhouse_tuned", "deepspeed", "pytorch_fsdp", "jax_maxtext", "hf_trainer")
UNKNOWN = "unknown"
REFERENCE_STACK = "megatron_nemo_tuned"
# Source groups whose rows are a vendor's own tuned benchmark of its hardware (NVIDIA's Megatron papers,
# NeMo and DGX Cloud tables; Google's MaxText table for its TPU): left out of `unknown`
VENDOR_GROUPS = ("nvidia", "google_maxtext")
MIN_GROUPS = 2                 # a stack with rows from fewer source groups falls back to `unknown`
UNFITTED_REFERENCE = "nvidia_h100_sxm"
WIDE_TOLERANCE = 0.20          # issue 25: the share within ±20%
FIT_ROUNDS = 30
_COMPUTE = tuple(range(len(ARCHITECTURES))) + tuple(len(ARCHITECTURES) + TERMS.index(t) for t in
                                                      ("width", "attention", "immaturity", "attention_immaturity"))
_MATMUL = tuple(range(len(ARCHITECTURES))) + tuple(len(ARCHITECTURES) + TERMS.index(t) for t in
                                                     ("width", "immaturity"))


def effective(r: Row, stack_factor: float = 1.0, rho: float = 0.0) -> tuple[float, ...]:
    """The row's features with its stack's factor on the compute terms and, for an FP8 row, the
    GEMM terms × (1 − ρ·saving): ρ is the share of the peak's promise (2× on an H100) that FP8 GEMMs
    realise, fitted on the FP8/BF16 pairs."""
    fp8 = 1 - rho * r.fp8_saving
    return tuple(f * (stack_factor if j in _COMPUTE else 1.0) * (fp8 if j in _MATMUL else 1.0)
                 for j, f in enumerate(r.features))


def fit(rows: Sequence[Row], stack_factors: Mapping[str, float] | None = None, rho: float = 0.0
        ) -> tuple[float, ...]:
    """Robust non-negative least squares on the relative error of the step time (each row weighs
    the same whatever its step length). Robust: Huber weights by iteratively reweighted least
    squares, so a run on a cluster unlike the others (a slower network, an in-house stack) pulls
    the coefficients no harder than HUBER_DELTA of error does, instead of by its square. Each row's
    compute terms are scaled by its stack's factor (`stack_factors`, 1 where not given) and an FP8
    row's GEMM terms by 1 − ρ·saving."""
    import numpy as np
    factors = stack_factors or {}
    X = np.array([[f / r.measured_step_s for f in effective(r, factors.get(r.stack, 1.0), rho)] for r in rows])
    y = np.array([1 - r.fixed_s / r.measured_step_s for r in rows])
    weight = np.ones(len(rows))
    for _ in range(IRLS_ROUNDS):
        coef = _nnls(X * weight[:, None], y * weight)
        residual = np.abs(X @ coef - y)
        new = np.sqrt(np.where(residual <= HUBER_DELTA, 1.0, HUBER_DELTA / np.maximum(residual, 1e-12)))
        if np.allclose(new, weight, rtol=0, atol=1e-10):
            break
        weight = new
    return tuple(float(c) for c in coef)


# Coefficients that are shares (of the DP time not hidden): at most 1, as the planner's inputs are
UPPER = {len(ARCHITECTURES) + TERMS.index("dp_exposed"): 1.0, len(ARCHITECTURES) + TERMS.index("zero3_exposed"): 1.0}


def _nnls(X, y):
    """Least squares with non-negative coefficients, the shares at most 1. Active set: drop negative
    ones, pin those above their bound at it, and refit the rest."""
    import numpy as np
    active = [c for c in range(X.shape[1]) if X[:, c].any()]
    pinned: dict[int, float] = {}
    while True:
        rest = y - sum((X[:, c] * v for c, v in pinned.items()), np.zeros(len(y)))
        coef, *_ = np.linalg.lstsq(X[:, active], rest, rcond=None)
        negative = [c for c, v in zip(active, coef) if v < 0]
        above = [c for c, v in zip(active, coef) if c in UPPER and v > UPPER[c]]
        if not negative and not above:
            out = np.zeros(X.shape[1])
            out[active] = coef
            for c, v in pinned.items():
                out[c] = v
            return out
        if negative:
            active = [c for c in active if c not in negative]
        else:
            pinned.update({c: UPPER[c] for c in above})
            active = [c for c in active if c not in above]


def _measured_step(r: Row) -> float:
    return r.measured_step_s


def predict(coef: Sequence[float], r: Row, stack_factor: float = 1.0, rho: float = 0.0) -> float:
    """Predicted tokens per GPU-second."""
    step = sum(c * f for c, f in zip(coef, effective(r, stack_factor, rho))) + r.fixed_s
    return r.tokens_per_gpu_step / step


def weighted_median(values: Sequence[float], weights: Sequence[float]) -> float:
    """The median with weights (the lower of the two middle values' mean where they tie)."""
    pairs = sorted(zip(values, weights))
    total, run = sum(weights), 0.0
    for i, (v, w) in enumerate(pairs):
        run += w
        if run > total / 2 + 1e-12:
            return v
        if abs(run - total / 2) <= 1e-12:
            return (v + pairs[i + 1][0]) / 2
    return pairs[-1][0]


def group_weights(rows: Sequence[Row]) -> list[float]:
    """Each source group weighs the same, whatever its number of rows."""
    n: dict[str, int] = {}
    for r in rows:
        n[r.group] = n.get(r.group, 0) + 1
    return [1 / n[r.group] for r in rows]


@dataclass(frozen=True)
class Model:
    """The fitted step-time model: coefficients, a compute-time factor per stack, `unknown`'s factor,
    ρ (the share of the FP8 peak's promise FP8 GEMMs realise) and the source groups behind each stack."""
    coef: tuple[float, ...]
    stack_factors: Mapping[str, float]
    unknown: float
    rho: float
    stack_groups: Mapping[str, tuple[str, ...]]
    architectures: tuple[str, ...]          # with rows

    def factor(self, stack: str) -> float:
        """The stack's factor where rows from at least MIN_GROUPS source groups measured it, else `unknown`'s."""
        if stack in self.stack_factors and len(self.stack_groups.get(stack, ())) >= MIN_GROUPS:
            return self.stack_factors[stack]
        return self.unknown

    def coefficients_for(self, r: Row) -> tuple[float, ...]:
        """The coefficients, with an architecture no training row measured scaled from the unfitted
        reference's (hopper) by the two typical MFUs, as the planner does."""
        if r.architecture in self.architectures:
            return self.coef
        k = list(ARCHITECTURES).index(r.architecture)
        c = list(self.coef)
        c[k] = self.coef[list(ARCHITECTURES).index(architecture_of(UNFITTED_REFERENCE))] * r.typical_ratio
        return tuple(c)

    def step_s(self, r: Row, stack: str = UNKNOWN) -> float:
        return r.tokens_per_gpu_step / predict(self.coefficients_for(r), r, self.factor(stack), self.rho)


def _split(coef: Sequence[float], r: Row, rho: float) -> tuple[float, float, float]:
    """(compute seconds at stack factor 1, of which GEMM seconds, the other seconds) of a row."""
    f = effective(r, 1.0, rho)
    compute = sum(coef[j] * f[j] for j in _COMPUTE)
    gemm = sum(coef[j] * f[j] for j in _MATMUL)
    return compute, gemm, sum(c * x for c, x in zip(coef, f)) - compute + r.fixed_s


def fp8_pairs(rows: Sequence[Row]) -> list[tuple[Row, Row]]:
    """(BF16 row, FP8 row) of the same model, GPUs, layout and source: NVIDIA's FP8 tables beside the BF16 ones."""
    by_id = {r.id: r for r in rows}
    return [(by_id[r.id.replace("-fp8-", "-bf16-")], r) for r in rows
            if r.fp8_saving and "-fp8-" in r.id and r.id.replace("-fp8-", "-bf16-") in by_id]


def _rho(coef: Sequence[float], pairs: Sequence[tuple[Row, Row]], factors: Mapping[str, float]) -> float:
    """ρ from each pair: the step saved (1 − FP8 step ÷ BF16 step) over the BF16 step's GEMM share (the
    model's, its stack factor applied) × the saving the FP8 peak promises; the median of the pairs."""
    found = []
    for b, f in pairs:
        compute, gemm, other = _split(coef, b, 0.0)
        s = factors.get(b.stack, 1.0)
        # a fit whose rows leave the pair's architecture no GEMM time says nothing of ρ
        share = s * gemm / (s * compute + other) if s * compute + other > 0 else 0.0
        if share > 0:
            found.append((1 - f.measured_step_s / b.measured_step_s) / (share * f.fp8_saving))
    return statistics.median(found) if found else 0.0


def _rho_of_rows(coef: Sequence[float], rows: Sequence[Row], factors: Mapping[str, float]) -> float:
    """ρ where no FP8/BF16 pair was published (a fold without NVIDIA's tables): from each FP8 row, the
    step it saved against the model's BF16 step at its stack's factor; the median (0 without FP8 rows)."""
    found = []
    for r in rows:
        if r.fp8_saving:
            compute, gemm, other = _split(coef, r, 0.0)
            s = factors.get(r.stack, 1.0)
            found.append((s * compute + other - r.measured_step_s) / (s * gemm * r.fp8_saving))
    return max(0.0, statistics.median(found)) if found else 0.0


def fit_model(rows: Sequence[Row]) -> Model:
    """The coefficients, each stack's factor and ρ, fitted together by alternating: the linear fit
    at the current factors; each stack's factor the median (each source group weighing the same) of
    its rows' measured compute time over the model's at factor 1, the reference stack's set to 1;
    ρ from the FP8/BF16 pairs (without pairs, from the FP8 rows). Then `unknown`: the same median over the rows of every group that is
    not a vendor's tuned benchmark."""
    pairs = fp8_pairs(rows)
    rows = [r for r in rows if not r.pair_only]
    stacks = sorted({r.stack for r in rows})
    factors = {s: 1.0 for s in stacks}
    rho = 0.0
    coef = fit(rows, factors, rho)
    for _ in range(FIT_ROUNDS):
        # each stack's factor from all its rows (an FP8 row's at the pairs' ρ); without pairs, from its
        # BF16 rows where it has any, so that its FP8 rows are left to explain ρ
        ratios = {s: _ratios([r for r in rows if r.stack == s and (pairs or not r.fp8_saving)]
                             or [r for r in rows if r.stack == s], coef, rho) for s in stacks}
        new = {s: weighted_median(*ratios[s]) for s in stacks if ratios[s][0]}
        norm = new.get(REFERENCE_STACK, 1.0)
        new = {s: v / norm for s, v in new.items()}
        new_rho = _rho(coef, pairs, new) if pairs else _rho_of_rows(coef, rows, new)
        done = all(abs(new[s] - factors.get(s, 1.0)) < 1e-9 for s in new) and abs(new_rho - rho) < 1e-9
        factors, rho = {**factors, **new}, new_rho
        coef = fit(rows, factors, rho)
        if done:
            break
    general = [r for r in rows if r.group not in VENDOR_GROUPS]
    unknown = weighted_median(*_ratios(general, coef, rho)) if general else 1.0
    groups = {s: tuple(sorted({r.group for r in rows if r.stack == s})) for s in stacks}
    return Model(tuple(coef), dict(factors), unknown, rho, groups,
                 tuple(a for a in ARCHITECTURES if any(r.architecture == a for r in rows)))


def _ratios(rows: Sequence[Row], coef: Sequence[float], rho: float) -> tuple[list[float], list[float]]:
    """Each row's measured compute seconds (the step less the model's communication) over the model's
    compute seconds at factor 1, and its weight (each source group weighing the same)."""
    values, weights = [], []
    for r, w in zip(rows, group_weights(rows)):
        compute, _, other = _split(coef, r, rho)
        if compute > 0:
            values.append((r.measured_step_s - other) / compute)
            weights.append(w)
    return values, weights


def implied_mfu(r: Row) -> float:
    """The row's MFU on the rule of thumb's basis: 6·N per token against the BF16 peak."""
    return r.tokens_per_gpu_s * r.six_n / r.peak_bf16


def constant_mfu_step_s(r: Row, mfu: float) -> float:
    """The step time the constant-MFU rule (6·N·D ÷ (BF16 peak × MFU)) gives the row."""
    return r.tokens_per_gpu_step * r.six_n / (r.peak_bf16 * mfu)


@dataclass(frozen=True)
class Scores:
    """Held-out errors of one rule: relative error of the predicted step time (= GPU-hours) against the
    published, + = the prediction is slower (more GPU-hours) than the run."""
    errors: tuple[float, ...]
    weights: tuple[float, ...]       # each source group weighing the same

    @property
    def median_abs(self) -> float:
        return statistics.median(abs(e) for e in self.errors)

    @property
    def within(self) -> float:
        return _share(self.errors, WIDE_TOLERANCE)

    @property
    def median_abs_by_group(self) -> float:
        return weighted_median([abs(e) for e in self.errors], self.weights)

    @property
    def within_by_group(self) -> float:
        return sum(w for e, w in zip(self.errors, self.weights) if abs(e) <= WIDE_TOLERANCE + 1e-12) / sum(self.weights)


@dataclass(frozen=True)
class Validation:
    """Rows held out by source group (no group's rows in both the fit and the test)."""
    groups: tuple[str, ...]
    rows: tuple[Row, ...]            # the held-out rows, in the order of the errors
    unknown: Scores                  # the P50 with stack `unknown`
    typed: Scores                    # the P50 with each row's stack (falling back to `unknown`)
    constant: Scores                 # constant MFU = the median implied MFU of the training folds
    constant_030: Scores             # constant MFU 0.30
    constants: Mapping[str, float]   # group -> the training folds' median implied MFU
    in_sample_unknown: Scores
    in_sample_typed: Scores
    not_held_out: Mapping[str, float] = None   # group -> median error under the unmeasured-architecture rule

    def per_group(self, scores: Scores) -> dict[str, Scores]:
        out: dict[str, list[float]] = {}
        for r, e in zip(self.rows, scores.errors):
            out.setdefault(r.group, []).append(e)
        return {g: Scores(tuple(e), tuple(1.0 for _ in e)) for g, e in out.items()}

    @property
    def held_out(self) -> int:
        return len(self.rows)


def _scores(errors: Sequence[float], rows: Sequence[Row]) -> Scores:
    return Scores(tuple(errors), tuple(group_weights(rows)))


def cross_validate(rows: Sequence[Row]) -> Validation:
    """Hold out one source group at a time, fit the rest, and score the group's rows: with stack
    `unknown` (the P50 a scenario without a stack gets), with the rows' own stacks, and with the
    constant-MFU rule (the training folds' median implied MFU; and 0.30)."""
    held, unknown, typed, const, c030, constants, skipped = [], [], [], [], [], {}, {}
    for group in sorted({r.group for r in rows}):
        train = [r for r in rows if r.group != group]
        test = [r for r in rows if r.group == group and not r.pair_only]
        train_rows = [r for r in train if not r.pair_only]
        m = fit_model(train)
        if not {r.architecture for r in test} <= set(m.architectures):
            # no other group measured its architecture: its α would be the unmeasured-architecture
            # rule's (scaled from the H100's by typical MFU), scored apart
            skipped[group] = statistics.median(m.step_s(r, UNKNOWN) / r.measured_step_s - 1 for r in test)
            continue
        c = statistics.median(implied_mfu(r) for r in train_rows)
        constants[group] = c
        for r in test:
            held.append(r)
            unknown.append(m.step_s(r, UNKNOWN) / r.measured_step_s - 1)
            typed.append(m.step_s(r, r.stack) / r.measured_step_s - 1)
            const.append(constant_mfu_step_s(r, c) / r.measured_step_s - 1)
            c030.append(constant_mfu_step_s(r, 0.30) / r.measured_step_s - 1)
    whole = fit_model(rows)
    rows = [r for r in rows if not r.pair_only]
    inside_u = [whole.step_s(r, UNKNOWN) / r.measured_step_s - 1 for r in rows]
    inside_t = [whole.step_s(r, r.stack) / r.measured_step_s - 1 for r in rows]
    return Validation(tuple(sorted({r.group for r in held})), tuple(held), _scores(unknown, held),
                      _scores(typed, held), _scores(const, held), _scores(c030, held), constants,
                      _scores(inside_u, rows), _scores(inside_t, rows), skipped)


def _share(errors: Sequence[float], tolerance: float = TOLERANCE) -> float:
    return sum(abs(e) <= tolerance + 1e-12 for e in errors) / len(errors)


# --- from step time to card-hours (issue 25) ------------------------------------------------

WALL_CLOCK, THROUGHPUT_DERIVED = "wall_clock", "throughput_derived"
MATURITY_LEVELS = ("first_run", "some_runs", "tuned_many_runs")


@dataclass(frozen=True)
class FullRun:
    """A published full run as the allowance fit sees it: its published GPU-hours, what kind of figure
    they are, the team's maturity, and the planner's step-time GPU-hours at the run's own published
    throughput and its calendar stretch for the modelled failures and rollbacks."""
    id: str
    kind: str
    maturity: str
    published_gpu_hours: float
    step_gpu_hours: float
    stretched: float                 # failure-stretched training days ÷ step-time days
    rollback: float                  # rollback days ÷ step-time days

    @property
    def stretch(self) -> float:
        """(Failure-stretched + rollback days) ÷ step-time days: the modelled card-hours' multiple."""
        return self.stretched + self.rollback

    @property
    def over_step(self) -> float:
        """Published ÷ step-time GPU-hours."""
        return self.published_gpu_hours / self.step_gpu_hours

    @property
    def allowance(self) -> float:
        """What the run spent beyond step time, the modelled failures and rollbacks, as a share of its
        failure-stretched training (the planner's card-hours: step × (stretched × (1 + a) + rollback))."""
        return (self.published_gpu_hours / self.step_gpu_hours - self.rollback) / self.stretched - 1

    def card_gpu_hours(self, allowance: float) -> float:
        return self.step_gpu_hours * (self.stretched * (1 + allowance) + self.rollback)


def _with_changes(data: dict, changes: Mapping) -> dict:
    import copy
    out = copy.deepcopy(data)
    for path, value in (changes or {}).items():
        node = out
        *parents, last = path.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return out


def full_runs(catalog: Catalog | None = None) -> list[FullRun]:
    """catalogs/full_runs.yaml, each run planned at its published utilisation."""
    from .plan import build_plan
    from ..inputs.options import parse_scenario
    catalog = catalog or load_catalog()
    doc = yaml.safe_load((data_dir("catalogs") / "full_runs.yaml").read_text(encoding="utf-8"))
    out = []
    for run in doc["runs"]:
        if run.get("scenario_file"):
            data = yaml.safe_load((data_dir("catalogs").parent / run["scenario_file"]).read_text(encoding="utf-8"))
        else:
            data = {"name": run["model"], "prices": {"per_gpu_hour": 1.0}, **run["scenario"]}
        data = _with_changes(data, run.get("changes") or {})
        data.pop("sources", None)
        v = build_plan(parse_scenario(data, f"{run['id']}.yaml", catalog), catalog, run["id"]).values
        out.append(FullRun(run["id"], run["kind"], run["maturity"], float(run["published_gpu_hours"]),
                           v["gpu_hours"], v["stretched_training_days"] / v["train_days"],
                           v["rollback_days"] / v["train_days"]))
    return out


def allowances(runs: Sequence[FullRun]) -> dict[str, tuple[float, str]]:
    """The allowance per maturity level, fitted on the wall-clock runs: the mean of the level's runs
    where there are at least two, else the mean of all (`unknown`: always all), with what it rests on."""
    wall = [r for r in runs if r.kind == WALL_CLOCK]
    pooled = statistics.fmean(r.allowance for r in wall) if wall else 0.0
    out = {UNKNOWN: (pooled, f"mean of {len(wall)} wall-clock runs")}  # i18n: not text
    for level in MATURITY_LEVELS:
        own = [r for r in wall if r.maturity == level]
        if len(own) >= 2:
            out[level] = (statistics.fmean(r.allowance for r in own), f"mean of {len(own)} {level} runs")  # i18n: not text
        else:
            out[level] = (pooled, f"{len(own)} {level} run(s): the pooled mean (assumed)")  # i18n: not text
    return out


def allowance_errors(runs: Sequence[FullRun]) -> dict[str, float]:
    """Leave one run out: each wall-clock run's card-hours (step × (stretched × (1 + the allowance of its
    maturity fitted without it) + rollback)) against its published figure, − 1."""
    out = {}
    for r in runs:
        if r.kind != WALL_CLOCK:
            continue
        others = [o for o in runs if o.id != r.id]
        a = allowances(others)[r.maturity][0]
        out[r.id] = r.card_gpu_hours(a) / r.published_gpu_hours - 1
    return out


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
