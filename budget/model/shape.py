"""Shape, parameters and FLOPs (the Compute sheet's first part): the chosen accelerator's catalog
figures, the parameters from the model's shape, the training FLOPs per token, the baseline
utilisation and the batch."""

from __future__ import annotations

from ..formula.expr import IF, ISNUMBER, MAX, ROUNDUP, SUM, Ref
from .declare import Inputs
from .lineitems import ModelBuilder
from .stages import stage_values
from .tables import acc


def accelerator(b: ModelBuilder, i: Inputs) -> None:
    b.sheet("Compute", "accelerator")
    b.item("accelerator_name", "text", acc("name"))
    bf16 = b.item("peak_bf16_tflops", "TFLOPS", acc("peak_bf16_tflops"))
    # the dense peak of the compute precision; blank in the catalog (none published) reads as 0
    # here, and check_precision_peak fails
    b.item("peak_tflops", "TFLOPS",
           IF(i.compute_precision.eq("fp8"), acc("peak_fp8_tflops"),
              IF(i.compute_precision.eq("fp4"), acc("peak_fp4_tflops"), bf16)))
    b.item("gpus_per_node", "GPUs", acc("gpus_per_node"))
    # the GPUs one fast fabric joins (NVLink across an NVL72 rack, a TPU pod's ICI), at least a
    # node; a reviewer's row without it: the node
    domain = acc("scale_up_domain")
    b.item("scale_up_gpus", "GPUs", IF(ISNUMBER(domain), MAX(domain, Ref("gpus_per_node")), Ref("gpus_per_node")))
    b.item("intra_node_gb_per_s", "GB/s", acc("intra_node_gb_per_s"))
    b.item("scale_out_gb_per_s", "GB/s",
           IF(i.gpu_count <= Ref("gpus_per_node"), Ref("intra_node_gb_per_s"),
              acc("inter_node_gbit_per_s") / i.bits_per_byte))

    b.section("model")
    params(b, i)
    flops_per_token(b, i)

    b.section("utilisation")
    utilisation(b, i)

    b.section("batch")
    batch_tokens = b.item("global_batch_tokens", "tokens", i.global_batch_sequences * i.seq_len)
    staged = stage_values(b, i)
    b.item("train_steps", "steps", IF(staged, SUM(Ref("stage_train_steps")), i.train_tokens / batch_tokens))
    b.item("tokens_per_param", "tokens/parameter", i.train_tokens / Ref("model_params"))


