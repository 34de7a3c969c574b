"""The step-time model fitted on published throughput rows (budget/plan/calibrate.py, issues 13 and
25): given the rows in catalogs/throughput_runs.yaml, the fit predicts the source groups it has not
seen better than the constant-MFU rule, its stacks, FP8 and DualPipe terms follow the published
figures, its terms are the planner's own, and a plan's card-hours follow the published full runs."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import statistics
from pathlib import Path

import pytest

from budget.inputs.catalog import EfficiencyFit
from budget.plan import calibrate as C
from support import SCENARIOS, plan_of, raw

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
DEEPSEEK_V3_GPU_HOURS = 2.664e6     # DeepSeek-V3 report Table 1, pre-training (180K per trillion tokens)
LLAMA31_405B_GPU_HOURS = 30.84e6    # meta-llama/llama-models MODEL_CARD.md, Llama 3.1 405B


@pytest.fixture(scope="module")
def rows(catalog):
    used, left = C.fit_rows(catalog)
    return used, left


@pytest.fixture(scope="module")
def validation(rows):
    return C.cross_validate(rows[0])


@pytest.fixture(scope="module")
def runs(catalog):
    return C.full_runs(catalog)


@pytest.mark.slow
def test_most_published_rows_can_be_planned(rows):
    used, left = rows
    assert len(used) >= 170
    # what is left out, and why: shapes or throughputs the sources do not give (FP8 rows are in: issue 25)
    assert {why for _, why in left} <= {"no tokens/s", "no architecture", "layout not published"} | {
        why for _, why in left if "is incomplete" in why}
    # Llama 1 gives no TP or PP degree: planned as plain DP over 2,048 GPUs it would contradict its paper
    assert ("llama1-65b-2048gpu", "layout not published") in left
    ids = {r.id for r in used}
    assert "deepseek-v3-2048-h800" in ids and sum(r.fp8_saving > 0 for r in used) >= 30


def test_every_row_has_a_stack_and_a_source_group():
    """Issue 25: each published row says its stack (from its software, stack_basis saying how) and the
    source group it is held out with; NVIDIA's Megatron papers, NeMo and DGX Cloud tables are one group."""
    allowed = set(C.STACKS)
    for r in C.published_rows():
        assert r["stack"] in allowed and r["stack_basis"], r["id"]
        assert r["source_group"], r["id"]
    groups = {r["source_id"]: r["source_group"] for r in C.published_rows()}
    assert {groups[s] for s in ("narayanan2021_sc21", "korthikanti2022", "nemo_perf_summary_2407",
                                "nvidia_dgxc_benchmarking", "nemotron4_15b")} == {"nvidia"}


@pytest.mark.slow
def test_held_out_p50_beats_the_constant_mfu_rule(validation):
    """Issue 25's criterion: rows held out by source group, scored with stack `unknown`, against the
    constant-MFU rule (6·N·D ÷ (BF16 peak × the training folds' median implied MFU)). With each source
    group weighing the same (NVIDIA's 93 near-identical benchmark rows would otherwise be 64% of the
    test) and with the rows pooled, the P50's median |error| is lower and its share within ±20% higher."""
    u, c = validation.unknown, validation.constant
    assert u.median_abs_by_group < c.median_abs_by_group
    assert u.within_by_group > c.within_by_group
    # rows pooled as well
    assert u.median_abs < c.median_abs and u.within > c.within
    # and far better than the 0.30 rule of thumb
    assert u.median_abs_by_group < validation.constant_030.median_abs_by_group
    assert len(validation.groups) >= 9 and validation.held_out >= 140


@pytest.mark.slow
def test_readme_states_the_computed_held_out_figures(validation):
    """The README's held-out figures (each group alike, and rows pooled) are the computed ones."""
    def pct(x):
        return f"{100 * x:.1f}%"
    section = README[README.index("How far to trust that"):]
    for name in ("unknown", "constant", "constant_030", "typed"):
        s = getattr(validation, name)
        assert f"{pct(s.median_abs_by_group)} / {100 * s.within_by_group:.0f}%" in section, name
        assert f"{pct(s.median_abs)} / {100 * s.within:.0f}%" in section, name
    stated = re.search(r"(\d+) held-out rows of (\d+) source groups", section)
    assert stated and (int(stated.group(1)), int(stated.group(2))) == (validation.held_out, len(validation.groups))


