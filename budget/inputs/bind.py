"""Scenario ↔ workbook inputs, both ways, from the one description of each input.

`bind` turns a validated scenario into the model's input values, each with the source a
reviewer reads beside it; `unbind` turns input values (a workbook's cells, as a reviewer left
them) back into scenario data. Both are loops over the model's `InputDef`s: the definition
says the scenario path, the codec (how a scenario value becomes a cell value and back), and
the citation of the schema default. Only the compound inputs — a preset's shape, the
utilisation figure, the precision preset, staffing, the layout the search chooses — have
small resolvers of their own.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Callable, Mapping

from .catalog import Catalog
from ..core.dates import excel_serial, from_serial
from ..core.errors import Msg, Problem, ScenarioError
from ..core.i18n import fmt, text
from ..model.lineitems import InputDef, Model
from ..model.model import FITTED_COEFFICIENTS
from .scenario import PRECISIONS, Scenario, fx_table, precision_note, region_of, resolved_shape

@dataclass(frozen=True)
class Codec:
    encode: Callable[[object], object]     # scenario value -> cell value
    decode: Callable[[object], object]     # cell value -> scenario value


def _whole(x):
    return int(round(float(x)))


def _number(x):
    x = float(x)
    return int(x) if x.is_integer() and abs(x) < 1e15 else x


CODECS: dict[str, Codec] = {
    "number": Codec(float, _number),
    "count": Codec(float, _number),
    "int": Codec(float, _whole),
    "text": Codec(str, str),
    "yesno": Codec(lambda v: "yes" if v else "no", lambda v: str(v).strip().lower() == "yes"),
    "date": Codec(excel_serial, lambda v: from_serial(v) if isinstance(v, (int, float)) else v),
    "included_or_price": Codec(lambda v: 0.0 if v == "included" else float(v),
                               lambda v: "included" if float(v) == 0 else _number(v)),
    # a Price ({amount, currency}); its currency is the companion input's (see `_money`)
    "money": Codec(lambda p: float(p.amount), _number),
}


@dataclass(frozen=True)
class InputValue:
    value: object          # float, str, tuple (ranges) or None (blank, optional input)
    source: str
    note: str = ""


def get_path(s: Scenario, path: str):
    """The value at a dotted scenario path, or None when a section or key is absent."""
    node: object = s
    for part in path.split("."):
        node = getattr(node, part, None)
        if node is None:
            return None
    return node


def explicit_paths(s: Scenario) -> set[str]:
    """The dotted paths the scenario file itself sets (not schema defaults), at any depth. A key
    written as null (`ops_per_node_month:` with no value) sets nothing: its default applies, as
    for a blank input cell."""
    out: set[str] = set()

    def walk(node, prefix: str) -> None:
        for name in getattr(node, "model_fields_set", ()):
            path = f"{prefix}{name}"
            if getattr(node, name, None) is None:
                continue
            out.add(path)
            child = getattr(node, name, None)
            if hasattr(child, "model_fields_set"):
                walk(child, path + ".")

    walk(s, "")
    return out


def schema_paths() -> frozenset[str]:
    """Every field path a scenario can set: top-level keys and section.key."""
    paths = set()
    for name, info in Scenario.model_fields.items():
        paths.add(name)
        section = info.annotation
        if isinstance(section, type) and hasattr(section, "model_fields"):
            paths |= {f"{name}.{field}" for field in section.model_fields}
    return frozenset(paths)


SHAPE_INPUTS = {"params_override": "params", "model_layers": "layers", "hidden_size": "hidden_size",
                "attention_heads": "attention_heads", "seq_len": "seq_len",
                "vocab_size": "vocab_size", "global_batch_sequences": "global_batch_sequences"}
UTILISATION = ("mfu", "effective_tflops_given", "layout_efficiency_override")  # hfu: plain, all-in
PRECISION_BYTES = {"weight_bytes_per_param": 0, "grad_bytes_per_param": 1, "optimizer_bytes_per_param": 2,
                   "master_bytes_per_param": 3}


class Binder:
    """Builds InputValues whose source says where in the scenario the value came from."""

    def __init__(self, s: Scenario, catalog: Catalog, scenario_file: str):
        self.s, self.catalog, self.file = s, catalog, scenario_file
        self.explicit = explicit_paths(s)
        self.lang = s.language            # the sources are written in the plan's language

    def text(self, key: str, /, **figures) -> str:
        """A message of plan.bind in the plan's language."""
        return fmt(f"plan.bind.{key}", self.lang, **figures)

    def source_of(self, path: str) -> str:
        cited = self.s.sources.get(path)
        if cited:
            return self.text("scenario_cited", file=self.file, path=path, cited=cited)
        return self.text("scenario", file=self.file, path=path)

    def plain(self, d: InputDef) -> InputValue:
        """The generic case: the value at the definition's path, through its codec."""
        raw = get_path(self.s, d.path)
        value = None if raw is None else CODECS[d.codec].encode(raw)
        job = self.s.job
        if d.path == "data.train_tokens" and job.dataset_tokens is not None:      # issue 28: sft, lora
            return InputValue(value, self.text("job_epochs", file=self.file, dataset=job.dataset_tokens,
                                               epochs=job.epochs))
        if d.path in self.s.job_defaulted:     # issue 28: filled by the job mode's defaults
            return InputValue(value, self.text("job_default", mode=self.s.job.mode))
        if d.path in self.explicit:
            return InputValue(value, self.source_of(d.path))
        if d.constant is not None:
            return InputValue(value if value is not None else d.constant, d.cite)
        return InputValue(value, d.cite or self.text("default"))

    def ensure_sources_used(self) -> None:
        """`sources` keys must be field paths of the scenario schema: a typo cites nothing."""
        if not self.s.sources:      # nothing cited (the schema's paths take a while to list)
            return
        paths = schema_paths()
        unknown = sorted(set(self.s.sources) - paths)
        if unknown:
            close = difflib.get_close_matches(unknown[0], sorted(paths), n=1)
            fix = (Msg("plan.problems.unknown_source.fix_suggest", suggestion=close[0]) if close
                   else Msg("plan.problems.unknown_source.fix"))
            raise ScenarioError(self.file, [Problem(
                f"sources.{unknown[0]}", Msg("plan.problems.unknown_source.message"), fix)], self.lang)


