"""The Cashflow sheet: the Cost sheet's lines spread over calendar months, as live formulas.

Months run from the first of the project's start month (formulas over `start_date`, so moving
the start moves them), twice as many as spending needs (`spend_months`) and at least 24
(`plan._structure` sizes them; `check_cashflow_fits` fails when an edit makes spending outgrow
them). Every month's cell spreads a Cost sheet line item itself, never a cost re-derived from
prices, so the months add up to `total_cost` whatever the tier, ownership or currency. A line is
spread pro rata over its period by the days of the period inside the month, an overlap of
half-open intervals of date serials, MAX(0, MIN(month end, period end) - MAX(month start, period
start)) ÷ the period's days; a period of no days puts its line wholly in the month holding its
start (so no formula divides by zero):

* `cluster_cost` over the reservation, setup to the end of evaluation [reservation_start,
  evaluation_end); a cluster rented on a reserved term pays `reserved_upfront_cost` in the month
  the term starts and the rest over the whole term when it outlasts the run,
  [reservation_start, reservation_start + MAX(evaluation_end - reservation_start,
  reserved_term_months × 365/12)): one formula per month that follows `price_tier` and `ownership`;
* `experiment_cost`: the validation runs' share of its GPU-hours over the validation phase, the
  scaling runs' over the scaling phase;
* `rollback_cost` over setup to the end of training; `post_training_cost` over evaluation;
  `serving_cost` from `deployment_start` for `serving_months`; `network_cost` over the reservation;
* `storage_cost` over the months held from the project start; `staffing_cost` by the month's
  share of the staffing table at its rates, each role paid from the project start for its months
  (blank months: the project's length);
* VAT: (the month's subtotal - its staffing) × the VAT rate, none when VAT is recoverable. The
  flat buffer is no line of the bill (issue 25: the ask is a percentile of the total), so none
  of a month either.

Totals per month (`cashflow_month_total`), per calendar year and per fiscal year (its start
month an input; a fiscal year is named by the calendar year in which it ends). Every expected
value is computed here with the spreadsheet's arithmetic, LibreOffice's near-zero snapping of
differences and its approximate comparisons included, so the recalculation tests hold each cell
to the plan.
"""

from __future__ import annotations

import datetime as dt
import math

from openpyxl.utils import get_column_letter

from ..core.dates import excel_serial, from_serial
from ..formula.expr import IF, Ref, _approx_equal, _eq, _ge, _gt, _le, _lt
from ..model.model import COST_LINES
from .writer import BOLD_FONT, NOTE_FONT, SECTION_FONT, column_dimension, live_text, put_text

FIRST_COL = 5          # E: the first month; A label, B sum of months, C Cost sheet, D unit
MONEY = "#,##0"
DAYS = "#,##0.0"
PRINT_SCALE = 75       # the months print several pages wide with A:D repeated, like the Timeline


def _sub(a: float, b: float) -> float:
    """a - b as LibreOffice computes it: 0 when a and b agree to about 15 digits."""
    if (a < 0) == (b < 0) and _approx_equal(a, b):
        return 0.0
    return a - b


def _next_month(serial: float) -> float:
    day = from_serial(serial)
    year, month = (day.year + 1, 1) if day.month == 12 else (day.year, day.month + 1)
    return excel_serial(dt.date(year, month, 1))


def _overlap(start: float, end: float, lo: float, hi: float) -> float:
    """MAX(0, MIN(end, hi) - MAX(start, lo)): the days of [lo, hi) inside the month [start, end)."""
    return max(0.0, _sub(min(end, hi), max(start, lo)))


