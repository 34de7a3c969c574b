"""Catalogs are sourced data, validated like scenarios, loaded only when asked."""

from __future__ import annotations

import datetime as dt
import io
import shutil
import subprocess
import sys

import openpyxl
import pytest

from budget.inputs.catalog import FIGURES, OPTIONAL_FIGURES, data_dir, load_catalog
from budget.core.errors import CatalogError
from budget.model.model import ACCELERATOR_TABLE, build_model
from budget.sheets.book import write_workbook
from conftest import PLAIN_CASES
from support import SCENARIOS, plan_of, raw, with_changes

REQUIRED = ["nvidia_h100_sxm", "nvidia_a100_80gb_sxm", "nvidia_b100", "huawei_ascend_910b",
            "nvidia_h200_sxm", "nvidia_b200", "nvidia_a100_40gb_sxm", "nvidia_h800_sxm", "amd_mi300x"]


def test_required_accelerators_present(catalog):
    assert set(REQUIRED) <= set(catalog.accelerator_ids())


@pytest.mark.parametrize("acc_id, dense_peak", [
    ("nvidia_h100_sxm", 989), ("nvidia_a100_80gb_sxm", 312), ("nvidia_b100", 1750),
    ("nvidia_b200", 2250), ("amd_mi300x", 1307)])
def test_peaks_are_dense_datasheet_figures(catalog, acc_id, dense_peak):
    # Sparse peaks (H100 1,979) would halve every MFU; the seed's B100 1,800 is not the datasheet.
    assert catalog.accelerator(acc_id).peak_bf16_tflops.value == dense_peak


def test_every_figure_has_a_resolvable_source_and_date(catalog):
    for acc in catalog.accelerators:
        for field in (*FIGURES, *OPTIONAL_FIGURES):
            fig = getattr(acc, field)
            if fig is None:
                assert field in OPTIONAL_FIGURES, (acc.id, field)
                continue
            assert fig.source in catalog.sources, (acc.id, field)
            assert fig.as_of.year >= 2020


def test_an_assumed_figure_says_what_it_stands_for(catalog):
    """No source means a stated assumption: the note starts 'assumption:' and says more."""
    for acc in catalog.accelerators:
        for field in (*FIGURES, *OPTIONAL_FIGURES):
            fig = getattr(acc, field)
            if fig is not None and fig.source == "assumption":
                assert fig.note.startswith("assumption: ") and len(fig.note) > 40, (acc.id, field)


# --- the accelerators beyond the seed's GPUs (issue 12), as their vendors publish them ---------
NEW = ["google_tpu_v4", "google_tpu_v5p", "google_tpu_v5e", "google_tpu_v6e", "aws_trainium2",
       "intel_gaudi3", "nvidia_b300", "nvidia_gb300", "amd_mi355x"]


def test_the_new_accelerators_are_in_the_catalog(catalog):
    assert set(NEW) <= set(catalog.accelerator_ids())


