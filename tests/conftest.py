"""Session fixtures: the catalog, the seed plans, and the LibreOffice recalculation oracle.

The oracle writes every workbook the session checks, including ones edited the way a reviewer
would edit them, and recalculates them all in ONE LibreOffice call (start-up dominates: one
call for 20 books takes about as long as 4 separate ones).
"""

from __future__ import annotations

import sys

import openpyxl
import pytest

import support
from budget.inputs.catalog import load_catalog
from budget.sheets.book import write_workbook
from budget.xlsx.recalc import read_values, recalculate
from support import (LLAMA3_405B_16K, SCENARIOS, SEED_A100, SEED_H100, OracleCase, plan_of, raw,
                     require_soffice, with_changes)

sys.addaudithook(support.guard_subprocesses)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Record the running test and whether it is marked office, for support.office_program.
    A hook, not an autouse fixture: a function-scoped fixture is set up after the session and
    module fixtures the test asks for, and those (the oracle) may start LibreOffice."""
    support.running_test(item.nodeid, item.get_closest_marker("office") is not None)
    try:
        return (yield)
    finally:
        support.running_test(None)


@pytest.fixture(scope="session")
def catalog():
    return load_catalog()


@pytest.fixture(scope="session")
def seed_h100(catalog):
    return plan_of(raw(SEED_H100), catalog, "gpt3-175b-h100")


@pytest.fixture(scope="session")
def seed_a100(catalog):
    return plan_of(raw(SEED_A100), catalog, "gpt3-175b-a100")


# --- the oracle's cases ---------------------------------------------------------------------
# Plain cases: a scenario (seed data plus changes) written and recalculated as is.
PLAIN_CASES = {
    "seed-h100": (SEED_H100, {}),
    "seed-a100": (SEED_A100, {}),
    "seed-h100-256": (SEED_H100, {"hardware.gpu_count": 256}),
    "seed-h100-1024": (SEED_H100, {"hardware.gpu_count": 1024, "parallelism.pp": 16}),
    "korthikanti-sp-selective": (SEED_H100, {
        "memory.activation_gb_per_microbatch": None, "parallelism.sequence_parallel": True,
        "parallelism.recompute": "selective", "parallelism.zero_stage": 1,
        "parallelism.micro_batch_size": 2}),
    "zero3-full-recompute": (SEED_H100, {
        "memory.activation_gb_per_microbatch": None, "parallelism.tp": 8, "parallelism.pp": 4,
        "parallelism.zero_stage": 3, "parallelism.recompute": "full",
        "memory.precision": "mixed_bf16_adam8bit", "prices.network": 0.05}),
    "custom-shape-no-staff": (SEED_H100, {
        "model.preset": None, "model.layers": 32, "model.hidden_size": 4096,
        "model.attention_heads": 32, "model.seq_len": 4096, "model.vocab_size": 32000,
        "data.train_tokens": "1T", "hardware.gpu_count": 64, "parallelism.tp": 2,
        "parallelism.pp": 2, "staffing": [], "memory.activation_gb_per_microbatch": None,
        "hardware.effective_tflops": None, "hardware.peak_tflops": None,
        "storage": {}, "sources": {}}),
}

# Layouts chosen by the search: candidate rows on the Parallelism sheet are live formulas too.
_FREE = {"parallelism": {}, "sources": {}, "hardware.effective_tflops": None,
         "hardware.peak_tflops": None, "memory.activation_gb_per_microbatch": None}
PLAIN_CASES.update({
    "search-512": (SEED_H100, {**_FREE, "hardware.gpu_count": 512}),
    "search-deadline-100d": (SEED_H100, {**_FREE, "hardware.gpu_count": None,
                                         "hardware.deadline_days": 100}),
    "search-memory-first": (SEED_H100, {**_FREE, "hardware.gpu_count": None,
                                        "efficiency": {"layout_efficiency": 0.9}}),
    "search-seed-assumptions-1024": (SEED_H100, {"parallelism": {}, "sources": {},
                                                 "hardware.gpu_count": 1024}),
})

# Issue 12's layout dimensions: interleaved 1F1B, context parallelism with ZeRO-3's gathered
# layers, TP across two nodes (pinned), and the search choosing CP for a long sequence.
PLAIN_CASES.update({
    "interleaved-v2": (SEED_H100, {"memory.activation_gb_per_microbatch": None, "parallelism.zero_stage": 1,
                                   "parallelism.virtual_pipeline_stages": 2}),
    "cp4-32k-zero3": (SEED_H100, {"memory.activation_gb_per_microbatch": None, "model.seq_len": 32768,
                                  "data.global_batch_sequences": 96, "parallelism.tp": 8, "parallelism.pp": 8,
                                  "parallelism.cp": 4, "parallelism.zero_stage": 3,
                                  "parallelism.virtual_pipeline_stages": 2}),
    "tp16-across-nodes": (SEED_H100, {"parallelism.tp": 16, "parallelism.pp": 4}),
    "search-cp-32k": (SEED_H100, {**_FREE, "model.seq_len": 32768, "data.global_batch_sequences": 96}),
    "ep8-mixtral": (SEED_H100, {"model": {"preset": "mixtral-8x7b", "seq_len": 4096}, "sources": {},
                                "memory.activation_gb_per_microbatch": None, "hardware.gpu_count": 256,
                                "data.global_batch_sequences": 1024, "parallelism": {
                                    "tp": 1, "pp": 4, "ep": 8, "zero_stage": 1, "recompute": "full",
                                    "sequence_parallel": False, "micro_batch_size": 1}}),
})

# Issue 13's fitted step-time model: chosen by the search on an H100 (fitted architecture), and
# pinned on a B200 (unfitted: the H100's factor scaled by typical MFU; young software).
PLAIN_CASES.update({
    "fitted-search-h100": (SEED_H100, {**_FREE, "hardware.gpu_count": 1024, "efficiency": {"model": "fitted"}}),
    "fitted-b200-selective": (SEED_H100, {**_FREE, "hardware.accelerator": "nvidia_b200", "hardware.gpu_count": 512,
                                          "parallelism": {"tp": 8, "pp": 4, "zero_stage": 1,
                                                          "recompute": "selective", "sequence_parallel": True},
                                          "efficiency": {"model": "fitted"}}),
})

# Schedule, failures, storage and timeline variants.
PLAIN_CASES.update({
    "example-llama3-deadline": (SCENARIOS / "llama3-70b-h100-deadline.yaml", {}),
    "schedule-variant": (SEED_H100, {
        "reliability.checkpoint_interval_steps": 1500, "schedule.start_date": "2026-12-31",
        "storage.dataset_gb": None, "storage.checkpoint_gb": None, "schedule.queue_days": 0,
        "reliability.interruption_rate_per_gpu_hour": 5e-5, "sizing.spare_nodes": 4,
        "schedule.evaluation_weeks": 0}),
    "hostile-text": (SEED_H100, {"name": "<script>x</script> & 'quotes' \"too\"",
                                 "staffing": [{"role": "Lead, \"ML\" & <data>", "headcount": 1,
                                               "monthly_cost": 1000, "months": 1}],
                                 "sources": {}}),
})

# Issue 12: today's shapes. GQA and SwiGLU (Llama 3 70B) on the FLOPs basis with attention;
# Mixtral's MoE with a typed HFU under selective recomputation; a small MLA + MoE shape (DeepSeek-V2
# Lite-like: shared experts, a leading dense layer) counting the full attention matrix.
PLAIN_CASES.update({
    "shape-gqa-swiglu-with-attention": (SEED_H100, {
        "model": {"preset": "llama3-70b"}, "data.train_tokens": "15T",
        "hardware.flops_basis": "with_attention", "memory.activation_gb_per_microbatch": None,
        "parallelism.recompute": "selective", "parallelism.sequence_parallel": True,
        "parallelism.zero_stage": 1, "sources": {}}),
    "shape-moe-hfu": (SEED_H100, {
        "model": {"preset": "mixtral-8x7b", "seq_len": 4096}, "data.global_batch_sequences": 1024,
        "data.train_tokens": "2T", "hardware.effective_tflops": None, "hardware.peak_tflops": None,
        "hardware.hfu": 0.45, "parallelism.recompute": "selective", "hardware.flops_basis": "with_attention",
        "memory.activation_gb_per_microbatch": None, "sources": {}}),
    "shape-mla-moe": (SEED_H100, {
        "model": {"layers": 8, "hidden_size": 2048, "attention_heads": 16, "head_dim": 128,
                  "mla": {"kv_lora_rank": 512, "rope_head_dim": 64, "v_head_dim": 128},
                  "ffn_hidden_size": 10944, "activation": "swiglu", "tied_embeddings": False,
                  "position_embeddings": "rotary", "seq_len": 4096, "vocab_size": 102400,
                  "moe": {"experts": 64, "experts_per_token": 6, "shared_experts": 2,
                          "expert_ffn_hidden_size": 1408, "first_dense_layers": 1}},
        "data.train_tokens": "500B", "hardware.flops_basis": "with_attention",
        "constants.causal_attention_fraction": 1, "hardware.gpu_count": 64, "parallelism.tp": 1,
        "parallelism.pp": 1, "parallelism.zero_stage": 1, "memory.activation_gb_per_microbatch": None,
        "storage": {}, "sources": {}}),
})

# Issue 12: the published runs. DeepSeek-V3 (DualPipe, no dropout, norms and up-projections
# recomputed, uneven stages), Llama 3.1 405B (no dropout, v = 8 one-layer chunks), Korthikanti's
# table without dropout (the attention scores' mask too), and a search that chooses the interleaving.
PLAIN_CASES.update({
    "deepseek-v3-dualpipe": (SCENARIOS / "deepseek-v3-h800.yaml", {}),
    "llama31-405b-interleaved": (SCENARIOS / "llama3.1-405b-h100.yaml", {}),
    "no-dropout-korthikanti": (SEED_H100, {"model.dropout": False, "memory.flash_attention": False,
                                           "memory.activation_gb_per_microbatch": None,
                                           "parallelism.zero_stage": 1}),
    "search-interleaving": (SEED_H100, {**_FREE, "parallelism.search_interleaving": True}),
})

# Issue 13 item 2: a measured pilot (64 GPUs, interleaved, its own batch, a step time) scales the
# efficiency model for the full run: the pilot's figures and the factor are live formulas; with
# the layout searched (the pilot's own given), the candidates' columns carry the factor too.
PLAIN_CASES.update({
    "pilot-calibrated": (SEED_H100, {"hardware.effective_tflops": None, "sources": {},
                                     "calibration": {"gpu_count": 64, "global_batch_sequences": 128,
                                                     "virtual_pipeline_stages": 2, "step_time_s": 10.2}}),
    "search-pilot-calibrated": (SEED_H100, {**_FREE, "calibration": {
        "gpu_count": 64, "tp": 4, "pp": 8, "micro_batch_size": 1, "global_batch_sequences": 128,
        "tokens_per_gpu_second": 400}}),
})

# One workbook per catalog accelerator, so every Catalog row is looked up once.
# The accelerators beyond the seed's GPUs (TPUs, Trainium, Gaudi, the newest NVIDIA and AMD
# parts) plan a small model: a 1.3B GPT shape on 64 of them (TP 4 inside a TPU host of 4,
# ZeRO-1 over DP 16), which fits even the TPU v5e's 16 GB.
SMALL_MODEL_ACCELERATORS = [
    "google_tpu_v4", "google_tpu_v5p", "google_tpu_v5e", "google_tpu_v6e", "aws_trainium2",
    "intel_gaudi3", "nvidia_b300", "nvidia_gb300", "amd_mi355x",
]
ACCELERATOR_IDS = [
    "nvidia_h100_sxm", "nvidia_h200_sxm", "nvidia_h800_sxm", "nvidia_a100_80gb_sxm",
    "nvidia_a100_40gb_sxm", "nvidia_a800_sxm", "nvidia_b100", "nvidia_b200", "nvidia_gb200",
    "amd_mi300x", "amd_mi325x", "huawei_ascend_910b", "nvidia_h20", *SMALL_MODEL_ACCELERATORS,
]
SMALL_MODEL = {
    "model.preset": None, "model.layers": 24, "model.hidden_size": 2048,
    "model.attention_heads": 16, "model.seq_len": 2048, "model.vocab_size": 50257,
    "data.train_tokens": "100B", "hardware.gpu_count": 64, "parallelism.tp": 4,
    "parallelism.pp": 1, "parallelism.zero_stage": 1, "memory.activation_gb_per_microbatch": None,
    "storage": {}, "sources": {}}
for _acc in ACCELERATOR_IDS:
    PLAIN_CASES[f"acc-{_acc}"] = (SEED_H100, {
        **(SMALL_MODEL if _acc in SMALL_MODEL_ACCELERATORS else {}),
        "hardware.accelerator": _acc, "hardware.peak_tflops": None,
        "hardware.effective_tflops": None, "parallelism.tp": 4 if _acc != "nvidia_gb200" else 2})

# Issue 12 item 3, precision: FP8 GEMMs with an MFU typed against BF16, DeepSeek-V3's FP8 memory
# preset (FP32 gradients, BF16 moments), activations cached in FP8, checkpoints without the fp32
# masters; FP4 on a B200 with an MFU against the FP4 peak and weights-only checkpoints.
PLAIN_CASES.update({
    "fp8-deepseek-memory-no-master": (SEED_H100, {
        "hardware.precision": "fp8", "hardware.effective_tflops": None, "hardware.mfu": 0.4,
        "memory.precision": "fp8_deepseek_v3", "memory.activation_gb_per_microbatch": None,
        "parallelism.zero_stage": 1, "storage.checkpoint_format": "no_fp32_master",
        "storage.checkpoint_gb": None, "sources": {}}),
    "fp4-b200-weights-only": (SEED_H100, {
        **SMALL_MODEL, "hardware.accelerator": "nvidia_b200", "hardware.peak_tflops": None,
        "hardware.effective_tflops": None, "hardware.precision": "fp4", "hardware.mfu": 0.2,
        "hardware.mfu_peak": "compute", "storage.checkpoint_format": "weights_only"}),
})

# Issue 13 item 3, failures at scale: Llama 3 405B on 16,384 H100 with asynchronous checkpoints to
# Tectonic's 2 TB/s and with in-memory checkpoints, both with a 15-minute restart.
PLAIN_CASES.update({
    f"failures-16k-{mode}": (SEED_H100, {
        **LLAMA3_405B_16K, "reliability.checkpoint_mode": mode, "reliability.node_replace_minutes": 5,
        **({"storage.write_gb_per_s": 2000, "storage.read_gb_per_s": 2000} if mode == "asynchronous" else {})})
    for mode in ("asynchronous", "in_memory")})

# Issue 27: the README's first command, the bundled example (its base plan; the options are the
# Compare sheet's, recalculated in the package tests): every check passes in LibreOffice too.
PLAIN_CASES["bundled-example"] = (SCENARIOS / "gpt3-175b-h100-searched.yaml", {"options": None})

# Issue 27 item 1: "405B by June 30" written as a date: Llama 3.1 405B over 15T tokens on H100 (the
# published run's storage, stack and memory), the GPU count and layout left to the planner, which
# sizes training to end by 2027-06-30 at the approval percentile, the phases before it counted.
PLAIN_CASES["deadline-date-405b-june-30"] = (SCENARIOS / "llama3.1-405b-h100.yaml", {
    "stages": [], "parallelism": {}, "sources": {}, "hardware.gpu_count": None, "hardware.mfu": None,
    "data.train_tokens": "15T", "schedule.start_date": "2027-01-04", "schedule.deadline": "2027-06-30"})

# Issue 28: the job modes' bundled scenarios — a continued pretraining without de-risking runs, a
# full-weight SFT over epochs, a LoRA on a frozen 70B base (adapters' gradients and optimizer
# states only, 4·N + 6·adapters FLOPs), evaluation on its own GPUs and phases capped at the
# training days — and the LoRA as QLoRA (a 4-bit base with its quantisation constants).
PLAIN_CASES.update({
    "job-continued-pretraining-70b": (SCENARIOS / "llama2-70b-continued-h100.yaml", {}),
    "job-sft-8b": (SCENARIOS / "llama3-8b-sft-h100.yaml", {}),
    "job-lora-70b": (SCENARIOS / "llama3-70b-lora-h100.yaml", {}),
    "job-qlora-70b": (SCENARIOS / "llama3-70b-lora-h100.yaml", {"job.base_weights": "int4"}),
})
# Issue 28: an owned cluster given no rental price (its rental memo lines say so, in words, and
# nothing else breaks), and the yuan plan without its energy keys: China's region inferred from
# the currency, its grid and its electricity price (quoted in US dollars) converted live to CNY (on
# demand: the one-year term's unused hours differ from 0 by float noise in Python, not in LibreOffice).
PLAIN_CASES["owned-no-rental-price"] = (SEED_H100, {"ownership": "owned", "prices.per_gpu_hour": None,
                                                    "sources": {}})
PLAIN_CASES["region-cn-inferred"] = (SCENARIOS / "gpt3-175b-h800-cny.yaml", {"energy": None, "prices.tier": "on_demand"})

# Live edits: (base case, {defined name: new cell value}, the same edit as scenario changes).
EDIT_CASES = {
    # a reviewer switches the seed to in-memory checkpoints with a faster job start
    "edit-checkpoint-in-memory": ("seed-h100", {"checkpoint_mode": "in_memory", "job_startup_minutes": 2}, {
        "reliability.checkpoint_mode": "in_memory", "reliability.job_startup_minutes": 2}),
    "edit-1024-a100-buffer30": ("seed-h100", {
        "gpu_count": 1024, "gpu_type": "nvidia_a100_80gb_sxm", "buffer_rate": 0.30,
        # The seed's 450 TFLOPS is an H100 figure: the reviewer states the utilisation instead.
        "effective_tflops_given": None, "mfu": 450 / 990,
    }, {
        "hardware.gpu_count": 1024, "hardware.accelerator": "nvidia_a100_80gb_sxm",
        "buffer_rate": 0.30,
        # The seed's 990 peak override stays on the H100 row, so the A100 row's datasheet
        # peak applies.
        "hardware.peak_tflops": None, "hardware.effective_tflops": None,
        "hardware.mfu": 450 / 990,
    }),
    "edit-layout-and-prices": ("korthikanti-sp-selective", {
        "tp_size": 8, "pp_size": 4, "zero_stage": 2, "recompute": "full",
        "price_per_gpu_hour": 2.49, "mfu": 0.5, "effective_tflops_given": None,
    }, {
        "parallelism.tp": 8, "parallelism.pp": 4, "parallelism.zero_stage": 2,
        "parallelism.recompute": "full", "prices.per_gpu_hour": 2.49,
        "hardware.effective_tflops": None, "hardware.mfu": 0.5,   # the 990 peak override stays
    }),
}


def _edit_book(source, target, names: dict, edits: dict) -> None:
    """Change input cells the way a reviewer would, keeping every formula."""
    wb = openpyxl.load_workbook(source)
    for name, value in edits.items():
        sheet, coord = names[name].split("!")
        wb[sheet][coord].value = value
    wb.save(target)


@pytest.fixture(scope="session")
def oracle(tmp_path_factory, catalog) -> dict[str, OracleCase]:
    require_soffice()
    folder = tmp_path_factory.mktemp("oracle")
    cases: dict[str, OracleCase] = {}
    for name, (path, changes) in PLAIN_CASES.items():
        plan = plan_of(with_changes(raw(path), changes), catalog, name)
        result = write_workbook(plan)
        book = folder / f"{name}.xlsx"
        book.write_bytes(result.data)
        cases[name] = OracleCase(name, book, plan, result.expected, result.names)
    for name, (base, edits, changes) in EDIT_CASES.items():
        base_case = cases[base]
        book = folder / f"{name}.xlsx"
        _edit_book(base_case.path, book, base_case.names, edits)
        base_path, base_changes = PLAIN_CASES[base]
        plan = plan_of(with_changes(with_changes(raw(base_path), base_changes), changes),
                       catalog, name)
        # Expected values come from the edited scenario's own workbook, matched by name.
        expected_book = write_workbook(plan)
        cases[name] = OracleCase(name, book, plan, expected_book.expected, base_case.names)
    recalculated = recalculate([c.path for c in cases.values()], folder / "recalculated")
    for case in cases.values():
        case.values = read_values(recalculated[case.path])
    return cases