def bind(model: Model, s: Scenario, catalog: Catalog, scenario_file: str = "scenario") -> dict[str, InputValue]:
    """Every assumption input of `model` (not the search's outputs or workbook structure)."""
    b = Binder(s, catalog, scenario_file)
    special = {**_shape(b, model), **_utilisation(b), **_precision(b), **_staffing(b), **_stages(b), **_gpu_price(b),
               **_catalog_defaults(b, model), **_fitted(b), **_model_error(b)}
    out: dict[str, InputValue] = {}
    for d in model.inputs.values():
        if d.name in special:
            out[d.name] = special[d.name]
        elif d.path is not None:
            out[d.name] = b.plain(d)
    out.update(_money(b, model, out))
    acc = catalog.accelerator(s.hardware.accelerator)
    out["gpu_type"] = InputValue(acc.id, out["gpu_type"].source, acc.name)
    b.ensure_sources_used()
    return out


def _gpu_price(b: Binder) -> dict[str, InputValue]:
    """The GPU price: typed, or a row of catalogs/prices.yaml with its tier and term."""
    p, prices = b.s.prices, b.catalog.prices
    if p.catalog is None and p.per_gpu_hour is None:     # an owned cluster given none (issue 28)
        out = {"price_per_gpu_hour": InputValue(None, b.text("no_rental_price"))}
        return out if p.tier is not None else {**out, "price_tier": InputValue("on_demand", b.text("default_tier"))}
    if p.catalog is None or prices is None:
        return {} if p.tier is not None else {"price_tier": InputValue("on_demand", b.text("default_tier"))}
    row = prices.rental_price(p.catalog)
    src = b.text("price_row", source=b.source_of("prices.catalog"), provider=row.provider, tier=row.tier,
                 cite=prices.cite(row.per_gpu_hour))
    out = {"price_per_gpu_hour": InputValue(float(row.per_gpu_hour.value), src, row.per_gpu_hour.note)}
    if p.tier is None:
        out["price_tier"] = InputValue(row.tier, b.text("tier_of", row=row.id))
    if row.tier == "reserved" and "prices.reserved.term_months" not in b.explicit:
        out["reserved_term_months"] = InputValue(float(row.term_months), b.text("term_of", row=row.id))
    if row.tier == "spot" and "prices.spot.discount" not in b.explicit:
        out["spot_discount"] = InputValue(0.0, b.text("spot_rate", row=row.id))
    return out


