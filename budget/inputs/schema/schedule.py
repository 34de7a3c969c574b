"""The schedule sections: the project's calendar and phases (`schedule`), interruptions,
checkpoints and restarts (`reliability`), and what is stored (`storage`: the dataset and the
checkpoints, whose size and write speed set a checkpoint's time)."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import field_validator

from ...core.errors import Msg, rule_error
from .base import (EARLIEST_START, LATEST_START, Bandwidth, Days, Gigabytes, Minutes, Months, Section, StartDate,
                   Weeks, number, whole)


class StorageSection(Section):
    """Dataset and checkpoint volumes follow from tokens and parameters unless overridden."""
    raw_bytes_per_token: number(ge=0, le=1e6) = 4.0
    tokenized_bytes_per_token: number(ge=0, le=1e6) | None = None   # default: 2, or 4 past 65,536 tokens
    dataset_gb: Gigabytes | None = None
    checkpoints_kept: whole(ge=0, le=1_000_000) = 3
    checkpoint_gb: Gigabytes | None = None
    # What a checkpoint holds: weights and optimizer states (full), the same without the fp32
    # master copy (OPT-175B kept FP16 weights and FP32 Adam moments), or the weights alone
    checkpoint_format: Literal["full", "no_fp32_master", "weights_only"] = "full"
    months_held: Months | None = None      # default: the project's length, live in the workbook
    write_gb_per_s: Bandwidth = 50.0
    read_gb_per_s: Bandwidth = 50.0


class ScheduleSection(Section):
    """Seed 000's segments of a real run and seed 002's project phases."""
    start_date: StartDate = dt.date(2027, 1, 4)
    fiscal_year_start_month: whole(ge=1, le=12) = 1   # the Cashflow sheet's budget years
    queue_days: Days = 10.0
    setup_days: Days = 7.0
    transfer_gbit_per_s: Bandwidth = 10.0
    data_prep_weeks: Weeks = 2.0
    validation_weeks: Weeks = 2.0
    validation_gpus: whole(ge=0, le=10_000_000) = 16
    scaling_weeks: Weeks = 4.0
    scaling_gpus: whole(ge=0, le=10_000_000) = 128
    evaluation_weeks: Weeks = 2.0
    # issue 28: the GPUs evaluation holds (blank: the whole reserved cluster, as before)
    evaluation_gpus: whole(ge=1, le=10_000_000) | None = None
    # issue 28: each phase beside training (data preparation, validation, scaling, evaluation,
    # deployment) at most this share of the training days; blank: the weeks as given
    phase_share_cap: number(gt=0, le=100) | None = None
    deployment_weeks: Weeks = 2.0
    # issue 27: a deadline on the calendar, met by the end of the training phase (queue, setup and
    # transfer included) or of the project, at the approval percentile of the training days; the
    # phases before training count against it (hardware.deadline_days counts training days only)
    deadline: dt.date | None = None
    deadline_applies_to: Literal["training_end", "project_end"] = "training_end"

    @field_validator("deadline")
    @classmethod
    def _plausible_deadline(cls, value):
        if value is not None and not EARLIEST_START <= value <= LATEST_START:
            dates = {"earliest": EARLIEST_START.isoformat(), "latest": LATEST_START.isoformat()}
            raise rule_error(Msg("errors.scenario.deadline_date.message", date=value.isoformat(), **dates),
                             Msg("errors.scenario.deadline_date.fix", **dates))
        return value


def check_deadlines(s) -> None:
    """One deadline: hardware.deadline_days (training days) or schedule.deadline (a date), not both."""
    if s.hardware.deadline_days is not None and s.schedule.deadline is not None:
        raise rule_error(Msg("errors.scenario.two_deadlines.message", days=s.hardware.deadline_days,
                             date=s.schedule.deadline.isoformat()),
                         Msg("errors.scenario.two_deadlines.fix"), "schedule.deadline")


# Llama 3 405B: 419 unexpected interruptions in 54 days on 16,384 H100 (Llama Team 2024, 3.3.4)
LLAMA3_INTERRUPTION_RATE = 419 / (54 * 24 * 16384)


class ReliabilitySection(Section):
    """Interruptions, how checkpoints are taken and what a restart takes (the Schedule sheet)."""
    interruption_rate_per_gpu_hour: number(ge=1e-12, lt=1) = LLAMA3_INTERRUPTION_RATE
    # A restart: detect the failure, swap in a spare node, start the job again (launch, NCCL
    # init); the checkpoint's load follows from checkpoint_mode. Detection and replacement plus
    # startup add up to the 20 minutes of the model before the split (5 + 15).
    failure_detect_minutes: Minutes = 5.0
    node_replace_minutes: Minutes = 10.0
    job_startup_minutes: Minutes = 5.0
    checkpoint_interval_steps: number(ge=1, le=1e12) | None = None
    # synchronous: training waits for the write to storage; asynchronous: only for the copy to host
    # memory (PyTorch DCP async_save); in_memory: copies kept in peers' memory (Gemini, SOSP'23)
    checkpoint_mode: Literal["synchronous", "asynchronous", "in_memory"] = "synchronous"
    # device-to-host copy per GPU: half of PCIe 5.0 x16's 64 GB/s a direction, a margin for
    # pageable staging and shared host links
    host_copy_gb_per_s: Bandwidth = 32.0
