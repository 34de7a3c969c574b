"""The model section's `hf_config`: the network's shape read from a local Hugging Face
config.json (the architectures whose shape the planner can read, and the keys it takes)."""

from __future__ import annotations

from pathlib import Path

from ...core import limits
from ...core.errors import Msg, rule_error
from ...core.reading import ReadRefused, load_json, read_regular

# Hugging Face config.json -> the shape. Architectures whose FFN is gated with SiLU (SwiGLU),
# positions rotary and embeddings untied unless the config says tie_word_embeddings.
HF_ARCHITECTURES = ("LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM", "Qwen2ForCausalLM",
                    "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM")
HF_GATED_ACTIVATIONS = ("silu", "swish")
# config.json key -> flat shape key (the first key present wins, in this order)
HF_KEYS = (
    ("num_hidden_layers", "layers"), ("hidden_size", "hidden_size"),
    ("num_attention_heads", "attention_heads"), ("num_key_value_heads", "num_kv_heads"),
    ("qk_nope_head_dim", "head_dim"), ("head_dim", "head_dim"),
    ("intermediate_size", "ffn_hidden_size"), ("vocab_size", "vocab_size"),
    ("max_position_embeddings", "max_context"), ("tie_word_embeddings", "tied_embeddings"),
    ("num_local_experts", "moe_experts"), ("n_routed_experts", "moe_experts"),
    ("num_experts_per_tok", "moe_experts_per_token"), ("n_shared_experts", "moe_shared_experts"),
    ("moe_intermediate_size", "moe_expert_ffn_hidden_size"),
    ("first_k_dense_replace", "moe_first_dense_layers"), ("moe_layer_freq", "moe_layer_freq"),
    ("q_lora_rank", "mla_q_lora_rank"), ("kv_lora_rank", "mla_kv_lora_rank"),
    ("qk_rope_head_dim", "mla_rope_head_dim"), ("v_head_dim", "mla_v_head_dim"),
)
HF_REQUIRED = ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size", "vocab_size")
HF_MAX_BYTES = limits.MAX_HF_CONFIG_BYTES
# Counts that may be 0 in a published config (no shared expert, no leading dense layer); every
# other dimension is at least 1 (0 heads or layers would divide by zero).
HF_MAY_BE_ZERO = ("moe_shared_experts", "moe_first_dense_layers")


def read_hf_config(path: Path, given: str) -> dict:
    """The shape in a Hugging Face config.json: flat shape key -> (value, config key). Problems
    (no file, not JSON, an architecture or key it cannot read) name the file and the key."""
    import json

    def fail(kind: str, **figures):
        return rule_error(Msg(f"errors.scenario.hf_config.{kind}.message", file=given, **figures),
                          Msg(f"errors.scenario.hf_config.{kind}.fix", file=given, **figures), "model.hf_config")

    try:
        data = load_json(read_regular(path, HF_MAX_BYTES), limits.MAX_JSON_DEPTH)
    except ReadRefused as exc:
        key = exc.message.key
        if key == "errors.read.too_large.message":
            raise fail("too_big", limit=HF_MAX_BYTES, path=str(path)) from None
        if key == "errors.read.too_deep.message":
            raise fail("too_deep", levels=limits.MAX_JSON_DEPTH, path=str(path)) from None
        if key == "errors.read.bad_json.message":
            raise fail("bad_json", line=exc.message.figures["line"], path=str(path)) from None
        raise fail("not_regular", reason=exc.message, path=str(path)) from None
    except OSError:
        raise fail("missing", folder=str(path.parent)) from None
    if not isinstance(data, dict):
        raise fail("bad_json", line=1, path=str(path))
    archs = data.get("architectures") or []
    arch = next((a for a in archs if a in HF_ARCHITECTURES), None) if isinstance(archs, list) else None
    if arch is None:
        raise fail("architecture", found=", ".join(map(str, archs)) if isinstance(archs, list) else str(archs),
                   known=", ".join(HF_ARCHITECTURES))
    act = data.get("hidden_act", "silu")
    if act not in HF_GATED_ACTIVATIONS:
        raise fail("activation", key="hidden_act", value=str(act))
    for key in HF_REQUIRED:
        if key not in data:
            raise fail("key_missing", key=key)
    out: dict = {"activation": ("swiglu", "hidden_act"), "position_embeddings": ("rotary", "architectures"),
                 "tied_embeddings": (False, "tie_word_embeddings")}
    for key, flat in HF_KEYS:
        if key not in data or data[key] is None or (flat in out and flat != "tied_embeddings"):
            continue
        value = data[key]
        if flat == "tied_embeddings":
            if not isinstance(value, bool):
                raise fail("key_type", key=key, value=json.dumps(value))
        elif isinstance(value, bool) or not isinstance(value, int) or value < 0 or value > 2 ** 24:
            raise fail("key_type", key=key, value=json.dumps(value))
        elif value < 1 and flat not in HF_MAY_BE_ZERO:
            raise fail("not_positive", key=key, value=value)
        out[flat] = (value, key)
    if "moe_experts" not in out:   # a dense model: experts' keys of a config template mean nothing
        out = {k: v for k, v in out.items() if not k.startswith("moe_")}
    if "mla_kv_lora_rank" not in out:
        out = {k: v for k, v in out.items() if not k.startswith("mla_")}
    elif out.get("head_dim", (None, ""))[1] != "qk_nope_head_dim":
        raise fail("key_missing", key="qk_nope_head_dim")
    if arch == "MixtralForCausalLM" and "moe_expert_ffn_hidden_size" not in out:
        out["moe_expert_ffn_hidden_size"] = (data["intermediate_size"], "intermediate_size")
    return out

