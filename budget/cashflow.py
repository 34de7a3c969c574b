"""The Cashflow sheet: the Cost sheet's lines spread over calendar months, as live formulas.

Months run from the first of the project's start month (formulas over `start_date`, so moving
the start moves them), twice as many as the project needs and at least 24 (`plan._structure`
sizes them; `check_cashflow_fits` fails when an edit makes the project outgrow them). Each line
is spread by the days of its period that fall in each month, an overlap of half-open intervals
of date serials, MAX(0, MIN(month end, period end) - MAX(month start, period start)):

* billed rental: reserved GPUs × 24 × price × the days of the reservation (from the start of
  setup, `training_start + queue_days`, to `evaluation_end`) in the month;
* validation and scaling runs: their phases' days in the month × GPUs × 24 × price;
* network: the month's billed and experiment GPU-hours × the network price;
* storage: `storage_cost` × the month's share of the months held from the project start;
* staffing: `staffing_cost` × the month's share of the staffing table at its rates, each role
  paid from the project start for its months (blank months: the project's length);
* the buffer: the buffer rate × the month's subtotal.

Totals per month (`cashflow_month_total`), per calendar year and per fiscal year (its start
month an input; a fiscal year is named by the calendar year in which it ends). Every expected
value is computed here with the spreadsheet's arithmetic, LibreOffice's near-zero snapping of
differences included, so the recalculation tests hold each cell to the plan.
"""

from __future__ import annotations

import datetime as dt
import math

from openpyxl.styles import Font
from openpyxl.utils import get_column_letter

from .bind import excel_serial, from_serial
from .formula import _approx_equal, _ge, _gt, _lt
from .workbook import NOTE_FONT, SECTION_FONT, put_text

FIRST_COL = 5          # E: the first month; A label, B sum of months, C Cost sheet, D unit
MONTH_FORMAT = "mmm yyyy"
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

    def span(self, row: int, absolute: bool = False) -> str:
        d = "$" if absolute else ""
        return f"{d}{self.first}{d}{row}:{d}{self.last}{d}{row}"

    def label(self, row: int, text: str, bold: bool = False) -> None:
        put_text(self.ws.cell(row, 1), text)
        if bold:
            self.ws.cell(row, 1).font = Font(bold=True)

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
                cell.font = Font(bold=True)
        if cost_sheet is not None:
            w.formula(ws, row, 3, cost_sheet[0], cost_sheet[1], fmt)
        w.unit_cell(ws, row, 4, unit)
        for n, value in enumerate(values):
            col = FIRST_COL + n
            cell = w.formula(ws, row, col, per_month(get_column_letter(col)), value, fmt)
            if bold:
                cell.font = Font(bold=True)
        return values


