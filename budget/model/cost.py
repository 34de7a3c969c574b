"""Cost (the Cost sheet): exchange rates, GPU rental on each tier, energy and carbon, the other
runs, an owned cluster, storage and staffing, the total and the dates spending runs to."""

from __future__ import annotations

from ..formula.expr import AND, EXP, IF, ISNUMBER, LN, MAX, MIN, NOT, SUMPRODUCT, Blanks, Expr, Lookup, Ref, Text
from .declare import Inputs
from .lineitems import ModelBuilder
from .tables import FX_TABLE, acc

# Each conversion factor into the plan's currency and the currency cell it converts from.
FX_FACTORS = (("fx_gpu", "price_currency"), ("fx_storage", "storage_price_currency"),
              ("fx_node", "node_price_currency"), ("fx_ops", "ops_currency"),
              ("fx_electricity", "electricity_currency"), ("fx_staff", "staff_currency"),
              ("fx_plausibility", "plausibility_currency"))

# The lines of the subtotal, in the order the Cost sheet, the Summary, the reports and the
# Cashflow sheet show them; what the total adds after them; and the memo lines beside them.
COST_LINES = ("cluster_cost", "experiment_cost", "rollback_cost", "post_training_cost", "serving_cost",
              "network_cost", "storage_cost", "staffing_cost")
AFTER_SUBTOTAL = ("vat_in_total",)
# the flat buffer is a memo (issue 25): the ask is a percentile of the total, not the total plus
# a buffer, so the buffer is shown with the percentile it would cover, never added
MEMO_LINES = ("buffer_cost", "buffered_total_cost", "rental_cost", "rental_gap_cost", "billed_rental_cost",
              "reserved_unused_cost", "energy_cost_equivalent", "vat_recoverable_memo")


def _fx(currency_input: str) -> Expr:
    """Units of the plan's currency per unit of the currency `currency_input` names: both rates
    from the FX table, so the table may be quoted against any one currency."""
    return (Lookup(FX_TABLE, "rate", Ref(currency_input))
            / Lookup(FX_TABLE, "rate", Ref("currency")))


def cost(b: ModelBuilder, i: Inputs) -> None:
    """The Cost sheet, section by section: exchange rates, GPU rental, energy and the other runs,
    an owned cluster, the cost lines, the total and the dates spending runs to."""
    b.sheet("Cost", "exchange_rates")
    fx = {}
    for name, currency in FX_FACTORS:
        fx[name] = b.item(name, "×", _fx(currency))
    _gpu_rental(b, i, fx)
    _energy_and_other_runs(b, i, fx)
    _owned_cluster(b, i, fx)
    _cost_lines(b, i, fx)
    _total_and_cashflow(b, i)


