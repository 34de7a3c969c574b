"""Pilot calibration (issue 13, seed 000 step 6: measure a small pilot, then extrapolate).

A published small run of a stack is the pilot, a published larger run of the same stack the full
run: the plan is given the larger run's GPUs and layout and the pilot's measurement, and must
reproduce the larger run's published throughput within ±10%. The pilot's measured MFU over the
model's own MFU at the pilot's layout is the calibration factor; the full run's MFU is the model's
at the full layout times that factor. Figures and sources: catalogs/throughput_runs.yaml (each
row's quote) and ../notes/issue13_data.md §5.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from budget.core.errors import ScenarioError
from budget.model.model import build_model
from budget.inputs.options import parse_scenario
from support import SCENARIOS, SEED_H100, plan_of, raw, with_changes

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
SECTION = README[README.index("### Calibrating on a pilot"):].split("\n### ")[0]
ROWS = {r["id"]: r for r in yaml.safe_load(
    (Path(__file__).parent.parent / "catalogs" / "throughput_runs.yaml").read_text())["rows"]}


def _narayanan_step_s(row: dict, tflops_per_gpu: float) -> float:
    """Narayanan et al. 2021 Eq. (3): F = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) FLOPs per
    iteration (with the recomputation's forward pass), at the published TFLOP/s per GPU."""
    s, h = row["shape"]["seq_len"], row["shape"]["hidden_size"]
    layers, vocab, batch = row["shape"]["layers"], row["shape"]["vocab_size"], row["global_batch_sequences"]
    flops = 96 * batch * s * layers * h * h * (1 + s / (6 * h) + vocab / (16 * layers * h))
    return flops / (row["gpu_count"] * tflops_per_gpu * 1e12)


def _from_rows(pilot: dict, full: dict, measurement: dict) -> dict:
    """The full run's shape, accelerator, GPUs and layout, and the pilot's GPUs, the layout values
    where they differ, its batch and its measurement."""
    shape = {k: v for k, v in full["shape"].items() if v is not None}
    if shape.get("activation") not in ("gelu", "swiglu"):
        shape.pop("activation", None)
    layout = full["layout"]
    parallelism = {"tp": layout["tp"], "pp": layout["pp"], "cp": layout["cp"] or 1,
                   "micro_batch_size": layout["micro_batch_size"] or 1,
                   "zero_stage": 1 if layout["zero_stage"] is None else layout["zero_stage"],
                   "recompute": layout["recompute"] or "none"}
    if layout["virtual_pipeline_stages"]:
        parallelism["virtual_pipeline_stages"] = layout["virtual_pipeline_stages"]
    if layout["sequence_parallel"] is not None:
        parallelism["sequence_parallel"] = layout["sequence_parallel"]
    calibration = {"gpu_count": pilot["gpu_count"], "global_batch_sequences": pilot["global_batch_sequences"],
                   **measurement}
    for key in ("tp", "pp", "cp", "virtual_pipeline_stages"):
        if pilot["layout"][key] and pilot["layout"][key] != layout[key]:
            calibration[key] = pilot["layout"][key]
    return {"name": full["model"], "model": {**shape, "params": full["params"]},
            "data": {"train_tokens": "1T", "global_batch_sequences": full["global_batch_sequences"]},
            "hardware": {"accelerator": full["accelerator"], "gpu_count": full["gpu_count"]},
            "parallelism": parallelism, "prices": {"per_gpu_hour": 2.0}, "calibration": calibration}


def _llama3() -> dict:
    """scenarios/llama3.1-405b-h100.yaml (Table 4 row 2's layout) with row 1 as the pilot."""
    data = raw(SCENARIOS / "llama3.1-405b-h100.yaml")
    data["hardware"].pop("mfu")
    data.pop("stages")
    data["sources"] = {}
    data["calibration"] = {"gpu_count": 8192, "mfu": 0.43}
    return data


# (pair, pilot row, full row, what is compared, the pilot's and the full run's published figures,
# source, whether it is within ±10%). The measurement compared is per-GPU throughput: step time
# of the global batch, MFU, or TFLOP/s per GPU (as the step time they imply).
PAIRS = [
    ("dgxc-gpt3-175b-128-to-2048", "dgxc-gpt3-175b-bf16-128gpu", "dgxc-gpt3-175b-bf16-2048gpu", "step_time_s",
     8.309, 8.49, "NVIDIA dgxc-benchmarking, NeMo GPT-3 175B BF16 table (TP 4, PP 8, VP 12, 64 micro-batches)",
     "within"),
    ("dgxc-llama31-70b-64-to-2048", "dgxc-llama31-70b-bf16-64gpu", "dgxc-llama31-70b-bf16-2048gpu", "step_time_s",
     14.61, 14.84, "NVIDIA dgxc-benchmarking, NeMo Llama 3.1 70B BF16 table (TP 4, PP 4, CP 2, VP 5)", "within"),
    ("dgxc-llama31-405b-576-to-2304", "dgxc-llama31-405b-bf16-576gpu", "dgxc-llama31-405b-bf16-2304gpu",
     "step_time_s", 17.5, 17.7, "NVIDIA dgxc-benchmarking, NeMo Llama 3.1 405B BF16 table (TP 8, PP 9, CP 2, VP 7)",
     "within"),
    ("narayanan-175b-384-to-1536", "narayanan21-t2-ptdp-174.6b-384gpu", "narayanan21-t2-ptdp-174.6b-1536gpu",
     "tflops_per_gpu", 153, 141, "Narayanan et al. 2021 (SC'21) Table 2, PTD-P, batch 1536 fixed: the bubble grows",
     "within"),
    ("narayanan-530b-560-to-2240", "narayanan21-t2-ptdp-529.6b-560gpu", "narayanan21-t2-ptdp-529.6b-2240gpu",
     "tflops_per_gpu", 171, 159, "Narayanan et al. 2021 (SC'21) Table 2, PTD-P, batch 2240 fixed", "within"),
    ("llama3-405b-8192-to-16384", "llama3-405b-8192gpu", "llama3-405b-16384gpu", "mfu", 0.43, 0.41,
     "Llama Team 2024, 'The Llama 3 Herd of Models', Table 4 rows 1 and 2 (batch 16M tokens fixed)", "within"),
    # DP x3 at TP 8 and a batch growing with DP: the published MFU falls 34.3% -> 30.5%, which
    # the model's exposed DP all-reduce (a ring: nearly independent of DP) does not see
    ("nemotron4-15b-768-to-2304", "nemotron4-15b-768gpu", "nemotron4-15b-2304gpu", "mfu", 0.343, 0.305,
     "NVIDIA 2024, 'Nemotron-4 15B Technical Report' Table 2", "miss"),
    # 1 -> 32 slices of 256 TPU v5e, data parallel over the data-centre network between slices:
    # the model knows neither the slices nor FSDP on TPUs (it predicts 16% MFU where 60% ran)
    ("maxtext-v5e-64b-1-to-32-slices", "maxtext-v5e-64b-1x256", "maxtext-v5e-64b-32x256", "mfu", 0.599, 0.5018,
     "Google MaxText README, v5e 64B on 1 and 32 slices of 256 chips", "miss"),
]


def _case(pilot: dict, full: dict, kind: str, small: float, large: float):
    """The scenario, the full run's published per-GPU figure as the plan states it (step time or
    MFU), and the naive carry-over's prediction of it (the pilot's per-GPU throughput)."""
    if kind == "mfu":
        data = _llama3() if full["id"].startswith("llama3") else _from_rows(pilot, full, {"mfu": small})
        return data, "calibrated_mfu", large, small
    per_gpu = lambda row: row["global_batch_sequences"] / row["gpu_count"]  # noqa: E731
    if kind == "tflops_per_gpu":
        small, large = _narayanan_step_s(pilot, small), _narayanan_step_s(full, large)
    naive = small * per_gpu(full) / per_gpu(pilot)
    return _from_rows(pilot, full, {"step_time_s": small}), "calibrated_step_s", large, naive


@pytest.mark.parametrize("efficiency", ["reference", "fitted"])
@pytest.mark.parametrize("pair, pilot_id, full_id, kind, small, large, source, expect", PAIRS,
                         ids=[p[0] for p in PAIRS])
def test_the_pilot_reproduces_the_published_full_run(catalog, pair, pilot_id, full_id, kind, small, large,
                                                     source, expect, efficiency):
    """With either efficiency model (efficiency.model: the reference layout efficiency, or the
    step-time model fitted on the published rows) the pairs meet ±10% or miss alike."""
    pilot, full = ROWS[pilot_id], ROWS[full_id]
    for row, figure in ((pilot, small), (full, large)):   # the figures are the catalog's rows
        assert figure in (row["measured"]["value"], row["measured"].get("also", {}).get(kind)), row["id"]
    data, figure, published, naive = _case(pilot, full, kind, small, large)
    data.setdefault("efficiency", {})["model"] = efficiency
    plan = plan_of(data, catalog, pair)
    # errors in per-GPU throughput (tokens/s per GPU, as MFU): + = faster than published
    ratio = (lambda x: x / published) if figure == "calibrated_mfu" else (lambda x: published / x)
    error, naive_error = ratio(plan.values[figure]) - 1, ratio(naive) - 1
    assert plan.values["check_pilot_plausible"] == 0
    # never worse than carrying the pilot's per-GPU throughput over (1 point of slack)
    assert abs(error) <= abs(naive_error) + 0.01, (error, naive_error)
    for figure in (error, naive_error) if efficiency == "reference" else ():    # the README states both
        assert f"{figure:+.1%}".replace("-", "\u2212") in SECTION, f"README: {pair} is now {figure:+.1%}"
    if expect == "within":
        assert abs(error) <= 0.10, error
    else:
        assert abs(error) > 0.10, f"{pair} now meets ±10% ({error:+.1%}): mark it within"


def test_the_factor_is_measured_over_predicted_and_scales_the_full_runs_mfu(catalog):
    plan = plan_of(_llama3(), catalog, "llama3")
    v = plan.values
    assert v["pilot_measured_mfu"] == pytest.approx(0.43)
    assert v["calibration_factor"] == pytest.approx(0.43 / v["pilot_effective_mfu"])
    assert v["calibrated_mfu"] == pytest.approx(v["effective_mfu"] * v["calibration_factor"])
    assert v["effective_tflops"] == pytest.approx(v["peak_tflops"] * v["calibrated_mfu"])
    # the pilot is the plan's own formulas at the pilot's values: half the GPUs, half the DP
    assert v["pilot_dp_size"] == v["dp_size"] / 2 == 64
    assert v["pilot_microbatches_per_step"] == 2 * v["microbatches_per_step"]


@pytest.mark.parametrize("measurement", [{"step_time_s": 8.309}, {"tokens_per_gpu_second": 256 * 2048 / 128 / 8.309}])
def test_step_time_and_tokens_per_second_are_the_same_measurement(catalog, measurement):
    pilot, full = ROWS["dgxc-gpt3-175b-bf16-128gpu"], ROWS["dgxc-gpt3-175b-bf16-2048gpu"]
    plan = plan_of(_from_rows(pilot, full, measurement), catalog)
    flops = plan.values["model_flops_per_token"] * 256 * 2048
    assert plan.values["pilot_measured_mfu"] == pytest.approx(flops / (128 * 8.309 * plan.values["peak_tflops"] * 1e12))
    assert plan.values["pilot_measured_step_s"] == pytest.approx(8.309)


def test_without_a_pilot_nothing_moves(seed_h100):
    v = seed_h100.values
    assert v["calibration_factor"] == 1 and v["calibrated_mfu"] == v["effective_mfu"]
    assert v["check_pilot_plausible"] == 0


def test_the_extrapolation_is_live_formulas_of_the_model():
    model = build_model()
    assert model.items["calibration_factor"].expr.refs() >= {"pilot_measured_mfu", "pilot_effective_mfu"}
    assert "calibrated_mfu" in model.items["effective_tflops"].expr.refs()
    # the pilot's MFU is the model's effective_mfu with the pilot's cells in place of the plan's
    assert "pilot_layout_efficiency" in model.items["pilot_effective_mfu"].expr.refs()
    assert model.items["pilot_dp_size"].expr.refs() >= {"pilot_gpu_count_used", "pilot_tp_used"}


def test_tokens_per_node_for_per_gpu_fails_the_plausibility_check(catalog):
    pilot, full = ROWS["dgxc-gpt3-175b-bf16-128gpu"], ROWS["dgxc-gpt3-175b-bf16-2048gpu"]
    per_node = 8 * 256 * 2048 / 128 / 8.309           # 8x the true tokens/s per GPU: MFU 420%
    plan = plan_of(_from_rows(pilot, full, {"tokens_per_gpu_second": per_node}), catalog)
    assert plan.values["check_pilot_plausible"] == 1 and plan.values["warn_pilot_factor"] == 1


def test_an_mfu_against_the_fp8_peak_is_warned_of(catalog):
    """Llama 3's 8K-GPU pilot with its 43% stated against H100's FP8 peak (1,979 TFLOPS) for a BF16
    plan: 21.5%, possible, but the factor falls below 0.5 (caught where the model is not itself
    far too slow: a 2x slip from a factor above 1 stays inside the band)."""
    data = _llama3()
    data["calibration"]["mfu"] = 0.43 * 989 / 1979
    plan = plan_of(data, catalog, "llama3-fp8-slip")
    assert plan.values["check_pilot_plausible"] == 0 and plan.values["warn_pilot_factor"] == 1
    assert plan_of(_llama3(), catalog, "llama3").values["warn_pilot_factor"] == 0


def test_a_stack_the_model_does_not_know_is_warned_of(catalog):
    """MaxText 64B on TPU v5e: the measured 59.9% is 3.8x the reference model's; the extrapolation
    is then the measurement carried over, as the warning says."""
    pilot, full = ROWS["maxtext-v5e-64b-1x256"], ROWS["maxtext-v5e-64b-32x256"]
    data = _from_rows(pilot, full, {"mfu": 0.599})
    data["efficiency"] = {"model": "reference"}      # the fitted model knows TPU v5e: factor 0.8
    v = plan_of(data, catalog).values
    assert v["warn_pilot_factor"] == 1 and v["calibration_factor"] > 3
    assert v["calibrated_mfu"] == pytest.approx(0.599, rel=0.01)


CAL = {"hardware.effective_tflops": None, "hardware.peak_tflops": None, "sources": {}}


def _problem(catalog, changes):
    with pytest.raises(ScenarioError) as err:
        parse_scenario(with_changes(raw(SEED_H100), {**CAL, **changes}), "s.yaml", catalog)
    p = err.value.problems[0]
    return p.at, str(p.what), str(p.how)


@pytest.mark.parametrize("changes, path, words", [
    ({"calibration": {"gpu_count": 64, "step_time_s": 9, "mfu": 0.4}}, "calibration.mfu", "exactly one"),
    ({"calibration": {"gpu_count": 64}}, "calibration", "exactly one"),
    ({"calibration": {"step_time_s": 9}}, "calibration.gpu_count", "GPU count"),
    ({"calibration": {"gpu_count": 64, "mfu": 0.4}, "hardware.mfu": 0.4}, "hardware.mfu", "all-in"),
    ({"calibration": {"gpu_count": 64, "mfu": 0.4}, "parallelism.tp": None}, "calibration.tp", "layout search"),
    ({"calibration": {"gpu_count": 48, "mfu": 0.4}}, "calibration.gpu_count", "does not divide"),
    ({"calibration": {"gpu_count": 64, "mfu": 0.4, "global_batch_sequences": 3}},
     "calibration.global_batch_sequences", "does not split"),
    ({"calibration": {"gpu_count": 64, "mfu": 1.4}}, "calibration.mfu", "at most 1"),
    ({"calibration": {"gpu_count": 64, "mfu": 0.4, "step_time": 9}}, "calibration.step_time", "unknown key"),
])
def test_a_bad_calibration_is_one_clear_problem(catalog, changes, path, words):
    at, what, how = _problem(catalog, changes)
    assert at == path and words in what + how, (at, what, how)


def test_the_report_says_the_utilisation_is_calibrated(catalog):
    from budget.render.report import render_html, render_markdown
    from conftest import PLAIN_CASES
    path, changes = PLAIN_CASES["pilot-calibrated"]
    plan = plan_of(with_changes(raw(path), changes), catalog, "pilot")
    v = plan.values
    md = render_markdown(plan)
    assert (f"ran at {v['pilot_measured_mfu']:.1%} MFU where the model predicts {v['pilot_effective_mfu']:.1%}"
            in md) and f"a factor of {v['calibration_factor']:.3f}" in md
    assert "calibrated on a pilot" in render_html(plan)
    assert "calibrated on a pilot" not in render_markdown(plan_of(raw(SEED_H100), catalog, "seed"))


def test_stages_without_a_typed_mfu_take_the_factor_too(catalog):
    """A stage's MFU left to the model is the model's at the stage's layout times the plan's one
    factor (the pilot is measured once); a stage's typed MFU is all-in and stays as typed."""
    from conftest import PLAIN_CASES
    path, changes = PLAIN_CASES["pilot-calibrated"]
    data = with_changes(raw(path), {**changes, "stages": [
        {"name": "short", "tokens": "1T", "gpu_count": 256}, {"name": "main", "tokens": "1.5T"},
        {"name": "typed", "tokens": "0.5T", "mfu": 0.4}]})
    v = plan_of(data, catalog, "staged").values
    factor = v["calibration_factor"]
    assert factor != pytest.approx(1)
    assert list(v["stage_mfu_used"][:3]) == pytest.approx(
        [v["stage_effective_mfu"][0] * factor, v["stage_effective_mfu"][1] * factor, 0.4])
    assert v["stage_mfu_used"][1] == pytest.approx(v["calibrated_mfu"])
