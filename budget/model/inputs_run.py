"""The run's inputs: the model's shape, the data and batch, the hardware, the parallel layout and
sizing, the efficiency models, memory, the stages of a multi-stage run and a measured pilot."""

from __future__ import annotations

from .declare import (ACTIVATIONS, BASE_WEIGHTS, COMPUTE_PRECISIONS, JOB_MODES, LORA_TARGETS, EFFICIENCY_MODELS, EFFICIENCY_STACKS, FITTED_COEFFICIENTS,
                      FLOPS_BASES, MATURITIES, MFU_PEAKS, PIPELINE_SCHEDULES, POSITIONS, RECOMPUTE_MODES, YES_NO,
                      Declare)


def model_shape(d: Declare) -> None:
    """The model's shape (Inputs: model)."""
    b, add = d.b, d.add
    b.input_section("model")
    add("params_override", "parameters", minimum=1, optional=True, path="model.params", codec="count")
    add("model_layers", "layers", kind="integer", minimum=1, path="model.layers")
    add("hidden_size", "width", kind="integer", minimum=1, path="model.hidden_size")
    add("attention_heads", "heads", kind="integer", minimum=1, path="model.attention_heads")
    add("seq_len", "tokens", kind="integer", minimum=1, path="model.seq_len")
    add("vocab_size", "tokens", kind="integer", minimum=1, path="model.vocab_size")
    # The shape's details (issue 12); blank or default, each is the old GPT shape's.
    add("active_params_override", "parameters", minimum=1, optional=True, path="model.active_params",
        codec="count")
    add("num_kv_heads", "heads", kind="integer", minimum=1, optional=True, path="model.num_kv_heads")
    add("head_dim", "width", kind="integer", minimum=1, optional=True, path="model.head_dim")
    add("ffn_hidden_size", "width", kind="integer", minimum=1, optional=True, path="model.ffn_hidden_size")
    add("activation", "mode", kind="choice", choices=ACTIVATIONS, path="model.activation", codec="text")
    add("tied_embeddings", "yes/no", kind="choice", choices=YES_NO, path="model.tied_embeddings",
        codec="yesno")
    add("position_embeddings", "mode", kind="choice", choices=POSITIONS, path="model.position_embeddings",
        codec="text")
    add("moe_experts", "experts", kind="integer", minimum=1, optional=True, path="model.moe.experts")
    add("moe_experts_per_token", "experts", kind="integer", minimum=1, optional=True,
        path="model.moe.experts_per_token")
    add("moe_shared_experts", "experts", kind="integer", minimum=0, optional=True,
        path="model.moe.shared_experts")
    add("moe_expert_ffn_hidden_size", "width", kind="integer", minimum=1, optional=True,
        path="model.moe.expert_ffn_hidden_size")
    add("moe_first_dense_layers", "layers", kind="integer", minimum=0, optional=True,
        path="model.moe.first_dense_layers")
    add("moe_layer_freq", "layers", kind="integer", minimum=1, optional=True, path="model.moe.layer_freq")
    add("mla_q_lora_rank", "width", kind="integer", minimum=1, optional=True, path="model.mla.q_lora_rank")
    add("mla_kv_lora_rank", "width", kind="integer", minimum=1, optional=True, path="model.mla.kv_lora_rank")
    add("mla_rope_head_dim", "width", kind="integer", minimum=0, optional=True,
        path="model.mla.rope_head_dim")
    add("mla_v_head_dim", "width", kind="integer", minimum=1, optional=True, path="model.mla.v_head_dim")
    # Korthikanti et al. 2022 §4.1 count two dropout masks per layer (and one on the attention
    # scores); Llama and DeepSeek-V3 train without dropout (default yes: today's numbers)
    add("dropout", "yes/no", kind="choice", choices=YES_NO, path="model.dropout", codec="yesno")


def batch_and_hardware(d: Declare) -> None:
    """The training data and batch; the accelerator, its count and utilisation."""
    b, add = d.b, d.add
    b.input_section("data_and_batch")
    add("train_tokens", "tokens", minimum=1, positive=True, path="data.train_tokens", codec="count")
    add("global_batch_sequences", "sequences", kind="integer", minimum=1, path="data.global_batch_sequences")

    # issue 28: the job (pretraining, continued pretraining, SFT, LoRA) and LoRA's adapters
    b.input_section("job")
    add("job_mode", "mode", kind="choice", choices=JOB_MODES, path="job.mode", codec="text")
    add("lora_rank", "width", kind="integer", minimum=1, path="job.lora_rank", codec="int")
    add("lora_targets", "mode", kind="choice", choices=LORA_TARGETS, path="job.lora_targets", codec="text")
    add("adapter_params_override", "parameters", minimum=1, optional=True, path="job.adapter_params",
        codec="count")
    add("base_weights", "mode", kind="choice", choices=BASE_WEIGHTS, path="job.base_weights", codec="text")

    b.input_section("hardware")
    add("gpu_type", "catalog id", kind="choice", choices_from="acc_id", path="hardware.accelerator",
        codec="text")
    add("gpu_count", "GPUs", kind="integer", minimum=1, path="hardware.gpu_count", codec="int",
        search="count")
    add("deadline_days", "days", minimum=0, positive=True, optional=True, path="hardware.deadline_days")
    add("mfu", "fraction", kind="fraction", minimum=0, maximum=1, positive=True, optional=True,
        path="hardware.mfu")
    add("effective_tflops_given", "TFLOPS", minimum=0, positive=True, optional=True,
        path="hardware.effective_tflops")
    add("hfu", "fraction", kind="fraction", minimum=0, maximum=1, positive=True, optional=True,
        path="hardware.hfu")
    add("flops_basis", "mode", kind="choice", choices=FLOPS_BASES, path="hardware.flops_basis", codec="text")
    add("compute_precision", "mode", kind="choice", choices=COMPUTE_PRECISIONS, path="hardware.precision",
        codec="text")
    add("mfu_peak", "mode", kind="choice", choices=MFU_PEAKS, path="hardware.mfu_peak", codec="text")
    add("usable_memory_fraction", "fraction", kind="fraction", minimum=0, maximum=1, positive=True,
        path="hardware.usable_memory_fraction")


