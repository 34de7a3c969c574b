"""Layout and efficiency (the Parallelism sheet): the chosen layout, the step time with its pipeline
bubble and communication, the fitted step-time model (issue 13) and the effective MFU."""

from __future__ import annotations

from ..formula.expr import AND, IF, ISNUMBER, MAX, MIN, NOT, OR, ROUNDUP, Expr, Lookup, Ref
from .declare import EFFICIENCY_STACKS, Inputs, choose
from .lineitems import ModelBuilder
from .tables import ACCELERATOR_TABLE, ACTIVATION_TABLE, ARCHITECTURE_TABLE, acc, arch_figure


def layout(b: ModelBuilder, i: Inputs) -> None:
    b.sheet("Parallelism", "chosen_layout")
    pp, v, cp = i.pp_size, i.virtual_pipeline_stages, i.cp_size
    dp = b.item("dp_size", "replicas", i.gpu_count / (i.tp_size * pp * cp))
    b.item("layout_label", "text",
           IF(cp > 1, i.tp_size.concat(" × ").concat(cp).concat(" × ").concat(pp).concat(" × ").concat(dp),
              i.tp_size.concat(" × ").concat(pp).concat(" × ").concat(dp)))
    b.item("nodes", "nodes", ROUNDUP(i.gpu_count / Ref("gpus_per_node"), 0))
    m = b.item("microbatches_per_step", "micro-batches", i.global_batch_sequences / (dp * i.micro_batch_size))
    # Korthikanti et al. 2022 §4.2.3: interleaving keeps L·(1 + (p−1)/(p·v)) layers of activations
    # on the first stage, i.e. p + (p−1)/v micro-batches of its L/p layers (never more than m).
    # DualPipe (DeepSeek-V3 §3.2.1, Table 2): PP + 1 micro-batches of activations.
    dualpipe = i.pipeline_schedule.eq("dualpipe")
    b.item("microbatches_in_flight", "micro-batches",
           IF(dualpipe, MIN(pp + 1, m), IF(v > 1, MIN(pp + (pp - 1) / v, m), MIN(pp, m))))
    # DualPipe keeps two copies of the parameters: each rank holds stage i and stage p − 1 − i
    b.item("pipeline_weight_copies", "×", IF(dualpipe, 2, 1))
    # Llama 3 §3.3.2: one layer fewer on the first and the last stage, so the middle stages hold
    # (L + 2)/p layers; memory per GPU is that of the largest stage (1 = even stages).
    # DualPipe runs stages of uneven depth (DeepSeek-V3: 61 layers, the MTP module, the embedding
    # and the head on 16 ranks): the largest holds ROUNDUP(L/p) layers (an approximation)
    extra = IF(i.first_last_stage_layers_fewer.eq("yes"), 2, 0)
    b.item("largest_stage_factor", "×",
           IF(dualpipe, ROUNDUP((i.model_layers + extra) / pp, 0) * pp / i.model_layers,
              IF(AND(i.first_last_stage_layers_fewer.eq("yes"), pp > 2),
                 (i.model_layers + 2) / i.model_layers, 1)))


