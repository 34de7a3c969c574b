"""Multi-stage runs (issue 12): `stages:`, each stage the plan at its own values.

Llama 3.1 405B as "The Llama 3 Herd of Models" (arXiv 2407.21783) reports it: Table 4 gives a
layout and a BF16 MFU for each configuration of pre-training — 8,192 GPUs at TP 8 × PP 16 ×
DP 64 (43%), 16,384 GPUs at DP 128 (41%), and the long-context stage at 131,072 tokens with
CP 16 × DP 4 (38%) — and §3.4 the tokens: 15.6T in all, about 800B of them in the long-context
stage. The split between the 8,192- and the 16,384-GPU configurations is not published; the
stages below put the first 2.87T tokens (§3.4.1: the batch doubles to 16M there) on 8,192 GPUs.

Table 4's long-context row lists DP 4, but TP 8 × CP 16 × PP 16 × DP 4 is 8,192 GPUs, not the
row's 16,384, and 4 × 16 sequences × 131,072 tokens is 8.4M tokens, not its 16M per batch. DP 8
makes both hold: the stage keeps 16,384 GPUs and a 16M-token batch (128 sequences).
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import openpyxl
import pytest

from budget.core.errors import ScenarioError
from budget.inputs.importer import import_workbook
from budget.model.model import STAGE_CHECKS
from budget.xlsx.recalc import is_error, read_values, recalculate, relative_difference
from budget.sheets.book import write_workbook
from support import SCENARIOS, named_cells, plan_of, raw, require_soffice

PUBLISHED_GPU_HOURS = 30.84e6      # Llama 3.1 model card: 405B, H100-80GB GPU-hours, all training
PAPER_GOODPUT = 0.90               # §3.3.4: "higher than 90% effective training time"


def llama31(**changes) -> dict:
    """scenarios/llama3.1-405b-h100.yaml: Table 4's three rows as stages, the plan's layout row 2."""
    data = raw(SCENARIOS / "llama3.1-405b-h100.yaml")
    for key, value in changes.items():
        data[key] = value
    return data


@pytest.fixture(scope="module")
def staged(catalog):
    return plan_of(llama31(), catalog, "llama31")


def test_the_stages_add_up_to_the_plan(staged):
    v = staged.values
    assert v["stages_given"] == 3
    assert v["train_flops"] == pytest.approx(math.fsum(v["stage_train_flops"]), rel=1e-12)
    assert v["gpu_hours"] == pytest.approx(math.fsum(v["stage_gpu_hours"]), rel=1e-12)
    assert v["train_days"] == pytest.approx(math.fsum(v["stage_train_days"]), rel=1e-12)
    assert v["train_steps"] == pytest.approx(math.fsum(v["stage_train_steps"]), rel=1e-12)
    # 2.87T tokens in batches of 1,024 × 8,192 (§3.4.1's 8M); 800B in batches of 128 × 131,072
    assert v["stage_train_steps"][0] == pytest.approx(2.87e12 / (1024 * 8192))
    assert v["stage_train_steps"][2] == pytest.approx(0.8e12 / (128 * 131072))
    assert v["stage_dp_size"] == (64.0, 128.0, 8.0)
    assert v["stage_microbatches_per_step"] == (16.0, 16.0, 16.0)      # Table 4 rows 2 and 3: per DP
    assert v["check_stage_tokens"] == 0 and v["check_stage_gpus"] == 0


def test_gpu_hours_against_the_model_card(staged):
    """6·N·D at Table 4's MFUs is 25.9M GPU-hours of compute; at the paper's goodput of at
    least 90% that is about 28.7M, within 10% of the 30.84M the model card counts (which holds
    failures, restarts and everything else counted as training time)."""
    v = staged.values
    n = v["model_params"]
    by_hand = sum(t * 6 * n / (989e12 * mfu) / 3600
                  for t, mfu in ((2.87e12, 0.43), (11.93e12, 0.41), (0.8e12, 0.38)))
    assert v["gpu_hours"] == pytest.approx(by_hand, rel=1e-9)
    assert v["gpu_hours"] / PAPER_GOODPUT == pytest.approx(PUBLISHED_GPU_HOURS, rel=0.10)
    assert v["train_flops"] == pytest.approx(3.8e25, rel=0.01)     # §1: "3.8 × 10^25 FLOPs"


def test_a_stage_is_the_plan_at_its_values(catalog, staged):
    """One definition: each stage's column is the model evaluated at the stage's values, so a
    plan written with the long-context stage's values gives that stage's figures exactly."""
    alone = llama31(stages=[])
    alone["model"] = {**alone["model"], "seq_len": 131072}
    alone["data"] = {"train_tokens": "0.8T", "global_batch_sequences": 128}
    alone["parallelism"] = {**alone["parallelism"], "cp": 16}
    alone["hardware"] = {**alone["hardware"], "mfu": 0.38}
    v, one = staged.values, plan_of(alone, catalog, "long").values
    for name in ("memory_per_gpu_gb", "activations_per_gpu_gb", "dp_size", "microbatches_per_step",
                 "model_flops_per_token", "cp_comm_gb"):
        assert v[f"stage_{name}"][2] == pytest.approx(one[name], rel=1e-12), name
    assert v["stage_train_days"][2] == pytest.approx(one["train_days"], rel=1e-12)
    # CP 16 cuts 131,072 tokens to the 8,192 of the 16K-GPU stage, and ZeRO shards over the same
    # DP × CP = 128 ranks: the long stage needs exactly what that stage needs per GPU
    assert v["stage_memory_per_gpu_gb"][2] == pytest.approx(v["stage_memory_per_gpu_gb"][1], rel=1e-12)


def test_one_stage_is_the_run_without_stages(catalog):
    plain = plan_of(llama31(stages=[]), catalog, "plain").values
    one = plan_of(llama31(stages=[{"name": "all", "tokens": "15.6T"}]), catalog, "one").values
    for name in ("train_days", "gpu_hours", "train_flops", "train_steps", "total_cost", "project_end"):
        assert one[name] == pytest.approx(plain[name], rel=1e-12), name


def test_long_context_counts_its_attention(catalog):
    """On the with_attention basis the long stage's FLOPs per token add 6·L·s·heads·(d + d)·½
    at its 131,072 tokens (issue12_data §3), 2.5 times the 8K stage's attention term."""
    v = plan_of(llama31(hardware={"accelerator": "nvidia_h100_sxm", "gpu_count": 16384,
                                  "flops_basis": "with_attention"}), catalog, "attn").values
    at_8k, at_128k = v["stage_model_flops_per_token"][1], v["stage_model_flops_per_token"][2]
    assert at_128k - at_8k == pytest.approx(6 * 126 * (131072 - 8192) * 128 * 256 * 0.5, rel=1e-12)