def parallel_layout(d: Declare) -> None:
    """The parallel layout (the search chooses what is not pinned) and the sizing margins."""
    b, add = d.b, d.add
    b.input_section("parallel_layout")

    def layout(name, unit, path, domain, codec="int", **kw):
        add(name, unit, path=f"parallelism.{path}", codec=codec, search="layout", domain=domain, **kw)

    layout("tp_size", "GPUs", "tp", (1, 2, 4, 8, 16), kind="integer", minimum=1)
    layout("pp_size", "stages", "pp", None, kind="integer", minimum=1)   # divisors of the layers
    layout("micro_batch_size", "sequences", "micro_batch_size", (1, 2, 4, 8), kind="integer", minimum=1)
    layout("zero_stage", "stage", "zero_stage", (0, 1, 2, 3), kind="integer", minimum=0, maximum=3)
    layout("recompute", "mode", "recompute", RECOMPUTE_MODES, codec="text", kind="choice",
           choices=RECOMPUTE_MODES)
    layout("sequence_parallel", "yes/no", "sequence_parallel", ("no", "yes"), codec="yesno", kind="choice",
           choices=YES_NO)
    # context parallelism: the search tries more than 1 only for long sequences (budget/layout.py)
    layout("cp_size", "GPUs", "cp", (1, 2, 4, 8, 16, 32), kind="integer", minimum=1)
    # expert parallelism, inside DP: the search tries more than 1 only for MoE models
    layout("ep_size", "GPUs", "ep", (1, 2, 4, 8, 16, 32, 64), kind="integer", minimum=1)
    add("virtual_pipeline_stages", "stages", kind="integer", minimum=1, maximum=64,
        path="parallelism.virtual_pipeline_stages", codec="int")
    add("first_last_stage_layers_fewer", "yes/no", kind="choice", choices=YES_NO,
        path="parallelism.first_last_stage_layers_fewer", codec="yesno")
    # DeepSeek-V3 §3.2.1: DualPipe, approximated (the bubble, 2× the parameters, PP + 1 in flight)
    add("pipeline_schedule", "mode", kind="choice", choices=PIPELINE_SCHEDULES,
        path="parallelism.pipeline_schedule", codec="text")

    b.input_section("sizing")
    add("split_margin", "fraction", kind="fraction", minimum=0, maximum=10, path="sizing.split_margin")
    add("spare_nodes", "nodes", kind="integer", minimum=0, path="sizing.spare_nodes", codec="int")


def efficiency(d: Declare) -> None:
    """The layout-efficiency (reference) model and the fitted step-time model."""
    b, add = d.b, d.add
    b.input_section("layout_efficiency")
    add("layout_efficiency_override", "fraction", kind="fraction", minimum=0, maximum=2, positive=True,
        optional=True, path="efficiency.layout_efficiency")
    add("reference_layout_efficiency", "fraction", kind="fraction", minimum=0, maximum=1, positive=True,
        path="efficiency.reference_layout_efficiency")
    add("tp_comm_exposed", "fraction", kind="fraction", minimum=0, maximum=1,
        path="efficiency.tp_comm_exposed")
    add("dp_comm_exposed", "fraction", kind="fraction", minimum=0, maximum=1,
        path="efficiency.dp_comm_exposed")
    add("cp_comm_exposed", "fraction", kind="fraction", minimum=0, maximum=1,
        path="efficiency.cp_comm_exposed")
    add("ep_comm_exposed", "fraction", kind="fraction", minimum=0, maximum=1,
        path="efficiency.ep_comm_exposed")

    b.input_section("fitted_efficiency")
    add("efficiency_model", "mode", kind="choice", choices=EFFICIENCY_MODELS, path="efficiency.model",
        codec="text")
    for name, (unit, low, high) in FITTED_COEFFICIENTS.items():
        add(f"fitted_{name}", unit, minimum=low, maximum=high, path=f"efficiency.fitted.{name}")
    add("fitted_reference_accelerator", "catalog id", kind="choice", choices_from="acc_id",
        path="efficiency.fitted.unfitted_reference", codec="text")
    add("efficiency_stack", "mode", kind="choice", choices=EFFICIENCY_STACKS, path="efficiency.stack", codec="text")
    add("efficiency_maturity", "mode", kind="choice", choices=MATURITIES, path="efficiency.maturity", codec="text")
    add("card_allowance_calendar_share", "fraction", kind="fraction", minimum=0, maximum=1,
        path="efficiency.card_allowance_calendar_share")


