"""The rows the step-time fit reads, each planned by the planner itself: the published throughput
rows of catalogs/throughput_runs.yaml (each as a scenario at its layout, its terms from the plan's
items) and the full runs of catalogs/full_runs.yaml with the allowance fitted on them (issue 25).
The fit is budget/plan/calibrate_fit.py; the catalog it writes, budget/plan/calibrate.py."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import yaml

from ..inputs.catalog import Catalog, data_dir, load_catalog
from .reference_runs import published_rows, software_date, tokens_per_gpu_s

# Architectures with rows, and the accelerators that share their kernels (same chip or die)
ARCHITECTURES = {"ampere": ("nvidia_a100_80gb_sxm", "nvidia_a100_40gb_sxm", "nvidia_a800_sxm"),
                 "hopper": ("nvidia_h100_sxm", "nvidia_h800_sxm", "nvidia_h200_sxm"),
                 "tpu_v5e": ("google_tpu_v5e",)}
TERMS = ("width", "attention", "dp_exposed", "zero3_exposed", "immaturity", "attention_immaturity")
IMMATURITY_CAP_YEARS = 2.0     # chosen by cross-validation among 1, 1.5, 2, 2.5, 3 (all within 4 points)
UNKNOWN = "unknown"            # the stack (and the maturity) a scenario need not state
UNFITTED_REFERENCE = "nvidia_h100_sxm"


@dataclass(frozen=True)
class Row:
    """One published row as the fit sees it: its terms (seconds per step) and the measurement."""
    id: str
    source_id: str
    architecture: str
    tokens_per_gpu_s: float        # measured
    tokens_per_gpu_step: float
    features: tuple[float, ...]    # one per coefficient: α of each architecture, then TERMS (BF16 GEMMs)
    fixed_s: float                 # PP, CP and EP time (coefficient 1)
    group: str = ""                # source group (publisher and software): held out together
    stack: str = "unknown"         # the software stack (issue 25)
    fp8_saving: float = 0.0        # FP8 rows: 1 − BF16 peak ÷ FP8 peak (the share of GEMM time FP8 can save); 0: BF16
    six_n: float = 0.0             # 6·N (active) FLOPs per token: the constant-MFU rule's
    peak_bf16: float = 0.0         # FLOP/s
    typical_ratio: float = 1.0     # the unfitted reference's typical MFU ÷ this accelerator's
    pair_only: bool = False        # one of a BF16/FP8 pair on an accelerator the catalog lacks: ρ's only

    @property
    def measured_step_s(self) -> float:
        return self.tokens_per_gpu_step / self.tokens_per_gpu_s


SHAPE_KEYS = ("layers", "hidden_size", "attention_heads", "num_kv_heads", "head_dim", "ffn_hidden_size",
              "vocab_size", "seq_len")


def row_scenario(row: Mapping, catalog: Catalog) -> dict:
    """The row as a scenario: its shape, accelerator, GPUs, layout and batch; BF16; attention
    counted (flops_basis with_attention), so the attention term has its FLOPs."""
    shape, lay = dict(row.get("shape") or {}), row["layout"]
    model: dict = {}
    preset = shape.get("preset")
    if preset:
        published = next(m for m in catalog.models if m.id == preset)
        if shape.get("layers") and shape["layers"] != published.layers:
            # a proxy with fewer layers (DGX Cloud's 405B at 32-192 GPUs): the preset's shape, not its total
            model.update({k: getattr(published, k) for k in (*SHAPE_KEYS, "activation", "tied_embeddings")
                          if getattr(published, k, None) is not None})
        else:
            model["preset"] = preset
    model.update({k: int(shape[k]) for k in SHAPE_KEYS if shape.get(k) is not None})
    if shape.get("activation") in ("gelu", "swiglu"):
        model["activation"] = shape["activation"]
    if shape.get("tied_embeddings") is not None:
        model["tied_embeddings"] = bool(shape["tied_embeddings"])
    model["position_embeddings"] = "learned" if str(shape.get("position_embeddings") or "").startswith(
        "learned") else "rotary"
    recompute = str(lay.get("recompute") or "none").split()[0].split("(")[0]
    par = {"tp": int(lay.get("tp") or 1), "pp": int(lay.get("pp") or 1), "cp": int(lay.get("cp") or 1),
           "ep": int(lay.get("ep") or 1), "micro_batch_size": int(lay.get("micro_batch_size") or 1),
           "zero_stage": int(lay["zero_stage"]) if lay.get("zero_stage") is not None else 1,
           "recompute": recompute if recompute in ("none", "selective", "full") else "none",
           "sequence_parallel": bool(lay.get("sequence_parallel"))}
    if str(lay.get("pipeline_schedule") or "").lower().startswith("dualpipe"):
        # DeepSeek-V3's DualPipe: its two chunks per rank are the schedule's own, not interleaving
        par["pipeline_schedule"] = "dualpipe"
    elif lay.get("virtual_pipeline_stages") and int(lay["virtual_pipeline_stages"]) > 1:
        par["virtual_pipeline_stages"] = int(lay["virtual_pipeline_stages"])
    assumed = row.get("assumed") or {}
    for key in ("virtual_pipeline_stages", "first_last_stage_layers_fewer"):
        if key in assumed:
            par[key] = assumed[key]
    if "dropout" in assumed:
        model["dropout"] = assumed["dropout"]
    return {"name": row["id"], "model": model,
            "data": {"train_tokens": "1T", "global_batch_sequences": int(row["global_batch_sequences"])},
            "hardware": {"accelerator": row["accelerator"], "gpu_count": int(row["gpu_count"]),
                         "flops_basis": "with_attention"},
            "prices": {"per_gpu_hour": 1.0}, "parallelism": par,
            # the run's software date as the start: the model's architecture_years is its maturity
            "schedule": {"start_date": software_date(row)},
            "efficiency": {"model": "fitted", "fitted": {"immaturity_cap_years": IMMATURITY_CAP_YEARS}}}


def architecture_of(accelerator: str) -> str | None:
    return next((a for a, ids in ARCHITECTURES.items() if accelerator in ids), None)


def terms_of(values: Mapping, architecture: str) -> tuple[tuple[float, ...], float]:
    """The features of one planned run and its fixed seconds, from the plan's items of the fitted
    step-time model (budget/model/efficiency.py `_fitted_step_time`): fitted_step_s is Σ coefficient × feature
    + fixed with the same items, so the fit and the workbook share every definition."""
    v = values
    k = 1 + v["bubble_fraction"]
    matmul = k * v["matmul_at_peak_s"]
    zero3 = v["zero_stage"] > 2
    arch = tuple(matmul if a == architecture else 0.0 for a in ARCHITECTURES)
    attention, short = k * v["attention_at_peak_s"], v["software_years_short"]
    rest = (matmul / (v["hidden_size"] / v["tp_size"]),
            attention,
            0.0 if zero3 else v["dp_comm_s"],
            v["dp_comm_s"] if zero3 else 0.0,
            matmul * short,
            attention * short)
    return arch + rest, v["fitted_fixed_comm_s"]


def fit_rows(catalog: Catalog | None = None, rows: Iterable[Mapping] | None = None
             ) -> tuple[list[Row], list[tuple[str, str]]]:
    """The rows the fit can use, planned; and (id, reason) for those it cannot."""
    from .plan import build_plan
    from ..inputs.options import parse_scenario
    from ..core.errors import ScenarioError
    catalog = catalog or load_catalog()
    used, left = [], []
    for row in rows if rows is not None else published_rows():
        arch = architecture_of(row["accelerator"])
        tokens = tokens_per_gpu_s(row)
        if row["layout"].get("tp") is None or row["layout"].get("pp") is None:
            # planned as plain data parallelism it would contradict its paper (Llama 1: "model and
            # sequence parallelism", degrees not given): no layout, no row
            left.append((row["id"], "layout not published"))  # i18n: not text
            continue
        if arch is None or not tokens:
            left.append((row["id"], "no architecture" if arch is None else "no tokens/s"))  # i18n: not text
            continue
        try:
            plan = build_plan(parse_scenario(row_scenario(row, catalog), f"{row['id']}.yaml", catalog),
                              catalog, row["id"], curve=False)
        except ScenarioError as e:
            left.append((row["id"], str(e).splitlines()[0]))
            continue
        features, fixed = terms_of(plan.values, arch)
        acc, ref = catalog.accelerator(row["accelerator"]), catalog.accelerator(UNFITTED_REFERENCE)
        fp8 = "fp8" in str(row.get("precision", "")).lower() and acc.peak_fp8_tflops is not None
        saving = 1 - acc.peak_bf16_tflops.value / acc.peak_fp8_tflops.value if fp8 else 0.0
        used.append(Row(row["id"], row["source_id"], arch, tokens,
                        plan.values["global_batch_tokens"] / plan.values["gpu_count"], features, fixed,
                        group=row.get("source_group") or row["source_id"], stack=row.get("stack") or "unknown",
                        fp8_saving=saving, six_n=plan.values["flops_per_token_6n"],
                        peak_bf16=acc.peak_bf16_tflops.value * 1e12,
                        typical_ratio=ref.typical_mfu.value / acc.typical_mfu.value,
                        pair_only=bool(row.get("pair_only"))))
    return used, left


# --- from step time to card-hours (issue 25) ------------------------------------------------

WALL_CLOCK, THROUGHPUT_DERIVED = "wall_clock", "throughput_derived"
MATURITY_LEVELS = ("first_run", "some_runs", "tuned_many_runs")


@dataclass(frozen=True)
class FullRun:
    """A published full run as the allowance fit sees it: its published GPU-hours, what kind of figure
    they are, the team's maturity, and the planner's step-time GPU-hours at the run's own published
    throughput and its calendar stretch for the modelled failures and rollbacks."""
    id: str
    kind: str
    maturity: str
    published_gpu_hours: float
    step_gpu_hours: float
    stretched: float                 # failure-stretched training days ÷ step-time days
    rollback: float                  # rollback days ÷ step-time days

    @property
    def stretch(self) -> float:
        """(Failure-stretched + rollback days) ÷ step-time days: the modelled card-hours' multiple."""
        return self.stretched + self.rollback

    @property
    def over_step(self) -> float:
        """Published ÷ step-time GPU-hours."""
        return self.published_gpu_hours / self.step_gpu_hours

    @property
    def allowance(self) -> float:
        """What the run spent beyond step time, the modelled failures and rollbacks, as a share of its
        failure-stretched training (the planner's card-hours: step × (stretched × (1 + a) + rollback))."""
        return (self.published_gpu_hours / self.step_gpu_hours - self.rollback) / self.stretched - 1

    def card_gpu_hours(self, allowance: float) -> float:
        return self.step_gpu_hours * (self.stretched * (1 + allowance) + self.rollback)