def test_a_stage_left_to_the_efficiency_model(catalog):
    data = llama31()
    data["stages"][1] = {"name": "16K GPUs", "tokens": "11.93T"}       # no MFU: the model's
    v = plan_of(data, catalog, "model").values
    assert v["stage_mfu_used"][1] == v["stage_effective_mfu"][1]
    assert v["stage_mfu_used"][0] == 0.43


def test_stage_checks_fail_per_stage(catalog, staged):
    """The bundled scenario passes every stage check: its first stage trains §3.4.1's 8M-token
    batch on 8,192 GPUs (16 micro-batches per rank, 75.0 GB). Table 4 row 1's 16M batch there (32
    micro-batches per rank, 16 + 15/8 in flight) does not fit (83.3 GB, tests/test_layout.py) and
    fails that stage's memory check alone; a batch the long stage's 8 DP ranks cannot split fails
    that stage's batch check, and its interleaving (12.5 micro-batches, not a multiple of PP 16):
    the plan's check counts both."""
    v = staged.values
    assert v["stage_check_memory_fits"] == (0.0, 0.0, 0.0)
    assert v["stage_checks_failing"] == 0 and v["check_stages"] == 0
    data = llama31()
    data["stages"][0] = {**data["stages"][0], "global_batch_sequences": 2048}
    row1 = plan_of(data, catalog, "row1").values
    assert row1["stage_check_memory_fits"] == (1.0, 0.0, 0.0)
    assert row1["stage_checks_failing"] == 1 and row1["check_stages"] == 1
    data = llama31()
    data["stages"][2] = {**data["stages"][2], "global_batch_sequences": 100}
    odd = plan_of(data, catalog, "odd").values
    assert odd["stage_check_batch_divides"] == (0.0, 0.0, 1.0)
    assert odd["stage_check_interleaving"] == (0.0, 0.0, 1.0)
    assert odd["stage_checks_failing"] == 2 and len(STAGE_CHECKS) == 8


def test_a_tokens_what_if_moves_every_stage_in_proportion(staged):
    """The Sensitivity sheet's +10% tokens: the stages train their shares of the new total, and
    the check says the table no longer adds up."""
    inputs = {k: staged.values[k] for k in staged.model.inputs}
    inputs["train_tokens"] *= 1.1
    lookups = {name: t.lookup() for name, t in staged.tables.items()}
    more = staged.model.evaluate(inputs, lookups)
    assert more["train_days"] == pytest.approx(1.1 * staged.values["train_days"], rel=1e-12)
    assert more["stage_tokens_used"][2] == pytest.approx(0.88e12, rel=1e-12)
    assert more["check_stage_tokens"] == 1 and staged.values["check_stage_tokens"] == 0


