"""The planning model: every input and every derived line item, defined once.

Definition order is dependency order; each item names the sheet it is shown on (Memory,
Parallelism, Compute, Cost, Checks). Each `item` is one row and one live formula; the planner runs
the same definitions compiled to Python. Sources for the formulas are in the notes and in
../shared/reference/formulas.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

from ..formula.expr import (ABS, AND, COLUMNS, COUNTA, EXP, IF, ISERROR, ISNUMBER, MIN, MOD, NOT, OR, ROUND,
                      ROUNDUP, SQRT, SUM, SUMPRODUCT, Blanks, Lookup, Ref)
from ..formula.expr import DATE, LN, MAX, MONTH, YEAR
from ..formula.expr import At, Expr, PerRow, UpTo, lift, substitute
from ..core.i18n import DEFAULT_LANG, Messages, text
from .cashflow import build_cashflow
from .lineitems import Model, ModelBuilder

ACCELERATOR_TABLE = "acc"
# issue 13: each accelerator's architecture date and fitted matmul factor (a table of its own, so
# the accelerator table still prints one page wide)
ARCHITECTURE_TABLE = "arch"
ACTIVATION_TABLE = "act"
RECOMPUTE_MODES = ("none", "selective", "full")
TIERS = ("on_demand", "reserved", "spot")
OWNERSHIP = ("rented", "owned")
FX_TABLE = "fx"
# Each conversion factor into the plan's currency and the currency cell it converts from.
FX_FACTORS = (("fx_gpu", "price_currency"), ("fx_storage", "storage_price_currency"),
              ("fx_node", "node_price_currency"), ("fx_ops", "ops_currency"),
              ("fx_electricity", "electricity_currency"), ("fx_staff", "staff_currency"),
              ("fx_plausibility", "plausibility_currency"))
YES_NO = ("yes", "no")
ACTIVATIONS = ("gelu", "swiglu")
POSITIONS = ("learned", "rotary")
FLOPS_BASES = ("six_nd", "with_attention")
PIPELINE_SCHEDULES = ("1f1b", "dualpipe")
EFFICIENCY_MODELS = ("reference", "fitted")
# The software stack (issue 25): a factor on the compute time of each, fitted on the published rows
# (budget/plan/calibrate.py); unknown: fitted on every source that is not a vendor's tuned benchmark
EFFICIENCY_STACKS = ("unknown", "megatron_nemo_tuned", "inhouse_tuned", "deepspeed", "pytorch_fsdp",
                     "jax_maxtext", "hf_trainer")
# How practised the team is at this run's scale on this cluster and stack (issue 25): the allowance
# for what full runs spend beyond step time and the modelled failures, fitted per level where the
# published full runs support it (unknown: all of them)
MATURITIES = ("unknown", "first_run", "some_runs", "tuned_many_runs")
# The fitted step-time model's coefficients (budget/calibrate.py; catalogs/efficiency.yaml): unit, bounds
FITTED_COEFFICIENTS = {"width_factor": ("width", 0, 100_000), "attention_factor": ("×", 0, 100),
                       "dp_exposed": ("fraction", 0, 1), "zero3_exposed": ("fraction", 0, 1),
                       "immaturity_factor": ("×", 0, 100), "attention_immaturity_factor": ("×", 0, 100),
                       "immaturity_cap_years": ("years", 0, 20),
                       **{f"stack_factor_{s}": ("×", 0, 10) for s in EFFICIENCY_STACKS},
                       "fp8_gemm_realised": ("fraction", 0, 1),
                       **{f"card_allowance_{m}": ("fraction", -0.5, 5) for m in MATURITIES}}
# A stage of a multi-stage run (issue 12) is the model evaluated with the stage's own values of
# these inputs (blank: the plan's): plan input -> the stage table's column.
STAGE_VALUES = {"seq_len": "stage_seq_len", "gpu_count": "stage_gpu_count",
                "global_batch_sequences": "stage_batch_sequences",
                "tp_size": "stage_tp", "pp_size": "stage_pp", "cp_size": "stage_cp"}
# The model's figures and checks each stage shows, re-evaluated with its values.
STAGE_FIGURES = ("layout_label", "dp_size", "microbatches_per_step", "model_flops_per_token", "effective_mfu",
                 "memory_per_gpu_gb")
STAGE_CHECKS = ("check_layout_divides", "check_tp_divides_heads", "check_pp_divides_layers",
                "check_interleaving", "check_ep_divides", "check_batch_divides", "check_memory_fits",
                "check_mfu_plausible")
# A measured pilot (issue 13, seed 000 step 6) is the model evaluated with the pilot's own values
# of these inputs (blank: the plan's): plan input -> the calibration input holding the pilot's.
PILOT_VALUES = {"gpu_count": "pilot_gpu_count", "tp_size": "pilot_tp", "pp_size": "pilot_pp",
                "cp_size": "pilot_cp", "micro_batch_size": "pilot_micro_batch_size",
                "global_batch_sequences": "pilot_batch_sequences",
                "virtual_pipeline_stages": "pilot_virtual_pipeline_stages"}
# The model's figures the Parallelism sheet shows at the pilot (and what they need)
PILOT_FIGURES = ("layout_label", "dp_size", "global_batch_tokens", "microbatches_per_step", "step_compute_s",
                 "bubble_fraction", "comm_fraction", "layout_efficiency", "effective_mfu")
COMPUTE_PRECISIONS = ("bf16", "fp8", "fp4")     # the catalog's peak_<precision>_tflops columns
MFU_PEAKS = ("bf16", "compute")
CHECKPOINT_FORMATS = ("full", "no_fp32_master", "weights_only")
# How a checkpoint is taken (reliability.checkpoint_mode): the training waits for the write to
# storage; waits only for the copy to host memory (PyTorch DCP async_save, MegaScale); or keeps
# checkpoints in peers' memory and restarts from there (Gemini, SOSP'23; ByteCheckpoint)
CHECKPOINT_MODES = ("synchronous", "asynchronous", "in_memory")
# A published run on the Reference runs sheet (issue 13) is the model evaluated at the run's own
# values, as a stage is: plan input -> the reference-runs table's row holding the run's value
REFERENCE_ROWS = "ref_name"            # the table's key column: one run per entry
REFERENCE_VALUES = {"gpu_type": "ref_accelerator", "gpu_count": "ref_gpu_count", "model_layers": "ref_layers",
                    "hidden_size": "ref_hidden_size", "attention_heads": "ref_attention_heads",
                    "num_kv_heads": "ref_kv_heads", "head_dim": "ref_head_dim", "ffn_hidden_size": "ref_ffn_hidden_size",
                    "vocab_size": "ref_vocab_size", "seq_len": "ref_seq_len", "activation": "ref_activation",
                    "tied_embeddings": "ref_tied_embeddings", "position_embeddings": "ref_position_embeddings",
                    "tp_size": "ref_tp", "pp_size": "ref_pp", "cp_size": "ref_cp", "ep_size": "ref_ep",
                    "virtual_pipeline_stages": "ref_virtual_stages", "micro_batch_size": "ref_micro_batch",
                    "zero_stage": "ref_zero_stage", "recompute": "ref_recompute",
                    "sequence_parallel": "ref_sequence_parallel", "global_batch_sequences": "ref_batch_sequences",
                    # the run's date: the software's age on its architecture (the fitted model's term)
                    "start_date": "ref_software_date"}
# ... and the plan's inputs a published run does not share: blank (the utilisation, so that the
# efficiency model predicts it; the plan's overrides and MoE/MLA shape) or the published runs'
# common case (dense BF16 compute, the 1F1B schedule, even stages). Other inputs stay the plan's.
REFERENCE_BLANK = ("params_override", "active_params_override", "moe_experts", "moe_experts_per_token",
                   "moe_shared_experts", "moe_expert_ffn_hidden_size", "moe_first_dense_layers", "moe_layer_freq",
                   "mla_q_lora_rank", "mla_kv_lora_rank", "mla_rope_head_dim", "mla_v_head_dim", "mfu", "hfu",
                   "effective_tflops_given", "layout_efficiency_override", "activation_gb_override")
REFERENCE_FIXED = {"compute_precision": "bf16", "pipeline_schedule": "1f1b", "first_last_stage_layers_fewer": "no",
                   "recompute_norms_and_up_projections": "no", "efficiency_stack": "unknown"}
# The model's figures each run shows at its values; the estimate and its error follow
REFERENCE_FIGURES = ("model_params", "layout_label", "dp_size", "model_flops_per_token", "peak_tflops",
                     "effective_mfu")


def build_model(lang: str = DEFAULT_LANG) -> Model:
    """The model, its texts from the message catalog budget/messages/<lang>.yaml."""
    return _model_in(lang)


@lru_cache(maxsize=None)
def _model_in(lang: str) -> Model:
    # one cache key per language: lru_cache alone keys build_model() and build_model("en") apart
    # and built the English model twice in a run (~50 ms)
    return _build(Messages(lang))


def message_keys(lang: str = DEFAULT_LANG) -> set[str]:
    """Every message id the model asks for (tests/test_messages.py)."""
    texts = Messages(lang)
    _build(texts)
    return texts.used


def _build(texts: Messages) -> Model:
    b = ModelBuilder(texts)
    _tables(b)
    inp = _inputs(b)
    _accelerator(b, inp)
    _layout(b, inp)
    _memory(b, inp)
    _efficiency(b, inp)
    _calibration(b, inp)
    _compute(b, inp)
    _schedule(b, inp)
    _timeline(b, inp)
    _cost(b, inp)
    _generated(b)
    _checks(b, inp)
    _reference_runs(b, inp)
    build_cashflow(b, inp, COST_LINES)
    return b.model


class _Inputs(dict):
    def __getattr__(self, name: str) -> Ref:
        return self[name]


def _tables(b: ModelBuilder) -> None:
    """The Catalog sheet's lookup tables, (column, unit): titles and headers are messages."""
    b.table(ACCELERATOR_TABLE, [
        ("id", "text"), ("name", "text"), ("vendor", "text"), ("peak_bf16_tflops", "TFLOPS"),
        ("hbm_gb", "GB"), ("gpus_per_node", "GPUs"), ("intra_node_gb_per_s", "GB/s"),
        ("inter_node_gbit_per_s", "Gbit/s"), ("typical_mfu", "fraction"), ("tdp_w", "W"),
        ("node_overhead_kw", "kW"), ("node_price", "price"), ("node_price_currency", "text"),
        # appended, so the columns above keep their places; blank where not published: a formula
        # reads them behind ISNUMBER (INDEX of a blank cell is 0 in Excel), as tdp_w is read
        ("peak_fp8_tflops", "TFLOPS"), ("peak_fp4_tflops", "TFLOPS"), ("scale_up_domain", "GPUs"),
    ])
    # when the architecture first shipped, and its fitted matmul factor (blank where no published
    # row measured the architecture: scaled from the reference accelerator's)
    b.table(ARCHITECTURE_TABLE, [("id", "text"), ("architecture_launched", "date"), ("fitted_matmul_factor", "×")])
    b.table(FX_TABLE, [("id", "text"), ("rate", "×")])
    b.table(ACTIVATION_TABLE, [
        ("id", "text"), ("replicated", "bytes/(s·b·h)"), ("split", "bytes/(s·b·h)"),
        ("attention", "bytes/(s·b·h)"), ("recompute_overhead", "fraction of compute"),
    ])


