"""The training sections: the tokens the main run trains on and its batch (`data`), the stages
a multi-stage run splits them into (`stages`, with their rule: they add up to the run and fit
its GPUs), and the runs besides the main one (`runs`: validation, scaling, post-training,
serving)."""

from __future__ import annotations

import math

from typing import Literal

from ...core.errors import Msg, rule_error
from .base import GpuCount, Params, PositiveInt, SafeText, Section, Tokens, counted, number, whole
from .hardware import HardwareSection, ParallelismSection
from .prices import PriceIn


class DataSection(Section):
    train_tokens: Tokens
    global_batch_sequences: PositiveInt | None = None


class RunsSection(Section):
    """The runs besides the main one, sized by what they train (seed 002 weeks 3-8), the
    rollbacks a run suffers, post-training and serving."""
    # issue 28: `none` removes a run (its tokens, weeks and GPUs 0: no cost, no Timeline phase);
    # tokens 0 and weeks 0 do the same
    validation: Literal["run", "none"] = "run"
    scaling: Literal["run", "none"] = "run"
    validation_params: Params = 7e9                # seed 002's largest; capped at the model itself
    validation_tokens: counted(0, 1e16) = 100e9
    scaling_params: Params = 70e9
    scaling_tokens: counted(0, 1e16) = 200e9
    rollbacks: number(ge=0, le=10_000) = 20.0
    rollback_steps: number(ge=0, le=1e9) = 100.0
    post_training_tokens: counted(0, 1e16) = 30e9
    serving_gpus: whole(ge=0, le=10_000_000) = 0
    serving_months: number(ge=0, le=1200) = 0.0
    serving_per_gpu_hour: PriceIn | None = None


class Stage(Section):
    """One stage of a multi-stage run (issue 12): its tokens, and any of the plan's values it
    changes (GPU count, sequence length, batch, layout, an all-in MFU); blank, the plan's."""
    name: SafeText
    tokens: Tokens
    gpu_count: GpuCount | None = None
    seq_len: PositiveInt | None = None
    global_batch_sequences: PositiveInt | None = None
    mfu: number(gt=0, le=1) | None = None
    tp: PositiveInt | None = None
    pp: PositiveInt | None = None
    cp: PositiveInt | None = None


def check_stages(stages: list[Stage], data: DataSection, hw: HardwareSection,
                 p: ParallelismSection) -> None:
    """The stages add up to the run, and each one's GPUs hold its pinned split."""
    if not stages:
        return
    total = math.fsum(st.tokens for st in stages)
    if abs(total - data.train_tokens) > 1e-9 * data.train_tokens:
        raise rule_error(Msg("errors.scenario.stages_tokens.message", total=f"{total:,.0f}",
                             tokens=f"{data.train_tokens:,.0f}"),
                         Msg("errors.scenario.stages_tokens.fix", total=f"{total:,.0f}"), "stages")
    for n, st in enumerate(stages):
        if st.gpu_count is not None and hw.gpu_count is None:
            raise rule_error(Msg("errors.scenario.stage_needs_count.message"),
                             Msg("errors.scenario.stage_needs_count.fix"), f"stages[{n}].gpu_count")
        if st.gpu_count is not None and st.gpu_count > hw.gpu_count:
            raise rule_error(Msg("errors.scenario.stage_gpus.message", gpus=st.gpu_count, cluster=hw.gpu_count),
                             Msg("errors.scenario.stage_gpus.fix", gpus=st.gpu_count), f"stages[{n}].gpu_count")
        gpus = st.gpu_count or hw.gpu_count
        split = [st.tp or p.tp, st.pp or p.pp, st.cp or p.cp or 1]
        if gpus is not None and None not in split and gpus % math.prod(split):
            raise rule_error(Msg("errors.scenario.stage_split.message", split=math.prod(split), gpus=gpus),
                             Msg("errors.scenario.stage_split.fix"), f"stages[{n}]")