def test_an_option_keeps_the_stages(catalog):
    from budget.plan.options import build_option_plans
    data = llama31(options=[{"name": "shorter", "stages": [{"name": "all", "tokens": "15.6T"}]}])
    with pytest.raises(ScenarioError) as err:
        build_option_plans(data, catalog)
    assert err.value.problems[0].at == "options[0].stages"


@pytest.mark.parametrize("change, where, says", [
    ({"data": {"train_tokens": "15T", "global_batch_sequences": 2048}}, "stages",
     "the stages add up to 15,600,000,000,000 tokens, not data.train_tokens (15,000,000,000,000)"),
    ({"stages": [{"name": "a", "tokens": "15.6T", "gpu_count": 32768}]}, "stages[0].gpu_count",
     "the stage runs on 32768 GPUs, more than hardware.gpu_count (16384)"),
    ({"stages": [{"name": "a", "tokens": "15.6T", "gpu_count": 8200}]}, "stages[0]",
     "the stage's TP × PP × CP = 128 does not divide its 8200 GPUs"),
    ({"parallelism": {"tp": 8, "pp": 16}}, "stages",
     "a run in stages needs the GPU count and the layout of its plan pinned"),
])
def test_impossible_stages_are_named(catalog, change, where, says):
    data = llama31()
    data.update(change)
    with pytest.raises(ScenarioError) as err:
        plan_of(data, catalog, "bad")
    problem = err.value.problems[0]
    assert problem.at == where
    assert says in problem.what.render()


def test_stages_import_back(tmp_path, catalog, staged):
    path = tmp_path / "staged.xlsx"
    path.write_bytes(write_workbook(staged).data)
    imported = import_workbook(path, catalog)
    assert imported.data["stages"] == [
        {"name": "8K GPUs (Table 4 row 1)", "tokens": 2.87e12, "gpu_count": 8192, "global_batch_sequences": 1024,
         "mfu": 0.43},
        {"name": "16K GPUs (row 2)", "tokens": 1.193e13, "mfu": 0.41},
        {"name": "Long context (row 3)", "tokens": 8e11, "seq_len": 131072, "global_batch_sequences": 128,
         "cp": 16, "mfu": 0.38}]
    assert imported.data["sources"]["stages"].startswith("Llama 3 paper Table 4")
    again = plan_of(imported.data, catalog, "again").values
    assert again["train_days"] == pytest.approx(staged.values["train_days"], rel=1e-12)


# --- the workbook, recalculated --------------------------------------------------------------
@pytest.fixture(scope="module")
def recalculated(tmp_path_factory, catalog, staged):
    """The staged book as generated and as a reviewer edits it — a fourth stage typed into a
    spare row of the table, the training tokens raised to match, the long stage's MFU lowered
    — both recalculated in one LibreOffice call; and the plan of the edited book's import."""
    require_soffice()
    folder = tmp_path_factory.mktemp("stages")
    result = write_workbook(staged)
    books = {"generated": folder / "generated.xlsx", "edited": folder / "edited.xlsx"}
    books["generated"].write_bytes(result.data)
    wb = openpyxl.load_workbook(books["generated"])
    for name, value in (("stage_name", "Annealing"), ("stage_tokens", 4e10), ("stage_seq_len", 131072),
                        ("stage_batch_sequences", 128), ("stage_cp", 16)):
        named_cells(wb, name)[3].value = value
    named_cells(wb, "stage_mfu")[2].value = 0.35
    named_cells(wb, "train_tokens")[0].value = 15.64e12
    wb.save(books["edited"])
    out = recalculate(list(books.values()), folder / "out")
    values = {k: read_values(out[p]) for k, p in books.items()}
    shutil.copy(books["edited"], folder / "edited-import.xlsx")
    imported = import_workbook(folder / "edited-import.xlsx", catalog)
    return result, values, plan_of(imported.data, catalog, "edited").values


@pytest.mark.office
def test_every_stage_cell_agrees_with_libreoffice(recalculated):
    result, values, _ = recalculated
    got = values["generated"]
    stage_cells = [k for k in result.expected if k.startswith("Stages!")]
    assert len(stage_cells) > 400
    off = {k: (got.get(k), want) for k, want in result.expected.items()
           if is_error(got.get(k)) or relative_difference(got.get(k), want) > 1e-9}
    assert not off


@pytest.mark.office
def test_a_reviewers_fourth_stage_moves_the_book_as_the_plan_moves(recalculated):
    result, values, replanned = recalculated
    book, names = values["edited"], result.names
    for name in ("train_days", "gpu_hours", "train_steps", "total_cost", "stages_given", "check_stages",
                 "check_stage_tokens", "master_check"):
        assert book[names[name]] == pytest.approx(replanned[name], rel=1e-9), name
    assert book[names["stages_given"]] == 4
    assert book[names["check_stage_tokens"]] == 0          # 15.64T typed to match the new stage
    assert replanned["stage_mfu_used"][2] == 0.35