# The uncertain inputs of the Sensitivity sheet: key -> (the input it moves, how the spread
# applies to the base value, default low and high). Low and high are read as the input's P10
# and P90 for the range (P10/P50/P90 of the total). Each one's label and citation are the
# messages uncertain.<key>.label and uncertain.<key>.cite. A default of None is the catalog's:
# the model error's low and high are the P10 and P90 of the planner's held-out step-time errors
# (catalogs/model_error.yaml, issue 25), bound by budget/inputs/bind.py.
UNCERTAIN_SPREADS = {
    "model_error": ("model_error_factor", "factor", None, None),
    "price_per_gpu_hour": ("price_per_gpu_hour", "factor", 0.85, 1.35),
    "train_tokens": ("train_tokens", "factor", 0.9, 1.1),
    "interruption_rate": ("interruption_rate_per_gpu_hour", "factor", 0.5, 2.0),
    "queue_days": ("queue_days", "factor", 0.5, 3.0),
    "setup_days": ("setup_days", "factor", 0.5, 2.0),
    "staffing": ("staffing_factor", "factor", 0.9, 1.3),
    "storage_price": ("price_per_gb_month", "factor", 0.5, 1.5),
}


class _Uncertain(Mapping):
    """key -> (input it moves, label, spread, low, high, citation): UNCERTAIN_SPREADS with the
    English label and citation, read from the message catalog when first asked for."""

    def __getitem__(self, key: str) -> tuple:
        target, spread, low, high = UNCERTAIN_SPREADS[key]
        return (target, text(f"uncertain.{key}.label"), spread, low, high, text(f"uncertain.{key}.cite"))

    def __iter__(self):
        return iter(UNCERTAIN_SPREADS)

    def __len__(self) -> int:
        return len(UNCERTAIN_SPREADS)


UNCERTAIN = _Uncertain()

# Inputs whose values the layout search took as given when it chose the GPU count and layout
# (and the catalog figures it read): a reviewer who changes one must regenerate. Each keeps
# its value at generation in a visible cell named gen_<name>.
SEARCH_INPUTS = ("gpu_type", "model_layers", "hidden_size", "attention_heads", "seq_len",
                 "vocab_size", "params_override", "train_tokens", "global_batch_sequences",
                 "deadline_days", "usable_memory_fraction", "weight_bytes_per_param",
                 "grad_bytes_per_param", "optimizer_bytes_per_param", "flash_attention",
                 "activation_gb_override", "gpu_count",
                 # the shape's details the memory depends on (issue 12)
                 "num_kv_heads", "head_dim", "ffn_hidden_size", "activation", "moe_experts",
                 "moe_experts_per_token", "moe_shared_experts", "moe_expert_ffn_hidden_size",
                 "moe_first_dense_layers", "moe_layer_freq",
                 # FP8/FP4 compute caches part of the activations in one byte
                 "compute_precision", "fp8_activation_share",
                 # the utilisation model ranks the layouts (issue 13)
                 "efficiency_model")
SEARCH_ITEMS = ("peak_tflops", "hbm_gb", "gpus_per_node", "scale_up_gpus", "intra_node_gb_per_s",
                "scale_out_gb_per_s")


def _inputs(b: ModelBuilder) -> _Inputs:
    i = _Inputs()

    def add(name, unit, **kw):
        i[name] = b.input(name, unit, **kw)

    def constant(name, unit, value, **kw):
        add(name, unit, constant=value, path=f"constants.{name}", **kw)

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

    b.input_section("data_and_batch")
    add("train_tokens", "tokens", minimum=1, positive=True, path="data.train_tokens", codec="count")
    add("global_batch_sequences", "sequences", kind="integer", minimum=1, path="data.global_batch_sequences")

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

    b.input_section("currency")
    add("currency", "ISO 4217 code", kind="text", path="prices.currency", codec="text")

    def money(name, unit, path, currency, **kw):
        """An amount in the currency its companion input names, converted live into `currency`."""
        add(name, unit, path=path, codec=kw.pop("codec", "money"), currency=currency, **kw)

    def currency_of(name):
        add(name, "ISO 4217 code", kind="text", codec="text")

    b.input_section("gpu_prices")
    add("price_tier", "tier", kind="choice", choices=TIERS, path="prices.tier", codec="text")
    currency_of("price_currency")
    money("price_per_gpu_hour", "currency/GPU-hour", "prices.per_gpu_hour", "price_currency", minimum=0)
    money("on_demand_per_gpu_hour", "currency/GPU-hour", "prices.on_demand_per_gpu_hour", "price_currency",
          minimum=0, optional=True)
    add("reserved_term_months", "months", minimum=0, positive=True, path="prices.reserved.term_months")
    add("reserved_upfront_share", "fraction", kind="fraction", minimum=0, maximum=1,
        path="prices.reserved.upfront_share")
    add("reserved_committed_gpus", "GPUs", kind="integer", minimum=0, optional=True,
        path="prices.reserved.committed_gpus", codec="int")
    add("spot_discount", "fraction", kind="fraction", minimum=0, maximum=0.999, path="prices.spot.discount")
    add("spot_preemption_rate_per_gpu_hour", "per GPU-hour", minimum=0,
        path="prices.spot.preemption_rate_per_gpu_hour")
    money("network_per_gpu_hour", "currency/GPU-hour", "prices.network", "price_currency",
          codec="included_or_price", minimum=0)

    b.input_section("other_prices")
    currency_of("storage_price_currency")
    money("price_per_gb_month", "currency/GB-month", "prices.storage_per_gb_month", "storage_price_currency",
          minimum=0)
    add("vat_rate", "fraction", kind="fraction", minimum=0, maximum=1, path="prices.vat_rate")
    add("vat_recoverable", "yes/no", kind="choice", choices=YES_NO, path="prices.vat_recoverable",
        codec="yesno")

    b.input_section("owned_cluster")
    add("ownership", "mode", kind="choice", choices=OWNERSHIP, path="ownership", codec="text")
    currency_of("node_price_currency")
    money("node_price", "currency/node", "owned.node_price", "node_price_currency", minimum=0, optional=True)
    add("depreciation_years", "years", minimum=0, positive=True, path="owned.depreciation_years")
    add("cost_of_capital", "fraction/year", kind="fraction", minimum=0, maximum=1,
        path="owned.cost_of_capital")
    add("life_share_override", "fraction", kind="fraction", minimum=0, maximum=1, positive=True,
        optional=True, path="owned.life_share")
    currency_of("ops_currency")
    money("ops_per_node_month", "currency/node-month", "owned.ops_per_node_month", "ops_currency", minimum=0)

    b.input_section("energy_and_carbon")
    add("pue", "×", minimum=1, path="energy.pue")
    add("grid_intensity", "kg CO2e/kWh", minimum=0, path="energy.grid_intensity")
    add("draw_training", "fraction", kind="fraction", minimum=0, maximum=2, path="energy.draw_training")
    add("draw_idle", "fraction", kind="fraction", minimum=0, maximum=1, path="energy.draw_idle")
    add("node_overhead_kw", "kW/node", minimum=0, optional=True, path="energy.node_overhead_kw")
    currency_of("electricity_currency")
    money("electricity_per_kwh", "currency/kWh", "energy.electricity_per_kwh", "electricity_currency",
          minimum=0)

    b.input_section("other_runs")
    add("validation_model_params", "parameters", minimum=1, path="runs.validation_params", codec="count")
    add("validation_tokens", "tokens", minimum=0, path="runs.validation_tokens", codec="count")
    add("scaling_model_params", "parameters", minimum=1, path="runs.scaling_params", codec="count")
    add("scaling_tokens", "tokens", minimum=0, path="runs.scaling_tokens", codec="count")
    add("rollbacks", "rollbacks", minimum=0, path="runs.rollbacks")
    add("rollback_steps", "steps", minimum=0, path="runs.rollback_steps")
    add("post_training_tokens", "tokens", minimum=0, path="runs.post_training_tokens", codec="count")
    add("serving_gpus", "GPUs", kind="integer", minimum=0, path="runs.serving_gpus", codec="int")
    add("serving_months", "months", minimum=0, path="runs.serving_months")
    money("serving_per_gpu_hour", "currency/GPU-hour", "runs.serving_per_gpu_hour", "price_currency",
          minimum=0, optional=True)

    b.input_section("data_and_storage")
    add("raw_bytes_per_token", "bytes", minimum=0, path="storage.raw_bytes_per_token")
    add("tokenized_bytes_override", "bytes", minimum=0, optional=True,
        path="storage.tokenized_bytes_per_token")
    add("dataset_gb_override", "GB", minimum=0, optional=True, path="storage.dataset_gb")
    add("checkpoints_kept", "checkpoints", kind="integer", minimum=0, path="storage.checkpoints_kept",
        codec="int")
    add("checkpoint_storage_gb_override", "GB", minimum=0, optional=True, path="storage.checkpoint_gb")
    add("checkpoint_format", "mode", kind="choice", choices=CHECKPOINT_FORMATS, path="storage.checkpoint_format",
        codec="text")
    add("storage_months", "months", minimum=0, optional=True, path="storage.months_held")
    add("storage_write_gb_per_s", "GB/s", minimum=0, positive=True, path="storage.write_gb_per_s")
    add("storage_read_gb_per_s", "GB/s", minimum=0, positive=True, path="storage.read_gb_per_s")

    b.input_section("schedule")
    add("queue_days", "days", minimum=0, path="schedule.queue_days")
    add("setup_days", "days", minimum=0, path="schedule.setup_days")
    add("transfer_gbit_per_s", "Gbit/s", minimum=0, positive=True, path="schedule.transfer_gbit_per_s")

    b.input_section("failures_and_checkpoints")
    add("interruption_rate_per_gpu_hour", "per GPU-hour", minimum=0, positive=True,
        path="reliability.interruption_rate_per_gpu_hour")
    add("failure_detect_minutes", "minutes", minimum=0, path="reliability.failure_detect_minutes")
    add("node_replace_minutes", "minutes", minimum=0, path="reliability.node_replace_minutes")
    add("job_startup_minutes", "minutes", minimum=0, path="reliability.job_startup_minutes")
    add("checkpoint_interval_steps_override", "steps", minimum=0, positive=True, optional=True,
        path="reliability.checkpoint_interval_steps")
    add("checkpoint_mode", "mode", kind="choice", choices=CHECKPOINT_MODES, path="reliability.checkpoint_mode",
        codec="text")
    add("host_copy_gb_per_s", "GB/s", minimum=0, positive=True, path="reliability.host_copy_gb_per_s")

    b.input_section("project_timeline")
    add("start_date", "date", kind="date", path="schedule.start_date", codec="date")
    add("fiscal_year_start_month", "month", kind="integer", minimum=1, maximum=12,
        path="schedule.fiscal_year_start_month", codec="int")
    add("data_prep_weeks", "weeks", minimum=0, path="schedule.data_prep_weeks")
    add("validation_weeks", "weeks", minimum=0, path="schedule.validation_weeks")
    add("validation_gpus", "GPUs", kind="integer", minimum=0, path="schedule.validation_gpus", codec="int")
    add("scaling_weeks", "weeks", minimum=0, path="schedule.scaling_weeks")
    add("scaling_gpus", "GPUs", kind="integer", minimum=0, path="schedule.scaling_gpus", codec="int")
    add("evaluation_weeks", "weeks", minimum=0, path="schedule.evaluation_weeks")
    add("deployment_weeks", "weeks", minimum=0, path="schedule.deployment_weeks")

    b.input_section("contingency")
    add("buffer_rate", "fraction of total", kind="fraction", minimum=0, maximum=1, path="buffer_rate")
    # issue 25: the ask is this percentile of the total (the range's lognormal, Sensitivity sheet);
    # the flat buffer is shown as the percentile it would cover, not added
    add("approval_percentile", "percentile", minimum=50, maximum=95, path="approval.percentile")

    b.input_section("plausibility")
    add("tokens_per_param_low", "tokens/parameter", minimum=0, path="plausibility.tokens_per_param_low")
    add("tokens_per_param_high", "tokens/parameter", minimum=0, path="plausibility.tokens_per_param_high")
    add("plausibility_currency", "ISO 4217 code", kind="text", codec="text")
    add("cost_per_gpu_hour_low", "currency/GPU-hour", minimum=0, path="plausibility.cost_per_gpu_hour_low",
        codec="money", currency="plausibility_currency")
    add("cost_per_gpu_hour_high", "currency/GPU-hour", minimum=0, path="plausibility.cost_per_gpu_hour_high",
        codec="money", currency="plausibility_currency")
    add("params_tolerance", "fraction", kind="fraction", minimum=0, maximum=1,
        path="plausibility.params_tolerance")

    b.input_section("uncertainty")
    add("staffing_factor", "×", minimum=0, path="uncertainty.staffing_factor")
    for key, (target, spread, low, high) in UNCERTAIN_SPREADS.items():
        unit = "points" if spread == "points" else "× base"
        kind = "fraction" if spread == "points" else "number"
        label, cite = b.text(f"uncertain.{key}.label"), b.text(f"uncertain.{key}.cite")
        for end, value in (("low", low), ("high", high)):
            # A spread in points is stored as a fraction (0.10) and read as percentage points.
            figure = f"{value * 100:+g}" if spread == "points" else f"{value:g}" if value is not None else None
            add(f"unc_{key}_{end}", unit, kind=kind, minimum=-1 if spread == "points" else 0, maximum=10,
                path=f"uncertainty.{key}.{end}",
                label=b.text(f"uncertain.input.label_{spread}").format(
                    label, b.text(f"uncertain.input.{end}")),
                cite=(b.text(f"uncertain.input.cite_{spread}").format(figure, cite) if figure is not None
                      else b.text("uncertain.input.cite_catalog").format(cite)))

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

    b.input_section("staffing")
    add("staff_currency", "ISO 4217 code", kind="text", codec="text")
    add("staff_role", "text", kind="range_text", path="staffing[].role", codec="text")
    add("staff_headcount", "people", kind="range", minimum=0, path="staffing[].headcount")
    add("staff_monthly_cost", "currency/month", kind="range", minimum=0, path="staffing[].monthly_cost",
        currency="staff_currency")
    add("staff_months", "months", kind="range", minimum=0, path="staffing[].months")

    b.input_section("constants")
    constant("flops_per_param_token", "FLOP/(parameter·token)", 6.0, minimum=0)
    constant("bytes_per_gb", "bytes", 1e9, minimum=1)
    constant("flops_per_tflop", "FLOP/s", 1e12, minimum=1)
    constant("bits_per_byte", "bits", 8.0, minimum=1)
    constant("activation_bytes_per_element", "bytes", 2.0, minimum=1)
    constant("tp_collectives_per_layer", "collectives", 4.0, minimum=0)
    constant("zero3_comm_factor", "×", 1.5, minimum=1)
    constant("zero3_gathered_layers", "layers", 2.0, minimum=0)
    constant("cp_kv_passes", "×", 3.0, minimum=0)
    constant("ep_all_to_all_passes", "×", 4.0, minimum=0)
    constant("token_id_bytes", "bytes", 2.0, minimum=1)
    constant("p90_probability", "fraction", 0.9, minimum=0, maximum=1, kind="fraction")
    # the step time's factor (× the step time, ÷ the MFU in use: typed, reference or fitted): 1 in
    # the plan; the Sensitivity sheet's model-error what-ifs move it (issue 25)
    constant("model_error_factor", "×", 1.0, minimum=0)
    constant("small_vocab_limit", "tokens", 65536.0, minimum=1)
    constant("ffn_width_per_hidden", "×", 4.0, minimum=1)
    constant("gated_ffn_matrices", "matrices", 3.0, minimum=3, maximum=3)
    constant("forward_flops_per_param_token", "FLOP/(parameter·token)", 2.0, minimum=0)
    constant("causal_attention_fraction", "fraction", 0.5, minimum=0, maximum=1, kind="fraction")
    constant("korthikanti_split_bytes", "bytes/(s·b·h)", 24.0, minimum=24, maximum=24)
    constant("dropout_mask_bytes", "bytes", 1.0, minimum=0)
    constant("backward_forward_time_ratio", "×", 2.0, minimum=0)
    constant("days_per_year", "days", 365.25, minimum=365, maximum=366)
    # DeepSeek-V3 §3.2.1: DualPipe overlaps the forward and backward chunks' computation with their
    # all-to-all and PP communication, so that both "can be fully hidden during execution"
    constant("dualpipe_comm_exposed", "fraction", 0.0, minimum=0, maximum=1, kind="fraction")

    # Workbook structure: not assumptions, not on the Inputs rows. The cells just below the
    # growable tables (a check fails when anything is typed there) and the Timeline's week grid.
    b.input_section("workbook_structure")
    add("staff_rows_below", "cells", kind="structure")
    add("stage_rows_below", "cells", kind="structure")
    add("catalog_rows_below", "cells", kind="structure")
    add("timeline_week_cells", "cells", kind="structure")
    add("cashflow_month_cells", "cells", kind="structure")
    add("cashflow_year_cells", "cells", kind="structure")
    return i


