"""The Cashflow sheet: every month's figure a live formula over the Cost sheet's own line items
that LibreOffice computes as the plan does (the months are the model's items, issue 24), and
months, calendar years and fiscal years that add up to total_cost whatever the price tier or
ownership, after a reviewer's edits too."""

from __future__ import annotations

import copy
import datetime as dt
import io
import math
import re

import openpyxl
import pytest
from openpyxl.utils.cell import get_column_letter, range_boundaries

from budget.core.dates import excel_serial, from_serial
from budget.formula.expr import BENIGN_CONSTANTS, SUPPORTED_FUNCTIONS
from budget.model.model import COST_LINES
from budget.xlsx.recalc import is_error, read_values, recalculate, relative_difference
from budget.sheets.book import write_workbook
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
                   "schedule.fiscal_year_start_month": 4, "storage.months_held": None,
                   "schedule.start_date": (from_serial(excel_serial(dt.date(2027, 1, 4)) + 40)).isoformat()}
# Edge cases: phases of zero length, storage and staffing longer than the project, a project
# that outgrows the months (the check must then say so).
EDITS.update({
    "zero-phases": {"validation_weeks": 0, "scaling_weeks": 0, "evaluation_weeks": 0, "queue_days": 0,
                    "setup_days": 0, "data_prep_weeks": 0},
    "held-longer": {"storage_months": 20, "staff_months": 17.5, "fiscal_year_start_month": 7,
                    "start_date": lambda v: from_serial(v + 27)},
    "staff-blank-months": {"staff_months": None, "buffer_rate": 0},
    # the cap on phases (a share of the training days, 1.0 in every job mode) cleared, else the 200
    # weeks would be held to the training's length
    "outgrown": {"evaluation_weeks": 200, "phase_share_cap": None},
})

# Scenarios written as books of their own: the seed with changes.
RESERVED = {"prices": {"currency": "USD", "tier": "reserved", "per_gpu_hour": 1.5,
                       "reserved": {"term_months": 12, "upfront_share": 0.25},
                       "storage_per_gb_month": 0.02, "network": "included"}}
SCENARIOS = {
    "base": {},
    "fresh": ALL_AS_SCENARIO,
    "reserved": RESERVED,
    "owned": {"ownership": "owned"},
    # spot, VAT charged on purchases, serving after deployment, a priced network
    "taxed": {"prices.tier": "spot", "prices.vat_rate": 0.2, "prices.network": 0.05,
              "runs.serving_gpus": 64, "runs.serving_months": 3},
    # what the "switch-to-reserved" edit below makes of the seed
    "seed-reserved": {"prices.tier": "reserved", "prices.reserved": {"term_months": 12, "upfront_share": 0.25}},
}
# A reviewer switches the tier or the ownership in the book: (book edited, its edits).
SWITCHES = {
    "switch-to-reserved": ("base", {"price_tier": "reserved", "reserved_upfront_share": 0.25}),
    "switch-to-spot": ("reserved", {"price_tier": "spot"}),
    "switch-to-on-demand": ("reserved", {"price_tier": "on_demand"}),
    "switch-to-owned": ("reserved", {"ownership": "owned"}),
    "switch-vat-recoverable": ("taxed", {"vat_recoverable": "yes"}),
    # a 36-month term outlasts the seed's 24 months: the check must say so
    "switch-to-36-month-term": ("base", {"price_tier": "reserved", "reserved_term_months": 36}),
}
OUTGROWN = {"outgrown", "switch-to-36-month-term"}


def _seed_with(changes: dict) -> dict:
    """The seed's scenario data with dotted-path changes (copied: with_changes stores the values
    it is given, and these constants are shared between cases)."""
    return with_changes(raw(SEED_H100), copy.deepcopy(changes))


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
    """The scenarios' books, the seed's edited copies and the switched ones, recalculated in one
    LibreOffice call. `names` maps every book to the defined names it was written with."""
    require_soffice()
    folder = tmp_path_factory.mktemp("cashflow")
    plans, results, paths, names = {}, {}, {}, {}
    for name, changes in SCENARIOS.items():
        plans[name] = plan_of(_seed_with(changes), catalog, name)
        results[name] = write_workbook(plans[name])
        paths[name] = folder / f"{name}.xlsx"
        paths[name].write_bytes(results[name].data)
        names[name] = results[name].names
    edits = {**{k: ("base", e) for k, e in EDITS.items()}, **SWITCHES}
    for name, (source, changes) in edits.items():
        paths[name] = folder / f"{name}.xlsx"
        _edit(paths[source], paths[name], names[source], changes)
        names[name] = names[source]
    done = recalculate(list(paths.values()), folder / "recalculated")
    values = {name: read_values(done[path]) for name, path in paths.items()}
    return {"plans": plans, "results": results, "names": names, "values": values,
            "base": results["base"], "fresh": results["fresh"]}


