"""The Compare sheet: the scenario's options side by side, every figure a live formula.

Each option is a column of the model grid (budget/grid.py) over that option's own inputs; the
key figures, the recommendation (the cheapest option that passes every check, which includes
meeting the deadline) and a chart of days against cost sit above it. Workbook-scope names, one
row each in option order: compare_option_names, compare_gpu_count, compare_train_days,
compare_gpu_hours, compare_total_cost, compare_check_count.
"""

from __future__ import annotations

from openpyxl.chart import Reference, ScatterChart, Series
from openpyxl.utils import get_column_letter

from ..formula.expr import COUNT, IF, INDEX, MATCH, MIN, Cell, Ref
from .grid import Variant, grid_rows, row_def, row_label, stage_count, write_grid


def put_text(cell, text):
    from .writer import put_text as put
    put(cell, text)


def number_format(unit, kind="number"):
    from .writer import number_format as fmt
    return fmt(unit, kind)


def _style(name: str):
    """A shared style of budget.workbook (imported late, as the helpers above)."""
    from . import writer as workbook
    return getattr(workbook, name)

KEY_FIGURES = ("gpu_count", "accelerator_name", "layout_label", "memory_per_gpu_gb", "check_memory_fits",
               "train_days", "project_end", "gpu_hours", "cluster_cost", "total_cost",
               "cost_per_gpu_hour_all_in", "energy_mwh", "co2_tonnes", "master_check")
COMPARE_NAMES = {"gpu_count": "compare_gpu_count", "train_days": "compare_train_days",
                 "gpu_hours": "compare_gpu_hours", "total_cost": "compare_total_cost",
                 "master_check": "compare_check_count"}
STAFF_TABLE = ("staff_role", "staff_headcount", "staff_monthly_cost", "staff_months")
FIRST_COL = 4       # A: label, B: unit, C: name, then one column per option


def option_variants(base, options) -> list[Variant]:
    """The base plan and each option's, with the inputs each option holds as its own."""
    model = base.model
    singles = [d.name for d in model.inputs.values() if not d.is_range and d.kind != "structure"]
    variants = [Variant(base.scenario.name, base.values)]
    for title, plan in options:
        own = frozenset(n for n in singles if plan.values[n] != base.values[n])
        variants.append(Variant(title, plan.values, own))
    return variants


def write_compare(w, ws, base, options) -> None:
    model = base.model
    variants = option_variants(base, options)
    n = len(variants)
    last_col = FIRST_COL + n - 1
    span = f"${get_column_letter(FIRST_COL)}${{r}}:${get_column_letter(last_col)}${{r}}"
    m = w.m
    w.title(ws, m("workbook.compare.title"), m("workbook.compare.subtitle"))
    head = 4
    w.header(ws, head, [m("workbook.compare.columns.option"), m("workbook.columns.unit"), m("workbook.columns.name")])
    for j, v in enumerate(variants):
        cell = ws.cell(head, FIRST_COL + j)
        put_text(cell, v.title)
        w.named(cell, "Header")
        cell.alignment = _style("WRAP_TOP")
    w.define("compare_option_names", ws, span.format(r=head))
    ws.row_dimensions[head].height = 45

    # The workings first (their rows are what the key figures point at), laid out below.
    key_top = head + 1
    p90_row = key_top + len(KEY_FIGURES)
    rec_row = p90_row + 2
    grid_top = rec_row + 6
    staff_blocks = _staff_blocks(model, base, options, variants)
    rows = grid_rows(model, stage_count(variants))
    block_top = grid_top + len(rows) + 3
    variants = _with_staff_ranges(variants, staff_blocks, block_top)
    row_of = write_grid(w, ws, grid_top, FIRST_COL, variants, model,
                        on_row=lambda r, name: _row_label(w, ws, r, name, model))
    ws.cell(grid_top - 1, 1, m("workbook.compare.workings")).font = _style("HEADING_FONT")
    _write_staff_blocks(w, ws, staff_blocks, block_top)

    for k, name in enumerate(KEY_FIGURES):
        r = key_top + k
        _row_label(w, ws, r, name, model)
        for j, v in enumerate(variants):
            col = FIRST_COL + j
            item = model.items.get(name)
            d = model.items.get(name) or model.inputs[name]
            # the figure's row of the option's own column in the workings
            cell = w.formula(ws, r, col, Cell(row_of[name], col), v.values[name],
                             number_format(d.unit, d.kind))
            if item is not None and (item.is_flag or name == "master_check"):
                w.flag_format(ws, cell.coordinate)
    _p90(w, ws, p90_row, variants, row_of, base)
    for name, defined in COMPARE_NAMES.items():
        w.define(defined, ws, span.format(r=row_of[name]))
    _recommendation(w, ws, rec_row, variants, row_of)
    _chart(m, ws, variants, row_of, rec_row)
    w.widths(ws, [44, 14, 26] + [20] * n)
    ws.freeze_panes = ws.cell(head + 1, FIRST_COL)
    w.page_setup(ws)
    # Printed: the options side by side and the recommendation; the workings stay on screen.
    ws.print_area = f"A1:{get_column_letter(last_col)}{rec_row + 2}"


def _row_label(w, ws, r: int, name: str, model) -> None:
    d = row_def(model, name)
    put_text(ws.cell(r, 1), row_label(w, model, name))
    w.unit_cell(ws, r, 2, d.unit)
    put_text(ws.cell(r, 3), name)
    ws.cell(r, 3).font = _style("NAME_FONT")


