"""Sensitivity and range: how far each uncertain input moves the total, and P10/P50/P90.

Each uncertain input (budget.model.UNCERTAIN) gets two columns of the model grid, the input set
to its low and its high value by a formula over the Inputs sheet (`=price_per_gpu_hour*
unc_price_per_gpu_hour_low`), so the whole sheet stays live. Above the grid: the table of
totals and project ends at low and high, a tornado sorted live by swing (LARGE and MATCH), and
the range.

The range reads each input's low and high as its P10 and P90 and treats the inputs as
independent. Each input's effect on the log of the total is taken as normal, with its median
halfway between the logs at low and high and its spread from their distance (÷ 2·z, z =
NORMSINV(0.9)); the effects add, so the total is lognormal: P50 = total × e^M, P10/P90 = total ×
e^(M ∓ z·S), M = Σ means, S = √Σ spreads². The project end adds the same way, in days. What it
leaves out: interactions between inputs (it is first order), correlation, and any input not in
the table. The tests hold it against a 20,000-sample Monte Carlo of the Python model.
"""

from __future__ import annotations


from openpyxl.chart import BarChart, Reference

from ..formula.expr import ABS, INDEX, LARGE, MATCH, ROW, Area, Cell, Expr, Num, Ref
from ..model.model import UNCERTAIN
from ..plan.sensitivity import APPROVAL_Z, SENSITIVITY_Z, Z90, cases, range_exprs, range_figures, row_figures
from .grid import Variant, row_def, row_label, write_grid

HEAD = 4                # the table's header row
FIRST_GRID_COL = 4      # D: the first what-if column of the workings
# The table's columns: headings workbook.sensitivity.columns.<id>.
TABLE_COLUMNS = ("input", "moves", "base", "low_value", "high_value", "total_low", "total_high", "swing",
                 "end_low", "end_high", "sort_key", "log_mean", "log_spread", "end_mean", "end_spread",
                 # issue 25: the training days' and card-hours' ranges beside the total's
                 "days_low", "days_high", "days_mean", "days_spread", "gpuh_low", "gpuh_high", "gpuh_mean",
                 "gpuh_spread")
COL = {name: k for k, name in enumerate(TABLE_COLUMNS, 1)}      # column id -> its column number
# The number formats of the table's formula columns; None: the input's own (the base's value)
_FORMATS = {"base": None, "low_value": None, "high_value": None, "total_low": "currency",
            "total_high": "currency", "swing": "currency", "end_low": "date", "end_high": "date",
            "sort_key": "#,##0", "log_mean": "0.0000", "log_spread": "0.0000", "end_mean": "0.0",
            "end_spread": "0.0", "days_low": "0.0", "days_high": "0.0", "days_mean": "0.0000",
            "days_spread": "0.0000", "gpuh_low": "#,##0", "gpuh_high": "#,##0", "gpuh_mean": "0.0000",
            "gpuh_spread": "0.0000"}
RANGE_ROWS = ("sensitivity_z", "total_cost_p10", "total_cost_p50", "total_cost_p90", "project_end_p90",
              # issue 25: the ask at the approval percentile, and where the point estimate and the
              # total with the flat buffer sit in the range; the training days' and card-hours' ranges
              "approval_z", "total_cost_ask", "point_percentile", "buffer_percentile",
              "train_days_p10", "train_days_p50", "train_days_p90",
              "card_gpu_hours_p10", "card_gpu_hours_p50", "card_gpu_hours_p90")
PERCENTILE_FORMAT = '"P"0'      # i18n: not text (a number format: 24.2 shows as P24)