def _generated(b: ModelBuilder) -> None:
    """gen_<name>: the value each search input and catalog figure had when the search ran."""
    b.input_section("at_generation")
    b.input("layout_searched", "yes/no", kind="generated_text")
    # issue 25: a pinned recomputation or compute precision whose removal left memory, days and
    # cost within 0.1% when the plan was generated (budget/plan/plan.py): its value then, else blank
    b.input("inert_recompute", "mode", kind="generated_text", optional=True)
    b.input("inert_compute_precision", "mode", kind="generated_text", optional=True)
    for name in (*SEARCH_INPUTS, *SEARCH_ITEMS):
        source = b.model.inputs.get(name) or b.model.items.get(name)
        kind = "generated_text" if source.unit in {"catalog id", "yes/no", "mode", "text"} else "generated"
        b.input(f"gen_{name}", source.unit, kind=kind, optional=True,
                label=b.text("generated.label").format(source.label))


def _acc(column: str) -> Lookup:
    return Lookup(ACCELERATOR_TABLE, column, Ref("gpu_type"))


def _arch(column: str) -> Expr:
    """A figure of the Architectures table; blank for an accelerator a reviewer added to the
    accelerator table but not to this one (its software then counts as mature, its factor scaled)."""
    found = Lookup(ARCHITECTURE_TABLE, column, Ref("gpu_type"))
    return IF(ISERROR(found), "", found)


def _accelerator(b: ModelBuilder, i: _Inputs) -> None:
    b.sheet("Compute", "accelerator")
    b.item("accelerator_name", "text", _acc("name"))
    bf16 = b.item("peak_bf16_tflops", "TFLOPS", _acc("peak_bf16_tflops"))
    # the dense peak of the compute precision; blank in the catalog (none published) reads as 0
    # here, and check_precision_peak fails
    b.item("peak_tflops", "TFLOPS",
           IF(i.compute_precision.eq("fp8"), _acc("peak_fp8_tflops"),
              IF(i.compute_precision.eq("fp4"), _acc("peak_fp4_tflops"), bf16)))
    b.item("gpus_per_node", "GPUs", _acc("gpus_per_node"))
    # the GPUs one fast fabric joins (NVLink across an NVL72 rack, a TPU pod's ICI), at least a
    # node; a reviewer's row without it: the node
    domain = _acc("scale_up_domain")
    b.item("scale_up_gpus", "GPUs", IF(ISNUMBER(domain), MAX(domain, Ref("gpus_per_node")), Ref("gpus_per_node")))
    b.item("intra_node_gb_per_s", "GB/s", _acc("intra_node_gb_per_s"))
    b.item("scale_out_gb_per_s", "GB/s",
           IF(i.gpu_count <= Ref("gpus_per_node"), Ref("intra_node_gb_per_s"),
              _acc("inter_node_gbit_per_s") / i.bits_per_byte))

    b.section("model")
    _params(b, i)
    _flops_per_token(b, i)

    b.section("utilisation")
    _utilisation(b, i)

    b.section("batch")
    batch_tokens = b.item("global_batch_tokens", "tokens", i.global_batch_sequences * i.seq_len)
    staged = _stage_values(b, i)
    b.item("train_steps", "steps", IF(staged, SUM(Ref("stage_train_steps")), i.train_tokens / batch_tokens))
    b.item("tokens_per_param", "tokens/parameter", i.train_tokens / Ref("model_params"))


def _params(b: ModelBuilder, i: _Inputs) -> None:
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


def _flops_per_token(b: ModelBuilder, i: _Inputs) -> None:
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
    six = b.item("flops_per_token_6n", "FLOP/token", i.flops_per_param_token * Ref("params_active"))
    attn = b.item("attention_flops_per_token", "FLOP/token",
                  i.flops_per_param_token * L * i.seq_len * width * i.causal_attention_fraction)
    full = b.item("flops_per_token_with_attention", "FLOP/token",
                  i.flops_per_param_token * (Ref("params_active") - lookup) + attn)
    b.item("model_flops_per_token", "FLOP/token", IF(i.flops_basis.eq("with_attention"), full, six))


