"""The layout decision on the Parallelism sheet, and the "Layout candidates" sheet: each layout
the search compared as a column of live formulas, the same expressions as the calculation
sheets with the layout-dependent names resolved to the candidate's own cells."""

from __future__ import annotations

from openpyxl.utils import get_column_letter

from ..core.i18n import Messages
from .generated import generated_for, generated_lines
from .writer import CANDIDATES_SHEET, SECTION_FONT, Resolved, number_format, put_text

CANDIDATE_KEYS = ("dp_size", "memory_per_gpu_gb", "check_memory_fits", "bubble_fraction",
                  "comm_fraction", "layout_efficiency", "train_days", "total_cost")


def candidate_rows(w, ws, row: int) -> None:
    """The layout decision in words on Parallelism, and each candidate layout as a column of
    live formulas on "Layout candidates": the same expressions as the calculation sheets,
    with layout-dependent names resolved to the candidate's own cells. Columns, not rows, so
    that the sheet prints on one page wide: the key figures first, then the workings."""
    layout = w.plan.layout
    if layout is None:
        return
    m = w.m
    lines = generated_lines(w)
    if layout.candidates:
        lines.append(m("workbook.generated.candidates_sheet"))
    generated_for(w, ws, row + 1, lines, 5)
    if not layout.candidates:
        return
    keys, working = candidate_columns(w.model)
    wk = w.wb[CANDIDATES_SHEET]
    w.title(wk, w.sheet_name(CANDIDATES_SHEET), m("workbook.layout_candidates.subtitle"))
    count = len(w.plan.candidate_values)
    w.widths(wk, [44] + [11] * count)
    last = generated_for(w, wk, 4, [m("workbook.generated.why_first", explanation=layout.explanation)],
                              1 + count)
    head = last + 2
    row_of: dict[str, int] = {}
    r = head + 1
    for n, name in enumerate(keys + working):
        if n == len(keys):
            r += 1
            put_text(wk.cell(r, 1), m("workbook.layout_candidates.workings"))
            wk.cell(r, 1).font = SECTION_FONT
            r += 1
        row_of[name] = r
        label, unit = _column_label(w, name)
        w.label_cell(wk, r, 1, label, unit, style=None)
        r += 1
    w.header(wk, head, [m("workbook.columns.candidate")] + [candidate_label(m, layout, n) for n in range(count)])
    wk.row_dimensions[head].height = 45
    for n, values in enumerate(w.plan.candidate_values):
        col = get_column_letter(2 + n)
        refs = {name: f"{col}{at}" for name, at in row_of.items()}
        resolve = Resolved(lambda name, refs=refs: refs.get(name, name)).__getitem__
        for name, at in row_of.items():
            candidate_cell(w, wk, at, 2 + n, n, name, values[name], resolve)
    wk.freeze_panes = f"B{head + 1}"
    w.page_setup(wk, f"{head}:{head}")


def _column_label(w, name: str) -> tuple[str, str]:
    """(label, unit) of a candidate figure."""
    if name in w.model.inputs:
        return w.model.inputs[name].short, ""
    item = w.model.items[name]
    # the key figures go by short labels of their own (workbook.layout_candidates.labels.<name>)
    label = w.m(f"workbook.layout_candidates.labels.{name}") if name in CANDIDATE_KEYS else item.label
    return label, item.unit


def candidate_cell(w, ws, row: int, col: int, n: int, name: str, value, resolve) -> None:
    if name in w.candidate_cells[n]:
        w.formula(ws, row, col, w.candidate_cells[n][name], value, None)
        return
    item = w.model.items[name]
    cell = w.formula(ws, row, col, item.expr, value, number_format(item.unit), resolve)
    if item.is_flag:
        w.flag_format(ws, cell.coordinate, item.kind == "warning")



def candidate_columns(model) -> tuple[list[str], list[str]]:
    """(layout inputs and key outputs, every other layout-dependent item they need)."""
    layout_inputs = [d.name for d in model.layout_inputs()]
    needed = model.closure(CANDIDATE_KEYS)
    # row items are the Stages sheet's: a run in stages has its layout pinned, one candidate
    working = [n for n in model.affected_by(set(layout_inputs))
               if n in needed and n not in CANDIDATE_KEYS and model.items[n].kind != "rows"]
    return layout_inputs + list(CANDIDATE_KEYS), working


def candidate_label(m: Messages, layout, n: int) -> str:
    if layout.search is None:
        return m("workbook.layout_candidates.pinned")
    if n >= layout.rejected_from:
        return m("workbook.layout_candidates.rejected")
    return m("workbook.layout_candidates.chosen") if n == 0 else str(n + 1)
