"""The efficiency sections: how the utilisation is predicted (`efficiency`: the fitted step-time
model and its coefficients, or the deprecated reference model) and a measured pilot run that
scales it (`calibration`, with its rules: one measurement, a layout that divides its GPUs)."""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from ...core.errors import Msg, rule_error
from .base import GpuCount, PositiveInt, Section, number, whole
from .hardware import HardwareSection, ParallelismSection


class FittedCoefficients(Section):
    """The fitted step-time model's coefficients (budget/calibrate.py); left out, each is
    catalogs/efficiency.yaml's, fitted on the published throughput rows."""
    width_factor: number(ge=0, le=100_000) | None = None
    attention_factor: number(ge=0, le=100) | None = None
    dp_exposed: number(ge=0, le=1) | None = None
    zero3_exposed: number(ge=0, le=1) | None = None
    immaturity_factor: number(ge=0, le=100) | None = None
    attention_immaturity_factor: number(ge=0, le=100) | None = None
    immaturity_cap_years: number(ge=0, le=20) | None = None
    unfitted_reference: str | None = None
    # issue 25: each stack's factor on the compute time, the share of the FP8 (FP4) peak's promise
    # that GEMMs realise, and the full-run allowance per maturity
    stack_factor_unknown: number(ge=0, le=10) | None = None
    stack_factor_megatron_nemo_tuned: number(ge=0, le=10) | None = None
    stack_factor_inhouse_tuned: number(ge=0, le=10) | None = None
    stack_factor_deepspeed: number(ge=0, le=10) | None = None
    stack_factor_pytorch_fsdp: number(ge=0, le=10) | None = None
    stack_factor_jax_maxtext: number(ge=0, le=10) | None = None
    stack_factor_hf_trainer: number(ge=0, le=10) | None = None
    fp8_gemm_realised: number(ge=0, le=1) | None = None
    card_allowance_unknown: number(ge=-0.5, le=5) | None = None
    card_allowance_first_run: number(ge=-0.5, le=5) | None = None
    card_allowance_some_runs: number(ge=-0.5, le=5) | None = None
    card_allowance_tuned_many_runs: number(ge=-0.5, le=5) | None = None


class EfficiencySection(Section):
    # Issue 13: "fitted" (the default) predicts the utilisation with the step-time model fitted on
    # published runs (catalogs/efficiency.yaml) where no utilisation is typed; "reference"
    # (deprecated) scales the catalog's typical MFU by the layout efficiency ÷
    # reference_layout_efficiency
    model: Literal["reference", "fitted"] = "fitted"
    fitted: FittedCoefficients = FittedCoefficients()
    # Issue 25: the software stack (its factor on the compute time, fitted on the published rows; a
    # stack measured by fewer than two source groups takes unknown's), and how practised the team is at
    # this scale (the allowance for what full runs spend beyond step time and modelled failures)
    stack: Literal["unknown", "megatron_nemo_tuned", "inhouse_tuned", "deepspeed", "pytorch_fsdp",
                   "jax_maxtext", "hf_trainer"] = "unknown"
    maturity: Literal["unknown", "first_run", "some_runs", "tuned_many_runs"] = "unknown"
    # the share of the allowance that lengthens the calendar (the rest only adds billed card-hours)
    card_allowance_calendar_share: number(ge=0, le=1) = 1.0
    layout_efficiency: number(ge=0.01, le=2) | None = None
    reference_layout_efficiency: number(ge=0.01, le=1) = 0.82
    tp_comm_exposed: number(ge=0, le=1) = 1.0
    dp_comm_exposed: number(ge=0, le=1) = 0.25
    cp_comm_exposed: number(ge=0, le=1) = 1.0
    ep_comm_exposed: number(ge=0, le=1) = 1.0

    @model_validator(mode="before")
    @classmethod
    def _reference_when_calibrated_so(cls, data):
        # a scenario written for the reference model (it sets reference_layout_efficiency, now
        # deprecated) keeps that model and its figures, and the plan warns (warn_reference_model)
        if isinstance(data, dict) and "reference_layout_efficiency" in data and "model" not in data:
            return {**data, "model": "reference"}
        return data


class CalibrationSection(Section):
    """A measured pilot run (issue 13, seed 000 step 6): its GPUs, its layout where it differs
    from the plan's, and exactly one measurement. The model evaluated at the pilot's layout,
    against the measurement, gives the factor the full run's utilisation is scaled by."""
    gpu_count: GpuCount | None = None
    tp: PositiveInt | None = None
    pp: PositiveInt | None = None
    cp: PositiveInt | None = None
    micro_batch_size: PositiveInt | None = None
    global_batch_sequences: PositiveInt | None = None
    virtual_pipeline_stages: whole(ge=1, le=64) | None = None
    step_time_s: number(gt=0, le=1e6) | None = None            # one optimizer step of the global batch
    tokens_per_gpu_second: number(gt=0, le=1e9) | None = None
    mfu: number(gt=0, le=1) | None = None

    @property
    def given(self) -> bool:
        return any(getattr(self, k) is not None for k in type(self).model_fields)


CALIBRATION_MEASURES = ("step_time_s", "tokens_per_gpu_second", "mfu")


def check_calibration(c: CalibrationSection, p: ParallelismSection, hw: HardwareSection,
                      shape: dict | None) -> None:
    """A pilot has its GPUs and one measurement; the plan's utilisation is then not typed (the
    pilot measures it); each layout value the pilot leaves out is the plan's, which must then be
    pinned; and the pilot's layout divides its GPUs and its batch."""
    if not c.given:
        return
    measures = [k for k in CALIBRATION_MEASURES if getattr(c, k) is not None]
    if len(measures) != 1:
        raise rule_error(Msg("errors.scenario.calibration_measure.message", count=len(measures)),
                         Msg("errors.scenario.calibration_measure.fix"),
                         f"calibration.{measures[1]}" if measures else "calibration")
    if c.gpu_count is None:
        raise rule_error(Msg("errors.scenario.calibration_gpus.message"), Msg("errors.scenario.calibration_gpus.fix"),
                         "calibration.gpu_count")
    for key in ("mfu", "hfu", "effective_tflops"):
        if getattr(hw, key) is not None:
            raise rule_error(Msg("errors.scenario.calibration_all_in.message", key=key),
                             Msg("errors.scenario.calibration_all_in.fix", key=key), f"hardware.{key}")
    for field in ("tp", "pp", "micro_batch_size"):
        if getattr(c, field) is None and getattr(p, field) is None:
            raise rule_error(Msg("errors.scenario.calibration_searched.message", field=field),
                             Msg("errors.scenario.calibration_searched.fix", field=field), f"calibration.{field}")
    tp, pp, cp = c.tp or p.tp, c.pp or p.pp, c.cp or p.cp or 1
    if c.gpu_count % (tp * pp * cp):
        raise rule_error(Msg("errors.scenario.calibration_split.message", split=tp * pp * cp, gpus=c.gpu_count),
                         Msg("errors.scenario.calibration_split.fix"), "calibration.gpu_count")
    batch = c.global_batch_sequences or (shape or {}).get("global_batch_sequences")
    dp, micro = c.gpu_count // (tp * pp * cp), c.micro_batch_size or p.micro_batch_size
    if batch is not None and batch % (dp * micro):
        raise rule_error(Msg("errors.scenario.calibration_batch.message", batch=batch, dp=dp, micro=micro),
                         Msg("errors.scenario.calibration_batch.fix"),
                         "calibration.global_batch_sequences" if c.global_batch_sequences else "calibration.gpu_count")