def _utilisation(b: ModelBuilder, i: _Inputs) -> None:
    """Hardware FLOPs count recomputation (Korthikanti et al. 2022 §6.3, after PaLM): full
    recomputation runs the layers' forward again (not the output head: Narayanan et al. 2021,
    Eq. 3), selective adds the attention scores' FLOPs once more (Korthikanti et al. 2022, Eq. 8,
    which reproduces their Table 5). A typed HFU is converted to MFU on the chosen basis."""
    r = Ref
    fwd = i.forward_flops_per_param_token / i.flops_per_param_token
    extra = b.item("recompute_flops_per_token", "FLOP/token",
                   IF(i.recompute.eq("full"),
                      fwd * (r("model_flops_per_token") - i.flops_per_param_token * i.vocab_size * i.hidden_size),
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
                    _acc("typical_mfu") * bf16_share))))


def _per_row(expr) -> Expr:
    """A stage row's figure: blank on the table's spare rows (no tokens)."""
    return PerRow(IF(ISNUMBER(At("stage_tokens")), expr, ""), "stage_tokens")


def _stage_values(b: ModelBuilder, i: _Inputs) -> Expr:
    """Each stage's own value of the inputs a stage may set, the plan's where it leaves one
    blank, and its optimizer steps. Returns the condition 'the run has stages'."""
    for name, column in STAGE_VALUES.items():
        d = b.model.inputs[name]
        b.row_item(f"{column}_used", d.unit, _per_row(IF(ISNUMBER(At(column)), At(column), i[name])),
                   label=d.label)
    # The training tokens stay the run's one figure: each stage trains its share of them (all of
    # its tokens when the stages add up, as check_stage_tokens holds), so a what-if on the
    # training tokens (the Sensitivity sheet) moves every stage in proportion.
    b.row_item("stage_tokens_used", "tokens",
               _per_row(At("stage_tokens") * i.train_tokens / SUM(i.stage_tokens)))
    b.row_item("stage_train_steps", "steps",
               _per_row(At("stage_tokens_used") / (At("stage_batch_sequences_used") * At("stage_seq_len_used"))))
    return b.item("stages_given", "stages", COUNTA(i.stage_tokens)) > 0


def _row_table(b: ModelBuilder, targets, prefix: str, swap: Mapping[str, Expr], per_row) -> None:
    """The model's own items `targets`, and the items they need that a row's values change,
    re-evaluated row by row with each row's values: <prefix><item>, the same formula with the
    expressions of `swap` (plan input -> the row's cell, or a fixed value) in place of the plan's
    inputs, `per_row` making it a row item of its table. One definition: a row of a table (a
    stage, a published run) is the plan at its values."""
    model = b.model
    needed = model.closure(targets)
    rowed = {n.removeprefix(prefix) for n, it in model.items.items() if it.kind == "rows" and n.startswith(prefix)}

    def to_row(name: str):
        if name in swap:
            return swap[name]
        return At(f"{prefix}{name}") if name in rowed else None

    for name in model.affected_by(set(swap)):
        if name not in needed or name in rowed:
            continue
        item = model.items[name]
        b.row_item(f"{prefix}{name}", item.unit, per_row(substitute(item.expr, to_row)),
                   label=item.label, note=item.note)
        rowed.add(name)


def _stage_rows(b: ModelBuilder, targets) -> None:
    """The model's items `targets` at each stage's values: stage_<item> (see _row_table)."""
    _row_table(b, targets, "stage_", {name: At(f"{column}_used") for name, column in STAGE_VALUES.items()},
               _per_row)


def _shifted(i: _Inputs, mfu: Expr) -> Expr:
    """An MFU with a what-if's model error (model_error_factor, 1 in the plan: the step time × it,
    so the MFU ÷ it), at most 100%."""
    return IF(i.model_error_factor.eq(1), mfu, MIN(1, mfu / i.model_error_factor))


def _stage_figures(b: ModelBuilder, i: _Inputs) -> Expr:
    """Each stage's FLOPs, utilisation, GPU-hours and days; the condition 'the run has stages'.
    A stage's typed MFU is all-in, as Llama 3's Table 4 gives one per configuration; blank, the
    stage's utilisation is the plan's efficiency model at the stage's layout."""
    _stage_rows(b, STAGE_FIGURES)
    b.row_item("stage_train_flops", "FLOP", _per_row(At("stage_tokens_used") * At("stage_model_flops_per_token")))
    b.row_item("stage_mfu_used", "fraction",
               _per_row(_shifted(i, IF(ISNUMBER(At("stage_mfu")), At("stage_mfu"),
                                       At("stage_effective_mfu") * Ref("calibration_factor")))))
    b.row_item("stage_gpu_hours", "GPU-h",
               _per_row(At("stage_train_flops") / (Ref("peak_tflops") * At("stage_mfu_used") * i.flops_per_tflop)
                        / 3600))
    b.row_item("stage_train_days", "days", _per_row(At("stage_gpu_hours") / At("stage_gpu_count_used") / 24))
    b.row_item("stage_idle_gpu_hours", "GPU-h",
               _per_row((i.gpu_count - At("stage_gpu_count_used")) * At("stage_train_days") * 24))
    return Ref("stages_given") > 0


def _layout(b: ModelBuilder, i: _Inputs) -> None:
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


def _memory(b: ModelBuilder, i: _Inputs) -> None:
    r = Ref
    b.sheet("Memory", "accelerator_memory")
    hbm = b.item("hbm_gb", "GB", _acc("hbm_gb"))
    usable = b.item("usable_hbm_gb", "GB", hbm * i.usable_memory_fraction)

    b.section("model_states")
    w = b.item("weights_gb", "GB", Ref("model_params") * i.weight_bytes_per_param / i.bytes_per_gb)
    g = b.item("gradients_gb", "GB", Ref("model_params") * i.grad_bytes_per_param / i.bytes_per_gb)
    o = b.item("optimizer_gb", "GB", Ref("model_params") * i.optimizer_bytes_per_param / i.bytes_per_gb)

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
                         * i.weight_bytes_per_param / tp / i.bytes_per_gb, 0))
    per_gpu = b.item("memory_per_gpu_gb", "GB", w_gpu + g_gpu + o_gpu + a_gpu + gathered)
    b.item("memory_headroom_gb", "GB", usable - per_gpu)

    b.section("gpu_count_from_memory")
    min_gpus = b.item("min_gpus_for_memory", "GPUs", ROUNDUP(total / usable, 0))
    min_nodes = b.item("min_nodes_for_memory", "nodes", ROUNDUP(min_gpus / r("gpus_per_node"), 0))
    nodes = b.item("memory_first_nodes", "nodes", ROUNDUP(min_nodes * (1 + i.split_margin), 0))
    b.item("memory_first_gpus", "GPUs", nodes * r("gpus_per_node"))
    b.item("reserved_gpus", "GPUs", (r("nodes") + i.spare_nodes) * r("gpus_per_node"))


def _efficiency(b: ModelBuilder, i: _Inputs) -> None:
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
                   2 * (dpcp - 1) / dpcp * Ref("model_params") / (tp * pp)
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


