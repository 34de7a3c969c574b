"""The Cashflow sheet: the Cost sheet's lines spread over calendar months, as live formulas.

Every figure is an item of the model (budget/model/cashflow.py: what each month spreads and why),
computed by the planner and rendered here from its expression: the month table's rows across the
month columns (E on; A label, B the sum of the months, C the Cost sheet's figure or the period's
days, D unit), its own figures in their cells, and the year tables below, one row per year. A
resolver gives each name its cell: a row item's cell in the column being written (`name@row`), the
one before (`name@prev`, a chain's), its whole row (a bare name: a sum, an array over the months),
or the cell of one of the table's own figures; any other name is the book's defined name.
"""

from __future__ import annotations

from openpyxl.utils import get_column_letter

from ..formula.expr import IF, SUM, Cell, Ref, row_expr
from ..model.cashflow import MONTHS, SHEET, TOTALS, YEARS, line_row
from ..model.model import COST_LINES
from .writer import BOLD_FONT, NOTE_FONT, SECTION_FONT, Resolved, column_dimension, live_text, put_text

FIRST_COL = 5          # E: the first month; A label, B sum of months, C Cost sheet, D unit
MONEY = "#,##0"
DAYS = "#,##0.0"
CENTS = "#,##0.00"
PRINT_SCALE = 62       # the months print several pages wide with A repeated, like the Timeline
LABEL_WIDTH = 40       # column A: narrow enough for seven months beside it on a portrait page
HEAD, ENDS, CALENDAR, FISCAL = 4, 5, 6, 7      # the months' first days, their ends, their years
MONTH_ROWS = (("cashflow_month_start", HEAD), ("cashflow_month_end", ENDS),
              ("cashflow_calendar_year", CALENDAR), ("cashflow_fiscal_year", FISCAL))
FLAG_ROW = 10
# The rows of how each line is spread, below the flag: the periods' days in each month, the
# upfront payment after the billed period, the staffing weight last
SPREAD_ROWS = ("cashflow_reservation_days", "cashflow_billed_days", "cashflow_upfront", "cashflow_validation_days",
               "cashflow_scaling_days", "cashflow_rollback_days", "cashflow_post_training_days",
               "cashflow_serving_days", "cashflow_storage_days", "cashflow_staff_weight")
# The year tables in order, each with its heading
YEAR_TABLES = {"calendar": "workbook.cashflow.years.by_calendar_year",
               "fiscal": "workbook.cashflow.years.by_fiscal_year"}


