"""The Reference runs sheet (issue 13 item 5): published runs near the plan, each estimated by
the plan's own formulas at the run's values, beside the figure its source published.

The bundled example (seed 002's GPT-3 175B on 512 H100) lists six runs from
catalogs/throughput_runs.yaml: MosaicML's llm-foundry MPT-70B and MPT-30B benchmarks on H100
(README 'H100 80GB BF16': 1,039 and 882 tokens/s per GPU at 64 and 32 GPUs, 1,384 for MPT-30B at
8,192 tokens on 8 GPUs), Korthikanti et al. 2022's GPT 175B on 64 A100 (Table 5: 13.75 s and
18.13 s per 64-sequence step with selective and full recomputation, 148.9 and 113.0 tokens/s per
GPU) and MaxText's 128B on 512 TPU v5e (README: 144 tokens/s per chip). The same accelerator
comes first, then the nearest model size; no source gives more than three.
"""

from __future__ import annotations

import math
import shutil

import openpyxl
import pytest

from budget.core.dates import from_serial
from budget.inputs.importer import import_workbook
from budget.model.model import REFERENCE_ROWS
from budget.xlsx.recalc import is_error, read_values, recalculate, relative_difference
from budget.plan.reference_runs import TABLE, choose, published_rows, tokens_per_gpu_s
from budget.sheets.reference import ESTIMATE_ROWS
from budget.sheets.book import write_workbook
from support import SEED_H100, named_cells, plan_of, raw, require_soffice, with_changes

# The runs chosen for the bundled example and the tokens/s per GPU each source published
BUNDLED_RUNS = {
    "llmfoundry-mpt70b-h100_80gb-64gpu-s2048": 1039.0,
    "llmfoundry-mpt70b-h100_80gb-32gpu-s2048": 882.0,
    "llmfoundry-mpt30b-h100_80gb-8gpu-s8192": 1384.0,
    "korthikanti22-175b-full-recompute": 113.0,
    "korthikanti22-175b-selective-sp": 148.9,
    "maxtext-v5e-128b-2x256": 144.0,
}


def test_the_bundled_example_lists_at_least_five_runs(seed_h100):
    v = seed_h100.values
    assert len(v[REFERENCE_ROWS]) >= 5
    assert dict(zip(v["ref_name"], v["ref_published_tokens_per_gpu_s"])) == pytest.approx(BUNDLED_RUNS)
    assert all(isinstance(x, float) and x > 0 for x in v["ref_tokens_per_gpu_s"])
    sources = [seed_h100.inputs["ref_source"].value[k] for k in range(len(v["ref_name"]))]
    assert sources[0].startswith("mosaicml/llm-foundry") and sources[3].startswith("Korthikanti et al. 2022")


def test_the_same_accelerator_comes_first_then_size_and_no_source_dominates(catalog):
    runs = choose(catalog, "nvidia_h100_sxm", 175e9, 512)
    tiers = [run["ref_accelerator"] == "nvidia_h100_sxm" for run in runs]
    assert tiers == sorted(tiers, reverse=True)            # every H100 run before any other
    others = [abs(math.log(run["_params"] / 175e9)) for run in runs if run["ref_accelerator"] != "nvidia_h100_sxm"]
    assert others == sorted(others)
    per_source = {}
    for run in runs:
        per_source[run["_source_id"]] = per_source.get(run["_source_id"], 0) + 1
    assert max(per_source.values()) <= len(runs) // 2
    # an A100 plan of 175B: Korthikanti's 175B rows on A100 come first
    assert {r["ref_name"] for r in choose(catalog, "nvidia_a100_80gb_sxm", 175e9, 64)[:2]} == {
        "korthikanti22-175b-selective-sp", "korthikanti22-175b-full-recompute"}


@pytest.mark.parametrize("row_id, published", [
    ("korthikanti22-175b-selective-sp", 64 * 2048 / 13.75 / 64),   # Table 5: 13.75 s per step
    ("llmfoundry-mpt70b-h100_80gb-64gpu-s2048", 1039.0),            # README: T/s/GPU column
    ("maxtext-v5e-128b-2x256", 144.0),
])
def test_published_tokens_per_gpu_on_the_sources_basis(row_id, published):
    row = next(r for r in published_rows() if r["id"] == row_id)
    assert tokens_per_gpu_s(row) == pytest.approx(published, rel=0.005)


