"""Checks and warnings (the Checks sheet), each with its failure in words built from the live
cells (words, sentence)."""

from __future__ import annotations

import re

from ..formula.expr import (ABS, AND, COLUMNS, COUNT, COUNTA, DATE, IF, IFERROR, ISNUMBER, MAX, MIN, MOD, MONTH, NOT, OR, ROUND,
                            ROUNDUP,
                            SUM, YEAR, Expr, Ref, lift)
from .cost import AFTER_SUBTOTAL, COST_LINES, FX_FACTORS
from .declare import Inputs
from .inputs import SEARCH_INPUTS, SEARCH_ITEMS
from .integrity import INPUT_CHECKS_SHEET, input_checks
from .lineitems import ModelBuilder
from .stages import STAGE_CHECKS, stage_rows
from .tables import acc


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


def checks_and_warnings(b: ModelBuilder, i: Inputs) -> None:
    """Each check is 0 when fine and 1 when not or when it cannot be computed; `detail` says
    what is wrong in words built from the live cells, for the Summary's failing-check lines.
    The master check counts the checks; the warnings are counted apart."""
    r = Ref
    # issue 29: every input's cell holds what the importer accepts (blank, text, 20 for 0.20 fail)
    # on a sheet of their own: forty rows of them would take the Checks sheet from 3 printed pages
    # to 8 and the reviewer's print pack past its 12 (the master check counts them all the same)
    b.sheet(INPUT_CHECKS_SHEET, "input_integrity")
    input_checks(b)
    _layout_checks(b, i)
    _run_checks(b, i)
    _consistency_checks(b, i)
    checks = [r(c.name) for c in b.model.checks()]
    b.section("summary")
    total = SUM(*checks)
    b.item("master_check", "checks", IFERROR(total, 1))
    _warnings(b, i)


def _gb(x) -> Expr:
    """A figure in a sentence, to 0.1."""
    return ROUND(x, 1)


def _layout_checks(b: ModelBuilder, i: Inputs) -> None:
    """The layout divides the GPUs, heads, layers, micro-batches and experts; the shape is consistent."""
    r = Ref
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


def _run_checks(b: ModelBuilder, i: Inputs) -> None:
    """The run fits in memory, its throughput is possible, and it finishes (failures, data, deadline)."""
    r = Ref
    b.section("memory")
    b.check("check_memory_fits", r("memory_per_gpu_gb") <= r("usable_hbm_gb"),
            detail=sentence(b, "check_memory_fits", _gb(r("memory_per_gpu_gb")), _gb(r("usable_hbm_gb"))))
    b.check("check_gpus_cover_memory", i.gpu_count >= r("min_gpus_for_memory"),
            detail=sentence(b, "check_gpus_cover_memory", i.gpu_count, r("min_gpus_for_memory")))

    b.section("throughput_and_schedule")
    b.check("check_precision_peak", AND(ISNUMBER(r("peak_tflops")), r("peak_tflops") > 0),
            detail=sentence(b, "check_precision_peak", i.compute_precision, r("accelerator_name")))
    b.check("check_mfu_plausible", r("effective_mfu") <= 1,
            detail=sentence(b, "check_mfu_plausible", ROUND(r("effective_mfu") * 100, 1)))
    pilot_check(b, i)
    b.check("check_failures_finish", r("failure_fraction") < 1,
            detail=sentence(b, "check_failures_finish", ROUND(r("job_mtbi_hours"), 2)))
    b.check("check_data_loading", r("data_read_gb_per_s") <= i.storage_read_gb_per_s,
            detail=sentence(b, "check_data_loading", ROUND(r("data_read_gb_per_s"), 2),
                            i.storage_read_gb_per_s))
    b.check("check_meets_deadline",
            OR(NOT(ISNUMBER(i.deadline_days)), r("stretched_training_days") <= i.deadline_days),
            detail=sentence(b, "check_meets_deadline", _gb(r("stretched_training_days")), i.deadline_days))
    # issue 27: a deadline date, met when training (or the project) ends on it or before, at the
    # approval percentile of the training days (Timeline sheet)
    # behind IF: a spreadsheet's OR evaluates every argument, and a blank deadline linked into a
    # Compare or Sensitivity column is "" (date + 1 would be #VALUE!, failing the check for no date)
    late = r("deadline_end_at_approval") - (i.deadline_date + 1)
    b.check("check_meets_deadline_date", IF(ISNUMBER(i.deadline_date), late < 0, 1),
            detail=sentence(b, "check_meets_deadline_date", i.approval_percentile, ROUNDUP(late, 1),
                            ROUND(r("deadline_end_p50") - (i.deadline_date + 1), 1)))
    b.check("check_deadline_gpus", OR(NOT(ISNUMBER(i.deadline_days)), i.gpu_count >= r("deadline_gpus")),
            detail=sentence(b, "check_deadline_gpus", r("deadline_gpus"), i.gpu_count))


