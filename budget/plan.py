"""Scenario + catalog → plan. Pure functions, no IO; the result is a frozen `Plan`.

`resolve_inputs` turns a validated scenario into the model's input values, each with the
source a reviewer will read next to it. `build_plan` evaluates the model over them.
"""

from __future__ import annotations

import datetime as dt
import difflib
import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from .catalog import Catalog
from .errors import Problem as _Problem, ScenarioError
from .layout import (Candidate, Evaluator, Layout, NoLayoutFits, SearchResult, Space,
                     first_count_that_fits, search, smallest_count_for_deadline)
from .model import ACCELERATOR_TABLE, ACTIVATION_TABLE, build_model
from .scenario import PRECISIONS, Scenario, resolved_shape



@dataclass(frozen=True)
class InputValue:
    value: object          # float, str, tuple (ranges) or None (blank, optional input)
    source: str
    note: str = ""


@dataclass(frozen=True)
class TableData:
    """A lookup table's rows, in the order the Catalog sheet shows them."""
    rows: tuple[dict, ...]
    sources: tuple[str, ...]      # one citation per row, shown beside it

    def lookup(self) -> dict[str, dict[str, object]]:
        columns = self.rows[0].keys() if self.rows else ()
        return {c: {str(r["id"]).lower(): r[c] for r in self.rows} for c in columns}


# Korthikanti et al. 2022, Table 2, as (replicated, split-by-TP, attention coefficient), and
# the compute each mode adds: full recomputation repeats the forward pass (2 of 6 FLOPs per
# parameter per token, 8ND instead of 6ND); selective recomputation adds a few percent.
SELECTIVE_OVERHEAD = 0.04
FULL_OVERHEAD = 2 / 6
ACTIVATION_MODES = {
    "none/no": (10, 24, 5, 0.0, "TP without sequence parallelism: sbh(10 + 24/t + 5as/(ht))"),
    "none/yes": (0, 34, 5, 0.0, "TP with sequence parallelism: sbh(34/t + 5as/(ht))"),
    "selective/no": (10, 24, 0, SELECTIVE_OVERHEAD, "TP + selective recomputation: sbh(10 + 24/t); "
                     "overhead 2-7% (formulas.md), 4% used"),
    "selective/yes": (0, 34, 0, SELECTIVE_OVERHEAD, "TP + SP + selective recomputation: 34·sbh/t"),
    "full/no": (2, 0, 0, FULL_OVERHEAD, "full recomputation: only each layer's input, 2·sbh; "
                "one extra forward pass, 8ND instead of 6ND"),
    "full/yes": (0, 2, 0, FULL_OVERHEAD, "full recomputation with SP: the layer input is sharded "
                 "over TP, 2·sbh/t"),
}
LAYOUT_SCENARIO_KEYS = {"tp_size": "tp", "pp_size": "pp", "micro_batch_size": "micro_batch_size",
                        "zero_stage": "zero_stage", "recompute": "recompute",
                        "sequence_parallel": "sequence_parallel"}
PLACEHOLDER_LAYOUT = {"tp_size": 1.0, "pp_size": 1.0, "micro_batch_size": 1.0, "zero_stage": 0.0,
                      "recompute": "none", "sequence_parallel": "no"}