@pytest.mark.parametrize("acc_id, field, published", [
    # dense BF16: Google's spec tables, AWS Neuron docs, ml-engineering (Gaudi 3 at its shipped
    # 1,600 MHz), NVIDIA's HGX B300 / GB300 NVL72 tables halved (printed with sparsity)
    ("google_tpu_v4", "peak_bf16_tflops", 275), ("google_tpu_v5p", "peak_bf16_tflops", 459),
    ("google_tpu_v5e", "peak_bf16_tflops", 197), ("google_tpu_v6e", "peak_bf16_tflops", 918),
    ("aws_trainium2", "peak_bf16_tflops", 667), ("intel_gaudi3", "peak_bf16_tflops", 1678),
    ("nvidia_b300", "peak_bf16_tflops", 36000 / 8 / 2), ("nvidia_gb300", "peak_bf16_tflops", 360000 / 72 / 2),
    ("amd_mi355x", "peak_bf16_tflops", 2516),
    # dense FP8 and FP4
    ("nvidia_h100_sxm", "peak_fp8_tflops", 3958 / 2), ("nvidia_h800_sxm", "peak_fp8_tflops", 1979),
    ("nvidia_h20", "peak_fp8_tflops", 296), ("nvidia_b200", "peak_fp8_tflops", 72000 / 8 / 2),
    ("nvidia_gb200", "peak_fp8_tflops", 720000 / 72 / 2), ("amd_mi300x", "peak_fp8_tflops", 2614.9),
    ("google_tpu_v5p", "peak_fp8_tflops", 459), ("aws_trainium2", "peak_fp8_tflops", 1299),
    ("amd_mi355x", "peak_fp8_tflops", 256 * 8192 * 2.4e9 / 1e12),
    ("nvidia_b200", "peak_fp4_tflops", 72000 / 8), ("nvidia_b300", "peak_fp4_tflops", 108000 / 8),
    ("nvidia_gb300", "peak_fp4_tflops", 1080000 / 72), ("nvidia_gb200", "peak_fp4_tflops", 20000 / 2),
    # memory (GiB counted as GB = 1e9 bytes), hosts and fabrics
    ("google_tpu_v4", "hbm_gb", 32 * 2**30 / 1e9), ("google_tpu_v5p", "hbm_gb", 95 * 2**30 / 1e9),
    ("aws_trainium2", "hbm_gb", 96 * 2**30 / 1e9), ("intel_gaudi3", "hbm_gb", 128),
    ("google_tpu_v4", "gpus_per_node", 4), ("google_tpu_v5p", "gpus_per_node", 4),
    ("google_tpu_v5e", "gpus_per_node", 8), ("aws_trainium2", "gpus_per_node", 16),
    ("google_tpu_v5p", "intra_node_gb_per_s", 1200 / 2), ("intel_gaudi3", "intra_node_gb_per_s", 21 * 25),
    ("google_tpu_v5p", "inter_node_gbit_per_s", 50), ("intel_gaudi3", "inter_node_gbit_per_s", 3 * 200),
    ("google_tpu_v4", "scale_up_domain", 4096), ("google_tpu_v5p", "scale_up_domain", 8960),
    ("aws_trainium2", "scale_up_domain", 64), ("nvidia_gb200", "scale_up_domain", 72),
    ("nvidia_gb300", "scale_up_domain", 72), ("nvidia_h100_sxm", "scale_up_domain", 8),
    ("google_tpu_v4", "typical_mfu", 0.462),      # PaLM 540B on 6,144 TPU v4
])
def test_new_figures_are_the_published_ones(catalog, acc_id, field, published):
    assert getattr(catalog.accelerator(acc_id), field).value == pytest.approx(published, rel=0.005)


# FP8 at the BF16 rate, as published: TPU v5p ('Peak compute per chip (FP8) 459'), Gaudi 3's MME.
FP8_AT_BF16_RATE = {"google_tpu_v5p", "intel_gaudi3"}


def test_fp8_peaks_are_dense(catalog):
    """Dense FP8 is twice dense BF16 on Hopper, Blackwell, CDNA 3/4 and Trainium2: a sparse
    figure typed by mistake (H100 3,958) would be four times and fail here."""
    checked = 0
    for acc in catalog.accelerators:
        if acc.peak_fp8_tflops is None:
            continue
        ratio = acc.peak_fp8_tflops.value / acc.peak_bf16_tflops.value
        want = 1 if acc.id in FP8_AT_BF16_RATE else 2
        assert ratio == pytest.approx(want, rel=0.05), (acc.id, ratio)
        checked += 1
    assert checked == 15


def test_fp4_peaks_are_dense(catalog):
    """Dense FP4 is twice dense FP8 on Blackwell and the MI355X, three times on Blackwell Ultra
    (B300/GB300); a figure printed with sparsity would be four or six times."""
    for acc in catalog.accelerators:
        if acc.peak_fp4_tflops is not None:
            ratio = acc.peak_fp4_tflops.value / acc.peak_fp8_tflops.value
            want = 3 if acc.id in {"nvidia_b300", "nvidia_gb300"} else 2
            assert ratio == pytest.approx(want, rel=0.05), (acc.id, ratio)


