"""Money as it is really spent (issue 10): price tiers, owned clusters, energy and carbon,
currencies and VAT, and the lines the buffer used to hide — each given the seed's worked example
and one changed assumption, then, where a reviewer would edit the workbook, recalculated in
LibreOffice."""

from __future__ import annotations

import io

import openpyxl
import pytest
import yaml

from budget.core.errors import InputError
from budget.core.i18n import fmt
from budget.xlsx.recalc import read_values, recalculate, relative_difference
from budget.sheets.book import write_workbook
from support import ROOT, SEED_A100, SEED_H100, plan_of, raw, require_soffice, with_changes

HOURS_PER_MONTH = 365.25 / 12 * 24       # days_per_year, the model's one definition of a year


def seed(catalog, **changes):
    return plan_of(with_changes(raw(SEED_H100), changes), catalog, "gpt3-175b-h100")


# --- price tiers ------------------------------------------------------------------------------

def test_a_12_month_reservation_on_a_6_month_run_bills_12_months(catalog):
    plan = seed(catalog, **{"prices.tier": "reserved", "prices.reserved": {"term_months": 12}})
    v = plan.values
    assert v["billed_days"] < 215                            # the run reserves the cluster ~7 months
    assert v["committed_gpus"] == v["reserved_gpus"] == 520
    assert v["billed_rental_cost"] == pytest.approx(520 * 12 * HOURS_PER_MONTH * 1.80)
    assert v["reserved_unused_share"] == pytest.approx(1 - v["billed_days"] / v["days_per_year"])
    assert v["reserved_unused_cost"] == pytest.approx(v["billed_rental_cost"] * v["reserved_unused_share"])
    assert v["cluster_cost"] == v["billed_rental_cost"]


def test_gpus_beyond_the_commitment_pay_the_on_demand_rate(catalog):
    plan = seed(catalog, **{"prices.tier": "reserved", "prices.per_gpu_hour": 1.20,
                            "prices.on_demand_per_gpu_hour": 2.40,
                            "prices.reserved": {"term_months": 3, "committed_gpus": 256,
                                                "upfront_share": 0.5}})
    v = plan.values
    term_h = 3 * HOURS_PER_MONTH
    within = 256 * term_h                                   # the run outlasts the 3-month term
    assert v["committed_gpu_hours_used"] == pytest.approx(within)
    assert v["on_demand_gpu_hours"] == pytest.approx(v["billed_gpu_hours"] - within)
    assert v["billed_rental_cost"] == pytest.approx(within * 1.20 + v["on_demand_gpu_hours"] * 2.40)
    assert v["reserved_upfront_cost"] == pytest.approx(0.5 * within * 1.20)
    assert v["compute_rate"] == 2.40                        # runs outside the commitment


def test_a_catalog_price_brings_its_tier_and_term(catalog):
    plan = seed(catalog, **{"prices.per_gpu_hour": None, "prices.catalog": "h100_gcp_a3_reserved_1y"})
    assert plan.inputs["price_tier"].value == "reserved"
    assert plan.inputs["reserved_term_months"].value == 12
    assert plan.inputs["price_per_gpu_hour"].value == 7.67
    assert "Google Cloud" in plan.inputs["price_per_gpu_hour"].source


def test_spot_preemptions_stretch_the_run_and_the_deadline_check_sees_it(catalog):
    base = seed(catalog)
    spot = seed(catalog, **{"prices.tier": "spot",
                            "prices.spot": {"discount": 0.6, "preemption_rate_per_gpu_hour": 2e-4}})
    b, s = base.values, spot.values
    assert s["tier_rate"] == pytest.approx(1.80 * 0.4)
    assert s["interruption_rate_total"] == pytest.approx(b["interruption_rate_total"] + 2e-4)
    assert s["stretched_training_days"] > b["stretched_training_days"] * 1.05
    assert s["train_days"] == b["train_days"]               # the work is the same, the calendar is not
    # A deadline the on-demand run meets, the spot run misses: the check fails in words.
    deadline = (b["stretched_training_days"] + s["stretched_training_days"]) / 2
    on_demand = seed(catalog, **{"hardware.deadline_days": deadline})
    assert on_demand.values["check_meets_deadline"] == 0
    late = seed(catalog, **{"hardware.deadline_days": deadline, "prices.tier": "spot",
                            "prices.spot": {"preemption_rate_per_gpu_hour": 2e-4}})
    assert late.values["check_meets_deadline"] == 1
    assert "with failures and preemptions" in late.model.items["check_meets_deadline"].sentence(late.values)


