"""The `model` section: the network, a catalog preset with overrides, a full shape or a Hugging
Face config.json, with its mixture-of-experts and latent-attention details; and the shape the
plan uses, resolved from them (GPT-3's aspect ratio where only a parameter count is given)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import PrivateAttr, ValidationInfo, model_validator

from ..catalog import Catalog
from ...core.errors import Msg, rule_error
from .base import Params, PositiveInt, SafeText, Section, whole
from .hf_config import read_hf_config


class MoESection(Section):
    """Mixture of experts: routed experts, how many a token uses, shared experts, each expert's
    FFN width (blank: the dense FFN's), the leading dense layers and every how many layers after
    them an MoE layer comes (1: every layer)."""
    experts: PositiveInt | None = None
    experts_per_token: PositiveInt | None = None
    shared_experts: whole(ge=0, le=2 ** 16) | None = None
    expert_ffn_hidden_size: PositiveInt | None = None
    first_dense_layers: whole(ge=0, le=2 ** 24) | None = None
    layer_freq: PositiveInt | None = None


class MLASection(Section):
    """Multi-head latent attention (DeepSeek-V2/V3): the low-rank query and key/value
    compressions, the decoupled RoPE width of q and k, and the value head width."""
    q_lora_rank: PositiveInt | None = None
    kv_lora_rank: PositiveInt | None = None
    rope_head_dim: whole(ge=0, le=2 ** 16) | None = None
    v_head_dim: PositiveInt | None = None


class ModelSection(Section):
    """The network: a preset from catalogs/models.yaml, its fields overridable, or a full shape.
    Blank shape details are the old GPT shape's: K/V heads = attention heads, FFN 4·h with GeLU,
    one shared embedding matrix, learned positions, dense."""
    preset: str | None = None
    params: Params | None = None
    active_params: Params | None = None
    layers: PositiveInt | None = None
    hidden_size: PositiveInt | None = None
    attention_heads: PositiveInt | None = None
    num_kv_heads: PositiveInt | None = None
    head_dim: PositiveInt | None = None
    ffn_hidden_size: PositiveInt | None = None
    activation: Literal["gelu", "swiglu"] | None = None
    tied_embeddings: bool | None = None
    position_embeddings: Literal["learned", "rotary"] | None = None
    seq_len: PositiveInt | None = None
    vocab_size: PositiveInt | None = None
    moe: MoESection | None = None
    mla: MLASection | None = None
    # Korthikanti et al. 2022 §4.1's dropout masks; Llama 3 and DeepSeek-V3 have no dropout
    dropout: bool = True
    # A local Hugging Face config.json (relative to the scenario file) the shape is read from;
    # the scenario's own keys win over it, it wins over a preset. Not the training seq_len.
    hf_config: SafeText | None = None
    _hf: dict = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _read_hf_config(self, info: ValidationInfo):
        if self.hf_config is not None:
            base = (info.context or {}).get("base_dir")
            self._hf = read_hf_config(Path(base or ".") / self.hf_config, self.hf_config)
        return self

    @property
    def hf_shape(self) -> dict:
        """The shape read from hf_config: flat shape key -> (value, the config.json key)."""
        return self._hf


SHAPE_FIELDS = ("params", "layers", "hidden_size", "attention_heads", "seq_len", "vocab_size")


def resolve_shape(model: ModelSection, batch: int | None, catalog: Catalog | None) -> dict | None:
    """The model shape after applying overrides to the preset, and `batch` (the data section's
    global batch, when given); None if it cannot be known yet."""
    shape: dict = {}
    if model.preset is not None:
        if catalog is None:
            return None
        preset = catalog.model(model.preset)
        shape = {f: getattr(preset, f) for f in SHAPE_FIELDS}
        if preset.global_batch_sequences is not None:
            shape["global_batch_sequences"] = preset.global_batch_sequences
    for f in SHAPE_FIELDS:
        if f in model.hf_shape:
            shape[f] = model.hf_shape[f][0]
        if getattr(model, f) is not None:
            shape[f] = getattr(model, f)
    shape.update(shape_details(model, catalog))
    if model.hf_config is not None and "seq_len" not in shape:
        longest = model.hf_shape.get("max_context", (None,))[0]
        raise rule_error(Msg("errors.scenario.hf_seq_len.message", file=model.hf_config, longest=longest),
                         Msg("errors.scenario.hf_seq_len.fix"), "model.seq_len")
    if batch is not None:
        shape["global_batch_sequences"] = batch
    missing = [f for f in SHAPE_FIELDS[1:] if f not in shape]
    if missing and "params" in shape:
        shape.update({f: v for f, v in shape_from_params(shape["params"]).items() if f in missing})
        shape["derived"] = set(missing)
    elif missing:
        raise rule_error(Msg("errors.scenario.shape_incomplete.message", missing=", ".join(missing)),
                         Msg("errors.scenario.shape_incomplete.fix"), "model." + missing[0])
    if "params" not in shape:
        L, h, V, s_ = shape["layers"], shape["hidden_size"], shape["vocab_size"], shape["seq_len"]
        shape["params"] = float(12 * L * h * h + (V + s_) * h)  # Kaplan et al. 2020, eq. 2.1 + embeddings
        shape["params_from_shape"] = True
    if "global_batch_sequences" not in shape:
        # 4M tokens per step, the common choice for 10B-500B models, rounded to whole sequences
        shape["global_batch_sequences"] = max(1, round(4_194_304 / shape["seq_len"]))
        shape["batch_defaulted"] = True
    if shape["hidden_size"] % shape["attention_heads"] and shape.get("head_dim") is None:
        raise rule_error(Msg("errors.scenario.heads_split.message", hidden=shape["hidden_size"],
                             heads=shape["attention_heads"]),
                         Msg("errors.scenario.heads_split.fix"), "model.attention_heads")
    _check_details(shape)
    return shape


# The shape's details beyond the GPT-3 fields: flat key -> (section, field) in the scenario's
# `model` and in a catalog preset. Absent, each is blank in the workbook (the old GPT shape).
SHAPE_DETAILS = {
    "active_params": (None, "active_params"), "num_kv_heads": (None, "num_kv_heads"),
    "head_dim": (None, "head_dim"), "ffn_hidden_size": (None, "ffn_hidden_size"),
    "activation": (None, "activation"), "tied_embeddings": (None, "tied_embeddings"),
    "position_embeddings": (None, "position_embeddings"),
    "moe_experts": ("moe", "experts"), "moe_experts_per_token": ("moe", "experts_per_token"),
    "moe_shared_experts": ("moe", "shared_experts"),
    "moe_expert_ffn_hidden_size": ("moe", "expert_ffn_hidden_size"),
    "moe_first_dense_layers": ("moe", "first_dense_layers"), "moe_layer_freq": ("moe", "layer_freq"),
    "mla_q_lora_rank": ("mla", "q_lora_rank"), "mla_kv_lora_rank": ("mla", "kv_lora_rank"),
    "mla_rope_head_dim": ("mla", "rope_head_dim"), "mla_v_head_dim": ("mla", "v_head_dim"),
}


def _detail(node, section: str | None, field: str):
    if node is not None and section is not None:
        node = getattr(node, section, None)
    return getattr(node, field, None) if node is not None else None


def shape_details(model: ModelSection, catalog: Catalog | None) -> dict:
    """The preset's shape details, each overridden by the scenario's own (None: not given)."""
    preset = catalog.model(model.preset) if model.preset is not None and catalog is not None else None
    out = {}
    for key, (section, field) in SHAPE_DETAILS.items():
        value = _detail(model, section, field)
        if value is None and key in model.hf_shape:
            value = model.hf_shape[key][0]
        out[key] = value if value is not None else _detail(preset, section, field)
    return out


def _check_details(shape: dict) -> None:
    heads, kv = shape["attention_heads"], shape.get("num_kv_heads")
    if kv is not None and (kv > heads or heads % kv):
        raise rule_error(Msg("errors.scenario.kv_heads.message", kv=kv, heads=heads),
                         Msg("errors.scenario.kv_heads.fix"), "model.num_kv_heads")
    experts, k = shape.get("moe_experts"), shape.get("moe_experts_per_token")
    if (experts is None) != (k is None) or (experts is not None and k > experts):
        raise rule_error(Msg("errors.scenario.moe_experts.message", experts=experts, k=k),
                         Msg("errors.scenario.moe_experts.fix"),
                         "model.moe.experts_per_token" if experts is not None else "model.moe.experts")
    first = shape.get("moe_first_dense_layers")
    if experts is not None and first is not None and first >= shape["layers"]:
        raise rule_error(Msg("errors.scenario.moe_dense_layers.message", first=first, layers=shape["layers"]),
                         Msg("errors.scenario.moe_dense_layers.fix"), "model.moe.first_dense_layers")


HEAD_SIZE = 128
DEFAULT_SEQ_LEN = 4096
DEFAULT_VOCAB = 32000


def shape_from_params(params: float) -> dict:
    """A plausible shape for a parameter count alone: GPT-3's aspect ratio, hidden = 128 × layers
    with 128-wide heads (Brown et al. 2020, Table 2.1), so params ≈ 12·L·h² = 196,608·L³. Layers
    round to a multiple of 8, so the heads divide by any TP up to 8 (7B gives LLaMA 7B's 32 × 4,096)."""
    layers = max(8, 8 * round((params / (12 * HEAD_SIZE ** 2)) ** (1 / 3) / 8))
    hidden = HEAD_SIZE * layers
    return {"layers": layers, "hidden_size": hidden, "attention_heads": hidden // HEAD_SIZE,
            "seq_len": DEFAULT_SEQ_LEN, "vocab_size": DEFAULT_VOCAB}