def _named(values, names, name):
    return [values.get(c) for c in _cells(names[name])]


def _total(values, names):
    return values[names["total_cost"]]


def _row(names, name: str) -> int:
    """The row of a one-row range such as cashflow_month_total."""
    return range_boundaries(names[name].split("!")[1])[1]


def _rows_by_c(result) -> dict[str, int]:
    """Cash-out rows by the Cost sheet item their column C shows (`=cluster_cost` -> its row)."""
    ws = openpyxl.load_workbook(io.BytesIO(result.data))["Cashflow"]
    return {ws.cell(r, 3).value[1:]: r for r in range(1, ws.max_row + 1)
            if isinstance(ws.cell(r, 3).value, str) and re.fullmatch(r"=[a-z_]+", ws.cell(r, 3).value)}


def month_totals(plan) -> list[tuple[float, float]]:
    """(first day of the month, total spent in it, VAT included) for each of the plan's
    months: what the decision page's quarters sum."""
    v = plan.values
    return list(zip(v["cashflow_month_start"], v["cashflow_month_total"]))


def _month_values(expected: dict, row: int, months: int) -> list[float]:
    return [expected[f"Cashflow!{get_column_letter(5 + m)}{row}"] for m in range(months)]


# --- the plan's own figures (no LibreOffice) -------------------------------------------------

PLAN_CASES = {
    "seed": {},
    "reserved": RESERVED,
    "reserved-36-all-upfront": {**RESERVED, "prices.reserved": {"term_months": 36, "upfront_share": 1}},
    "reserved-fewer-committed": {**RESERVED, "prices.reserved": {"term_months": 1, "upfront_share": 0.5,
                                                                  "committed_gpus": 256}},
    "owned": {"ownership": "owned"},
    "owned-reserved": {**RESERVED, "ownership": "owned"},
    "spot-vat-serving": SCENARIOS["taxed"],
    "vat-recoverable": {**SCENARIOS["taxed"], "prices.vat_recoverable": True},
    "zero-phases": {"schedule.validation_weeks": 0, "schedule.scaling_weeks": 0,
                    "schedule.evaluation_weeks": 0, "schedule.queue_days": 0},
    "no-staff": {"staffing": []},
}


@pytest.mark.parametrize("case", PLAN_CASES)
def test_the_plans_months_add_up_to_total_cost(catalog, case):
    """Every line's months add up to its Cost sheet item, and the months to total_cost."""
    plan = plan_of(_seed_with(PLAN_CASES[case]), catalog, case)
    result = write_workbook(plan)
    v, months = plan.values, len(_cells(result.names["cashflow_month_cells"]))
    assert v["check_cashflow_fits"] == 0
    totals = month_totals(plan)
    assert len(totals) == months
    assert [from_serial(s).day for s, _ in totals] == [1] * months
    assert math.fsum(t for _, t in totals) == pytest.approx(v["total_cost"], rel=TOLERANCE)
    rows = _rows_by_c(result)
    assert list(rows)[:len(COST_LINES)] == list(COST_LINES)     # the Cost sheet's lines, in order
    for name in (*COST_LINES, "subtotal_cost", "vat_in_total", "total_cost"):
        line = _month_values(result.expected, rows[name], months)
        assert math.fsum(line) == pytest.approx(v[name], rel=TOLERANCE, abs=1e-6), name
        assert min(line) >= -1e-9, name
        assert result.expected[f"Cashflow!C{rows[name]}"] == v[name]