def _gpu_rental(b: ModelBuilder, i: Inputs, fx: dict[str, Expr]) -> None:
    """The GPU rates on each tier, and what renting the cluster bills (a reserved term's unused hours too)."""
    r = Ref
    b.section("gpu_rates")
    # an owned cluster may have no rental price (issue 28): its rates are then 0 and the rental
    # memo lines blank ("", the same in every language; their notes and the report say why), not
    # a 0 that looks like a price
    priced = ISNUMBER(i.price_per_gpu_hour)
    no_price = Text("")
    gpu_rate = b.item("gpu_rate", "currency/GPU-hour", IF(priced, i.price_per_gpu_hour * fx["fx_gpu"], 0))
    on_demand = b.item("on_demand_rate", "currency/GPU-hour",
                       IF(ISNUMBER(i.on_demand_per_gpu_hour), i.on_demand_per_gpu_hour * fx["fx_gpu"],
                          gpu_rate))
    spot = i.price_tier.eq("spot")
    reserved = i.price_tier.eq("reserved")
    tier_rate = b.item("tier_rate", "currency/GPU-hour", IF(spot, gpu_rate * (1 - i.spot_discount), gpu_rate))

    b.section("gpu_rental")
    b.item("rental_cost", "currency", IF(priced, r("gpu_hours") * tier_rate, no_price))
    # evaluation bills its own GPUs, not the cluster's (issue 28; the same when they are the cluster)
    billed_h = b.item("billed_gpu_hours", "GPU-h",
                      r("reserved_gpus") * r("billed_days") * 24
                      - (r("reserved_gpus") - r("evaluation_gpus_used")) * r("evaluation_days") * 24
                      + r("card_allowance_billed_only_gpu_hours"))
    committed = b.item("committed_gpus", "GPUs",
                       IF(ISNUMBER(i.reserved_committed_gpus), i.reserved_committed_gpus, r("reserved_gpus")))
    term_h = b.item("reserved_term_hours", "hours", i.reserved_term_months * i.days_per_year / 12 * 24)
    committed_h = b.item("committed_gpu_hours", "GPU-h", IF(reserved, committed * term_h, 0))
    used_h = b.item("committed_gpu_hours_used", "GPU-h",
                    IF(reserved, MIN(r("reserved_gpus"), committed) * MIN(r("billed_days") * 24, term_h), 0))
    over_h = b.item("on_demand_gpu_hours", "GPU-h", IF(reserved, billed_h - used_h, 0))
    b.item("reserved_unused_share", "fraction", IF(committed_h > 0, 1 - used_h / committed_h, 0))
    b.item("billed_rental_cost", "currency",
           IF(priced, IF(reserved, committed_h * tier_rate + over_h * on_demand, billed_h * tier_rate), no_price))
    b.item("reserved_unused_cost", "currency", (committed_h - used_h) * tier_rate)
    b.item("reserved_upfront_cost", "currency", committed_h * tier_rate * i.reserved_upfront_share)


def _energy_and_other_runs(b: ModelBuilder, i: Inputs, fx: dict[str, Expr]) -> None:
    """Power, energy and carbon of the cluster's hours and of the runs beside the main one."""
    r = Ref
    billed_h = r("billed_gpu_hours")
    b.section("energy_and_carbon")
    tdp_kw = b.item("gpu_power_kw", "kW", IF(ISNUMBER(acc("tdp_w")), acc("tdp_w") / 1000, 0))
    overhead = b.item("node_overhead_kw_used", "kW",
                      IF(ISNUMBER(i.node_overhead_kw), i.node_overhead_kw,
                         IF(ISNUMBER(acc("node_overhead_kw")), acc("node_overhead_kw"), 0)))
    node_kw = b.item("node_power_kw", "kW", r("gpus_per_node") * tdp_kw + overhead)
    slot = node_kw / r("gpus_per_node")
    per_h = b.item("training_kwh_per_gpu_hour", "kWh", slot * i.draw_training * i.pue)
    idle_per_h = b.item("idle_kwh_per_gpu_hour", "kWh", slot * i.draw_idle * i.pue)
    wall_h = b.item("training_gpu_hours_wall", "GPU-h", i.gpu_count * r("stretched_training_days") * 24)
    idle_h = b.item("idle_gpu_hours", "GPU-h", MAX(0, billed_h - wall_h))
    b.item("cluster_nodes", "nodes", r("reserved_gpus") / r("gpus_per_node"))
    cluster_mwh = b.item("cluster_energy_mwh", "MWh", (wall_h * per_h + idle_h * idle_per_h) / 1000)
    flops_per_gpu_h = b.item("flops_per_gpu_hour", "FLOP", r("effective_tflops") * i.flops_per_tflop * 3600)

    b.section("other_runs")
    val_n = b.item("validation_params", "parameters", MIN(i.validation_model_params, r("model_params")))
    val_h = b.item("validation_gpu_hours", "GPU-h",
                   i.flops_per_param_token * val_n * i.validation_tokens / flops_per_gpu_h)
    sca_n = b.item("scaling_params", "parameters", MIN(i.scaling_model_params, r("model_params")))
    sca_h = b.item("scaling_gpu_hours", "GPU-h",
                   i.flops_per_param_token * sca_n * i.scaling_tokens / flops_per_gpu_h)
    exp_h = b.item("experiment_gpu_hours", "GPU-h", val_h + sca_h)
    rb_h = b.item("rollback_gpu_hours", "GPU-h",
                  r("model_flops_per_token") * r("rollback_tokens") / flops_per_gpu_h)
    post_h = b.item("post_training_gpu_hours", "GPU-h",
                    r("model_flops_per_token") * i.post_training_tokens / flops_per_gpu_h)
    extra_h = b.item("extra_gpu_hours", "GPU-h", exp_h + rb_h + post_h)
    extra_mwh = b.item("extra_energy_mwh", "MWh", extra_h * per_h / 1000)
    energy = b.item("energy_mwh", "MWh", cluster_mwh + extra_mwh)
    b.item("co2_tonnes", "t CO2e", energy * i.grid_intensity)
    power = b.item("electricity_rate", "currency/kWh", i.electricity_per_kwh * fx["fx_electricity"])
    b.item("energy_cost_equivalent", "currency", energy * 1000 * power)