# --- owned cluster ---------------------------------------------------------------------------

def test_an_owned_cluster_is_charged_capital_energy_and_operations(catalog):
    plan = seed(catalog, **{"ownership": "owned"})
    v = plan.values
    dgx = catalog.prices.purchase_for("nvidia_h100_sxm")
    nodes = 65                                              # 64 training nodes + 1 spare
    r, n = v["cost_of_capital"], v["depreciation_years"]
    crf = r / (1 - (1 + r) ** -n)
    share = v["billed_days"] / (n * v["days_per_year"])
    assert v["capital_cost"] == pytest.approx(nodes * dgx.price_per_node.value * crf * n * share)
    assert v["owned_energy_cost"] == pytest.approx(v["cluster_energy_mwh"] * 1000 * v["electricity_per_kwh"])
    assert v["owned_ops_cost"] == pytest.approx(nodes * v["ops_per_node_month"] * v["billed_days"] * 12 / v["days_per_year"])
    assert v["cluster_cost"] == pytest.approx(v["capital_cost"] + v["owned_energy_cost"] + v["owned_ops_cost"])
    # beside it, what renting the same GPU-hours would cost (a memo line)
    assert v["billed_rental_cost"] == pytest.approx(v["billed_gpu_hours"] * 1.80)
    assert v["interruption_rate_total"] == v["interruption_rate_per_gpu_hour"]


def test_owning_an_accelerator_without_a_purchase_price_is_refused(catalog):
    data = with_changes(raw(SEED_A100), {"hardware.accelerator": "nvidia_h20", "hardware.effective_tflops": None,
                                         "ownership": "owned"})
    with pytest.raises(InputError) as err:
        plan_of(data, catalog)
    problem = err.value.problems[0]
    assert problem.path == "owned.node_price" and "owned.node_price" in problem.fix


# --- energy and carbon against published runs -------------------------------------------------

PUBLISHED = yaml.safe_load((ROOT / "tests" / "data" / "published_energy.yaml").read_text(encoding="utf-8"))["runs"]
# Runs whose study states GPU-hours, the accelerator, its PUE and grid intensity, the energy and
# the emissions (BLOOM's figures exclude PUE: its own Table 4 applies 1.2 separately).
WITH_ENERGY = [r for r in PUBLISHED if r.get("accelerator") and r.get("energy_mwh") and r.get("pue")]


@pytest.mark.parametrize("run", WITH_ENERGY, ids=[r["id"] for r in WITH_ENERGY])
def test_energy_and_carbon_of_published_runs_within_10_percent(catalog, run):
    """Given the study's GPU-hours, accelerator, PUE and grid, and its accounting (GPU board
    power x hours, nothing for the rest of the node), the plan's energy per GPU-hour and
    intensity give the published energy and emissions. The catalog's defaults are not used."""
    pue = 1.0 if run["id"].startswith("bloom") and "No PUE" in run["energy_covers"] else run["pue"]
    plan = plan_of(with_changes(raw(SEED_A100), {
        "hardware.accelerator": run["accelerator"], "hardware.effective_tflops": None,
        "energy": {"pue": pue, "grid_intensity": run["grid_kg_per_kwh"], "draw_training": 1.0,
                   "node_overhead_kw": 0}}), catalog)
    v = plan.values
    assert v["gpu_power_kw"] * 1000 == run["gpu_tdp_w"]     # the catalog's power is the study's
    energy_mwh = v["training_kwh_per_gpu_hour"] * run["gpu_hours"] / 1000
    assert relative_difference(energy_mwh, run["energy_mwh"]) <= 0.10
    assert relative_difference(energy_mwh * v["grid_intensity"], run["co2_tonnes"]) <= 0.10


def test_bloom_with_its_pue_gives_the_published_30_tonnes(catalog):
    bloom = next(r for r in PUBLISHED if r["id"] == "bloom_176b")
    plan = plan_of(with_changes(raw(SEED_A100), {
        "energy": {"pue": bloom["pue"], "grid": "france", "draw_training": 1.0, "node_overhead_kw": 0}}),
        catalog)
    co2 = plan.values["training_kwh_per_gpu_hour"] * bloom["gpu_hours"] / 1000 * plan.values["grid_intensity"]
    assert relative_difference(co2, bloom["other"]["co2_times_pue_tonnes"]) <= 0.10