class _Sheet:
    def __init__(self, w, ws, plan):
        self.w, self.ws, self.v = w, ws, plan.values
        self.months = len(plan.inputs["cashflow_month_cells"].value)
        self.first = get_column_letter(FIRST_COL)
        self.last = get_column_letter(FIRST_COL + self.months - 1)
        self.head_row, self.ends_row = 4, 5     # the months' first days, and their ends

    def span(self, row: int, absolute: bool = False) -> str:
        d = "$" if absolute else ""
        return f"{d}{self.first}{d}{row}:{d}{self.last}{d}{row}"

    def label(self, row: int, text: str, bold: bool = False) -> None:
        put_text(self.ws.cell(row, 1), text)
        if bold:
            self.ws.cell(row, 1).font = BOLD_FONT

    def section(self, row: int, text: str) -> None:
        self.ws.cell(row, 1, text).font = SECTION_FONT

    def line(self, row: int, label: str, unit: str, fmt: str, per_month, values: list[float],
             cost_sheet: tuple[str, float] | None = None, total: bool = True, bold: bool = False) -> list[float]:
        """A row: label, the sum of its months, the Cost sheet's figure, the unit, then one formula
        per month (`per_month(col_letter)` gives the text)."""
        w, ws = self.w, self.ws
        self.label(row, label, bold)
        if total:
            cell = w.formula(ws, row, 2, f"SUM({self.span(row)})", math.fsum(values), fmt)
            if bold:
                cell.font = BOLD_FONT
        if cost_sheet is not None:
            w.formula(ws, row, 3, cost_sheet[0], cost_sheet[1], fmt)
        w.unit_cell(ws, row, 4, unit)
        for n, value in enumerate(values):
            col = FIRST_COL + n
            cell = w.formula(ws, row, col, per_month(get_column_letter(col)), value, fmt)
            if bold:
                cell.font = BOLD_FONT
        return values


class _Period:
    """A row of the days of the period [lo, hi) in each month (column C: its `length` in days),
    and each month's share of the period: the days ÷ the length, or, for a period of no days,
    1 in the month holding lo and 0 elsewhere, so no formula divides by zero."""

    def __init__(self, s: "_Sheet", row: int, label: str, lo_name: str, hi_text: str, length_text: str,
                 lo: float, hi: float, length: float, starts: list[float], ends: list[float]):
        self.s, self.row, self.lo_name, self.lo, self.length = s, row, lo_name, lo, length
        self.days = s.line(row, label, "days", DAYS,
                           lambda x: f"MAX(0,MIN({x}${s.ends_row},{hi_text})-MAX({x}${s.head_row},{lo_name}))",
                           [_overlap(a, b, lo, hi) for a, b in zip(starts, ends)], (length_text, length))
        self.shares = [d / length if _gt(length, 0) else float(_le(a, lo) and _lt(lo, b))
                       for d, a, b in zip(self.days, starts, ends)]

    def share(self, x: str) -> str:
        r, s = self.row, self.s
        return (f"IF($C${r}>0,{x}{r}/$C${r},"
                f"({x}${s.head_row}<={self.lo_name})*({self.lo_name}<{x}${s.ends_row}))")


