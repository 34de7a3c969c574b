"""Catalogs: sourced accelerator figures and public model shapes, loaded explicitly.

Nothing is read at import. `load_catalog()` reads `catalogs/*.yaml` (from the source tree, or
from the installed package) and validates them with the same strictness as scenarios.
"""

from __future__ import annotations

import datetime as dt
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

import yaml

from ..core.errors import (MAX_YAML_BYTES, CatalogError, Msg, Problem, _mapping_no_duplicates, load_yaml,
                     problems_from_validation, rule_error)


def data_dir(name: str) -> Path:
    """A bundled data folder: inside the installed package, or beside it in a checkout."""
    here = Path(__file__).resolve().parent.parent       # budget/
    for candidate in (here / name, here.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"bundled folder {name!r} not found next to {here}")  # i18n: not text


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Figure(_Strict):
    """One sourced number."""
    value: float
    source: str
    as_of: dt.date | None = None      # required in catalogs/*.yaml; a reviewer's row may lack it
    note: str = ""

    def cite(self, sources: dict[str, str] | None = None) -> str:
        text = (sources or {}).get(self.source, self.source)
        return f"{text} ({self.as_of.isoformat()})" if self.as_of else text


class DateFigure(Figure):
    """One sourced date (source, as_of and note as for a number)."""
    value: dt.date


class Accelerator(_Strict):
    id: Annotated[str, Field(pattern=r"^[a-z0-9_]+$")]
    name: str
    vendor: str
    peak_bf16_tflops: Figure
    hbm_gb: Figure
    gpus_per_node: Figure
    intra_node_gb_per_s: Figure
    inter_node_gbit_per_s: Figure
    typical_mfu: Figure
    tdp_w: Figure | None = None       # board power; a reviewer's row may lack it (energy is then blank)
    # Optional: absent where not published (a blank cell on the Catalog sheet, never a 0).
    peak_fp8_tflops: Figure | None = None     # dense FP8 tensor throughput, no 2:4 sparsity
    peak_fp4_tflops: Figure | None = None     # dense FP4 (NVFP4 / MXFP4) tensor throughput
    scale_up_domain: Figure | None = None     # accelerators on the fast fabric (HGX 8, NVL72, a TPU pod)
    # When the first product of this accelerator's architecture shipped (A100 for every Ampere part,
    # H100 for every Hopper part): the efficiency model's software-maturity term counts the years the
    # training software has had on the architecture when a run happens (issue 13). Required in
    # catalogs/accelerators.yaml (_AcceleratorFile); a scenario's own accelerator row may lack it.
    architecture_launched: DateFigure | None = None

    @model_validator(mode="after")
    def _figures_make_sense(self):
        for field in ("peak_bf16_tflops", "hbm_gb", "gpus_per_node", "intra_node_gb_per_s",
                      "inter_node_gbit_per_s", "tdp_w", *OPTIONAL_FIGURES):
            if getattr(self, field) is None:
                continue
            if getattr(self, field).value <= 0:
                raise rule_error(Msg("errors.catalog.positive.message", field=field),
                                 Msg("errors.types.other.fix", field=f"{field}.value"))
        if not 0 < self.typical_mfu.value <= 1:
            raise rule_error(Msg("errors.catalog.mfu_fraction.message"), Msg("errors.catalog.mfu_fraction.fix"))
        if not float(self.gpus_per_node.value).is_integer():
            raise rule_error(Msg("errors.catalog.whole_gpus.message"),
                             Msg("errors.types.other.fix", field="gpus_per_node"))
        domain = self.scale_up_domain
        if domain is not None and (not float(domain.value).is_integer()
                                   or domain.value < self.gpus_per_node.value):
            raise rule_error(Msg("errors.catalog.scale_up_domain.message"),
                             Msg("errors.catalog.scale_up_domain.fix"), "scale_up_domain.value")
        return self


_Positive = Annotated[int, Field(gt=0)]
_NonNegative = Annotated[int, Field(ge=0)]


