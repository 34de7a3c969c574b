"""The Curve sheet: training days and the total against the GPU count (issue 27), one row per
point of budget/plan/curve.py, every figure a live formula.

A point's GPU count and its searched layout are input cells of its row (generated: the search
chose them; a reviewer may type over them); every item the count and the layout affect is the
model's own expression with those names resolved to the row's cells (as the Layout candidates
sheet resolves them to a column's), every other name to the plan's defined name. Two charts
draw the days and the total against the count, with the plan's point, the point where adding
GPUs stops paying and (with a deadline) the deadline line, each a mark whose cells point at the
table's.
"""

from __future__ import annotations

from openpyxl.chart import Reference, ScatterChart, Series
from openpyxl.utils import get_column_letter

from ..formula.expr import Cell, Ref
from ..plan.curve import DAYS, KEYS, POINT_INPUTS, deadline_sentence, rule_sentence
from .generated import generated_for
from .writer import BOLD_FONT, SECTION_FONT, WRAP_TOP, Resolved, number_format, put_text

CURVE_SHEET = "Curve"
CHART_ROWS = 17          # rows the two charts take above the table
NOTE_WIDTH = 48


def curve_lines(w) -> list[str]:
    """What generation says of the curve: what it varies, what it leaves out, where adding GPUs
    stops paying and by which rule, and the deadline."""
    curve, lang = w.plan.curve, w.plan.lang
    lines = [curve.varies.render(lang)]
    if not curve.points:
        return lines
    lines.append(w.m("plan.curve.left_out"))
    lines.append(curve.knee_reason.render(lang))
    lines.append(rule_sentence().render(lang))
    deadline = deadline_sentence(curve)
    if deadline is not None:
        lines.append(deadline.render(lang))
    return lines


def write_curve(w, ws) -> None:
    plan, m = w.plan, w.m
    curve = plan.curve
    w.title(ws, w.sheet_name(CURVE_SHEET), m("workbook.curve.subtitle"))
    columns = [*POINT_INPUTS, *KEYS]
    note_col = len(columns) + 1
    names = columns + [n for n in curve.items if n not in KEYS]
    col_of = {name: (n + 1 if n < len(columns) else n + 2) for n, name in enumerate(names)}
    w.widths(ws, [9] * len(POINT_INPUTS) + [12] * len(KEYS) + [NOTE_WIDTH] + [12] * (len(names) - len(columns)))
    last = generated_for(w, ws, 4, curve_lines(w), note_col)
    if not curve.points:
        w.page_setup(ws)
        return
    charts_at = last + 2
    head = charts_at + CHART_ROWS + 1
    put_text(ws.cell(head - 1, col_of[names[len(columns)]] if len(names) > len(columns) else note_col + 1),
             m("workbook.curve.workings"))
    for name in names:
        d = w.model.inputs.get(name) or w.model.items[name]
        label = m(f"workbook.curve.labels.{name}") if name in KEYS or name == "gpu_count" else (
            d.short if name in w.model.inputs else d.label)
        w.label_cell(ws, head, col_of[name], label, "" if name in POINT_INPUTS else d.unit)
    w.named(ws.cell(head, note_col, m("workbook.curve.columns.note")), "Header")
    ws.row_dimensions[head].height = 60
    first = head + 1
    for k, point in enumerate(curve.points):
        r = first + k
        local = {name: f"{get_column_letter(col_of[name])}{r}" for name in names}
        resolve = Resolved(lambda name, local=local: local.get(name, name)).__getitem__
        for name in POINT_INPUTS:
            d = w.model.inputs[name]
            w.input_value(ws.cell(r, col_of[name]), point.values[name], d.unit, d.kind)
        for name in names[len(POINT_INPUTS):]:
            item = w.model.items[name]
            cell = w.formula(ws, r, col_of[name], item.expr, point.values[name], number_format(item.unit), resolve)
            if item.is_flag:
                w.flag_format(ws, cell.coordinate, item.kind == "warning")
        marks = [m("workbook.curve.marks.plan")] if point.is_plan else []
        if k == curve.knee:
            marks.append(m("workbook.curve.marks.knee"))
        if point.note is not None:
            marks.append(point.note.render(plan.lang))
        if marks:
            put_text(ws.cell(r, note_col), m("workbook.curve.marks.join").join(marks))
            ws.cell(r, note_col).alignment = WRAP_TOP
        if point.is_plan:
            for c in range(1, note_col + 1):
                ws.cell(r, c).font = BOLD_FONT
    end = first + len(curve.points) - 1
    for name in POINT_INPUTS:
        letter = get_column_letter(col_of[name])
        w.validate(ws, f"{letter}{first}:{letter}{end}", w.model.inputs[name])
    marks_top = end + 2
    series = _marks(w, ws, marks_top, first, end, col_of)
    _charts(w, ws, charts_at, first, end, col_of, series)
    ws.freeze_panes = ws.cell(first, 2)
    w.page_setup(ws, f"{head}:{head}")
    ws.print_area = f"A1:{get_column_letter(note_col)}{marks_top + 5}"


