"""The stages of a multi-stage run (issue 12): each stage's values and its figures and checks
re-evaluated at them, and the row-table machinery a published run (reference.py) shares: a row of
a table is the plan at its values."""

from __future__ import annotations

from collections.abc import Mapping

from ..formula.expr import COUNTA, IF, ISNUMBER, SUM, At, Expr, PerRow, Ref, substitute
from .declare import Inputs
from .efficiency import shifted
from .lineitems import ModelBuilder

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


def per_row(expr) -> Expr:
    """A stage row's figure: blank on the table's spare rows (no tokens)."""
    return PerRow(IF(ISNUMBER(At("stage_tokens")), expr, ""), "stage_tokens")


def stage_values(b: ModelBuilder, i: Inputs) -> Expr:
    """Each stage's own value of the inputs a stage may set, the plan's where it leaves one
    blank, and its optimizer steps. Returns the condition 'the run has stages'."""
    for name, column in STAGE_VALUES.items():
        d = b.model.inputs[name]
        b.row_item(f"{column}_used", d.unit, per_row(IF(ISNUMBER(At(column)), At(column), i[name])),
                   label=d.label)
    # The training tokens stay the run's one figure: each stage trains its share of them (all of
    # its tokens when the stages add up, as check_stage_tokens holds), so a what-if on the
    # training tokens (the Sensitivity sheet) moves every stage in proportion.
    b.row_item("stage_tokens_used", "tokens",
               per_row(At("stage_tokens") * i.train_tokens / SUM(i.stage_tokens)))
    b.row_item("stage_train_steps", "steps",
               per_row(At("stage_tokens_used") / (At("stage_batch_sequences_used") * At("stage_seq_len_used"))))
    return b.item("stages_given", "stages", COUNTA(i.stage_tokens)) > 0


def row_table(b: ModelBuilder, targets, prefix: str, swap: Mapping[str, Expr], per_row) -> None:
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


def stage_rows(b: ModelBuilder, targets) -> None:
    """The model's items `targets` at each stage's values: stage_<item> (see row_table)."""
    row_table(b, targets, "stage_", {name: At(f"{column}_used") for name, column in STAGE_VALUES.items()},
               per_row)


def stage_figures(b: ModelBuilder, i: Inputs) -> Expr:
    """Each stage's FLOPs, utilisation, GPU-hours and days; the condition 'the run has stages'.
    A stage's typed MFU is all-in, as Llama 3's Table 4 gives one per configuration; blank, the
    stage's utilisation is the plan's efficiency model at the stage's layout."""
    stage_rows(b, STAGE_FIGURES)
    b.row_item("stage_train_flops", "FLOP", per_row(At("stage_tokens_used") * At("stage_model_flops_per_token")))
    b.row_item("stage_mfu_used", "fraction",
               per_row(shifted(i, IF(ISNUMBER(At("stage_mfu")), At("stage_mfu"),
                                       At("stage_effective_mfu") * Ref("calibration_factor")))))
    b.row_item("stage_gpu_hours", "GPU-h",
               per_row(At("stage_train_flops") / (Ref("peak_tflops") * At("stage_mfu_used") * i.flops_per_tflop)
                        / 3600))
    b.row_item("stage_train_days", "days", per_row(At("stage_gpu_hours") / At("stage_gpu_count_used") / 24))
    b.row_item("stage_idle_gpu_hours", "GPU-h",
               per_row((i.gpu_count - At("stage_gpu_count_used")) * At("stage_train_days") * 24))
    return Ref("stages_given") > 0