def test_every_plan_has_energy_and_carbon_from_sourced_defaults(catalog):
    v = seed(catalog).values
    prices = catalog.prices
    assert v["pue"] == prices.energy.pue.value and v["grid_intensity"] == prices.grid("world").kg_per_kwh.value
    node_kw = 8 * 0.7 + v["node_overhead_kw_used"]
    assert v["training_kwh_per_gpu_hour"] == pytest.approx(node_kw / 8 * v["draw_training"] * v["pue"])
    assert v["energy_mwh"] == pytest.approx(v["cluster_energy_mwh"] + v["extra_energy_mwh"])
    assert v["co2_tonnes"] == pytest.approx(v["energy_mwh"] * v["grid_intensity"])
    assert v["cluster_cost"] == v["billed_rental_cost"]     # rented: the electricity is a memo


# --- currencies and VAT ------------------------------------------------------------------------

CNY = {"prices": {"currency": "CNY", "catalog": "h100_token_ai_seed002", "fx_rates": {"USD": 7.10},
                  "storage_per_gb_month": {"amount": 0.02, "currency": "USD"}, "network": "included"},
       "staffing": [{"role": "算法工程师", "headcount": 2, "monthly_cost": 60000},
                    {"role": "基础设施工程师", "headcount": 1, "monthly_cost": 45000}]}


def cny_plan(catalog):
    """Seed 002's worked example budgeted in yuan: the platform's dollar price converted live."""
    return plan_of(with_changes(raw(SEED_H100), CNY), catalog, "gpt3-175b-h100-cny")


def test_a_cny_plan_converts_the_dollar_catalog_price(catalog):
    plan, usd = cny_plan(catalog), seed(catalog)
    v = plan.values
    assert plan.inputs["price_currency"].value == "USD" and plan.inputs["staff_currency"].value == "CNY"
    assert v["fx_gpu"] == 7.10 and v["gpu_rate"] == pytest.approx(1.80 * 7.10)
    assert v["billed_rental_cost"] == pytest.approx(usd.values["billed_rental_cost"] * 7.10)
    assert v["storage_cost"] == pytest.approx(usd.values["storage_cost"] * 7.10)
    # typed in yuan (not converted), for the whole project (no months given)
    assert v["staffing_cost"] == pytest.approx((2 * 60000 + 45000) * v["project_months"])
    assert v["warn_cost_per_gpu_hour"] == 0                 # the dollar band converts too


def test_a_missing_exchange_rate_is_one_clear_error(catalog):
    data = with_changes(raw(SEED_H100), {"prices.currency": "JPY"})
    with pytest.raises(InputError) as err:
        plan_of(data, catalog)
    problem = err.value.problems[0]
    assert problem.path == "prices.fx_rates" and "USD" in problem.message and "JPY per USD" in problem.fix


def test_vat_on_purchases_and_recoverable_vat_outside_the_total(catalog):
    plan = seed(catalog, **{"prices.vat_rate": 0.06})
    v = plan.values
    taxed = v["subtotal_cost"] - v["staffing_cost"]
    assert v["vat_cost"] == pytest.approx(taxed * 0.06)
    # issue 25: no buffer in the total; the flat buffer (a memo) is on the total, VAT included
    assert v["total_cost"] == pytest.approx(v["subtotal_cost"] + v["vat_cost"])
    assert v["buffer_cost"] == pytest.approx(0.20 * v["total_cost"])
    recoverable = seed(catalog, **{"prices.vat_rate": 0.06, "prices.vat_recoverable": True}).values
    assert recoverable["total_cost"] == pytest.approx(v["subtotal_cost"])
    assert recoverable["vat_recoverable_memo"] == pytest.approx(v["vat_cost"])


