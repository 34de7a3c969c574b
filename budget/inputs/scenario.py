"""Scenario files: parse the YAML, validate it strictly, name every problem by its field path.

`budget.inputs.options.load_scenario(path, catalog)` returns a frozen `Scenario` or raises `ScenarioError`.
Unknown keys are rejected; numbers carry their unit in the key; counts accept suffixes
("175B", "3T"). Rules that span fields or need the catalog live in model validators.

This module composes the sections (budget/inputs/schema/, a module per section with the rules
that concern it alone) into `Scenario`, and holds the rules that span sections or need the
catalog: its references, the prices and their currencies. The names other modules import from
here stay importable from here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, PrivateAttr, ValidationError, ValidationInfo, field_validator, model_validator

from .catalog import Catalog, Region
from ..core.errors import (Msg, Problem, ScenarioError, problems_from_validation, rule_error,
                           suggest)
from ..core.i18n import fmt
from .schema.approval import ApprovalSection, PlausibilitySection, UncertaintySection
from .schema.base import MAX_ROWS, LongText, SafeText, Section, character_problem, formula_lead, number
from .schema.constants import ConstantsSection
from .schema.efficiency import CalibrationSection, EfficiencySection, check_calibration
from .schema.job import JobSection, apply_job_defaults, check_job
from .schema.hardware import (PRECISIONS, CatalogSection, HardwareSection, MemorySection, ParallelismSection,
                              SizingSection, check_layout, check_precision, check_utilisation, precision_note)
from .schema.model import ModelSection, resolve_shape
from .schema.prices import EnergySection, OwnedSection, PricesSection, check_gpu_price
from .schema.schedule import (LLAMA3_INTERRUPTION_RATE, ReliabilitySection, ScheduleSection, StorageSection,
                              check_deadlines)
from .schema.staffing import StaffRole
from .schema.training import DataSection, RunsSection, Stage, check_stages

# Imported from here by other modules (plan, bind, options, sheets, tests): kept here so their
# imports need not follow the schema into its sections.
__all__ = ["LLAMA3_INTERRUPTION_RATE", "PRECISIONS", "Scenario", "character_problem", "formula_lead",
           "fx_table", "language_of", "precision_note", "price_currencies", "region_of", "resolved_shape",
           "validate_scenario"]


class Scenario(Section):
    name: SafeText
    description: LongText = ""
    # The language of the workbook, the reports and the messages (budget/messages/<lang>/);
    # the command line's --lang wins over it.
    language: str = "en"
    # issue 28: pretraining, continued pretraining, SFT or LoRA, each with its own defaults
    job: JobSection = JobSection()
    model: ModelSection
    data: DataSection
    hardware: HardwareSection
    parallelism: ParallelismSection = ParallelismSection()
    sizing: SizingSection = SizingSection()
    efficiency: EfficiencySection = EfficiencySection()
    memory: MemorySection = MemorySection()
    prices: PricesSection
    ownership: Literal["rented", "owned"] = "rented"
    owned: OwnedSection = OwnedSection()
    energy: EnergySection = EnergySection()
    # issue 28: where the cluster runs (an id of catalogs/prices.yaml `regions`): its grid, electricity
    # price and queue are the defaults; absent, the region the currency names (region_of)
    region: Annotated[str, Field(pattern=r"^[a-z0-9_]{1,64}$")] | None = None
    runs: RunsSection = RunsSection()
    storage: StorageSection = StorageSection()
    schedule: ScheduleSection = ScheduleSection()
    reliability: ReliabilitySection = ReliabilitySection()
    staffing: list[StaffRole] = []
    stages: list[Stage] = []
    calibration: CalibrationSection = CalibrationSection()
    buffer_rate: number(ge=0, le=1) = 0.20
    approval: ApprovalSection = ApprovalSection()
    plausibility: PlausibilitySection = PlausibilitySection()
    constants: ConstantsSection = ConstantsSection()
    uncertainty: UncertaintySection = UncertaintySection()
    catalog: CatalogSection = CatalogSection()
    sources: dict[SafeText, LongText] = {}
    # Alternatives to compare: raw mappings of overrides, each merged onto this scenario and
    # validated as a scenario of its own by budget/inputs/options.py (the base plan ignores them).
    options: list[dict] = []

    # the paths the job mode's defaults filled (the Inputs sheet's source column says so)
    _job_defaulted: frozenset = PrivateAttr(default_factory=frozenset)

    @model_validator(mode="wrap")
    @classmethod
    def _job_defaults(cls, data, handler):
        """The job mode's defaults, on the keys the scenario leaves out (schema/job.py)."""
        data, filled = apply_job_defaults(data)
        s = handler(data)
        s._job_defaulted = frozenset(filled)
        return s

    @property
    def job_defaulted(self) -> frozenset:
        return self._job_defaulted

    @field_validator("language")
    @classmethod
    def _known_language(cls, lang):
        from ..core.i18n import languages
        if lang not in languages():
            raise rule_error(Msg("errors.scenario.language.message", language=repr(lang)),
                             Msg("errors.scenario.language.fix", languages=", ".join(languages())))
        return lang

    @field_validator("staffing", "stages")
    @classmethod
    def _few_rows(cls, rows, info: ValidationInfo):
        if len(rows) > MAX_ROWS:       # the message ids: errors.scenario.{staffing_roles,stages_rows}
            key = {"staffing": "staffing_roles", "stages": "stages_rows"}[info.field_name]
            raise rule_error(Msg(f"errors.scenario.{key}.message", limit=MAX_ROWS),
                             Msg(f"errors.scenario.{key}.fix", limit=MAX_ROWS))
        return rows

    @model_validator(mode="after")
    def _rules(self, info: ValidationInfo):
        catalog: Catalog | None = (info.context or {}).get("catalog")
        check_gpu_price(self.prices, self.ownership)
        if catalog is not None:
            catalog = catalog.with_accelerators(self.catalog.accelerators)
            _check_catalog_refs(self, catalog)
            check_precision(self.hardware, self.memory, catalog)
        shape = resolved_shape(self, catalog)
        if shape is not None:
            check_layout(self.parallelism, self.hardware, shape)
        check_stages(self.stages, self.data, self.hardware, self.parallelism)
        check_calibration(self.calibration, self.parallelism, self.hardware, shape)
        check_utilisation(self.hardware)
        check_deadlines(self)
        check_job(self)
        return self