def write_sensitivity(w, ws, plan) -> None:
    from .writer import WRAP_TOP, put_text

    all_cases = cases(plan)
    rng = range_figures(plan, all_cases)
    n = len(UNCERTAIN)
    w.title(ws, w.m("workbook.sensitivity.title"), w.m("workbook.sensitivity.subtitle"))
    table_top = HEAD + 1
    last = table_top + n - 1
    row_of = _workings(w, ws, plan, all_cases, table_top + n + 2 * n + 22)
    sort_keys = _table(w, ws, plan, all_cases, rng, row_of, table_top)
    top = last + 2
    _tornado(w, ws, plan, all_cases, sort_keys, top)
    r0 = top + n + 3
    _range(w, ws, rng, r0, table_top, last)
    note = r0 + len(RANGE_ROWS) + 1
    put_text(ws.cell(note, 1), w.m("workbook.sensitivity.range.method"))
    ws.cell(note, 1).alignment = WRAP_TOP
    ws.merge_cells(start_row=note, start_column=1, end_row=note, end_column=10)
    ws.row_dimensions[note].height = 48
    w.widths(ws, [27, 18, 12, 12, 12, 13, 13, 13, 11, 11, 12, 12, 12, 12, 12, 11, 11, 12, 12, 13, 13, 12, 12]
             + [16] * max(0, len(all_cases) - 12))
    ws.freeze_panes = ws.cell(HEAD + 1, 2)
    w.page_setup(ws)
    # Printed: the table, the tornado and the range, one page wide (A:J; the method's working
    # columns K:O and the what-if workings below stay on screen, unhidden).
    ws.print_area = f"A1:J{note}"
    ws.page_setup.fitToWidth = 1
    ws.print_title_cols = None


def _label(w, key: str) -> str:
    return w.m(f"uncertain.{key}.label")     # in the book's language


def _ends(all_cases, key: str):
    """The low and the high case of UNCERTAIN[key]."""
    low, high = (c for c in all_cases if c.key == key)
    return low, high


def _workings(w, ws, plan, all_cases, grid_top: int) -> dict[str, int]:
    """The what-if columns: the model grid, one column per case (its input set by the case's
    formula). Returns name -> row."""
    from .writer import HEADING_FONT, NAME_FONT, WRAP_TOP, put_text

    model = plan.model
    # A what-if column holds only what its input moves; everything else is the base's own cell.
    moved = {c.target: frozenset({c.target, "total_cost", "project_end", "train_days", "card_gpu_hours",
                                  *model.affected_by({c.target})}) for c in all_cases}
    variants = [Variant(w.m(f"workbook.sensitivity.case.{c.end}", input=_label(w, c.key)), c.values,
                        frozenset({c.target}), formulas={c.target: c.formula}, only=moved[c.target])
                for c in all_cases]
    ws.cell(grid_top - 2, 1, w.m("workbook.sensitivity.workings")).font = HEADING_FONT
    for j, variant in enumerate(variants):
        cell = ws.cell(grid_top - 1, FIRST_GRID_COL + j)
        put_text(cell, variant.title)
        w.named(cell, "Header")
        cell.alignment = WRAP_TOP

    def label_row(r: int, name: str) -> None:
        d = row_def(model, name)
        put_text(ws.cell(r, 1), row_label(w, model, name))
        w.unit_cell(ws, r, 2, d.unit)
        put_text(ws.cell(r, 3), name)
        ws.cell(r, 3).font = NAME_FONT

    return write_grid(w, ws, grid_top, FIRST_GRID_COL, variants, model, on_row=label_row)