class PresetMoE(_Strict):
    """Mixture of experts as published (the scenario's model.moe has the same keys)."""
    experts: _Positive
    experts_per_token: _Positive
    shared_experts: _NonNegative = 0
    expert_ffn_hidden_size: _Positive
    first_dense_layers: _NonNegative = 0
    layer_freq: _Positive = 1


class PresetMLA(_Strict):
    """Multi-head latent attention's ranks as published (the scenario's model.mla)."""
    q_lora_rank: _Positive | None = None
    kv_lora_rank: _Positive
    rope_head_dim: _NonNegative
    v_head_dim: _Positive


class ModelPreset(_Strict):
    """A published shape. Left out, a detail is the old GPT shape's (K/V heads = heads, FFN 4·h
    GeLU, one shared embedding matrix, learned positions, dense); `params` and `active_params`
    are the published counts, the shape's own count is checked against them."""
    id: str
    name: str
    params: Annotated[float, Field(gt=0)]
    active_params: Annotated[float, Field(gt=0)] | None = None
    layers: _Positive
    hidden_size: _Positive
    attention_heads: _Positive
    num_kv_heads: _Positive | None = None
    head_dim: _Positive | None = None
    ffn_hidden_size: _Positive | None = None
    activation: Literal["gelu", "swiglu"] | None = None
    tied_embeddings: bool | None = None
    position_embeddings: Literal["learned", "rotary"] | None = None
    moe: PresetMoE | None = None
    mla: PresetMLA | None = None
    seq_len: _Positive
    max_context: _Positive | None = None
    vocab_size: _Positive
    global_batch_sequences: _Positive | None = None   # None: not published
    source: str
    as_of: dt.date
    note: str = ""


Currency = Annotated[str, Field(pattern=r"^[A-Z]{3}$")]
Id = Annotated[str, Field(pattern=r"^[a-z0-9_]+$")]


class MoneyFigure(Figure):
    """A sourced amount in a stated currency."""
    currency: Currency


class RentalPrice(_Strict):
    """A reference GPU rental price, selectable by id (`prices.catalog`)."""
    id: Id
    accelerator: str
    provider: str
    tier: Literal["on_demand", "reserved", "spot"]
    term_months: Annotated[float, Field(gt=0, le=120)] | None = None
    per_gpu_hour: MoneyFigure

    @model_validator(mode="after")
    def _term_for_reserved(self):
        if (self.tier == "reserved") != (self.term_months is not None):
            raise rule_error(Msg("errors.catalog.term.message"), Msg("errors.catalog.term.fix"), "term_months")
        return self


class PurchasePrice(_Strict):
    """One node (a server and its GPUs) bought for an owned cluster."""
    id: Id
    accelerator: str
    name: str
    price_per_node: MoneyFigure
    overhead_kw_per_node: Figure


class GridIntensity(_Strict):
    id: Id
    name: str
    kg_per_kwh: Figure


class Region(_Strict):
    """A region (a scenario's `region:`): the grid it draws on, and its electricity price and
    queue where a source gives them (absent: the `energy:` default, the schedule's queue)."""
    id: Id
    name: str
    currencies: list[Currency] = []        # a scenario priced in one of these infers this region
    grid: str
    electricity_per_kwh: MoneyFigure | None = None
    queue_days: Figure | None = None


class EnergyDefaults(_Strict):
    pue: Figure
    electricity_per_kwh: MoneyFigure
    draw_training: Figure
    draw_idle: Figure
    default_grid: str


class OwnershipDefaults(_Strict):
    depreciation_years: Figure
    cost_of_capital: Figure
    ops_per_node_month: MoneyFigure


