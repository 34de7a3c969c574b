"""The cost sections: amounts and their currencies (`Price`), the GPU price and its tier with the
reserved and spot terms (`prices`), an owned cluster's capital and operations (`owned`), and
energy and carbon (`energy`)."""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BeforeValidator, Field, model_validator

from ...core.errors import Msg, rule_error
from .base import GpuCount, Money, Section, not_bool, number


Currency = Annotated[str, Field(pattern=r"^[A-Z]{3}$")]


def as_amount(value):
    """A price is a number in the scenario's currency, or {amount, currency} in another."""
    value = not_bool(value)
    return {"amount": value} if isinstance(value, (int, float, str)) else value


class Price(Section):
    amount: Money
    currency: Currency | None = None      # None: the scenario's `prices.currency`


PriceIn = Annotated[Price, BeforeValidator(as_amount)]


# AWS Spot Instance Advisor's highest interruption-frequency band, ">20%" of instances a month,
# where GPU instances sit: 20% of an 8-GPU instance's ~730 hours a month, per GPU-hour.
SPOT_PREEMPTION_RATE = 0.20 / (730 * 8)


class ReservedTerms(Section):
    """Committed capacity: billed for the whole term whatever the run uses."""
    term_months: number(ge=1, le=120) = 12.0
    upfront_share: number(ge=0, le=1) = 0.0
    committed_gpus: GpuCount | None = None     # default: the GPUs the plan reserves (with spares)


class SpotTerms(Section):
    """Preemptible capacity: a discount on the on-demand rate, and preemptions that stretch the run."""
    discount: number(ge=0, lt=1) = 0.6
    preemption_rate_per_gpu_hour: number(ge=0, lt=1) = SPOT_PREEMPTION_RATE


TIERS = ("on_demand", "reserved", "spot")


class PricesSection(Section):
    """`per_gpu_hour` or `catalog` (an id in catalogs/prices.yaml) prices the GPUs (an owned cluster
    may have neither: it then has no rental to compare, see `check_gpu_price`); amounts are in
    `currency` unless given as {amount, currency}; `fx_rates` says how many units of `currency`
    one unit of each other currency is worth (catalogs/prices.yaml has dated defaults)."""
    currency: Currency = "USD"
    fx_rates: dict[Currency, number(gt=0, le=1e9)] = {}
    catalog: Annotated[str, Field(pattern=r"^[a-z0-9_]{1,64}$")] | None = None
    tier: Literal["on_demand", "reserved", "spot"] | None = None    # default: the catalog row's, else on_demand
    per_gpu_hour: PriceIn | None = None
    on_demand_per_gpu_hour: PriceIn | None = None
    reserved: ReservedTerms = ReservedTerms()
    spot: SpotTerms = SpotTerms()
    storage_per_gb_month: PriceIn = Price(amount=0.023, currency="USD")
    network: Union[Literal["included"], Money] = "included"
    vat_rate: number(ge=0, le=1) = 0.0
    vat_recoverable: bool = False

    @model_validator(mode="after")
    def _one_gpu_price(self):
        if self.per_gpu_hour is not None and self.catalog is not None:
            raise rule_error(Msg("errors.scenario.two_gpu_prices.message"),
                             Msg("errors.scenario.two_gpu_prices.fix"), "catalog")
        return self


def check_gpu_price(prices: PricesSection, ownership: str) -> None:
    """A rented cluster needs a GPU price; an owned one (issue 28) plans without one, its rental
    memo lines then saying there is no rental price to compare."""
    if ownership != "owned" and prices.per_gpu_hour is None and prices.catalog is None:
        raise rule_error(Msg("errors.scenario.no_gpu_price.message"),
                         Msg("errors.scenario.no_gpu_price.fix"), "prices.per_gpu_hour")


class OwnedSection(Section):
    """An owned cluster: charged amortised capital, energy and operations (defaults:
    catalogs/prices.yaml, the purchase row of the accelerator)."""
    node_price: PriceIn | None = None
    depreciation_years: number(ge=0.5, le=30) | None = None
    cost_of_capital: number(ge=0, le=1) | None = None
    life_share: number(gt=0, le=1) | None = None       # default: the project's billed days ÷ the life
    ops_per_node_month: PriceIn | None = None


class EnergySection(Section):
    """Energy and carbon of every plan; defaults from catalogs/prices.yaml (`energy`)."""
    pue: number(ge=1, le=5) | None = None
    grid: Annotated[str, Field(pattern=r"^[a-z0-9_]{1,64}$")] | None = None
    grid_intensity: number(ge=0, le=5) | None = None        # kg CO2e per kWh; overrides `grid`
    draw_training: number(ge=0, le=2) | None = None
    draw_idle: number(ge=0, le=1) | None = None
    node_overhead_kw: number(ge=0, le=1000) | None = None
    electricity_per_kwh: PriceIn | None = None