def _owned_cluster(b: ModelBuilder, i: Inputs, fx: dict[str, Expr]) -> None:
    """An owned cluster's share of its capital, energy and operations over the billed days."""
    r = Ref
    billed_h, nodes = r("billed_gpu_hours"), r("cluster_nodes")
    cluster_mwh, power = r("cluster_energy_mwh"), r("electricity_rate")
    b.section("owned_cluster")
    years, rate = i.depreciation_years, i.cost_of_capital
    crf = b.item("capital_recovery_factor", "per year",
                 IF(rate > 0, rate / (1 - EXP(0 - years * LN(1 + rate))), 1 / years))
    b.item("node_price_used", "currency",
           IF(ISNUMBER(i.node_price), i.node_price * fx["fx_node"],
              IF(ISNUMBER(acc("node_price")), acc("node_price") * Lookup(FX_TABLE, "rate", acc("node_price_currency"))
                 / Lookup(FX_TABLE, "rate", i.currency), 0)))
    share = b.item("life_share", "fraction",
                   IF(ISNUMBER(i.life_share_override), i.life_share_override,
                      MIN(1, r("billed_days") / (years * i.days_per_year))))
    capital = b.item("capital_cost", "currency", nodes * r("node_price_used") * crf * years * share)
    owned_energy = b.item("owned_energy_cost", "currency", cluster_mwh * 1000 * power)
    ops = b.item("owned_ops_cost", "currency",
                 nodes * i.ops_per_node_month * fx["fx_ops"] * r("billed_days") * 12 / i.days_per_year)
    owned_cost = b.item("owned_cost", "currency", capital + owned_energy + ops)
    b.item("owned_rate_per_gpu_hour", "currency/GPU-hour", owned_cost / billed_h)


