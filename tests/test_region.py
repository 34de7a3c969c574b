"""Regional defaults (issue 28 item 2): where the cluster runs sets the grid intensity, the
electricity price and the queue a plan defaults to, from catalogs/prices.yaml `regions`, each
only where a cited source gives it and each overridable by the scenario's own keys; a plan in
yuan is taken to run in China unless it says otherwise, and says so. An owned cluster plans
without a rental price, its rental memo lines saying there is none to compare.

Given the seed's 175B plan on 512 H100 (or the bundled yuan plan) and one changed assumption,
the plan says this."""

from __future__ import annotations

import pytest

from budget.core.errors import ScenarioError
from budget.core.i18n import fmt
from budget.inputs.options import load_scenario, parse_scenario
from budget.plan.plan import build_plan
from budget.render.report import render_markdown
from support import ROOT, SCENARIOS, SEED_H100, plan_of, raw, with_changes

# The cited figures (catalogs/prices.yaml):
CHINA_GRID = 0.5366         # MEE and NBS, 2022 national average electricity CO2 factor (2024-12-20)
US_GRID = 0.390             # EIA: 0.86 lb CO2/kWh of US generation, 2022
EU_GRID = 0.214             # EEA: 58% below 1990's 510 gCO2e/kWh in 2023
FRANCE_GRID = 0.057         # Luccioni et al.: the Jean Zay cluster's grid (BLOOM)
WORLD_GRID = 0.481          # Ember via Statista: the 2023 world average
CHINA_POWER_USD = 0.088     # China Briefing: average industrial power rate, about US$0.088/kWh in 2024
US_POWER_USD = 0.0806       # EIA: US average industrial retail price in 2023
EU_POWER_EUR = 0.20         # Eurostat nrg_pc_205: EU non-household, 2nd half 2023, excl. VAT
CNY_PER_USD = 7.1920        # Federal Reserve H.10, 2024-02-02
QUEUE_DEFAULT_DAYS = 10     # the schedule's default; no region has a sourced queue figure


def seed(catalog, **changes):
    return plan_of(with_changes(raw(SEED_H100), changes), catalog, "gpt3-175b-h100")


@pytest.mark.parametrize("changes, grid, power, power_currency", [
    ({"prices.currency": "CNY"}, CHINA_GRID, CHINA_POWER_USD, "USD"),        # inferred: cn
    ({"prices.currency": "EUR"}, EU_GRID, EU_POWER_EUR, "EUR"),              # inferred: eu
    ({"region": "us"}, US_GRID, US_POWER_USD, "USD"),
    ({"region": "cn"}, CHINA_GRID, CHINA_POWER_USD, "USD"),                  # a dollar plan in China
    ({"region": "fr"}, FRANCE_GRID, US_POWER_USD, "USD"),                    # no French price: the default
    ({}, WORLD_GRID, US_POWER_USD, "USD"),                                   # USD infers no region
], ids=["cny-infers-cn", "eur-infers-eu", "region-us", "region-cn-in-usd", "region-fr", "usd-no-region"])
def test_the_region_sets_the_grid_and_the_electricity_price(catalog, changes, grid, power, power_currency):
    plan = seed(catalog, **changes)
    assert plan.inputs["grid_intensity"].value == grid
    assert plan.inputs["electricity_per_kwh"].value == power
    assert plan.inputs["electricity_currency"].value == power_currency
    assert plan.values["co2_tonnes"] == pytest.approx(plan.values["energy_mwh"] * grid)


def test_a_yuan_plan_pays_chinas_electricity_converted_to_yuan(catalog):
    """The China row is quoted in US dollars: the FX table converts it, live, into the plan's yuan."""
    v = seed(catalog, **{"prices.currency": "CNY"}).values
    assert v["fx_electricity"] == pytest.approx(CNY_PER_USD)
    assert v["electricity_rate"] == pytest.approx(CHINA_POWER_USD * CNY_PER_USD)     # 0.633 CNY/kWh
    assert v["energy_cost_equivalent"] == pytest.approx(v["energy_mwh"] * 1000 * CHINA_POWER_USD * CNY_PER_USD)


def test_the_bundled_yuan_plan_uses_chinas_grid_and_electricity(catalog):
    plan = build_plan(load_scenario(SCENARIOS / "gpt3-175b-h800-cny.yaml", catalog), catalog)
    assert plan.values["grid_intensity"] == CHINA_GRID
    assert plan.values["electricity_rate"] == pytest.approx(CHINA_POWER_USD * CNY_PER_USD)
    assert "China Briefing" in plan.inputs["electricity_per_kwh"].source