def _catalog_defaults(b: Binder, model: Model) -> dict[str, InputValue]:
    """Energy, carbon and ownership inputs the scenario leaves out: the catalog's sourced
    defaults (catalogs/prices.yaml), the purchase row of the chosen accelerator; the grid, the
    electricity price and the queue those of the plan's region (issue 28) where it has them."""
    prices = b.catalog.prices
    if prices is None:
        return {}
    e, o = prices.energy, prices.ownership
    region, inferred = region_of(b.s, b.catalog)
    grid = prices.grid(b.s.energy.grid or (region.grid if region else e.default_grid))
    defaults = {
        "pue": ("energy.pue", e.pue),
        "draw_training": ("energy.draw_training", e.draw_training),
        "draw_idle": ("energy.draw_idle", e.draw_idle),
        "electricity_per_kwh": ("energy.electricity_per_kwh", prices.electricity_of(region)),
        "grid_intensity": ("energy.grid_intensity", grid.kg_per_kwh),
        "depreciation_years": ("owned.depreciation_years", o.depreciation_years),
        "cost_of_capital": ("owned.cost_of_capital", o.cost_of_capital),
        "ops_per_node_month": ("owned.ops_per_node_month", o.ops_per_node_month),
    }
    how = _region_how(b, region, inferred)
    out = {}
    for name, (path, fig) in defaults.items():
        if path in b.explicit:
            continue
        note = fig.note
        if name == "grid_intensity" and "energy.grid" in b.explicit:
            source = b.text("scenario_grid", source=b.source_of("energy.grid"), grid=grid.name,
                            cite=prices.cite(fig))
        elif name == "grid_intensity" and region is not None:
            source = b.text("region_grid", how=how, grid=grid.name, cite=prices.cite(fig))
        elif name == "grid_intensity":
            source = b.text("default_grid", grid=grid.name, cite=prices.cite(fig))
        elif name == "electricity_per_kwh" and region is not None:
            source = (b.text("region_cited", how=how, cite=prices.cite(fig)) if region.electricity_per_kwh
                      else b.text("region_no_electricity", how=how, region=region.name, cite=prices.cite(fig)))
        else:
            source = b.text("default_cited", cite=prices.cite(fig))
        if inferred and name in REGION_INPUTS and not (name == "grid_intensity" and "energy.grid" in b.explicit):
            note = b.text("region_inferred_note", note=note) if note else b.text("region_inferred_note_alone")
        out[name] = InputValue(float(fig.value), source, note)
    if region is not None and "schedule.queue_days" not in b.explicit:
        out["queue_days"] = _region_queue(b, region, inferred, how, model.inputs["queue_days"])
    return out


# The inputs a region sets (issue 28): the grid, the electricity price and the queue.
REGION_INPUTS = ("grid_intensity", "electricity_per_kwh", "queue_days")


def _region_how(b: Binder, region, inferred: bool) -> str:
    """How the plan's region was chosen, for the sources of the inputs it sets."""
    if region is None:
        return ""
    if inferred:
        return b.text("region_inferred", region=region.id, name=region.name, currency=b.s.prices.currency)
    return b.text("region_stated", source=b.source_of("region"), name=region.name)


def region_note(s: Scenario, catalog: Catalog, grid_kg_per_kwh: float) -> str:
    """The plan's note on its region, in its language: which region and how it was chosen, the
    plan's grid intensity, and the figures the catalog has no source for that the scenario leaves
    to it (kept at the defaults); "" without a region."""
    region, inferred = region_of(s, catalog)
    if region is None:
        return ""
    prices, lang, explicit = catalog.prices, s.language, explicit_paths(s)
    lacks = ""
    if region.electricity_per_kwh is None and "energy.electricity_per_kwh" not in explicit:
        lacks += fmt("plan.bind.region_lacks_electricity", lang, region=region.name,
                     cite=prices.cite(prices.energy.electricity_per_kwh))
    if region.queue_days is None and "schedule.queue_days" not in explicit:
        lacks += fmt("plan.bind.region_lacks_queue", lang, region=region.name)
    key = "region_note_inferred" if inferred else "region_note_stated"
    return fmt(f"plan.bind.{key}", lang, name=region.name, region=region.id, grid=f"{grid_kg_per_kwh:g}",
               lacks=lacks, currency=s.prices.currency)