def _with_changes(data: dict, changes: Mapping) -> dict:
    import copy
    out = copy.deepcopy(data)
    for path, value in (changes or {}).items():
        node = out
        *parents, last = path.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return out


def full_runs(catalog: Catalog | None = None) -> list[FullRun]:
    """catalogs/full_runs.yaml, each run planned at its published utilisation."""
    from .plan import build_plan
    from ..inputs.options import parse_scenario
    catalog = catalog or load_catalog()
    doc = yaml.safe_load((data_dir("catalogs") / "full_runs.yaml").read_text(encoding="utf-8"))
    out = []
    for run in doc["runs"]:
        if run.get("scenario_file"):
            data = yaml.safe_load((data_dir("catalogs").parent / run["scenario_file"]).read_text(encoding="utf-8"))
        else:
            data = {"name": run["model"], "prices": {"per_gpu_hour": 1.0}, **run["scenario"]}
        data = _with_changes(data, run.get("changes") or {})
        data.pop("sources", None)
        v = build_plan(parse_scenario(data, f"{run['id']}.yaml", catalog), catalog, run["id"], curve=False).values
        out.append(FullRun(run["id"], run["kind"], run["maturity"], float(run["published_gpu_hours"]),
                           v["gpu_hours"], v["stretched_training_days"] / v["train_days"],
                           v["rollback_days"] / v["train_days"]))
    return out


