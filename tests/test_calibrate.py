"""The step-time model fitted on published throughput rows (budget/calibrate.py, issue 13): given
the rows in catalogs/throughput_runs.yaml, the fit predicts the sources it has not seen as well
as the README says, and its terms are the planner's own."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest

from budget.plan import calibrate as C

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def rows(catalog):
    used, left = C.fit_rows(catalog)
    return used, left


def test_most_published_rows_can_be_planned(rows):
    used, left = rows
    assert len(used) >= 120
    # what is left out, and why: FP8 rows (the fit is BF16), shapes the sources do not give
    assert {why for _, why in left} <= {"fp8", "no tokens/s", "no architecture", "layout not published"} | {
        why for _, why in left if "attention_heads" in why}
    # Llama 1 gives no TP or PP degree: planned as plain DP over 2,048 GPUs it would contradict its paper
    assert ("llama1-65b-2048gpu", "layout not published") in left


def test_cross_validated_error_is_the_one_the_readme_states(rows):
    """Leave one source out: the README's figures are the computed ones."""
    v = C.cross_validate(rows[0])
    stated = re.search(r"within\s+±10% for (\d+)% of (\d+) held-out rows\s+of (\d+) sources\s+"
                       r"\(median error ([\d.]+)%\)", README)
    assert stated, "README states the cross-validated error"
    assert int(stated.group(1)) == round(100 * v.within)
    assert int(stated.group(2)) == v.held_out
    assert int(stated.group(3)) == v.sources
    assert float(stated.group(4)) == round(100 * v.median_abs_error, 1)


def test_the_fit_beats_one_reference_efficiency(rows, catalog):
    """Held out, the fit puts more rows within ±10% than today's model (catalog typical MFU ×
    layout efficiency ÷ 0.82) does on rows it was partly set from."""
    v = C.cross_validate(rows[0])
    assert v.within >= 0.6 and v.median_abs_error <= 0.08


@pytest.mark.parametrize("row_id, published_tokens_per_gpu_s", [
    # NVIDIA DGX Cloud benchmarking (NeMo, H100): GPT-3 175B on 128 GPUs, 8.309 s per step
    ("dgxc-gpt3-175b-bf16-128gpu", None),
    # Korthikanti et al. 2022 Table 5: 530B, selective recomputation and SP
    ("korthikanti22-530b-selective-sp", None),
])
def test_held_out_published_rows_within_ten_percent(rows, row_id, published_tokens_per_gpu_s):
    used = rows[0]
    row = next(r for r in used if r.id == row_id)
    coef = C.fit([r for r in used if r.source_id != row.source_id])
    assert C.predict(coef, row) == pytest.approx(row.tokens_per_gpu_s, rel=C.TOLERANCE)


def test_terms_are_the_planners_items(rows, catalog):
    """A row's matmul term is its hardware FLOPs per GPU per step over the BF16 peak: for the
    DGX Cloud GPT-3 row, 6·(N − lookup)·tokens per GPU ÷ 989 TFLOPS, times 1 + the bubble."""
    from budget.plan.plan import build_plan
    from budget.inputs.options import parse_scenario
    raw = next(r for r in C.published_rows() if r["id"] == "dgxc-gpt3-175b-bf16-128gpu")
    plan = build_plan(parse_scenario(C.row_scenario(raw, catalog), "x.yaml", catalog), catalog, "x")
    v = plan.values
    row = next(r for r in rows[0] if r.id == raw["id"])
    per_gpu = v["global_batch_tokens"] / v["gpu_count"]
    matmul_s = (v["flops_per_token_with_attention"] - v["attention_flops_per_token"]) * per_gpu / 989e12
    hopper = list(C.ARCHITECTURES).index("hopper")
    assert row.features[hopper] == pytest.approx((1 + v["bubble_fraction"]) * matmul_s, rel=1e-12)
    assert row.fixed_s == pytest.approx(v["pp_comm_s"] + v["cp_comm_s"] + v["ep_comm_s"], rel=1e-12)


def test_fit_is_non_negative_and_recovers_known_coefficients():
    """On rows made from known coefficients the fit returns them (the least squares is exact)."""
    truth = (1.4, 1.7, 0.6, 0.5, 2.0, 0.1, 0.04, 0.2, 2.5)
    made = []
    for i in range(40):
        f = tuple(((i * 7 + j * 3) % 11 + 1) / 10 * (1 if j >= 3 or j == i % 3 else 0) for j in range(9))
        step = sum(c * x for c, x in zip(truth, f)) + 0.01 * (i % 5)
        made.append(C.Row(f"r{i}", f"s{i % 6}", list(C.ARCHITECTURES)[i % 3], 1000 / step, 1000.0, f,
                          0.01 * (i % 5)))
    coef = C.fit(made)
    assert coef == pytest.approx(truth, rel=1e-9)
    assert all(c >= 0 for c in coef)


