"""The Cashflow sheet: every month's figure a live formula that LibreOffice computes as the plan
does, and months, calendar years and fiscal years that add up to total_cost after edits."""

from __future__ import annotations

import datetime as dt

import openpyxl
import pytest
from openpyxl.utils.cell import get_column_letter, range_boundaries

from budget.bind import excel_serial, from_serial
from budget.recalc import is_error, read_values, recalculate, relative_difference
from budget.workbook import write_workbook
from support import SEED_H100, plan_of, raw, require_soffice, with_changes

TOLERANCE = 1e-9

# Edits a reviewer makes to input cells, by defined name; None blanks the cell. Callables get
# the generated value. Each book gets one edit; "all" makes them together.
EDITS = {
    "start-later": {"start_date": lambda v: from_serial(v + 40)},
    "evaluation-20w": {"evaluation_weeks": 20},
    "price-2.5": {"price_per_gpu_hour": 2.5},
    "buffer-30": {"buffer_rate": 0.3},
    "fiscal-april": {"fiscal_year_start_month": 4},
    "storage-blank": {"storage_months": None},
}
EDITS["all"] = {k: v for edit in EDITS.values() for k, v in edit.items()}
# The same edits as scenario changes: a plan of its own, to hold the edited book's months to.
ALL_AS_SCENARIO = {"schedule.evaluation_weeks": 20, "prices.per_gpu_hour": 2.5, "buffer_rate": 0.3,
                   "schedule.fiscal_year_start_month": 4, "storage.months_held": None}
# Edge cases: phases of zero length, storage and staffing longer than the project, a project
# that outgrows the months (the check must then say so).
EDITS.update({
    "zero-phases": {"validation_weeks": 0, "scaling_weeks": 0, "evaluation_weeks": 0, "queue_days": 0,
                    "setup_days": 0, "data_prep_weeks": 0},
    "held-longer": {"storage_months": 20, "staff_months": 17.5, "fiscal_year_start_month": 7,
                    "start_date": lambda v: from_serial(v + 27)},
    "staff-blank-months": {"staff_months": None, "buffer_rate": 0},
    "outgrown": {"evaluation_weeks": 200},
})


def _cells(ref: str) -> list[str]:
    """"Sheet!E25:AB25" (or "Sheet!B7") -> ["Sheet!E25", ...] in row order."""
    sheet, rng = ref.split("!")
    c1, r1, c2, r2 = range_boundaries(rng)
    return [f"{sheet}!{get_column_letter(c)}{r}" for r in range(r1, r2 + 1) for c in range(c1, c2 + 1)]


def _edit(source, target, names, edits) -> None:
    wb = openpyxl.load_workbook(source)
    for name, value in edits.items():
        sheet, coord = names[name].split("!")
        coord = coord.split(":")[0]      # a table column: its first row
        if callable(value):
            old = wb[sheet][coord].value
            value = value(excel_serial(old.date() if isinstance(old, dt.datetime) else old))
        wb[sheet][coord].value = value
    wb.save(target)


@pytest.fixture(scope="module")
def books(tmp_path_factory, catalog):
    """The seed's book, its edited copies, and the book of the edited scenario, recalculated in
    one LibreOffice call."""
    require_soffice()
    folder = tmp_path_factory.mktemp("cashflow")
    base = write_workbook(plan_of(raw(SEED_H100), catalog, "x"))
    fresh_plan = plan_of(with_changes(raw(SEED_H100), {
        **ALL_AS_SCENARIO,
        "schedule.start_date": (from_serial(excel_serial(dt.date(2027, 1, 4)) + 40)).isoformat()}),
        catalog, "fresh")
    fresh = write_workbook(fresh_plan)
    paths = {"base": folder / "base.xlsx", "fresh": folder / "fresh.xlsx"}
    paths["base"].write_bytes(base.data)
    paths["fresh"].write_bytes(fresh.data)
    for name, edits in EDITS.items():
        paths[name] = folder / f"{name}.xlsx"
        _edit(paths["base"], paths[name], base.names, edits)
    done = recalculate(list(paths.values()), folder / "recalculated")
    values = {name: read_values(done[path]) for name, path in paths.items()}
    return {"base": base, "fresh": fresh, "fresh_plan": fresh_plan, "values": values}


def _named(values, names, name):
    return [values.get(c) for c in _cells(names[name])]


def _total(values, names):
    return values[names["total_cost"]]


def test_the_seed_starts_in_january_2027_and_has_24_months(books):
    base = books["base"]
    months = _cells(base.names["cashflow_month_cells"])
    assert len(months) == 24
    first = books["values"]["base"][months[0]]
    assert first.date() == dt.date(2027, 1, 1)
    assert books["values"]["base"][months[-1]].date() == dt.date(2028, 12, 1)


