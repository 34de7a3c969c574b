"""The inputs that price the plan: the currency, GPU and storage prices, an owned cluster, energy
and carbon, the other runs (experiments, post-training, serving) and the staffing table."""

from __future__ import annotations

from .declare import OWNERSHIP, TIERS, YES_NO, Declare


def prices(d: Declare) -> None:
    """The plan's currency and the GPU, network, storage and VAT prices."""
    b, add, money, currency_of = d.b, d.add, d.money, d.currency_of
    b.input_section("currency")
    add("currency", "ISO 4217 code", kind="text", path="prices.currency", codec="text")
    b.input_section("gpu_prices")
    add("price_tier", "tier", kind="choice", choices=TIERS, path="prices.tier", codec="text")
    currency_of("price_currency")
    # blank only for an owned cluster given no rental price (issue 28): nothing to compare it with
    money("price_per_gpu_hour", "currency/GPU-hour", "prices.per_gpu_hour", "price_currency", minimum=0,
          optional=True)
    money("on_demand_per_gpu_hour", "currency/GPU-hour", "prices.on_demand_per_gpu_hour", "price_currency",
          minimum=0, optional=True)
    add("reserved_term_months", "months", minimum=0, positive=True, path="prices.reserved.term_months")
    add("reserved_upfront_share", "fraction", kind="fraction", minimum=0, maximum=1,
        path="prices.reserved.upfront_share")
    add("reserved_committed_gpus", "GPUs", kind="integer", minimum=0, optional=True,
        path="prices.reserved.committed_gpus", codec="int")
    add("spot_discount", "fraction", kind="fraction", minimum=0, maximum=0.999, path="prices.spot.discount")
    add("spot_preemption_rate_per_gpu_hour", "per GPU-hour", minimum=0,
        path="prices.spot.preemption_rate_per_gpu_hour")
    money("network_per_gpu_hour", "currency/GPU-hour", "prices.network", "price_currency",
          codec="included_or_price", minimum=0)

    b.input_section("other_prices")
    currency_of("storage_price_currency")
    money("price_per_gb_month", "currency/GB-month", "prices.storage_per_gb_month", "storage_price_currency",
          minimum=0)
    add("vat_rate", "fraction", kind="fraction", minimum=0, maximum=1, path="prices.vat_rate")
    add("vat_recoverable", "yes/no", kind="choice", choices=YES_NO, path="prices.vat_recoverable",
        codec="yesno")


def owned_cluster(d: Declare) -> None:
    """Rented or owned; an owned cluster's price, depreciation and operations."""
    b, add, money, currency_of = d.b, d.add, d.money, d.currency_of
    b.input_section("owned_cluster")
    add("ownership", "mode", kind="choice", choices=OWNERSHIP, path="ownership", codec="text")
    currency_of("node_price_currency")
    money("node_price", "currency/node", "owned.node_price", "node_price_currency", minimum=0, optional=True)
    add("depreciation_years", "years", minimum=0, positive=True, path="owned.depreciation_years")
    add("cost_of_capital", "fraction/year", kind="fraction", minimum=0, maximum=1,
        path="owned.cost_of_capital")
    add("life_share_override", "fraction", kind="fraction", minimum=0, maximum=1, positive=True,
        optional=True, path="owned.life_share")
    currency_of("ops_currency")
    money("ops_per_node_month", "currency/node-month", "owned.ops_per_node_month", "ops_currency", minimum=0)


def energy_and_carbon(d: Declare) -> None:
    """Power draw, PUE, grid intensity and the electricity price."""
    b, add, money, currency_of = d.b, d.add, d.money, d.currency_of
    b.input_section("energy_and_carbon")
    add("pue", "×", minimum=1, path="energy.pue")
    add("grid_intensity", "kg CO2e/kWh", minimum=0, path="energy.grid_intensity")
    add("draw_training", "fraction", kind="fraction", minimum=0, maximum=2, path="energy.draw_training")
    add("draw_idle", "fraction", kind="fraction", minimum=0, maximum=1, path="energy.draw_idle")
    add("node_overhead_kw", "kW/node", minimum=0, optional=True, path="energy.node_overhead_kw")
    currency_of("electricity_currency")
    money("electricity_per_kwh", "currency/kWh", "energy.electricity_per_kwh", "electricity_currency",
          minimum=0)


def other_runs(d: Declare) -> None:
    """The runs beside the main one: validation, scaling laws, rollbacks, post-training, serving."""
    b, add, money = d.b, d.add, d.money
    b.input_section("other_runs")
    add("validation_model_params", "parameters", minimum=1, path="runs.validation_params", codec="count")
    add("validation_tokens", "tokens", minimum=0, path="runs.validation_tokens", codec="count")
    add("scaling_model_params", "parameters", minimum=1, path="runs.scaling_params", codec="count")
    add("scaling_tokens", "tokens", minimum=0, path="runs.scaling_tokens", codec="count")
    add("rollbacks", "rollbacks", minimum=0, path="runs.rollbacks")
    add("rollback_steps", "steps", minimum=0, path="runs.rollback_steps")
    add("post_training_tokens", "tokens", minimum=0, path="runs.post_training_tokens", codec="count")
    add("serving_gpus", "GPUs", kind="integer", minimum=0, path="runs.serving_gpus", codec="int")
    add("serving_months", "months", minimum=0, path="runs.serving_months")
    money("serving_per_gpu_hour", "currency/GPU-hour", "runs.serving_per_gpu_hour", "price_currency",
          minimum=0, optional=True)


def staffing(d: Declare) -> None:
    """The staffing table."""
    b, add = d.b, d.add
    b.input_section("staffing")
    add("staff_currency", "ISO 4217 code", kind="text", codec="text")
    add("staff_role", "text", kind="range_text", path="staffing[].role", codec="text")
    add("staff_headcount", "people", kind="range", minimum=0, path="staffing[].headcount")
    add("staff_monthly_cost", "currency/month", kind="range", minimum=0, path="staffing[].monthly_cost",
        currency="staff_currency")
    add("staff_months", "months", kind="range", minimum=0, path="staffing[].months")