def _p90(w, ws, row: int, variants, row_of, base) -> None:
    """Each option's P90 total, at the base plan's relative range (Sensitivity sheet): the
    option's total × P90 ÷ the base total. An approximation, and the row says so."""
    from ..plan.sensitivity import cases, range_figures

    p90 = range_figures(base, cases(base))["total_cost_p90"]
    put_text(ws.cell(row, 1), w.m("workbook.compare.p90"))
    w.unit_cell(ws, row, 2, "currency")
    put_text(ws.cell(row, 3), w.m("workbook.compare.p90_name"))
    ws.cell(row, 3).font = _style("NAME_FONT")
    for j, v in enumerate(variants):
        total = Cell(row_of["total_cost"], FIRST_COL + j)
        w.formula(ws, row, FIRST_COL + j, total * Ref("total_cost_p90") / Ref("total_cost"),
                  v.values["total_cost"] * p90 / base.values["total_cost"], "#,##0")


def _recommendation(w, ws, row: int, variants, row_of) -> None:
    """The cheapest option whose checks all pass (meeting the deadline is one of them)."""
    from ..plan.options import recommended

    m = w.m
    put_text(ws.cell(row, 1), m("workbook.compare.eligible_total"))
    for j, v in enumerate(variants):
        col = FIRST_COL + j
        ok = v.values["master_check"] == 0
        w.formula(ws, row, col, IF(Cell(row_of["master_check"], col).eq(0), Cell(row_of["total_cost"], col), ""),
                  v.values["total_cost"] if ok else "", "#,##0")
    first, last = get_column_letter(FIRST_COL), get_column_letter(FIRST_COL + len(variants) - 1)
    rng = f"${first}${row}:${last}${row}"
    w.define("compare_eligible_total", ws, rng)
    best = recommended([v.values for v in variants])
    none_passes = m("workbook.compare.none_passes")
    expected = variants[best].title if best is not None else none_passes
    ws.cell(row + 1, 1, m("workbook.compare.recommended")).font = _style("BOLD_FONT")
    eligible = Ref("compare_eligible_total")
    cheapest = INDEX(Ref("compare_option_names"), MATCH(MIN(eligible), eligible))
    cell = w.formula(ws, row + 1, 2, IF(COUNT(eligible).eq(0), none_passes, cheapest), expected, None)
    cell.font = _style("BOLD_FONT")
    w.define("compare_recommendation", ws, f"$B${row + 1}")     # the Summary's printed page shows it
    put_text(ws.cell(row + 2, 1), m("workbook.compare.rule"))
    ws.cell(row + 2, 1).font = _style("SUBTITLE_FONT")


def _chart(m, ws, variants, row_of, anchor_row: int) -> None:
    chart = ScatterChart()
    chart.title = m("workbook.compare.chart.title")
    chart.style = 13
    chart.x_axis.title = m("workbook.compare.chart.x_axis")
    chart.y_axis.title = m("workbook.compare.chart.y_axis")
    first, last = FIRST_COL, FIRST_COL + len(variants) - 1
    xs = Reference(ws, min_col=first, max_col=last, min_row=row_of["train_days"])
    ys = Reference(ws, min_col=first, max_col=last, min_row=row_of["total_cost"])
    series = Series(ys, xs, title=m("workbook.compare.chart.series"))
    series.marker.symbol = "circle"
    series.graphicalProperties.line.noFill = True
    chart.series.append(series)
    chart.height, chart.width = 7.5, 14
    ws.add_chart(chart, f"{get_column_letter(FIRST_COL + len(variants) + 1)}5")


def _staff_blocks(model, base, options, variants) -> dict[int, dict]:
    """Options whose staffing differs from the base get a staffing table of their own."""
    blocks = {}
    for j, (title, plan) in enumerate(options, 1):
        if any(plan.values[n] != base.values[n] for n in STAFF_TABLE):
            blocks[j] = {n: plan.values[n] for n in STAFF_TABLE} | {"title": title}
    return blocks


def _with_staff_ranges(variants, blocks, top: int) -> list[Variant]:
    out, row = list(variants), top
    for j, block in blocks.items():
        first, last = row + 2, row + 1 + max(len(block["staff_role"]), 1)
        ranges = {n: f"${get_column_letter(1 + k)}${first}:${get_column_letter(1 + k)}${last}"
                  for k, n in enumerate(STAFF_TABLE)}
        v = out[j]
        out[j] = Variant(v.title, v.values, v.own, ranges)
        block["rows"] = (row, first, last)
        row = last + 2
    return out


def _write_staff_blocks(w, ws, blocks, top: int) -> None:
    model_units = {"staff_role": "text", "staff_headcount": "people",
                   "staff_monthly_cost": "currency/month", "staff_months": "months"}
    m = w.m
    for block in blocks.values():
        heading, first, _ = block["rows"]
        ws.cell(heading, 1, m("workbook.compare.staffing.heading", option=block["title"])).font = _style("BOLD_FONT")
        w.header(ws, heading + 1, [m(f"workbook.compare.staffing.columns.{n}") for n in STAFF_TABLE])
        for r, line in enumerate(zip(*(block[n] for n in STAFF_TABLE))):
            for k, (n, value) in enumerate(zip(STAFF_TABLE, line), 1):
                w.input_value(ws.cell(first + r, k), value, model_units[n])