def _table(w, ws, plan, all_cases, rng, row_of, top: int) -> list[float]:
    """The table: one row per uncertain input. Returns each row's sort key (the tornado's order)."""
    from .writer import number_format, put_text

    model, v = plan.model, plan.values
    w.header(ws, HEAD, [w.m(f"workbook.sensitivity.columns.{c}") for c in TABLE_COLUMNS])
    ws.row_dimensions[HEAD].height = 45
    col_of = {(c.key, c.end): FIRST_GRID_COL + j for j, c in enumerate(all_cases)}
    named = {unit: number_format(unit) for unit in ("currency", "date")}
    keys = []
    for k, key in enumerate(UNCERTAIN):
        r = top + k
        target, _, spread, _, _, _ = UNCERTAIN[key]
        # a shift in points shows the MFU it gives, not the shift
        shown = "calibrated_mfu" if spread == "points" else target
        d = model.inputs[target]
        put_text(ws.cell(r, 1), _label(w, key))
        put_text(ws.cell(r, 2), shown)
        own = "0.00E+00" if abs(v[shown] or 0) >= 1e9 else number_format(d.unit, d.kind)
        exprs = _table_row(r, shown, col_of[(key, "low")], col_of[(key, "high")], row_of)
        expected = _table_values(r, shown, v, *_ends(all_cases, key), rng["rows"][k])
        for name, expr in exprs.items():
            fmt = _FORMATS[name]
            w.formula(ws, r, COL[name], expr, expected[name], own if fmt is None else named.get(fmt, fmt))
        keys.append(expected["sort_key"])
    last = top + len(keys) - 1
    for name, column in (("sensitivity_low_total", "total_low"), ("sensitivity_high_total", "total_high"),
                         ("sensitivity_sort_key", "sort_key"), ("sensitivity_inputs", "input")):
        w.define(name, ws, Area(Cell(top, COL[column]).fixed(), Cell(last, COL[column]).fixed()).excel())
    return keys


def _table_row(r: int, shown: str, lo: int, hi: int, row_of) -> dict[str, Expr]:
    """Row r's formulas, by column id: the base's value of the input shown, the what-if
    columns' cells (lo, hi: their column numbers in the workings below), the swing and sort
    key over the row's own cells, and the row's part of the range (plan.sensitivity.row_figures)."""
    def at(name: str) -> Cell:
        return Cell(r, COL[name])

    total, end, days, gpuh = (row_of[n] for n in ("total_cost", "project_end", "train_days", "card_gpu_hours"))
    return {"base": Ref(shown), "low_value": Cell(row_of[shown], lo), "high_value": Cell(row_of[shown], hi),
            "total_low": Cell(total, lo), "total_high": Cell(total, hi),
            "swing": ABS(at("total_high") - at("total_low")),
            "end_low": Cell(end, lo), "end_high": Cell(end, hi),
            "days_low": Cell(days, lo), "days_high": Cell(days, hi), "gpuh_low": Cell(gpuh, lo),
            "gpuh_high": Cell(gpuh, hi),
            # LARGE/MATCH sort; the row number / 10^9 breaks ties between equal swings
            "sort_key": at("swing") + ROW() / 1000 / 1000 / 1000,
            **row_figures(at)}


def _table_values(r: int, shown: str, v, low, high, figures) -> dict[str, float]:
    """What _table_row's formulas give: the cases' values, and the range's (range_figures)."""
    lt, ht = low.values["total_cost"], high.values["total_cost"]
    swing = abs(ht - lt)
    # a link to a blank input (an owned cluster's absent rental price) shows 0, as a spreadsheet does
    return {"base": 0.0 if v[shown] is None else v[shown], "low_value": low.values[shown], "high_value": high.values[shown],
            "total_low": lt, "total_high": ht, "swing": swing,
            "end_low": low.values["project_end"], "end_high": high.values["project_end"],
            "days_low": low.values["train_days"], "days_high": high.values["train_days"],
            "gpuh_low": low.values["card_gpu_hours"], "gpuh_high": high.values["card_gpu_hours"],
            "sort_key": swing + r / 1000 / 1000 / 1000, **figures}