class _PriceFile(_Strict):
    rental: list[RentalPrice]
    purchase: list[PurchasePrice]
    grid_intensity: list[GridIntensity]
    energy: EnergyDefaults
    regions: list[Region] = []
    ownership: OwnershipDefaults
    fx_rates: dict[Currency, Figure]          # units of each currency per 1 USD
    sources: dict[str, str]

    @model_validator(mode="after")
    def _consistent(self):
        for section in ("rental", "purchase", "grid_intensity", "regions"):
            ids = [row.id for row in getattr(self, section)]
            for i, key in enumerate(ids):
                if key in ids[:i]:
                    raise rule_error(Msg("errors.catalog.id_twice.message", id=repr(key)),
                                     Msg("errors.id_twice.fix"), f"{section}[{i}].id")
        if self.energy.default_grid not in {g.id for g in self.grid_intensity}:
            raise rule_error(Msg("errors.catalog.default_grid.message"), Msg("errors.catalog.default_grid.fix"),
                             "energy.default_grid")
        grids, seen = {g.id for g in self.grid_intensity}, {}
        for i, region in enumerate(self.regions):
            if region.grid not in grids:
                raise rule_error(Msg("errors.catalog.region_grid.message", id=repr(region.grid)),
                                 Msg("errors.catalog.region_grid.fix"), f"regions[{i}].grid")
            for code in region.currencies:
                if code in seen:
                    raise rule_error(Msg("errors.catalog.region_currency.message", code=code,
                                         first=seen[code], second=region.id),
                                     Msg("errors.catalog.region_currency.fix"), f"regions[{i}].currencies")
                seen[code] = region.id
        for path, fig in _figures(self):
            if fig.as_of is None:
                raise rule_error(Msg("errors.catalog.as_of.message"), Msg("errors.catalog.as_of.fix"),
                                 f"{path}.as_of")
            if fig.source not in self.sources:
                raise rule_error(Msg("errors.catalog.source.message", source=repr(fig.source)),
                                 Msg("errors.catalog.source.fix"), f"{path}.source")
        return self


def _figures(prices: "_PriceFile"):
    """Every sourced figure of the price catalog, with its path."""
    for section in ("rental", "purchase", "grid_intensity", "regions"):
        for i, row in enumerate(getattr(prices, section)):
            for name in type(row).model_fields:
                value = getattr(row, name)
                if isinstance(value, Figure):
                    yield f"{section}[{i}].{name}", value
    for section in ("energy", "ownership"):
        block = getattr(prices, section)
        for name in type(block).model_fields:
            value = getattr(block, name)
            if isinstance(value, Figure):
                yield f"{section}.{name}", value
    for code, fig in prices.fx_rates.items():
        yield f"fx_rates.{code}", fig


@dataclass(frozen=True)
class PriceCatalog:
    """catalogs/prices.yaml: reference rental and purchase prices, energy, carbon and FX defaults."""
    rental: tuple[RentalPrice, ...]
    purchase: tuple[PurchasePrice, ...]
    grids: tuple[GridIntensity, ...]
    energy: EnergyDefaults
    ownership: OwnershipDefaults
    fx_per_usd: dict[str, Figure]
    sources: dict[str, str]
    regions: tuple[Region, ...] = ()

    def rental_price(self, price_id: str) -> RentalPrice:
        return next(r for r in self.rental if r.id == price_id)

    def on_demand_usd(self, acc_id: str) -> float | None:
        """The median on-demand rental price of an accelerator per GPU-hour, in US dollars (the
        catalog's FX rates); None when the catalog quotes none."""
        rate = {c: f.value for c, f in self.fx_per_usd.items()} | {"USD": 1.0}  # i18n: not text
        quotes = [r.per_gpu_hour.value / rate[r.per_gpu_hour.currency]
                  for r in self.rental if r.accelerator == acc_id and r.tier == "on_demand"
                  and r.per_gpu_hour.currency in rate]
        return statistics.median(quotes) if quotes else None

    def purchase_for(self, acc_id: str) -> PurchasePrice | None:
        return next((p for p in self.purchase if p.accelerator == acc_id), None)

    def node_for_power(self, acc_id: str) -> PurchasePrice | None:
        """The node whose own power stands for the accelerator's: its own, else the catalog's
        first (a node's own power hardly depends on its GPUs)."""
        return self.purchase_for(acc_id) or (self.purchase[0] if self.purchase else None)

    def default_amounts(self, acc_id: str, price_id: str | None,
                        region: Region | None = None) -> dict[str, MoneyFigure]:
        """The amounts the catalog supplies, by the scenario path they stand in for (the
        electricity price the region's, where it has one)."""
        node = self.purchase_for(acc_id)
        out = {"prices.per_gpu_hour": self.rental_price(price_id).per_gpu_hour if price_id else None,
               "energy.electricity_per_kwh": self.electricity_of(region),
               "owned.ops_per_node_month": self.ownership.ops_per_node_month,
               "owned.node_price": node.price_per_node if node else None}
        return {path: fig for path, fig in out.items() if fig is not None}

    def grid(self, grid_id: str) -> GridIntensity:
        return next(g for g in self.grids if g.id == grid_id)

    def region(self, region_id: str) -> Region:
        return next(r for r in self.regions if r.id == region_id)

    def region_of_currency(self, code: str) -> Region | None:
        """The region a scenario priced in `code` is taken to be in (None: no region says so)."""
        return next((r for r in self.regions if code in r.currencies), None)

    def electricity_of(self, region: Region | None) -> MoneyFigure:
        """The electricity price a plan in `region` defaults to: the region's, else the `energy:` default."""
        return (region.electricity_per_kwh if region is not None and region.electricity_per_kwh is not None
                else self.energy.electricity_per_kwh)

    def cite(self, fig: Figure) -> str:
        text = self.sources.get(fig.source, fig.source)
        return f"{text} ({fig.as_of.isoformat()})" if fig.as_of else text