def _region_queue(b: Binder, region, inferred: bool, how: str, d: InputDef) -> InputValue:
    """The queue: the region's sourced figure, else the schedule's default, saying the region has none."""
    note = b.text("region_inferred_note_alone") if inferred else ""
    if region.queue_days is not None:
        fig = region.queue_days
        return InputValue(float(fig.value), b.text("region_cited", how=how, cite=b.catalog.prices.cite(fig)),
                          b.text("region_inferred_note", note=fig.note) if inferred and fig.note else note or fig.note)
    return InputValue(float(b.s.schedule.queue_days), b.text("region_no_queue", how=how, region=region.name,
                                                             cite=d.cite or b.text("default")), note)


NEUTRAL_COEFFICIENTS = {"stack_factor": 1.0, "card_allowance": 0.0, "fp8_gemm_realised": 0.0}


def _fitted(b: Binder) -> dict[str, InputValue]:
    """The fitted step-time model's coefficients the scenario leaves out: catalogs/efficiency.yaml's."""
    fit = b.catalog.efficiency
    if fit is None:
        return {}
    out = {}
    for name in FITTED_COEFFICIENTS:
        fig = fit.figure(name)
        if f"efficiency.fitted.{name}" in b.explicit:
            continue
        if fig is not None:
            out[f"fitted_{name}"] = InputValue(float(fig.value), b.text("fitted_default", rows=fit.rows,
                                                                          as_of=fit.as_of.isoformat()), fig.note)
        else:       # a catalog written before issue 25: no stack, FP8 or full-run effect
            key = next(k for k in NEUTRAL_COEFFICIENTS if name.startswith(k))
            out[f"fitted_{name}"] = InputValue(NEUTRAL_COEFFICIENTS[key], b.text("default"))
    if "efficiency.fitted.unfitted_reference" not in b.explicit:
        out["fitted_reference_accelerator"] = InputValue(fit.unfitted_reference, b.text("fitted_reference"))
    return out


def _model_error(b: Binder) -> dict[str, InputValue]:
    """The model error's low and high the scenario leaves out: catalogs/model_error.yaml's P10 and
    P90 of the fitted model's held-out step-time errors, or, when the utilisation is typed (an
    MFU, HFU or effective TFLOPS, or the reference model's baseline), a constant MFU's, centred."""
    error = b.catalog.model_error
    if error is None:
        return {}
    hw = b.s.hardware
    typed = (any(x is not None for x in (hw.mfu, hw.hfu, hw.effective_tflops, hw.baseline_mfu))
             or b.s.efficiency.model == "reference")
    stack = b.s.efficiency.stack
    if typed:
        spread, key = error.constant_mfu, "model_error_constant"
    elif stack in error.by_stack:
        spread, key = error.by_stack[stack], "model_error_stack"
    else:
        spread, key = error.fitted, "model_error_fitted"
    out = {}
    for end, fig in (("low", spread.low), ("high", spread.high)):
        if f"uncertainty.model_error.{end}" not in b.explicit:
            out[f"unc_model_error_{end}"] = InputValue(
                float(fig.value), b.text(key, end="P10" if end == "low" else "P90", rows=spread.rows,
                                         groups=spread.groups, as_of=fig.as_of.isoformat(), stack=stack), fig.note)
    return out


