"""Model shapes of today: parameters from the shape (GQA, SwiGLU, MLA, MoE) against the
published counts, and the old GPT shape's count unchanged (Kaplan et al. 2020, eq. 2.1).

The shape's items are evaluated alone (the parameter count does not depend on the layout), from
the inputs a scenario binds to, so these tests hold whatever the layout search does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from budget.formula import compile_items
from budget.model import build_model
from budget.plan import resolve_inputs
from budget.scenario import parse_scenario
from support import SEED_H100, raw, with_changes

SHAPE_ITEMS = ("params_from_shape", "model_params", "params_active", "params_active_from_shape",
               "expert_params", "params_attention_layer", "params_embeddings", "moe_layers")


HF = Path(__file__).resolve().parent / "data" / "hf_configs"


def shape_values(catalog, scenario_file="shape.yaml", **model) -> dict:
    """The shape's items for a scenario whose `model` section is `model`."""
    data = with_changes(raw(SEED_H100), {"model": model, "parallelism": {}, "data.global_batch_sequences": None})
    s = parse_scenario(data, scenario_file, catalog)
    inputs = {k: iv.value for k, iv in resolve_inputs(s, catalog).items()}
    m = build_model()
    needed = m.closure(SHAPE_ITEMS)
    run = compile_items((i.name, i.expr) for i in m.items.values() if i.name in needed)
    return run(inputs, {})


GPT3 = {"layers": 96, "hidden_size": 12288, "attention_heads": 96, "seq_len": 2048, "vocab_size": 50257}


def test_old_gpt_shape_is_kaplan_exactly(catalog):
    """MHA, GeLU with 4·h, one embedding matrix, learned positions: 12·L·h² + (V + s)·h."""
    v = shape_values(catalog, **GPT3)
    L, h, V, s = 96, 12288, 50257, 2048
    assert v["params_from_shape"] == 12 * L * h * h + (V + s) * h        # exactly, not approximately
    assert v["model_params"] == v["params_from_shape"] == v["params_active"]
    assert v["expert_params"] == 0 and v["moe_layers"] == 0


@pytest.mark.parametrize("details", [
    {"num_kv_heads": 96, "ffn_hidden_size": 4 * 12288, "activation": "gelu", "tied_embeddings": True,
     "position_embeddings": "learned", "head_dim": 128},
])
def test_old_shape_spelled_out_is_the_same_count(catalog, details):
    assert shape_values(catalog, **GPT3, **details)["params_from_shape"] == \
        shape_values(catalog, **GPT3)["params_from_shape"]


def test_gqa_and_swiglu_by_hand(catalog):
    """Llama 3 8B by hand: q, o 4096×4096; k, v 4096×1024; SwiGLU 3×4096×14,336; untied
    128,256×4096 twice; rotary positions (no parameters)."""
    v = shape_values(catalog, preset="llama3-8b")
    attn = 2 * 4096 * 4096 + 2 * 4096 * 1024
    assert v["params_attention_layer"] == attn
    assert v["params_embeddings"] == 2 * 128256 * 4096
    assert v["params_from_shape"] == 2 * 128256 * 4096 + 32 * (attn + 3 * 4096 * 14336)
    assert v["params_active"] == v["model_params"] == 8.0e9          # the published count is used


# The published totals (and active counts) the shapes must reproduce within 1%: norms and
# biases are left out of the shape's count, as Kaplan et al. leave them out.
PUBLISHED = [
    # preset, published total, published active, where
    ("llama3-8b", 8.0e9, None, "Llama 3 paper Table 3 / model card: 8B"),
    ("llama3-70b", 70.0e9, None, "Llama 3 paper: 70B"),
    ("llama3-405b", 405.0e9, None, "Llama 3 paper §3.2: 405B"),
    ("mixtral-8x7b", 47.0e9, 13.0e9, "Mixtral paper abstract: 47B parameters, 13B active"),
    ("deepseek-v3", 671.0e9, 37.0e9, "DeepSeek-V3 report abstract: 671B total, 37B activated"),
    ("qwen2.5-72b", 72.7e9, None, "Qwen2.5-72B model card: 72.7B"),
]