class _AcceleratorFile(_Strict):
    accelerators: list[Accelerator]
    sources: dict[str, str]

    @model_validator(mode="after")
    def _sources_resolve(self):
        seen = set()
        for i, acc in enumerate(self.accelerators):
            if acc.id in seen:
                raise rule_error(Msg("errors.catalog.accelerator_twice.message", id=repr(acc.id)),
                                 Msg("errors.id_twice.fix"), f"accelerators[{i}].id")
            seen.add(acc.id)
            for field in (*FIGURES, *OPTIONAL_FIGURES, *DATES):
                if getattr(acc, field) is None and field in OPTIONAL_FIGURES:
                    continue
                if getattr(acc, field) is None:
                    raise rule_error(Msg("errors.catalog.figure_missing.message", field=field),
                                     Msg("errors.catalog.figure_missing.fix", field=field),
                                     f"accelerators[{i}].{field}")
                if getattr(acc, field).as_of is None:
                    raise rule_error(Msg("errors.catalog.as_of.message"), Msg("errors.catalog.as_of.fix"),
                                     f"accelerators[{i}].{field}.as_of")
                key = getattr(acc, field).source
                if key not in self.sources:
                    raise rule_error(Msg("errors.catalog.source.message", source=repr(key)),
                                     Msg("errors.catalog.source.fix"), f"accelerators[{i}].{field}.source")
        return self


class _ModelFile(_Strict):
    models: list[ModelPreset]


class FitValidation(_Strict):
    """Rows held out by source group (budget/plan/calibrate.py): the held-out rows and groups, the
    share within ±20% and the median |error| of the P50 (stack unknown), and the held-out relative
    errors themselves (predicted ÷ published GPU-hours − 1) per group, per rule, and their quantiles."""
    held_out: int
    sources: int                                   # source groups held out
    within: float                                  # the P50 (stack unknown), ±20%
    median_abs_error: float
    error_definition: str = ""
    groups_not_held_out: dict[str, str] = {}
    rules: dict[str, dict] = {}                     # rule -> pooled and by-group figures
    per_group: dict[str, dict] = {}                 # group -> rows, stack, figures per rule
    held_out_errors: dict[str, list[float]] = {}    # group -> the P50's (stack unknown) errors
    held_out_errors_typed: dict[str, list[float]] = {}
    held_out_stacks: dict[str, list[str]] = {}      # group -> each held-out row's stack
    quantiles: dict[str, dict] = {}                 # pooled / per stack -> P10, P50, P90 of the errors
    in_sample: dict[str, float] = {}