def test_no_fp8_where_none_is_published(catalog):
    """Ampere and the Ascend 910B have no FP8; Google publishes none for v4, v5e and v6e."""
    for acc_id in ("nvidia_a100_80gb_sxm", "nvidia_a100_40gb_sxm", "nvidia_a800_sxm",
                   "huawei_ascend_910b", "google_tpu_v4", "google_tpu_v5e", "google_tpu_v6e"):
        assert catalog.accelerator(acc_id).peak_fp8_tflops is None, acc_id


def test_h800_figures_are_deepseeks(catalog):
    """DeepSeek's ISCA '25 paper on its 2,048-H800 cluster: NVLink 400 GB/s both directions
    (200 one way), eight 400G InfiniBand NICs per node, MFU 38.94% (causal, on the BF16 peak)."""
    h800 = catalog.accelerator("nvidia_h800_sxm")
    assert (h800.intra_node_gb_per_s.value, h800.inter_node_gbit_per_s.value) == (200, 400)
    assert h800.typical_mfu.value == pytest.approx(0.3894)
    assert {h800.intra_node_gb_per_s.source, h800.inter_node_gbit_per_s.source,
            h800.typical_mfu.source} == {"deepseek_isca25"}


def test_the_chinese_example_pins_its_mfu(catalog):
    """The H800's new typical MFU does not move the zh example's days: it states 45%."""
    plan = plan_of(raw(SCENARIOS / "gpt3-175b-h800-cny.yaml"), catalog, "gpt3-175b-h800-cny")
    assert plan.values["baseline_mfu"] == 0.45


def test_scale_up_domain_holds_at_least_a_node(tmp_path):
    folder = _edited_catalog(tmp_path, "accelerators.yaml",
                             "scale_up_domain: {value: 72, source: nvidia_gb200_nvl72_copy",
                             "scale_up_domain: {value: 2, source: nvidia_gb200_nvl72_copy")
    with pytest.raises(CatalogError) as err:
        load_catalog(folder)
    problem = err.value.problems[0]
    assert problem.path.endswith("scale_up_domain.value")
    assert "at least gpus_per_node" in err.value.render()


# --- issue 13: when each accelerator's architecture first shipped (software maturity) ----------
# Maturity is per architecture: an H20 in 2024 runs on software that has had Hopper since the H100.
ARCHITECTURES = {
    "Ampere": ["nvidia_a100_40gb_sxm", "nvidia_a100_80gb_sxm", "nvidia_a800_sxm"],
    "Hopper": ["nvidia_h100_sxm", "nvidia_h200_sxm", "nvidia_h800_sxm", "nvidia_h20"],
    "Blackwell": ["nvidia_b100", "nvidia_b200", "nvidia_gb200", "nvidia_b300", "nvidia_gb300"],
    "CDNA 3": ["amd_mi300x", "amd_mi325x"],
    "CDNA 4": ["amd_mi355x"],
    "TPU v4": ["google_tpu_v4"], "TPU v5e": ["google_tpu_v5e"], "TPU v5p": ["google_tpu_v5p"],
    "TPU v6e": ["google_tpu_v6e"], "Trainium2": ["aws_trainium2"], "Gaudi 3": ["intel_gaudi3"],
    "Ascend 910B": ["huawei_ascend_910b"],
}


def test_every_accelerator_says_when_its_architecture_shipped(catalog):
    listed = [acc_id for ids in ARCHITECTURES.values() for acc_id in ids]
    assert sorted(listed) == sorted(catalog.accelerator_ids())     # a new entry names its architecture
    for acc in catalog.accelerators:
        launched = acc.architecture_launched
        assert launched is not None, acc.id
        assert launched.source in catalog.sources and launched.note, acc.id
        assert dt.date(2019, 1, 1) < launched.value < launched.as_of, acc.id


