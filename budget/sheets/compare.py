"""The Compare sheet: the scenario's options side by side, every figure a live formula.

Each option is a column of the model grid (budget/grid.py) over that option's own inputs; the
key figures, each option's own range (issue 29: its own what-ifs, below the workings), the
recommendation (the cheapest option that passes every check, which includes
meeting the deadline) and a chart of days against cost sit above it. Workbook-scope names, one
row each in option order: compare_option_names, compare_gpu_count, compare_train_days,
compare_gpu_hours, compare_total_cost, compare_check_count.
"""

from __future__ import annotations

from openpyxl.chart import Reference, ScatterChart, Series
from openpyxl.utils import get_column_letter

from ..formula.expr import COLUMNS, COUNT, IF, INDEX, MATCH, MIN, SUMPRODUCT, Area, Blanks, Cell, Ref, lift
from ..model.model import UNCERTAIN
from ..plan.sensitivity import APPROVAL_Z, SENSITIVITY_Z, Z90, range_exprs, row_figures
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
# issue 29: each option's own range (its own what-ifs), rows below the key figures
RANGE_ROWS = ("total_cost_p10", "total_cost_p50", "total_cost_p90", "total_cost_ask")
# an uncertain input's part of the range (plan.sensitivity.row_figures), one block of rows each
ROW_FIGURES = ("log_mean", "log_spread", "end_mean", "end_spread", "days_mean", "days_spread", "gpuh_mean",
               "gpuh_spread")
# row_figures' cells: the what-if column's figure, at the input's low or high
_CASE_FIGURES = {"total_low": ("total_cost", "low"), "total_high": ("total_cost", "high"),
                 "end_low": ("project_end", "low"), "end_high": ("project_end", "high"),
                 "days_low": ("train_days", "low"), "days_high": ("train_days", "high"),
                 "gpuh_low": ("card_gpu_hours", "low"), "gpuh_high": ("card_gpu_hours", "high")}
FIRST_COL = 4       # A: label, B: unit, C: name, then one column per option
HEAD_ROW = 4        # the options' titles
ADDED_COLUMNS = 10  # the header cells right of the options read for a pasted column (issue 29)
CHART_CM = (14, 7.5)                # the chart's width and height
CHART_ROWS = 16                     # rows of 15 pt (0.53 cm) it covers, below the recommendation


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
    head = HEAD_ROW
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
    range_top = key_top + len(KEY_FIGURES)
    rec_row = range_top + len(RANGE_ROWS) + 1
    chart_row = rec_row + 4         # the chart below the recommendation, inside the print area
    grid_top = chart_row + CHART_ROWS + 2
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
    _ranges(w, ws, range_top, variants, row_of, [base, *(p for _, p in options)], model)
    for name, defined in COMPARE_NAMES.items():
        w.define(defined, ws, span.format(r=row_of[name]))
    _recommendation(w, ws, rec_row, variants, row_of)
    _chart(m, ws, variants, row_of, chart_row)
    w.widths(ws, [44, 14, 26] + [20] * n)
    ws.freeze_panes = ws.cell(head + 1, FIRST_COL)
    w.page_setup(ws)
    # Printed: the options side by side, the recommendation and the chart; the workings stay on screen.
    ws.print_area = f"A1:{get_column_letter(last_col)}{chart_row + CHART_ROWS - 1}"


def _row_label(w, ws, r: int, name: str, model, named: bool = True) -> None:
    d = row_def(model, name)
    put_text(ws.cell(r, 1), row_label(w, model, name))
    w.unit_cell(ws, r, 2, d.unit)
    if named:
        put_text(ws.cell(r, 3), name)
        ws.cell(r, 3).font = _style("NAME_FONT")


