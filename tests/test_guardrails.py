"""Guardrails against silent mis-specification (issue 25, item 6), each a failing check or a
warning with its fix, from the command line and recalculated in LibreOffice:

- active parameters typed without an MoE shape (the plan would be dense, every parameter active);
- shape-derived parameters far from the typed ones, MoE included (the active count too);
- a pinned recomputation or compute precision whose removal leaves the memory, the days and the
  cost within 0.1% (a warning; the layout's explanation says it is not what makes the layout fit);
- the memory check's fix lists only the levers that bring the layout under the usable memory,
  each with its memory, days and total (the ways-out search plans them).
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import openpyxl
import pytest
import yaml

from budget.cli.app import main
from budget.sheets.book import write_workbook
from budget.xlsx.recalc import read_values, recalculate
from support import SEED_H100, plan_of, raw, require_soffice, with_changes

ACTIVE_WITHOUT_MOE = {"model.active_params": "17.5B"}
MIXTRAL = {"model": {"preset": "mixtral-8x7b", "seq_len": 4096}, "sources": {},
           "memory.activation_gb_per_microbatch": None, "hardware.gpu_count": 256,
           "data.global_batch_sequences": 1024,
           "parallelism": {"tp": 1, "pp": 4, "ep": 8, "zero_stage": 1, "recompute": "full",
                           "sequence_parallel": False, "micro_batch_size": 1}}
MOE_ACTIVE_FAR = {**MIXTRAL, "model": {**MIXTRAL["model"], "active_params": "30B"}}
# the seed types its activations and its 450 TFLOPS: recomputation can change neither
INERT_RECOMPUTE = {"parallelism.zero_stage": 1, "parallelism.recompute": "selective"}
INERT_FP8 = {"parallelism.zero_stage": 1, "hardware.precision": "fp8"}
# with the activations from Korthikanti et al.'s formula, full recomputation saves memory
USEFUL_RECOMPUTE = {"parallelism.zero_stage": 1, "parallelism.recompute": "full",
                    "memory.activation_gb_per_microbatch": None}
BOOKS = {"seed": {}, "active-without-moe": ACTIVE_WITHOUT_MOE, "moe-active-far": MOE_ACTIVE_FAR,
         "inert-recompute": INERT_RECOMPUTE, "useful-recompute": USEFUL_RECOMPUTE}


def _cli(tmp_path, capsys, changes: dict) -> tuple[int, str, str]:
    path = tmp_path / "guard.yaml"
    path.write_text(yaml.safe_dump(with_changes(raw(SEED_H100), changes), allow_unicode=True), encoding="utf-8")
    code = main([str(path), "-o", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    return code, out, err


# --- active parameters without an MoE shape ----------------------------------------------------
def test_active_params_without_moe_fail_a_check_with_the_fix(tmp_path, capsys):
    code, _, err = _cli(tmp_path, capsys, ACTIVE_WITHOUT_MOE)
    assert code == 0        # planned, and the package is not approvable
    assert ("warning: guard: check failing: Active parameters typed (17.5B) without an MoE shape: the plan is "
            "dense and counts all 175B as active. Give the MoE shape (model.moe: experts and experts_per_token, "
            "or an MoE preset) or remove model.active_params") in err


def test_active_params_with_an_moe_shape_pass(catalog):
    plan = plan_of(with_changes(raw(SEED_H100), MIXTRAL), catalog, "mixtral")
    assert plan.values["check_active_params_need_moe"] == 0
    assert plan.values["params_active"] < plan.values["model_params"] / 3


# --- shape-derived parameters far from the typed ones, MoE included --------------------------
def test_moe_active_params_far_from_the_shape_warn(tmp_path, capsys, catalog):
    plan = plan_of(with_changes(raw(SEED_H100), MOE_ACTIVE_FAR), catalog, "mixtral")
    assert plan.values["warn_params_match_shape"] == 1
    code, _, err = _cli(tmp_path, capsys, MOE_ACTIVE_FAR)
    assert code == 0
    assert ("warning: guard: warning: Parameters 47B (active per token 30B) differ from the shape's 46.7B "
            "(active 12.9B). Blank the parameter overrides") in err


# --- a setting that changes nothing -----------------------------------------------------------
@pytest.mark.parametrize("changes, said, setting", [
    (INERT_RECOMPUTE, "recomputation selective", "Its selective recomputation changes neither"),
    (INERT_FP8, "compute precision fp8", "Its fp8 compute changes neither"),
])
def test_an_inert_setting_warns_and_is_credited_with_nothing(tmp_path, capsys, catalog, changes, said, setting):
    plan = plan_of(with_changes(raw(SEED_H100), changes), catalog, "inert")
    without = plan_of(with_changes(raw(SEED_H100), {**changes, "parallelism.recompute": "none",
                                                    "hardware.precision": "bf16"}), catalog, "without")
    for name in ("memory_per_gpu_gb", "stretched_training_days", "total_cost"):
        assert plan.values[name] == pytest.approx(without.values[name], rel=1e-3), name
    assert plan.values["warn_setting_inert"] == 1
    code, out, err = _cli(tmp_path, capsys, changes)
    assert code == 0
    assert ("warning: guard: warning: Changes neither the memory, the days nor the cost (within 0.1%, found when "
            f"the plan was generated): {said}. Remove the setting") in err
    layout = next(line for line in out.splitlines() if line.startswith("  layout:"))
    assert f"{setting} the memory, the days nor the cost here (within 0.1%): it is not what makes the layout " \
           "fit." in layout


def test_a_setting_that_changes_the_plan_does_not_warn(catalog):
    plan = plan_of(with_changes(raw(SEED_H100), USEFUL_RECOMPUTE), catalog, "useful")
    without = plan_of(with_changes(raw(SEED_H100), {**USEFUL_RECOMPUTE, "parallelism.recompute": "none"}),
                      catalog, "without")
    assert plan.values["memory_per_gpu_gb"] < 0.9 * without.values["memory_per_gpu_gb"]
    assert plan.values["warn_setting_inert"] == 0 and plan.inputs["inert_recompute"].value == "no"
    assert "changes neither" not in plan.layout.explanation


# --- the memory check's fix: only the levers that fit, each with its figures ----------------
def test_the_memory_fix_lists_only_the_levers_that_fit(tmp_path, capsys, catalog):
    code, _, err = _cli(tmp_path, capsys, {})
    line = next(x for x in err.splitlines() if "Layout does not fit in memory" in x)
    fix = line.split("GB per GPU. ", 1)[1]
    assert fix.startswith("Ways out, cheapest first: ")
    assert "does not fit" not in fix and "no larger accelerator" not in fix
    figures = re.findall(r"\(([\d,.]+) of ([\d,.]+) GB per GPU\)", fix)
    assert len(figures) >= 2
    for need, usable in figures:
        assert float(need.replace(",", "")) <= float(usable.replace(",", ""))
    # the ZeRO-1 lever is the plan with ZeRO-1, and the fix says its memory, days and total
    zero1 = plan_of(with_changes(raw(SEED_H100), {"parallelism.zero_stage": 1}), catalog, "zero1")
    assert (f"ZeRO-1 (parallelism.zero_stage: 1) fits on 512 GPUs as TP 4 × PP 8 × DP 16, micro-batch 1, ZeRO-1, "
            f"no recomputation ({zero1.values['memory_per_gpu_gb']:,.1f} of {zero1.values['usable_hbm_gb']:,.1f} GB "
            f"per GPU): {zero1.train_days:,.1f} training days, total {zero1.total_cost:,.0f} USD") in fix
    # the reports and plan.json carry the same fix
    plan = plan_of(raw(SEED_H100), catalog, "gpt3-175b-h100")
    assert plan.fix_of(plan.model.items["check_memory_fits"]) == fix


# --- in LibreOffice ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def recalculated(tmp_path_factory, catalog):
    """Each book, and two edited as a reviewer would: the inert recomputation set to full (the
    warning clears: it was that setting), the active parameters cleared (the check passes);
    recalculated in one LibreOffice call."""
    require_soffice()
    folder = tmp_path_factory.mktemp("guardrails")
    books, results, plans = {}, {}, {}
    for name, changes in BOOKS.items():
        plans[name] = plan_of(with_changes(raw(SEED_H100), changes), catalog, name)
        results[name] = write_workbook(plans[name])
        books[name] = folder / f"{name}.xlsx"
        books[name].write_bytes(results[name].data)
    for name, base, edits in (("inert-recompute-edited", "inert-recompute", {"recompute": "full"}),
                              ("active-cleared", "active-without-moe", {"active_params_override": None})):
        wb = openpyxl.load_workbook(io.BytesIO(results[base].data))
        for input_name, value in edits.items():
            sheet, cell = results[base].names[input_name].split("!")
            wb[sheet][cell].value = value
        books[name] = folder / f"{name}.xlsx"
        wb.save(books[name])
        results[name] = results[base]
    out = recalculate(list(books.values()), folder / "out")
    return {name: (results[name], plans.get(name), read_values(out[path])) for name, path in books.items()}


def _at(book, name: str):
    result, _, values = book
    return values[result.names[name]]


def _summary_lines(book) -> list:
    result, _, values = book
    return [v for k, v in values.items() if k.startswith("Summary!A") and isinstance(v, str)]


@pytest.mark.office
def test_guardrails_hold_in_libreoffice(recalculated):
    plain = recalculated["seed"]
    assert _at(plain, "check_active_params_need_moe") == 0 and _at(plain, "warn_setting_inert") == 0
    active = recalculated["active-without-moe"]
    assert _at(active, "check_active_params_need_moe") == 1 and _at(active, "master_check") >= 2
    sentence = active[1].model.items["check_active_params_need_moe"].sentence(active[1].values)
    assert sentence in _summary_lines(active)
    assert _at(recalculated["active-cleared"], "check_active_params_need_moe") == 0
    assert _at(recalculated["moe-active-far"], "warn_params_match_shape") == 1
    inert = recalculated["inert-recompute"]
    assert _at(inert, "warn_setting_inert") == 1
    assert inert[1].model.items["warn_setting_inert"].sentence(inert[1].values) in _summary_lines(inert)
    assert _at(recalculated["inert-recompute-edited"], "warn_setting_inert") == 0
    assert _at(recalculated["useful-recompute"], "warn_setting_inert") == 0


@pytest.mark.office
def test_the_memory_fix_is_on_the_checks_sheet(recalculated):
    """Written for the plan, its currency a formula over the currency cell (long texts cut into
    constants Excel accepts), and LibreOffice shows the planner's words."""
    result, plan, values = recalculated["seed"]
    sheet, cell = result.names["check_memory_fits"].split("!")
    wb = openpyxl.load_workbook(io.BytesIO(result.data))
    formula = wb[sheet][f"E{cell[1:]}"].value
    assert formula.startswith("=") and "currency" in formula
    assert max(len(x) for x in re.findall(r'"((?:[^"]|"")*)"', formula)) <= 255
    fix = plan.fix_of(plan.model.items["check_memory_fits"])
    assert fix.startswith("Ways out, cheapest first: ")
    assert result.expected[f"{sheet}!E{cell[1:]}"] == fix == values[f"{sheet}!E{cell[1:]}"]
    assert values[result.names["check_memory_fits"]] == 1