def write_cashflow(w, ws, plan) -> None:
    """The Cashflow sheet of `w` (a budget.workbook._Writer) for `plan`."""
    s = _Sheet(w, ws, plan)
    v, n, tx = plan.values, s.months, w.m
    w.title(ws, w.sheet_name("Cashflow"), tx("workbook.cashflow.subtitle"))
    head, ends, cal, fis = s.head_row, s.ends_row, 6, 7

    # --- the months ---------------------------------------------------------------------
    starts, month_ends = [], []
    first = from_serial(v["start_date"])
    start = excel_serial(dt.date(first.year, first.month, 1))
    for m in range(n):
        starts.append(start)
        month_ends.append(_next_month(start))
        start = month_ends[-1]
    for c, label in enumerate([tx("workbook.cashflow.columns.month"), tx("workbook.cashflow.columns.sum"),
                               tx("workbook.cashflow.columns.cost_sheet"), tx("workbook.columns.unit")], 1):
        put_text(ws.cell(head, c), label)
        w.named(ws.cell(head, c), "Header")
    fy = v["fiscal_year_start_month"]
    month_format = tx("workbook.cashflow.month_format")   # "Jan 2027", "2027年1月"
    cal_years, fis_years = [], []
    for m in range(n):
        col = FIRST_COL + m
        x, prev = get_column_letter(col), get_column_letter(col - 1)
        text = "DATE(YEAR(start_date),MONTH(start_date),1)" if m == 0 else f"{prev}{ends}"
        cell = w.formula(ws, head, col, text, starts[m], month_format)
        w.named(cell, "Header")
        cell.number_format = month_format
        w.formula(ws, ends, col, f"DATE(YEAR({x}{head}),MONTH({x}{head})+1,1)", month_ends[m], "yyyy-mm-dd")
        day = from_serial(starts[m])
        cal_years.append(float(day.year))
        w.formula(ws, cal, col, f"YEAR({x}{head})", cal_years[-1], "0")
        fis_years.append(float(day.year + (1 if fy > 1 and day.month >= fy else 0)))
        w.formula(ws, fis, col, f"YEAR({x}{head})+IF(AND(fiscal_year_start_month>1,"
                                f"MONTH({x}{head})>=fiscal_year_start_month),1,0)", fis_years[-1], "0")
        column_dimension(ws, x).width = 11
    s.label(ends, tx("workbook.cashflow.month_ends"))
    s.label(cal, tx("workbook.cashflow.calendar_year"))
    s.label(fis, tx("workbook.cashflow.fiscal_year"))
    w.define("cashflow_month_cells", ws, s.span(head, True))

    # --- how each line is spread: the days of its period in each month ------------------
    row = 9
    s.section(row, tx("workbook.cashflow.periods.heading"))
    flag_row = row + 1
    s.label(flag_row, tx("workbook.cashflow.periods.reserved_term"))
    term = 1.0 if _eq(v["price_tier"], "reserved") and _eq(v["ownership"], "rented") else 0.0
    cell = w.formula(ws, flag_row, 2, 'IF(AND(price_tier="reserved",ownership="rented"),1,0)', term, "0")
    cell.font = BOLD_FONT
    w.unit_cell(ws, flag_row, 4, "1 = yes")

    rows = iter(range(flag_row + 1, flag_row + 20))

    def period(label, lo_name, hi_text, length_text, lo, hi, length):
        return _Period(s, next(rows), label, lo_name, hi_text, length_text, lo, hi, length,
                       starts, month_ends)

    rs, ev_end = v["reservation_start"], v["evaluation_end"]
    reservation = period(tx("workbook.cashflow.periods.reservation"), "reservation_start",
                         "evaluation_end", "evaluation_end-reservation_start",
                         rs, ev_end, _sub(ev_end, rs))
    term_days = max(_sub(ev_end, rs), term * v["reserved_term_months"] * 365 / 12)
    cluster_len = f"MAX(evaluation_end-reservation_start,$B${flag_row}*reserved_term_months*365/12)"
    billed = period(tx("workbook.cashflow.periods.billed"), "reservation_start",
                    f"reservation_start+{cluster_len}", cluster_len, rs, rs + term_days, term_days)
    up_row = next(rows)
    upfront_total = term * v["reserved_upfront_cost"]
    upfront = s.line(up_row, tx("workbook.cashflow.periods.upfront"),
                     "currency", MONEY,
                     lambda x: f"$B${flag_row}*reserved_upfront_cost*({x}${head}<=reservation_start)"
                               f"*(reservation_start<{x}${ends})",
                     [upfront_total * float(_le(a, rs)) * float(_lt(rs, b)) for a, b in zip(starts, month_ends)],
                     (f"$B${flag_row}*reserved_upfront_cost", upfront_total))
    validation = period(tx("workbook.cashflow.periods.validation"), "validation_start", "validation_end",
                        "validation_end-validation_start", v["validation_start"], v["validation_end"],
                        _sub(v["validation_end"], v["validation_start"]))
    scaling = period(tx("workbook.cashflow.periods.scaling"), "scaling_start", "scaling_end", "scaling_end-scaling_start",
                     v["scaling_start"], v["scaling_end"], _sub(v["scaling_end"], v["scaling_start"]))
    rollback = period(tx("workbook.cashflow.periods.rollback"), "reservation_start", "training_end",
                      "training_end-reservation_start", rs, v["training_end"], _sub(v["training_end"], rs))
    post = period(tx("workbook.cashflow.periods.post_training"), "evaluation_start", "evaluation_end",
                  "evaluation_end-evaluation_start", v["evaluation_start"], ev_end,
                  _sub(ev_end, v["evaluation_start"]))
    served = v["serving_months"] * 365 / 12
    serving = period(tx("workbook.cashflow.periods.serving"), "deployment_start",
                     "deployment_start+serving_months*365/12", "serving_months*365/12",
                     v["deployment_start"], v["deployment_start"] + served, served)
    held = v["storage_months_used"] * 365 / 12
    storage = period(tx("workbook.cashflow.periods.storage"), "start_date",
                     "start_date+storage_months_used*365/12", "storage_months_used*365/12",
                     v["start_date"], v["start_date"] + held, held)
    staff_row = next(rows)
    staff_w = [_staff_weight(v, a, b) for a, b in zip(starts, month_ends)]
    end_of_role = 'start_date+(staff_months+(staff_months="")*project_months)*365/12'
    s.line(staff_row, tx("workbook.cashflow.periods.staffing"),
           "currency", MONEY,
           lambda x: "SUMPRODUCT(staff_headcount,staff_monthly_cost,"
                     f"(@-MAX({x}${head},start_date))*(@>MAX({x}${head},start_date))*(@<{x}${ends})"
                     f"+({x}${ends}-MAX({x}${head},start_date))*(@>={x}${ends}))*12/365".replace("@", f"({end_of_role})"),
           staff_w)
    staff_sum = math.fsum(staff_w)

    # --- cash out: each Cost sheet line by its period's share of the month ---------------
    row = staff_row + 2
    s.section(row, tx("workbook.cashflow.lines.heading"))
    vh, sh, eh = v["validation_gpu_hours"], v["scaling_gpu_hours"], v["experiment_gpu_hours"]
    split = [((vh * a + sh * b) / eh if _gt(eh, 0) else 0.0) for a, b in zip(validation.shares, scaling.shares)]
    def by_period(name, period):
        """A line spread by its period's days in each month."""
        return (tx(f"workbook.cashflow.lines.{name}"), lambda x: f"{name}*{period.share(x)}",
                [v[name] * f for f in period.shares])

    spread = {   # line item -> (label, the month's formula, its values)
        "cluster_cost": (
            tx("workbook.cashflow.lines.cluster_cost"),
            lambda x: f"{x}{up_row}+(cluster_cost-$C${up_row})*{billed.share(x)}",
            [u + _sub(v["cluster_cost"], upfront_total) * f for u, f in zip(upfront, billed.shares)]),
        "experiment_cost": (
            tx("workbook.cashflow.lines.experiment_cost"),
            lambda x: (f"experiment_cost*IF(experiment_gpu_hours>0,(validation_gpu_hours*{validation.share(x)}"
                       f"+scaling_gpu_hours*{scaling.share(x)})/experiment_gpu_hours,0)"),
            [v["experiment_cost"] * f for f in split]),
        "rollback_cost": by_period("rollback_cost", rollback),
        "post_training_cost": by_period("post_training_cost", post),
        "serving_cost": by_period("serving_cost", serving),
        "network_cost": by_period("network_cost", reservation),
        "storage_cost": by_period("storage_cost", storage),
        "staffing_cost": (tx("workbook.cashflow.lines.staffing_cost"),
                          lambda x: f"IF($B${staff_row}>0,staffing_cost*{x}{staff_row}/$B${staff_row},0)",
                          [v["staffing_cost"] * x / staff_sum if _gt(staff_sum, 0) else 0.0 for x in staff_w]),
    }
    if set(spread) != set(COST_LINES):
        raise ValueError(f"the Cashflow sheet spreads {sorted(spread)}, the Cost sheet's lines are "  # i18n: not text
                         f"{sorted(COST_LINES)}: give every line a period")
    first_line = row + 1
    lines = {}
    for k, name in enumerate(COST_LINES):
        label, text, values = spread[name]
        lines[name] = s.line(first_line + k, label, "currency", MONEY, text, values, (name, v[name]))
    last_line = first_line + len(COST_LINES) - 1
    staff_line = first_line + COST_LINES.index("staffing_cost")
    r_sub, r_vat, r_tot, r_cum = range(last_line + 1, last_line + 5)
    subs = s.line(r_sub, tx("workbook.cashflow.lines.subtotal"), "currency", MONEY, lambda x: f"SUM({x}{first_line}:{x}{last_line})",
                  [math.fsum(p) for p in zip(*lines.values())], ("subtotal_cost", v["subtotal_cost"]))
    recoverable = _eq(v["vat_recoverable"], "yes")
    vats = s.line(r_vat, tx("workbook.cashflow.lines.vat"), "currency", MONEY,
                  lambda x: f'IF(vat_recoverable="yes",0,({x}{r_sub}-{x}{staff_line})*vat_rate)',
                  [0.0 if recoverable else _sub(a, b) * v["vat_rate"]
                   for a, b in zip(subs, lines["staffing_cost"])],
                  ("vat_in_total", v["vat_in_total"]))
    tots = s.line(r_tot, tx("workbook.cashflow.lines.total"), "currency", MONEY, lambda x: f"{x}{r_sub}+{x}{r_vat}",
                  [a + c for a, c in zip(subs, vats)], ("total_cost", v["total_cost"]), bold=True)
    w.define("cashflow_month_total", ws, s.span(r_tot, True))
    cum, running = [], 0.0
    for t in tots:
        running = running + t
        cum.append(running)
    s.line(r_cum, tx("workbook.cashflow.lines.cumulative"), "currency", MONEY,
           lambda x: f"{x}{r_tot}" if x == s.first else f"{get_column_letter(_col(x) - 1)}{r_cum}+{x}{r_tot}",
           cum, total=False)
    month_sum = math.fsum(tots)

    # --- the months add up to the total ---------------------------------------------------
    row = r_cum + 2
    s.section(row, tx("workbook.cashflow.add_up.heading"))
    s.label(row + 1, tx("workbook.cashflow.add_up.difference"))
    w.formula(ws, row + 1, 2, f"ROUND(B{r_tot}-total_cost,2)", _round2(_sub(month_sum, v["total_cost"])), "#,##0.00")
    w.unit_cell(ws, row + 1, 4, "currency")
    s.label(row + 2, tx("workbook.cashflow.add_up.check"))
    fine = abs(_sub(month_sum, v["total_cost"])) <= abs(v["total_cost"]) / 1000 / 1000 / 1000
    cell = w.formula(ws, row + 2, 2, f"IF(ABS(B{r_tot}-total_cost)<=ABS(total_cost)/1000/1000/1000,0,1)",
                     0.0 if fine else 1.0, "0")
    w.flag_format(ws, cell.coordinate)
    s.label(row + 3, tx("workbook.cashflow.add_up.covers"))
    cell = w.formula(ws, row + 3, 2, "check_cashflow_fits", v["check_cashflow_fits"], "0")
    w.flag_format(ws, cell.coordinate)

    # --- calendar and fiscal years --------------------------------------------------------
    years = math.ceil(n / 12) + 1     # enough rows for every year n months can touch
    row += 5
    row = _year_table(s, row, tx("workbook.cashflow.years.by_calendar_year"), cal, cal_years, tots, r_tot, years, v,
                      fiscal=False)
    row = _year_table(s, row + 1, tx("workbook.cashflow.years.by_fiscal_year"), fis, fis_years, tots, r_tot, years,
                      v, fiscal=True)
    month = Ref("fiscal_year_start_month")
    note = IF(month.eq(1), tx("workbook.cashflow.notes.calendar_fiscal_years"),
              live_text(tx("workbook.cashflow.notes.fiscal_years"), month=month))
    cell = w.live(ws, row + 1, 1, note)
    w.named(cell, "Normal")
    cell.font = NOTE_FONT
    put_text(ws.cell(row + 2, 1), tx("workbook.cashflow.notes.by_days"))
    ws.cell(row + 2, 1).font = NOTE_FONT
    put_text(ws.cell(row + 3, 1), tx("workbook.cashflow.notes.follows_cost"))
    ws.cell(row + 3, 1).font = NOTE_FONT

    w.widths(ws, [52, 14, 14, 12])
    ws.freeze_panes = ws.cell(head + 1, FIRST_COL)
    w.page_setup(ws, f"{head}:{head}")
    ws.sheet_properties.pageSetUpPr.fitToPage = False   # months run over pages, A:D on each
    ws.page_setup.scale = PRINT_SCALE
    ws.print_title_cols = "A:D"