def allowances(runs: Sequence[FullRun]) -> dict[str, tuple[float, str]]:
    """The allowance per maturity level, fitted on the wall-clock runs: the mean of the level's runs
    where there are at least two, else the mean of all (`unknown`: always all), with what it rests on."""
    wall = [r for r in runs if r.kind == WALL_CLOCK]
    pooled = statistics.fmean(r.allowance for r in wall) if wall else 0.0
    out = {UNKNOWN: (pooled, f"mean of {len(wall)} wall-clock runs")}  # i18n: not text
    for level in MATURITY_LEVELS:
        own = [r for r in wall if r.maturity == level]
        if len(own) >= 2:
            out[level] = (statistics.fmean(r.allowance for r in own), f"mean of {len(own)} {level} runs")  # i18n: not text
        else:
            out[level] = (pooled, f"{len(own)} {level} run(s): the pooled mean (assumed)")  # i18n: not text
    return out


def allowance_errors(runs: Sequence[FullRun]) -> dict[str, float]:
    """Leave one run out: each wall-clock run's card-hours (step × (stretched × (1 + the allowance of its
    maturity fitted without it) + rollback)) against its published figure, − 1."""
    out = {}
    for r in runs:
        if r.kind != WALL_CLOCK:
            continue
        others = [o for o in runs if o.id != r.id]
        a = allowances(others)[r.maturity][0]
        out[r.id] = r.card_gpu_hours(a) / r.published_gpu_hours - 1
    return out
