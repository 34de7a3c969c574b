"""Sensitivity and range: the tornado, P10/P50/P90, held against a Monte Carlo of the model."""

from __future__ import annotations

import io
import math
import random
import sys

import openpyxl
import pytest

from budget.model.model import UNCERTAIN
from budget.xlsx.recalc import read_values, recalculate, relative_difference
from budget.plan.sensitivity import Z90, cases, range_figures
from budget.sheets.book import write_workbook
from support import SCENARIOS, plan_of, raw, require_soffice, sized

BUNDLED = ("gpt3-175b-h100", "gpt3-175b-a100", "llama3-70b-h100-deadline")
SAMPLES = sized(20_000, 4_000)     # the Monte Carlo's draws (4,000: P90 within ~1% of 20,000's)


@pytest.fixture(scope="module")
def plans(catalog):
    return {stem: plan_of(raw(SCENARIOS / f"{stem}.yaml"), catalog, stem) for stem in BUNDLED}


@pytest.mark.parametrize("stem", BUNDLED)
def test_base_lies_between_low_and_high(plans, stem):
    """Every uncertain input here moves the total one way, so the base total lies between the
    totals at its low and its high value."""
    plan = plans[stem]
    total = plan.total_cost
    for key in UNCERTAIN:
        low, high = (c for c in cases(plan) if c.key == key)
        a, b = sorted((low.values["total_cost"], high.values["total_cost"]))
        assert a <= total * (1 + 1e-12) and total <= b * (1 + 1e-12), key


def test_price_and_model_error_move_the_total_as_expected(plans):
    plan = plans["gpt3-175b-h100"]
    by = {(c.key, c.end): c.values["total_cost"] for c in cases(plan)}
    assert by[("price_per_gpu_hour", "low")] < plan.total_cost < by[("price_per_gpu_hour", "high")]
    # the model error is a factor on the step time: the GPU-hours and their rental scale with it
    assert by[("model_error", "low")] < plan.total_cost < by[("model_error", "high")]
    low = next(c for c in cases(plan) if c.key == "model_error" and c.end == "low")
    assert low.values["rental_cost"] == pytest.approx(plan.rental_cost * low.value, rel=1e-12)
    # the seed types its 450 TFLOPS: a constant-MFU rule, so its spread is that rule's held out
    assert plan.inputs["unc_model_error_low"].source.startswith("catalogs/model_error.yaml: the utilisation is typed")