@dataclass(frozen=True)
class Plan:
    scenario: Scenario
    scenario_id: str                       # the file stem: names the output files
    inputs: Mapping[str, InputValue]
    values: Mapping[str, object]
    tables: Mapping[str, TableData]
    warnings: tuple[str, ...] = field(default=())
    layout: "LayoutChoice | None" = None
    candidate_values: tuple[Mapping[str, object], ...] = ()   # full model values per candidate

    def __getitem__(self, name: str):
        return self.values[name]

    # Headline figures, typed, for readers and tests.
    @property
    def train_flops(self) -> float: return self.values["train_flops"]
    @property
    def effective_tflops(self) -> float: return self.values["effective_tflops"]
    @property
    def gpu_seconds(self) -> float: return self.values["gpu_seconds"]
    @property
    def gpu_hours(self) -> float: return self.values["gpu_hours"]
    @property
    def gpu_days(self) -> float: return self.values["gpu_days"]
    @property
    def train_days(self) -> float: return self.values["train_days"]
    @property
    def gpu_count(self) -> int: return int(self.values["gpu_count"])
    @property
    def dp_size(self) -> float: return self.values["dp_size"]
    @property
    def memory_total_gb(self) -> float: return self.values["memory_total_gb"]
    @property
    def memory_per_gpu_gb(self) -> float: return self.values["memory_per_gpu_gb"]
    @property
    def fits(self) -> bool: return self.values["check_memory_fits"] == 0
    @property
    def rental_cost(self) -> float: return self.values["rental_cost"]
    @property
    def storage_cost(self) -> float: return self.values["storage_cost"]
    @property
    def network_cost(self) -> float: return self.values["network_cost"]
    @property
    def staffing_cost(self) -> float: return self.values["staffing_cost"]
    @property
    def subtotal_cost(self) -> float: return self.values["subtotal_cost"]
    @property
    def buffer_cost(self) -> float: return self.values["buffer_cost"]
    @property
    def total_cost(self) -> float: return self.values["total_cost"]

    @property
    def failing_checks(self) -> list[str]:
        return [c.name for c in failing(self.values)]


def accelerator_table(catalog: Catalog, scenario: Scenario | None = None) -> TableData:
    rows, sources = [], []
    for acc in catalog.accelerators:
        row = {"id": acc.id, "name": acc.name, "vendor": acc.vendor}
        cites = []
        for col in ("peak_bf16_tflops", "hbm_gb", "gpus_per_node", "intra_node_gb_per_s",
                    "inter_node_gbit_per_s", "typical_mfu"):
            fig = getattr(acc, col)
            row[col] = float(fig.value)
            cites.append(f"{fig.source} ({fig.as_of.isoformat()})")
        if scenario and scenario.hardware.peak_tflops and acc.id == scenario.hardware.accelerator:
            row["peak_bf16_tflops"] = float(scenario.hardware.peak_tflops)
            cites[0] = (f"peak overridden by the scenario (hardware.peak_tflops); "
                        f"datasheet {acc.peak_bf16_tflops.value:g}, {cites[0]}")
        rows.append(row)
        sources.append("; ".join(dict.fromkeys(cites)))
    return TableData(tuple(rows), tuple(sources))


def activation_table() -> TableData:
    rows = tuple({"id": k, "replicated": float(a), "split": float(b), "attention": float(c),
                  "recompute_overhead": float(o)}
                 for k, (a, b, c, o, _) in ACTIVATION_MODES.items())
    sources = tuple(f"Korthikanti et al. 2022, Table 2: {v[4]}" for v in ACTIVATION_MODES.values())
    return TableData(rows, sources)


