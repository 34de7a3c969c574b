"""The Glossary (each term a reader may not know, in the book's language) and the Change log
(the generated row, then rows the reviewer writes in, unlocked under sheet protection)."""

from __future__ import annotations

from openpyxl.styles.cell_style import StyleArray

from .. import __version__
from ..xlsx.cells import set_style, style_of
from .writer import (BOLD_FONT, BOTTOM_BORDER, CHANGE_LOG_SHEET, DATE_FORMAT, TOP_ALIGNMENT, UNLOCKED, WRAP_TOP,
                     put_text)

CHANGE_LOG_ROWS = 200
# The Glossary's terms in order: workbook.glossary.terms.<id>.term and .meaning.
GLOSSARY = ("gpu", "gpu_hour", "node", "hbm", "flop", "parameters", "tokens", "mfu", "hfu", "tp", "pp", "dp",
            "zero", "sp", "recomputation", "micro_batch", "bubble", "layout_efficiency", "goodput", "checkpoint",
            "young_daly", "mtbi", "buffer", "memo_line", "check_warning", "input_generated")


def write_glossary(w) -> None:
    ws, m = w.wb["Glossary"], w.m
    w.title(ws, w.sheet_name("Glossary"), m("workbook.glossary.subtitle"))
    w.header(ws, 4, [m("workbook.glossary.columns.term"), m("workbook.glossary.columns.meaning")])
    for r, term in enumerate(GLOSSARY, 5):
        put_text(ws.cell(r, 1), m(f"workbook.glossary.terms.{term}.term"))
        ws.cell(r, 1).font = BOLD_FONT
        put_text(ws.cell(r, 2), m(f"workbook.glossary.terms.{term}.meaning"))
        ws.cell(r, 2).alignment = WRAP_TOP
        ws.cell(r, 1).alignment = TOP_ALIGNMENT
    w.widths(ws, [26, 110])
    w.page_setup(ws)


def write_change_log(w) -> None:
    """The generated row, then rows the reviewer writes in: unlocked under sheet protection."""
    ws, m = w.wb[CHANGE_LOG_SHEET], w.m
    w.title(ws, w.sheet_name(CHANGE_LOG_SHEET), m("workbook.change_log.subtitle"))
    w.header(ws, 4, [m(f"workbook.change_log.columns.{c}") for c in ("date", "version", "who", "change")])
    put_text(ws.cell(5, 2), w.digest)
    put_text(ws.cell(5, 3), f"trainbudget {__version__}")  # i18n: not text (the tool and its version)
    put_text(ws.cell(5, 4), m("workbook.change_log.generated", scenario=w.plan.scenario_id))
    arrays: dict[int, StyleArray] = {}     # column -> its style, set once (the same ids)
    for r in range(6, 6 + CHANGE_LOG_ROWS):
        for c in range(1, 5):
            cell = ws.cell(r, c)
            if c in arrays:
                set_style(cell, arrays[c])
                continue
            cell.protection = UNLOCKED
            cell.border = BOTTOM_BORDER
            if c == 1:
                cell.number_format = DATE_FORMAT
            arrays[c] = style_of(cell)
    w.widths(ws, [12, 18, 22, 80])
    w.page_setup(ws)

