"""Reference runs (the Reference runs sheet, issue 13): published runs, each the plan's own formulas
at the run's values, and the planner's tokens/s per GPU beside the published figure."""

from __future__ import annotations

from ..formula.expr import IF, ISNUMBER, At, Expr, PerRow, lift
from .declare import ACTIVATIONS, POSITIONS, RECOMPUTE_MODES, YES_NO, Inputs
from .lineitems import ModelBuilder
from .stages import row_table

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


def _ref_row(expr) -> Expr:
    """A published run's figure: blank where the run's published figure is blank (a cleared run)."""
    return PerRow(IF(ISNUMBER(At("ref_published_tokens_per_gpu_s")), expr, ""), REFERENCE_ROWS)


def reference_runs(b: ModelBuilder, i: Inputs) -> None:
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
    row_table(b, REFERENCE_FIGURES, "ref_", swap, _ref_row)
    estimate = b.row_item("ref_tokens_per_gpu_s", "tokens/s per GPU",
                          _ref_row(At("ref_peak_tflops") * i.flops_per_tflop * At("ref_effective_mfu")
                                   / At("ref_model_flops_per_token")))
    b.row_item("ref_published_mfu", "fraction",
               _ref_row(At("ref_published_tokens_per_gpu_s") * At("ref_model_flops_per_token")
                        / (At("ref_peak_tflops") * i.flops_per_tflop)))
    b.row_item("ref_error", "fraction",
               _ref_row(At(estimate.name) / At("ref_published_tokens_per_gpu_s") - 1))
