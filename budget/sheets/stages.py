"""The Stages sheet: each stage of a multi-stage run as a column of live formulas.

A stage is the plan evaluated at the stage's own values of a few inputs (GPU count, sequence
length, batch, TP, PP, CP: the stages table on the Inputs sheet, a blank cell keeping the plan's
value). The model's row items (`budget.model.stages.stage_rows`) are the model's own formulas with
those inputs swapped for the stage's cells, so each column here is rendered from the same
expressions the planner compiles: `At(name)` resolves to the stage's cell of a row item (or
`INDEX(<input column>, k)` for the stages table), `UpTo(name)` to the row from the first stage
to this one. The plan's training FLOPs, GPU-hours, steps and days are the sums of these rows,
and `check_stages` adds up the stages' own checks, so a reviewer's edit to a stage moves the
whole book.
"""

from __future__ import annotations

from openpyxl.utils import get_column_letter
from openpyxl.utils.cell import column_index_from_string, coordinate_from_string

from ..formula.expr import IF, Cell, Expr
from ..model.model import STAGE_CHECKS, STAGE_VALUES
from .writer import NAME_FONT, NOTE_FONT, SECTION_FONT, Resolved, number_format, put_text

FIRST_COL = 3         # C: the first stage; A label, B unit
HEAD_ROW = 4

# The rows a reviewer reads first, in this order; the model's figures at the stage's values follow.
RESULT_ROWS = ("stage_tokens_used", "stage_train_steps", "stage_train_flops", "stage_mfu_used", "stage_gpu_hours",
               "stage_train_days", "stage_idle_gpu_hours", "stage_start", "stage_end")


def _sections(model) -> list[tuple[str, list]]:
    rows = {i.name: i for i in model.row_items()}
    used = [rows[f"{c}_used"] for c in STAGE_VALUES.values()]
    results = [rows[n] for n in RESULT_ROWS]
    checks = [rows[f"stage_{c}"] for c in STAGE_CHECKS]
    shown = {i.name for i in (*used, *results, *checks)}
    figures = [i for i in rows.values() if i.name not in shown]
    return [("values", used), ("results", results), ("checks", checks), ("figures", figures)]


def write_stages(w, ws, plan) -> None:
    """The Stages sheet of `w` (a budget.sheets.writer.Writer) for `plan`."""
    w.title(ws, w.sheet_name("Stages"), w.m("workbook.stages.subtitle"))
    n = stage_rows(plan)                     # the stages table's rows, spare ones included
    _head(w, ws, plan, n)
    placed = _labels(w, ws, n)
    first, last = get_column_letter(FIRST_COL), get_column_letter(FIRST_COL + n - 1)
    resolvers = [Resolved(row_resolver(w, placed, k, FIRST_COL + k)).__getitem__ for k in range(n)]
    for name, r in placed.items():
        item, values = w.model.items[name], plan.values[name]
        for k in range(n):
            w.formula(ws, r, FIRST_COL + k, item.expr, values[k] if k < len(values) else "",
                      number_format(item.unit), resolvers[k])
        if name.startswith("stage_check_"):
            w.flag_format(ws, f"{first}{r}:{last}{r}", blank_ok=True)
    w.widths(ws, [40, 12, *([14] * n), 26, 36])
    ws.freeze_panes = ws.cell(HEAD_ROW + 1, FIRST_COL).coordinate
    w.page_setup(ws)
    # Printed: the stages' values, time and checks; the model's figures at them stay on screen
    last_row = max(r for name, r in placed.items() if name.startswith("stage_check_"))
    ws.print_area = f"A1:{get_column_letter(FIRST_COL + n + 1)}{last_row}"


def _head(w, ws, plan, n: int) -> None:
    """The heading row: item, unit, each stage's name (live from the stages table), name, note."""
    names = plan.values["stage_name"]
    for c, key in ((1, "item"), (2, "unit"), (FIRST_COL + n, "name"), (FIRST_COL + n + 1, "note")):
        put_text(ws.cell(HEAD_ROW, c), w.m(f"workbook.columns.{key}"))
        w.named(ws.cell(HEAD_ROW, c), "Header")
    for k in range(n):
        name = names[k] if k < len(names) and names[k] is not None else ""
        cell = w.formula(ws, HEAD_ROW, FIRST_COL + k, shown(table_ref(w, "stage_name", k)), name, None)
        w.named(cell, "Header")
    if not names:
        put_text(ws.cell(HEAD_ROW - 1, 1), w.m("workbook.stages.none"))
        ws.cell(HEAD_ROW - 1, 1).font = NOTE_FONT


def _labels(w, ws, n: int) -> dict[str, int]:
    """Each row item's row under its section heading: label, unit, defined name (its row across
    the stages' columns), and its note where the item is the Stages sheet's own (the model's
    figures keep their notes on their own sheets). Returns name -> row."""
    placed: dict[str, int] = {}
    row = HEAD_ROW
    for key, items in _sections(w.model):
        row += 2
        put_text(ws.cell(row - 1, 1), w.m(f"workbook.stages.sections.{key}"))
        ws.cell(row - 1, 1).font = SECTION_FONT
        for item in items:
            placed[item.name] = row
            put_text(ws.cell(row, 1), item.label)
            w.unit_cell(ws, row, 2, item.unit)
            put_text(ws.cell(row, FIRST_COL + n), item.name)
            ws.cell(row, FIRST_COL + n).font = NAME_FONT
            if item.note and key != "figures":
                put_text(ws.cell(row, FIRST_COL + n + 1), item.note)
            w.define(item.name, ws, f"${get_column_letter(FIRST_COL)}${row}:${get_column_letter(FIRST_COL + n - 1)}${row}")
            row += 1
    return placed


def shown(cell: Cell) -> Expr:
    """A table cell shown elsewhere: blank while the cell is blank (not 0)."""
    return IF(cell.eq(""), "", cell)


def table_cell(w, name: str, k: int) -> str:
    """`table_ref` rendered ('Inputs'!$B$230), for a resolver. A name is defined once (a second
    definition raises), so its cells are remembered per book."""
    known = w.table_cells.get((name, k))
    if known is None:
        known = w.table_cells[(name, k)] = table_ref(w, name, k).excel()
    return known


def table_ref(w, name: str, k: int) -> Cell:
    """Cell k of a defined name's range: down a column (the stages table on Inputs) or along a
    row (a row item on the Stages sheet)."""
    sheet, ref = w.result.names[name].split("!")
    first, _, last = ref.partition(":")
    column, row = coordinate_from_string(first)
    col = column_index_from_string(column)
    if last and coordinate_from_string(last)[1] == row:        # one row: step along it
        return Cell(row, col + k, True, True, sheet)
    return Cell(row + k, col, True, True, sheet)


def row_resolver(w, placed: dict[str, int], k: int, col: int):
    """Names in row k's formulas (a stage's; a reference run's): its own cell of a row item in
    column `col`, its cell of the inputs table, a running range from the first stage; any other
    name is the plan's defined name."""
    letter, first = get_column_letter(col), get_column_letter(FIRST_COL)

    def resolve(name: str) -> str:
        base, _, how = name.partition("@")
        if how == "row" and base in placed:
            return f"{letter}{placed[base]}"
        if how == "row":
            return table_cell(w, base, k)
        if how == "upto":
            return f"${first}${placed[base]}:{letter}{placed[base]}"
        return name

    return resolve


def stage_rows(plan) -> int:
    """Rows of the stages table on the Inputs sheet: the stages and the spare rows."""
    from .writer import RANGE_TABLES
    return len(plan.values["stage_tokens"]) + RANGE_TABLES["stage"][1]