def resolve_inputs(s: Scenario, catalog: Catalog, scenario_file: str = "scenario") -> dict[str, InputValue]:
    shape = resolved_shape(s, catalog)
    acc = catalog.accelerator(s.hardware.accelerator)
    user = _SourceNamer(s, scenario_file)
    preset_src = (f"preset {s.model.preset}: {catalog.model(s.model.preset).source}"
                  if s.model.preset else "")

    def shaped(field_name: str, yaml_path: str) -> InputValue:
        if getattr(s.model, field_name, None) is not None or (
                field_name == "global_batch_sequences" and s.data.global_batch_sequences):
            return user(yaml_path, float(shape[field_name]))
        if field_name in shape.get("derived", ()):
            return InputValue(float(shape[field_name]),
                              "assumed from the parameter count: GPT-3's aspect ratio (hidden = 128 "
                              "× layers, 128-wide heads), 4,096-token sequences, 32,000-token vocabulary",
                              "set the model's shape in the scenario to replace it")
        if shape.get("params_from_shape") and field_name == "params":
            return InputValue(float(shape["params"]), "computed from the shape: 12·L·h² + (V + s)·h")
        if shape.get("batch_defaulted") and field_name == "global_batch_sequences":
            return InputValue(float(shape[field_name]), "default: about 4M tokens per step")
        return InputValue(float(shape[field_name]), preset_src)

    v: dict[str, InputValue] = {
        "model_params": shaped("params", "model.params"),
        "model_layers": shaped("layers", "model.layers"),
        "hidden_size": shaped("hidden_size", "model.hidden_size"),
        "attention_heads": shaped("attention_heads", "model.attention_heads"),
        "seq_len": shaped("seq_len", "model.seq_len"),
        "vocab_size": shaped("vocab_size", "model.vocab_size"),
        "train_tokens": user("data.train_tokens", float(s.data.train_tokens)),
        "global_batch_sequences": shaped("global_batch_sequences", "data.global_batch_sequences"),
        "gpu_type": user("hardware.accelerator", acc.id, acc.name),
        "gpu_count": (user("hardware.gpu_count", float(s.hardware.gpu_count))
                      if s.hardware.gpu_count else InputValue(None, "set by the sizing below")),
        "deadline_days": user("hardware.deadline_days", s.hardware.deadline_days,
                              default="no deadline in the scenario"),
        "mfu": _mfu(s, acc, catalog, user),
        "layout_efficiency_override": _efficiency_override(s, user),
        "reference_layout_efficiency": user(
            "efficiency.reference_layout_efficiency", s.efficiency.reference_layout_efficiency,
            default="default: what the Parallelism model gives a typical large, well-tuned run "
                    "(GPT-3 175B on 512 H100, TP 8 x PP 8, ZeRO-1, selective recomputation: "
                    "0.82); the "
                    "catalog's typical MFU is read as the MFU of such a run"),
        "tp_comm_exposed": user("efficiency.tp_comm_exposed", s.efficiency.tp_comm_exposed,
                                default="default: Megatron's TP collectives sit on the critical path"),
        "dp_comm_exposed": user("efficiency.dp_comm_exposed", s.efficiency.dp_comm_exposed,
                                default="default: assumption; gradient reduction mostly overlaps the "
                                        "backward pass"),
        "split_margin": user("sizing.split_margin", s.sizing.split_margin,
                             default="default: assumption; seed 000 asks for a margin, gives no figure"),
        "spare_nodes": user("sizing.spare_nodes", float(s.sizing.spare_nodes),
                            default="default: one spare node (seed 000; BLOOM kept 4 beside 48)"),
        "usable_memory_fraction": user("hardware.usable_memory_fraction",
                                       s.hardware.usable_memory_fraction,
                                       default="default: planners count 85-90% of HBM as usable"),
        **_layout_pins(s, user),
        "flash_attention": user("memory.flash_attention", "yes" if s.memory.flash_attention else "no",
                                default="default: yes, as every current training stack (seed 002 section 7.3)"),
        "activation_gb_override": user("memory.activation_gb_per_microbatch",
                                       s.memory.activation_gb_per_microbatch,
                                       default="blank: the Korthikanti formula on the Memory sheet"),
        "price_per_gpu_hour": user("prices.per_gpu_hour", s.prices.per_gpu_hour),
        "price_per_gb_month": user("prices.storage_per_gb_month", s.prices.storage_per_gb_month,
                                   default="default: AWS S3 Standard list price, first 50 TB"),
        "network_per_gpu_hour": user("prices.network",
                                     0.0 if s.prices.network == "included" else float(s.prices.network),
                                     note="'included' in the scenario" if s.prices.network == "included" else ""),
        "raw_bytes_per_token": user("storage.raw_bytes_per_token", s.storage.raw_bytes_per_token,
                                    default="default: UTF-8 English averages about 4 bytes per BPE token"),
        "tokenized_bytes_per_token": _token_bytes(s, shape, user),
        "dataset_gb_override": user("storage.dataset_gb", s.storage.dataset_gb,
                                    default="blank: raw + tokenized, on the Schedule sheet"),
        "checkpoints_kept": user("storage.checkpoints_kept", float(s.storage.checkpoints_kept),
                                 default="default: keep the last 3 (seed 000: keep the latest few)"),
        "checkpoint_storage_gb_override": user("storage.checkpoint_gb", s.storage.checkpoint_gb,
                                               default="blank: K full checkpoints, on the Schedule sheet"),
        "storage_months": user("storage.months_held", s.storage.months_held,
                               default="default: six months"),
        "storage_write_gb_per_s": user("storage.write_gb_per_s", s.storage.write_gb_per_s,
                                       default="default: BLOOM saved 2.3 TB in about 40 s (~57 GB/s)"),
        "storage_read_gb_per_s": user("storage.read_gb_per_s", s.storage.read_gb_per_s,
                                      default="default: assumed equal to the write bandwidth"),
        **_schedule_inputs(s, user),
        "buffer_rate": user("buffer_rate", s.buffer_rate,
                            default="default: seed 002 section 8, at least 20%"),
        "flops_per_param_token": InputValue(6.0, "Kaplan et al. 2020; seed 002 section 1"),
        "bytes_per_gb": InputValue(1e9, "SI: 1 GB = 10^9 bytes, used for every size in this book"),
        "flops_per_tflop": InputValue(1e12, "SI: tera = 10^12"),
        "bits_per_byte": InputValue(8.0, "definition"),
        "activation_bytes_per_element": InputValue(2.0, "bf16 activations"),
        "tp_collectives_per_layer": InputValue(4.0, "Megatron-LM: 2 all-reduces forward, 2 backward "
                                                    "per transformer layer (Shoeybi et al. 2019)"),
        "zero3_comm_factor": InputValue(1.5, "ZeRO (Rajbhandari et al. 2020), section 7: stage 3 "
                                             "moves 1.5x the data of plain data parallelism"),
    }
    wb, gb, ob, why = PRECISIONS[s.memory.precision]
    precision = user("memory.precision", s.memory.precision)
    for name, val in (("weight_bytes_per_param", wb), ("grad_bytes_per_param", gb),
                      ("optimizer_bytes_per_param", ob)):
        v[name] = InputValue(float(val), f"{precision.source}: {s.memory.precision}", why)
    v.update(_staffing(s, user))
    user.ensure_sources_used()
    return v