class _Layout:
    """Where each of the sheet's items is: a month row (its row), a year table's column (its
    column and first row), one of the tables' own figures (its cell)."""

    def __init__(self, plan):
        self.months = len(plan.values[MONTHS])
        self.years = len(plan.values[YEARS])
        self.first = get_column_letter(FIRST_COL)
        self.last = get_column_letter(FIRST_COL + self.months - 1)
        self.rows = dict(MONTH_ROWS)
        self.columns: dict[str, tuple[int, int]] = {}
        self.cells: dict[str, tuple[int, int]] = {"cashflow_reserved_term": (FLAG_ROW, 2)}
        for r, name in enumerate(SPREAD_ROWS, FLAG_ROW + 1):
            self.month_row(name, r, plan)
        self.lines_heading = self.rows["cashflow_staff_weight"] + 2
        shown = [line_row(n) for n in COST_LINES] + [name for name, _ in TOTALS] + ["cashflow_cumulative"]
        for r, name in enumerate(shown, self.lines_heading + 1):
            self.month_row(name, r, plan)
        self.add_up = self.rows["cashflow_cumulative"] + 2
        self.cells["cashflow_months_difference"] = (self.add_up + 1, 2)
        self.cells["cashflow_months_add_up"] = (self.add_up + 2, 2)
        self.year_heading = {"calendar": self.add_up + 5}
        self.year_table("calendar", 1)
        self.year_heading["fiscal"] = self.year_heading["calendar"] + self.years + 4
        self.year_table("fiscal", 3)

    def month_row(self, name: str, row: int, plan) -> None:
        """A row of the month table; its sum in B and its period's days in C, where items."""
        self.rows[name] = row
        for suffix, col in (("_sum", 2), ("_total", 3)):
            if f"{name}{suffix}" in plan.values:
                self.cells[f"{name}{suffix}"] = (row, col)

    def year_table(self, kind: str, key_col: int) -> None:
        """A year table: its years (A, or C where A names a fiscal year), totals (B), their sum and
        its difference from total_cost below."""
        first = self.year_heading[kind] + 2
        self.columns[f"cashflow_{kind}_years"] = (key_col, first)
        self.columns[f"cashflow_{kind}_year_total"] = (2, first)
        self.cells[f"cashflow_{kind}_year_total_sum"] = (first + self.years, 2)
        self.cells[f"cashflow_{kind}_years_difference"] = (first + self.years + 1, 2)

    def resolver(self, month: int | None = None, year: int | None = None):
        """Names in a formula of month column `month` (or year row `year`, or neither: a figure of
        the table's own) as cells."""
        def resolve(name: str) -> str:
            base, _, how = name.partition("@")
            if base in self.rows:
                return self._along(self.rows[base], how, month)
            if base in self.columns:
                return self._down(*self.columns[base], how, year)
            if base in self.cells and not how:
                row, col = self.cells[base]
                return f"${get_column_letter(col)}${row}"
            if how:
                raise KeyError(f"{name}: no cell of that in this formula")  # i18n: not text
            return name
        return Resolved(resolve).__getitem__

    def _along(self, row: int, how: str, month: int | None) -> str:
        if not how:                             # the whole row: a sum, an array over the months
            return f"{self.first}{row}:{self.last}{row}"
        return f"{get_column_letter(FIRST_COL + _place(how, month))}{row}"

    def _down(self, col: int, first: int, how: str, year: int | None) -> str:
        letter = get_column_letter(col)
        if not how:
            return f"{letter}{first}:{letter}{first + self.years - 1}"
        return f"{letter}{first + _place(how, year)}"

    def span(self, row: int) -> str:
        return f"${self.first}${row}:${self.last}${row}"


def _place(how: str, k: int | None) -> int:
    """The row (or month) `name@how` reads from row k: its own, or the one before."""
    if k is None or how not in ("row", "prev"):
        raise KeyError(f"@{how} has no cell in this formula")  # i18n: not text
    return k - (how == "prev")


class _Sheet:
    def __init__(self, w, ws, plan):
        self.w, self.ws, self.v, self.items = w, ws, plan.values, w.model.items
        self.at = _Layout(plan)
        self.own = self.at.resolver()
        self.columns = [self.at.resolver(month=k) for k in range(self.at.months)]

    def label(self, row: int, text: str, bold: bool = False) -> None:
        put_text(self.ws.cell(row, 1), text)
        if bold:
            self.ws.cell(row, 1).font = BOLD_FONT

    def section(self, row: int, text: str) -> None:
        self.ws.cell(row, 1, text).font = SECTION_FONT

    def figure(self, row: int, col: int, name: str, fmt: str | None):
        """An item in one cell: the sheet's own figure from its expression, another sheet's by name."""
        item = self.items[name]
        expr = item.expr if item.sheet == SHEET else Ref(name)
        return self.w.formula(self.ws, row, col, expr, self.v[name], fmt, self.own)

    def months(self, name: str, row: int, fmt: str | None, bold: bool = False) -> None:
        """A month row's formula in every month column."""
        expr = self.items[name].expr
        for k, value in enumerate(self.v[name]):
            cell = self.w.formula(self.ws, row, FIRST_COL + k, row_expr(expr, k), value, fmt, self.columns[k])
            if bold:
                cell.font = BOLD_FONT

    def line(self, name: str, fmt: str, bold: bool = False, total: bool = True, cost_sheet: str | None = None) -> None:
        """A month row: its label, the sum of its months, the Cost sheet's figure (or its period's
        days), its unit, then its months."""
        w, ws, row, item = self.w, self.ws, self.at.rows[name], self.items[name]
        self.label(row, item.label, bold)
        if total:       # the sum of the months: the table's own figure where other cells read it
            whole, summed = f"{name}_sum", SUM(Ref(name))
            cell = (self.figure(row, 2, whole, fmt) if whole in self.items else
                    w.formula(ws, row, 2, summed, w.value_of(summed), fmt, self.own))
            if bold:
                cell.font = BOLD_FONT
        figure = cost_sheet or (f"{name}_total" if f"{name}_total" in self.items else None)
        if figure is not None:
            self.figure(row, 3, figure, fmt)
        w.unit_cell(ws, row, 4, item.unit)
        self.months(name, row, fmt, bold)