def resolved_shape(s: Scenario, catalog: Catalog | None) -> dict | None:
    """The model shape after applying overrides to the preset; None if it cannot be known yet."""
    return resolve_shape(s.model, s.data.global_batch_sequences, catalog)


def fx_table(s: Scenario, catalog: Catalog) -> dict[str, tuple[float, str]]:
    """Units of the scenario's currency per unit of each currency it can convert: its own
    `prices.fx_rates`, else the catalog's dated rates per US dollar, crossed through the dollar."""
    own, lang = s.prices.currency, s.language
    out = {own: (1.0, fmt("scenario.fx.own", lang))}
    prices = catalog.prices
    per_usd = {"USD": (1.0, "")}
    if prices is not None:
        per_usd.update({code: (fig.value, prices.cite(fig)) for code, fig in prices.fx_per_usd.items()})
    given = s.prices.fx_rates
    if "USD" in given:
        own_per_usd, how = given["USD"], fmt("scenario.fx.given", lang, code="USD")
    elif own in per_usd:
        own_per_usd, how = per_usd[own][0], fmt("scenario.fx.catalog", lang, code=own, cite=per_usd[own][1])
    else:
        own_per_usd = None
    if own_per_usd is not None:
        for code, (rate, cite) in per_usd.items():
            if code != own:
                out[code] = (own_per_usd / rate,
                             fmt("scenario.fx.crossed", lang, how=how, code=code, cite=cite)
                             if code != "USD" else how)
    for code, rate in given.items():
        if code != own:
            out[code] = (float(rate), fmt("scenario.fx.given", lang, code=code))
    return out


def region_of(s: Scenario, catalog: Catalog) -> tuple[Region | None, bool]:
    """The region whose catalog figures a plan defaults to, and whether it was inferred: the
    scenario's `region:`, else the region whose currencies hold `prices.currency` (CNY: cn, EUR:
    eu; USD names none, a dollar price list being no sign of where the cluster runs), else none
    (the `energy:` defaults)."""
    prices = catalog.prices
    if prices is None:
        return None, False
    if s.region is not None:
        return prices.region(s.region), False
    region = prices.region_of_currency(s.prices.currency)
    return region, region is not None


_MONEY_PATHS: list = []     # [model, its inputs, their amounts' (path, parts)]: the last model's


def _money_paths(model) -> list[tuple[str, list[str]]]:
    """The scenario paths of the model's amounts (money inputs), each with its parts, in order."""
    if not (_MONEY_PATHS and _MONEY_PATHS[0] is model and _MONEY_PATHS[1] == len(model.inputs)):
        _MONEY_PATHS[:] = [model, len(model.inputs), [(d.path, d.path.split(".")) for d in model.inputs.values()
                                                       if d.codec == "money"]]
    return _MONEY_PATHS[2]


def price_currencies(s: Scenario, catalog: Catalog) -> dict[str, str]:
    """Each currency the scenario's prices are in (catalog defaults are in theirs), with the
    field that brings it in."""
    from ..model.model import build_model    # the model says which inputs are amounts

    out: dict[str, str] = {}
    for path, parts in _money_paths(build_model()):
        price: object = s
        for part in parts:
            price = getattr(price, part, None)
        if price is not None and price.currency:
            out.setdefault(price.currency, path)
    for n, role in enumerate(s.staffing):
        if role.monthly_cost.currency:
            out.setdefault(role.monthly_cost.currency, f"staffing[{n}].monthly_cost")
    if catalog.prices is not None:
        region = region_of(s, catalog)[0]
        for path, fig in catalog.prices.default_amounts(s.hardware.accelerator, s.prices.catalog, region).items():
            out.setdefault(fig.currency, path)
    return out