def _fitted_step_time(b: ModelBuilder, i: _Inputs) -> None:
    """Issue 13's step-time model, fitted on published runs by budget/calibrate.py (which reads
    these items): (1 + bubble) × (matmul time at the BF16 peak × the matmul factor + attention-score
    time at peak × the attention factor) + the exposed DP time + the PP, CP and EP time. The
    matmul factor is the architecture's, plus narrow per-GPU matmuls (width factor ÷ (h/TP)), plus
    software younger than the cap on its architecture (immaturity factor per year short); the
    attention factor has its own immaturity factor."""
    r = Ref
    b.section("fitted_step_time")
    fpt, fwd = i.flops_per_param_token, i.forward_flops_per_param_token / i.flops_per_param_token
    full, selective = i.recompute.eq("full"), i.recompute.eq("selective")
    matmul = fpt * (r("params_active") - r("params_lookup"))
    b.item("matmul_hardware_flops_per_token", "FLOP/token",
           IF(full, matmul + fwd * (matmul - fpt * i.vocab_size * i.hidden_size), matmul))
    b.item("attention_hardware_flops_per_token", "FLOP/token",
           r("attention_flops_per_token") * (1 + IF(full, fwd, IF(selective, 1, 0))))
    per_gpu = b.item("tokens_per_gpu_step", "tokens", r("global_batch_tokens") / i.gpu_count)
    peak = r("peak_bf16_tflops") * i.flops_per_tflop
    matmul_s = b.item("matmul_at_peak_s", "s", r("matmul_hardware_flops_per_token") * per_gpu / peak)
    attn_s = b.item("attention_at_peak_s", "s", r("attention_hardware_flops_per_token") * per_gpu / peak)
    # a reviewer's own accelerator row may lack the date: its software is taken as mature
    launched = _arch("architecture_launched")
    years = b.item("architecture_years", "years",
                   IF(ISNUMBER(launched), (i.start_date - launched) / i.days_per_year, i.fitted_immaturity_cap_years))
    fitted = _arch("fitted_matmul_factor")
    reference = i.fitted_reference_accelerator
    arch = b.item("architecture_matmul_factor", "×",
                  IF(ISNUMBER(fitted), fitted,
                     Lookup(ARCHITECTURE_TABLE, "fitted_matmul_factor", reference)
                     * Lookup(ACCELERATOR_TABLE, "typical_mfu", reference) / _acc("typical_mfu")))
    short = b.item("software_years_short", "years", MAX(0, i.fitted_immaturity_cap_years - years))
    factor = b.item("matmul_time_factor", "×",
                    arch + i.fitted_width_factor / (i.hidden_size / i.tp_size) + i.fitted_immaturity_factor * short)
    # attention kernels mature later than matmuls on a new architecture (FlashAttention-2 on
    # Hopper in 2023 against FlashAttention-3 in 2024): their own factor per year short
    attn_factor = b.item("attention_time_factor", "×",
                         i.fitted_attention_factor + i.fitted_attention_immaturity_factor * short)
    exposed = IF(i.zero_stage > 2, i.fitted_zero3_exposed, i.fitted_dp_exposed)
    # the software stack's factor on the compute time (issue 25; unknown where the scenario does not say)
    stack = b.item("stack_time_factor", "×", _choose(i.efficiency_stack, EFFICIENCY_STACKS,
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


def _choose(choice: Expr, options, value) -> Expr:
    """value(option) for the option `choice` holds: nested IFs over `options` (the last the fallback)."""
    *first, last = options
    out = value(last)
    for option in reversed(first):
        out = IF(choice.eq(option), value(option), out)
    return out


def _pilot_rows(b: ModelBuilder, targets) -> None:
    """The model's own items `targets`, and the items they need that the pilot's values change,
    evaluated once more with the pilot's values: pilot_<item>, the same formula with the pilot's
    cells in place of the plan's. The scalar counterpart of _stage_rows: a pilot is the plan at
    its values, no second model."""
    model = b.model
    swap = {name: f"{column}_used" for name, column in PILOT_VALUES.items()}
    needed = model.closure(targets)
    done: set[str] = set()

    def to_pilot(name: str):
        if name in swap:
            return Ref(swap[name])
        return Ref(f"pilot_{name}") if name in done else None

    for name in model.affected_by(set(swap)):
        item = model.items[name]
        if name not in needed or item.kind != "item":
            continue
        b.item(f"pilot_{name}", item.unit, substitute(item.expr, to_pilot),
               label=b.text("calibration.pilot_of").format(item.label), note=item.note)
        done.add(name)


def _calibration(b: ModelBuilder, i: _Inputs) -> None:
    """Seed 000 step 6: measure a small pilot, then extrapolate. The pilot's measured MFU (its
    step time or tokens/s converted with the model's FLOPs per token and peak) over the model's
    own MFU at the pilot's layout is the calibration factor; the full run's MFU is the model's at
    its layout times that factor. No pilot: the factor is 1."""
    r = Ref
    b.sheet("Parallelism", "calibration")
    for name, column in PILOT_VALUES.items():
        d = b.model.inputs[column]
        b.item(f"{column}_used", d.unit, IF(ISNUMBER(i[column]), i[column], i[name]),
               label=b.text("calibration.pilot_of").format(b.model.inputs[name].label), note="")
    _pilot_rows(b, PILOT_FIGURES)
    peak = r("peak_tflops") * i.flops_per_tflop
    flops_per_step = r("model_flops_per_token") * r("pilot_global_batch_tokens")
    predicted = r("pilot_effective_mfu")
    b.item("pilot_predicted_step_s", "s", flops_per_step / (r("pilot_gpu_count_used") * peak * predicted))
    measured = b.item("pilot_measured_mfu", "fraction",
                      IF(ISNUMBER(i.pilot_mfu), i.pilot_mfu * r("mfu_basis_factor"),
                         IF(ISNUMBER(i.pilot_tokens_per_gpu_s),
                            i.pilot_tokens_per_gpu_s * r("model_flops_per_token") / peak,
                            IF(ISNUMBER(i.pilot_step_time_s),
                               flops_per_step / (r("pilot_gpu_count_used") * i.pilot_step_time_s * peak), ""))))
    calibrated = ISNUMBER(measured)
    b.item("pilot_measured_step_s", "s",
           IF(calibrated, flops_per_step / (r("pilot_gpu_count_used") * peak * measured), ""))
    factor = b.item("calibration_factor", "×", IF(calibrated, measured / predicted, 1))
    mfu = b.item("calibrated_mfu", "fraction", _shifted(i, r("effective_mfu") * factor))
    b.item("calibrated_step_s", "s",
           r("model_flops_per_token") * r("global_batch_tokens") / (i.gpu_count * peak * mfu))


def _pilot_check(b: ModelBuilder, i: _Inputs) -> None:
    """The pilot is possible: its measured MFU and the full run's calibrated MFU at most 100%
    (no pilot: nothing to check)."""
    r = Ref
    measured = IF(ISNUMBER(r("pilot_measured_mfu")), r("pilot_measured_mfu"), 0)
    b.check("check_pilot_plausible",
            OR(NOT(ISNUMBER(r("pilot_measured_mfu"))), AND(measured <= 1, r("calibrated_mfu") <= 1)),
            detail=sentence(b, "check_pilot_plausible", ROUND(measured * 100, 1), ROUND(r("calibrated_mfu") * 100, 1)))


def _pilot_warning(b: ModelBuilder, i: _Inputs) -> None:
    """The factor within pilot_factor_low and pilot_factor_high: outside, a unit slip or a stack
    the efficiency model does not know (a warning: the measurement may well be right)."""
    r = Ref
    low, high = i.pilot_factor_low, i.pilot_factor_high
    factor = r("calibration_factor")
    b.warning("warn_pilot_factor",
              OR(NOT(ISNUMBER(r("pilot_measured_mfu"))), AND(factor >= low, factor <= high)),
              detail=sentence(b, "warn_pilot_factor", ROUND(factor, 2),
                              ROUND(IF(ISNUMBER(r("pilot_measured_mfu")), r("pilot_measured_mfu"), 0) * 100, 1),
                              ROUND(r("pilot_effective_mfu") * 100, 1), low, high))


def _compute(b: ModelBuilder, i: _Inputs) -> None:
    r = Ref
    staged = _stage_figures(b, i)
    b.sheet("Compute", "training_compute")
    flops = b.item("train_flops", "FLOP",
                   IF(staged, SUM(r("stage_train_flops")), Ref("model_flops_per_token") * i.train_tokens))
    eff = b.item("effective_tflops", "TFLOPS", r("peak_tflops") * r("calibrated_mfu"))
    b.item("cluster_pflops", "PFLOPS", eff * i.gpu_count / 1000)
    gpu_s = b.item("gpu_seconds", "GPU-s",
                   IF(staged, SUM(r("stage_gpu_hours")) * 3600, flops / (eff * i.flops_per_tflop)))
    gpu_h = b.item("gpu_hours", "GPU-h", gpu_s / 3600)
    gpu_d = b.item("gpu_days", "GPU-days", gpu_h / 24)
    b.item("train_days", "days", IF(staged, SUM(r("stage_train_days")), gpu_d / i.gpu_count))
    b.item("deadline_gpus", "GPUs", IF(ISNUMBER(i.deadline_days), ROUNDUP(gpu_d / i.deadline_days, 0), 0))


def _schedule(b: ModelBuilder, i: _Inputs) -> None:
    r = Ref
    b.sheet("Schedule", "data_and_checkpoints")
    raw = b.item("dataset_raw_gb", "GB", i.train_tokens * i.raw_bytes_per_token / i.bytes_per_gb)
    width = b.item("tokenized_bytes_per_token", "bytes",
                   IF(ISNUMBER(i.tokenized_bytes_override), i.tokenized_bytes_override,
                      IF(i.vocab_size <= i.small_vocab_limit, i.token_id_bytes, 2 * i.token_id_bytes)))
    tok = b.item("dataset_tokenized_gb", "GB", i.train_tokens * width / i.bytes_per_gb)
    b.item("dataset_gb", "GB", IF(ISNUMBER(i.dataset_gb_override), i.dataset_gb_override, raw + tok))
    b.item("checkpoint_weights_gb", "GB", Ref("model_params") * i.weight_bytes_per_param / i.bytes_per_gb)
    # what one checkpoint holds per parameter (storage.checkpoint_format): weights and optimizer
    # states, the same without the fp32 master copy, or the weights alone
    held = b.item("checkpoint_bytes_per_param", "bytes/parameter",
                  i.weight_bytes_per_param
                  + IF(i.checkpoint_format.eq("weights_only"), 0,
                       i.optimizer_bytes_per_param
                       - IF(i.checkpoint_format.eq("no_fp32_master"),
                            MIN(i.master_bytes_per_param, i.optimizer_bytes_per_param), 0)))
    full = b.item("checkpoint_full_gb", "GB", Ref("model_params") * held / i.bytes_per_gb)
    b.item("checkpoint_storage_gb", "GB",
           IF(ISNUMBER(i.checkpoint_storage_gb_override), i.checkpoint_storage_gb_override,
              i.checkpoints_kept * full))

    b.section("failures")
    rate = b.item("interruption_rate_total", "per GPU-hour", i.interruption_rate_per_gpu_hour
                  + IF(AND(i.price_tier.eq("spot"), i.ownership.eq("rented")),
                       i.spot_preemption_rate_per_gpu_hour, 0))
    mtbi = b.item("job_mtbi_hours", "hours", 1 / (rate * i.gpu_count))
    write = b.item("checkpoint_write_hours", "hours", full / i.storage_write_gb_per_s / 3600)
    step = b.item("step_hours", "hours", r("train_days") * 24 / r("train_steps"))
    # What one GPU holds of a checkpoint, copied from its memory at each checkpoint: its weights
    # and the part of its optimizer states the format keeps (Memory sheet, after TP, PP and ZeRO)
    kept = IF(i.optimizer_bytes_per_param > 0, (held - i.weight_bytes_per_param) / i.optimizer_bytes_per_param, 0)
    share = b.item("checkpoint_state_per_gpu_gb", "GB", r("weights_per_gpu_gb") + r("optimizer_per_gpu_gb") * kept)
    sync = i.checkpoint_mode.eq("synchronous")
    in_memory = i.checkpoint_mode.eq("in_memory")
    # What the training waits for (δ): the whole write to storage, or only the copy of its share
    # to host memory; the rest is written in the background (to storage, or to a peer's memory
    # over the scale-out network), and must end before the next checkpoint starts
    pause = b.item("checkpoint_pause_hours", "hours", IF(sync, write, share / i.host_copy_gb_per_s / 3600))
    behind = b.item("checkpoint_background_hours", "hours",
                    IF(sync, 0, IF(in_memory, share / r("scale_out_gb_per_s") / 3600, write)))
    daly = b.item("young_daly_interval_hours", "hours", SQRT(2 * pause * mtbi))
    interval = b.item("checkpoint_interval_hours", "hours",
                      MAX(IF(ISNUMBER(i.checkpoint_interval_steps_override),
                             i.checkpoint_interval_steps_override * step, MAX(daly, step)), behind))
    b.item("checkpoint_interval_steps", "steps", interval / step)
    # Work redone after an interruption: half an interval, plus the background write a failure
    # may catch unfinished (the last checkpoint whole is then one interval older): τ/2 + W
    redo = b.item("lost_work_hours", "hours", interval / 2 + behind)
    load = b.item("checkpoint_load_hours", "hours",
                  IF(in_memory, share / r("scale_out_gb_per_s"), full / i.storage_read_gb_per_s) / 3600)
    restart = b.item("restart_hours", "hours",
                     (i.failure_detect_minutes + i.node_replace_minutes + i.job_startup_minutes) / 60 + load)
    ckpt = b.item("checkpoint_overhead", "fraction", pause / interval)
    per = b.item("loss_per_interruption_hours", "hours", redo + restart)
    lost = b.item("failure_fraction", "fraction", per / mtbi)
    stretched = b.item("stretched_training_days", "days", r("train_days") * (1 + ckpt) / (1 - lost))
    b.item("expected_interruptions", "interruptions", stretched * 24 / mtbi)
    rb_tokens = b.item("rollback_tokens", "tokens", i.rollbacks * i.rollback_steps * r("global_batch_tokens"))
    b.item("rollback_days", "days", r("train_days") * rb_tokens / i.train_tokens)
    loss = b.item("failure_loss_days", "days", stretched - r("train_days"))
    b.item("gpu_hours_lost", "GPU-h", loss * 24 * i.gpu_count)
    b.item("goodput", "fraction", r("train_days") / stretched)
    b.item("gpu_failure_probability", "fraction", 1 - EXP(0 - rate * stretched * 24))

    # issue 25: what full runs spend beyond step time and the modelled failures (restarts and
    # debugging, loss spikes, stragglers, data and evaluation stalls, capacity held idle), fitted on
    # published full runs' GPUs × wall-clock days against their own throughput (budget/plan/calibrate.py);
    # the calendar share lengthens the run, the rest adds billed card-hours only
    b.section("card_hours")
    allowance = b.item("card_allowance", "fraction", _choose(i.efficiency_maturity, MATURITIES,
                                                             lambda m: i[f"fitted_card_allowance_{m}"]))
    cal = b.item("card_allowance_days", "days", stretched * allowance * i.card_allowance_calendar_share)
    per_day = r("gpu_hours") / r("train_days")
    billed_only = b.item("card_allowance_billed_only_gpu_hours", "GPU-h",
                         per_day * stretched * allowance * (1 - i.card_allowance_calendar_share))
    b.item("card_gpu_hours", "GPU-h", per_day * (stretched + r("rollback_days") + cal) + billed_only)

    b.section("data_loading")
    b.item("data_read_gb_per_s", "GB/s", tok / (r("train_days") * 86400))

    b.section("run_schedule")
    transfer = b.item("transfer_days", "days", tok * i.bits_per_byte / i.transfer_gbit_per_s / 86400)
    evaluation = b.item("evaluation_days", "days", i.evaluation_weeks * 7)
    cal = r("card_allowance_days")
    non_training = b.item("non_training_days", "days", i.queue_days + i.setup_days + transfer + loss + cal)
    b.item("non_training_margin", "fraction of training", non_training / r("train_days"))
    b.item("run_days", "days",
           i.queue_days + i.setup_days + transfer + stretched + r("rollback_days") + cal + evaluation)
    b.item("billed_days", "days", i.setup_days + transfer + stretched + cal + evaluation)


def _timeline(b: ModelBuilder, i: _Inputs) -> None:
    r = Ref
    b.sheet("Timeline", "phases")
    phases = [("data_prep", i.data_prep_weeks * 7),
              ("validation", i.validation_weeks * 7),
              ("scaling", i.scaling_weeks * 7),
              ("training", i.queue_days + i.setup_days + r("transfer_days") + r("stretched_training_days")
               + r("rollback_days") + r("card_allowance_days")),
              ("evaluation", r("evaluation_days")),
              ("deployment", i.deployment_weeks * 7)]
    previous = i.start_date
    for key, days in phases:   # items <key>_start and <key>_end
        start = b.item(f"{key}_start", "date", previous)
        previous = b.item(f"{key}_end", "date", start + days)
    # Each stage's dates: its share of the stretched training days, after queue, setup and transfer
    stretch = r("stretched_training_days") / r("train_days")
    begin = r("training_start") + i.queue_days + i.setup_days + r("transfer_days")
    b.row_item("stage_end", "date", _per_row(begin + SUM(UpTo("stage_train_days")) * stretch))
    b.row_item("stage_start", "date", _per_row(At("stage_end") - At("stage_train_days") * stretch))
    b.section("project")
    b.item("project_end", "date", previous)
    days = b.item("project_days", "days", previous - i.start_date)
    b.item("project_weeks", "weeks", days / 7)
    b.item("project_months", "months", days * 12 / 365)


# The lines of the subtotal, in the order the Cost sheet, the Summary, the reports and the
# Cashflow sheet show them; what the total adds after them; and the memo lines beside them.
COST_LINES = ("cluster_cost", "experiment_cost", "rollback_cost", "post_training_cost", "serving_cost",
              "network_cost", "storage_cost", "staffing_cost")
AFTER_SUBTOTAL = ("vat_in_total",)
# the flat buffer is a memo (issue 25): the ask is a percentile of the total, not the total plus
# a buffer, so the buffer is shown with the percentile it would cover, never added
MEMO_LINES = ("buffer_cost", "buffered_total_cost", "rental_cost", "rental_gap_cost", "billed_rental_cost",
              "reserved_unused_cost", "energy_cost_equivalent", "vat_recoverable_memo")


def _fx(currency_input: str) -> Expr:
    """Units of the plan's currency per unit of the currency `currency_input` names: both rates
    from the FX table, so the table may be quoted against any one currency."""
    return (Lookup(FX_TABLE, "rate", Ref(currency_input))
            / Lookup(FX_TABLE, "rate", Ref("currency")))


def _cost(b: ModelBuilder, i: _Inputs) -> None:
    r = Ref
    b.sheet("Cost", "exchange_rates")
    fx = {}
    for name, currency in FX_FACTORS:
        fx[name] = b.item(name, "×", _fx(currency))

    b.section("gpu_rates")
    gpu_rate = b.item("gpu_rate", "currency/GPU-hour", i.price_per_gpu_hour * fx["fx_gpu"])
    on_demand = b.item("on_demand_rate", "currency/GPU-hour",
                       IF(ISNUMBER(i.on_demand_per_gpu_hour), i.on_demand_per_gpu_hour * fx["fx_gpu"],
                          gpu_rate))
    spot = i.price_tier.eq("spot")
    reserved = i.price_tier.eq("reserved")
    tier_rate = b.item("tier_rate", "currency/GPU-hour", IF(spot, gpu_rate * (1 - i.spot_discount), gpu_rate))

    b.section("gpu_rental")
    b.item("rental_cost", "currency", r("gpu_hours") * tier_rate)
    billed_h = b.item("billed_gpu_hours", "GPU-h",
                      r("reserved_gpus") * r("billed_days") * 24 + r("card_allowance_billed_only_gpu_hours"))
    committed = b.item("committed_gpus", "GPUs",
                       IF(ISNUMBER(i.reserved_committed_gpus), i.reserved_committed_gpus, r("reserved_gpus")))
    term_h = b.item("reserved_term_hours", "hours", i.reserved_term_months * 365 / 12 * 24)
    committed_h = b.item("committed_gpu_hours", "GPU-h", IF(reserved, committed * term_h, 0))
    used_h = b.item("committed_gpu_hours_used", "GPU-h",
                    IF(reserved, MIN(r("reserved_gpus"), committed) * MIN(r("billed_days") * 24, term_h), 0))
    over_h = b.item("on_demand_gpu_hours", "GPU-h", IF(reserved, billed_h - used_h, 0))
    b.item("reserved_unused_share", "fraction", IF(committed_h > 0, 1 - used_h / committed_h, 0))
    rental = b.item("billed_rental_cost", "currency",
                    IF(reserved, committed_h * tier_rate + over_h * on_demand, billed_h * tier_rate))
    b.item("reserved_unused_cost", "currency", (committed_h - used_h) * tier_rate)
    b.item("reserved_upfront_cost", "currency", committed_h * tier_rate * i.reserved_upfront_share)

    b.section("energy_and_carbon")
    tdp_kw = b.item("gpu_power_kw", "kW", IF(ISNUMBER(_acc("tdp_w")), _acc("tdp_w") / 1000, 0))
    overhead = b.item("node_overhead_kw_used", "kW",
                      IF(ISNUMBER(i.node_overhead_kw), i.node_overhead_kw,
                         IF(ISNUMBER(_acc("node_overhead_kw")), _acc("node_overhead_kw"), 0)))
    node_kw = b.item("node_power_kw", "kW", r("gpus_per_node") * tdp_kw + overhead)
    slot = node_kw / r("gpus_per_node")
    per_h = b.item("training_kwh_per_gpu_hour", "kWh", slot * i.draw_training * i.pue)
    idle_per_h = b.item("idle_kwh_per_gpu_hour", "kWh", slot * i.draw_idle * i.pue)
    wall_h = b.item("training_gpu_hours_wall", "GPU-h", i.gpu_count * r("stretched_training_days") * 24)
    idle_h = b.item("idle_gpu_hours", "GPU-h", MAX(0, billed_h - wall_h))
    nodes = b.item("cluster_nodes", "nodes", r("reserved_gpus") / r("gpus_per_node"))
    cluster_mwh = b.item("cluster_energy_mwh", "MWh", (wall_h * per_h + idle_h * idle_per_h) / 1000)
    flops_per_gpu_h = b.item("flops_per_gpu_hour", "FLOP", r("effective_tflops") * i.flops_per_tflop * 3600)

    b.section("other_runs")
    val_n = b.item("validation_params", "parameters", MIN(i.validation_model_params, r("model_params")))
    val_h = b.item("validation_gpu_hours", "GPU-h",
                   i.flops_per_param_token * val_n * i.validation_tokens / flops_per_gpu_h)
    sca_n = b.item("scaling_params", "parameters", MIN(i.scaling_model_params, r("model_params")))
    sca_h = b.item("scaling_gpu_hours", "GPU-h",
                   i.flops_per_param_token * sca_n * i.scaling_tokens / flops_per_gpu_h)
    exp_h = b.item("experiment_gpu_hours", "GPU-h", val_h + sca_h)
    rb_h = b.item("rollback_gpu_hours", "GPU-h",
                  r("model_flops_per_token") * r("rollback_tokens") / flops_per_gpu_h)
    post_h = b.item("post_training_gpu_hours", "GPU-h",
                    r("model_flops_per_token") * i.post_training_tokens / flops_per_gpu_h)
    extra_h = b.item("extra_gpu_hours", "GPU-h", exp_h + rb_h + post_h)
    extra_mwh = b.item("extra_energy_mwh", "MWh", extra_h * per_h / 1000)
    energy = b.item("energy_mwh", "MWh", cluster_mwh + extra_mwh)
    b.item("co2_tonnes", "t CO2e", energy * i.grid_intensity)
    power = b.item("electricity_rate", "currency/kWh", i.electricity_per_kwh * fx["fx_electricity"])
    b.item("energy_cost_equivalent", "currency", energy * 1000 * power)

    b.section("owned_cluster")
    owned = i.ownership.eq("owned")
    years, rate = i.depreciation_years, i.cost_of_capital
    crf = b.item("capital_recovery_factor", "per year",
                 IF(rate > 0, rate / (1 - EXP(0 - years * LN(1 + rate))), 1 / years))
    b.item("node_price_used", "currency",
           IF(ISNUMBER(i.node_price), i.node_price * fx["fx_node"],
              IF(ISNUMBER(_acc("node_price")), _acc("node_price") * Lookup(FX_TABLE, "rate", _acc("node_price_currency"))
                 / Lookup(FX_TABLE, "rate", i.currency), 0)))
    share = b.item("life_share", "fraction",
                   IF(ISNUMBER(i.life_share_override), i.life_share_override,
                      MIN(1, r("billed_days") / (years * 365))))
    capital = b.item("capital_cost", "currency", nodes * r("node_price_used") * crf * years * share)
    owned_energy = b.item("owned_energy_cost", "currency", cluster_mwh * 1000 * power)
    ops = b.item("owned_ops_cost", "currency",
                 nodes * i.ops_per_node_month * fx["fx_ops"] * r("billed_days") * 12 / 365)
    owned_cost = b.item("owned_cost", "currency", capital + owned_energy + ops)
    b.item("owned_rate_per_gpu_hour", "currency/GPU-hour", owned_cost / billed_h)

    b.section("compute")
    cluster = b.item("cluster_cost", "currency", IF(owned, owned_cost, rental))
    compute_rate = b.item("compute_rate", "currency/GPU-hour",
                          IF(owned, r("owned_rate_per_gpu_hour"), IF(reserved, on_demand, tier_rate)))
    b.item("rental_gap_cost", "currency", rental - r("rental_cost"))
    experiments = b.item("experiment_cost", "currency", exp_h * compute_rate)
    rollback = b.item("rollback_cost", "currency", rb_h * compute_rate)
    post = b.item("post_training_cost", "currency", post_h * compute_rate)
    serving = b.item("serving_cost", "currency",
                     i.serving_gpus * i.serving_months * 365 / 12 * 24
                     * IF(ISNUMBER(i.serving_per_gpu_hour), i.serving_per_gpu_hour * fx["fx_gpu"],
                          compute_rate))
    network = b.item("network_cost", "currency", (billed_h + extra_h) * i.network_per_gpu_hour * fx["fx_gpu"])

    b.section("storage")
    months = b.item("storage_months_used", "months",
                    IF(ISNUMBER(i.storage_months), i.storage_months, r("project_months")))
    gbm = b.item("storage_gb_months", "GB-months", (r("dataset_gb") + r("checkpoint_storage_gb")) * months)
    storage = b.item("storage_cost", "currency", gbm * i.price_per_gb_month * fx["fx_storage"])

    b.section("staffing")
    blank_months = Blanks(i.staff_months)
    b.item("staff_person_months", "person-months",
           SUMPRODUCT(i.staff_headcount, i.staff_months)
           + SUMPRODUCT(i.staff_headcount, blank_months) * r("project_months"))
    staffing = b.item("staffing_cost", "currency",
                      (SUMPRODUCT(i.staff_headcount, i.staff_monthly_cost, i.staff_months)
                       + SUMPRODUCT(i.staff_headcount, i.staff_monthly_cost, blank_months)
                       * r("project_months")) * i.staffing_factor * fx["fx_staff"])

    b.section("total")
    subtotal = b.item("subtotal_cost", "currency",
                      cluster + experiments + rollback + post + serving + network + storage + staffing)
    vat = b.item("vat_cost", "currency", (subtotal - staffing) * i.vat_rate)
    vat_in = b.item("vat_in_total", "currency", IF(i.vat_recoverable.eq("yes"), 0, vat))
    b.item("vat_recoverable_memo", "currency", IF(i.vat_recoverable.eq("yes"), vat, 0))
    # the point estimate: no contingency in it (the ask, a percentile of it, is the contingency)
    total = b.item("total_cost", "currency", subtotal + vat_in)
    b.item("cost_per_gpu_hour_all_in", "currency/GPU-h", total / r("gpu_hours"))
    buffer = b.item("buffer_cost", "currency", total * i.buffer_rate)
    b.item("buffered_total_cost", "currency", total + buffer)
    b.section("cashflow")
    res_start = b.item("reservation_start", "date", r("training_start") + i.queue_days)
    held = MAX(r("project_months"), months, i.staff_months)   # blank staff months: the project's
    end = b.item("spend_end", "date",
                 MAX(r("project_end"), i.start_date + held * 365 / 12,
                     res_start + IF(AND(reserved, NOT(owned)), i.reserved_term_months * 365 / 12, 0),
                     r("deployment_start") + i.serving_months * 365 / 12))
    b.item("spend_months", "months", (end - i.start_date) * 12 / 365)
    b.item("rental_share", "fraction",
           IF(subtotal > 0, (cluster + experiments + rollback + post) / subtotal, 0))


def words(*parts) -> Expr:
    """A sentence built with & over live cells: text parts and figures, in order."""
    out = lift(parts[0])
    for part in parts[1:]:
        out = out.concat(part)
    return out


def sentence(b: ModelBuilder, name: str, *figures) -> Expr:
    """A check's failure in words: the message items.<name>.detail, its {0}, {1}... replaced by
    the live figures, as words(...) over the text between them."""
    pieces = re.split(r"\{(\d+)\}", b.text(f"items.{name}.detail"))
    parts = [figures[int(p)] if k % 2 else p for k, p in enumerate(pieces)]
    return words(*(p for p in parts if not isinstance(p, str) or p))


def _checks(b: ModelBuilder, i: _Inputs) -> None:
    """Each check is 0 when fine and 1 when not or when it cannot be computed; `detail` says
    what is wrong in words built from the live cells, for the Summary's failing-check lines."""
    r = Ref
    gb = lambda x: ROUND(x, 1)  # noqa: E731 - figures in sentences, to 0.1
    b.sheet("Checks", "layout")
    b.check("check_layout_divides", MOD(i.gpu_count, i.tp_size * i.pp_size).eq(0),
            detail=sentence(b, "check_layout_divides", i.tp_size * i.pp_size, i.gpu_count))
    b.check("check_tp_divides_heads", MOD(i.attention_heads, i.tp_size).eq(0),
            detail=sentence(b, "check_tp_divides_heads", i.tp_size, i.attention_heads))
    stage_layers = i.model_layers + IF(i.first_last_stage_layers_fewer.eq("yes"), 2, 0)
    dualpipe = i.pipeline_schedule.eq("dualpipe")
    b.check("check_pp_divides_layers", OR(dualpipe, MOD(stage_layers, i.pp_size).eq(0)),
            detail=sentence(b, "check_pp_divides_layers", i.pp_size, stage_layers))
    # DeepSeek-V3 §3.2.1: DualPipe "only requires that the pipeline stages and micro-batches be
    # divisible by 2" (stages of uneven depth allowed); it is not interleaved
    b.check("check_dualpipe", OR(NOT(dualpipe),
                                 AND(MOD(i.pp_size, 2).eq(0), MOD(r("microbatches_per_step"), 2).eq(0),
                                     i.virtual_pipeline_stages.eq(1))),
            detail=sentence(b, "check_dualpipe", i.pp_size, ROUND(r("microbatches_per_step"), 2),
                            i.virtual_pipeline_stages))
    # Narayanan et al. 2021 §2.2.2: p·v model chunks, and micro-batches a multiple of p
    b.check("check_interleaving", OR(i.virtual_pipeline_stages.eq(1),
                                     AND(MOD(stage_layers, i.pp_size * i.virtual_pipeline_stages).eq(0),
                                         MOD(r("microbatches_per_step"), i.pp_size).eq(0))),
            detail=sentence(b, "check_interleaving", i.pp_size, i.virtual_pipeline_stages, stage_layers,
                            ROUND(r("microbatches_per_step"), 2)))
    # Megatron-Core and DeepSeek-V3 place EP inside DP; each EP rank holds experts ÷ ep experts
    b.check("check_ep_divides", OR(i.ep_size.eq(1),
                                   AND(MOD(r("dp_size"), i.ep_size).eq(0),
                                       MOD(r("moe_experts_used"), i.ep_size).eq(0))),
            detail=sentence(b, "check_ep_divides", i.ep_size, r("dp_size"), r("moe_experts_used")))
    b.check("check_batch_divides", MOD(i.global_batch_sequences, r("dp_size") * i.micro_batch_size).eq(0),
            detail=sentence(b, "check_batch_divides", ROUND(r("dp_size") * i.micro_batch_size, 2),
                            i.global_batch_sequences))

    # issue 25: active parameters typed without an MoE shape are ignored (the plan is dense, every
    # parameter active): a 10x budget that would otherwise pass every check
    b.check("check_active_params_need_moe", OR(NOT(ISNUMBER(i.active_params_override)), ISNUMBER(i.moe_experts)),
            detail=sentence(b, "check_active_params_need_moe",
                            ROUND(IF(ISNUMBER(i.active_params_override), i.active_params_override, 0)
                                  / 1000 / 1000 / 1000, 1),
                            ROUND(r("model_params") / 1000 / 1000 / 1000, 1)))

    b.section("memory")
    b.check("check_memory_fits", r("memory_per_gpu_gb") <= r("usable_hbm_gb"),
            detail=sentence(b, "check_memory_fits", gb(r("memory_per_gpu_gb")), gb(r("usable_hbm_gb"))))
    b.check("check_gpus_cover_memory", i.gpu_count >= r("min_gpus_for_memory"),
            detail=sentence(b, "check_gpus_cover_memory", i.gpu_count, r("min_gpus_for_memory")))

    b.section("throughput_and_schedule")
    b.check("check_precision_peak", AND(ISNUMBER(r("peak_tflops")), r("peak_tflops") > 0),
            detail=sentence(b, "check_precision_peak", i.compute_precision, r("accelerator_name")))
    b.check("check_mfu_plausible", r("effective_mfu") <= 1,
            detail=sentence(b, "check_mfu_plausible", ROUND(r("effective_mfu") * 100, 1)))
    _pilot_check(b, i)
    b.check("check_failures_finish", r("failure_fraction") < 1,
            detail=sentence(b, "check_failures_finish", ROUND(r("job_mtbi_hours"), 2)))
    b.check("check_data_loading", r("data_read_gb_per_s") <= i.storage_read_gb_per_s,
            detail=sentence(b, "check_data_loading", ROUND(r("data_read_gb_per_s"), 2),
                            i.storage_read_gb_per_s))
    b.check("check_meets_deadline",
            OR(NOT(ISNUMBER(i.deadline_days)), r("stretched_training_days") <= i.deadline_days),
            detail=sentence(b, "check_meets_deadline", gb(r("stretched_training_days")), i.deadline_days))
    b.check("check_deadline_gpus", OR(NOT(ISNUMBER(i.deadline_days)), i.gpu_count >= r("deadline_gpus")),
            detail=sentence(b, "check_deadline_gpus", r("deadline_gpus"), i.gpu_count))

    b.section("arithmetic")
    b.check("check_costs_add_up", ABS(r("total_cost") - SUM(*(r(n) for n in COST_LINES))
                - r("vat_in_total")) <= r("total_cost") / 1000 / 1000 / 1000,
            detail=sentence(b, "check_costs_add_up"))
    b.check("check_owned_priced", OR(i.ownership.eq("rented"), r("node_price_used") > 0),
            detail=sentence(b, "check_owned_priced"))
    b.check("check_fx_rates",
            AND(*(ISNUMBER(r(n)) for n, _ in FX_FACTORS)),
            detail=sentence(b, "check_fx_rates", i.currency))
    # the total with the flat buffer too: the ask is read beside it (issue 25)
    b.check("check_outputs_computable", AND(ISNUMBER(r("total_cost")), ISNUMBER(r("train_days")),
                                            ISNUMBER(r("gpu_hours")), ISNUMBER(r("memory_per_gpu_gb")),
                                            ISNUMBER(r("project_end")), ISNUMBER(i.gpu_count),
                                            ISNUMBER(r("buffered_total_cost"))),
            detail=sentence(b, "check_outputs_computable"))

    b.section("stages")
    _stage_rows(b, STAGE_CHECKS)
    failing = b.item("stage_checks_failing", "checks", SUM(*(r(f"stage_{c}") for c in STAGE_CHECKS)))
    b.check("check_stages", failing.eq(0), detail=sentence(b, "check_stages", failing))
    staged = r("stages_given") > 0
    b.check("check_stage_tokens", OR(NOT(staged), SUM(i.stage_tokens).eq(i.train_tokens)),
            detail=sentence(b, "check_stage_tokens", SUM(i.stage_tokens), i.train_tokens))
    b.check("check_stage_gpus", MAX(r("stage_gpu_count_used")) <= i.gpu_count,
            detail=sentence(b, "check_stage_gpus", MAX(r("stage_gpu_count_used")), i.gpu_count))

    b.section("as_generated")
    changed = SUM(*(IF(r(n).eq(r(f"gen_{n}")), 0, 1) for n in (*SEARCH_INPUTS, *SEARCH_ITEMS)))
    b.item("search_inputs_changed", "inputs", changed)
    b.check("check_search_inputs_unchanged",
            OR(r("layout_searched").eq("no"), r("search_inputs_changed").eq(0)),
            detail=sentence(b, "check_search_inputs_unchanged", r("search_inputs_changed")))
    below = (i.staff_rows_below, i.stage_rows_below, i.catalog_rows_below)
    b.check("check_tables_closed", COUNTA(*below).eq(0),
            detail=sentence(b, "check_tables_closed", COUNTA(*below)))
    b.check("check_timeline_fits", r("project_weeks") <= COLUMNS(i.timeline_week_cells),
            detail=sentence(b, "check_timeline_fits", ROUND(r("project_weeks"), 0),
                            COLUMNS(i.timeline_week_cells)))
    b.check("check_cashflow_fits",
            r("spend_end") <= DATE(YEAR(i.start_date), MONTH(i.start_date) + COLUMNS(i.cashflow_month_cells), 1),
            detail=sentence(b, "check_cashflow_fits", ROUND(r("spend_months"), 1),
                            COLUMNS(i.cashflow_month_cells)))

    checks = [r(c.name) for c in b.model.checks()]
    b.section("summary")
    total = SUM(*checks)
    b.item("master_check", "checks", IF(ISERROR(total), 1, total))

    b.section("warnings")
    b.warning("warn_training_within_a_year", r("stretched_training_days") <= 365,
              detail=sentence(b, "warn_training_within_a_year", ROUND(r("stretched_training_days"), 0)))
    ratio = r("tokens_per_param")
    b.warning("warn_tokens_per_param", AND(ratio >= i.tokens_per_param_low, ratio <= i.tokens_per_param_high),
              detail=sentence(b, "warn_tokens_per_param", ROUND(ratio, 1)))
    b.warning("warn_staffing", SUM(i.staff_headcount) > 0, detail=sentence(b, "warn_staffing"))
    b.warning("warn_staff_months",
              OR(COUNTA(i.staff_months).eq(0), MIN(i.staff_months) >= ROUND(r("project_months"), 1)),
              detail=sentence(b, "warn_staff_months", MIN(i.staff_months), ROUND(r("project_months"), 1)))
    # storage held as long as the project passes whatever the rounding (4.66 months is not short of 4.7)
    b.warning("warn_storage_months",
              OR(NOT(ISNUMBER(i.storage_months)), r("storage_months_used") >= ROUND(r("project_months"), 1)),
              detail=sentence(b, "warn_storage_months", ROUND(r("storage_months_used"), 1),
                              ROUND(r("project_months"), 1)))
    b.warning("warn_tp_within_node", i.tp_size <= r("scale_up_gpus"),
              detail=sentence(b, "warn_tp_within_node", i.tp_size, r("scale_up_gpus")))
    b.warning("warn_full_node", i.gpu_count >= r("gpus_per_node"),
              detail=sentence(b, "warn_full_node", i.gpu_count))
    b.warning("warn_cost_per_gpu_hour",
              AND(r("cost_per_gpu_hour_all_in") >= i.cost_per_gpu_hour_low * r("fx_plausibility"),
                  r("cost_per_gpu_hour_all_in") <= i.cost_per_gpu_hour_high * r("fx_plausibility")),
              detail=sentence(b, "warn_cost_per_gpu_hour", ROUND(r("cost_per_gpu_hour_all_in"), 2),
                              ROUND(i.cost_per_gpu_hour_low * r("fx_plausibility"), 2),
                              ROUND(i.cost_per_gpu_hour_high * r("fx_plausibility"), 2)))
    b.warning("warn_params_match_shape",
              AND(ABS(r("model_params") / r("params_from_shape") - 1) <= i.params_tolerance,
                  ABS(r("params_active") / r("params_active_from_shape") - 1) <= i.params_tolerance),
              detail=sentence(b, "warn_params_match_shape", ROUND(r("model_params") / 1000 / 1000 / 1000, 1),
                              ROUND(r("params_from_shape") / 1000 / 1000 / 1000, 1),
                              ROUND(r("params_active") / 1000 / 1000 / 1000, 1),
                              ROUND(r("params_active_from_shape") / 1000 / 1000 / 1000, 1)))
    def fits(gpu_hours, gpus, weeks):
        return OR(gpu_hours <= 0, AND(gpus > 0, gpu_hours / IF(gpus > 0, gpus, 1) / 24 <= weeks * 7))
    b.warning("warn_experiments_fit",
              AND(fits(r("validation_gpu_hours"), i.validation_gpus, i.validation_weeks),
                  fits(r("scaling_gpu_hours"), i.scaling_gpus, i.scaling_weeks)),
              detail=sentence(b, "warn_experiments_fit",
                              ROUND(r("validation_gpu_hours") / MAX(1, i.validation_gpus) / 24, 1),
                              ROUND(r("scaling_gpu_hours") / MAX(1, i.scaling_gpus) / 24, 1),
                              i.validation_weeks * 7, i.scaling_weeks * 7))
    b.warning("warn_power_known",
              AND(r("gpu_power_kw") > 0, OR(ISNUMBER(i.node_overhead_kw), ISNUMBER(_acc("node_overhead_kw")))),
              detail=sentence(b, "warn_power_known", r("accelerator_name")))
    _pilot_warning(b, i)
    # issue 25: a setting that changes nothing is not what makes the plan work (while the setting
    # is the one found inert at generation)
    # ("no" when none was: no setting is called so)
    inert_rec = i.recompute.eq(r("inert_recompute"))
    inert_prec = i.compute_precision.eq(r("inert_compute_precision"))
    b.warning("warn_setting_inert", NOT(OR(inert_rec, inert_prec)),
              detail=sentence(b, "warn_setting_inert",
                              words(IF(inert_rec, lift(b.text("items.warn_setting_inert.recompute")).concat(i.recompute), ""),
                                    IF(AND(inert_rec, inert_prec), b.text("items.warn_setting_inert.join"), ""),
                                    IF(inert_prec, lift(b.text("items.warn_setting_inert.precision"))
                                       .concat(i.compute_precision), ""))))
    # issue 13: the reference model (a baseline MFU, typed or the catalog's typical one, × the
    # layout efficiency ÷ reference_layout_efficiency) is deprecated, not removed: a plan that
    # still scales by it says so (an all-in utilisation or a typed layout efficiency does not)
    b.warning("warn_reference_model",
              OR(r("fitted_model_used").eq("yes"), ISNUMBER(i.layout_efficiency_override)),
              detail=sentence(b, "warn_reference_model"))
    warnings = [r(w.name) for w in b.model.warnings()]
    total = SUM(*warnings)
    b.item("warning_count", "checks", IF(ISERROR(total), 1, total))


def _ref_row(expr) -> Expr:
    """A published run's figure: blank where the run's published figure is blank (a cleared run)."""
    return PerRow(IF(ISNUMBER(At("ref_published_tokens_per_gpu_s")), expr, ""), REFERENCE_ROWS)


def _reference_runs(b: ModelBuilder, i: _Inputs) -> None:
    """The Reference runs sheet (issue 13): published runs near the plan, each the plan's own
    formulas at the run's published values (its accelerator's catalog row, shape, layout, batch)
    with the utilisation left to the efficiency model, and the planner's tokens/s per GPU beside
    the published figure. The runs are chosen at generation (budget/reference.py)."""
    b.sheet("Reference runs")       # i18n: not text (the sheet id)
    b.input_section("reference_runs")
    text_col = dict(kind="range_text", codec="text")
    b.input("ref_name", "text", **text_col)
    b.input("ref_source", "text", **text_col)
    b.input("ref_quote", "text", **text_col)
    b.input("ref_accelerator", "catalog id", **text_col)
    b.input("ref_gpu_count", "GPUs", kind="range", minimum=1)
    b.input("ref_layers", "layers", kind="range", minimum=1)
    b.input("ref_hidden_size", "width", kind="range", minimum=1)
    b.input("ref_attention_heads", "heads", kind="range", minimum=1)
    b.input("ref_kv_heads", "heads", kind="range", minimum=1, optional=True)
    b.input("ref_head_dim", "width", kind="range", minimum=1, optional=True)
    b.input("ref_ffn_hidden_size", "width", kind="range", minimum=1, optional=True)
    b.input("ref_vocab_size", "tokens", kind="range", minimum=1)
    b.input("ref_seq_len", "tokens", kind="range", minimum=1)
    b.input("ref_activation", "mode", choices=ACTIVATIONS, **text_col)
    b.input("ref_tied_embeddings", "yes/no", choices=YES_NO, **text_col)
    b.input("ref_position_embeddings", "mode", choices=POSITIONS, **text_col)
    b.input("ref_tp", "GPUs", kind="range", minimum=1)
    b.input("ref_pp", "stages", kind="range", minimum=1)
    b.input("ref_cp", "GPUs", kind="range", minimum=1)
    b.input("ref_ep", "GPUs", kind="range", minimum=1)
    b.input("ref_virtual_stages", "stages", kind="range", minimum=1)
    b.input("ref_micro_batch", "sequences", kind="range", minimum=1)
    b.input("ref_zero_stage", "stage", kind="range", minimum=0, maximum=3)
    b.input("ref_recompute", "mode", choices=RECOMPUTE_MODES, **text_col)
    b.input("ref_sequence_parallel", "yes/no", choices=YES_NO, **text_col)
    b.input("ref_batch_sequences", "sequences", kind="range", minimum=1)
    b.input("ref_software_date", "date", kind="range_date")
    b.input("ref_published_tokens_per_gpu_s", "tokens/s per GPU", kind="range", minimum=0, positive=True,
            optional=True)
    swap: dict[str, Expr] = {name: At(column) for name, column in REFERENCE_VALUES.items()}
    swap.update({name: lift("") for name in REFERENCE_BLANK})      # i18n: not text (a blank)
    swap.update({name: lift(value) for name, value in REFERENCE_FIXED.items()})
    _row_table(b, REFERENCE_FIGURES, "ref_", swap, _ref_row)
    estimate = b.row_item("ref_tokens_per_gpu_s", "tokens/s per GPU",
                          _ref_row(At("ref_peak_tflops") * i.flops_per_tflop * At("ref_effective_mfu")
                                   / At("ref_model_flops_per_token")))
    b.row_item("ref_published_mfu", "fraction",
               _ref_row(At("ref_published_tokens_per_gpu_s") * At("ref_model_flops_per_token")
                        / (At("ref_peak_tflops") * i.flops_per_tflop)))
    b.row_item("ref_error", "fraction",
               _ref_row(At(estimate.name) / At("ref_published_tokens_per_gpu_s") - 1))