def params(b: ModelBuilder, i: Inputs) -> None:
    """Parameters from the shape: embeddings, attention (MHA, GQA/MQA or MLA), dense FFN (GeLU or
    SwiGLU) and MoE layers. For the old GPT shape (MHA, GeLU with 4·h, one embedding matrix,
    learned positions) the sum is Kaplan et al.'s 12·L·h² + (V + s)·h exactly. Norms and biases
    are left out, as Kaplan leaves them out (under 0.01% of the count)."""
    L, h, heads = i.model_layers, i.hidden_size, i.attention_heads

    def given(x, default):
        return IF(ISNUMBER(x), x, default)

    hd = b.item("head_dim_used", "width", given(i.head_dim, h / heads))
    kv = b.item("kv_heads_used", "heads", given(i.num_kv_heads, heads))
    ffn = b.item("ffn_hidden_used", "width", given(i.ffn_hidden_size, i.ffn_width_per_hidden * h))
    mats = b.item("ffn_matrices", "matrices", IF(i.activation.eq("swiglu"), i.gated_ffn_matrices, 2))
    emb = b.item("params_embeddings", "parameters",
                 i.vocab_size * h * IF(i.tied_embeddings.eq("yes"), 1, 2)
                 + IF(i.position_embeddings.eq("learned"), i.seq_len * h, 0))
    rope = given(i.mla_rope_head_dim, 0)
    mla = (IF(ISNUMBER(i.mla_q_lora_rank), i.mla_q_lora_rank * (h + heads * (hd + rope)), h * heads * (hd + rope))
           + h * (i.mla_kv_lora_rank + rope) + i.mla_kv_lora_rank * heads * (hd + i.mla_v_head_dim)
           + heads * i.mla_v_head_dim * h)
    attn = b.item("params_attention_layer", "parameters",
                  IF(ISNUMBER(i.mla_kv_lora_rank), mla, 2 * h * heads * hd + 2 * h * kv * hd))
    dense = b.item("params_dense_ffn_layer", "parameters", mats * h * ffn)
    moe = ISNUMBER(i.moe_experts)
    experts = b.item("moe_experts_used", "experts", given(i.moe_experts, 0))
    first = given(i.moe_first_dense_layers, 0)
    moe_layers = b.item("moe_layers", "layers",
                        IF(moe, ROUNDUP((L - first) / given(i.moe_layer_freq, 1), 0), 0))
    expert = b.item("params_expert", "parameters", mats * h * given(i.moe_expert_ffn_hidden_size, ffn))
    shared = given(i.moe_shared_experts, 0)
    router = b.item("params_router_layer", "parameters", experts * h)
    b.item("params_moe_layer", "parameters", (experts + shared) * expert + router)
    routed = b.item("expert_params", "parameters", moe_layers * experts * expert)
    common = b.item("params_dense_part", "parameters",
                    emb + L * attn + (L - moe_layers) * dense + moe_layers * (shared * expert + router))
    shape = b.item("params_from_shape", "parameters", common + routed)
    active = b.item("params_active_from_shape", "parameters",
                    common + moe_layers * given(i.moe_experts_per_token, 0) * expert)
    total = b.item("model_params", "parameters", given(i.params_override, shape))
    b.item("params_active", "parameters",
           IF(moe, given(i.active_params_override, active), total))
    adapters(b, i)


def adapters(b: ModelBuilder, i: Inputs) -> None:
    """Issue 28: LoRA's adapter parameters (Hu et al. 2021, arXiv:2106.09685 §4: a d×k weight
    gains B (d×r) and A (r×k), r·(d + k) parameters) on the matrices lora_targets names, in every
    layer: attention_qv, W_q (h → heads·d) and W_v (h → kv_heads·d) as Hu et al. §7.1; attention,
    W_q, W_k, W_v and W_o; all_linear, those and each dense FFN matrix (h ↔ f), as QLoRA does (an
    MoE model's experts are not counted: give job.adapter_params). The trainable parameters are
    the adapters' under LoRA, every parameter otherwise."""
    r, h, L, rank = Ref, i.hidden_size, i.model_layers, i.lora_rank
    q = i.attention_heads * r("head_dim_used")
    kv = r("kv_heads_used") * r("head_dim_used")
    qv = rank * (h + q) + rank * (h + kv)
    attention = qv + rank * (h + kv) + rank * (q + h)
    per_layer = b.item("adapter_params_layer", "parameters",
                       IF(i.lora_targets.eq("attention_qv"), qv,
                          IF(i.lora_targets.eq("attention"), attention,
                             attention + r("ffn_matrices") * rank * (h + r("ffn_hidden_used")))))
    adapter = b.item("adapter_params", "parameters",
                     IF(ISNUMBER(i.adapter_params_override), i.adapter_params_override, L * per_layer))
    b.item("trainable_params", "parameters", IF(i.job_mode.eq("lora"), adapter, r("model_params")))