def _check_prices(s: Scenario, catalog: Catalog) -> None:
    prices = catalog.prices
    if prices is None:
        return
    if s.prices.catalog is not None:
        ids = [r.id for r in prices.rental]
        if s.prices.catalog not in ids:
            # the prices of the chosen accelerator are the ones worth listing
            acc = s.hardware.accelerator
            own = [r.id for r in prices.rental if r.accelerator == acc]
            hint = suggest(s.prices.catalog, ids)
            fix = (Msg("errors.scenario.price_id.fix", hint=hint, accelerator=acc, ids=", ".join(own)) if own
                   else Msg("errors.scenario.price_id.fix_none", hint=hint, accelerator=acc))
            raise rule_error(Msg("errors.scenario.price_id.message", id=repr(s.prices.catalog)), fix,
                             "prices.catalog")
        row = prices.rental_price(s.prices.catalog)
        if row.accelerator != s.hardware.accelerator:
            raise rule_error(Msg("errors.scenario.price_other_accelerator.message", id=row.id,
                                 priced=row.accelerator, accelerator=s.hardware.accelerator),
                             Msg("errors.scenario.price_other_accelerator.fix",
                                 accelerator=s.hardware.accelerator),
                             "prices.catalog")
    if s.energy.grid is not None and s.energy.grid not in {g.id for g in prices.grids}:
        ids = [g.id for g in prices.grids]
        raise rule_error(Msg("errors.scenario.grid.message", id=repr(s.energy.grid)),
                         Msg("errors.scenario.grid.fix", hint=suggest(s.energy.grid, ids), ids=", ".join(ids)),
                         "energy.grid")
    if s.region is not None and s.region not in {r.id for r in prices.regions}:
        ids = [r.id for r in prices.regions]
        raise rule_error(Msg("errors.scenario.region.message", id=repr(s.region)),
                         Msg("errors.scenario.region.fix", hint=suggest(s.region, ids), ids=", ".join(ids)),
                         "region")
    if s.ownership == "owned" and s.owned.node_price is None and prices.purchase_for(s.hardware.accelerator) is None:
        raise rule_error(Msg("errors.scenario.purchase_price.message", accelerator=s.hardware.accelerator),
                         Msg("errors.scenario.purchase_price.fix"), "owned.node_price")
    own = s.prices.currency
    if s.prices.fx_rates.get(own, 1.0) != 1.0:
        raise rule_error(Msg("errors.scenario.own_rate.message", currency=own),
                         Msg("errors.scenario.own_rate.fix", currency=own), f"prices.fx_rates.{own}")
    rates = fx_table(s, catalog)
    for code, path in price_currencies(s, catalog).items():
        if code not in rates:
            raise rule_error(Msg("errors.scenario.no_rate.message", code=code, path=path, currency=own),
                             Msg("errors.scenario.no_rate.fix", code=code, currency=own), "prices.fx_rates")


def _check_catalog_refs(s: Scenario, catalog: Catalog) -> None:
    ids = catalog.accelerator_ids()
    if s.hardware.accelerator not in ids:
        hint = suggest(s.hardware.accelerator, ids)
        raise rule_error(Msg("errors.scenario.accelerator.message", id=repr(s.hardware.accelerator)),
                         Msg("errors.scenario.accelerator.fix", hint=hint, ids=", ".join(ids)),
                         "hardware.accelerator")
    if s.model.preset is not None and s.model.preset not in catalog.model_ids():
        ids = catalog.model_ids()
        hint = suggest(s.model.preset, ids)
        raise rule_error(Msg("errors.scenario.preset.message", id=repr(s.model.preset)),
                         Msg("errors.scenario.preset.fix", hint=hint, ids=", ".join(ids)),
                         "model.preset")
    _check_prices(s, catalog)


def language_of(data: object) -> str | None:
    """The language a scenario's data names, when it names a known one (its messages are then
    printed in it, even when the rest of the scenario is wrong)."""
    from ..core.i18n import languages
    lang = data.get("language") if isinstance(data, dict) else None
    return lang if isinstance(lang, str) and lang in languages() else None


def validate_scenario(data: object, path: str | Path, catalog: Catalog) -> Scenario:
    """The scenario `data` holds, validated by the schema alone (its options are not merged and
    checked here: `budget.inputs.options.parse_scenario` does both)."""
    if data is None:
        raise ScenarioError(path, [Problem("", Msg("errors.scenario.empty.message"),
                                           Msg("errors.scenario.empty.fix"))])
    try:
        return Scenario.model_validate(data, context={"catalog": catalog, "base_dir": Path(path).parent})
    except ValidationError as exc:
        raise ScenarioError(path, problems_from_validation(exc, Scenario), language_of(data)) from None