def _cost_lines(b: ModelBuilder, i: Inputs, fx: dict[str, Expr]) -> None:
    """The subtotal's lines (COST_LINES): the cluster, the other runs, network, storage and staffing."""
    r = Ref
    owned, reserved = i.ownership.eq("owned"), i.price_tier.eq("reserved")
    owned_cost, rental = r("owned_cost"), r("billed_rental_cost")
    on_demand, tier_rate = r("on_demand_rate"), r("tier_rate")
    billed_h, extra_h = r("billed_gpu_hours"), r("extra_gpu_hours")
    exp_h, rb_h, post_h = r("experiment_gpu_hours"), r("rollback_gpu_hours"), r("post_training_gpu_hours")
    b.section("compute")
    b.item("cluster_cost", "currency", IF(owned, owned_cost, rental))
    compute_rate = b.item("compute_rate", "currency/GPU-hour",
                          IF(owned, r("owned_rate_per_gpu_hour"), IF(reserved, on_demand, tier_rate)))
    b.item("rental_gap_cost", "currency",
           IF(ISNUMBER(i.price_per_gpu_hour), rental - r("rental_cost"), Text("")))
    b.item("experiment_cost", "currency", exp_h * compute_rate)
    b.item("rollback_cost", "currency", rb_h * compute_rate)
    b.item("post_training_cost", "currency", post_h * compute_rate)
    b.item("serving_cost", "currency",
           i.serving_gpus * i.serving_months * i.days_per_year / 12 * 24
           * IF(ISNUMBER(i.serving_per_gpu_hour), i.serving_per_gpu_hour * fx["fx_gpu"],
                compute_rate))
    b.item("network_cost", "currency", (billed_h + extra_h) * i.network_per_gpu_hour * fx["fx_gpu"])

    b.section("storage")
    months = b.item("storage_months_used", "months",
                    IF(ISNUMBER(i.storage_months), i.storage_months, r("project_months")))
    gbm = b.item("storage_gb_months", "GB-months", (r("dataset_gb") + r("checkpoint_storage_gb")) * months)
    b.item("storage_cost", "currency", gbm * i.price_per_gb_month * fx["fx_storage"])

    b.section("staffing")
    blank_months = Blanks(i.staff_months)
    b.item("staff_person_months", "person-months",
           SUMPRODUCT(i.staff_headcount, i.staff_months)
           + SUMPRODUCT(i.staff_headcount, blank_months) * r("project_months"))
    b.item("staffing_cost", "currency",
           (SUMPRODUCT(i.staff_headcount, i.staff_monthly_cost, i.staff_months)
            + SUMPRODUCT(i.staff_headcount, i.staff_monthly_cost, blank_months)
            * r("project_months")) * i.staffing_factor * fx["fx_staff"])


def _total_and_cashflow(b: ModelBuilder, i: Inputs) -> None:
    """The total (VAT in or a memo), the flat buffer's memo, and the dates spending runs to."""
    r = Ref
    owned, reserved = i.ownership.eq("owned"), i.price_tier.eq("reserved")
    cluster, experiments = r("cluster_cost"), r("experiment_cost")
    rollback, post, serving = r("rollback_cost"), r("post_training_cost"), r("serving_cost")
    network, storage, staffing = r("network_cost"), r("storage_cost"), r("staffing_cost")
    months = r("storage_months_used")
    b.section("total")
    subtotal = b.item("subtotal_cost", "currency",
                      cluster + experiments + rollback + post + serving + network + storage + staffing)
    vat = b.item("vat_cost", "currency", (subtotal - staffing) * i.vat_rate)
    vat_in = b.item("vat_in_total", "currency", IF(i.vat_recoverable.eq("yes"), 0, vat))
    b.item("vat_recoverable_memo", "currency", IF(i.vat_recoverable.eq("yes"), vat, 0))
    # the point estimate: no contingency in it (the ask, a percentile of it, is the contingency)
    total = b.item("total_cost", "currency", subtotal + vat_in)
    b.item("cost_per_gpu_hour_all_in", "currency/GPU-h", total / r("gpu_hours"))
    buffer = b.item("buffer_cost", "currency", total * i.buffer_rate)
    b.item("buffered_total_cost", "currency", total + buffer)
    b.section("cashflow")
    res_start = b.item("reservation_start", "date", r("training_start") + i.queue_days)
    held = MAX(r("project_months"), months, i.staff_months)   # blank staff months: the project's
    end = b.item("spend_end", "date",
                 MAX(r("project_end"), i.start_date + held * i.days_per_year / 12,
                     res_start + IF(AND(reserved, NOT(owned)), i.reserved_term_months * i.days_per_year / 12, 0),
                     r("deployment_start") + i.serving_months * i.days_per_year / 12))
    b.item("spend_months", "months", (end - i.start_date) * 12 / i.days_per_year)
    b.item("rental_share", "fraction",
           IF(subtotal > 0, (cluster + experiments + rollback + post) / subtotal, 0))