def _col(letter: str) -> int:
    from openpyxl.utils import column_index_from_string
    return column_index_from_string(letter)


def _round2(x: float) -> float:
    from ..formula.expr import _round
    return _round(x, 2)


def _staff_weight(v, start: float, end: float) -> float:
    """The month's staffing at the table's rates: Σ headcount × monthly cost × days of the role in
    the month × 12/365, each role from the project start for its months (blank: the project's)."""
    lo, total = max(start, v["start_date"]), []
    for h, c, m in zip(v["staff_headcount"], v["staff_monthly_cost"], v["staff_months"]):
        months = (m if m is not None else 0.0) + (1.0 if m is None else 0.0) * v["project_months"]
        role_end = v["start_date"] + months * 365 / 12
        days = (_sub(role_end, lo) * _gt(role_end, lo) * _lt(role_end, end)
                + _sub(end, lo) * _ge(role_end, end))
        total.append((h or 0.0) * (c or 0.0) * days)
    return math.fsum(total) * 12 / 365


def _year_table(s: _Sheet, row: int, heading: str, key_row: int, keys: list[float], tots: list[float],
                r_tot: int, years: int, v, fiscal: bool) -> int:
    """Year | total rows over the month totals: SUMPRODUCT((year row = year) × total row)."""
    w, ws = s.w, s.ws
    s.section(row, heading)
    head = row + 1
    tx = w.m
    heads = ([tx("workbook.cashflow.years.fiscal_year"), tx("workbook.cashflow.years.total"),
              tx("workbook.cashflow.years.ends_in")] if fiscal else
             [tx("workbook.cashflow.calendar_year"), tx("workbook.cashflow.years.total"), ""])
    for c, label in enumerate(heads, 1):
        if label:
            put_text(ws.cell(head, c), label)
            w.named(ws.cell(head, c), "Header")
    w.unit_cell(ws, head, 4, "currency")
    first_row = head + 1
    year_col = 3 if fiscal else 1       # the number each row matches; fiscal rows show "FY" & it
    totals = []
    for k in range(years):
        r = first_row + k
        year = keys[0] + k
        text = f"{s.first}{key_row}" if k == 0 else \
            f"{get_column_letter(year_col)}{r - 1}+1"
        w.formula(ws, r, year_col, text, year, "0")
        if fiscal:
            name = live_text(tx("workbook.cashflow.years.fiscal_year_name"), year=Ref(f"C{r}"))
            cell = w.formula(ws, r, 1, name.excel(), tx("workbook.cashflow.years.fiscal_year_name", year=int(year)),
                             None)
            w.named(cell, "Normal")
        total = math.fsum(t for t, y in zip(tots, keys) if y == year)
        totals.append(total)
        w.formula(ws, r, 2, f"SUMPRODUCT(({s.span(key_row, True)}={get_column_letter(year_col)}{r})"
                            f"*{s.span(r_tot, True)})", total, MONEY)
    last_row = first_row + years - 1
    name = "cashflow_fiscal_year_total" if fiscal else "cashflow_calendar_year_total"
    w.define(name, ws, f"$B${first_row}:$B${last_row}")
    all_years = math.fsum(totals)
    s.label(last_row + 1, tx("workbook.cashflow.years.all"), bold=True)
    w.formula(ws, last_row + 1, 2, f"SUM(B{first_row}:B{last_row})", all_years, MONEY).font = BOLD_FONT
    s.label(last_row + 2, tx("workbook.cashflow.years.difference"))
    w.formula(ws, last_row + 2, 2, f"ROUND(B{last_row + 1}-total_cost,2)",
              _round2(_sub(all_years, v["total_cost"])), "#,##0.00")
    return last_row + 2


def month_totals(result) -> list[tuple[float, float]]:
    """(first day of the month, total spent in it, VAT included) for every month of a
    written workbook's Cashflow sheet: the values its formulas compute (`WorkbookResult.expected`),
    which add up to `total_cost` when the months cover the spending (`check_cashflow_fits`)."""
    def cells(name: str) -> list:
        sheet, ref = result.names[name].split("!")
        first, last = ref.split(":")
        row = int("".join(ch for ch in first if ch.isdigit()))
        a = _col("".join(ch for ch in first if ch.isalpha()))
        b = _col("".join(ch for ch in last if ch.isalpha()))
        return [result.expected[f"{sheet}!{get_column_letter(c)}{row}"] for c in range(a, b + 1)]

    return list(zip(cells("cashflow_month_cells"), cells("cashflow_month_total")))

