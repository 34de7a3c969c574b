"""The Cashflow sheet's figures as items of the model: the Cost sheet's lines spread over calendar
months, and the months' totals by calendar and fiscal year (issue 24: the planner computes them,
the sheet renders each from its expression, the decision page sums the plan's months).

The month table has one row per month column of the sheet (`cashflow_month_cells`, sized by
`plan._structure`: twice the spending and at least 24 months, `check_cashflow_fits` failing when an
edit makes spending outgrow them); the year tables one row per year those months can touch
(`cashflow_year_cells`). Months run from the first of the project's start month, each starting a
month after the one before (a Chain). Every month spreads a Cost sheet line item itself, never a
cost re-derived from prices, so the months add up to `total_cost` whatever the tier, ownership or
currency. A line is spread pro rata over its period by the days of the period inside the month,
an overlap of half-open intervals of date serials, MAX(0, MIN(month end, period end) - MAX(month
start, period start)) ÷ the period's days; a period of no days puts its line wholly in the month
holding its start (so no formula divides by zero):

* `cluster_cost` over the reservation, setup to the end of evaluation [reservation_start,
  evaluation_end); a cluster rented on a reserved term pays `reserved_upfront_cost` in the month
  the term starts and the rest over the whole term when it outlasts the run, [reservation_start,
  reservation_start + MAX(evaluation_end - reservation_start, reserved_term_months × days_per_year/12)): one
  formula per month that follows `price_tier` and `ownership`;
* `experiment_cost`: the validation runs' share of its GPU-hours over the validation phase, the
  scaling runs' over the scaling phase;
* `rollback_cost` over setup to the end of training; `post_training_cost` over evaluation;
  `serving_cost` from `deployment_start` for `serving_months`; `network_cost` over the reservation;
* `storage_cost` over the months held from the project start; `staffing_cost` by the month's share
  of the staffing table at its rates, each role paid from the project start for its months (blank
  months: the project's length);
* VAT: (the month's subtotal - its staffing) × the VAT rate, none when VAT is recoverable. The flat
  buffer is no line of the bill (issue 25: the ask is a percentile of the total), so none of a month.

Totals per month (`cashflow_month_total`), per calendar year and per fiscal year (its start month
an input; a fiscal year is named by the calendar year in which it ends), and the sums that show
they add up. All are of kind "rows": like the Stages sheet's rows they are the Cashflow sheet's
table, not single named figures of the model (the Compare and Sensitivity columns, plan.json).
"""

from __future__ import annotations

from ..formula.expr import (ABS, AND, DATE, IF, MAX, MIN, MONTH, ROUND, SUM, SUMPRODUCT, YEAR, At, BlankOf, Chain,
                            Each, Expr, Of, PerRow, Prev, Ref)
from .lineitems import ModelBuilder

SHEET = "Cashflow"                 # i18n: not text (the sheet id)
MONTHS = "cashflow_month_cells"    # the month table's rows: the sheet's month columns
YEARS = "cashflow_year_cells"      # the year tables' rows
START, END = "cashflow_month_start", "cashflow_month_end"
# The day each period a line is spread over starts (a date item or input)
PERIOD_STARTS = {"reservation": "reservation_start", "billed": "reservation_start",
                 "validation": "validation_start", "scaling": "scaling_start", "rollback": "reservation_start",
                 "post_training": "evaluation_start", "serving": "deployment_start", "storage": "start_date"}
# The month rows after the lines, each with the Cost sheet's figure its months add up to
TOTALS = (("cashflow_subtotal", "subtotal_cost"), ("cashflow_vat", "vat_in_total"), ("cashflow_month_total", "total_cost"))


def line_row(line: str) -> str:
    """The month row spreading a Cost sheet line item."""
    return f"cashflow_{line}"


def months_of(expr) -> Expr:
    """A row of the month table: `expr` in each month."""
    return PerRow(expr, MONTHS)


def build_cashflow(b: ModelBuilder, i, lines: tuple[str, ...]) -> None:
    """The Cashflow sheet's items, after the Cost sheet's and the timeline's (`i`: the inputs,
    `lines`: the Cost sheet's lines of the subtotal, in its order)."""
    b.sheet(SHEET)
    _months(b, i)
    _periods(b, i)
    _lines(b, i, lines)
    _years(b)


