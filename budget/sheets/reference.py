"""The Reference runs sheet: published training runs near the plan, and the planner's own
estimate of each beside the published figure (issue 13), so a reviewer sees how far to trust the
plan's throughput.

The runs come from catalogs/throughput_runs.yaml (each row a published measurement with its
source and quote). At generation `budget.plan.reference_runs.run_inputs` chooses the few closest to the plan — the same
accelerator first, then the same generation, then the nearest model size (log of parameters), no
source holding more than half the list — and puts each run's published values (accelerator, GPUs,
shape, layout, batch, tokens/s per GPU) into the reference-runs table: one column per run on
this sheet, input cells a reviewer may edit. Rows whose layout the source leaves unpublished
(micro-batch, interleaving, recomputation...) cannot be estimated and are not chosen.

A run's estimate is the model's own formulas at the run's values (`budget.model.reference.reference_runs`
through `_row_table`, as a stage is), with the utilisation left blank so that the efficiency
model predicts it: each figure below the table is a live formula.
"""

from __future__ import annotations

from openpyxl.utils import get_column_letter

from ..model.model import REFERENCE_ROWS
from ..plan.reference_runs import TABLE
from .stages import row_resolver, shown, table_ref
from .writer import (BOLD_FONT, NAME_FONT, NOTE_FONT, REFERENCE_SHEET, SECTION_FONT, WRAP_TOP, Resolved,
                     line_height, number_format, put_text)

FIRST_COL = 3         # C: the first run; A label, B unit
HEAD_ROW = 4
ESTIMATE_ROWS = ("ref_model_params", "ref_layout_label", "ref_dp_size", "ref_peak_tflops",
                 "ref_model_flops_per_token", "ref_effective_mfu", "ref_tokens_per_gpu_s", "ref_published_mfu",
                 "ref_error")
# The run columns are narrow (the sheet prints one page wide): hundreds of billions in scientific
# notation, not as ### in a printed page
COMPACT_FORMATS = {"parameters": "0.00E+00", "FLOP/token": "0.00E+00"}  # i18n: not text
OWN_ROWS = ESTIMATE_ROWS[-3:]    # the sheet's own items (their notes shown): estimate, published MFU, error
# The table's rows the Reference runs sheet repeats (live) above the estimates
SHOWN = ("ref_accelerator", "ref_gpu_count", "ref_batch_sequences", "ref_published_tokens_per_gpu_s")


# --- the sheet -----------------------------------------------------------------------------

def write_reference_inputs(w, ws, row: int) -> int:
    """The reference-runs table on the Inputs sheet of `w` from `row`: one column per run (B on),
    one row per published value, input cells a reviewer may edit (the runs' sources and words
    are on the Reference runs sheet). Returns the table's last row."""
    plan, model = w.plan, w.model
    n = len(plan.inputs[REFERENCE_ROWS].value)
    put_text(ws.cell(row, 1), model.inputs[REFERENCE_ROWS].section)
    ws.cell(row, 1).font = SECTION_FONT
    put_text(ws.cell(row + 1, 1), plan.inputs[REFERENCE_ROWS].source)
    ws.cell(row + 1, 1).font = NOTE_FONT
    first, last = get_column_letter(2), get_column_letter(1 + max(n, 1))
    row += 2
    for name in TABLE:
        d = model.inputs[name]
        put_text(ws.cell(row, 1), d.label)
        for k, value in enumerate(plan.inputs[name].value):
            w.input_value(ws.cell(row, 2 + k), value, d.unit)
            if isinstance(value, str):            # a run's name or id wraps in its column
                ws.cell(row, 2 + k).alignment = WRAP_TOP
        if name in (REFERENCE_ROWS, "ref_accelerator"):
            ws.row_dimensions[row].height = (4 if name == REFERENCE_ROWS else 2) * line_height(False)
        if not n:
            w.input_value(ws.cell(row, 2), None, d.unit)
        w.define(name, ws, f"${first}${row}:${last}${row}")
        w.validate(ws, f"{first}{row}:{last}{row}", d)
        row += 1
    return row - 1