def test_a_reserved_term_pays_up_front_then_over_the_whole_term(catalog):
    """A 12-month term on a shorter run: the upfront share in the month the reservation starts,
    the rest over the whole term, so months after the project still carry the reservation."""
    plan = plan_of(_seed_with(RESERVED), catalog, "reserved")
    result = write_workbook(plan)
    v, months = plan.values, len(_cells(result.names["cashflow_month_cells"]))
    start, end = v["reservation_start"], v["reservation_start"] + 12 * v["days_per_year"] / 12
    assert v["evaluation_end"] < end and v["project_end"] < end       # the term outlasts the run
    upfront = v["reserved_upfront_cost"]
    assert upfront == pytest.approx(0.25 * v["cluster_cost"], rel=1e-9)   # no hours beyond the term
    cluster = _month_values(result.expected, _rows_by_c(result)["cluster_cost"], months)
    firsts = [excel_serial(from_serial(s)) for s, _ in month_totals(plan)]
    ends = firsts[1:] + [excel_serial(dt.date(2100, 1, 1))]
    rest = v["cluster_cost"] - upfront
    for m, (a, b) in enumerate(zip(firsts, ends)):
        days = max(0.0, min(b, end) - max(a, start))
        want = rest * days / (end - start) + (upfront if a <= start < b else 0.0)
        assert cluster[m] == pytest.approx(want, rel=1e-9, abs=1e-6), from_serial(a)
    first = next(m for m, (a, b) in enumerate(zip(firsts, ends)) if a <= start < b)
    assert cluster[first] > upfront
    after_project = [c for c, a in zip(cluster, firsts) if a >= v["project_end"]]
    assert sum(1 for c in after_project if c > 0) >= 5           # October 2027 to March 2028
    assert all(c == 0 for c, a in zip(cluster, firsts) if a >= end)
    # the whole term's spending is inside the months, and the months are sized for it
    assert v["spend_end"] == pytest.approx(end, rel=1e-12)
    assert math.fsum(t for _, t in month_totals(plan)) == pytest.approx(v["total_cost"], rel=TOLERANCE)


def test_a_zero_length_phase_pays_in_the_month_it_starts(catalog):
    plan = plan_of(_seed_with(PLAN_CASES["zero-phases"]), catalog, "zero")
    result = write_workbook(plan)
    v, months = plan.values, len(_cells(result.names["cashflow_month_cells"]))
    assert v["evaluation_end"] == v["evaluation_start"] and v["post_training_cost"] > 0
    post = _month_values(result.expected, _rows_by_c(result)["post_training_cost"], months)
    month = from_serial(v["evaluation_start"]).replace(day=1)
    firsts = [from_serial(s) for s, _ in month_totals(plan)]
    assert post[firsts.index(month)] == v["post_training_cost"]
    assert sum(1 for p in post if p) == 1


def test_the_months_spread_the_cost_sheets_items_never_prices(seed_h100):
    """Each cash-out line is a formula over its Cost sheet item; nothing re-derives a cost from
    a price or a GPU count, and the sheet keeps to the supported functions and conventions."""
    result = write_workbook(seed_h100)
    ws = openpyxl.load_workbook(io.BytesIO(result.data))["Cashflow"]
    rows = _rows_by_c(result)
    priced = re.compile(r"\b(price_per_gpu_hour|price_per_gb_month|on_demand_per_gpu_hour|tier_rate|gpu_rate|"
                        r"on_demand_rate|compute_rate|owned_rate_per_gpu_hour|network_per_gpu_hour|"
                        r"reserved_gpus|committed_gpus|validation_gpus|scaling_gpus|serving_gpus|"
                        r"serving_per_gpu_hour)\b")
    formulas = 0
    for row in ws.iter_rows():
        for c in row:
            if c.data_type != "f":
                assert not isinstance(c.value, (int, float)), c.coordinate
                continue
            body = re.sub(r'"[^"]*"', '""', c.value)
            assert set(re.findall(r"([A-Z][A-Z0-9.]*)\(", body)) <= SUPPORTED_FUNCTIONS, c.coordinate
            numbers = {float(n) for n in re.findall(
                r"(?<![A-Za-z_$0-9.])(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)(?![A-Za-z_0-9(!])", body)}
            assert numbers <= BENIGN_CONSTANTS, (c.coordinate, c.value)
            assert not priced.search(body), (c.coordinate, c.value)
            formulas += 1
    assert formulas > 24 * 20
    for name in COST_LINES:
        month = ws.cell(rows[name], 5).value
        assert name in month, (name, month)