def _own(b: ModelBuilder, name: str, unit: str, expr) -> Ref:
    """A figure of the month table's own (a period's length, a row's sum, a check that the months
    add up): shown beside the table on the Cashflow sheet, as its rows are."""
    return b.item(name, unit, expr, kind="rows")


def _months(b: ModelBuilder, i) -> None:
    """Each month's first day (the start month's first, then a month after the one before), the
    next month's first (the month's end, half-open), its calendar year and its fiscal year."""
    before = Prev(START)
    b.row_item(START, "date", Chain(DATE(YEAR(i.start_date), MONTH(i.start_date), 1),
                                    DATE(YEAR(before), MONTH(before) + 1, 1), MONTHS))
    first = At(START)
    b.row_item(END, "date", months_of(DATE(YEAR(first), MONTH(first) + 1, 1)))
    b.row_item("cashflow_calendar_year", "year", months_of(YEAR(first)))
    fy = i.fiscal_year_start_month
    b.row_item("cashflow_fiscal_year", "year",
               months_of(YEAR(first) + IF(AND(fy > 1, MONTH(first) >= fy), 1, 0)))


def _share(period: str) -> Expr:
    """A month's share of a period: its days in the month ÷ the period's days, or, for a period of
    no days, 1 in the month holding its start and 0 elsewhere (no division by zero)."""
    days, length = At(f"cashflow_{period}_days"), Ref(f"cashflow_{period}_days_total")
    start = Ref(PERIOD_STARTS[period])
    return IF(length > 0, days / length, (At(START) <= start) * (start < At(END)))


def _period(b: ModelBuilder, period: str, end: Expr, length: Expr) -> None:
    """The period [its start, end) of `length` days: its days in each month."""
    start = Ref(PERIOD_STARTS[period])
    _own(b, f"cashflow_{period}_days_total", "days", length)
    b.row_item(f"cashflow_{period}_days", "days", months_of(MAX(0, MIN(At(END), end) - MAX(At(START), start))))


def _periods(b: ModelBuilder, i) -> None:
    """The periods the lines are spread over, the reserved term's upfront payment and the staffing
    table's weight in each month."""
    r = Ref
    term = _own(b, "cashflow_reserved_term", "1 = yes",
                IF(AND(i.price_tier.eq("reserved"), i.ownership.eq("rented")), 1, 0))
    start = r("reservation_start")
    _period(b, "reservation", r("evaluation_end"), r("evaluation_end") - start)
    billed = MAX(r("evaluation_end") - start, term * i.reserved_term_months * i.days_per_year / 12)
    _period(b, "billed", start + billed, billed)
    _own(b, "cashflow_upfront_total", "currency", term * r("reserved_upfront_cost"))
    b.row_item("cashflow_upfront", "currency",
               months_of(term * r("reserved_upfront_cost") * (At(START) <= start) * (start < At(END))))
    for period, end in (("validation", "validation_end"), ("scaling", "scaling_end"),
                        ("rollback", "training_end"), ("post_training", "evaluation_end")):
        _period(b, period, r(end), r(end) - r(PERIOD_STARTS[period]))
    served = i.serving_months * i.days_per_year / 12
    _period(b, "serving", r("deployment_start") + served, served)
    held = r("storage_months_used") * i.days_per_year / 12
    _period(b, "storage", i.start_date + held, held)
    _staffing(b, i)


def _staffing(b: ModelBuilder, i) -> None:
    """The month's staffing at the table's rates: Σ headcount × monthly cost × days of the role in
    the month × 12/days_per_year, each role from the project start for its months (blank: the project's)."""
    lo, end = MAX(At(START), i.start_date), At(END)
    role_end = i.start_date + (Of("staff_months") + BlankOf("staff_months") * Ref("project_months")) * i.days_per_year / 12
    days = (role_end - lo) * (role_end > lo) * (role_end < end) + (end - lo) * (role_end >= end)
    weight = b.row_item("cashflow_staff_weight", "currency",
                        months_of(SUMPRODUCT(i.staff_headcount, i.staff_monthly_cost, Each(days, "staff_headcount"))
                                  * 12 / i.days_per_year))
    _own(b, "cashflow_staff_weight_sum", "currency", SUM(weight))