def _tornado(w, ws, plan, all_cases, sort_keys: list[float], top: int) -> None:
    """The tornado, sorted live: rank k's row reads the table's row of the k-th largest sort key."""
    from .writer import BOLD_FONT, number_format

    m, total, money = w.m, plan.values["total_cost"], number_format("currency")
    ws.cell(top, 1, m("workbook.sensitivity.tornado.heading")).font = BOLD_FONT
    w.header(ws, top + 1, [m("workbook.sensitivity.columns.input"), m("workbook.sensitivity.tornado.rank"),
                           m("workbook.sensitivity.tornado.low"), m("workbook.sensitivity.tornado.high"),
                           m("workbook.sensitivity.columns.swing")])
    keys = list(UNCERTAIN)
    order = sorted(range(len(keys)), key=lambda k: -sort_keys[k])
    for rank, k in enumerate(order, 1):
        r = top + 1 + rank
        low, high = _ends(all_cases, keys[k])
        lt, ht = low.values["total_cost"], high.values["total_cost"]
        expected = (_label(w, keys[k]), float(rank), lt - total, ht - total, abs(ht - lt))
        formats = (None, "0", money, money, money)
        for col, (expr, value, fmt) in enumerate(zip(_tornado_row(r, rank), expected, formats), 1):
            w.formula(ws, r, col, expr, value, fmt)
    _tornado_chart(m, ws, top + 2, top + 1 + len(keys))


def _tornado_row(r: int, rank: int) -> list[Expr]:
    """Rank `rank`'s formulas in row r: the input, the rank, the totals at low and high less the
    base total, the swing."""
    sort_key, total = Ref("sensitivity_sort_key"), Ref("total_cost")
    pos = MATCH(LARGE(sort_key, Cell(r, 2)), sort_key)
    return [INDEX(Ref("sensitivity_inputs"), pos), Num(1) if rank == 1 else Cell(r - 1, 2) + 1,
            INDEX(Ref("sensitivity_low_total"), pos) - total, INDEX(Ref("sensitivity_high_total"), pos) - total,
            ABS(Cell(r, 4) - Cell(r, 3))]


def _range(w, ws, rng, r0: int, first: int, last: int) -> None:
    """The range: z, P10/P50/P90 of the total and P90 of the project end, each a defined name,
    over the table's columns (plan.sensitivity.range_exprs)."""
    from .writer import BOLD_FONT, number_format, put_text

    ws.cell(r0, 1, w.m("workbook.sensitivity.range.heading")).font = BOLD_FONT
    exprs = {"sensitivity_z": SENSITIVITY_Z, "approval_z": APPROVAL_Z,
             **range_exprs(lambda name: Area(Cell(first, COL[name]), Cell(last, COL[name])))}
    values = {"sensitivity_z": Z90, **rng}
    money, date = number_format("currency"), number_format("date")
    for k, name in enumerate(RANGE_ROWS, 1):
        r = r0 + k
        fmt = ("0.0000" if name.endswith("_z") else date if name == "project_end_p90"
               else PERCENTILE_FORMAT if name.endswith("_percentile") else "0.0" if name.startswith("train_days")
               else "#,##0" if name.startswith("card_gpu_hours") else money)
        put_text(ws.cell(r, 1), w.m(f"workbook.sensitivity.range.{name}"))
        w.formula(ws, r, 2, exprs[name], values[name], fmt)
        if name.startswith("total_cost"):
            w.unit_cell(ws, r, 3, "currency")
        elif name.startswith(("train_days", "card_gpu_hours")):
            w.unit_cell(ws, r, 3, "days" if name.startswith("train_days") else "GPU-h")
        w.define(name, ws, Cell(r, 2).fixed().excel())


def _tornado_chart(m, ws, first: int, last: int) -> None:
    chart = BarChart()
    chart.type = "bar"
    chart.grouping = "clustered"
    chart.overlap = 100
    chart.title = m("workbook.sensitivity.chart.title")
    chart.x_axis.tickLblPos = "low"          # input names at the left edge, clear of the bars
    chart.legend.position = "b"
    data = Reference(ws, min_col=3, max_col=4, min_row=first - 1, max_row=last)
    cats = Reference(ws, min_col=1, min_row=first, max_row=last)
    chart.add_data(data, titles_from_data=True)
    chart.set_categories(cats)
    chart.y_axis.title = m("workbook.sensitivity.chart.y_axis")
    chart.height, chart.width = 8, 16
    ws.add_chart(chart, f"F{first - 1}")