def _money(b: Binder, model: Model, out: Mapping[str, InputValue]) -> dict[str, InputValue]:
    """Each money input's currency cell, and its amount in that currency. An amount's currency
    is the one it was given in: {amount, currency} in the scenario, the catalog row's, else the
    scenario's. Amounts sharing a currency cell but given in another currency are converted at
    the FX table's rate (their source says so)."""
    s, prices = b.s, b.catalog.prices
    own = s.prices.currency
    rates = fx_table(s, b.catalog)

    defaults = (prices.default_amounts(s.hardware.accelerator, s.prices.catalog, region_of(s, b.catalog)[0])
                if prices else {})

    def given_currency(d: InputDef) -> str | None:
        raw = get_path(s, d.path) if d.path else None
        if d.path in b.explicit:
            return getattr(raw, "currency", None) or own
        if raw is not None and getattr(raw, "currency", None):
            return raw.currency
        fig = defaults.get(d.path)
        return fig.currency if fig else own

    groups: dict[str, list[InputDef]] = {}
    for d in model.inputs.values():
        if d.currency and not d.is_range:
            groups.setdefault(d.currency, []).append(d)
    result: dict[str, InputValue] = {}
    for companion, defs in groups.items():
        present = [(d, given_currency(d)) for d in defs if out[d.name].value is not None]
        # a blank amount (the node price left to the Catalog) keeps its catalog figure's currency
        fallback = defaults[defs[0].path].currency if defs[0].path in defaults else own
        currency = present[0][1] if present else fallback
        why = b.text("currency_of", label=_in_sentence(present[0][0].label, b.lang)) if present \
            else b.text("catalog_currency")
        result[companion] = InputValue(currency, why)
        for d, cur in present:
            if cur != currency and cur in rates and currency in rates:
                iv = out[d.name]
                factor = rates[cur][0] / rates[currency][0]
                result[d.name] = InputValue(iv.value * factor, iv.source,
                                            b.text("converted", amount=iv.value, given=cur, factor=factor,
                                                   currency=currency))
    return result


def _in_sentence(label: str, lang: str) -> str:
    """A model label as it reads inside a sentence: lower case where the language says so."""
    return label.lower() if text("plan.bind.lowercase_labels", lang) == "yes" else label


def fx_rows(s: Scenario, catalog: Catalog):
    """The FX table's rows (currency, rate into the scenario's currency) and their sources."""
    rates = fx_table(s, catalog)
    codes = [s.prices.currency] + sorted(c for c in rates if c != s.prices.currency)
    return tuple({"id": c, "rate": float(rates[c][0])} for c in codes), tuple(rates[c][1] for c in codes)


# The shape's details: input -> (key of resolved_shape, scenario path, codec, value when absent).
# Absent, the optional ones are blank cells (the formulas' defaults: the old GPT shape).
SHAPE_DETAIL_INPUTS = {
    "active_params_override": ("active_params", "model.active_params", "count", None),
    "num_kv_heads": ("num_kv_heads", "model.num_kv_heads", "number", None),
    "head_dim": ("head_dim", "model.head_dim", "number", None),
    "ffn_hidden_size": ("ffn_hidden_size", "model.ffn_hidden_size", "number", None),
    "activation": ("activation", "model.activation", "text", "gelu"),
    "tied_embeddings": ("tied_embeddings", "model.tied_embeddings", "yesno", True),
    "position_embeddings": ("position_embeddings", "model.position_embeddings", "text", "learned"),
    **{f"moe_{f}": (f"moe_{f}", f"model.moe.{f}", "number", None)
       for f in ("experts", "experts_per_token", "shared_experts", "expert_ffn_hidden_size",
                 "first_dense_layers", "layer_freq")},
    **{f"mla_{f}": (f"mla_{f}", f"model.mla.{f}", "number", None)
       for f in ("q_lora_rank", "kv_lora_rank", "rope_head_dim", "v_head_dim")},
}


def _shape_details(b: Binder, model: Model, shape: dict, preset_src: str) -> dict[str, InputValue]:
    out = {}
    for name, (key, path, codec, default) in SHAPE_DETAIL_INPUTS.items():
        if name not in model.inputs:
            continue
        value = shape.get(key)
        if value is None:
            encoded = None if default is None else CODECS[codec].encode(default)
            out[name] = InputValue(encoded, model.inputs[name].cite or b.text("default"))
            continue
        if path in b.explicit:
            source = b.source_of(path)
        elif key in b.s.model.hf_shape:
            source = b.text("hf_config", file=b.s.model.hf_config, key=b.s.model.hf_shape[key][1])
        else:
            source = preset_src
        out[name] = InputValue(CODECS[codec].encode(value), source)
    return out