# --- LibreOffice's figures ------------------------------------------------------------------

@pytest.mark.office
def test_the_seed_starts_in_january_2027_and_has_24_months(books):
    base = books["base"]
    months = _cells(base.names["cashflow_month_cells"])
    assert len(months) == 24
    first = books["values"]["base"][months[0]]
    assert first.date() == dt.date(2027, 1, 1)
    assert books["values"]["base"][months[-1]].date() == dt.date(2028, 12, 1)


@pytest.mark.office
@pytest.mark.parametrize("book", SCENARIOS)
def test_every_cashflow_formula_equals_the_plan(books, book):
    result, got = books["results"][book], books["values"][book]
    mine = {k: v for k, v in result.expected.items() if k.startswith("Cashflow!")}
    assert len(mine) > 24 * 20
    bad = {k: (got.get(k), v) for k, v in mine.items() if relative_difference(got.get(k), v) > TOLERANCE}
    assert not bad, list(bad.items())[:10]


@pytest.mark.office
@pytest.mark.parametrize("book", [*SCENARIOS, *EDITS, *SWITCHES])
def test_months_and_years_add_up_to_the_total(books, book):
    names, got = books["names"][book], books["values"][book]
    cashflow = {k: v for k, v in got.items() if k.startswith("Cashflow!")}
    assert not [k for k, v in cashflow.items() if is_error(v)]
    total = _total(got, names)
    assert isinstance(total, float) and total > 0
    if book in OUTGROWN:        # the months no longer cover the spending: the check says so
        assert got[names["check_cashflow_fits"]] == 1
        assert sum(_named(got, names, "cashflow_month_total")) < total
        return
    assert got[names["check_cashflow_fits"]] == 0
    for name in ("cashflow_month_total", "cashflow_calendar_year_total", "cashflow_fiscal_year_total"):
        assert sum(_named(got, names, name)) == pytest.approx(total, rel=TOLERANCE), name


@pytest.mark.office
def test_each_line_adds_up_to_its_cost_sheet_figure(books):
    """Sum of months (column B) equals the Cost sheet column (C) on every line, in every book
    the months cover; column C shows the very line items of the Cost sheet."""
    rows = _rows_by_c(books["base"])
    # issue 25: the flat buffer is no line of the bill (a memo beside the ask), so none by month
    assert list(rows) == [*COST_LINES, "subtotal_cost", "vat_in_total", "total_cost"]
    total_row = _row(books["names"]["base"], "cashflow_month_total")
    assert rows["total_cost"] == total_row
    for book, got in books["values"].items():
        if book in OUTGROWN:
            continue
        names = books["names"][book]
        ws = {k: v for k, v in got.items() if k.startswith("Cashflow!")}
        numeric = [r for r in range(5, total_row + 1) if isinstance(ws.get(f"Cashflow!C{r}"), (int, float))]
        # 8 periods and the upfront payment, 8 lines, subtotal, VAT, total
        assert len(numeric) == 9 + len(COST_LINES) + 3, book
        for r in numeric:
            assert ws.get(f"Cashflow!B{r}", 0.0) == pytest.approx(ws[f"Cashflow!C{r}"], rel=TOLERANCE,
                                                                   abs=1e-6), (book, r)
        for name, r in rows.items():
            assert ws[f"Cashflow!C{r}"] == pytest.approx(got[names[name]], rel=TOLERANCE, abs=1e-9), (book, name)


@pytest.mark.office
def test_edited_months_equal_the_edited_scenarios_plan(books):
    """Every edit at once, in the generated book: each month's figure equals what the planner
    computes for the edited scenario (its own book has more months; the first 24 must agree)."""
    _agrees(books, "all", "fresh")