def test_every_cashflow_formula_equals_the_plan(books):
    base, got = books["base"], books["values"]["base"]
    mine = {k: v for k, v in base.expected.items() if k.startswith("Cashflow!")}
    assert len(mine) > 24 * 15
    bad = {k: (got.get(k), v) for k, v in mine.items() if relative_difference(got.get(k), v) > TOLERANCE}
    assert not bad, list(bad.items())[:10]


def test_the_edited_scenarios_own_book_agrees_too(books):
    fresh, got = books["fresh"], books["values"]["fresh"]
    bad = {k: (got.get(k), v) for k, v in fresh.expected.items()
           if k.startswith("Cashflow!") and relative_difference(got.get(k), v) > TOLERANCE}
    assert not bad, list(bad.items())[:10]


@pytest.mark.parametrize("book", ["base", "fresh", *EDITS])
def test_months_and_years_add_up_to_the_total(books, book):
    names, got = books["base"].names if book != "fresh" else books["fresh"].names, books["values"][book]
    cashflow = {k: v for k, v in got.items() if k.startswith("Cashflow!")}
    assert not [k for k, v in cashflow.items() if is_error(v)]
    total = _total(got, names)
    assert isinstance(total, float) and total > 0
    if book == "outgrown":      # the months no longer cover the project: the check says so
        assert got[names["check_cashflow_fits"]] == 1
        assert sum(_named(got, names, "cashflow_month_total")) < total
        return
    assert got[names["check_cashflow_fits"]] == 0
    for name in ("cashflow_month_total", "cashflow_calendar_year_total", "cashflow_fiscal_year_total"):
        assert sum(_named(got, names, name)) == pytest.approx(total, rel=TOLERANCE), name


def test_each_line_adds_up_to_its_cost_sheet_figure(books):
    """Sum of months (column B) equals the Cost sheet column (C) on every line, in every book
    the months cover."""
    total_row = int(books["base"].names["cashflow_month_total"].split("!")[1].split(":")[0][1:])
    for book, got in books["values"].items():
        if book == "outgrown":
            continue
        ws = {k: v for k, v in got.items() if k.startswith("Cashflow!")}
        rows = [r for r in range(5, total_row + 1) if isinstance(ws.get(f"Cashflow!C{r}"), (int, float))]
        assert len(rows) == 13, book     # 4 day counts, 6 lines, subtotal, buffer, total
        for r in rows:
            assert ws.get(f"Cashflow!B{r}", 0.0) == pytest.approx(ws[f"Cashflow!C{r}"], rel=TOLERANCE,
                                                                   abs=1e-6), (book, r)


def test_edited_months_equal_the_edited_scenarios_plan(books):
    """Every edit at once, in the generated book: each month's figure equals what the planner
    computes for the edited scenario (its own book has more months; the first 24 must agree)."""
    base_names = books["base"].names
    edited, fresh = books["values"]["all"], books["fresh"]
    total_row = int(base_names["cashflow_month_total"].split("!")[1].split(":")[0][1:])
    last_col = range_boundaries(base_names["cashflow_month_total"].split("!")[1])[2]
    compared = 0
    for key, want in fresh.expected.items():
        sheet, coord = key.split("!")
        if sheet != "Cashflow":
            continue
        c1, r1, _, _ = range_boundaries(coord)
        if r1 > total_row + 1 or c1 > last_col:     # the month block, inside the edited book's grid
            continue
        compared += 1
        assert relative_difference(edited.get(key), want) <= TOLERANCE, (key, edited.get(key), want)
    assert compared > 24 * 15
    assert edited[base_names["total_cost"]] == pytest.approx(books["fresh_plan"].total_cost, rel=TOLERANCE)


def test_fiscal_years_are_named_by_the_year_they_end_in(books):
    names, got = books["base"].names, books["values"]["fiscal-april"]
    months = _cells(names["cashflow_month_cells"])
    fiscal = {got[m].date(): got[m.rstrip("0123456789") + "7"] for m in months}   # row 7: fiscal year
    assert fiscal[dt.date(2027, 3, 1)] == 2027
    assert fiscal[dt.date(2027, 4, 1)] == 2028
    first = _cells(names["cashflow_fiscal_year_total"])[0]
    assert got[first.replace("!B", "!A")] == "FY2027"
    # January to March 2027 fall in FY2027: the seed's project starts on 4 January
    jan_to_mar = sum(_named(got, names, "cashflow_month_total")[:3])
    assert got[first] == pytest.approx(jan_to_mar, rel=TOLERANCE)


def test_the_difference_lines_read_zero(books):
    got = books["values"]["all"]
    lines = [k for k, v in got.items() if k.startswith("Cashflow!A") and isinstance(v, str)
             and "− total_cost" in v]
    assert len(lines) == 3
    for k in lines:
        assert got.get(k.replace("!A", "!B"), 0) == 0, k