@pytest.mark.parametrize("preset, total, active, where", PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_shape_reproduces_published_count(catalog, preset, total, active, where):
    v = shape_values(catalog, preset=preset)
    assert v["params_from_shape"] == pytest.approx(total, rel=0.01), where
    assert v["model_params"] == total                                  # the published figure is used
    if active is not None:
        assert v["params_active_from_shape"] == pytest.approx(active, rel=0.02), where
        assert v["params_active"] == active


def test_deepseek_v3_parts(catalog):
    """DeepSeek-V3 by hand (report §4.2, config.json): MLA attention 187.1M per layer, 58 MoE
    layers of 256 routed experts of 3·7168·2048 = 44.04M."""
    v = shape_values(catalog, preset="deepseek-v3")
    h = 7168
    mla = (h * 1536 + 1536 * 128 * (128 + 64) + h * (512 + 64) + 512 * 128 * (128 + 128) + 128 * 128 * h)
    assert mla == 187_105_280
    assert v["params_attention_layer"] == mla
    assert v["moe_layers"] == 58
    assert v["expert_params"] == 58 * 256 * 3 * h * 2048
    assert v["params_active_from_shape"] == pytest.approx(37.55e9, rel=1e-3)   # issue12_data §1.3 (D)


def test_mixtral_parts(catalog):
    """Mixtral 8x7B: 32 MoE layers of 8 experts of 3·4096·14,336, router 4096×8, top-2."""
    v = shape_values(catalog, preset="mixtral-8x7b")
    expert = 3 * 4096 * 14336
    assert v["expert_params"] == 32 * 8 * expert
    assert v["params_from_shape"] == pytest.approx(46.70e9, rel=1e-3)
    assert v["params_active_from_shape"] == pytest.approx(12.88e9, rel=1e-3)


def test_moe_layer_frequency(catalog):
    """An MoE layer every other layer after 2 dense ones, of 10 layers: layers 2, 4, 6, 8 (4)."""
    v = shape_values(catalog, **GPT3 | {"layers": 10}, moe={"experts": 4, "experts_per_token": 1,
                                                           "first_dense_layers": 2, "layer_freq": 2})
    assert v["moe_layers"] == 4


def test_scenario_overrides_a_preset_detail(catalog):
    """The scenario's model.moe.experts_per_token replaces the preset's; the published active
    count still wins over the shape's, which moves (top-1: one expert of 176M less per layer)."""
    base = shape_values(catalog, preset="mixtral-8x7b")
    top1 = shape_values(catalog, preset="mixtral-8x7b", moe={"experts_per_token": 1})
    assert top1["params_active"] == 13.0e9
    assert base["params_active_from_shape"] - top1["params_active_from_shape"] == 32 * 3 * 4096 * 14336


# --- model: {hf_config: config.json} (tests/data/hf_configs/SOURCES.md) --------------------

HF_CASES = [("llama3.1-8b.json", "llama3-8b", 8192), ("mixtral-8x7b.json", "mixtral-8x7b", 32768),
            ("deepseek-v3.json", "deepseek-v3", 4096), ("qwen2.5-72b.json", "qwen2.5-72b", 4096)]


@pytest.mark.parametrize("config, preset, seq_len", HF_CASES, ids=[c[0] for c in HF_CASES])
def test_hf_config_gives_the_presets_shape(catalog, config, preset, seq_len):
    """A published config.json read alone gives the same parameters as the catalog's preset."""
    from_config = shape_values(catalog, HF / "scenario.yaml", hf_config=config, seq_len=seq_len)
    from_preset = shape_values(catalog, preset=preset)
    for name in ("params_from_shape", "params_active_from_shape", "expert_params", "params_attention_layer"):
        assert from_config[name] == from_preset[name], name
    assert from_config["model_params"] == from_config["params_from_shape"]     # no published count given


def test_hf_config_values_cite_the_file_and_key(catalog):
    data = with_changes(raw(SEED_H100), {"model": {"hf_config": "deepseek-v3.json", "seq_len": 4096,
                                                   "moe": {"experts_per_token": 6}}, "parallelism": {}})
    s = parse_scenario(data, HF / "scenario.yaml", catalog)
    inputs = resolve_inputs(s, catalog)
    assert inputs["moe_experts"].value == 256
    assert inputs["moe_experts"].source == "Hugging Face config deepseek-v3.json: n_routed_experts"
    assert inputs["head_dim"].source.endswith("qk_nope_head_dim")
    assert inputs["moe_experts_per_token"].value == 6                          # the scenario wins
    assert "model.moe.experts_per_token" in inputs["moe_experts_per_token"].source
    assert inputs["model_layers"].source.endswith("num_hidden_layers")


def _hf_problem(catalog, tmp_path, text: str | None, **model):
    from budget.errors import ScenarioError
    if text is not None:
        (tmp_path / "config.json").write_text(text, encoding="utf-8")
    data = with_changes(raw(SEED_H100), {"model": {"hf_config": "config.json", "seq_len": 4096, **model},
                                         "parallelism": {}})
    with pytest.raises(ScenarioError) as err:
        parse_scenario(data, tmp_path / "s.yaml", catalog)
    (problem,) = err.value.problems
    return problem.path, str(problem.message), str(problem.fix)


@pytest.mark.parametrize("text, says", [
    (None, "cannot read the Hugging Face config config.json"),
    ("{\"architectures\": [\"LlamaForCausalLM\"],", "config.json is not valid JSON (line 1)"),
    ("[1, 2]", "config.json is not valid JSON"),
    ('{"architectures": ["GPT2LMHeadModel"], "n_layer": 12}',
     "config.json: architectures [GPT2LMHeadModel] is none this tool reads"),
    ('{"architectures": ["LlamaForCausalLM"], "hidden_act": "gelu"}',
     "config.json: hidden_act gelu is not a gated SiLU (SwiGLU) FFN"),
    ('{"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32, "hidden_size": 4096}',
     "config.json: the key num_attention_heads is missing"),
    ('{"architectures": ["LlamaForCausalLM"], "num_hidden_layers": "32", "hidden_size": 4096, '
     '"num_attention_heads": 32, "intermediate_size": 14336, "vocab_size": 128256}',
     'config.json: num_hidden_layers is "32", not a whole number'),
])
def test_hf_config_problems_name_file_and_field(catalog, tmp_path, text, says):
    path, message, fix = _hf_problem(catalog, tmp_path, text)
    assert path == "model.hf_config"
    assert message.startswith(says), message
    assert fix


def test_hf_config_needs_the_training_seq_len(catalog):
    from budget.errors import ScenarioError
    data = with_changes(raw(SEED_H100), {"model": {"hf_config": "llama3.1-8b.json"}, "parallelism": {}})
    with pytest.raises(ScenarioError) as err:
        parse_scenario(data, HF / "s.yaml", catalog)
    (problem,) = err.value.problems
    assert problem.path == "model.seq_len"
    assert "max_position_embeddings 131072" in str(problem.message)