def flops_per_token(b: ModelBuilder, i: Inputs) -> None:
    """Training FLOPs per token on both bases (issue12_data §3): 6·N (Kaplan et al. 2020, with the
    active parameters of an MoE model), or the matmuls (embedding lookups left out, the output
    head's logits in) plus the attention scores QKᵀ and AV, 6·L·s·heads·(d_qk + d_v)·c, c = ½ for
    causal attention counted as FlashAttention and DeepSeek do, 1 as Megatron and PaLM do."""
    L, h, heads = i.model_layers, i.hidden_size, i.attention_heads
    lookup = b.item("params_lookup", "parameters",
                    IF(i.tied_embeddings.eq("yes"), 0, i.vocab_size * h)
                    + IF(i.position_embeddings.eq("learned"), i.seq_len * h, 0))
    width = b.item("attention_score_width", "width",
                   heads * (Ref("head_dim_used") + IF(ISNUMBER(i.mla_rope_head_dim), i.mla_rope_head_dim, 0)
                            + IF(ISNUMBER(i.mla_v_head_dim), i.mla_v_head_dim, Ref("head_dim_used"))))
    # LoRA (issue 28): the frozen weights' forward and input-gradient passes (4·N, Hu et al. 2021
    # §4.2), plus the adapters' full 6 per parameter (Kaplan et al. 2020's 6·N·D convention)
    lora = i.job_mode.eq("lora")
    per_param = b.item("flops_per_param_token_used", "FLOP/(parameter·token)",
                       IF(lora, i.frozen_flops_per_param_token, i.flops_per_param_token))
    adapter = b.item("adapter_flops_per_token", "FLOP/token",
                     IF(lora, i.flops_per_param_token * Ref("adapter_params"), 0))
    six = b.item("flops_per_token_6n", "FLOP/token", per_param * Ref("params_active") + adapter)
    # the attention scores have no weights: both their backward products are input gradients
    attn = b.item("attention_flops_per_token", "FLOP/token",
                  i.flops_per_param_token * L * i.seq_len * width * i.causal_attention_fraction)
    full = b.item("flops_per_token_with_attention", "FLOP/token",
                  per_param * (Ref("params_active") - lookup) + attn + adapter)
    b.item("model_flops_per_token", "FLOP/token", IF(i.flops_basis.eq("with_attention"), full, six))


def utilisation(b: ModelBuilder, i: Inputs) -> None:
    """Hardware FLOPs count recomputation (Korthikanti et al. 2022 §6.3, after PaLM): full
    recomputation runs the layers' forward again (not the output head: Narayanan et al. 2021,
    Eq. 3), selective adds the attention scores' FLOPs once more (Korthikanti et al. 2022, Eq. 8,
    which reproduces their Table 5). A typed HFU is converted to MFU on the chosen basis."""
    r = Ref
    fwd = i.forward_flops_per_param_token / r("flops_per_param_token_used")
    extra = b.item("recompute_flops_per_token", "FLOP/token",
                   IF(i.recompute.eq("full"),
                      fwd * (r("model_flops_per_token") - r("flops_per_param_token_used") * i.vocab_size * i.hidden_size),
                      IF(i.recompute.eq("selective"), r("attention_flops_per_token"), 0)))
    hw = b.item("hardware_flops_per_token", "FLOP/token", r("model_flops_per_token") + extra)
    ratio = b.item("model_to_hardware_flops", "fraction", r("model_flops_per_token") / hw)
    b.item("mfu_from_hfu", "fraction", IF(ISNUMBER(i.hfu), i.hfu * ratio, 0))
    # An MFU against the BF16 peak (DeepSeek-V3, ISCA'25 §5.1.2; Llama 3 Table 4; the catalog's
    # typical MFU) is the same throughput as MFU × BF16 peak ÷ the compute precision's peak
    bf16_share = b.item("bf16_to_compute_peak", "fraction", r("peak_bf16_tflops") / r("peak_tflops"))
    typed = b.item("mfu_basis_factor", "fraction", IF(i.mfu_peak.eq("compute"), 1, bf16_share))
    b.item("baseline_mfu", "fraction",
           IF(ISNUMBER(i.mfu), i.mfu * typed,
              IF(ISNUMBER(i.hfu), r("mfu_from_hfu") * typed,
                 IF(ISNUMBER(i.effective_tflops_given), i.effective_tflops_given / r("peak_tflops"),
                    acc("typical_mfu") * bf16_share))))