@pytest.mark.parametrize("architecture, first_shipped", [
    ("Ampere", dt.date(2020, 5, 14)),       # A100 40GB, in production and shipping at its GTC showing
    ("Hopper", dt.date(2022, 10, 1)),       # H100: first OEM systems shipping in October 2022
    ("Blackwell", dt.date(2024, 11, 1)),    # first Blackwell revenue quarter from 2024-10-28
    ("CDNA 3", dt.date(2023, 12, 6)),       # MI300X release
    ("CDNA 4", dt.date(2025, 7, 1)),        # MI350 series customer shipments from Q3 2025
    ("TPU v5e", dt.date(2023, 11, 9)), ("TPU v5p", dt.date(2024, 4, 9)),   # Google Cloud GA
    ("Trainium2", dt.date(2024, 12, 3)),    # Trn2 instances GA at re:Invent
])
def test_an_architecture_has_one_launch_date(catalog, architecture, first_shipped):
    """Every part of an architecture carries its first product's date, not its own release."""
    dates = {catalog.accelerator(acc_id).architecture_launched.value for acc_id in ARCHITECTURES[architecture]}
    assert dates == {first_shipped}


def test_architectures_launch_in_their_published_order(catalog):
    def launched(acc_id):
        return catalog.accelerator(acc_id).architecture_launched.value
    assert launched("nvidia_a100_80gb_sxm") < launched("nvidia_h100_sxm") < launched("nvidia_b200")
    assert launched("amd_mi300x") < launched("amd_mi355x")
    assert launched("google_tpu_v4") < launched("google_tpu_v5e") < launched("google_tpu_v5p") < launched("google_tpu_v6e")


def test_a_catalog_entry_without_its_architecture_date_is_refused(tmp_path):
    """Required in the catalog (a scenario's own accelerator row may still lack it)."""
    folder = _copy_catalogs(tmp_path)
    path = folder / "accelerators.yaml"
    text = path.read_text()
    first = text.index("  architecture_launched:")
    path.write_text(text[:first] + text[text.index("\n", first) + 1:])
    with pytest.raises(CatalogError) as err:
        load_catalog(folder)
    assert err.value.problems[0].path == "accelerators[0].architecture_launched"


@pytest.mark.parametrize("acc_id", NEW)
def test_each_new_accelerator_plans_a_small_model(catalog, acc_id):
    """The oracle's acc-<id> case (a 1.3B GPT shape on 64 of them): it fits, passes every
    check, and its days follow the catalog's peak and typical MFU."""
    path, changes = PLAIN_CASES[f"acc-{acc_id}"]
    plan = plan_of(with_changes(raw(path), changes), catalog, acc_id)
    acc = catalog.accelerator(acc_id)
    assert plan.fits and plan.failing_checks == []
    assert plan.values["peak_tflops"] == acc.peak_bf16_tflops.value
    assert plan.values["baseline_mfu"] == acc.typical_mfu.value
    assert plan.values["memory_per_gpu_gb"] < acc.hbm_gb.value


def test_unpublished_figures_are_blank_cells_not_zeros(seed_h100):
    """The Catalog sheet's FP8, FP4 and scale-up columns come after the old ones (whose places
    formulas and the importer rely on) and are empty where nothing is published."""
    book = write_workbook(seed_h100)
    wb = openpyxl.load_workbook(io.BytesIO(book.data))
    sheet, ref = book.names["acc_id"].split("!")
    ids = [row[0].value for row in wb[sheet][ref]]
    columns = [c for c, _, _ in build_model().tables[ACCELERATOR_TABLE].columns]
    assert columns[:13] == ["id", "name", "vendor", *FIGURES, "node_overhead_kw", "node_price",
                            "node_price_currency"]
    assert columns[13:] == list(OPTIONAL_FIGURES)
    # issue 13's table beside it: every accelerator's architecture date; the fitted matmul factor
    # only where published rows measured the architecture
    arch = {}
    for name in ("id", "architecture_launched", "fitted_matmul_factor"):
        sheet, ref = book.names[f"arch_{name}"].split("!")
        arch[name] = [row[0].value for row in wb[sheet][ref]]
    fitted = dict(zip(arch["id"], arch["fitted_matmul_factor"]))
    assert fitted["nvidia_h800_sxm"] == fitted["nvidia_h100_sxm"] > 0 and fitted["nvidia_b200"] is None
    assert all(d is not None for i, d in zip(arch["id"], arch["architecture_launched"]) if i is not None)
    for name in OPTIONAL_FIGURES:
        sheet, ref = book.names[f"acc_{name}"].split("!")
        cells = dict(zip(ids, (row[0].value for row in wb[sheet][ref])))
        assert cells["nvidia_h100_sxm"] == {"peak_fp8_tflops": 1979, "peak_fp4_tflops": None,
                                            "scale_up_domain": 8}[name]
        assert cells["nvidia_a100_80gb_sxm"] == (8 if name == "scale_up_domain" else None)