def write_reference(w, ws, plan) -> None:
    """The Reference runs sheet of `w` (a budget.sheets.writer.Writer) for `plan`."""
    m, model = w.m, w.model
    w.title(ws, w.sheet_name(REFERENCE_SHEET), m("workbook.reference.subtitle"))
    n = len(plan.values[REFERENCE_ROWS])
    put_text(ws.cell(HEAD_ROW - 1, 1), m("workbook.reference.chosen") if n else m("workbook.reference.none"))
    ws.cell(HEAD_ROW - 1, 1).font = NOTE_FONT
    for c, key in ((1, "item"), (2, "unit"), (FIRST_COL + n, "name"), (FIRST_COL + n + 1, "note")):
        put_text(ws.cell(HEAD_ROW, c), m(f"workbook.columns.{key}"))
        w.named(ws.cell(HEAD_ROW, c), "Header")
    for k in range(n):                           # each run's name, live from the table on Inputs
        cell = w.formula(ws, HEAD_ROW, FIRST_COL + k, shown(table_ref(w, REFERENCE_ROWS, k)),
                         plan.values[REFERENCE_ROWS][k], None)
        w.named(cell, "Header")
        cell.alignment = WRAP_TOP
    ws.row_dimensions[HEAD_ROW].height = 4 * line_height(False)     # a run's name wraps in its column
    first, last = get_column_letter(FIRST_COL), get_column_letter(FIRST_COL + max(n, 1) - 1)
    row = _section(w, ws, HEAD_ROW + 1, "published")
    for name in SHOWN:                           # the run's key values, as the table on Inputs has them
        d = model.inputs[name]
        _label(w, ws, row, d.label, d.unit, name, n)
        for k in range(n):
            w.formula(ws, row, FIRST_COL + k, table_ref(w, name, k), plan.values[name][k],
                      number_format(d.unit)).alignment = WRAP_TOP
        if d.unit == "catalog id":                # an accelerator's id wraps in its column
            ws.row_dimensions[row].height = 2 * line_height(False)
        row += 1
    rows = {i.name: i for i in model.row_items(REFERENCE_ROWS)}
    placed: dict[str, int] = {}
    row = _section(w, ws, row + 1, "estimate")
    for name in ESTIMATE_ROWS:
        placed[name] = row
        row += 1
    row = _section(w, ws, row + 1, "sources")
    printed = row - 1
    for name in ("ref_source", "ref_quote"):     # one line per run: its source, then its words
        d = model.inputs[name]
        put_text(ws.cell(row, 1), d.label)
        ws.cell(row, 1).font = BOLD_FONT
        row += 1
        for k, value in enumerate(plan.inputs[name].value):
            w.formula(ws, row + k, 1, shown(table_ref(w, REFERENCE_ROWS, k)), plan.values[REFERENCE_ROWS][k], None)
            w.input_value(ws.cell(row + k, FIRST_COL), value, d.unit)
        w.define(name, ws, f"${first}${row}:${first}${row + max(n, 1) - 1}")
        row += max(n, 1) + 1
        printed = max(printed, row - 2) if name == "ref_source" else printed
    row = _section(w, ws, row, "workings")
    for name in rows:
        if name not in placed:
            placed[name] = row
            row += 1
    resolvers = [Resolved(row_resolver(w, placed, k, FIRST_COL + k)).__getitem__ for k in range(n)]
    for name, r in placed.items():               # the figures: live formulas, one per run
        item = rows[name]
        _label(w, ws, r, item.label, item.unit, name, n, item.note if name in OWN_ROWS else "")
        for k in range(n):
            w.formula(ws, r, FIRST_COL + k, item.expr, plan.values[name][k],
                      COMPACT_FORMATS.get(item.unit, number_format(item.unit)), resolvers[k])
        w.define(name, ws, f"${first}${r}:${last}${r}")
    # one page wide at 60% or more (tests/test_print.py): at most about 177 width units in all
    w.widths(ws, [34, 12, *([12] * max(n, 1)), 22, 26])
    ws.freeze_panes = ws.cell(HEAD_ROW + 1, FIRST_COL).coordinate
    w.page_setup(ws)
    # Printed: the runs, the estimates and the sources; the quotes and the workings stay on screen
    ws.print_area = f"A1:{get_column_letter(FIRST_COL + n + 1)}{printed}"


def _section(w, ws, row: int, key: str) -> int:
    put_text(ws.cell(row, 1), w.m(f"workbook.reference.sections.{key}"))
    ws.cell(row, 1).font = SECTION_FONT
    return row + 1


def _label(w, ws, row: int, label: str, unit: str, name: str, n: int, note: str = "") -> None:
    put_text(ws.cell(row, 1), label)
    w.unit_cell(ws, row, 2, unit)
    put_text(ws.cell(row, FIRST_COL + n), name)
    ws.cell(row, FIRST_COL + n).font = NAME_FONT
    if note:
        put_text(ws.cell(row, FIRST_COL + n + 1), note)
