"""The workbook, assembled: which sheets, in which order, each written by its own module (or, for
the sheets not yet in a module of their own, by the shared writer), then saved.

Only this module imports the sheet modules; a sheet module imports the writer, never this one.
"""

from __future__ import annotations

import gc

from ..plan.plan import Plan
from .cashflow import write_cashflow
from .compare import write_compare
from .reference import write_reference, write_reference_inputs
from .sensitivity import write_sensitivity
from .stages import write_stages
from .writer import CALC_SHEETS, REFERENCE_SHEET, WorkbookResult, _Writer


def _build(w: _Writer) -> WorkbookResult:
    plan = w.plan
    w.inputs(write_reference_inputs)
    w.catalog()
    for title in CALC_SHEETS:
        w.calc_sheet(title, w.m(f"workbook.subtitles.{title.lower()}"))
    write_stages(w, w.wb["Stages"], plan)
    write_reference(w, w.wb[REFERENCE_SHEET], plan)
    write_cashflow(w, w.wb["Cashflow"], plan)
    w.summary()
    write_sensitivity(w, w.wb["Sensitivity"], plan)
    if plan.options:
        write_compare(w, w.wb["Compare"], plan, plan.options)
    w.glossary()
    w.change_log()
    return w.save()


def write_workbook(plan: Plan) -> WorkbookResult:
    """The plan's workbook. Its ~40,000 openpyxl objects (cells, styles, names, rules) all live
    until it is written and refer to their sheet, so the cyclic collector's passes while it is
    built find nothing to free and promote them all, and after it only a full pass would free
    them: the collector is paused while the book is built (as the caller had it, after), and
    the sheets' contents are dropped once it is written, so reference counting frees them."""
    collecting = gc.isenabled()
    gc.disable()
    writer = None
    try:
        writer = _Writer(plan)
        return _build(writer)
    finally:
        if writer is not None:
            writer.release()
        if collecting:
            gc.enable()
