"""Pilot calibration (issue 13, seed 000 step 6): the model's figures at a measured pilot's values,
and the factor its measurement puts on the full run's MFU."""

from __future__ import annotations

from ..formula.expr import IF, ISNUMBER, Ref, substitute
from .declare import Inputs
from .efficiency import shifted
from .lineitems import ModelBuilder

# A measured pilot (issue 13, seed 000 step 6) is the model evaluated with the pilot's own values
# of these inputs (blank: the plan's): plan input -> the calibration input holding the pilot's.
PILOT_VALUES = {"gpu_count": "pilot_gpu_count", "tp_size": "pilot_tp", "pp_size": "pilot_pp",
                "cp_size": "pilot_cp", "micro_batch_size": "pilot_micro_batch_size",
                "global_batch_sequences": "pilot_batch_sequences",
                "virtual_pipeline_stages": "pilot_virtual_pipeline_stages"}
# The model's figures the Parallelism sheet shows at the pilot (and what they need)
PILOT_FIGURES = ("layout_label", "dp_size", "global_batch_tokens", "microbatches_per_step", "step_compute_s",
                 "bubble_fraction", "comm_fraction", "layout_efficiency", "effective_mfu")


def _pilot_rows(b: ModelBuilder, targets) -> None:
    """The model's own items `targets`, and the items they need that the pilot's values change,
    evaluated once more with the pilot's values: pilot_<item>, the same formula with the pilot's
    cells in place of the plan's. The scalar counterpart of stage_rows: a pilot is the plan at
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


def calibration(b: ModelBuilder, i: Inputs) -> None:
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
    mfu = b.item("calibrated_mfu", "fraction", shifted(i, r("effective_mfu") * factor))
    b.item("calibrated_step_s", "s",
           r("model_flops_per_token") * r("global_batch_tokens") / (i.gpu_count * peak * mfu))