@pytest.mark.office
def test_switching_to_reserved_in_the_book_equals_the_reserved_plan(books):
    """The reviewer types reserved (a quarter up front) over on_demand: every month is what the
    planner computes for the seed on a reserved term."""
    _agrees(books, "switch-to-reserved", "seed-reserved")
    got, names = books["values"]["switch-to-reserved"], books["names"]["switch-to-reserved"]
    flag = books["values"]["base"]
    row = _rows_by_c(books["base"])["cluster_cost"]
    cluster = [got[f"Cashflow!{get_column_letter(5 + m)}{row}"] for m in range(24)]
    before = [flag[f"Cashflow!{get_column_letter(5 + m)}{row}"] for m in range(24)]
    project_end = got[names["project_end"]]
    project_end = excel_serial(project_end.date()) if isinstance(project_end, dt.datetime) else project_end
    firsts = [excel_serial(got[c].date()) for c in _cells(names["cashflow_month_cells"])]
    late = [m for m, a in enumerate(firsts) if a > project_end]
    assert all(before[m] == 0 for m in late)                    # on demand: nothing after the project
    assert sum(1 for m in late if cluster[m] > 0) >= 5          # reserved: the rest of the term


@pytest.mark.office
@pytest.mark.parametrize("book", ["switch-to-spot", "switch-to-on-demand", "switch-to-owned"])
def test_switching_away_from_reserved_moves_the_months_with_it(books, book):
    """After the switch the cluster line spreads the switched Cost sheet figure over the
    reservation only: no upfront payment, nothing after the end of evaluation."""
    got, names = books["values"][book], books["names"][book]
    rows = _rows_by_c(books["results"]["reserved"])
    upfront_row = next(r for r in range(1, rows["cluster_cost"]) if str(got.get(f"Cashflow!A{r}", "")).startswith(
        "Cluster: a reserved term's upfront"))
    assert got[f"Cashflow!C{upfront_row}"] == 0
    cluster = [got[f"Cashflow!{get_column_letter(5 + m)}{rows['cluster_cost']}"] for m in range(len(
        _cells(names["cashflow_month_cells"])))]
    assert sum(cluster) == pytest.approx(got[names["cluster_cost"]], rel=TOLERANCE)
    evaluation_end = got[names["evaluation_end"]]
    if isinstance(evaluation_end, dt.datetime):     # its time of day too: the run may end in a month's first hours
        evaluation_end = excel_serial(evaluation_end.date()) + (
            evaluation_end - dt.datetime.combine(evaluation_end.date(), dt.time())).total_seconds() / 86400
    firsts = [excel_serial(got[c].date()) for c in _cells(names["cashflow_month_cells"])]
    assert all(c == 0 for c, a in zip(cluster, firsts) if a >= evaluation_end)
    assert got[names["cluster_cost"]] != pytest.approx(books["values"]["reserved"][names["cluster_cost"]])


@pytest.mark.office
def test_an_owned_cluster_adds_up_in_libreoffice(books):
    got, names = books["values"]["owned"], books["names"]["owned"]
    plan = books["plans"]["owned"]
    assert got[names["cluster_cost"]] == pytest.approx(plan.values["owned_cost"], rel=TOLERANCE)
    row = _rows_by_c(books["results"]["owned"])["cluster_cost"]
    assert got[f"Cashflow!B{row}"] == pytest.approx(plan.values["owned_cost"], rel=TOLERANCE)
    assert sum(_named(got, names, "cashflow_month_total")) == pytest.approx(_total(got, names), rel=TOLERANCE)


@pytest.mark.office
def test_a_reserved_book_pays_up_front_in_libreoffice(books):
    got, names = books["values"]["reserved"], books["names"]["reserved"]
    row = _rows_by_c(books["results"]["reserved"])["cluster_cost"]
    months = _cells(names["cashflow_month_cells"])
    cluster = [got[f"Cashflow!{get_column_letter(5 + m)}{row}"] for m in range(len(months))]
    assert cluster[2] > got[names["reserved_upfront_cost"]] > 0        # March 2027: the term starts
    assert got[months[2]].date() == dt.date(2027, 3, 1)
    assert sum(1 for c in cluster if c > 0) == 13                         # March 2027 to March 2028
    assert sum(cluster) == pytest.approx(got[names["cluster_cost"]], rel=TOLERANCE)