@pytest.mark.slow
def test_catalog_holds_the_held_out_errors_per_group(catalog, validation):
    """catalogs/efficiency.yaml's validation block carries every held-out error, per source group, as
    the learnt range (issue 25 item 4) reads them: predicted ÷ published GPU-hours − 1, stack unknown."""
    v = catalog.efficiency.validation
    assert set(v.held_out_errors) == set(validation.groups)
    assert sum(len(e) for e in v.held_out_errors.values()) == validation.held_out == v.held_out
    for g, errors in v.held_out_errors.items():
        assert errors == pytest.approx([e for r, e in zip(validation.rows, validation.unknown.errors) if r.group == g],
                                       abs=1e-6)
        assert len(v.held_out_stacks[g]) == len(errors)
    assert v.quantiles["pooled"]["p10"] < v.quantiles["pooled"]["p50"] < v.quantiles["pooled"]["p90"]
    assert v.rules["unknown"]["median_abs_error_by_group"] == pytest.approx(validation.unknown.median_abs_by_group,
                                                                             abs=1e-6)


def test_a_stack_measured_by_one_source_group_falls_back_to_unknown(rows):
    m = C.fit_model(rows[0])
    assert m.factor("hf_trainer") == m.unknown == m.factor(C.UNKNOWN)
    assert m.factor(C.REFERENCE_STACK) == 1.0
    # held out the NVIDIA group, Megatron is left with ByteDance's baseline alone: unknown's factor
    without = C.fit_model([r for r in rows[0] if r.group != "nvidia"])
    assert without.factor("megatron_nemo_tuned") == without.unknown
    for stack in ("inhouse_tuned", "deepspeed", "pytorch_fsdp", "jax_maxtext", "megatron_nemo_tuned"):
        assert len(m.stack_groups[stack]) >= C.MIN_GROUPS and m.factor(stack) == m.stack_factors[stack]


@pytest.mark.parametrize("row_id", [
    # BLOOM 176B on 384 A100 (held out with BigScience's group): -9.5%
    "bloom-176b-384gpu",
    # Llama 3 405B on 16,384 H100 (held out with Meta's Llama 3 group): +9.1%
    "llama3-405b-16384gpu",
])
def test_held_out_published_rows_within_ten_percent(rows, row_id):
    used = rows[0]
    row = next(r for r in used if r.id == row_id)
    m = C.fit_model([r for r in used if r.group != row.group])
    assert m.step_s(row, C.UNKNOWN) == pytest.approx(row.measured_step_s, rel=C.TOLERANCE)


def test_terms_are_the_planners_items(rows, catalog):
    """A row's matmul term is its hardware FLOPs per GPU per step over the BF16 peak: for the
    DGX Cloud GPT-3 row, 6·(N − lookup)·tokens per GPU ÷ 989 TFLOPS, times 1 + the bubble."""
    from budget.plan.plan import build_plan
    from budget.inputs.options import parse_scenario
    raw_row = next(r for r in C.published_rows() if r["id"] == "dgxc-gpt3-175b-bf16-128gpu")
    plan = build_plan(parse_scenario(C.row_scenario(raw_row, catalog), "x.yaml", catalog), catalog, "x")
    v = plan.values
    row = next(r for r in rows[0] if r.id == raw_row["id"])
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