def step_time(b: ModelBuilder, i: Inputs) -> None:
    r = Ref
    tp, pp, m, v, cp = i.tp_size, i.pp_size, r("microbatches_per_step"), i.virtual_pipeline_stages, i.cp_size
    b.sheet("Parallelism", "step_time")
    rate = b.item("baseline_flops_per_gpu_s", "FLOP/s",
                  r("peak_tflops") * r("baseline_mfu") * i.flops_per_tflop)
    step = b.item("step_compute_s", "s",
                  Ref("model_flops_per_token") * r("global_batch_tokens")
                  / (i.gpu_count * rate))

    b.section("pipeline_bubble")
    # DualPipe (DeepSeek-V3 Table 2): (PP/2 − 1)(F&B + B − 3W) against m·(F + B); with F&B = F + B
    # (the overlap hides communication, not compute), W = B/2 and F = 1 that is
    # (PP/2 − 1)(1 + B/2)/(m(1 + B)) = (PP − 2)/(3m) at B = 2F: an approximation
    back = i.backward_forward_time_ratio
    bubble = b.item("bubble_fraction", "fraction of step",
                    IF(i.pipeline_schedule.eq("dualpipe"), MAX(0, pp / 2 - 1) * (1 + back / 2) / (m * (1 + back)),
                       (pp - 1) / (v * m)))

    b.section("communication")
    tp_gb = b.item("tp_comm_gb", "GB",
                   i.tp_collectives_per_layer * 2 * (tp - 1) / tp * r("act_sbh")
                   * i.activation_bytes_per_element * (i.model_layers / pp) * m / i.bytes_per_gb / cp)
    tp_s = b.item("tp_comm_s", "s", tp_gb / IF(tp > r("scale_up_gpus"), r("scale_out_gb_per_s"),
                                               r("intra_node_gb_per_s")))
    dpcp = r("dp_size") * cp
    dp_gb = b.item("dp_comm_gb", "GB",
                   2 * (dpcp - 1) / dpcp * Ref("trainable_params") / (tp * pp)
                   * i.grad_bytes_per_param * IF(i.zero_stage > 2, i.zero3_comm_factor, 1)
                   / i.bytes_per_gb)
    dp_s = b.item("dp_comm_s", "s", dp_gb / r("scale_out_gb_per_s"))
    pp_gb = b.item("pp_comm_gb", "GB",
                   2 * MIN(1, pp - 1) * v * m * r("act_sbh") * i.activation_bytes_per_element / tp
                   / i.bytes_per_gb / cp)
    pp_s = b.item("pp_comm_s", "s", pp_gb / r("scale_out_gb_per_s"))
    # Context parallelism: each rank receives the other cp − 1 chunks' K and V per layer forward,
    # and again with their gradients backward (3 passes); K and V are kv_heads·head_dim wide each
    cp_gb = b.item("cp_comm_gb", "GB",
                   i.cp_kv_passes * (cp - 1) / cp * i.seq_len * i.micro_batch_size * 2 * r("kv_heads_used")
                   * r("head_dim_used") * i.activation_bytes_per_element / tp
                   * (i.model_layers / pp) * m / i.bytes_per_gb)
    cp_s = b.item("cp_comm_s", "s", cp_gb / IF(tp * cp > r("scale_up_gpus"), r("scale_out_gb_per_s"),
                                               r("intra_node_gb_per_s")))
    # EP all-to-all per MoE layer: dispatch and combine of each token's top-k copies
    # (2·tokens·k·h·bytes·(ep − 1)/ep) forward, and as much again backward
    ep = i.ep_size
    ep_gb = b.item("ep_comm_gb", "GB",
                   i.ep_all_to_all_passes * (ep - 1) / ep * r("act_sbh") * IF(ISNUMBER(i.moe_experts_per_token),
                                                             i.moe_experts_per_token, 0)
                   * i.activation_bytes_per_element / tp / cp * (r("moe_layers") / pp) * m / i.bytes_per_gb)
    ep_s = b.item("ep_comm_s", "s", ep_gb / IF(tp * ep > r("scale_up_gpus"), r("scale_out_gb_per_s"),
                                               r("intra_node_gb_per_s")))
    comm = b.item("comm_fraction", "fraction of step",
                  (tp_s * i.tp_comm_exposed + dp_s * i.dp_comm_exposed + pp_s
                   + cp_s * i.cp_comm_exposed + ep_s * i.ep_comm_exposed) / step)

    _fitted_step_time(b, i)

    b.section("effective_mfu")
    overhead = b.item("recompute_overhead", "fraction of step",
                      Lookup(ACTIVATION_TABLE, "recompute_overhead", r("activation_mode")))
    pipe_eff = b.item("pipeline_efficiency", "fraction", 1 / (1 + bubble))
    comm_eff = b.item("communication_efficiency", "fraction", 1 / (1 + comm))
    rc_eff = b.item("recompute_efficiency", "fraction", 1 / (1 + overhead))
    raw_eff = b.item("layout_efficiency_model", "fraction", pipe_eff * comm_eff * rc_eff)
    eff = b.item("layout_efficiency", "fraction",
                 IF(ISNUMBER(i.layout_efficiency_override), i.layout_efficiency_override,
                    raw_eff / i.reference_layout_efficiency))
    # the fitted model predicts the utilisation where none is typed (an all-in or a baseline MFU,
    # an HFU or effective TFLOPS keep theirs)
    typed = OR(ISNUMBER(i.mfu), ISNUMBER(i.hfu), ISNUMBER(i.effective_tflops_given))
    fitted = b.item("fitted_model_used", "yes/no", IF(AND(i.efficiency_model.eq("fitted"), NOT(typed)), "yes", "no"))
    b.item("effective_mfu", "fraction", IF(fitted.eq("yes"), r("fitted_mfu"), r("baseline_mfu") * eff))
    # the exposed communication the layout's explanation quotes: the model in use's
    b.item("step_comm_share", "fraction of step",
           IF(fitted.eq("yes"), r("fitted_comm_s") / r("fitted_step_s"), r("comm_fraction")))