def _marks(w, ws, top: int, first: int, end: int, col_of: dict) -> dict[str, int]:
    """The charts' marks, each a row of formulas pointing at the table: the plan's point, the
    point where adding GPUs stops paying, and the deadline at the first and the last count."""
    m, curve = w.m, w.plan.curve
    put_text(ws.cell(top, 1), m("workbook.curve.marks.heading"))
    ws.cell(top, 1).font = SECTION_FONT
    gpus, days, cost = col_of["gpu_count"], col_of[DAYS], col_of["total_cost"]
    w.header(ws, top + 1, ["", m("workbook.curve.labels.gpu_count"), m(f"workbook.curve.labels.{DAYS}"),
                           m("workbook.curve.labels.total_cost")])
    rows, r = {}, top + 2
    marked = [("plan", curve.plan_index), ("knee", curve.knee)]
    for key, index in marked:
        if index is None:
            continue
        point, at = curve.points[index], first + index
        put_text(ws.cell(r, 1), m(f"workbook.curve.marks.{key}"))
        w.formula(ws, r, 2, Cell(at, gpus), float(point.gpu_count), "#,##0")
        w.formula(ws, r, 3, Cell(at, days), point.days, "#,##0.0")
        w.formula(ws, r, 4, Cell(at, cost), point.cost, "#,##0")
        rows[key] = r
        r += 1
    if curve.deadline_days is not None:
        put_text(ws.cell(r, 1), m("workbook.curve.marks.deadline"))
        for n, (at, point) in enumerate(((first, curve.points[0]), (end, curve.points[-1]))):
            w.formula(ws, r + n, 2, Cell(at, gpus), float(point.gpu_count), "#,##0")
            w.formula(ws, r + n, 3, Ref("deadline_days"), float(curve.deadline_days), "#,##0.0")
        rows["deadline"] = r
    return rows


def _charts(w, ws, at: int, first: int, end: int, col_of: dict, marks: dict[str, int]) -> None:
    m = w.m
    gpus = col_of["gpu_count"]
    for n, (name, key) in enumerate(((DAYS, "days"), ("total_cost", "cost"))):
        chart = ScatterChart()
        chart.title = m(f"workbook.curve.chart.{key}_title")
        chart.style = 13
        chart.x_axis.title = m("workbook.curve.chart.x_axis")
        chart.y_axis.title = m(f"workbook.curve.chart.{key}_axis")
        chart.x_axis.scaling.logBase = 2
        chart.x_axis.delete = False
        chart.y_axis.delete = False
        col = col_of[name]
        xs = Reference(ws, min_col=gpus, min_row=first, max_row=end)
        ys = Reference(ws, min_col=col, min_row=first, max_row=end)
        line = Series(ys, xs, title=m(f"workbook.curve.chart.{key}_series"))
        line.marker.symbol = "circle"
        chart.series.append(line)
        mark_col = 3 if key == "days" else 4
        for mark, symbol in (("plan", "diamond"), ("knee", "triangle")):
            if mark in marks:
                r = marks[mark]
                s = Series(Reference(ws, min_col=mark_col, min_row=r), Reference(ws, min_col=2, min_row=r),
                           title=m(f"workbook.curve.marks.{mark}"))
                s.marker.symbol, s.marker.size = symbol, 10
                s.graphicalProperties.line.noFill = True
                chart.series.append(s)
        if key == "days" and "deadline" in marks:
            r = marks["deadline"]
            s = Series(Reference(ws, min_col=3, min_row=r, max_row=r + 1),
                       Reference(ws, min_col=2, min_row=r, max_row=r + 1), title=m("workbook.curve.marks.deadline"))
            s.marker.symbol = "none"
            chart.series.append(s)
        chart.height, chart.width = 8, 14
        ws.add_chart(chart, f"{get_column_letter(1 + n * 8)}{at}")