def _shape(b: Binder, model: Model) -> dict[str, InputValue]:
    s, catalog = b.s, b.catalog
    shape = resolved_shape(s, catalog)
    preset_src = (b.text("preset", preset=s.model.preset, source=catalog.model(s.model.preset).source)
                  if s.model.preset else "")
    out = _shape_details(b, model, shape, preset_src)
    for name, field in SHAPE_INPUTS.items():
        path = "data.global_batch_sequences" if field == "global_batch_sequences" else f"model.{field}"
        if path in b.explicit and shape.get(field) is not None and field not in shape.get("derived", ()):
            out[name] = InputValue(float(shape[field]), b.source_of(path))
        elif field in shape.get("derived", ()):
            out[name] = InputValue(float(shape[field]), b.text("shape_assumed"), b.text("shape_assumed_note"))
        elif field in s.model.hf_shape and path not in b.explicit:
            out[name] = InputValue(float(shape[field]), b.text("hf_config", file=s.model.hf_config,
                                                                key=s.model.hf_shape[field][1]))
        elif field == "params" and shape.get("params_from_shape"):
            out[name] = InputValue(None, b.text("params_blank"))
        elif field == "global_batch_sequences" and shape.get("batch_defaulted"):
            out[name] = InputValue(float(shape[field]), b.text("batch_default"))
        else:
            note = b.text("params_note") if field == "params" else ""
            out[name] = InputValue(float(shape[field]), preset_src, note)
    return out


def _utilisation(b: Binder) -> dict[str, InputValue]:
    """mfu and effective TFLOPS are all-in (the layout efficiency is then pinned to 1);
    baseline_mfu is scaled by the layout model; none of them: the catalog's typical MFU."""
    hw, eff = b.s.hardware, b.s.efficiency
    out = {"mfu": InputValue(None, b.text("mfu_blank")),
           "effective_tflops_given": InputValue(None, b.text("tflops_blank"))}
    if hw.mfu is not None:
        out["mfu"] = InputValue(float(hw.mfu), b.source_of("hardware.mfu"))
    elif hw.baseline_mfu is not None:
        out["mfu"] = InputValue(float(hw.baseline_mfu), b.source_of("hardware.baseline_mfu"),
                                b.text("mfu_scaled"))
    if hw.effective_tflops is not None:
        out["effective_tflops_given"] = InputValue(float(hw.effective_tflops),
                                                   b.source_of("hardware.effective_tflops"))
    if eff.layout_efficiency is not None:
        out["layout_efficiency_override"] = InputValue(float(eff.layout_efficiency),
                                                       b.source_of("efficiency.layout_efficiency"))
    elif hw.mfu is not None or hw.effective_tflops is not None or hw.hfu is not None:
        key = "mfu" if hw.mfu is not None else "hfu" if hw.hfu is not None else "effective_tflops"
        out["layout_efficiency_override"] = InputValue(1.0, b.text("all_in", key=key), b.text("all_in_note"))
    return out


def _precision(b: Binder) -> dict[str, InputValue]:
    mem = b.s.memory
    preset = PRECISIONS[mem.precision]
    source = (b.text("precision", source=b.source_of("memory.precision"), precision=mem.precision)
              if "memory.precision" in b.explicit else b.text("default_precision", precision=mem.precision))
    out = {}
    for name, index in PRECISION_BYTES.items():
        path = f"memory.{name}"
        if getattr(mem, name) is not None:
            out[name] = InputValue(float(getattr(mem, name)), b.source_of(path))
        else:
            out[name] = InputValue(float(preset[index]), source, precision_note(mem.precision, b.lang))
    return out


def _staffing(b: Binder) -> dict[str, InputValue]:
    """The staffing table, its monthly costs in one currency: the first role's (the scenario's
    unless given as {amount, currency}); other roles' costs converted at the FX table's rate."""
    roles = b.s.staffing
    src = b.source_of("staffing") if roles else b.text("no_staffing")
    own = b.s.prices.currency
    currency = (roles[0].monthly_cost.currency or own) if roles else own
    rates = fx_table(b.s, b.catalog)

    def cost(role) -> float:
        given = role.monthly_cost.currency or own
        factor = rates[given][0] / rates[currency][0] if given != currency else 1.0
        return float(role.monthly_cost.amount) * factor

    return {
        "staff_currency": InputValue(currency, b.text("staff_currency")),
        "staff_role": InputValue(tuple(r.role for r in roles), src),
        "staff_headcount": InputValue(tuple(float(r.headcount) for r in roles), src),
        "staff_monthly_cost": InputValue(tuple(cost(r) for r in roles), src),
        "staff_months": InputValue(tuple(None if r.months is None else float(r.months) for r in roles), src),
    }


