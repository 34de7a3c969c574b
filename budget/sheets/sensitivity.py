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
from openpyxl.utils import get_column_letter

from ..model.model import UNCERTAIN
from ..plan.sensitivity import Z90, cases, range_figures
from .grid import Variant, row_def, row_label, write_grid

HEAD = 4                # the table's header row
FIRST_GRID_COL = 4      # D: the first what-if column of the workings
# The table's columns: headings workbook.sensitivity.columns.<id>.
TABLE_COLUMNS = ("input", "moves", "base", "low_value", "high_value", "total_low", "total_high", "swing",
                 "end_low", "end_high", "sort_key", "log_mean", "log_spread", "end_mean", "end_spread")


def write_sensitivity(w, ws, plan) -> None:
    from .writer import BOLD_FONT, HEADING_FONT, NAME_FONT, WRAP_TOP, number_format, put_text

    model, v, m = plan.model, plan.values, w.m
    all_cases = cases(plan)
    rng = range_figures(plan, all_cases)
    keys = list(UNCERTAIN)
    n = len(keys)
    label_of = {key: m(f"uncertain.{key}.label") for key in keys}    # in the book's language
    w.title(ws, m("workbook.sensitivity.title"), m("workbook.sensitivity.subtitle"))
    table_top = HEAD + 1
    grid_top = table_top + n + 2 * n + 22
    # A what-if column holds only what its input moves; everything else is the base's own cell.
    moved = {c.target: frozenset({c.target, "total_cost", "project_end",
                                  *model.affected_by({c.target})}) for c in all_cases}
    variants = [Variant(m(f"workbook.sensitivity.case.{c.end}", input=label_of[c.key]), c.values, frozenset({c.target}),
                        formulas={c.target: c.formula}, only=moved[c.target]) for c in all_cases]
    col_of = {(c.key, c.end): get_column_letter(FIRST_GRID_COL + j) for j, c in enumerate(all_cases)}
    ws.cell(grid_top - 2, 1, m("workbook.sensitivity.workings")).font = \
        HEADING_FONT
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

    row_of = write_grid(w, ws, grid_top, FIRST_GRID_COL, variants, model, on_row=label_row)

    # The table: one row per uncertain input.
    w.header(ws, HEAD, [m(f"workbook.sensitivity.columns.{c}") for c in TABLE_COLUMNS])
    ws.row_dimensions[HEAD].height = 45
    money, date = number_format("currency"), number_format("date")
    swings = []
    for k, key in enumerate(keys):
        r = table_top + k
        target, _, spread, _, _, _ = UNCERTAIN[key]
        label = label_of[key]
        low, high = (c for c in all_cases if c.key == key)
        lo, hi = col_of[(key, "low")], col_of[(key, "high")]
        tr, er = row_of["total_cost"], row_of["project_end"]
        # a shift in points shows the MFU it gives, not the shift
        shown = "calibrated_mfu" if spread == "points" else target
        d = model.inputs[target]
        put_text(ws.cell(r, 1), label)
        put_text(ws.cell(r, 2), shown)
        fmt = "0.00E+00" if abs(v[shown]) >= 1e9 else number_format(d.unit, d.kind)
        w.formula(ws, r, 3, shown, v[shown], fmt)
        w.formula(ws, r, 4, f"{lo}{row_of[shown]}", low.values[shown], fmt)
        w.formula(ws, r, 5, f"{hi}{row_of[shown]}", high.values[shown], fmt)
        lt, ht = low.values["total_cost"], high.values["total_cost"]
        w.formula(ws, r, 6, f"{lo}{tr}", lt, money)
        w.formula(ws, r, 7, f"{hi}{tr}", ht, money)
        swing = abs(ht - lt)
        w.formula(ws, r, 8, f"ABS(G{r}-F{r})", swing, money)
        # LARGE/MATCH sort; the row number / 10^9 breaks ties between equal swings
        key_value = swing + r / 1000 / 1000 / 1000
        swings.append(key_value)
        w.formula(ws, r, 9, f"{lo}{er}", low.values["project_end"], date)
        w.formula(ws, r, 10, f"{hi}{er}", high.values["project_end"], date)
        w.formula(ws, r, 11, f"H{r}+ROW()/1000/1000/1000", key_value, "#,##0")
        positive = f"AND(F{r}>0,G{r}>0,total_cost>0)"
        w.formula(ws, r, 12, f"IF({positive},(LN(F{r}/total_cost)+LN(G{r}/total_cost))/2,0)",
                  rng["_means"][k], "0.0000")
        w.formula(ws, r, 13, f"IF({positive},ABS(LN(G{r}/total_cost)-LN(F{r}/total_cost))/2/sensitivity_z,0)",
                  rng["_spreads"][k], "0.0000")
        w.formula(ws, r, 14, f"((I{r}-project_end)+(J{r}-project_end))/2", rng["_day_means"][k], "0.0")
        w.formula(ws, r, 15, f"ABS(J{r}-I{r})/2/sensitivity_z", rng["_day_spreads"][k], "0.0")
    last = table_top + n - 1
    w.define("sensitivity_low_total", ws, f"$F${table_top}:$F${last}")
    w.define("sensitivity_high_total", ws, f"$G${table_top}:$G${last}")
    w.define("sensitivity_sort_key", ws, f"$K${table_top}:$K${last}")
    w.define("sensitivity_inputs", ws, f"$A${table_top}:$A${last}")

    # The tornado, sorted live.
    top = last + 2
    ws.cell(top, 1, m("workbook.sensitivity.tornado.heading")).font = BOLD_FONT
    w.header(ws, top + 1, [m("workbook.sensitivity.columns.input"), m("workbook.sensitivity.tornado.rank"),
                           m("workbook.sensitivity.tornado.low"), m("workbook.sensitivity.tornado.high"),
                           m("workbook.sensitivity.columns.swing")])
    order = sorted(range(n), key=lambda k: -swings[k])
    total = v["total_cost"]
    for rank, k in enumerate(order, 1):
        r = top + 1 + rank
        key = keys[k]
        low, high = (c for c in all_cases if c.key == key)
        pos = f"MATCH(LARGE(sensitivity_sort_key,B{r}),sensitivity_sort_key,0)"
        w.formula(ws, r, 1, f"INDEX(sensitivity_inputs,{pos})", label_of[key], None)
        w.formula(ws, r, 2, "1" if rank == 1 else f"B{r - 1}+1", float(rank), "0")
        w.formula(ws, r, 3, f"INDEX(sensitivity_low_total,{pos})-total_cost",
                  low.values["total_cost"] - total, money)
        w.formula(ws, r, 4, f"INDEX(sensitivity_high_total,{pos})-total_cost",
                  high.values["total_cost"] - total, money)
        w.formula(ws, r, 5, f"ABS(D{r}-C{r})", abs(high.values["total_cost"] - low.values["total_cost"]),
                  money)
    _tornado_chart(m, ws, top + 2, top + 1 + n)

    # The range.
    r0 = top + n + 3
    ws.cell(r0, 1, m("workbook.sensitivity.range.heading")).font = BOLD_FONT
    rows = [("sensitivity_z", "NORMSINV(p90_probability)", Z90, "0.0000"),
            ("total_cost_p10", "total_cost*EXP(SUM(L{a}:L{b})-sensitivity_z*SQRT("
             "SUMPRODUCT(M{a}:M{b},M{a}:M{b})))", rng["total_cost_p10"], money),
            ("total_cost_p50", "total_cost*EXP(SUM(L{a}:L{b}))", rng["total_cost_p50"], money),
            ("total_cost_p90", "total_cost*EXP(SUM(L{a}:L{b})+sensitivity_z*SQRT("
             "SUMPRODUCT(M{a}:M{b},M{a}:M{b})))", rng["total_cost_p90"], money),
            ("project_end_p90", "project_end+SUM(N{a}:N{b})+sensitivity_z*SQRT("
             "SUMPRODUCT(O{a}:O{b},O{a}:O{b}))", rng["project_end_p90"], date)]
    for k, (name, text, value, fmt) in enumerate(rows, 1):
        r = r0 + k
        put_text(ws.cell(r, 1), m(f"workbook.sensitivity.range.{name}"))
        w.formula(ws, r, 2, text.format(a=table_top, b=last), value, fmt)
        if name.startswith("total_cost"):
            w.unit_cell(ws, r, 3, "currency")
        w.define(name, ws, f"$B${r}")
    put_text(ws.cell(r0 + len(rows) + 1, 1), m("workbook.sensitivity.range.method"))
    ws.cell(r0 + len(rows) + 1, 1).alignment = WRAP_TOP
    ws.merge_cells(start_row=r0 + len(rows) + 1, start_column=1, end_row=r0 + len(rows) + 1, end_column=10)
    ws.row_dimensions[r0 + len(rows) + 1].height = 48
    w.widths(ws, [27, 18, 12, 12, 12, 13, 13, 13, 11, 11, 12, 12, 12, 12, 12]
             + [16] * max(0, len(variants) - 12))
    ws.freeze_panes = ws.cell(HEAD + 1, 2)
    w.page_setup(ws)
    # Printed: the table, the tornado and the range, one page wide (A:J; the method's working
    # columns K:O and the what-if workings below stay on screen, unhidden).
    ws.print_area = f"A1:J{r0 + len(rows) + 1}"
    ws.page_setup.fitToWidth = 1
    ws.print_title_cols = None


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