def _ranges(w, ws, top: int, variants, row_of, plans, model) -> None:
    """Each option's own range (issue 29): P10/P50/P90 of its total and the ask, by the Sensitivity
    sheet's method over the option's own column. Below the workings, each option gets the
    what-if columns of every uncertain input at its low and high value (its column with that input
    set by the case's formula over the option's own cells; the rows the input does not move read
    the option's column) and the rows of each input's part of the range; the rows here combine
    them (plan.sensitivity.range_exprs), each a live formula."""
    from ..plan.sensitivity import cases, range_figures

    m = w.m
    all_cases = [cases(p) for p in plans]
    ranges = [range_figures(p, c) for p, c in zip(plans, all_cases)]
    keys = list(UNCERTAIN)
    # the range workings: below everything written so far
    fig_top = ws.max_row + 4
    ws.cell(fig_top - 2, 1, m("workbook.compare.range.workings")).font = _style("HEADING_FONT")
    z_rows = {"sensitivity_z": fig_top, "approval_z": fig_top + 1}
    first_fig = fig_top + 2
    fig_row = {(f, k): first_fig + n * len(keys) + k for n, f in enumerate(ROW_FIGURES) for k in range(len(keys))}
    case_top = first_fig + len(ROW_FIGURES) * len(keys) + 3
    ws.cell(case_top - 2, 1, m("workbook.compare.range.whatifs")).font = _style("HEADING_FONT")
    per = 2 * len(keys)                       # what-if columns per option
    case_col = {(j, c.key, c.end): FIRST_COL + j * per + n
                for j, cs in enumerate(all_cases) for n, c in enumerate(cs)}
    rows = grid_rows(model, stage_count(variants))
    row_items = {item.name for item in model.row_items()}
    whatifs = []
    for j, (v, cs) in enumerate(zip(variants, all_cases)):
        letter = get_column_letter(FIRST_COL + j)
        for c in cs:
            only = frozenset({c.target, "total_cost", "project_end", "train_days", "card_gpu_hours",
                              *model.affected_by({c.target}), *row_items})
            own_cells = {**v.ranges, **{name: f"{letter}{row_of[name]}" for name in rows
                                        if "#" not in name and name not in only}}
            target, factor = Cell(row_of[c.target], FIRST_COL + j), Cell(row_of[f"unc_{c.key}_{c.end}"], FIRST_COL + j)
            formula = factor if UNCERTAIN[c.key][2] == "points" else target * factor
            title = m("workbook.compare.range.case", option=v.title,
                      case=m(f"workbook.sensitivity.case.{c.end}", input=m(f"uncertain.{c.key}.label")))
            whatifs.append(Variant(title, c.values, frozenset({c.target}), own_cells,
                                   formulas={c.target: formula}, only=only))
    for n, variant in enumerate(whatifs):
        cell = ws.cell(case_top - 1, FIRST_COL + n)
        put_text(cell, variant.title)
        w.named(cell, "Header")
        cell.alignment = _style("WRAP_TOP")
    # labelled without the name column: each input's name stays once on the sheet, at the
    # options' own rows above (what an import reads back)
    case_row = write_grid(w, ws, case_top, FIRST_COL, whatifs, model,
                          on_row=lambda r, name: _row_label(w, ws, r, name, model, named=False))

    def own(j: int):
        """Names over option j's column: its cells, the range's z and its workings."""
        letter = get_column_letter(FIRST_COL + j)

        def resolve(name: str) -> str:
            if name in z_rows:
                return f"{letter}{z_rows[name]}"
            return f"{letter}{row_of[name]}" if name in row_of else name
        return resolve

    z_exprs = {"sensitivity_z": SENSITIVITY_Z, "approval_z": APPROVAL_Z}
    for name, r in z_rows.items():
        put_text(ws.cell(r, 1), m(f"workbook.sensitivity.range.{name}"))
        put_text(ws.cell(r, 3), name)
        ws.cell(r, 3).font = _style("NAME_FONT")
    for (f, k), r in fig_row.items():
        put_text(ws.cell(r, 1), m("workbook.compare.range.figure", figure=m(f"workbook.sensitivity.columns.{f}"),
                                  input=m(f"uncertain.{keys[k]}.label")))
        put_text(ws.cell(r, 3), f)
        ws.cell(r, 3).font = _style("NAME_FONT")
    for j, rng in enumerate(ranges):
        col, resolve = FIRST_COL + j, own(j)
        for name, r in z_rows.items():
            w.formula(ws, r, col, z_exprs[name], rng.get(name, Z90), "0.0000", resolve)
        for k, key in enumerate(keys):
            def at(figure: str, k=k, key=key) -> Cell:
                source, end = _CASE_FIGURES[figure]
                return Cell(case_row[source], case_col[(j, key, end)])
            figures = row_figures(at)
            for f in ROW_FIGURES:
                w.formula(ws, fig_row[(f, k)], col, figures[f], rng["rows"][k][f], "0.0000", resolve)
        exprs = range_exprs(lambda f: Area(Cell(fig_row[(f, 0)], col), Cell(fig_row[(f, len(keys) - 1)], col)))
        for n, name in enumerate(RANGE_ROWS):
            w.formula(ws, top + n, col, exprs[name], rng[name], "#,##0", resolve)
    for n, name in enumerate(RANGE_ROWS):
        put_text(ws.cell(top + n, 1), m(f"workbook.compare.range.{name}"))
        w.unit_cell(ws, top + n, 2, "currency")
        put_text(ws.cell(top + n, 3), name)
        ws.cell(top + n, 3).font = _style("NAME_FONT")


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
    cheapest = INDEX(Ref("compare_option_names"), 1, MATCH(MIN(eligible), eligible))   # a row: row 1
    # issue 29: a column pasted right of the options is compared by nothing here: while the
    # header cells there hold anything, no option is recommended and the cell says why
    after = get_column_letter(FIRST_COL + len(variants))
    spare = get_column_letter(FIRST_COL + len(variants) + ADDED_COLUMNS - 1)
    w.define("compare_added_columns", ws, f"${after}${HEAD_ROW}:${spare}${HEAD_ROW}")
    spare_cells = Ref("compare_added_columns")
    added = COLUMNS(spare_cells) - SUMPRODUCT(Blanks(spare_cells))
    cell = w.formula(ws, row + 1, 2,
                     IF(added > 0, lift(m("workbook.compare.columns_added")).concat(added),
                        IF(COUNT(eligible).eq(0), none_passes, cheapest)), expected, None)
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
    chart.width, chart.height = CHART_CM
    ws.add_chart(chart, f"A{anchor_row}")     # over columns A to C (84 characters, ~16 cm)


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