def write_cashflow(w, ws, plan) -> None:
    """The Cashflow sheet of `w` (a budget.sheets.writer.Writer) for `plan`."""
    s = _Sheet(w, ws, plan)
    w.title(ws, w.sheet_name("Cashflow"), w.m("workbook.cashflow.subtitle"))
    _month_heads(s)
    _spread(s)
    _lines(s)
    _add_up(s)
    last = [_year_table(s, kind) for kind in YEAR_TABLES][-1]
    _notes(s, last)
    w.widths(ws, [LABEL_WIDTH, 14, 14, 12])
    ws.freeze_panes = ws.cell(HEAD + 1, FIRST_COL)
    w.page_setup(ws, f"{HEAD}:{HEAD}")
    # months run over portrait pages, the labels (A) on each: every row on one page's height,
    # seven months a page, so two years print on four pages (the reviewer's pack, issue 29)
    ws.page_setup.orientation = "portrait"
    ws.sheet_properties.pageSetUpPr.fitToPage = False
    ws.page_setup.scale = PRINT_SCALE
    ws.print_title_cols = "A:A"


def _month_heads(s: _Sheet) -> None:
    """The months: each one's first day (the heading), end, calendar year and fiscal year."""
    w, ws, tx = s.w, s.ws, s.w.m
    for c, label in enumerate([tx("workbook.cashflow.columns.month"), tx("workbook.cashflow.columns.sum"),
                               tx("workbook.cashflow.columns.cost_sheet"), tx("workbook.columns.unit")], 1):
        put_text(ws.cell(HEAD, c), label)
        w.named(ws.cell(HEAD, c), "Header")
    month_format = tx("workbook.cashflow.month_format")   # "Jan 2027", "2027年1月"
    formats = {HEAD: month_format, ENDS: "yyyy-mm-dd", CALENDAR: "0", FISCAL: "0"}
    for k in range(s.at.months):
        for name, row in MONTH_ROWS:
            cell = w.formula(ws, row, FIRST_COL + k, row_expr(s.items[name].expr, k), s.v[name][k],
                             formats[row], s.columns[k])
            if row == HEAD:
                w.named(cell, "Header")
                cell.number_format = month_format
        column_dimension(ws, get_column_letter(FIRST_COL + k)).width = 11
    for name, row in MONTH_ROWS[1:]:
        s.label(row, s.items[name].label)
    w.define("cashflow_month_cells", ws, s.at.span(HEAD))


def _spread(s: _Sheet) -> None:
    """How each line is spread: the reserved-term flag, each period's days in each month, the
    upfront payment and the staffing table's weight."""
    w, ws = s.w, s.ws
    s.section(FLAG_ROW - 1, w.m("workbook.cashflow.periods.heading"))
    term = "cashflow_reserved_term"
    s.label(FLAG_ROW, s.items[term].label)
    s.figure(FLAG_ROW, 2, term, "0").font = BOLD_FONT
    w.unit_cell(ws, FLAG_ROW, 4, s.items[term].unit)
    for name in SPREAD_ROWS:
        s.line(name, DAYS if s.items[name].unit == "days" else MONEY)


def _lines(s: _Sheet) -> None:
    """Cash out: each Cost sheet line by its period's share of the month, the totals and the
    running total."""
    s.section(s.at.lines_heading, s.w.m("workbook.cashflow.lines.heading"))
    for name in COST_LINES:
        s.line(line_row(name), MONEY, cost_sheet=name)
    for name, cost_sheet in TOTALS:
        s.line(name, MONEY, bold=name == "cashflow_month_total", cost_sheet=cost_sheet)
    s.w.define("cashflow_month_total", s.ws, s.at.span(s.at.rows["cashflow_month_total"]))
    s.line("cashflow_cumulative", MONEY, total=False)