class _SourceNamer:
    """Builds InputValues whose source says where in the scenario the value came from."""

    def __init__(self, s: Scenario, scenario_file: str):
        self.s, self.file = s, scenario_file
        self.explicit = _explicit_paths(s)

    def source_of(self, path: str) -> str:
        cited = self.s.sources.get(path)
        return f"scenario {self.file}: {path}" + (f" ({cited})" if cited else "")

    def __call__(self, path: str, value, note: str = "", default: str | None = None) -> InputValue:
        if default is not None and path not in self.explicit:
            return InputValue(value, default, note)
        return InputValue(value, self.source_of(path), note)

    def ensure_sources_used(self) -> None:
        """`sources` keys must be field paths of the scenario schema: a typo cites nothing."""
        unknown = sorted(set(self.s.sources) - SCHEMA_PATHS)
        if unknown:
            close = difflib.get_close_matches(unknown[0], sorted(SCHEMA_PATHS), n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise ScenarioError(self.file, [_Problem(
                f"sources.{unknown[0]}", "cites no field of the scenario",
                f"{hint}key sources by a field path such as prices.per_gpu_hour")])


def _schema_paths() -> frozenset[str]:
    """Every field path a scenario can set: top-level keys and section.key."""
    paths = set()
    for name, info in Scenario.model_fields.items():
        paths.add(name)
        section = info.annotation
        if isinstance(section, type) and hasattr(section, "model_fields"):
            paths |= {f"{name}.{field}" for field in section.model_fields}
    return frozenset(paths)


SCHEMA_PATHS = _schema_paths()


def _explicit_paths(s: Scenario) -> set[str]:
    out = set()
    for section_name in type(s).model_fields:
        section = getattr(s, section_name)
        if hasattr(section, "model_fields_set"):
            out |= {f"{section_name}.{f}" for f in section.model_fields_set}
    out |= {f for f in s.model_fields_set}
    return out


def _layout_pins(s: Scenario, user: _SourceNamer) -> dict[str, InputValue]:
    out = {}
    for name, key in LAYOUT_SCENARIO_KEYS.items():
        value = getattr(s.parallelism, key)
        if value is None:
            out[name] = InputValue(None, "chosen by the layout search")
        elif key == "sequence_parallel":
            out[name] = user(f"parallelism.{key}", "yes" if value else "no")
        elif key == "recompute":
            out[name] = user(f"parallelism.{key}", value)
        else:
            out[name] = user(f"parallelism.{key}", float(value))
    return out


def _efficiency_override(s: Scenario, user: _SourceNamer) -> InputValue:
    if s.efficiency.layout_efficiency is not None:
        return user("efficiency.layout_efficiency", s.efficiency.layout_efficiency)
    for key in ("mfu", "effective_tflops"):
        if getattr(s.hardware, key) is not None:
            return InputValue(1.0, f"hardware.{key} is an all-in figure, so layout losses are "
                                   "already in it", "blank it to let the Parallelism model scale the MFU")
    return InputValue(None, "blank: the Parallelism sheet's model")


def _mfu(s: Scenario, acc, catalog: Catalog, user: _SourceNamer) -> InputValue:
    peak = s.hardware.peak_tflops or acc.peak_bf16_tflops.value
    if s.hardware.mfu is not None:
        return user("hardware.mfu", float(s.hardware.mfu))
    if s.hardware.baseline_mfu is not None:
        return user("hardware.baseline_mfu", float(s.hardware.baseline_mfu))
    if s.hardware.effective_tflops is not None:
        return InputValue(s.hardware.effective_tflops / peak,
                          f"{user.source_of('hardware.effective_tflops')}: "
                          f"{s.hardware.effective_tflops:g} TFLOPS ÷ peak {peak:g}",
                          "kept as a fraction so that another accelerator's peak scales it")
    fig = acc.typical_mfu
    return InputValue(fig.value, f"catalog: {catalog.cite(fig.source)} ({fig.as_of.isoformat()})",
                      fig.note)


def _token_bytes(s: Scenario, shape: dict, user: _SourceNamer) -> InputValue:
    if s.storage.tokenized_bytes_per_token is not None:
        return user("storage.tokenized_bytes_per_token", s.storage.tokenized_bytes_per_token)
    width = 2 if shape["vocab_size"] <= 65536 else 4
    return InputValue(float(width), f"default: token ids as uint{width * 8} for a "
                                    f"{shape['vocab_size']:,}-token vocabulary")


EXCEL_EPOCH = dt.date(1899, 12, 30)


def excel_serial(day: dt.date) -> float:
    """A date as a spreadsheet serial number (days since 1899-12-30)."""
    return float((day - EXCEL_EPOCH).days)


def from_serial(serial: float) -> dt.date:
    return EXCEL_EPOCH + dt.timedelta(days=int(serial))


def _schedule_inputs(s: Scenario, user: _SourceNamer) -> dict[str, InputValue]:
    sc, rel = s.schedule, s.reliability
    assumed = "default: assumption"
    return {
        "queue_days": user("schedule.queue_days", sc.queue_days,
                           default="default: assumption; seed 000 says larger jobs queue longer, gives no figure"),
        "setup_days": user("schedule.setup_days", sc.setup_days,
                           default="default: assumption; a week when images are not prebuilt (seed 000)"),
        "transfer_gbit_per_s": user("schedule.transfer_gbit_per_s", sc.transfer_gbit_per_s,
                                    default="default: assumption; a 10 Gbit/s link"),
        "interruption_rate_per_gpu_hour": user(
            "reliability.interruption_rate_per_gpu_hour", rel.interruption_rate_per_gpu_hour,
            default="default: Llama 3 405B, 419 unexpected interruptions in 54 days on 16,384 H100 "
                    "(Llama Team 2024, section 3.3.4; seed 000: one every ~3 hours)"),
        "failure_detect_minutes": user("reliability.failure_detect_minutes", rel.failure_detect_minutes,
                                       default=assumed),
        "node_replace_minutes": user("reliability.node_replace_minutes", rel.node_replace_minutes,
                                     default="default: assumption; a spare node is already reserved"),
        "checkpoint_interval_steps_override": user(
            "reliability.checkpoint_interval_steps", rel.checkpoint_interval_steps,
            default="blank: the Young/Daly optimum on the Schedule sheet"),
        "start_date": user("schedule.start_date", excel_serial(sc.start_date),
                           default="default: a placeholder start; set schedule.start_date"),
        "data_prep_weeks": user("schedule.data_prep_weeks", sc.data_prep_weeks,
                                default="default: seed 002, weeks 1-2"),
        "validation_weeks": user("schedule.validation_weeks", sc.validation_weeks,
                                 default="default: seed 002, weeks 3-4"),
        "validation_gpus": user("schedule.validation_gpus", float(sc.validation_gpus),
                                default="default: seed 002, 8-16 GPUs"),
        "scaling_weeks": user("schedule.scaling_weeks", sc.scaling_weeks,
                              default="default: seed 002, weeks 5-8"),
        "scaling_gpus": user("schedule.scaling_gpus", float(sc.scaling_gpus),
                             default="default: seed 002, 64-128 GPUs"),
        "evaluation_weeks": user("schedule.evaluation_weeks", sc.evaluation_weeks,
                                 default="default: seed 002, weeks 25-26"),
        "deployment_weeks": user("schedule.deployment_weeks", sc.deployment_weeks,
                                 default="default: seed 002, weeks 27-28"),
    }


def _staffing(s: Scenario, user: _SourceNamer) -> dict[str, InputValue]:
    roles = s.staffing
    src = user("staffing", None).source if roles else "no staffing in the scenario"
    if not roles:
        return {"staff_role": InputValue(("(none)",), src), "staff_headcount": InputValue((0.0,), src),
                "staff_monthly_cost": InputValue((0.0,), src), "staff_months": InputValue((0.0,), src)}
    return {
        "staff_role": InputValue(tuple(r.role for r in roles), src),
        "staff_headcount": InputValue(tuple(float(r.headcount) for r in roles), src),
        "staff_monthly_cost": InputValue(tuple(float(r.monthly_cost) for r in roles), src),
        "staff_months": InputValue(tuple(float(r.months) for r in roles), src),
    }


def build_plan(s: Scenario, catalog: Catalog, scenario_id: str = "scenario",
               scenario_file: str | None = None) -> Plan:
    file = scenario_file or f"{scenario_id}.yaml"
    inputs = resolve_inputs(s, catalog, file)
    tables = {ACCELERATOR_TABLE: accelerator_table(catalog, s), ACTIVATION_TABLE: activation_table()}
    lookups = {name: t.lookup() for name, t in tables.items()}
    model = build_model()
    try:
        layout = size_and_lay_out(s, catalog, inputs, lookups)
    except NoLayoutFits as err:
        raise ScenarioError(file, [_no_layout_problem(s, str(err))]) from None
    inputs.update(layout.inputs)
    values = _evaluate(model, {k: iv.value for k, iv in inputs.items()}, lookups, file)
    if values["failure_fraction"] >= 1:
        raise ScenarioError(file, [_Problem(
            "reliability.interruption_rate_per_gpu_hour",
            f"interruptions every {values['job_mtbi_hours']:.2f} hours come faster than the "
            f"{values['loss_per_interruption_hours']:.2f} hours each one costs, so the run never ends",
            "lower the rate, restart faster (reliability.*), write checkpoints faster "
            "(storage.write_gb_per_s) or use fewer GPUs")])
    candidates = tuple(
        MappingProxyType(model.evaluate({**{k: iv.value for k, iv in inputs.items()},
                                         **c.layout.as_inputs()}, lookups))
        for c in layout.candidates)
    _check_displayable(model, s, values, candidates, file)
    return Plan(s, scenario_id, MappingProxyType(inputs), MappingProxyType(values),
                MappingProxyType(tables), tuple(_warnings(values)), layout, candidates)


@dataclass(frozen=True)
class LayoutChoice:
    """How the GPU count and the layout were decided, and the rows the Parallelism sheet shows."""
    mode: str                                  # fixed | deadline | memory-first
    search: SearchResult | None                # None when the scenario pins every dimension
    candidates: tuple[Candidate, ...]          # ranked fitting layouts, then rejected faster ones
    inputs: Mapping[str, InputValue]           # gpu_count and the six layout inputs
    explanation: str
    evaluations: int = 0                       # layouts evaluated, over every GPU count tried

    @property
    def rejected_from(self) -> int:
        """Index in `candidates` where the rejected (not fitting) rows start."""
        return len(self.search.ranked) if self.search else len(self.candidates)


def size_and_lay_out(s: Scenario, catalog: Catalog, inputs: dict[str, InputValue],
                     lookups: Mapping) -> LayoutChoice:
    """Seed 000 steps 1-3: the GPU count (given, from a deadline, or memory-first) and a layout."""
    shape = resolved_shape(s, catalog)
    acc = catalog.accelerator(s.hardware.accelerator)
    gpn = int(acc.gpus_per_node.value)
    pins = {name: iv.value for name, iv in inputs.items()
            if name in LAYOUT_SCENARIO_KEYS and iv.value is not None}
    base = {k: iv.value for k, iv in inputs.items()}
    base.update({k: v for k, v in PLACEHOLDER_LAYOUT.items() if k not in pins})
    base["gpu_count"] = base["gpu_count"] or float(gpn)
    evaluate = Evaluator(build_model(), base, lookups)
    space = Space(shape["attention_heads"], shape["layers"], shape["global_batch_sequences"], gpn, pins)
    given = s.hardware.gpu_count

    if given and len(pins) == len(LAYOUT_SCENARIO_KEYS):
        pinned = evaluate(Layout.from_inputs(pins), given)
        fit = "fits" if pinned.fits else "does NOT fit"
        text = (f"Layout pinned by the scenario: {pinned.layout.describe(pinned.values['dp_size'])}; "
                f"it {fit} ({pinned.values['memory_per_gpu_gb']:.1f} of "
                f"{pinned.values['usable_hbm_gb']:.1f} GB per GPU). Remove keys under parallelism "
                "to let the search choose.")
        return LayoutChoice("fixed", None, (pinned,), {}, text, evaluate.calls)

    if given:
        mode, result = "fixed", search(evaluate, space, given)
        count_source = None
    elif s.hardware.deadline_days:
        mode = "deadline"
        start = max(evaluate.base["min_gpus_for_memory"], _ideal_gpus(evaluate.base, s.hardware.deadline_days))
        result, below = smallest_count_for_deadline(evaluate, space, s.hardware.deadline_days, int(start))
        count_source = (f"deadline {s.hardware.deadline_days:g} days: the smallest whole-node count "
                        f"whose best layout meets it ({result.best.train_days:.1f} days); {below}")
    else:
        mode = "memory-first"
        start = int(evaluate.base["memory_first_gpus"])
        result = first_count_that_fits(evaluate, space, start)
        count_source = (f"memory first (seed 000 steps 1-3): {evaluate.base['memory_total_gb']:,.0f} GB "
                        f"÷ {evaluate.base['usable_hbm_gb']:.1f} GB usable, in whole nodes, "
                        f"+{s.sizing.split_margin:.0%} splitting margin = {start} GPUs"
                        + (f"; raised to {result.gpu_count} for a layout that fits"
                           if result.gpu_count > start else ""))
    chosen = result.best.layout.as_inputs()
    rank = f"layout search: best of {result.fitting:,} fitting layouts (Parallelism sheet)"
    layout_inputs = {name: (inputs[name] if name in pins else InputValue(chosen[name], rank))
                     for name in LAYOUT_SCENARIO_KEYS}
    if count_source:
        layout_inputs["gpu_count"] = InputValue(float(result.gpu_count), count_source)
    return LayoutChoice(mode, result, result.ranked + result.rejected, layout_inputs,
                        result.explanation, evaluate.calls)


def _ideal_gpus(base: Mapping, deadline_days: float) -> int:
    """A lower bound: GPUs needed if the layout lost nothing at all."""
    best_eff = (base["layout_efficiency_override"] if base["layout_efficiency_override"] is not None
                else 1 / base["reference_layout_efficiency"])
    ideal_gpu_days = base["gpu_days"] * base["layout_efficiency"] / best_eff
    return max(1, int(ideal_gpu_days / deadline_days))


def _no_layout_problem(s: Scenario, why: str):
    from .errors import Problem
    if s.hardware.gpu_count:
        return Problem("hardware.gpu_count", why,
                       "add GPUs, unpin parallelism keys, allow ZeRO or recomputation, or choose an "
                       "accelerator with more memory")
    return Problem("hardware", why, "relax the deadline, unpin parallelism keys, or choose a "
                                    "larger accelerator")


def _evaluate(model, inputs: dict, lookups: Mapping, file: str) -> dict:
    """Evaluate the model; a division by zero names the line item it happened in."""
    try:
        return model.evaluate(inputs, lookups)
    except ZeroDivisionError:
        from .formula import compile_items
        env = dict(inputs)
        for item in model.items.values():
            try:
                compile_items([(item.name, item.expr)])(env, lookups)
            except ZeroDivisionError:
                raise ScenarioError(file, [_Problem(
                    item.name, f"'{item.label}' divides by zero with these inputs",
                    "check the inputs it uses for zeros: " + ", ".join(sorted(item.expr.refs())))]) from None
        raise


MAX_PROJECT_DAYS = 36_525   # a century: dates stay displayable, the week grid fits a sheet


def _check_displayable(model, s: Scenario, values: Mapping, candidates, file: str) -> None:
    """Every figure the workbook shows is a finite number, and the project ends within a
    century: the schema's bounds keep each input plausible, this keeps their combination so."""
    for table in (values, *candidates):
        for name, value in table.items():
            if isinstance(value, float) and not math.isfinite(value):
                item = model.items.get(name)
                label = item.label if item is not None else name
                refs = ", ".join(sorted(item.expr.refs())) if item is not None else name
                raise ScenarioError(file, [_Problem(
                    name, f"'{label}' is not a finite number with these inputs",
                    f"check the inputs it uses for extreme values: {refs}")])
    days = values["project_days"]
    if days > MAX_PROJECT_DAYS:
        training = values["training_end"] - values["training_start"]
        where, fix = (("data.train_tokens", "train on fewer tokens, or use more or faster GPUs "
                       "(hardware.gpu_count, hardware.effective_tflops)") if training > days / 2
                      else ("schedule", "shorten the phases under schedule"))
        raise ScenarioError(file, [_Problem(
            where, f"the project would take {days / 365.25:,.0f} years, over the "
                   f"{MAX_PROJECT_DAYS / 365.25:.0f} a workbook can show", fix)])


def failing(values: Mapping[str, object]) -> list:
    """The checks that are not 0."""
    return [c for c in build_model().checks() if values[c.name] != 0]


def _warnings(values: Mapping[str, object]) -> list[str]:
    return [f"check failing: {c.label}. {c.fix}" for c in failing(values)]