class EfficiencyFit(_Strict):
    """catalogs/efficiency.yaml: the step-time model's coefficients, fitted on the published
    throughput rows by budget/calibrate.py (`python -m budget.calibrate --write`), with the
    accelerators each fitted architecture covers and how well the fit predicts held-out sources."""
    source: str
    as_of: dt.date
    rows: int
    architectures: dict[str, list[str]]      # architecture -> accelerator ids sharing its kernels
    matmul_factor: dict[str, Figure]          # per architecture (only those with rows)
    width_factor: Figure
    attention_factor: Figure
    dp_exposed: Figure
    zero3_exposed: Figure
    immaturity_factor: Figure
    attention_immaturity_factor: Figure
    immaturity_cap_years: Figure
    unfitted_reference: str                   # the accelerator an unfitted one is scaled from
    validation: FitValidation
    # issue 25: the compute-time factor per stack (fallbacks applied), ρ for FP8/FP4 GEMMs, the
    # full-run allowance per maturity, and what each rests on
    stack_factor: dict[str, Figure] = {}
    fp8_gemm_realised: Figure | None = None
    card_allowance: dict[str, Figure] = {}
    full_runs: dict[str, dict] = {}

    def figure(self, name: str) -> Figure | None:
        """A coefficient by its input name (budget/model/declare.py FITTED_COEFFICIENTS)."""
        for prefix, table in (("stack_factor_", self.stack_factor), ("card_allowance_", self.card_allowance)):
            if name.startswith(prefix):
                return table.get(name.removeprefix(prefix))
        return getattr(self, name, None)

    def matmul_factor_of(self, accelerator_id: str) -> float | None:
        for arch, ids in self.architectures.items():
            if accelerator_id in ids and arch in self.matmul_factor:
                return self.matmul_factor[arch].value
        return None


class ErrorSpread(_Strict):
    """Held-out step-time errors as factors on the step time: P10, P50, P90."""
    rows: int
    groups: int
    low: Figure
    median: Figure
    high: Figure


class ModelError(_Strict):
    """catalogs/model_error.yaml (issue 25): how wrong the step-time model has been on source
    groups it was not fitted on, written by `python -m budget.plan.uncertainty --write`: the
    spread of the range for a plan with the fitted model, and for one with a typed utilisation
    (a constant-MFU rule's), with the nested calibration test's figures."""
    source: str
    as_of: dt.date
    sources: dict[str, str]
    fitted: ErrorSpread
    by_stack: dict[str, ErrorSpread] = {}     # a stated stack's own, where rows of two groups measured it
    constant_mfu: ErrorSpread
    calibration: dict


@dataclass(frozen=True)
class Catalog:
    accelerators: tuple[Accelerator, ...]
    sources: dict[str, str]
    models: tuple[ModelPreset, ...]
    prices: PriceCatalog | None = None
    efficiency: EfficiencyFit | None = None
    model_error: ModelError | None = None

    def accelerator(self, acc_id: str) -> Accelerator:
        for acc in self.accelerators:
            if acc.id == acc_id:
                return acc
        raise KeyError(acc_id)

    def model(self, preset_id: str) -> ModelPreset:
        for m in self.models:
            if m.id == preset_id:
                return m
        raise KeyError(preset_id)

    def accelerator_ids(self) -> list[str]:
        return [a.id for a in self.accelerators]

    def model_ids(self) -> list[str]:
        return [m.id for m in self.models]

    def cite(self, key: str) -> str:
        return self.sources.get(key, key)

    def with_accelerators(self, rows) -> "Catalog":
        """This catalog with a scenario's accelerator rows added, or replacing rows of the same id."""
        if not rows:
            return self
        added = {r.id: _accelerator_from_row(r) for r in rows}
        kept = tuple(added.pop(a.id, a) for a in self.accelerators)
        return Catalog(kept + tuple(added.values()), self.sources, self.models, self.prices, self.efficiency,
                       self.model_error)


FIGURES = ("peak_bf16_tflops", "hbm_gb", "gpus_per_node", "intra_node_gb_per_s",
           "inter_node_gbit_per_s", "typical_mfu", "tdp_w")