def _consistency_checks(b: ModelBuilder, i: Inputs) -> None:
    """The arithmetic adds up, the stages agree with the plan, and the workbook is as generated."""
    r = Ref
    b.section("arithmetic")
    # the sentence names the live cause: a line that is not a number (text or an error in an
    # input it reads), else a line or the total typed over
    numbers = AND(*(ISNUMBER(r(n)) for n in ("total_cost", *COST_LINES, "vat_in_total")))
    b.check("check_costs_add_up", ABS(r("total_cost") - SUM(*(r(n) for n in COST_LINES))
                - r("vat_in_total")) <= r("total_cost") / 1000 / 1000 / 1000,
            detail=IF(numbers, sentence(b, "check_costs_add_up"), b.text("items.check_costs_add_up.detail_not_number")))
    # a rented cluster passes without reading the owned cluster's price (an error there, a
    # currency without a rate, is check_fx_rates's to name)
    b.check("check_owned_priced", IF(i.ownership.eq("rented"), 1, r("node_price_used")) > 0,
            detail=sentence(b, "check_owned_priced"))
    # issue 28 lets an owned cluster leave the GPU price blank; a rented one bills by it (issue 29:
    # a blank price must not give a green book with the GPUs free)
    b.check("check_rented_priced", OR(i.ownership.eq("owned"), ISNUMBER(i.price_per_gpu_hour)),
            detail=sentence(b, "check_rented_priced"))
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
    stage_rows(b, STAGE_CHECKS)
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
    _cost_sheet_checks(b, i)
    b.check("check_timeline_fits", r("project_weeks") <= COLUMNS(i.timeline_week_cells),
            detail=sentence(b, "check_timeline_fits", ROUND(r("project_weeks"), 0),
                            COLUMNS(i.timeline_week_cells)))
    b.check("check_cashflow_fits",
            r("spend_end") <= DATE(YEAR(i.start_date), MONTH(i.start_date) + COLUMNS(i.cashflow_month_cells), 1),
            detail=sentence(b, "check_cashflow_fits", ROUND(r("spend_months"), 1),
                            COLUMNS(i.cashflow_month_cells)))


def _cost_sheet_checks(b: ModelBuilder, i: Inputs) -> None:
    """Issue 29: the Cost sheet reconciles. Its value column (lines, memo and the rows below)
    holds as many figures as it has lines, so a row inserted inside it or a figure typed below
    it, which no total counts, fails; and each cost line and total still holds its formula's
    value, so a line overwritten with a figure (which the total would add as it stands) fails,
    naming the first such line."""
    r = Ref
    lines = [item.name for item in b.model.sheet_items("Cost")]
    figures = COUNT(*(r(n) for n in lines))
    b.check("check_cost_sheet_closed", COUNT(i.cost_sheet_cells).eq(figures),
            detail=sentence(b, "check_cost_sheet_closed", COUNT(i.cost_sheet_cells), figures))
    live = [n for n in (*COST_LINES, "subtotal_cost", *AFTER_SUBTOTAL, "total_cost")]
    oks = [r(n).eq(b.model.items[n].expr) for n in live]
    detail: Expr | str = ""
    for n, ok in reversed(list(zip(live, oks))):
        detail = IF(ok, detail, sentence(b, "check_cost_lines_live", b.model.items[n].label,
                                         ROUND(r(n), 0), ROUND(b.model.items[n].expr, 0)))
    b.check("check_cost_lines_live", AND(*oks), detail=detail)


def _warnings(b: ModelBuilder, i: Inputs) -> None:
    """Plausibility warnings, shown beside the checks and counted apart (warning_count)."""
    r = Ref
    b.section("warnings")
    b.warning("warn_training_within_a_year", r("stretched_training_days") <= i.days_per_year,
              detail=sentence(b, "warn_training_within_a_year", ROUND(r("stretched_training_days"), 0)))
    ratio = r("tokens_per_param")
    # issue 28: a fine-tune (sft, lora) trains on few tokens per parameter by design, and its staff
    # and evaluation outweigh tens of GPU-hours: neither pretraining band applies to it. Nor does
    # the tokens band to a continued pretraining: its tokens add to a base model's pretraining
    # (200B more on a 72B model is 2.8 per parameter, and no sign of a mistake)
    fine_tune = OR(i.job_mode.eq("sft"), i.job_mode.eq("lora"))
    from_scratch = i.job_mode.eq("pretraining")
    b.warning("warn_tokens_per_param",
              OR(NOT(from_scratch), AND(ratio >= i.tokens_per_param_low, ratio <= i.tokens_per_param_high)),
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
              OR(fine_tune, AND(r("cost_per_gpu_hour_all_in") >= i.cost_per_gpu_hour_low * r("fx_plausibility"),
                  r("cost_per_gpu_hour_all_in") <= i.cost_per_gpu_hour_high * r("fx_plausibility"))),
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
    # issue 28: a de-risking run (validation, scaling) on more GPUs than the run it de-risks
    b.warning("warn_derisking_gpus",
              AND(OR(r("validation_gpu_hours") <= 0, i.validation_gpus <= i.gpu_count),
                  OR(r("scaling_gpu_hours") <= 0, i.scaling_gpus <= i.gpu_count)),
              detail=sentence(b, "warn_derisking_gpus", i.validation_gpus, i.scaling_gpus, i.gpu_count))
    b.warning("warn_power_known",
              AND(r("gpu_power_kw") > 0, OR(ISNUMBER(i.node_overhead_kw), ISNUMBER(acc("node_overhead_kw")))),
              detail=sentence(b, "warn_power_known", r("accelerator_name")))
    pilot_warning(b, i)
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
    b.item("warning_count", "checks", IFERROR(total, 1))



def pilot_check(b: ModelBuilder, i: Inputs) -> None:
    """The pilot is possible: its measured MFU and the full run's calibrated MFU at most 100%
    (no pilot: nothing to check)."""
    r = Ref
    measured = IF(ISNUMBER(r("pilot_measured_mfu")), r("pilot_measured_mfu"), 0)
    b.check("check_pilot_plausible",
            OR(NOT(ISNUMBER(r("pilot_measured_mfu"))), AND(measured <= 1, r("calibrated_mfu") <= 1)),
            detail=sentence(b, "check_pilot_plausible", ROUND(measured * 100, 1), ROUND(r("calibrated_mfu") * 100, 1)))


def pilot_warning(b: ModelBuilder, i: Inputs) -> None:
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
