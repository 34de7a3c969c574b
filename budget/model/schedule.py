"""Schedule, timeline and failures: the training compute (GPU-hours and days), data and
checkpoints, failures and their checkpointing, the allowance of full runs, the run's schedule and
the project's timeline."""

from __future__ import annotations

from ..formula.expr import (ABS, AND, EXP, IF, ISNUMBER, LN, MAX, MIN, NORMSINV, ROUNDUP, SQRT, SUM, At, Expr, Ref,
                            UpTo)
from .declare import MATURITIES, Inputs, choose
from .lineitems import ModelBuilder
from .stages import per_row, stage_figures


def training_compute(b: ModelBuilder, i: Inputs) -> None:
    r = Ref
    staged = stage_figures(b, i)
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


def schedule(b: ModelBuilder, i: Inputs) -> None:
    r = Ref
    b.sheet("Schedule", "data_and_checkpoints")
    raw = b.item("dataset_raw_gb", "GB", i.train_tokens * i.raw_bytes_per_token / i.bytes_per_gb)
    width = b.item("tokenized_bytes_per_token", "bytes",
                   IF(ISNUMBER(i.tokenized_bytes_override), i.tokenized_bytes_override,
                      IF(i.vocab_size <= i.small_vocab_limit, i.token_id_bytes, 2 * i.token_id_bytes)))
    tok = b.item("dataset_tokenized_gb", "GB", i.train_tokens * width / i.bytes_per_gb)
    b.item("dataset_gb", "GB", IF(ISNUMBER(i.dataset_gb_override), i.dataset_gb_override, raw + tok))
    # a checkpoint holds what is trained: every weight, or a LoRA job's adapters (issue 28)
    ckpt_w = b.item("checkpoint_weights_gb", "GB", Ref("trainable_params") * i.weight_bytes_per_param / i.bytes_per_gb)
    # what one checkpoint holds per parameter (storage.checkpoint_format): weights and optimizer
    # states, the same without the fp32 master copy, or the weights alone
    held = b.item("checkpoint_bytes_per_param", "bytes/parameter",
                  i.weight_bytes_per_param
                  + IF(i.checkpoint_format.eq("weights_only"), 0,
                       i.optimizer_bytes_per_param
                       - IF(i.checkpoint_format.eq("no_fp32_master"),
                            MIN(i.master_bytes_per_param, i.optimizer_bytes_per_param), 0)))
    full = b.item("checkpoint_full_gb", "GB", Ref("trainable_params") * held / i.bytes_per_gb)
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
    # (under LoRA, the adapters' share of the weights it holds: the frozen base is not written)
    trained = IF(r("weights_gb") > 0, ckpt_w / r("weights_gb"), 0)
    share = b.item("checkpoint_state_per_gpu_gb", "GB",
                   r("weights_per_gpu_gb") * trained + r("optimizer_per_gpu_gb") * kept)
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
    allowance = b.item("card_allowance", "fraction", choose(i.efficiency_maturity, MATURITIES,
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
    # issue 28: every phase beside training at most schedule.phase_share_cap of the training days
    b.item("phase_cap_days", "days", IF(ISNUMBER(i.phase_share_cap), i.phase_share_cap, 0) * r("train_days"))
    evaluation = b.item("evaluation_days", "days", capped_phase(i, i.evaluation_weeks * 7))
    # evaluation holds its own GPUs (blank: the reserved cluster)
    b.item("evaluation_gpus_used", "GPUs", IF(ISNUMBER(i.evaluation_gpus), i.evaluation_gpus, r("reserved_gpus")))
    cal = r("card_allowance_days")
    non_training = b.item("non_training_days", "days", i.queue_days + i.setup_days + transfer + loss + cal)
    b.item("non_training_margin", "fraction of training", non_training / r("train_days"))
    b.item("run_days", "days",
           i.queue_days + i.setup_days + transfer + stretched + r("rollback_days") + cal + evaluation)
    b.item("billed_days", "days", i.setup_days + transfer + stretched + cal + evaluation)


def capped_phase(i: Inputs, days: Expr) -> Expr:
    """A phase's days, at most phase_cap_days where schedule.phase_share_cap is given (issue 28)."""
    return IF(ISNUMBER(i.phase_share_cap), MIN(days, Ref("phase_cap_days")), days)


def timeline(b: ModelBuilder, i: Inputs) -> None:
    r = Ref
    b.sheet("Timeline", "phases")
    phases = [("data_prep", capped_phase(i, i.data_prep_weeks * 7)),
              ("validation", capped_phase(i, i.validation_weeks * 7)),
              ("scaling", capped_phase(i, i.scaling_weeks * 7)),
              ("training", i.queue_days + i.setup_days + r("transfer_days") + r("stretched_training_days")
               + r("rollback_days") + r("card_allowance_days")),
              ("evaluation", r("evaluation_days")),
              ("deployment", capped_phase(i, i.deployment_weeks * 7))]
    previous = i.start_date
    for key, days in phases:   # items <key>_start and <key>_end
        start = b.item(f"{key}_start", "date", previous)
        previous = b.item(f"{key}_end", "date", start + days)
    # Each stage's dates: its share of the stretched training days, after queue, setup and transfer
    stretch = r("stretched_training_days") / r("train_days")
    begin = r("training_start") + i.queue_days + i.setup_days + r("transfer_days")
    b.row_item("stage_end", "date", per_row(begin + SUM(UpTo("stage_train_days")) * stretch))
    b.row_item("stage_start", "date", per_row(At("stage_end") - At("stage_train_days") * stretch))
    b.section("project")
    b.item("project_end", "date", previous)
    days = b.item("project_days", "days", previous - i.start_date)
    b.item("project_weeks", "weeks", days / 7)
    b.item("project_months", "months", days * 12 / i.days_per_year)
    deadline_dates(b, i)


def _log_parts(low: Expr, high: Expr, z: Expr) -> tuple[Expr, Expr]:
    """A what-if's effect on the log of the training days, from the ratios its low and high give
    them: the mean and the spread (as budget/plan/sensitivity.py's, over ratios to the plan's)."""
    positive = AND(low > 0, high > 0)
    return (IF(positive, (LN(low) + LN(high)) / 2, 0), IF(positive, ABS(LN(high) - LN(low)) / 2 / z, 0))


def deadline_dates(b: ModelBuilder, i: Inputs) -> None:
    """Issue 27: when training (or the project) ends at the approval percentile of the training
    days, and at P50, for a deadline given as a date (schedule.deadline).

    The training days move with two of the Sensitivity sheet's uncertain inputs: the step-time
    model error (the days × the factor; × the MFU where the MFU would pass 100%) and the tokens
    (the days × the factor); the others leave them as they are. Their range is the Sensitivity
    sheet's lognormal (its train_days_p10/_p50/_p90) at the approval percentile. The phases before
    training, the queue, setup and transfer are held; the training days, their failures, rollbacks
    and allowance scale with them."""
    r = Ref
    z = NORMSINV(i.p90_probability)
    error = _log_parts(MAX(i.unc_model_error_low, r("calibrated_mfu")),
                       MAX(i.unc_model_error_high, r("calibrated_mfu")), z)
    tokens = _log_parts(i.unc_train_tokens_low, i.unc_train_tokens_high, z)
    mean, spread = error[0] + tokens[0], SQRT(error[1] * error[1] + tokens[1] * tokens[1])
    days = r("train_days")
    at_approval = b.item("train_days_at_approval", "days",
                         days * EXP(mean + NORMSINV(i.approval_percentile / 100) * spread))
    at_median = b.item("train_days_at_median", "days", days * EXP(mean))
    point = b.item("deadline_end", "date",
                   IF(i.deadline_applies_to.eq("project_end"), r("project_end"), r("training_end")))
    scaled = r("stretched_training_days") + r("rollback_days") + r("card_allowance_days")
    b.item("deadline_end_at_approval", "date", point + scaled * (at_approval / days - 1))
    b.item("deadline_end_p50", "date", point + scaled * (at_median / days - 1))
