"""The inputs of time: data and checkpoint storage, the queue and setup, failures and
checkpointing, and the project's phases."""

from __future__ import annotations

from .declare import CHECKPOINT_FORMATS, CHECKPOINT_MODES, DEADLINE_APPLIES_TO, Declare


def storage_and_schedule(d: Declare) -> None:
    """Data and checkpoint storage; queue, setup and transfer; failures and checkpoints."""
    b, add = d.b, d.add
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


def timeline(d: Declare) -> None:
    """The project's start, fiscal year and phases."""
    b, add = d.b, d.add
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
    # issue 28: evaluation's own GPUs (blank: the reserved cluster), and the phases' cap as a
    # share of the training days (blank: none)
    add("evaluation_gpus", "GPUs", kind="integer", minimum=1, optional=True, path="schedule.evaluation_gpus",
        codec="int")
    add("phase_share_cap", "fraction of training", minimum=0, positive=True, optional=True,
        path="schedule.phase_share_cap")
    add("deployment_weeks", "weeks", minimum=0, path="schedule.deployment_weeks")
    # issue 27: the deadline as a date, and whether training or the project must end by it
    add("deadline_date", "date", kind="date", optional=True, path="schedule.deadline", codec="date")
    add("deadline_applies_to", "mode", kind="choice", choices=DEADLINE_APPLIES_TO,
        path="schedule.deadline_applies_to", codec="text")