def _readme_yuan_plan() -> str:
    """The README's whole plan in yuan (the yaml block under "Regional defaults")."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("# a whole plan in yuan", 1)[1].split("\n", 1)[1]     # below its comment
    return block.split("```", 1)[0]


def test_a_new_yuan_plan_written_from_the_readme_runs_in_china(catalog):
    import yaml
    s = parse_scenario(yaml.safe_load(_readme_yuan_plan()), "yuan.yaml", catalog)
    plan = build_plan(s, catalog, curve=False)
    assert plan.values["grid_intensity"] == CHINA_GRID
    assert plan.values["electricity_rate"] == pytest.approx(CHINA_POWER_USD * CNY_PER_USD)
    assert "inferred from the currency CNY" in plan.region_note


@pytest.mark.parametrize("override, name, value", [
    ({"energy.grid_intensity": 0.3}, "grid_intensity", 0.3),
    ({"energy.grid": "world"}, "grid_intensity", WORLD_GRID),
    ({"energy.electricity_per_kwh": 0.45}, "electricity_per_kwh", 0.45),
    ({"schedule.queue_days": 3}, "queue_days", 3),
], ids=["grid-intensity", "grid-id", "electricity", "queue"])
def test_the_scenarios_own_keys_override_the_region(catalog, override, name, value):
    plan = seed(catalog, **{"prices.currency": "CNY", **override})
    assert plan.inputs[name].value == value
    assert "scenario gpt3-175b-h100.yaml" in plan.inputs[name].source


def test_an_inferred_region_is_said_in_the_inputs_and_the_report(catalog):
    plan = seed(catalog, **{"prices.currency": "CNY"})
    inferred = fmt("plan.bind.region_inferred_note_alone", "en")
    for name in ("grid_intensity", "electricity_per_kwh", "queue_days"):
        assert inferred in plan.inputs[name].note, name
        assert "region cn (China), inferred from prices.currency CNY" in plan.inputs[name].source, name
    assert plan.region_note.startswith("China (cn), inferred from the currency CNY: grid 0.5366 kg CO2/kWh")
    assert plan.region_note in render_markdown(plan)


def test_the_note_is_in_chinese_for_a_chinese_plan(catalog):
    plan = seed(catalog, **{"prices.currency": "CNY", "language": "zh"})
    assert "由货币 CNY 推断" in plan.region_note
    assert "地区由货币推断" in plan.inputs["grid_intensity"].note


def test_a_stated_region_carries_no_inference_note(catalog):
    plan = seed(catalog, region="cn")
    assert "inferred" not in plan.inputs["grid_intensity"].note
    assert "set by region in the scenario" in plan.region_note
    assert plan.inputs["grid_intensity"].source.startswith("scenario gpt3-175b-h100.yaml: region (China)")


def test_without_a_sourced_queue_figure_the_region_keeps_the_schedules_default_and_says_so(catalog):
    plan = seed(catalog, region="cn")
    assert plan.inputs["queue_days"].value == QUEUE_DEFAULT_DAYS
    assert "has no sourced queue figure for China" in plan.inputs["queue_days"].source
    assert "no sourced queue figure for China" in plan.region_note


def test_without_a_sourced_electricity_price_the_region_keeps_the_default_and_says_so(catalog):
    plan = seed(catalog, region="fr")
    assert "no sourced electricity price for France" in plan.inputs["electricity_per_kwh"].source
    assert "no sourced electricity price for France" in plan.region_note


def test_a_usd_plan_without_a_region_is_as_before(catalog):
    plan = seed(catalog)
    assert plan.region_note == ""
    assert plan.inputs["grid_intensity"].source.startswith("default (grid: World average)")


def test_an_unknown_region_is_refused_with_the_catalogs_ids(catalog):
    with pytest.raises(ScenarioError) as err:
        parse_scenario(with_changes(raw(SEED_H100), {"region": "china"}), "s.yaml", catalog)
    problem = err.value.problems[0]
    assert problem.path == "region" and problem.message == "unknown region 'china'"
    assert "world, us, cn, eu, fr" in problem.fix


# --- an owned cluster without a rental price ------------------------------------------------

def test_an_owned_cluster_plans_without_a_rental_price(catalog):
    plan = seed(catalog, **{"ownership": "owned", "prices.per_gpu_hour": None, "sources": {}})
    priced = seed(catalog, **{"ownership": "owned"})
    none = fmt("report.cost.no_rental_price", "en")
    assert plan.inputs["price_per_gpu_hour"].value is None
    # its blank memo lines are no figures on the Cost sheet, in Python as in LibreOffice
    assert plan.values["check_cost_sheet_closed"] == 0 and plan.values["check_rented_priced"] == 0
    for name in ("rental_cost", "billed_rental_cost", "rental_gap_cost"):
        assert plan.values[name] == "", name            # blank, not a 0 that looks like a price
        assert "blank: an owned cluster with no rental price to compare" in plan.model.items[name].note
    # the owned cluster's cost does not depend on what renting it would cost
    assert plan.values["total_cost"] == pytest.approx(priced.values["total_cost"])
    report = render_markdown(plan)
    for name in ("rental_cost", "billed_rental_cost", "rental_gap_cost"):
        assert f"| {plan.model.items[name].label} | {none} |" in report, name


def test_an_owned_chinese_plan_says_so_in_chinese(catalog):
    plan = seed(catalog, **{"ownership": "owned", "prices.per_gpu_hour": None, "sources": {}, "language": "zh"})
    assert "无租赁价格可供比较（自建集群；可用 prices.per_gpu_hour 或 prices.catalog 给出）" in render_markdown(plan)


def test_a_rented_cluster_without_a_price_is_still_refused(catalog):
    with pytest.raises(ScenarioError) as err:
        parse_scenario(with_changes(raw(SEED_H100), {"prices.per_gpu_hour": None}), "s.yaml", catalog)
    problem = err.value.problems[0]
    assert (problem.path, problem.message) == ("prices.per_gpu_hour", "no GPU price")
    assert problem.fix == "give prices.per_gpu_hour, or prices.catalog: an id from catalogs/prices.yaml"