def _run_scenario(plan, k: int) -> dict:
    """The bundled scenario with run k's published values: the plan of that run, as a user
    would write it (the utilisation left to the efficiency model, the seed's H100 peak and
    activation figure dropped: they describe the seed's run, not this one)."""
    v, data = plan.values, raw(SEED_H100)
    acc = v["ref_accelerator"][k]
    at = lambda name: v[name][k]  # noqa: E731
    whole = lambda name: None if at(name) is None else int(at(name))  # noqa: E731
    data["model"] = {"layers": whole("ref_layers"), "hidden_size": whole("ref_hidden_size"),
                     "attention_heads": whole("ref_attention_heads"), "vocab_size": whole("ref_vocab_size"),
                     "seq_len": whole("ref_seq_len"), "activation": at("ref_activation"),
                     "tied_embeddings": at("ref_tied_embeddings") == "yes",
                     "position_embeddings": at("ref_position_embeddings")}
    for key, name in (("num_kv_heads", "ref_kv_heads"), ("head_dim", "ref_head_dim"),
                      ("ffn_hidden_size", "ref_ffn_hidden_size")):
        if at(name) is not None:
            data["model"][key] = whole(name)
    return with_changes(data, {
        "data.global_batch_sequences": whole("ref_batch_sequences"),
        "hardware.accelerator": acc, "hardware.gpu_count": whole("ref_gpu_count"),
        "hardware.effective_tflops": None, "hardware.peak_tflops": 990 if acc == "nvidia_h100_sxm" else None,
        "memory.activation_gb_per_microbatch": None, "schedule.start_date": from_serial(at("ref_software_date")),
        "parallelism": {"tp": whole("ref_tp"), "pp": whole("ref_pp"), "cp": whole("ref_cp"), "ep": whole("ref_ep"),
                        "virtual_pipeline_stages": whole("ref_virtual_stages"),
                        "micro_batch_size": whole("ref_micro_batch"), "zero_stage": whole("ref_zero_stage"),
                        "recompute": at("ref_recompute"), "sequence_parallel": at("ref_sequence_parallel") == "yes"},
        "sources": {k: s for k, s in data["sources"].items() if not k.startswith(("hardware.", "parallelism.",
                                                                                   "memory."))}})


@pytest.mark.parametrize("k", range(len(BUNDLED_RUNS)))
def test_each_estimate_is_the_planners_own_plan_of_the_run(catalog, seed_h100, k):
    v = seed_h100.values
    own = plan_of(_run_scenario(seed_h100, k), catalog, f"run{k}").values
    assert v["ref_model_params"][k] == pytest.approx(own["model_params"], rel=1e-12)
    assert v["ref_effective_mfu"][k] == pytest.approx(own["effective_mfu"], rel=1e-12)
    assert v["ref_layout_label"][k] == own["layout_label"]
    tokens = own["peak_tflops"] * 1e12 * own["effective_mfu"] / own["model_flops_per_token"]
    assert v["ref_tokens_per_gpu_s"][k] == pytest.approx(tokens, rel=1e-12)
    assert v["ref_error"][k] == pytest.approx(tokens / v["ref_published_tokens_per_gpu_s"][k] - 1, rel=1e-12)


def test_with_the_fitted_model_each_run_is_estimated_at_its_own_software_date(catalog):
    """`efficiency.model: fitted` (issue 13's step-time model): the runs pick it up through the
    plan's formulas, its software-maturity term at the run's date (the source's month), not the
    plan's start."""
    fitted = plan_of(with_changes(raw(SEED_H100), {"efficiency.model": "fitted"}), catalog, "fitted")
    v = fitted.values
    for k in range(len(v[REFERENCE_ROWS])):
        own = plan_of(with_changes(_run_scenario(fitted, k), {"efficiency.model": "fitted"}), catalog, "run").values
        assert v["ref_effective_mfu"][k] == pytest.approx(own["effective_mfu"], rel=1e-12), v["ref_name"][k]
        assert v["ref_architecture_years"][k] == pytest.approx(own["architecture_years"], rel=1e-12)
    assert v["ref_architecture_years"][0] < 2 < v["architecture_years"]   # MPT on H100 in 2023; the plan later


def test_the_plans_own_figures_do_not_move(seed_h100):
    """The runs are evidence beside the plan: the plan's utilisation stays the seed's 450 TFLOPS."""
    assert seed_h100.values["effective_tflops"] == pytest.approx(450.0)
    assert seed_h100.values["memory_per_gpu_gb"] == pytest.approx(89.1, abs=0.05)