def memory(d: Declare) -> None:
    """Bytes per parameter and the activations' options."""
    b, add = d.b, d.add
    b.input_section("memory")
    add("weight_bytes_per_param", "bytes/parameter", minimum=0, path="memory.weight_bytes_per_param")
    add("grad_bytes_per_param", "bytes/parameter", minimum=0, path="memory.grad_bytes_per_param")
    add("optimizer_bytes_per_param", "bytes/parameter", minimum=0, path="memory.optimizer_bytes_per_param")
    add("master_bytes_per_param", "bytes/parameter", minimum=0, path="memory.master_bytes_per_param")
    add("fp8_activation_share", "fraction", kind="fraction", minimum=0, maximum=1,
        path="memory.fp8_activation_share")
    add("recompute_norms_and_up_projections", "yes/no", kind="choice", choices=YES_NO,
        path="memory.recompute_norms_and_up_projections", codec="yesno")
    add("flash_attention", "yes/no", kind="choice", choices=YES_NO, path="memory.flash_attention",
        codec="yesno")
    add("activation_gb_override", "GB", minimum=0, optional=True, path="memory.activation_gb_per_microbatch")


def stages(d: Declare) -> None:
    """A multi-stage run: each stage's tokens and the values it sets (blank: the plan's)."""
    b, add = d.b, d.add
    b.input_section("stages")
    add("stage_name", "text", kind="range_text", path="stages[].name", codec="text")
    add("stage_tokens", "tokens", kind="range", minimum=0, path="stages[].tokens", codec="count")
    add("stage_gpu_count", "GPUs", kind="range", minimum=1, optional=True, path="stages[].gpu_count")
    add("stage_seq_len", "tokens", kind="range", minimum=1, optional=True, path="stages[].seq_len")
    add("stage_batch_sequences", "sequences", kind="range", minimum=1, optional=True,
        path="stages[].global_batch_sequences")
    add("stage_mfu", "fraction", kind="range", minimum=0, maximum=1, positive=True, optional=True,
        path="stages[].mfu")
    add("stage_tp", "GPUs", kind="range", minimum=1, optional=True, path="stages[].tp")
    add("stage_pp", "stages", kind="range", minimum=1, optional=True, path="stages[].pp")
    add("stage_cp", "GPUs", kind="range", minimum=1, optional=True, path="stages[].cp")


def pilot(d: Declare) -> None:
    """A measured pilot's GPUs, layout and measurement, and the bounds its factor is warned outside."""
    b, add, constant = d.b, d.add, d.constant
    # A measured pilot (issue 13, seed 000 step 6): its GPUs, its layout where it differs from
    # the plan's (blank: the plan's), and one measurement of it
    b.input_section("calibration")
    add("pilot_gpu_count", "GPUs", kind="integer", minimum=1, optional=True, path="calibration.gpu_count",
        codec="int")
    add("pilot_tp", "GPUs", kind="integer", minimum=1, optional=True, path="calibration.tp", codec="int")
    add("pilot_pp", "stages", kind="integer", minimum=1, optional=True, path="calibration.pp", codec="int")
    add("pilot_cp", "GPUs", kind="integer", minimum=1, optional=True, path="calibration.cp", codec="int")
    add("pilot_micro_batch_size", "sequences", kind="integer", minimum=1, optional=True,
        path="calibration.micro_batch_size", codec="int")
    add("pilot_batch_sequences", "sequences", kind="integer", minimum=1, optional=True,
        path="calibration.global_batch_sequences", codec="int")
    add("pilot_virtual_pipeline_stages", "stages", kind="integer", minimum=1, maximum=64, optional=True,
        path="calibration.virtual_pipeline_stages", codec="int")
    add("pilot_step_time_s", "s", minimum=0, positive=True, optional=True, path="calibration.step_time_s")
    add("pilot_tokens_per_gpu_s", "tokens/s per GPU", minimum=0, positive=True, optional=True,
        path="calibration.tokens_per_gpu_second")
    add("pilot_mfu", "fraction", kind="fraction", minimum=0, maximum=1, positive=True, optional=True,
        path="calibration.mfu")
    # A calibration factor outside these bounds is warned of (warn_pilot_factor): beyond the
    # model's error on most published rows (issue 13) it is a unit slip — MFU against the FP8
    # instead of the BF16 peak (2x), tokens/s per node for per GPU (8x) — or a stack the model
    # does not know (MaxText on TPU v5e with FSDP: 2-4x)
    constant("pilot_factor_low", "×", 0.5, minimum=0)
    constant("pilot_factor_high", "×", 1.5, minimum=1)