def test_stack_factors_and_rho_are_recovered_from_made_rows():
    """Rows made with a stack factor on the compute time and FP8 pairs at a known ρ: the alternating
    fit returns both (the reference stack's factor is 1)."""
    truth = (1.4, 1.7, 0.6, 0.5, 2.0, 0.1, 0.04, 0.2, 2.5)
    made = []
    for i in range(60):
        stack, factor = (("megatron_nemo_tuned", 1.0), ("deepspeed", 1.3), ("pytorch_fsdp", 0.9))[(i // 3) % 3]
        f = tuple(((i * 7 + j * 3) % 11 + 1) / 10 * (1 if j >= 3 or j == i % 3 else 0) for j in range(9))
        for prec, saving in (("bf16", 0.0), ("fp8", 0.5)) if i % 4 == 0 else (("bf16", 0.0),):
            r = C.Row(f"r{i}-{prec}-x", "s", list(C.ARCHITECTURES)[i % 3], 1.0, 1000.0, f, 0.0,
                      group=f"g{i % 6}", stack=stack, fp8_saving=saving)
            step = sum(c * x for c, x in zip(truth, C.effective(r, factor, 0.7)))
            made.append(dataclasses.replace(r, tokens_per_gpu_s=1000.0 / step))
    m = C.fit_model(made)
    assert m.rho == pytest.approx(0.7, rel=1e-6)
    assert m.stack_factors["deepspeed"] == pytest.approx(1.3, rel=1e-6)
    assert m.stack_factors["pytorch_fsdp"] == pytest.approx(0.9, rel=1e-6)


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
    from budget.plan import calibrate_fit      # where fit reads its Huber delta
    plain_delta = calibrate_fit.HUBER_DELTA
    try:
        calibrate_fit.HUBER_DELTA = float("inf")
        plain = C.fit(rows)
    finally:
        calibrate_fit.HUBER_DELTA = plain_delta
    def worst_error(coef):     # on the 40 ordinary rows
        return max(abs(C.predict(coef, r) / r.tokens_per_gpu_s - 1) for r in rows[:40])
    assert worst_error(robust) < worst_error(plain) / 2          # 0.9% against 2.9%
    assert worst_error(robust) < 0.015


def _catalog_coefficients(fit) -> tuple[float, ...]:
    return (tuple(fit.matmul_factor[a].value if a in fit.matmul_factor else 0.0 for a in C.ARCHITECTURES)
            + (fit.width_factor.value, fit.attention_factor.value, fit.dp_exposed.value,
               fit.zero3_exposed.value, fit.immaturity_factor.value, fit.attention_immaturity_factor.value))


@pytest.mark.slow
def test_catalog_coefficients_are_the_fit(rows, catalog, validation, runs):
    """catalogs/efficiency.yaml is what `python -m budget.calibrate --write` gives on today's rows and
    full runs: nobody tuned a coefficient by hand, and the stated errors are the computed ones."""
    fit = catalog.efficiency
    m = C.fit_model(rows[0])
    assert _catalog_coefficients(fit) == pytest.approx(m.coef, rel=1e-5, abs=1e-6)
    assert fit.immaturity_cap_years.value == C.IMMATURITY_CAP_YEARS
    for stack in (C.UNKNOWN, *C.STACKS):
        assert fit.stack_factor[stack].value == pytest.approx(m.factor(stack), abs=1e-6), stack
    assert fit.fp8_gemm_realised.value == pytest.approx(m.rho, abs=1e-6)
    for level, (value, _) in C.allowances(runs).items():
        assert fit.card_allowance[level].value == pytest.approx(value, abs=1e-6), level
    assert (fit.validation.held_out, fit.validation.sources) == (validation.held_out, len(validation.groups))
    assert fit.validation.within == pytest.approx(validation.unknown.within, abs=1e-6)
    assert fit.rows == sum(not r.pair_only for r in rows[0])


def test_the_planner_steps_as_the_fit_predicts(rows, catalog):
    """One definition: for every row, the plan's fitted_step_s (the workbook's formula, with the
    catalog's coefficients) is the fit's Σ coefficient × term (stack unknown's factor on the compute
    terms) + the fixed seconds."""
    from budget.plan.plan import build_plan
    from budget.inputs.options import parse_scenario
    coef = _catalog_coefficients(catalog.efficiency)
    unknown = catalog.efficiency.stack_factor[C.UNKNOWN].value
    raw_rows = {r["id"]: r for r in C.published_rows()}
    for row in rows[0][::9]:
        scenario = C.row_scenario(raw_rows[row.id], catalog)
        scenario["efficiency"]["fitted"] = {}          # the catalog's coefficients, all of them
        v = build_plan(parse_scenario(scenario, "x.yaml", catalog), catalog, row.id).values
        expected = sum(c * f for c, f in zip(coef, C.effective(row, unknown, 0.0))) + row.fixed_s
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


# --- FP8 (issue 25 item 2) ---------------------------------------------------------------------

def _pair_plans(catalog, bf16_id):
    import copy
    from budget.plan.plan import build_plan
    from budget.inputs.options import parse_scenario
    row = next(r for r in C.published_rows() if r["id"] == bf16_id)
    s = C.row_scenario(row, catalog)
    s["efficiency"]["stack"] = row["stack"]
    fp8 = copy.deepcopy(s)
    fp8["hardware"]["precision"] = "fp8"
    return [build_plan(parse_scenario(x, "x.yaml", catalog), catalog, "x").values for x in (s, fp8)]


PAIRS = [(b, f) for b, f in ((r["id"], r["id"].replace("-bf16-", "-fp8-")) for r in C.published_rows())
         if f != b and any(x["id"] == f for x in C.published_rows())]


@pytest.mark.parametrize("bf16_id, fp8_id", PAIRS, ids=[p[1] for p in PAIRS])
def test_fp8_shortens_training_days_by_the_published_factor(catalog, bf16_id, fp8_id):
    """`precision: fp8` divides a plan's training days by the speed-up NVIDIA's DGX Cloud tables (and
    torchtitan's) publish for the same model on the same GPUs (1.28 for torchtitan's 8B, 1.33 for
    NeMo's 8B to 1.60 for 405B): within ±11% of each, never 1 (no credit) nor 2 (the peak's promise)."""
    by_id = {r["id"]: r for r in C.published_rows()}
    published = C.tokens_per_gpu_s(by_id[fp8_id]) / C.tokens_per_gpu_s(by_id[bf16_id])
    bf16, fp8 = _pair_plans(catalog, bf16_id)
    factor = bf16["train_days"] / fp8["train_days"]
    assert factor == pytest.approx(published, rel=0.11)
    assert 1.2 < factor < 1.7
    # only the GEMM time moves: attention, communication and the bubble are the BF16 plan's
    assert fp8["attention_at_peak_s"] == bf16["attention_at_peak_s"]
    assert fp8["fitted_comm_s"] == pytest.approx(bf16["fitted_comm_s"])
    assert fp8["gemm_precision_factor"] == pytest.approx(1 - catalog.efficiency.fp8_gemm_realised.value * 0.5,
                                                         rel=1e-3)


def test_fp8_speed_up_grows_with_the_share_of_gemm_time(catalog):
    """The same ρ gives a larger speed-up where GEMMs are more of the step (GPT-3 175B) than where
    attention at 8K tokens weighs more (Llama 3.1 8B), as the published tables show (1.48 against 1.34)."""
    big = _pair_plans(catalog, "dgxc-gpt3-175b-bf16-128gpu")
    small = _pair_plans(catalog, "dgxc-llama31-8b-bf16-8gpu")
    assert big[0]["train_days"] / big[1]["train_days"] > small[0]["train_days"] / small[1]["train_days"]


# --- the published runs, untyped (issue 25 "Done when") ------------------------------------------

def _untyped(name, **efficiency):
    data = raw(SCENARIOS / name)
    data["hardware"].pop("mfu", None)
    data["hardware"].pop("mfu_peak", None)
    for stage in data.get("stages") or ():
        stage.pop("mfu", None)
    data.pop("sources", None)
    data.setdefault("efficiency", {}).update(efficiency)
    return data


def _held_out_catalog(catalog, rows, group, runs=None, without_run=None):
    """The catalog with the step-time model fitted without `group`'s rows (and the allowance without
    `without_run`): what the planner would say had the run never been published."""
    train = [r for r in rows if r.group != group]
    kept = [r for r in runs or () if r.id != without_run]
    doc = C.fit_document(train, dt.date(2026, 12, 1), kept, validate=False)
    return dataclasses.replace(catalog, efficiency=EfficiencyFit.model_validate(doc))


def test_untyped_deepseek_v3_is_within_20_percent_of_its_step_time_gpu_hours(catalog, rows):
    """DeepSeek-V3 (2,048 H800, FP8, DualPipe) with its utilisation left to the model, its scenario
    stating its stack (in-house, tuned) and maturity: the step-time GPU-hours within ±20% of the
    published 2.664M, which are a rate (180K per trillion tokens), so step time like with like.
    Fitted without DeepSeek's own row too."""
    data = _untyped("deepseek-v3-h800.yaml")
    assert data["efficiency"] == {"stack": "inhouse_tuned", "maturity": "tuned_many_runs"}
    v = plan_of(data, catalog, "deepseek-v3").values
    assert v["gpu_hours"] == pytest.approx(DEEPSEEK_V3_GPU_HOURS, rel=0.20)          # 2.36M, -11.5%
    assert v["fitted_fixed_comm_s"] < 0.01 * v["fitted_step_s"]        # DualPipe hides the all-to-all
    # fitted without DeepSeek's row: stack unknown -9.3%; its in-house factor then rests on MegaScale's
    # and Llama 3's dense runs alone and is 31% too fast for DeepSeek's MoE (the README says so)
    held = _held_out_catalog(catalog, rows[0], "deepseek")
    unknown = plan_of(_untyped("deepseek-v3-h800.yaml", stack="unknown"), held, "deepseek-v3").values
    assert unknown["gpu_hours"] == pytest.approx(DEEPSEEK_V3_GPU_HOURS, rel=0.20)
    inhouse = plan_of(data, held, "deepseek-v3").values
    assert inhouse["gpu_hours"] < 0.8 * DEEPSEEK_V3_GPU_HOURS


def test_untyped_llama31_405b_card_hours_are_within_15_percent_of_its_card(catalog, rows, runs):
    """Llama 3.1 405B in Table 4's three stages with no MFU typed, its scenario stating its stack and
    maturity: the card-hours (step time, modelled failures and rollbacks, and the full-run allowance)
    within ±15% of the model card's 30.84M GPU-hours, a wall-clock card figure: like with like."""
    data = _untyped("llama3.1-405b-h100.yaml")
    v = plan_of(data, catalog, "llama31").values
    assert v["card_gpu_hours"] == pytest.approx(LLAMA31_405B_GPU_HOURS, rel=0.15)
    assert v["gpu_hours"] < v["card_gpu_hours"]
    # held out: without Meta's Llama 3 rows and without the Llama run in the allowance
    held = _held_out_catalog(catalog, rows[0], "meta_llama3", runs, "llama31-405b")
    h = plan_of(data, held, "llama31").values
    assert h["card_gpu_hours"] == pytest.approx(LLAMA31_405B_GPU_HOURS, rel=0.25)


# --- card-hours (issue 25 item 3) ----------------------------------------------------------------

def test_throughput_derived_figures_are_step_time_and_wall_clock_ones_are_not(runs):
    """Published GPU-hours computed from a run's own rate sit within 4% of the planner's step-time
    GPU-hours at that rate; GPUs × wall-clock days sit 13-30% above it."""
    for r in runs:
        if r.kind == C.THROUGHPUT_DERIVED:
            assert r.over_step == pytest.approx(1, abs=0.04), r.id
        else:
            assert 1.1 < r.over_step < 1.3, r.id


def test_allowance_is_fitted_by_maturity_leave_one_run_out(runs):
    a = C.allowances(runs)
    wall = [r for r in runs if r.kind == C.WALL_CLOCK]
    assert a[C.UNKNOWN][0] == pytest.approx(statistics.fmean(r.allowance for r in wall))
    assert a["first_run"][0] == pytest.approx(statistics.fmean(r.allowance for r in wall if r.maturity == "first_run"))
    assert a["first_run"][0] > a[C.UNKNOWN][0] > 0
    errors = C.allowance_errors(runs)
    assert set(errors) == {r.id for r in wall} and max(abs(e) for e in errors.values()) < 0.15


def test_a_typed_plan_keeps_its_step_time_gpu_hours_beside_its_card_hours(seed_h100):
    """Seed 002's 450 TFLOPS plan: 1,944,444 GPU-hours at step time stay that line; the card-hours
    add the modelled failures, the rollbacks and the allowance, and the calendar lengthens by the
    allowance's days."""
    v = seed_h100.values
    assert v["gpu_hours"] == pytest.approx(1_944_444, abs=1)
    stretched = v["stretched_training_days"]
    assert v["card_allowance_days"] == pytest.approx(stretched * v["card_allowance"])
    assert v["card_gpu_hours"] == pytest.approx(
        v["gpu_hours"] * (stretched + v["rollback_days"] + v["card_allowance_days"]) / v["train_days"])
    assert v["card_gpu_hours"] > 1.1 * v["gpu_hours"]


def test_the_billed_only_share_adds_hours_not_days(catalog):
    from support import SEED_H100, with_changes
    base = plan_of(raw(SEED_H100), catalog, "seed").values
    billed = plan_of(with_changes(raw(SEED_H100), {"efficiency.card_allowance_calendar_share": 0.0}),
                     catalog, "seed").values
    assert billed["card_allowance_days"] == 0 and billed["run_days"] < base["run_days"]
    assert billed["card_gpu_hours"] == pytest.approx(base["card_gpu_hours"])
    assert billed["billed_gpu_hours"] == pytest.approx(
        base["billed_gpu_hours"] - base["reserved_gpus"] * base["card_allowance_days"] * 24
        + billed["card_allowance_billed_only_gpu_hours"])


def test_maturity_picks_its_allowance(catalog):
    from support import SEED_H100, with_changes
    fit = catalog.efficiency
    for level in ("unknown", "first_run", "some_runs", "tuned_many_runs"):
        v = plan_of(with_changes(raw(SEED_H100), {"efficiency.maturity": level}), catalog, "seed").values
        assert v["card_allowance"] == fit.card_allowance[level].value