# Figures an entry has only where they are published (each then sourced and dated like the rest).
OPTIONAL_FIGURES = ("peak_fp8_tflops", "peak_fp4_tflops", "scale_up_domain")
# Dated (not numeric) figures every catalog entry has, sourced like the rest.
DATES = ("architecture_launched",)


def _accelerator_from_row(row) -> Accelerator:
    """A scenario's `catalog.accelerators` row (flat numbers, one source) as a catalog entry."""
    figures = {f: Figure(value=float(getattr(row, f)), source=row.source) for f in (*FIGURES, *OPTIONAL_FIGURES)
               if getattr(row, f, None) is not None}
    return Accelerator(id=row.id, name=row.name, vendor=row.vendor or "", **figures)


def read_bundled(path: Path):
    """A catalog file shipped with the package, read by libyaml (when PyYAML has it) with the
    strict loader's duplicate-key check; anything libyaml refuses or doubts is read again by the
    strict loader (errors.load_yaml), whose message names the line. Only the bundled files come
    this way: a folder given by a caller is read by load_yaml alone (depth limit and all)."""
    if _CStrictLoader is None:
        return load_yaml(path, CatalogError)
    try:
        raw = path.read_bytes()
        if len(raw) <= MAX_YAML_BYTES:   # parsed once, then from budget/cache.py (issue 14)
            from ..core.cache import cached
            return cached(raw, "read_bundled: libyaml, no duplicate keys",  # i18n: not text (a cache key)
                          lambda: yaml.load(raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n"),
                                            Loader=_CStrictLoader))
    except Exception:    # noqa: BLE001 -- load_yaml below reports it in the user's terms
        pass
    return load_yaml(path, CatalogError)


def _c_strict_loader():
    base = getattr(yaml, "CSafeLoader", None)
    if base is None:
        return None
    loader = type("_CStrictLoader", (base,), {})
    loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_no_duplicates)
    return loader


_CStrictLoader = _c_strict_loader()


def _validated(path: Path, cls, bundled: bool = False):
    data = read_bundled(path) if bundled else load_yaml(path, CatalogError)
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        raise CatalogError(path, problems_from_validation(exc, cls)) from None


def load_catalog(folder: Path | None = None) -> Catalog:
    bundled = not folder
    folder = Path(folder) if folder else data_dir("catalogs")
    accs = _validated(folder / "accelerators.yaml", _AcceleratorFile, bundled)
    models = _validated(folder / "models.yaml", _ModelFile, bundled)
    if len({m.id for m in models.models}) != len(models.models):
        raise CatalogError(folder / "models.yaml", [Problem("models", Msg("errors.catalog.model_twice.message"),
                                                            Msg("errors.id_twice.fix"))])
    prices = _validated(folder / "prices.yaml", _PriceFile, bundled)
    acc_ids = {a.id for a in accs.accelerators}
    for section in ("rental", "purchase"):
        for i, row in enumerate(getattr(prices, section)):
            if row.accelerator not in acc_ids:
                raise CatalogError(folder / "prices.yaml", [Problem(
                    f"{section}[{i}].accelerator",
                    Msg("errors.catalog.no_accelerator.message", id=repr(row.accelerator)),
                    Msg("errors.catalog.no_accelerator.fix"))])
    price_catalog = PriceCatalog(tuple(prices.rental), tuple(prices.purchase), tuple(prices.grid_intensity),
                                 prices.energy, prices.ownership, dict(prices.fx_rates), dict(prices.sources),
                                 tuple(prices.regions))
    efficiency = (_validated(folder / "efficiency.yaml", EfficiencyFit, bundled)
                  if (folder / "efficiency.yaml").exists() else None)
    model_error = (_validated(folder / "model_error.yaml", ModelError, bundled)
                   if (folder / "model_error.yaml").exists() else None)
    return Catalog(tuple(accs.accelerators), dict(accs.sources), tuple(models.models), price_catalog, efficiency,
                   model_error)