def test_one_run_on_an_unusual_cluster_does_not_steer_the_fit():
    """Huber weights: a row 60% slower than the others' coefficients predict (BloombergGPT's
    AWS cluster is such a run) moves the fit by a fraction of what plain least squares would."""
    truth = (1.4, 1.7, 0.6, 0.5, 2.0, 0.1, 0.04, 0.2, 2.5)

    def made(i, slow=1.0):
        f = tuple(((i * 7 + j * 3) % 11 + 1) / 10 * (1 if j >= 3 or j == i % 3 else 0) for j in range(9))
        step = sum(c * x for c, x in zip(truth, f)) * slow
        return C.Row(f"r{i}", f"s{i % 6}", list(C.ARCHITECTURES)[i % 3], 1000 / step, 1000.0, f, 0.0)

    rows = [made(i) for i in range(40)] + [made(40, slow=1.6)]
    robust = C.fit(rows)
    plain_delta = C.HUBER_DELTA
    try:
        C.HUBER_DELTA = float("inf")
        plain = C.fit(rows)
    finally:
        C.HUBER_DELTA = plain_delta
    def worst_error(coef):     # on the 40 ordinary rows
        return max(abs(C.predict(coef, r) / r.tokens_per_gpu_s - 1) for r in rows[:40])
    assert worst_error(robust) < worst_error(plain) / 2          # 0.9% against 2.9%
    assert worst_error(robust) < 0.015


def _catalog_coefficients(fit) -> tuple[float, ...]:
    return (tuple(fit.matmul_factor[a].value if a in fit.matmul_factor else 0.0 for a in C.ARCHITECTURES)
            + (fit.width_factor.value, fit.attention_factor.value, fit.dp_exposed.value,
               fit.zero3_exposed.value, fit.immaturity_factor.value, fit.attention_immaturity_factor.value))


def test_catalog_coefficients_are_the_fit(rows, catalog):
    """catalogs/efficiency.yaml is what `python -m budget.plan.calibrate --write` gives on today's rows:
    nobody tuned a coefficient by hand, and the stated error is the computed one."""
    fit = catalog.efficiency
    assert _catalog_coefficients(fit) == pytest.approx(C.fit(rows[0]), rel=1e-5, abs=1e-6)
    assert fit.immaturity_cap_years.value == C.IMMATURITY_CAP_YEARS
    v = C.cross_validate(rows[0])
    assert (fit.validation.held_out, fit.validation.sources) == (v.held_out, v.sources)
    assert fit.validation.within == pytest.approx(v.within, abs=1e-6)
    assert fit.rows == len(rows[0])


def test_the_planner_steps_as_the_fit_predicts(rows, catalog):
    """One definition: for every row, the plan's fitted_step_s (the workbook's formula, with the
    catalog's coefficients) is the fit's Σ coefficient × term + the fixed seconds."""
    from budget.plan.plan import build_plan
    from budget.inputs.options import parse_scenario
    coef = _catalog_coefficients(catalog.efficiency)
    raw = {r["id"]: r for r in C.published_rows()}
    for row in rows[0][::9]:
        scenario = C.row_scenario(raw[row.id], catalog)
        scenario["efficiency"]["fitted"] = {}          # the catalog's coefficients, all of them
        v = build_plan(parse_scenario(scenario, "x.yaml", catalog), catalog, row.id).values
        expected = sum(c * f for c, f in zip(coef, row.features)) + row.fixed_s
        assert v["fitted_step_s"] == pytest.approx(expected, rel=1e-9), row.id
        assert v["effective_mfu"] == v["fitted_mfu"]


def test_an_unmeasured_architecture_is_scaled_from_the_reference(catalog):
    """A B200 has no published rows: its matmul factor is the H100's × 0.43 ÷ the B200's typical MFU."""
    from budget.plan.plan import build_plan
    from budget.inputs.options import parse_scenario
    s = {"name": "b200", "model": {"preset": "gpt3-175b"}, "data": {"train_tokens": "300B"},
         "hardware": {"accelerator": "nvidia_b200", "gpu_count": 512}, "prices": {"per_gpu_hour": 4.0},
         "efficiency": {"model": "fitted"}}
    v = build_plan(parse_scenario(s, "x.yaml", catalog), catalog, "b200").values
    h100, b200 = catalog.accelerator("nvidia_h100_sxm"), catalog.accelerator("nvidia_b200")
    expected = catalog.efficiency.matmul_factor["hopper"].value * h100.typical_mfu.value / b200.typical_mfu.value
    assert v["architecture_matmul_factor"] == pytest.approx(expected, rel=1e-12)
    # 2027-01-04 start, Blackwell shipped 2024-11: 2.2 years of software, past the 2-year cap
    assert v["architecture_years"] == pytest.approx((dt.date(2027, 1, 4) - dt.date(2024, 11, 1)).days / 365.25)