def _spread(i) -> dict[str, Expr]:
    """Each Cost sheet line in a month: its figure by its period's share of the month."""
    r = Ref
    staff = r("cashflow_staff_weight_sum")
    return {
        "cluster_cost": At("cashflow_upfront") + (r("cluster_cost") - r("cashflow_upfront_total")) * _share("billed"),
        "experiment_cost": r("experiment_cost") * IF(
            r("experiment_gpu_hours") > 0,
            (r("validation_gpu_hours") * _share("validation") + r("scaling_gpu_hours") * _share("scaling"))
            / r("experiment_gpu_hours"), 0),
        "rollback_cost": r("rollback_cost") * _share("rollback"),
        "post_training_cost": r("post_training_cost") * _share("post_training"),
        "serving_cost": r("serving_cost") * _share("serving"),
        "network_cost": r("network_cost") * _share("reservation"),
        "storage_cost": r("storage_cost") * _share("storage"),
        "staffing_cost": IF(staff > 0, r("staffing_cost") * At("cashflow_staff_weight") / staff, 0),
    }


def _lines(b: ModelBuilder, i, lines: tuple[str, ...]) -> None:
    """Each Cost sheet line by month; subtotal, VAT, total, and the running total."""
    spread = _spread(i)
    if set(spread) != set(lines):
        raise ValueError(f"the Cashflow sheet spreads {sorted(spread)}, the Cost sheet's lines are "  # i18n: not text
                         f"{sorted(lines)}: give every line a period")
    for name in lines:
        b.row_item(line_row(name), "currency", months_of(spread[name]))
    sub = At(b.row_item("cashflow_subtotal", "currency", months_of(SUM(*(At(line_row(n)) for n in lines)))).name)
    b.row_item("cashflow_vat", "currency", months_of(IF(
        i.vat_recoverable.eq("yes"), 0, (sub - At(line_row("staffing_cost"))) * i.vat_rate)))
    total = At(b.row_item("cashflow_month_total", "currency",
                          months_of(sub + At("cashflow_vat"))).name)
    b.row_item("cashflow_cumulative", "currency", Chain(total, Prev("cashflow_cumulative") + total, MONTHS))
    _add_up(b, "cashflow_month_total")


def _add_up(b: ModelBuilder, total: str) -> None:
    """The months' sum against total_cost: the difference to the cent, and 0 when they agree to
    nine significant digits."""
    months, tc = _own(b, f"{total}_sum", "currency", SUM(Ref(total))), Ref("total_cost")
    _own(b, "cashflow_months_difference", "currency", ROUND(months - tc, 2))
    _own(b, "cashflow_months_add_up", "flag", IF(ABS(months - tc) <= ABS(tc) / 1000 / 1000 / 1000, 0, 1))


def _years(b: ModelBuilder) -> None:
    """Calendar and fiscal years: each year's months' totals, all years' sum against total_cost.
    The first year is the first month's (the months run forward), then one after another."""
    for kind in ("calendar", "fiscal"):
        year = f"cashflow_{kind}_years"
        before = Prev(year)
        b.row_item(year, "year", Chain(MIN(Ref(f"cashflow_{kind}_year")), before + 1, YEARS))
        total = b.row_item(f"cashflow_{kind}_year_total", "currency", PerRow(SUMPRODUCT(Each(
            Of(f"cashflow_{kind}_year").eq(At(year)) * Of("cashflow_month_total"), MONTHS)), YEARS))
        years = _own(b, f"cashflow_{kind}_year_total_sum", "currency", SUM(total))
        _own(b, f"cashflow_{kind}_years_difference", "currency", ROUND(years - Ref("total_cost"), 2))


def cashflow_names(model) -> frozenset[str]:
    """The Cashflow sheet's items and its year tables' rows: tables as long as the sheet's month
    grid (sized for a reviewer's edits), which plan.json leaves to the workbook."""
    return frozenset([YEARS, *(name for name, item in model.items.items() if item.sheet == SHEET)])
