"""The Timeline sheet: one row per phase whose Start and End cells are the model's line items,
beside a week grid whose bars are conditional formats over the weeks' formula dates; the
project's dates below."""

from __future__ import annotations

from openpyxl.formatting.rule import FormulaRule
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter

from ..core.dates import from_serial
from ..formula.expr import AND, IF, YEAR, Cell, Ref
from ..xlsx.cells import column_dimension, set_font
from .writer import DATE_FORMAT, SECTION_FONT, SUBTITLE_FONT, excel, number_format, put_text

GANTT_COLOURS = ("9DC3E6", "A9D18E", "FFD966", "F4B183", "C9C9C9", "B4A7D6")
WEEK_ALIGNMENT = Alignment(text_rotation=90, horizontal="center")   # the week heads
YEAR_FONT = Font(bold=True, size=8)                                 # and the years above them
TIMELINE_PHASES = ("data_prep", "validation", "scaling", "training", "evaluation", "deployment")


def write_timeline(w, ws) -> None:
    """One row per phase whose Start and End cells are the named line items, beside a week
    grid; the bars are conditional formatting over the formula dates of the week columns."""
    values, head, first_col, m = w.plan.values, 4, 4, w.m
    weeks = len(w.plan.inputs["timeline_week_cells"].value)
    w.header(ws, head, [m("workbook.timeline.columns.phase"), m("workbook.timeline.columns.start"),
                           m("workbook.timeline.columns.end")])
    for k in range(weeks):
        col = first_col + k
        letter, week, before = get_column_letter(col), Cell(head, col), Cell(head, col - 1)
        day = values["start_date"] + 7 * k
        cell = w.formula(ws, head, col, Ref("start_date") if k == 0 else before + 7, day, "mm-dd")
        w.named(cell, "Header")
        cell.number_format = "mm-dd"
        cell.alignment = WEEK_ALIGNMENT
        # the year above the week where it changes (and above the first week)
        year = from_serial(day).year
        if k == 0:
            w.formula(ws, head - 1, col, YEAR(week), float(year), "0")
        else:
            changed = year != from_serial(day - 7).year
            w.formula(ws, head - 1, col, IF(YEAR(week).ne(YEAR(before)), YEAR(week), ""),
                         float(year) if changed else "", "0")
        set_font(ws.cell(head - 1, col), YEAR_FONT)
        ws.cell(head - 1, col).alignment = WEEK_ALIGNMENT    # a number does not spill: 2027 reads upright
        column_dimension(ws, letter).width = 3.2
    ws.row_dimensions[head].height = 36
    ws.row_dimensions[head - 1].height = 24
    first, last = get_column_letter(first_col), get_column_letter(first_col + weeks - 1)
    w.define("timeline_week_cells", ws, f"${first}${head}:${last}${head}")
    for n, key in enumerate(TIMELINE_PHASES):
        r = head + 1 + n
        put_text(ws.cell(r, 1), m(f"workbook.timeline.phases.{key}"))
        for c, suffix in ((2, "start"), (3, "end")):
            item = w.model.items[f"{key}_{suffix}"]
            w.formula(ws, r, c, item.expr, values[item.name], DATE_FORMAT)
            w.define(item.name, ws, f"${get_column_letter(c)}${r}")
        colour = GANTT_COLOURS[n % len(GANTT_COLOURS)]
        week = Cell(head, first_col, fixed_row=True)     # relative to the bar's first cell
        in_week = AND(week < Cell(r, 3, fixed_col=True), week + 7 > Cell(r, 2, fixed_col=True))
        rule = FormulaRule(formula=[excel(in_week)], fill=PatternFill("solid", start_color=colour, end_color=colour))
        ws.conditional_formatting.add(f"{first}{r}:{last}{r}", rule)
    row = head + len(TIMELINE_PHASES) + 2
    phase_items = {f"{key}_{end}" for key in TIMELINE_PHASES for end in ("start", "end")}
    project = [i for i in w.model.sheet_items("Timeline") if i.name not in phase_items]
    ws.cell(row, 1, project[0].section).font = SECTION_FONT     # the model's heading
    for r, item in enumerate(project, row + 1):
        name = item.name
        put_text(ws.cell(r, 1), m("workbook.timeline.label_note", label=item.label, note=item.note)
                 if item.note else item.label)
        w.formula(ws, r, 2, item.expr, values[name], number_format(item.unit))
        if item.unit != "date":
            put_text(ws.cell(r, 3), w.unit_text(item.unit))
        w.define(name, ws, f"$B${r}")
    row += len(project) - 3
    put_text(ws.cell(row + 5, 1), m("workbook.timeline.note"))
    ws.cell(row + 5, 1).font = SUBTITLE_FONT
    w.widths(ws, [34, 11, 11])
    ws.freeze_panes = ws.cell(head + 1, first_col)
    w.page_setup(ws)