@pytest.mark.slow
@pytest.mark.parametrize("stem", BUNDLED)
def test_range_is_ordered_and_agrees_with_a_monte_carlo(plans, stem):
    """P10 ≤ P50 ≤ P90; a seeded Monte Carlo of the Python model (each input lognormal with
    its low and high as P10 and P90, independent) gives P50 and P90 within ±5%."""
    plan = plans[stem]
    all_cases = cases(plan)
    figures = range_figures(plan, all_cases)
    assert figures["total_cost_p10"] <= figures["total_cost_p50"] <= figures["total_cost_p90"]
    model, lookups = plan.model, {n: t.lookup() for n, t in plan.tables.items()}
    base = {k: plan.values[k] for k in model.inputs}
    draws = random.Random(20261130)
    params = {}
    for key, (target, _label, spread, *_rest) in UNCERTAIN.items():
        low, high = (c.value for c in all_cases if c.key == key)
        if spread == "points":       # a shift of the MFU in points: normal, low and high its P10 and P90
            params[target] = ((low + high) / 2, (high - low) / (2 * Z90), False)
        else:
            params[target] = ((math.log(low) + math.log(high)) / 2,
                              (math.log(high) - math.log(low)) / (2 * Z90), True)
    # only the items the uncertain inputs move are recomputed for each draw (model.dependents: the
    # values a whole evaluation gives, as the what-if cases use it); the others are the plan's
    run = model.dependents(set(params), tuple(model.items))
    start = {**base, **{k: plan.values[k] for k in model.items}}
    samples = {name: [] for name in ("total_cost", "project_end", "train_days", "card_gpu_hours")}
    for _ in range(SAMPLES):
        inputs = dict(start)
        for target, (mu, sigma, lognormal) in params.items():
            x = draws.gauss(mu, sigma)
            inputs[target] = math.exp(x) if lognormal else x
        values = run(inputs, lookups)
        for name, found in samples.items():
            found.append(values[name])
    for found in samples.values():
        found.sort()
    p50, p90 = (lambda name: samples[name][SAMPLES // 2]), (lambda name: samples[name][int(SAMPLES * 0.9)])
    assert figures["total_cost_p50"] == pytest.approx(p50("total_cost"), rel=0.05)
    assert figures["total_cost_p90"] == pytest.approx(p90("total_cost"), rel=0.05)
    # issue 25: the training days' and the billed card-hours' ranges hold the same way
    for figure in ("train_days", "card_gpu_hours"):
        assert figures[f"{figure}_p10"] <= figures[f"{figure}_p50"] <= figures[f"{figure}_p90"]
        assert figures[f"{figure}_p50"] == pytest.approx(p50(figure), rel=0.05), figure
        assert figures[f"{figure}_p90"] == pytest.approx(p90(figure), rel=0.05), figure
    project_days = plan.values["project_days"]
    assert figures["project_end_p90"] - p90("project_end") == pytest.approx(0, abs=0.05 * project_days)


def test_a_cases_value_is_its_formulas(plans):
    """A what-if column's input cell is an expression over the workbook's names (the input
    times its factor; the factor itself for points on the MFU), and the case's value is it."""
    plan = plans["gpt3-175b-h100"]
    for c in cases(plan):
        target, _label, spread, *_rest = UNCERTAIN[c.key]
        factor = f"unc_{c.key}_{c.end}"
        points = spread == "points"
        assert c.formula.excel() == (factor if points else f"{target}*{factor}")
        assert c.value == (plan.values[factor] if points else plan.values[target] * plan.values[factor])


@pytest.mark.parametrize("stem", BUNDLED)
def test_range_figures_follow_the_method(plans, stem):
    """range_figures, evaluated from the expressions the Sensitivity sheet writes, is the
    method of budget.plan.sensitivity's docstring computed here directly."""
    plan = plans[stem]
    all_cases, v = cases(plan), plans[stem].values
    total, end = v["total_cost"], v["project_end"]
    means, spreads, day_means, day_spreads = [], [], [], []
    for key in UNCERTAIN:
        low, high = (c.values for c in all_cases if c.key == key)
        a, b = math.log(low["total_cost"] / total), math.log(high["total_cost"] / total)
        means.append((a + b) / 2)
        spreads.append(abs(b - a) / (2 * Z90))
        da, db = low["project_end"] - end, high["project_end"] - end
        day_means.append((da + db) / 2)
        day_spreads.append(abs(db - da) / (2 * Z90))
    m, s = sum(means), math.sqrt(sum(x * x for x in spreads))
    want = {"total_cost_p10": total * math.exp(m - Z90 * s), "total_cost_p50": total * math.exp(m),
            "total_cost_p90": total * math.exp(m + Z90 * s),
            "project_end_p90": end + sum(day_means) + Z90 * math.sqrt(sum(x * x for x in day_spreads))}
    figures = range_figures(plan, all_cases)
    assert {k: figures[k] for k in want} == pytest.approx(want, rel=1e-12)
    assert [r["log_spread"] for r in figures["rows"]] == pytest.approx(spreads, rel=1e-12)
    assert [r["end_mean"] for r in figures["rows"]] == pytest.approx(day_means, rel=1e-12, abs=1e-9)


def test_no_formula_is_written_as_text(plans, monkeypatch):
    """Issue 24: the Sensitivity sheet and its what-if grid hand the writer expressions, which
    it renders, never formula text."""
    from budget.sheets import writer

    texts = []
    formula = writer.Writer.formula

    def recording(self, ws, row, col, expr, *args, **kwargs):
        caller = sys._getframe(1).f_code.co_filename
        if isinstance(expr, str) and caller.endswith(("sensitivity.py", "grid.py")):
            texts.append((ws.title, row, col, expr))
        return formula(self, ws, row, col, expr, *args, **kwargs)

    monkeypatch.setattr(writer.Writer, "formula", recording)
    write_workbook(plans["gpt3-175b-h100"])
    assert not texts


@pytest.fixture(scope="module")
def recalculated(tmp_path_factory, plans):
    """The seed book, and the same book with the price's high value and the model error's low
    edited on the Inputs sheet (the model error's low to x0.5, below the catalog's P10), recalculated in LibreOffice."""
    require_soffice()
    folder = tmp_path_factory.mktemp("sensitivity")
    plan = plans["gpt3-175b-h100"]
    result = write_workbook(plan)
    plain = folder / "sens.xlsx"
    plain.write_bytes(result.data)
    wb = openpyxl.load_workbook(io.BytesIO(result.data))
    for name, value in (("unc_price_per_gpu_hour_high", 2.0), ("unc_model_error_low", 0.5)):
        sheet, cell = result.names[name].split("!")
        wb[sheet][cell].value = value
    edited = folder / "sens-edited.xlsx"
    wb.save(edited)
    out = recalculate([plain, edited], folder / "out")
    return result, read_values(out[plain]), read_values(out[edited])


def _range_cells(result, values, name):
    sheet, ref = result.names[name].split("!")
    first, last = ref.split(":")
    col, a, b = first[0], int(first[1:]), int(last[1:])
    return [values.get(f"{sheet}!{col}{r}") for r in range(a, b + 1)]


@pytest.mark.office
def test_tornado_is_sorted_live_by_swing(recalculated):
    result, plain, _ = recalculated
    labels = {u[1] for u in UNCERTAIN.values()}
    rows = sorted(int(k.split("!A")[1]) for k, v in result.expected.items()
                  if k.startswith("Sensitivity!A") and v in labels)
    swings = [plain[f"Sensitivity!E{r}"] for r in rows]
    assert len(swings) == len(UNCERTAIN)
    assert swings == sorted(swings, reverse=True)


@pytest.mark.office
def test_edited_spread_moves_the_high_total_and_the_p90(recalculated):
    result, plain, edited = recalculated
    high_before = _range_cells(result, plain, "sensitivity_high_total")
    high_after = _range_cells(result, edited, "sensitivity_high_total")
    keys = list(UNCERTAIN)
    price = keys.index("price_per_gpu_hour")
    assert high_after[price] > high_before[price]
    unchanged = [k for k in range(len(keys)) if keys[k] not in ("price_per_gpu_hour",)]
    for k in unchanged:
        assert relative_difference(high_after[k], high_before[k]) <= 1e-9, keys[k]
    p90 = result.names["total_cost_p90"]
    assert edited[p90] > plain[p90]
    low_error = _range_cells(result, edited, "sensitivity_low_total")[keys.index("model_error")]
    assert low_error < _range_cells(result, plain, "sensitivity_low_total")[keys.index("model_error")]


@pytest.mark.office
def test_range_names_are_in_the_book(recalculated):
    result, plain, _ = recalculated
    p10, p50, p90 = (plain[result.names[n]] for n in ("total_cost_p10", "total_cost_p50", "total_cost_p90"))
    assert p10 <= p50 <= p90
    assert plain[result.names["total_cost"]] > p10


def test_the_chinese_sensitivity_sheet(catalog):
    """A zh book names the uncertain inputs, the what-if columns and the range rows in Chinese;
    the tornado's live INDEX shows the Chinese labels."""
    from budget.core import i18n
    from support import SEED_H100, with_changes

    plan = plan_of(with_changes(raw(SEED_H100), {"language": "zh"}), catalog, "zh")
    result = write_workbook(plan)
    ws = openpyxl.load_workbook(io.BytesIO(result.data))["Sensitivity"]
    labels = [i18n.text(f"uncertain.{key}.label", "zh") for key in UNCERTAIN]
    assert ws["A1"].value == i18n.text("workbook.sensitivity.title", "zh")
    assert ws["A4"].value == i18n.text("workbook.sensitivity.columns.input", "zh")
    assert [ws.cell(5 + k, 1).value for k in range(len(labels))] == labels
    titles = {c.value for row in ws.iter_rows() for c in row if isinstance(c.value, str)}
    assert i18n.fmt("workbook.sensitivity.case.low", "zh", input=labels[0]) in titles
    assert i18n.text("workbook.sensitivity.range.total_cost_p90", "zh") in titles
    tornado = {v for k, v in result.expected.items() if isinstance(v, str) and k.startswith("Sensitivity!A")}
    assert set(labels) <= tornado