def test_same_scenario_same_bytes(seed_h100):
    assert write_workbook(seed_h100).data == write_workbook(seed_h100).data


def test_the_sheet_lists_each_run_with_live_estimates(seed_h100):
    result = write_workbook(seed_h100)
    n = len(BUNDLED_RUNS)
    for name in (*TABLE, *ESTIMATE_ROWS):      # the runs' values on Inputs, the estimates on their sheet
        sheet, ref = result.names[name].split("!")
        assert sheet == ("Inputs" if name in TABLE else "Reference runs"), name
        first, last = ref.split(":")
        assert first[1:] == last[1:] and ord(last[0]) - ord(first[0]) == n - 1, name   # one row, n runs
    estimates = [k for k, want in result.expected.items() if k.startswith("Reference runs!")]
    assert len(estimates) >= n * len(ESTIMATE_ROWS)


@pytest.fixture(scope="module")
def recalculated(tmp_path_factory, catalog, seed_h100):
    """The bundled book as generated and with a reviewer's edit — run 4 (Korthikanti's 175B with
    full recomputation) moved to 128 GPUs at twice the batch — recalculated in one LibreOffice
    call; and the import of the edited book."""
    require_soffice()
    folder = tmp_path_factory.mktemp("reference")
    result = write_workbook(seed_h100)
    books = {"generated": folder / "generated.xlsx", "edited": folder / "edited.xlsx"}
    books["generated"].write_bytes(result.data)
    wb = openpyxl.load_workbook(books["generated"])
    named_cells(wb, "ref_gpu_count")[3].value = 128
    named_cells(wb, "ref_batch_sequences")[3].value = 128
    wb.save(books["edited"])
    out = recalculate(list(books.values()), folder / "out")
    values = {k: read_values(out[p]) for k, p in books.items()}
    shutil.copy(books["edited"], folder / "edited-import.xlsx")
    imported = import_workbook(folder / "edited-import.xlsx", catalog)
    return result, values, imported


@pytest.mark.office
def test_every_reference_cell_agrees_with_libreoffice(recalculated):
    result, values, _ = recalculated
    got = values["generated"]
    cells = [k for k in result.expected if k.startswith("Reference runs!")]
    assert len(cells) > 300
    off = {k: (got.get(k), result.expected[k]) for k in cells
           if is_error(got.get(k)) or relative_difference(got.get(k), result.expected[k]) > 1e-9}
    assert not off


@pytest.mark.office
def test_a_reviewers_edit_of_a_run_moves_its_estimate_as_the_model_does(recalculated, seed_h100):
    result, values, _ = recalculated
    plan, model = seed_h100, seed_h100.model
    inputs = {name: iv.value for name, iv in plan.inputs.items()}
    for name in ("ref_gpu_count", "ref_batch_sequences"):
        edited = list(inputs[name])
        edited[3] = 128.0
        inputs[name] = tuple(edited)
    lookups = {name: t.lookup() for name, t in plan.tables.items()}
    want = model.evaluate(inputs, lookups)
    sheet, ref = result.names["ref_tokens_per_gpu_s"].split("!")
    row = ref.split(":")[0]
    column = openpyxl.utils.get_column_letter(openpyxl.utils.column_index_from_string(row.rstrip("0123456789")) + 3)
    got = values["edited"][f"{sheet}!{column}{row.lstrip('ABCDEFGHIJKLMNOPQRSTUVWXYZ')}"]
    assert got == pytest.approx(want["ref_tokens_per_gpu_s"][3], rel=1e-9)
    assert want["ref_tokens_per_gpu_s"][3] != pytest.approx(plan.values["ref_tokens_per_gpu_s"][3], rel=1e-3)


@pytest.mark.office
def test_the_importer_ignores_the_sheet(recalculated, seed_h100, catalog):
    """An edited run is evidence, not an assumption of the plan: the imported scenario is the
    generated one, and its plan lists the runs chosen for it again."""
    _, _, imported = recalculated
    assert "reference" not in str(sorted(imported.data))
    again = plan_of(imported.data, catalog, "again").values
    assert again["ref_name"] == seed_h100.values["ref_name"]
    assert again["ref_gpu_count"] == seed_h100.values["ref_gpu_count"]
    assert again["total_cost"] == pytest.approx(seed_h100.values["total_cost"], rel=1e-12)