def _add_up(s: _Sheet) -> None:
    """The months add up to the total: their difference, the flag, and whether they cover all
    spending (check_cashflow_fits)."""
    w, ws, row = s.w, s.ws, s.at.add_up
    s.section(row, w.m("workbook.cashflow.add_up.heading"))
    for name, fmt in (("cashflow_months_difference", CENTS), ("cashflow_months_add_up", "0")):
        r = s.at.cells[name][0]
        s.label(r, s.items[name].label)
        cell = s.figure(r, 2, name, fmt)
        if fmt == CENTS:
            w.unit_cell(ws, r, 4, s.items[name].unit)
        else:
            w.flag_format(ws, cell.coordinate)
    s.label(row + 3, w.m("workbook.cashflow.add_up.covers"))
    cell = s.figure(row + 3, 2, "check_cashflow_fits", "0")
    w.flag_format(ws, cell.coordinate)


def _year_table(s: _Sheet, kind: str) -> int:
    """Year | total rows over the month totals, all years' sum and its difference from total_cost.
    Returns its last row."""
    w, ws, tx, at = s.w, s.ws, s.w.m, s.at
    fiscal = kind == "fiscal"
    row = at.year_heading[kind]
    s.section(row, tx(YEAR_TABLES[kind]))
    heads = ([tx("workbook.cashflow.years.fiscal_year"), tx("workbook.cashflow.years.total"),
              tx("workbook.cashflow.years.ends_in")] if fiscal else
             [tx("workbook.cashflow.calendar_year"), tx("workbook.cashflow.years.total"), ""])
    for c, label in enumerate(heads, 1):
        if label:
            put_text(ws.cell(row + 1, c), label)
            w.named(ws.cell(row + 1, c), "Header")
    w.unit_cell(ws, row + 1, 4, "currency")
    years, totals = f"cashflow_{kind}_years", f"cashflow_{kind}_year_total"
    (key_col, first), expr = at.columns[years], s.items[years].expr
    for k in range(at.years):
        r, resolve, year = first + k, at.resolver(year=k), s.v[years][k]
        w.formula(ws, r, key_col, row_expr(expr, k), year, "0", resolve)
        if fiscal:      # the year's name, live over the calendar year it ends in
            name = live_text(tx("workbook.cashflow.years.fiscal_year_name"), year=Cell(r, key_col))
            w.named(w.formula(ws, r, 1, name, tx("workbook.cashflow.years.fiscal_year_name", year=int(year)), None),
                    "Normal")
        w.formula(ws, r, 2, row_expr(s.items[totals].expr, k), s.v[totals][k], MONEY, resolve)
    w.define(totals, ws, f"$B${first}:$B${first + at.years - 1}")
    whole, difference = f"{totals}_sum", f"cashflow_{kind}_years_difference"
    s.label(at.cells[whole][0], s.items[whole].label, bold=True)
    s.figure(*at.cells[whole], whole, MONEY).font = BOLD_FONT
    s.label(at.cells[difference][0], s.items[difference].label)
    s.figure(*at.cells[difference], difference, CENTS)
    return at.cells[difference][0]


def _notes(s: _Sheet, row: int) -> None:
    """What fiscal years are (live: their first month is an input), and how the months are spread."""
    w, ws, tx = s.w, s.ws, s.w.m
    month = Ref("fiscal_year_start_month")
    note = IF(month.eq(1), tx("workbook.cashflow.notes.calendar_fiscal_years"),
              live_text(tx("workbook.cashflow.notes.fiscal_years"), month=month))
    cell = w.live(ws, row + 1, 1, note)
    w.named(cell, "Normal")
    cell.font = NOTE_FONT
    for r, key in ((row + 2, "by_days"), (row + 3, "follows_cost")):
        put_text(ws.cell(r, 1), tx(f"workbook.cashflow.notes.{key}"))
        ws.cell(r, 1).font = NOTE_FONT