def _fitted_step_time(b: ModelBuilder, i: Inputs) -> None:
    """Issue 13's step-time model, fitted on published runs by budget/calibrate.py (which reads
    these items): (1 + bubble) × (matmul time at the BF16 peak × the matmul factor + attention-score
    time at peak × the attention factor) + the exposed DP time + the PP, CP and EP time. The
    matmul factor is the architecture's, plus narrow per-GPU matmuls (width factor ÷ (h/TP)), plus
    software younger than the cap on its architecture (immaturity factor per year short); the
    attention factor has its own immaturity factor."""
    r = Ref
    b.section("fitted_step_time")
    fpt = r("flops_per_param_token_used")          # 4 under LoRA, 6 otherwise (issue 28)
    fwd = i.forward_flops_per_param_token / fpt
    full, selective = i.recompute.eq("full"), i.recompute.eq("selective")
    matmul = fpt * (r("params_active") - r("params_lookup")) + r("adapter_flops_per_token")
    b.item("matmul_hardware_flops_per_token", "FLOP/token",
           IF(full, matmul + fwd * (matmul - fpt * i.vocab_size * i.hidden_size), matmul))
    b.item("attention_hardware_flops_per_token", "FLOP/token",
           r("attention_flops_per_token") * (1 + IF(full, fwd, IF(selective, 1, 0))))
    per_gpu = b.item("tokens_per_gpu_step", "tokens", r("global_batch_tokens") / i.gpu_count)
    peak = r("peak_bf16_tflops") * i.flops_per_tflop
    matmul_s = b.item("matmul_at_peak_s", "s", r("matmul_hardware_flops_per_token") * per_gpu / peak)
    attn_s = b.item("attention_at_peak_s", "s", r("attention_hardware_flops_per_token") * per_gpu / peak)
    # a reviewer's own accelerator row may lack the date: its software is taken as mature
    launched = arch_figure("architecture_launched")
    years = b.item("architecture_years", "years",
                   IF(ISNUMBER(launched), (i.start_date - launched) / i.days_per_year, i.fitted_immaturity_cap_years))
    fitted = arch_figure("fitted_matmul_factor")
    reference = i.fitted_reference_accelerator
    arch = b.item("architecture_matmul_factor", "×",
                  IF(ISNUMBER(fitted), fitted,
                     Lookup(ARCHITECTURE_TABLE, "fitted_matmul_factor", reference)
                     * Lookup(ACCELERATOR_TABLE, "typical_mfu", reference) / acc("typical_mfu")))
    short = b.item("software_years_short", "years", MAX(0, i.fitted_immaturity_cap_years - years))
    factor = b.item("matmul_time_factor", "×",
                    arch + i.fitted_width_factor / (i.hidden_size / i.tp_size) + i.fitted_immaturity_factor * short)
    # attention kernels mature later than matmuls on a new architecture (FlashAttention-2 on
    # Hopper in 2023 against FlashAttention-3 in 2024): their own factor per year short
    attn_factor = b.item("attention_time_factor", "×",
                         i.fitted_attention_factor + i.fitted_attention_immaturity_factor * short)
    exposed = IF(i.zero_stage > 2, i.fitted_zero3_exposed, i.fitted_dp_exposed)
    # the software stack's factor on the compute time (issue 25; unknown where the scenario does not say)
    stack = b.item("stack_time_factor", "×", choose(i.efficiency_stack, EFFICIENCY_STACKS,
                                                      lambda s: i[f"fitted_stack_factor_{s}"]))
    # FP8 (FP4) GEMMs: of the time the compute precision's peak promises to save over BF16, the share
    # realised in NVIDIA's published FP8-vs-BF16 tables of the same models on the same GPUs (fitted);
    # attention, communication and the rest unchanged
    precise = AND(NOT(i.compute_precision.eq("bf16")), r("peak_tflops") > 0)
    gemm = b.item("gemm_precision_factor", "×",
                  IF(precise, 1 - i.fitted_fp8_gemm_realised * (1 - r("peak_bf16_tflops") / r("peak_tflops")), 1))
    # the communication the fit does not scale (budget/calibrate.py reads this item): TP all-reduces
    # inside the fast fabric are the width factor's; beyond it (no published row runs TP over the
    # network) they are exposed at the network's bandwidth; DualPipe hides the EP all-to-all and the
    # PP sends behind computation (DeepSeek-V3 §3.2.1)
    dualpipe = i.pipeline_schedule.eq("dualpipe")
    fixed = b.item("fitted_fixed_comm_s", "s",
                   r("pp_comm_s") * IF(dualpipe, i.dualpipe_comm_exposed, 1) + r("cp_comm_s")
                   + r("ep_comm_s") * IF(dualpipe, i.dualpipe_comm_exposed, i.ep_comm_exposed)
                   + IF(i.tp_size > r("scale_up_gpus"), r("tp_comm_s") * i.tp_comm_exposed, 0))
    comm = b.item("fitted_comm_s", "s", exposed * r("dp_comm_s") + fixed)
    step = b.item("fitted_step_s", "s",
                  (1 + r("bubble_fraction")) * stack * (matmul_s * factor * gemm + attn_s * attn_factor) + comm)
    b.item("fitted_mfu", "fraction",
           r("model_flops_per_token") * per_gpu / (step * r("peak_tflops") * i.flops_per_tflop))


def shifted(i: Inputs, mfu: Expr) -> Expr:
    """An MFU with a what-if's model error (model_error_factor, 1 in the plan: the step time × it,
    so the MFU ÷ it), at most 100%."""
    return IF(i.model_error_factor.eq(1), mfu, MIN(1, mfu / i.model_error_factor))
