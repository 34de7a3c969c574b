"""Scenario + catalog → plan. Pure functions, no IO; the result is a frozen `Plan`.

`resolve_inputs` turns a validated scenario into the model's input values, each with the
source a reviewer will read next to it. `build_plan` evaluates the model over them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from .catalog import Catalog
from .model import ACCELERATOR_TABLE, ACTIVATION_TABLE, build_model
from .scenario import PRECISIONS, Scenario, resolved_shape

RAW_TEXT_BYTES_PER_TOKEN = 4      # UTF-8 English averages about 4 bytes per BPE token
CHECKPOINTS_KEPT_DEFAULT = 3


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


# Korthikanti et al. 2022, Table 2, as (replicated, split-by-TP, attention coefficient).
ACTIVATION_MODES = {
    "none/no": (10, 24, 5, "TP without sequence parallelism: sbh(10 + 24/t + 5as/(ht))"),
    "none/yes": (0, 34, 5, "TP with sequence parallelism: sbh(34/t + 5as/(ht))"),
    "selective/no": (10, 24, 0, "TP + selective recomputation: sbh(10 + 24/t)"),
    "selective/yes": (0, 34, 0, "TP + SP + selective recomputation: 34·sbh/t"),
    "full/no": (2, 0, 0, "full recomputation: only each layer's input, 2·sbh"),
    "full/yes": (0, 2, 0, "full recomputation with SP: the layer input is sharded over TP, 2·sbh/t"),
}


@dataclass(frozen=True)
class Plan:
    scenario: Scenario
    scenario_id: str                       # the file stem: names the output files
    inputs: Mapping[str, InputValue]
    values: Mapping[str, object]
    tables: Mapping[str, TableData]
    warnings: tuple[str, ...] = field(default=())

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
        return [c.name for c in build_model().checks() if self.values[c.name] != 0]


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
    rows = tuple({"id": k, "replicated": float(a), "split": float(b), "attention": float(c)}
                 for k, (a, b, c, _) in ACTIVATION_MODES.items())
    sources = tuple(f"Korthikanti et al. 2022, Table 2: {v[3]}" for v in ACTIVATION_MODES.values())
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
        "gpu_count": user("hardware.gpu_count", float(s.hardware.gpu_count)),
        "mfu": _mfu(s, acc, catalog, user),
        "usable_memory_fraction": user("hardware.usable_memory_fraction",
                                       s.hardware.usable_memory_fraction,
                                       default="default: planners count 85-90% of HBM as usable"),
        "tp_size": user("parallelism.tp", float(s.parallelism.tp)),
        "pp_size": user("parallelism.pp", float(s.parallelism.pp)),
        "zero_stage": user("parallelism.zero_stage", float(s.parallelism.zero_stage)),
        "recompute": user("parallelism.recompute", s.parallelism.recompute),
        "sequence_parallel": user("parallelism.sequence_parallel",
                                  "yes" if s.parallelism.sequence_parallel else "no"),
        "micro_batch_size": user("parallelism.micro_batch_size", float(s.parallelism.micro_batch_size)),
        "activation_gb_override": user("memory.activation_gb_per_microbatch",
                                       s.memory.activation_gb_per_microbatch,
                                       default="blank: the Korthikanti formula on the Memory sheet"),
        "price_per_gpu_hour": user("prices.per_gpu_hour", s.prices.per_gpu_hour),
        "price_per_gb_month": user("prices.storage_per_gb_month", s.prices.storage_per_gb_month,
                                   default="default: AWS S3 Standard list price, first 50 TB"),
        "network_per_gpu_hour": user("prices.network",
                                     0.0 if s.prices.network == "included" else float(s.prices.network),
                                     note="'included' in the scenario" if s.prices.network == "included" else ""),
        "dataset_gb": _dataset_gb(s, shape, user),
        "checkpoint_gb": _checkpoint_gb(s, shape, user),
        "storage_months": user("storage.months_held", s.storage.months_held,
                               default="default: six months"),
        "buffer_rate": user("buffer_rate", s.buffer_rate,
                            default="default: seed 002 section 8, at least 20%"),
        "flops_per_param_token": InputValue(6.0, "Kaplan et al. 2020; seed 002 section 1"),
        "bytes_per_gb": InputValue(1e9, "SI: 1 GB = 10^9 bytes, used for every size in this book"),
        "flops_per_tflop": InputValue(1e12, "SI: tera = 10^12"),
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
        self.used: set[str] = set()

    def __call__(self, path: str, value, note: str = "", default: str | None = None) -> InputValue:
        self.used.add(path)
        cited = self.s.sources.get(path)
        if default is not None and path not in self.explicit:
            return InputValue(value, default, note)
        source = f"scenario {self.file}: {path}"
        if cited:
            source += f" ({cited})"
        return InputValue(value, source, note)

    def ensure_sources_used(self) -> None:
        from .errors import ScenarioError, Problem
        valid = self.used | {"model.preset", "hardware.effective_tflops", "hardware.mfu",
                             "hardware.peak_tflops", "staffing", "storage.dataset_gb",
                             "storage.checkpoint_gb"}
        unknown = sorted(set(self.s.sources) - valid)
        if unknown:
            raise ScenarioError(self.file, [Problem(
                f"sources.{unknown[0]}", "cites a field this scenario does not set",
                f"key sources by a field path such as prices.per_gpu_hour; known: {', '.join(sorted(valid))}")])


def _explicit_paths(s: Scenario) -> set[str]:
    out = set()
    for section_name in type(s).model_fields:
        section = getattr(s, section_name)
        if hasattr(section, "model_fields_set"):
            out |= {f"{section_name}.{f}" for f in section.model_fields_set}
    out |= {f for f in s.model_fields_set}
    return out


def _mfu(s: Scenario, acc, catalog: Catalog, user: _SourceNamer) -> InputValue:
    peak = s.hardware.peak_tflops or acc.peak_bf16_tflops.value
    if s.hardware.mfu is not None:
        return user("hardware.mfu", float(s.hardware.mfu))
    if s.hardware.effective_tflops is not None:
        got = user("hardware.effective_tflops", 0.0)
        return InputValue(s.hardware.effective_tflops / peak,
                          f"{got.source}: {s.hardware.effective_tflops:g} TFLOPS ÷ peak {peak:g}",
                          "kept as a fraction so that another accelerator's peak scales it")
    fig = acc.typical_mfu
    return InputValue(fig.value, f"catalog: {catalog.cite(fig.source)} ({fig.as_of.isoformat()})",
                      fig.note)


def _dataset_gb(s: Scenario, shape: dict, user: _SourceNamer) -> InputValue:
    if s.storage.dataset_gb is not None:
        return user("storage.dataset_gb", s.storage.dataset_gb)
    token_bytes = 2 if shape["vocab_size"] <= 65536 else 4
    gb = s.data.train_tokens * (RAW_TEXT_BYTES_PER_TOKEN + token_bytes) / 1e9
    return InputValue(gb, f"default: raw text at {RAW_TEXT_BYTES_PER_TOKEN} bytes/token plus "
                          f"tokenized copy at {token_bytes} bytes/token")


def _checkpoint_gb(s: Scenario, shape: dict, user: _SourceNamer) -> InputValue:
    if s.storage.checkpoint_gb is not None:
        return user("storage.checkpoint_gb", s.storage.checkpoint_gb)
    wb, _, ob, _ = PRECISIONS[s.memory.precision]
    gb = shape["params"] * (wb + ob) * CHECKPOINTS_KEPT_DEFAULT / 1e9
    return InputValue(gb, f"default: last {CHECKPOINTS_KEPT_DEFAULT} checkpoints of weights and "
                          f"optimizer state ({wb + ob} bytes/parameter)")


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
    inputs = resolve_inputs(s, catalog, scenario_file or f"{scenario_id}.yaml")
    tables = {ACCELERATOR_TABLE: accelerator_table(catalog, s), ACTIVATION_TABLE: activation_table()}
    lookups = {name: t.lookup() for name, t in tables.items()}
    values = build_model().evaluate({k: iv.value for k, iv in inputs.items()}, lookups)
    return Plan(s, scenario_id, MappingProxyType(inputs), MappingProxyType(values),
                MappingProxyType(tables), tuple(_warnings(values)))


def _warnings(values: Mapping[str, object]) -> list[str]:
    model = build_model()
    return [f"check failing: {c.label}. {c.fix}" for c in model.checks() if values[c.name] != 0]
