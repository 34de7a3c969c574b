"""Catalogs are sourced data, validated like scenarios, loaded only when asked."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from budget.catalog import data_dir, load_catalog
from budget.errors import CatalogError

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
        for field in ("peak_bf16_tflops", "hbm_gb", "gpus_per_node", "intra_node_gb_per_s",
                      "inter_node_gbit_per_s", "typical_mfu"):
            fig = getattr(acc, field)
            assert fig.source in catalog.sources, (acc.id, field)
            assert fig.as_of.year >= 2020


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
             "import budget.cli, budget.plan, budget.workbook\n"
             "print(','.join(opened))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def _copy_catalogs(tmp_path):
    folder = tmp_path / "catalogs"
    shutil.copytree(data_dir("catalogs"), folder)
    return folder


def test_bad_catalog_names_file_and_field(tmp_path):
    folder = _copy_catalogs(tmp_path)
    path = folder / "accelerators.yaml"
    path.write_text(path.read_text().replace("source: mleng_accel, as_of: 2026-08-22, note: \"989.4",
                                             "source: nowhere, as_of: 2026-08-22, note: \"989.4", 1))
    with pytest.raises(CatalogError) as err:
        load_catalog(folder)
    problem = err.value.problems[0]
    assert err.value.file.endswith("accelerators.yaml")
    assert problem.path == "accelerators[0].peak_bf16_tflops.source"
    assert "add it to sources" in problem.fix


def test_catalog_rejects_unknown_keys(tmp_path):
    folder = _copy_catalogs(tmp_path)
    path = folder / "models.yaml"
    path.write_text(path.read_text().replace("  layers: 96\n", "  layers: 96\n  layer: 96\n", 1))
    with pytest.raises(CatalogError) as err:
        load_catalog(folder)
    assert err.value.problems[0].path == "models[0].layer"


def test_a_broken_catalog_is_reported_in_the_runs_language(tmp_path, capsys):
    """A catalog file is the user's to fix too: its problems are messages like a scenario's."""
    from budget.cli import _print_error

    folder = _copy_catalogs(tmp_path)
    path = folder / "accelerators.yaml"
    path.write_text(path.read_text().replace("source: mleng_accel, as_of: 2026-08-22, note: \"989.4",
                                             "source: nowhere, as_of: 2026-08-22, note: \"989.4", 1))
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
    folder = _copy_catalogs(tmp_path)
    path = folder / "models.yaml"
    path.write_text(path.read_text().replace("    expert_ffn_hidden_size: 14336\n", "", 1))
    with pytest.raises(CatalogError) as err:
        load_catalog(folder)
    assert err.value.problems[0].path.endswith(".moe.expert_ffn_hidden_size")