def write_cashflow(w, ws, plan) -> None:
    """The Cashflow sheet of `w` (a budget.workbook._Writer) for `plan`."""
    s = _Sheet(w, ws, plan)
    v, n = plan.values, s.months
    w.title(ws, "Cashflow", "The Cost sheet's lines by calendar month, from the project's start month; "
                            "totals by calendar and fiscal year. Each line is spread by the days of its "
                            "period in each month.")
    head, ends, cal, fis = 4, 5, 6, 7

    # --- the months ---------------------------------------------------------------------
    starts, month_ends = [], []
    first = from_serial(v["start_date"])
    start = excel_serial(dt.date(first.year, first.month, 1))
    for m in range(n):
        starts.append(start)
        month_ends.append(_next_month(start))
        start = month_ends[-1]
    for c, label in enumerate(["Month", "Sum of months", "Cost sheet", "Unit"], 1):
        put_text(ws.cell(head, c), label)
        ws.cell(head, c).style = "Header"
    fy = v["fiscal_year_start_month"]
    cal_years, fis_years = [], []
    for m in range(n):
        col = FIRST_COL + m
        x, prev = get_column_letter(col), get_column_letter(col - 1)
        text = "DATE(YEAR(start_date),MONTH(start_date),1)" if m == 0 else f"{prev}{ends}"
        cell = w.formula(ws, head, col, text, starts[m], MONTH_FORMAT)
        cell.style = "Header"
        cell.number_format = MONTH_FORMAT
        w.formula(ws, ends, col, f"DATE(YEAR({x}{head}),MONTH({x}{head})+1,1)", month_ends[m], "yyyy-mm-dd")
        day = from_serial(starts[m])
        cal_years.append(float(day.year))
        w.formula(ws, cal, col, f"YEAR({x}{head})", cal_years[-1], "0")
        fis_years.append(float(day.year + (1 if fy > 1 and day.month >= fy else 0)))
        w.formula(ws, fis, col, f"YEAR({x}{head})+IF(AND(fiscal_year_start_month>1,"
                                f"MONTH({x}{head})>=fiscal_year_start_month),1,0)", fis_years[-1], "0")
        ws.column_dimensions[x].width = 11
    s.label(ends, "Month ends (the next month's first day)")
    s.label(cal, "Calendar year")
    s.label(fis, "Fiscal year (named by the year it ends in)")
    w.define("cashflow_month_cells", ws, s.span(head, True))

    # --- days of each period in each month ----------------------------------------------
    row = 9
    s.section(row, "Days in the month")
    res_start = v["training_start"] + v["queue_days"]
    held = v["storage_months_used"] * 365 / 12

    def days(r, label, lo_text, hi_text, lo, hi, cost_sheet):
        return s.line(r, label, "days", DAYS,
                      lambda x: f"MAX(0,MIN({x}${ends},{hi_text})-MAX({x}${head},{lo_text}))",
                      [_overlap(a, b, lo, hi) for a, b in zip(starts, month_ends)], cost_sheet)

    d_res, d_val, d_sca, d_sto, staff_row = range(row + 1, row + 6)
    res = days(d_res, "Cluster reserved: setup to the end of evaluation (billed)",
               "training_start+queue_days", "evaluation_end", res_start, v["evaluation_end"],
               ("billed_days", v["billed_days"]))
    val = days(d_val, "Small-scale validation", "validation_start", "validation_end",
               v["validation_start"], v["validation_end"], ("validation_weeks*7", v["validation_weeks"] * 7))
    sca = days(d_sca, "Mid-scale scaling runs", "scaling_start", "scaling_end",
               v["scaling_start"], v["scaling_end"], ("scaling_weeks*7", v["scaling_weeks"] * 7))
    sto = days(d_sto, "Storage held, from the project start", "start_date",
               "start_date+storage_months_used*365/12", v["start_date"], v["start_date"] + held,
               ("storage_months_used*365/12", held))
    staff_w = [_staff_weight(v, a, b) for a, b in zip(starts, month_ends)]
    end_of_role = 'start_date+(staff_months+(staff_months="")*project_months)*365/12'
    s.line(staff_row, "Staffing at the table's rates, each role from the project start for its months",
           "currency", MONEY,
           lambda x: "SUMPRODUCT(staff_headcount,staff_monthly_cost,"
                     f"(@-MAX({x}${head},start_date))*(@>MAX({x}${head},start_date))*(@<{x}${ends})"
                     f"+({x}${ends}-MAX({x}${head},start_date))*(@>={x}${ends}))*12/365".replace("@", f"({end_of_role})"),
           staff_w)
    staff_sum = math.fsum(staff_w)

    # --- cash out -------------------------------------------------------------------------
    row = staff_row + 2
    s.section(row, "Cash out by month")
    price, res_gpus = v["price_per_gpu_hour"], v["reserved_gpus"]
    vg, sg, net = v["validation_gpus"], v["scaling_gpus"], v["network_per_gpu_hour"]
    r_rent, r_val, r_sca, r_net, r_sto, r_staff = range(row + 1, row + 7)
    r_sub, r_buf, r_tot, r_cum = range(row + 7, row + 11)
    rent = s.line(r_rent, "GPU rental, billed: reserved GPUs × 24 × price × reserved days", "currency", MONEY,
                  lambda x: f"reserved_gpus*24*price_per_gpu_hour*{x}{d_res}",
                  [res_gpus * 24 * price * d for d in res], ("billed_rental_cost", v["billed_rental_cost"]))
    vals = s.line(r_val, "Validation runs: GPUs × 24 × price × days", "currency", MONEY,
                  lambda x: f"validation_gpus*24*price_per_gpu_hour*{x}{d_val}",
                  [vg * 24 * price * d for d in val],
                  ("validation_gpus*validation_weeks*7*24*price_per_gpu_hour",
                   vg * v["validation_weeks"] * 7 * 24 * price))
    scas = s.line(r_sca, "Scaling runs: GPUs × 24 × price × days", "currency", MONEY,
                  lambda x: f"scaling_gpus*24*price_per_gpu_hour*{x}{d_sca}",
                  [sg * 24 * price * d for d in sca],
                  ("scaling_gpus*scaling_weeks*7*24*price_per_gpu_hour", sg * v["scaling_weeks"] * 7 * 24 * price))
    nets = s.line(r_net, "Network: the month's billed and experiment GPU-hours × price", "currency", MONEY,
                  lambda x: f"(reserved_gpus*{x}{d_res}+validation_gpus*{x}{d_val}+scaling_gpus*{x}{d_sca})*24*network_per_gpu_hour",
                  [(res_gpus * a + vg * b + sg * c) * 24 * net for a, b, c in zip(res, val, sca)],
                  ("network_cost", v["network_cost"]))
    stos = s.line(r_sto, "Storage: its cost × the month's share of the months held", "currency", MONEY,
                  lambda x: f"IF(storage_months_used>0,storage_cost*{x}{d_sto}/(storage_months_used*365/12),0)",
                  [v["storage_cost"] * d / held if held > 0 else 0.0 for d in sto],
                  ("storage_cost", v["storage_cost"]))
    staffs = s.line(r_staff, "Staffing: its cost × the month's share of the table above", "currency", MONEY,
                    lambda x: f"IF($B${staff_row}>0,staffing_cost*{x}{staff_row}/$B${staff_row},0)",
                    [v["staffing_cost"] * x / staff_sum if staff_sum > 0 else 0.0 for x in staff_w],
                    ("staffing_cost", v["staffing_cost"]))
    subs = s.line(r_sub, "Subtotal", "currency", MONEY, lambda x: f"SUM({x}{r_rent}:{x}{r_staff})",
                  [math.fsum(p) for p in zip(rent, vals, scas, nets, stos, staffs)],
                  ("subtotal_cost", v["subtotal_cost"]))
    bufs = s.line(r_buf, "Contingency buffer: the buffer rate × the month's subtotal", "currency", MONEY,
                  lambda x: f"{x}{r_sub}*buffer_rate", [x * v["buffer_rate"] for x in subs],
                  ("buffer_cost", v["buffer_cost"]))
    tots = s.line(r_tot, "Total by month", "currency", MONEY, lambda x: f"{x}{r_sub}+{x}{r_buf}",
                  [a + b for a, b in zip(subs, bufs)], ("total_cost", v["total_cost"]), bold=True)
    w.define("cashflow_month_total", ws, s.span(r_tot, True))
    cum, running = [], 0.0
    for t in tots:
        running = running + t
        cum.append(running)
    s.line(r_cum, "Cumulative spend", "currency", MONEY,
           lambda x: f"{x}{r_tot}" if x == s.first else f"{get_column_letter(_col(x) - 1)}{r_cum}+{x}{r_tot}",
           cum, total=False)
    month_sum = math.fsum(tots)

    # --- the months add up to the total ---------------------------------------------------
    row = r_cum + 2
    s.section(row, "The months add up to the total")
    s.label(row + 1, "Sum of months − total_cost (0 = they add up)")
    w.formula(ws, row + 1, 2, f"ROUND(B{r_tot}-total_cost,2)", _round2(_sub(month_sum, v["total_cost"])), "#,##0.00")
    w.unit_cell(ws, row + 1, 4, "currency")
    s.label(row + 2, "The months add up to the Cost sheet's total (0 = fine)")
    fine = abs(_sub(month_sum, v["total_cost"])) <= abs(v["total_cost"]) / 1000 / 1000 / 1000
    cell = w.formula(ws, row + 2, 2, f"IF(ABS(B{r_tot}-total_cost)<=ABS(total_cost)/1000/1000/1000,0,1)",
                     0.0 if fine else 1.0, "0")
    w.flag_format(ws, cell.coordinate)
    s.label(row + 3, "The months cover the project, its storage and staffing (check_cashflow_fits)")
    cell = w.formula(ws, row + 3, 2, "check_cashflow_fits", v["check_cashflow_fits"], "0")
    w.flag_format(ws, cell.coordinate)

    # --- calendar and fiscal years --------------------------------------------------------
    years = math.ceil(n / 12) + 1     # enough rows for every year n months can touch
    row += 5
    row = _year_table(s, row, "By calendar year", cal, cal_years, tots, r_tot, years, v, fiscal=False)
    row = _year_table(s, row + 1, "By fiscal year", fis, fis_years, tots, r_tot, years, v, fiscal=True)
    note = ('IF(fiscal_year_start_month=1,"Fiscal years are calendar years (they start in January).",'
            '"Fiscal years start on the first day of month "&fiscal_year_start_month&'
            '" and are named by the calendar year in which they end.")')
    text = ("Fiscal years are calendar years (they start in January)." if fy == 1 else
            f"Fiscal years start on the first day of month {int(fy)} and are named by the calendar "
            "year in which they end.")
    cell = w.formula(ws, row + 1, 1, note, text, None)
    cell.style = "Normal"
    cell.font = NOTE_FONT
    put_text(ws.cell(row + 2, 1), "Each month's share is by days: the reservation, the phases, storage "
                                  "and each role run over half-open date intervals, so a period that "
                                  "starts or ends mid-month pays for the part of the month inside it.")
    ws.cell(row + 2, 1).font = NOTE_FONT

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
    from .formula import _round
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
    for c, label in enumerate(["Fiscal year" if fiscal else "Calendar year", "Total", "Ends in" if fiscal else ""], 1):
        if label:
            put_text(ws.cell(head, c), label)
            ws.cell(head, c).style = "Header"
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
            cell = w.formula(ws, r, 1, f'"FY"&C{r}', f"FY{int(year)}", None)
            cell.style = "Normal"
        total = math.fsum(t for t, y in zip(tots, keys) if y == year)
        totals.append(total)
        w.formula(ws, r, 2, f"SUMPRODUCT(({s.span(key_row, True)}={get_column_letter(year_col)}{r})"
                            f"*{s.span(r_tot, True)})", total, MONEY)
    last_row = first_row + years - 1
    name = "cashflow_fiscal_year_total" if fiscal else "cashflow_calendar_year_total"
    w.define(name, ws, f"$B${first_row}:$B${last_row}")
    all_years = math.fsum(totals)
    s.label(last_row + 1, "All years", bold=True)
    w.formula(ws, last_row + 1, 2, f"SUM(B{first_row}:B{last_row})", all_years, MONEY).font = Font(bold=True)
    s.label(last_row + 2, "All years − total_cost (0 = they add up)")
    w.formula(ws, last_row + 2, 2, f"ROUND(B{last_row + 1}-total_cost,2)",
              _round2(_sub(all_years, v["total_cost"])), "#,##0.00")
    return last_row + 2


def month_totals(result) -> list[tuple[float, float]]:
    """(first day of the month, total spent in it) for every month of a written workbook's
    Cashflow sheet: the values its formulas compute (`WorkbookResult.expected`)."""
    def cells(name: str) -> list:
        sheet, ref = result.names[name].split("!")
        first, last = ref.split(":")
        row = int("".join(ch for ch in first if ch.isdigit()))
        a = _col("".join(ch for ch in first if ch.isalpha()))
        b = _col("".join(ch for ch in last if ch.isalpha()))
        return [result.expected[f"{sheet}!{get_column_letter(c)}{row}"] for c in range(a, b + 1)]

    return list(zip(cells("cashflow_month_cells"), cells("cashflow_month_total")))