def test_a_chinese_plan_cites_its_prices_and_currencies_in_chinese(catalog):
    """The sources bind writes follow the plan's language; a label inside a zh sentence keeps
    its case (English lower-cases it)."""
    row_id = "h100_gcp_a3_reserved_1y"
    plan = seed(catalog, **{"prices.per_gpu_hour": None, "prices.catalog": row_id, "language": "zh"})
    row = catalog.prices.rental_price(row_id)
    where = fmt("plan.bind.scenario", "zh", file="gpt3-175b-h100.yaml", path="prices.catalog")
    assert plan.inputs["price_per_gpu_hour"].source == fmt(
        "plan.bind.price_row", "zh", source=where, provider=row.provider, tier=row.tier,
        cite=catalog.prices.cite(row.per_gpu_hour))
    assert plan.inputs["price_tier"].source == fmt("plan.bind.tier_of", "zh", row=row_id)
    assert plan.inputs["reserved_term_months"].source == fmt("plan.bind.term_of", "zh", row=row_id)
    cny = plan_of(with_changes(raw(SEED_H100), {**CNY, "language": "zh"}), catalog, "gpt3-175b-h100-cny")
    label = cny.model.inputs["price_per_gpu_hour"].label
    assert cny.inputs["price_currency"].source == fmt("plan.bind.currency_of", "zh", label=label)
    assert "GPU" in label
    english = cny_plan(catalog).inputs["price_currency"].source
    assert english == fmt("plan.bind.currency_of", "en", label=english.removeprefix("the currency of "))
    assert english.islower()


# --- the lines the buffer hid --------------------------------------------------------------------

@pytest.mark.parametrize("driver, line, factor", [
    ("runs.rollbacks", "rollback_cost", 2), ("runs.rollback_steps", "rollback_cost", 3),
    ("runs.validation_tokens", "validation_gpu_hours", 2), ("runs.scaling_params", "scaling_gpu_hours", 0.5),
    ("runs.post_training_tokens", "post_training_cost", 4),
])
def test_each_new_line_moves_with_its_driver(catalog, driver, line, factor):
    base = seed(catalog)
    default = {"runs.rollbacks": 20, "runs.rollback_steps": 100, "runs.validation_tokens": 100e9,
               "runs.scaling_params": 70e9, "runs.post_training_tokens": 30e9}[driver]
    moved = seed(catalog, **{driver: default * factor})
    assert moved.values[line] == pytest.approx(base.values[line] * factor)


def test_rollbacks_are_rollbacks_times_tokens_lost_not_a_percentage(catalog):
    v = seed(catalog).values
    tokens = 20 * 100 * 1536 * 2048                        # PaLM's ~20 spikes × ~100 steps × the batch
    assert v["rollback_tokens"] == tokens
    assert v["rollback_gpu_hours"] == pytest.approx(6 * 175e9 * tokens / (450e12 * 3600))
    assert v["rollback_cost"] == pytest.approx(v["rollback_gpu_hours"] * 1.80)


def test_serving_is_a_line_of_its_own(catalog):
    v = seed(catalog, **{"runs.serving_gpus": 64, "runs.serving_months": 3}).values
    assert v["serving_cost"] == pytest.approx(64 * 3 * HOURS_PER_MONTH * 1.80)


# --- a reviewer edits the workbook: LibreOffice recalculates ----------------------------------

def _first_cell(names, name):
    sheet, ref = names[name].split("!")
    return sheet, ref.split(":")[0]


def _edited(result, edits, path):
    """The workbook with `edits` ({defined name: value}, or {(range name, key): value} for the
    FX table row whose currency is `key`), saved to `path`."""
    wb = openpyxl.load_workbook(io.BytesIO(result.data))
    for name, value in edits.items():
        if isinstance(name, tuple):
            rng, key = name
            sheet, ref = result.names[f"{rng}_id"].split("!")
            ids = [row[0] for row in wb[sheet][ref]]
            row = next(c.row for c in ids if c.value == key)
            column = wb[sheet][result.names[f"{rng}_rate"].split("!")[1].split(":")[0]].column
            wb[sheet].cell(row, column).value = value
        else:
            sheet, coord = _first_cell(result.names, name)
            wb[sheet][coord].value = value
    wb.save(path)
    return path


LINES = ("cluster_cost", "owned_energy_cost", "capital_cost", "owned_ops_cost", "storage_cost",
         "experiment_cost", "rollback_cost", "post_training_cost", "energy_mwh", "co2_tonnes", "total_cost")


def _named(values, names, name):
    return values[names[name].split(":")[0]]