def test_model_presets(catalog):
    gpt3 = catalog.model("gpt3-175b")
    assert (gpt3.layers, gpt3.hidden_size, gpt3.attention_heads, gpt3.seq_len) == (96, 12288, 96, 2048)
    assert len(catalog.models) >= 3


def test_catalog_is_not_loaded_at_import():
    """Importing the whole package opens no YAML file (checked in a fresh interpreter)."""
    probe = ("import builtins, pathlib, sys\n"
             "opened = []\n"
             "real = pathlib.Path.read_text\n"
             "pathlib.Path.read_text = lambda self, *a, **k: (self.suffix == '.yaml' and opened.append(self.name)) or real(self, *a, **k)\n"
             "import budget.cli.app, budget.plan.plan, budget.sheets.writer\n"
             "print(','.join(opened))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def _copy_catalogs(tmp_path):
    folder = tmp_path / "catalogs"
    shutil.copytree(data_dir("catalogs"), folder)
    return folder


# The H100's peak cited to a source the sources block does not list.
UNLISTED_SOURCE = ('source: mleng_accel, as_of: 2026-08-22, note: "989.4', 'source: nowhere, as_of: 2026-08-22, note: "989.4')


def _edited_catalog(tmp_path, name: str, old: str, new: str):
    """A copy of the catalogs with the first `old` in catalogs/`name` replaced by `new`."""
    folder = _copy_catalogs(tmp_path)
    path = folder / name
    path.write_text(path.read_text().replace(old, new, 1))
    return folder


def test_bad_catalog_names_file_and_field(tmp_path):
    folder = _edited_catalog(tmp_path, "accelerators.yaml", *UNLISTED_SOURCE)
    with pytest.raises(CatalogError) as err:
        load_catalog(folder)
    problem = err.value.problems[0]
    assert err.value.file.endswith("accelerators.yaml")
    assert problem.path == "accelerators[0].peak_bf16_tflops.source"
    assert "add it to sources" in problem.fix


def test_catalog_rejects_unknown_keys(tmp_path):
    folder = _edited_catalog(tmp_path, "models.yaml", "  layers: 96\n", "  layers: 96\n  layer: 96\n")
    with pytest.raises(CatalogError) as err:
        load_catalog(folder)
    assert err.value.problems[0].path == "models[0].layer"


def test_a_broken_catalog_is_reported_in_the_runs_language(tmp_path, capsys):
    """A catalog file is the user's to fix too: its problems are messages like a scenario's."""
    from budget.cli.app import _print_error

    folder = _edited_catalog(tmp_path, "accelerators.yaml", *UNLISTED_SOURCE)
    path = folder / "accelerators.yaml"
    with pytest.raises(CatalogError) as err:
        load_catalog(folder)
    _print_error(err.value, "zh")
    assert capsys.readouterr().err == (
        f"错误：{path}: accelerators[0].peak_bf16_tflops.source: 来源 'nowhere' 未在 sources 中列出\n"
        "  处理办法：请在 sources 中添加它的完整引用\n")
    assert err.value.render() == (
        f"{path}: accelerators[0].peak_bf16_tflops.source: source 'nowhere' is not listed under sources\n"
        "  fix: add it to sources with a full citation")


# --- issue 12: the presets of today's shapes ------------------------------------------------

def test_todays_presets_carry_their_shapes(catalog):
    """Llama 3 (Table 3: 8 K/V heads, SwiGLU 14,336 / 28,672 / 53,248), Mixtral (Table 1: 8
    experts, top-2), DeepSeek-V3 (§4.2: 256 + 1 experts of 2,048, top-8, 3 dense layers, MLA ranks
    1,536 / 512, RoPE 64) and Qwen2.5-72B, each sourced and noted."""
    for preset, ffn in (("llama3-8b", 14336), ("llama3-70b", 28672), ("llama3-405b", 53248)):
        m = catalog.model(preset)
        assert (m.num_kv_heads, m.ffn_hidden_size, m.activation, m.tied_embeddings) == (8, ffn, "swiglu", False)
        assert m.vocab_size == 128256
    mixtral = catalog.model("mixtral-8x7b")
    assert (mixtral.moe.experts, mixtral.moe.experts_per_token, mixtral.global_batch_sequences) == (8, 2, None)
    ds = catalog.model("deepseek-v3")
    assert (ds.moe.experts, ds.moe.shared_experts, ds.moe.experts_per_token, ds.moe.expert_ffn_hidden_size,
            ds.moe.first_dense_layers) == (256, 1, 8, 2048, 3)
    assert (ds.mla.q_lora_rank, ds.mla.kv_lora_rank, ds.mla.rope_head_dim, ds.mla.v_head_dim) == (1536, 512, 64, 128)
    assert "approximated" in ds.note                                # MLA's count is said to be approximate
    assert "SECONDARY" in catalog.model("qwen2.5-72b").note
    for m in catalog.models:
        assert m.source.strip() and m.as_of


def test_a_preset_moe_needs_its_expert_width(tmp_path):
    folder = _edited_catalog(tmp_path, "models.yaml", "    expert_ffn_hidden_size: 14336\n", "")
    with pytest.raises(CatalogError) as err:
        load_catalog(folder)
    assert err.value.problems[0].path.endswith(".moe.expert_ffn_hidden_size")


@pytest.mark.slow
def test_bundled_catalogs_read_by_libyaml_equal_the_strict_loaders_reading():
    """The bundled catalog files go through libyaml (issue 14); the data is the strict Python
    loader's, and a duplicate key is still refused, by the strict loader's own message."""
    from budget.inputs.catalog import read_bundled
    from budget.core.errors import load_yaml

    for path in sorted(data_dir("catalogs").glob("*.yaml")):
        assert read_bundled(path) == load_yaml(path, CatalogError), path


def test_a_duplicate_key_is_refused_on_the_fast_path_too(tmp_path):
    from budget.inputs.catalog import read_bundled

    path = tmp_path / "accelerators.yaml"
    path.write_text("sources: {a: x}\naccelerators: []\nsources: {b: y}\n", encoding="utf-8")
    with pytest.raises(CatalogError) as err:
        read_bundled(path)
    assert "duplicate key 'sources' (first at line 1)" in err.value.render()
    assert "line 3" in err.value.render()


def test_on_demand_price_in_dollars_is_the_median_of_the_quotes(catalog):
    """The market price a ways-out accelerator is scaled by (budget/plan.py): the median of the
    catalog's on-demand quotes in US dollars; reserved and spot quotes are not on demand."""
    prices = catalog.prices
    assert prices.on_demand_usd("nvidia_gb200") == 10.5            # one quote
    assert prices.on_demand_usd("nvidia_h800_sxm") == 3.42         # its reserved CNY quote left out
    assert prices.on_demand_usd("nvidia_b300") is None             # none quoted
    quotes = [r for r in prices.rental if r.accelerator == "nvidia_h100_sxm" and r.tier == "on_demand"]
    assert {r.per_gpu_hour.currency for r in quotes} == {"USD", "CNY"}   # the yuan quote converted
    assert min(r.per_gpu_hour.value for r in quotes if r.per_gpu_hour.currency == "USD") \
        < prices.on_demand_usd("nvidia_h100_sxm") < 11.06