@pytest.mark.office
def test_vat_follows_the_recoverable_switch(books):
    for book, charged in (("taxed", True), ("switch-vat-recoverable", False)):
        got, names = books["values"][book], books["names"][book]
        row = _rows_by_c(books["results"]["taxed"])["vat_in_total"]
        vat = got[f"Cashflow!B{row}"]
        assert vat == pytest.approx(got[names["vat_in_total"]], rel=TOLERANCE, abs=1e-9)
        assert (vat > 0) is charged, book


@pytest.mark.office
def test_a_zero_length_phase_pays_in_its_month_in_libreoffice(books):
    got, names = books["values"]["zero-phases"], books["names"]["zero-phases"]
    row = _rows_by_c(books["base"])["post_training_cost"]
    months = _cells(names["cashflow_month_cells"])
    post = [got[f"Cashflow!{get_column_letter(5 + m)}{row}"] for m in range(len(months))]
    assert sum(1 for p in post if p) == 1
    assert sum(post) == pytest.approx(got[names["post_training_cost"]], rel=TOLERANCE)


def _agrees(books, edited_book: str, plan_book: str) -> None:
    """The edited book's month block (inside its grid) equals the scenario's own book's."""
    base_names = books["names"][edited_book]
    edited, fresh = books["values"][edited_book], books["results"][plan_book]
    total_row = _row(base_names, "cashflow_month_total")
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
    assert compared > 24 * 20
    assert edited[base_names["total_cost"]] == pytest.approx(books["plans"][plan_book].total_cost, rel=TOLERANCE)


@pytest.mark.office
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


@pytest.mark.office
def test_the_difference_lines_read_zero(books):
    for book in ("all", "reserved", "owned", "taxed", "switch-to-reserved", "switch-to-owned"):
        got = books["values"][book]
        lines = [k for k, v in got.items() if k.startswith("Cashflow!A") and isinstance(v, str)
                 and "− total_cost" in v]
        assert len(lines) == 3
        for k in lines:
            assert got.get(k.replace("!A", "!B"), 0) == 0, (book, k)


@pytest.mark.office
def test_the_plans_months_are_the_sheets_months(books):
    """The plan's months (which the decision page's quarters sum) are what LibreOffice computes in
    the sheet's month row and total row."""
    for book in ("base", "reserved", "taxed"):
        result, got = books["results"][book], books["values"][book]
        names = result.names
        totals = month_totals(books["plans"][book])
        firsts = [excel_serial(got[c].date()) for c in _cells(names["cashflow_month_cells"])]
        assert [s for s, _ in totals] == firsts
        for (_, want), have in zip(totals, _named(got, names, "cashflow_month_total")):
            assert relative_difference(have, want) <= TOLERANCE


def test_the_chinese_cashflow_sheet(catalog):
    """In a zh book the Cashflow sheet's headings, line labels and live notes come from the zh
    catalog; the fiscal-year names and the fiscal-year note stay formulas."""
    from budget.core import i18n

    plan = plan_of(_seed_with({"language": "zh", "schedule.fiscal_year_start_month": 4}), catalog, "zh")
    result = write_workbook(plan)
    ws = openpyxl.load_workbook(io.BytesIO(result.data))["Cashflow"]
    zh = lambda key, **kw: i18n.fmt(key, "zh", **kw) if kw else i18n.text(key, "zh")  # noqa: E731
    assert ws["A1"].value == zh("workbook.sheets.cashflow")
    assert ws["A4"].value == zh("workbook.cashflow.columns.month")
    labels = {c.value for c in ws["A"] if isinstance(c.value, str)}
    for name in COST_LINES:
        assert zh(f"items.cashflow_{name}.label") in labels, name
    assert re.search(r"[\u4e00-\u9fff]", zh("items.cashflow_month_total.label"))
    shown = {v for k, v in result.expected.items() if k.startswith("Cashflow!A") and isinstance(v, str)}
    assert zh("workbook.cashflow.notes.fiscal_years", month=4) in shown
    assert zh("workbook.cashflow.years.fiscal_year_name", year=2027) in shown
    fiscal = next(c for c in ws["A"] if isinstance(c.value, str) and c.value.startswith("=IF(fiscal_year_start_month=1"))
    assert "fiscal_year_start_month" in fiscal.value.split(",", 2)[2]      # the month stays live
