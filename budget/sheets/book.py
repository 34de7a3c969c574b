"""The workbook, assembled: which sheets, in which order, each written by its own module, then
the book's properties and print widths, then saved (through the fast writer, or openpyxl's own
with `fast=False`: the same workbook, tests/test_xlsx.py).

Only this module imports the sheet modules; a sheet module imports the writer, never this one.
"""

from __future__ import annotations

import gc
import os

from openpyxl.utils import range_boundaries

from .. import __version__
from ..core.i18n import DEFAULT_LANG, text
from ..plan.plan import Plan
from ..xlsx.cells import LETTERS, column_dimension, release
from ..xlsx.save import save_book
from .calc import write_calc_sheet
from .cashflow import write_cashflow
from .catalog import write_catalog
from .compare import write_compare
from .curve import CURVE_SHEET, write_curve
from .inputs import write_inputs
from .notes import write_change_log, write_glossary
from .reference import write_reference, write_reference_inputs
from .sensitivity import write_sensitivity
from .stages import write_stages
from .summary import write_summary
from .writer import (BODY_FONT, CALC_SHEETS, CANDIDATES_SHEET, CHANGE_LOG_SHEET, INPUT_CHECKS_SHEET, REFERENCE_SHEET,
                     WIDE_SHEET_UNITS, WorkbookResult, Writer)

# TRAINBUDGET_XLSX_WRITER=openpyxl saves every book through openpyxl's own writer (the plain
# path; slower, the same workbook): for a reader who suspects the fast one.
PLAIN_WRITER = "openpyxl"


def sheet_titles(plan: Plan) -> list[str]:
    """The book's tabs, in order (a tab's name is an id; what it shows is workbook.sheets.<id>)."""
    titles = ["Summary", "Inputs", "Catalog", "Memory", "Parallelism", "Compute", "Stages", "Schedule",
              "Timeline", "Cost", "Cashflow", REFERENCE_SHEET, "Sensitivity", "Checks", INPUT_CHECKS_SHEET,
              "Glossary",
              CHANGE_LOG_SHEET]
    if plan.layout is not None and plan.layout.candidates:
        titles.insert(titles.index("Parallelism") + 1, CANDIDATES_SHEET)
    if plan.curve is not None:
        titles.insert(titles.index("Sensitivity"), CURVE_SHEET)
    if plan.options:
        titles.insert(1, "Compare")
    return titles


def _build(w: Writer) -> None:
    plan = w.plan
    write_inputs(w, write_reference_inputs)
    write_catalog(w)
    for title in CALC_SHEETS:
        write_calc_sheet(w, title, w.m(f"workbook.subtitles.{title.lower().replace(' ', '_')}"))
    write_stages(w, w.wb["Stages"], plan)
    write_reference(w, w.wb[REFERENCE_SHEET], plan)
    write_cashflow(w, w.wb["Cashflow"], plan)
    if plan.curve is not None:
        write_curve(w, w.wb[CURVE_SHEET])
    write_sensitivity(w, w.wb["Sensitivity"], plan)
    if plan.options:
        write_compare(w, w.wb["Compare"], plan, plan.options)
    write_summary(w)        # after Compare: its printed page shows the recommendation
    write_glossary(w)
    write_change_log(w)
    _properties(w)
    _wide_sheets(w)


def write_workbook(plan: Plan, fast: bool | None = None) -> WorkbookResult:
    """The plan's workbook, saved through the fast writer unless `fast` is False (or, left
    None, TRAINBUDGET_XLSX_WRITER=openpyxl asks for openpyxl's own).

    Its ~40,000 openpyxl objects (cells, styles, names, rules) all live until it is written and
    refer to their sheet, so the cyclic collector's passes while it is built find nothing to
    free and promote them all, and after it only a full pass would free them: the collector
    is paused while the book is built (as the caller had it, after), and the sheets' contents
    are dropped once it is written, so reference counting frees them."""
    if fast is None:
        fast = os.environ.get("TRAINBUDGET_XLSX_WRITER", "") != PLAIN_WRITER
    collecting = gc.isenabled()
    gc.disable()
    writer = None
    try:
        writer = Writer(plan, sheet_titles(plan))
        _build(writer)
        writer.result.data = save_book(writer.wb, writer.cached, BODY_FONT, fast=fast)
        return writer.result
    finally:
        if writer is not None:
            release(writer.wb)
        if collecting:
            gc.enable()


def _properties(w: Writer) -> None:
    p = w.wb.properties
    p.title = w.plan.scenario.name
    p.subject = w.m("workbook.properties.subject")
    p.creator = "trainbudget"
    p.keywords = w.m("workbook.version", version=__version__, digest=w.digest)
    p.version = __version__
    p.identifier = w.digest
    p.revision = w.digest
    p.description = w.m("workbook.properties.description", version=__version__,
                        scenario=w.plan.scenario_id, digest=w.digest)
    # The language tag (zh-CN) lets `import` tell the book's language without reading its
    # words; English books carry none, as before languages existed (their bytes unchanged).
    tag = w.m("report.html_lang")
    if tag != text("report.html_lang", DEFAULT_LANG):
        p.language = tag
    # the cached values are the planner's: a spreadsheet still recalculates every formula on load
    w.wb.calculation.fullCalcOnLoad = True


def _wide_sheets(w: Writer) -> None:
    """A sheet whose print range is wider than WIDE_SHEET_UNITS prints two pages wide, its
    row labels (column A) repeated on each: one page would shrink it below 60%."""
    for ws in w.wb.worksheets:
        if not ws.sheet_properties.pageSetUpPr.fitToPage or ws.page_setup.fitToWidth != 1:
            continue
        last = ws.max_column
        if ws.print_area:
            last = range_boundaries(str(ws.print_area).split(",")[0].split("!")[-1].replace("$", ""))[2]
        units = sum(column_dimension(ws, LETTERS[c]).width or 8.43 for c in range(1, last + 1))
        if units > WIDE_SHEET_UNITS:
            ws.page_setup.fitToWidth = 2
            ws.print_title_cols = "A:A"