# Stage table column -> the Stage field it holds.
STAGE_FIELDS = {"stage_name": "name", "stage_tokens": "tokens", "stage_gpu_count": "gpu_count",
                "stage_seq_len": "seq_len", "stage_batch_sequences": "global_batch_sequences",
                "stage_mfu": "mfu", "stage_tp": "tp", "stage_pp": "pp", "stage_cp": "cp"}


def _stages(b: Binder) -> dict[str, InputValue]:
    """The stages table: one row per stage, a blank cell where the stage keeps the plan's value."""
    stages = b.s.stages
    src = b.source_of("stages") if stages else b.text("no_stages")

    def cell(value):
        return value if value is None or isinstance(value, str) else float(value)

    return {name: InputValue(tuple(cell(getattr(st, field)) for st in stages), src)
            for name, field in STAGE_FIELDS.items()}


# --- the inverse ------------------------------------------------------------------------

def set_path(data: dict, path: str, value) -> None:
    node = data
    *parents, last = path.split(".")
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value


def unbind(model: Model, values: Mapping[str, object]) -> dict:
    """Scenario data that binds back to `values` (input name -> cell value; ranges as tuples).

    Everything is written explicitly — the shape, the layout and GPU count pinned — so that
    the scenario reproduces the cells whatever the schema's defaults become. The caller adds
    name, description, catalog rows and comments.
    """
    data: dict = {}
    for d in model.inputs.values():
        if d.path is None or d.is_range or d.name in UTILISATION:
            continue
        value = values.get(d.name)
        if value is None or value == "":
            continue
        if d.constant is not None and float(value) == d.constant:
            continue
        set_path(data, d.path, CODECS[d.codec].decode(value))
    for name in ("mfu", "effective_tflops_given", "layout_efficiency_override"):
        if values.get(name) not in (None, ""):
            path = {"mfu": "hardware.baseline_mfu", "effective_tflops_given": "hardware.effective_tflops",
                    "layout_efficiency_override": "efficiency.layout_efficiency"}[name]
            set_path(data, path, _number(values[name]))
    mfu_all_in = values.get("layout_efficiency_override") not in (None, "") and float(
        values["layout_efficiency_override"]) == 1.0
    if mfu_all_in and "baseline_mfu" in data.get("hardware", {}):
        # an all-in MFU with the efficiency pinned to 1 is the scenario's `mfu`
        data["hardware"]["mfu"] = data["hardware"].pop("baseline_mfu")
        data["efficiency"].pop("layout_efficiency")
        if not data["efficiency"]:
            data.pop("efficiency")
    if "effective_tflops" in data.get("hardware", {}) and mfu_all_in:
        data["efficiency"].pop("layout_efficiency", None)
        if not data["efficiency"]:
            data.pop("efficiency")
    own = values.get("currency")
    for d in model.inputs.values():      # an amount in another currency than the plan's keeps it
        if d.codec == "money" and d.path and values.get(d.name) not in (None, ""):
            currency = values.get(d.currency)
            if currency not in (None, "", own):
                set_path(data, d.path, {"amount": _number(values[d.name]), "currency": str(currency)})
    roles = []
    for role, heads, cost, months in zip(*(values.get(n, ()) for n in (
            "staff_role", "staff_headcount", "staff_monthly_cost", "staff_months"))):
        if role in (None, "") and heads in (None, "", 0) and cost in (None, "", 0):
            continue
        row = {"role": str(role or text("plan.bind.unnamed_role", model.lang)), "headcount": _number(heads or 0),
               "monthly_cost": _number(cost or 0)}
        if values.get("staff_currency") not in (None, "", own):
            row["monthly_cost"] = {"amount": row["monthly_cost"], "currency": str(values["staff_currency"])}
        if months not in (None, ""):
            row["months"] = _number(months)
        roles.append(row)
    data["staffing"] = roles
    stages = []
    for row in zip(*(values.get(n, ()) for n in STAGE_FIELDS)):
        cells = dict(zip(STAGE_FIELDS.values(), row))
        if cells["tokens"] in (None, "", 0):
            continue
        stage = {"name": str(cells.pop("name") or text("plan.bind.unnamed_stage", model.lang))}
        stage.update({k: _number(v) for k, v in cells.items() if v not in (None, "")})
        stages.append(stage)
    if stages:
        data["stages"] = stages
    return data
