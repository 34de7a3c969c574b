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

The terms come from the planner's own plan of each row (budget/model/ items), so the fit and
the planner share every definition; only the coefficients are fitted. `python -m budget.calibrate`
prints the fit and the cross-validated error.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Mapping, Sequence

from .calibrate_rows import ARCHITECTURES, TERMS, UNFITTED_REFERENCE, UNKNOWN, Row, architecture_of

TOLERANCE = 0.10               # issue 13: ±10%
HUBER_DELTA = TOLERANCE        # relative step error beyond which a row's pull grows linearly, not squared
IRLS_ROUNDS = 100


# The software stacks a scenario may state (efficiency.stack, issue 25): a factor on the compute time
# (matmul and attention) of each, fitted on its rows; `unknown` (the default) on every source group that
# is not a vendor's tuned benchmark. The reference stack's factor is 1 (the architecture factors are its).
STACKS = ("megatron_nemo_tuned", "inhouse_tuned", "deepspeed", "pytorch_fsdp", "jax_maxtext", "hf_trainer")
REFERENCE_STACK = "megatron_nemo_tuned"
# Source groups whose rows are a vendor's own tuned benchmark of its hardware (NVIDIA's Megatron papers,
# NeMo and DGX Cloud tables; Google's MaxText table for its TPU): left out of `unknown`
VENDOR_GROUPS = ("nvidia", "google_maxtext")
MIN_GROUPS = 2                 # a stack with rows from fewer source groups falls back to `unknown`
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
