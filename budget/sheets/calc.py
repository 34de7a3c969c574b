"""The calculation sheets (Memory, Parallelism, Compute, Schedule, Timeline, Cost, Checks): one
row per model item in sections (item | value | unit | name | note or fix), each value a live
formula defining the item's name; on Checks, a failing check's fix written for this plan."""

from __future__ import annotations

from dataclasses import replace

from ..model.integrity import INPUT_CHECKS_SHEET
from ..model.lineitems import Item
from ..model.model import MEMO_LINES
from ..xlsx.cells import set_font
from .candidates import candidate_rows
from .timeline import write_timeline
from .writer import CALC_WIDTHS, NAME_FONT, WRAP_TOP, number_format, put_text, text_height, text_with_currency

# the rows below the Cost sheet's last line that check_cost_sheet_closed reads: a figure typed
# just below the table is in no total
COST_ROWS_BELOW = 20


def write_calc_sheet(w, title: str, subtitle: str) -> None:
    ws, m = w.wb[title], w.m
    w.title(ws, w.sheet_name(title), subtitle)
    if title == "Timeline":
        write_timeline(w, ws)
        return
    is_checks = title in ("Checks", INPUT_CHECKS_SHEET)
    w.header(ws, 4, [m("workbook.columns.item"), m("workbook.columns.value"), m("workbook.columns.unit"),
                        m("workbook.columns.name"),
                        m("workbook.columns.fix") if is_checks else m("workbook.columns.note")])
    items = w.model.sheet_items(title)
    if title == "Cost":   # the pure-training rental is a memo: below the total, not in its flow
        items = ([i for i in items if i.name not in MEMO_LINES]
                 + [replace(i, section=m("workbook.memo_heading"))
                    for i in sorted((i for i in items if i.name in MEMO_LINES), key=lambda i: MEMO_LINES.index(i.name))])
    row = w.sectioned_rows(ws, 5, items, lambda ws, row, item: item_row(w, ws, row, item))
    if title == "Cost":     # issue 29: its value column, lines and rows below (check_cost_sheet_closed)
        w.define("cost_sheet_cells", ws, f"$B$5:$B${row + COST_ROWS_BELOW}")
    w.widths(ws, list(CALC_WIDTHS))
    if title == "Parallelism":
        candidate_rows(w, ws, row + 1)
    ws.freeze_panes = "B5"
    w.page_setup(ws)


def item_row(w, ws, row: int, item: Item) -> None:
    put_text(ws.cell(row, 1), item.label)
    cell = w.formula(ws, row, 2, item.expr, w.plan.values[item.name],
                        number_format(item.unit))
    w.unit_cell(ws, row, 3, item.unit)
    put_text(ws.cell(row, 4), item.name)
    set_font(ws.cell(row, 4), NAME_FONT)
    pieces = w.plan.fix_pieces(item.name) if item.is_flag else None
    if pieces is not None:      # written for this plan (issue 25): its currency live
        fix_expr = text_with_currency(pieces)
        fix_value = w.value_of(fix_expr)
        fix = w.formula(ws, row, 5, fix_expr, fix_value, None)
        # a formula's text is not wrapped by wrap_long_text (it knows only typed text): wrapped
        # here, the row as tall as the text the plan gives, so the page prints at its scale
        fix.alignment = WRAP_TOP
        ws.row_dimensions[row].height = max(ws.row_dimensions[row].height or 15,
                                            text_height(str(fix_value), CALC_WIDTHS[4]))
    elif item.fix or item.note:
        put_text(ws.cell(row, 5), item.fix or item.note)
    w.define(item.name, ws, f"$B${row}")
    if item.is_flag or item.name == "master_check":
        w.flag_format(ws, cell.coordinate, item.kind == "warning")