@pytest.fixture(scope="module")
def edited_books(tmp_path_factory, catalog):
    """Owned and CNY plans, each as written and as a reviewer edits it, through LibreOffice."""
    require_soffice()
    folder = tmp_path_factory.mktemp("prices")
    owned = seed(catalog, **{"ownership": "owned"})
    cny = cny_plan(catalog)
    books = {}
    for key, plan, edits in (
            ("owned", owned, {"electricity_per_kwh": 0.20, "pue": 1.2}),
            ("cny", cny, {("fx", "USD"): 7.30}),
            ("drivers", owned, {"rollbacks": 40, "post_training_tokens": 60e9, "validation_tokens": 200e9})):
        result = write_workbook(plan)
        books[key] = (plan, result, _edited(result, edits, folder / f"{key}.xlsx"), edits)
    done = recalculate([b[2] for b in books.values()], folder / "recalculated")
    return {k: (plan, result, read_values(done[path]), edits) for k, (plan, result, path, edits) in books.items()}


def _expected(plan, edits):
    """What the model says after the edits: the planner's compiled formulas, same inputs."""
    inputs = {k: iv.value for k, iv in plan.inputs.items()}
    tables = {name: t.lookup() for name, t in plan.tables.items()}
    for name, value in edits.items():
        if isinstance(name, tuple):
            tables["fx"]["rate"][name[1].lower()] = value
        else:
            inputs[name] = value
    return plan.model.evaluate(inputs, tables)


@pytest.mark.office
def test_owned_lines_recompute_when_the_reviewer_edits_electricity_and_pue(edited_books):
    plan, result, values, edits = edited_books["owned"]
    want = _expected(plan, edits)
    for name in LINES:
        assert relative_difference(_named(values, result.names, name), want[name]) <= 1e-9, name
    # 0.0806 -> 0.20 per kWh, × 1.2/1.58 for the PUE
    assert want["owned_energy_cost"] == pytest.approx(plan.values["owned_energy_cost"] * 0.20 / 0.0806 * 1.2 / 1.58)
    assert want["energy_mwh"] < plan.values["energy_mwh"]                    # PUE 1.58 -> 1.2


@pytest.mark.office
def test_editing_the_fx_cell_moves_every_converted_line(edited_books):
    plan, result, values, edits = edited_books["cny"]
    want = _expected(plan, edits)
    for name in ("billed_rental_cost", "storage_cost", "experiment_cost", "rollback_cost", "total_cost"):
        got = _named(values, result.names, name)
        assert relative_difference(got, want[name]) <= 1e-9, name
    for name in ("billed_rental_cost", "storage_cost", "rollback_cost"):   # all converted from USD
        assert want[name] == pytest.approx(plan.values[name] * 7.30 / 7.10)
    assert want["staffing_cost"] == plan.values["staffing_cost"]            # typed in yuan


@pytest.mark.office
def test_the_new_lines_move_when_the_reviewer_edits_their_drivers(edited_books):
    plan, result, values, edits = edited_books["drivers"]
    want = _expected(plan, edits)
    for name, factor in (("rollback_cost", 2), ("post_training_gpu_hours", 2), ("validation_gpu_hours", 2)):
        assert relative_difference(_named(values, result.names, name), want[name]) <= 1e-9, name
        assert want[name] == pytest.approx(plan.values[name] * factor), name


def test_an_unknown_price_id_is_one_message_with_exit_status_2(tmp_path, capsys):
    """The CLI names the file, the field and the fix, lists the accelerator's prices, and
    writes nothing."""
    from budget.cli.app import main
    data = with_changes(raw(SEED_H100), {"prices.per_gpu_hour": None, "prices.catalog": "h100_tokenai"})
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    code = main([str(path), "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"error: {path}: prices.catalog: unknown price id 'h100_tokenai'\n"
                          "  fix: did you mean 'h100_token_ai_seed002'? use an id from catalogs/prices.yaml "
                          "for nvidia_h100_sxm: h100_token_ai_seed002, ")
    assert "a100" not in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("path", ["owned.ops_per_node_month", "owned.depreciation_years", "energy.pue",
                                  "energy.electricity_per_kwh", "energy.draw_training"])
def test_a_key_written_as_null_takes_its_default(catalog, path):
    """`ops_per_node_month:` with no value is the default, as a blank cell is (found by the
    robustness mutants: it used to reach the formulas as an empty number)."""
    section, key = path.split(".")
    data = raw(SEED_H100)
    written = with_changes(data, {section: {**data.get(section, {}), key: None}})
    written[section][key] = None     # with_changes removes a None; the file keeps the key
    plain = plan_of(data, catalog, "seed")
    assert dict(plan_of(written, catalog, "seed").values) == dict(plain.values)
    owned = with_changes(written, {"ownership": "owned"})
    assert plan_of(owned, catalog, "seed").total_cost > 0
