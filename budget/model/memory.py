"""Memory (the Memory sheet): the model states and activations, per GPU after TP, PP, CP, EP and
ZeRO, and the GPU count memory alone asks for."""

from __future__ import annotations

from ..formula.expr import AND, IF, ISNUMBER, NOT, ROUNDUP, Lookup, Ref
from .declare import Inputs
from .lineitems import ModelBuilder
from .tables import ACTIVATION_TABLE, acc


def memory(b: ModelBuilder, i: Inputs) -> None:
    r = Ref
    b.sheet("Memory", "accelerator_memory")
    hbm = b.item("hbm_gb", "GB", acc("hbm_gb"))
    usable = b.item("usable_hbm_gb", "GB", hbm * i.usable_memory_fraction)

    b.section("model_states")
    # issue 28: under LoRA the base is frozen (no gradients, no optimizer states) and held in 16
    # bits, or in 4-bit NF4 with its constants (QLoRA); the adapters are trained as usual
    lora = i.job_mode.eq("lora")
    base = b.item("base_weight_bytes_per_param", "bytes/parameter",
                  IF(AND(lora, i.base_weights.eq("int4")),
                     (i.qlora_weight_bits_per_param + i.qlora_constant_bits_per_param) / i.bits_per_byte,
                     i.weight_bytes_per_param))
    w = b.item("weights_gb", "GB",
               (Ref("model_params") * base + IF(lora, Ref("adapter_params") * i.weight_bytes_per_param, 0))
               / i.bytes_per_gb)
    g = b.item("gradients_gb", "GB", Ref("trainable_params") * i.grad_bytes_per_param / i.bytes_per_gb)
    o = b.item("optimizer_gb", "GB", Ref("trainable_params") * i.optimizer_bytes_per_param / i.bytes_per_gb)

    b.section("activations")
    mode = b.item("activation_mode", "text", i.recompute.concat("/").concat(i.sequence_parallel))
    # Without dropout (Llama, DeepSeek-V3) the two 1-byte masks per layer go (Korthikanti et al.
    # 2022 §4.1: attention and MLP dropout, sbh each, not split by TP without SP), and the
    # attention scores' mask and dropout output (as²b·(1 + 2)) go; full recompute stores neither
    sp_yes = i.sequence_parallel.eq("yes")
    masks = b.item("act_bytes_dropout", "bytes",
                   IF(AND(i.dropout.eq("no"), NOT(i.recompute.eq("full"))), 2 * i.dropout_mask_bytes, 0))
    # DeepSeek-V3 §3.2.3 recomputes every RMSNorm (and the MLA up-projections) in the backward
    # pass: the two norm outputs, the inputs of the QKV and first MLP matmuls (2 bytes each in
    # Korthikanti et al. 2022 §4.1), are not stored
    rebuild = AND(i.recompute_norms_and_up_projections.eq("yes"), NOT(i.recompute.eq("full")))
    norms = b.item("act_bytes_norm_outputs_recomputed", "bytes",
                   IF(rebuild, 2 * i.activation_bytes_per_element, 0))
    rep = b.item("act_bytes_replicated", "bytes",
                 Lookup(ACTIVATION_TABLE, "replicated", mode) - IF(sp_yes, 0, masks + norms))
    # Korthikanti's 24 split bytes are Q, K, V and the projection's input (2 each) and the 4h GeLU
    # MLP's two 4h-wide tensors (8 each); for other shapes: Q and the projection's input heads·d
    # wide, K and V kv_heads·d wide, and one f-wide tensor per FFN matrix (SwiGLU: gate, up and
    # their product), f averaged over the layers (an MoE layer: its top-k and shared experts').
    h, L = i.hidden_size, i.model_layers
    q = i.attention_heads * r("head_dim_used") / h
    kv = r("kv_heads_used") * r("head_dim_used") / h
    f_avg = b.item("ffn_activation_width", "width",
                   ((L - r("moe_layers")) * r("ffn_hidden_used")
                    + r("moe_layers") * (IF(ISNUMBER(i.moe_experts_per_token), i.moe_experts_per_token, 0)
                                         + IF(ISNUMBER(i.moe_shared_experts), i.moe_shared_experts, 0))
                    * IF(ISNUMBER(i.moe_expert_ffn_hidden_size), i.moe_expert_ffn_hidden_size,
                         r("ffn_hidden_used"))) / L)
    shape_split = b.item("act_bytes_split_shape", "bytes",
                         2 * q + 2 * kv + 2 * kv + 2 * q + 2 * r("ffn_matrices") * f_avg / h)
    extra = b.item("act_bytes_shape_extra", "bytes",
                   IF(i.recompute.eq("full"), 0, shape_split - i.korthikanti_split_bytes))
    # ... and Q, K and V are rebuilt from what the up-projections read: MLA's latents (query
    # rank, K/V rank and the RoPE key, 2 bytes each), or the stored layer input otherwise
    latents = IF(ISNUMBER(i.mla_kv_lora_rank),
                 IF(ISNUMBER(i.mla_q_lora_rank), i.mla_q_lora_rank, 0) + i.mla_kv_lora_rank
                 + IF(ISNUMBER(i.mla_rope_head_dim), i.mla_rope_head_dim, 0), 0)
    up = b.item("act_bytes_up_projections_recomputed", "bytes",
                IF(rebuild, 2 * q + 2 * kv + 2 * kv - i.activation_bytes_per_element * latents / h, 0))
    split16 = b.item("act_bytes_split_16bit", "bytes",
                     Lookup(ACTIVATION_TABLE, "split", mode) + extra - IF(sp_yes, masks + norms, 0) - up)
    # FP8/FP4 compute (DeepSeek-V3 §3.3.3): a share of these bytes is cached in FP8, 1 byte (an
    # FP8 element) instead of activation_bytes_per_element
    split = b.item("act_bytes_split", "bytes",
                   split16 * (1 - IF(i.compute_precision.eq("bf16"), 0, i.fp8_activation_share)
                              * (1 - 1 / i.activation_bytes_per_element)))
    attn_table = Lookup(ACTIVATION_TABLE, "attention", mode)
    attn = b.item("act_bytes_attention", "bytes",
                  IF(i.flash_attention.eq("yes"), 0,
                     attn_table - IF(AND(i.dropout.eq("no"), attn_table > 0),
                                     i.dropout_mask_bytes + i.activation_bytes_per_element, 0)))
    sbh = b.item("act_sbh", "elements", i.seq_len * i.micro_batch_size * i.hidden_size)
    per_layer = b.item("activation_layer_gb", "GB",
                       sbh * (rep + split + attn * i.attention_heads * i.seq_len / i.hidden_size)
                       / i.bytes_per_gb)
    act_total = b.item("activations_gb", "GB",
                       IF(ISNUMBER(i.activation_gb_override), i.activation_gb_override,
                          per_layer * i.model_layers))
    total = b.item("memory_total_gb", "GB", w + g + o + act_total)

    b.section("per_gpu")
    tp, pp, zero, cp = i.tp_size, i.pp_size, i.zero_stage, i.cp_size
    # ZeRO shards over the data-parallel ranks, with CP over data × context ranks (Megatron-Core)
    dp = r("dp_size") * cp
    stage = r("largest_stage_factor") * r("pipeline_weight_copies")
    # EP: each GPU holds 1/ep of the routed experts (and their gradients and optimizer states);
    # ZeRO shards them over the dp/ep expert-data-parallel ranks, so sharded they are 1/dp either way
    ep_cut = b.item("ep_state_saving", "fraction",
                    Ref("expert_params") / Ref("model_params") * (1 - 1 / i.ep_size))
    w_gpu = b.item("weights_per_gpu_gb", "GB",
                   w / (tp * pp) / IF(zero > 2, dp, 1) * stage * (1 - IF(zero > 2, 0, ep_cut)))
    g_gpu = b.item("gradients_per_gpu_gb", "GB",
                   g / (tp * pp) / IF(zero >= 2, dp, 1) * stage * (1 - IF(zero >= 2, 0, ep_cut)))
    o_gpu = b.item("optimizer_per_gpu_gb", "GB",
                   o / (tp * pp) / IF(zero >= 1, dp, 1) * stage * (1 - IF(zero >= 1, 0, ep_cut)))
    a_gpu = b.item("activations_per_gpu_gb", "GB",
                   IF(ISNUMBER(i.activation_gb_override), i.activation_gb_override / (tp * pp * cp),
                      sbh * (rep + split / tp + attn * i.attention_heads * i.seq_len / (i.hidden_size * tp))
                      * (i.model_layers / pp) * r("microbatches_in_flight") / i.bytes_per_gb / cp)
                   * r("largest_stage_factor"))
    # PyTorch FSDP's rate limiter: the layer computing and the one prefetched are gathered in full
    gathered = b.item("zero3_gathered_gb", "GB",
                      IF(zero > 2, i.zero3_gathered_layers * Ref("model_params") / i.model_layers
                         * base / tp / i.bytes_per_gb, 0))
    per_gpu = b.item("memory_per_gpu_gb", "GB", w_gpu + g_gpu + o_gpu + a_gpu + gathered)
    b.item("memory_headroom_gb", "GB", usable - per_gpu)

    b.section("gpu_count_from_memory")
    min_gpus = b.item("min_gpus_for_memory", "GPUs", ROUNDUP(total / usable, 0))
    min_nodes = b.item("min_nodes_for_memory", "nodes", ROUNDUP(min_gpus / r("gpus_per_node"), 0))
    nodes = b.item("memory_first_nodes", "nodes", ROUNDUP(min_nodes * (1 + i.split_margin), 0))
    b.item("memory_first_gpus", "GPUs", nodes * r("gpus_per_node"))
    b.item("reserved_gpus", "GPUs", (r("nodes") + i.spare_nodes) * r("gpus_per_node"))
