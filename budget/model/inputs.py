"""Every input of the model, declared section by section in the Inputs sheet's order (each group's
sections in its inputs_* module), the constants and the workbook's structure cells, and the values
the layout search took as given (gen_<name>)."""

from __future__ import annotations

from .declare import Declare, Inputs
from .inputs_costs import energy_and_carbon, other_runs, owned_cluster, prices, staffing
from .inputs_run import batch_and_hardware, efficiency, memory, model_shape, parallel_layout, pilot, stages
from .inputs_schedule import storage_and_schedule, timeline
from .inputs_uncertainty import contingency, plausibility, uncertainty
from .lineitems import ModelBuilder

# Inputs whose values the layout search took as given when it chose the GPU count and layout
# (and the catalog figures it read): a reviewer who changes one must regenerate. Each keeps
# its value at generation in a visible cell named gen_<name>.
SEARCH_INPUTS = ("gpu_type", "model_layers", "hidden_size", "attention_heads", "seq_len",
                 "vocab_size", "params_override", "train_tokens", "global_batch_sequences",
                 "deadline_days", "deadline_date", "deadline_applies_to", "usable_memory_fraction", "weight_bytes_per_param",
                 "grad_bytes_per_param", "optimizer_bytes_per_param", "flash_attention",
                 "activation_gb_override", "gpu_count",
                 # the shape's details the memory depends on (issue 12)
                 "num_kv_heads", "head_dim", "ffn_hidden_size", "activation", "moe_experts",
                 "moe_experts_per_token", "moe_shared_experts", "moe_expert_ffn_hidden_size",
                 "moe_first_dense_layers", "moe_layer_freq",
                 # FP8/FP4 compute caches part of the activations in one byte
                 "compute_precision", "fp8_activation_share",
                 # the utilisation model ranks the layouts (issue 13)
                 "efficiency_model",
                 # issue 28: a LoRA job's frozen base and adapters set its memory and FLOPs
                 "job_mode", "lora_rank", "lora_targets", "adapter_params_override", "base_weights")
SEARCH_ITEMS = ("peak_tflops", "hbm_gb", "gpus_per_node", "scale_up_gpus", "intra_node_gb_per_s",
                "scale_out_gb_per_s")


def declare_inputs(b: ModelBuilder) -> Inputs:
    """The inputs, in the Inputs sheet's order: the run, its prices, its time, what judges it."""
    d = Declare(b)
    for declare in (model_shape, batch_and_hardware, parallel_layout, efficiency, memory, prices, owned_cluster,
                    energy_and_carbon, other_runs, storage_and_schedule, timeline, contingency, plausibility,
                    uncertainty, stages, pilot, staffing, constants, workbook_structure):
        declare(d)
    return d.inputs


def constants(d: Declare) -> None:
    """Fixed conventions (6 FLOPs per parameter per token, bytes per GB, ...)."""
    b, constant = d.b, d.constant
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
    # issue 28: a frozen weight's FLOPs per token under LoRA: the forward (2) and the backward's
    # gradient with respect to the input (2), not the one with respect to the weight (Hu et al.
    # 2021, arXiv:2106.09685 §4.2: "we do not need to calculate the gradients ... for most parameters")
    constant("frozen_flops_per_param_token", "FLOP/(parameter·token)", 4.0, minimum=0)
    # QLoRA (Dettmers et al. 2023, arXiv:2305.14314 §2): 4-bit NF4 weights, and double-quantised
    # constants of 8/64 + 32/(64·256) = 0.127 bits per parameter
    constant("qlora_weight_bits_per_param", "bits/parameter", 4.0, minimum=0)
    constant("qlora_constant_bits_per_param", "bits/parameter", 0.127, minimum=0)
    constant("causal_attention_fraction", "fraction", 0.5, minimum=0, maximum=1, kind="fraction")
    constant("korthikanti_split_bytes", "bytes/(s·b·h)", 24.0, minimum=24, maximum=24)
    constant("dropout_mask_bytes", "bytes", 1.0, minimum=0)
    constant("backward_forward_time_ratio", "×", 2.0, minimum=0)
    constant("days_per_year", "days", 365.25, minimum=365, maximum=366)
    # DeepSeek-V3 §3.2.1: DualPipe overlaps the forward and backward chunks' computation with their
    # all-to-all and PP communication, so that both "can be fully hidden during execution"
    constant("dualpipe_comm_exposed", "fraction", 0.0, minimum=0, maximum=1, kind="fraction")


def workbook_structure(d: Declare) -> None:
    """Cells of the workbook's structure the checks read."""
    b, add = d.b, d.add
    # Workbook structure: not assumptions, not on the Inputs rows. The cells just below the
    # growable tables (a check fails when anything is typed there) and the Timeline's week grid.
    b.input_section("workbook_structure")
    add("staff_rows_below", "cells", kind="structure")
    add("stage_rows_below", "cells", kind="structure")
    add("catalog_rows_below", "cells", kind="structure")
    # issue 29: the Cost sheet's value column, its lines and the rows below them (a figure typed
    # or inserted there that no total counts fails check_cost_sheet_closed)
    add("cost_sheet_cells", "cells", kind="structure")
    add("timeline_week_cells", "cells", kind="structure")
    add("cashflow_month_cells", "cells", kind="structure")
    add("cashflow_year_cells", "cells", kind="structure")


def generated(b: ModelBuilder) -> None:
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
