"""The Inputs sheet: every assumption a reviewer may change (label | value | unit | source | note
| name | at generation), blue on yellow and validated, in sections; the stages and staffing
tables with spare rows; the reference-runs table (written by reference.py); what the layout
search saw (column G and the generation block); and the candidate layouts as editable inputs."""

from __future__ import annotations

from typing import Callable

from openpyxl.utils import get_column_letter
from openpyxl.worksheet.pagebreak import Break

from ..formula.expr import IF, Cell, Ref
from ..model.lineitems import InputDef
from ..xlsx.cells import set_font
from .candidates import candidate_label
from .writer import (BELOW_ROWS, CHANGED_FILL, GREY_FONT, INPUT_COLUMNS, INPUTS_WIDTHS, NAME_FONT, RANGE_TABLES,
                     SECTION_FONT, SUBTITLE_FONT, formula_rule, live_text, number_format, put_text)


def write_inputs(w, reference_table: Callable[[object, object, int], int]) -> None:
    """The Inputs sheet; `reference_table(writer, ws, row)` writes the reference-runs table
    from `row` and returns its last row (the Reference runs sheet's module owns it)."""
    ws, m = w.wb["Inputs"], w.m
    w.title(ws, m("workbook.inputs.title"), m("workbook.inputs.subtitle"))
    w.header(ws, 4, [m("workbook.inputs.columns.assumption"), m("workbook.columns.value"),
                        m("workbook.columns.unit"), m("workbook.columns.source"),
                        m("workbook.columns.note"), m("workbook.inputs.columns.name"),
                        m("workbook.inputs.columns.at_generation"), m("workbook.inputs.columns.changed")])
    defs = [d for d in w.model.inputs.values() if d.on_inputs_sheet]
    singles = [d for d in defs if not d.is_range and not d.kind.startswith("generated")]
    ranges = [d for d in defs if d.is_range and d.name.split("_")[0] in RANGE_TABLES]   # not the Reference runs'
    rows: list[int] = []
    row = w.sectioned_rows(ws, 5, singles, lambda ws, row, d: (input_row(w, ws, row, d), rows.append(row)))
    changed_count(w, ws, rows)
    tables: dict[str, list[InputDef]] = {}
    for d in ranges:                  # one table per section: the stages, the staffing
        tables.setdefault(d.section, []).append(d)
    for defs in tables.values():
        row = range_table(w, ws, row + 1, defs)
    row = reference_table(w, ws, row + 2)
    # What the search saw starts a printed page of its own
    ws.row_breaks.append(Break(id=row + 1))
    row = generation_block(w, ws, row + 2)
    candidate_inputs(w, ws, row + 2)
    w.widths(ws, INPUTS_WIDTHS)
    ws.freeze_panes = "B5"
    w.page_setup(ws)


def input_row(w, ws, row: int, d: InputDef) -> None:
    iv = w.plan.inputs[d.name]
    put_text(ws.cell(row, 1), d.label)
    cell = ws.cell(row, 2)
    w.input_value(cell, iv.value, d.unit, d.kind)
    w.unit_cell(ws, row, 3, d.unit, d.currency or "currency")
    put_text(ws.cell(row, 4), iv.source)
    if d.name == "gpu_type":       # the product name, live beside the drop-down
        w.formula(ws, row, 5, Ref("accelerator_name"), w.plan.values["accelerator_name"], None)
    elif iv.note:
        put_text(ws.cell(row, 5), iv.note)
    put_text(ws.cell(row, 6), d.name)
    set_font(ws.cell(row, 6), NAME_FONT)
    w.define(d.name, ws, f"$B${row}")
    w.validate(ws, cell.coordinate, d)
    twin = f"gen_{d.name}"
    if twin in w.model.inputs:   # the value the layout search saw, kept visibly
        generated_value(w, ws, row, 7, twin, d.unit)
    else:                        # the value at generation, a constant: the Summary lists what changed
        generated_value(w, ws, row, 7, None, d.unit, iv.value)
    changed = formula_rule(Cell(row, 2, fixed_col=True).ne(Cell(row, 7, fixed_col=True)), CHANGED_FILL)
    ws.conditional_formatting.add(f"A{row}:G{row}", changed)


def changed_count(w, ws, rows: list[int]) -> None:
    """Column H: how many inputs above and on the row differ from their value at generation
    (column G), a running count; the Summary finds the k-th changed input by it and reads the
    count from its last cell (w.changed_rows)."""
    before = None
    for row in rows:
        here = IF(Cell(row, 2).eq(Cell(row, 7)), 0, 1)
        w.formula(ws, row, 8, here if before is None else here + Cell(before, 8), 0, "0")
        set_font(ws.cell(row, 8), GREY_FONT)
        before = row
    if rows:
        w.changed_rows = (rows[0], rows[-1])


def generated_value(w, ws, row: int, col: int, name: str | None, unit: str, value=None) -> None:
    """The value at generation as a constant (grey); under the defined name `name` when given
    (the inputs the layout search saw), else `value`, with no name."""
    cell = ws.cell(row, col)
    if name is not None:
        value = w.plan.inputs[name].value
    if name is None and value is None:
        return
    if isinstance(value, str):
        put_text(cell, value)
    else:
        cell.value = value
        fmt = number_format(unit)
        if fmt:
            cell.number_format = fmt
    cell.font = GREY_FONT
    if name is not None:
        w.define(name, ws, f"${get_column_letter(col)}${row}")


def generation_block(w, ws, row: int) -> int:
    """What the layout search saw besides the inputs above (column G): the catalog figures
    it read and whether it ran. The check on the Checks sheet compares them with the live cells."""
    ws.cell(row, 1, w.m("workbook.inputs.generation.heading")).font = SECTION_FONT
    row += 1
    put_text(ws.cell(row, 1), w.m("workbook.inputs.generation.note"))
    ws.cell(row, 1).font = SUBTITLE_FONT
    for d in w.model.inputs.values():
        source = d.name.removeprefix("gen_")
        if not d.kind.startswith("generated") or (source != d.name and source in w.model.inputs):
            continue
        row += 1
        put_text(ws.cell(row, 1), d.label)
        generated_value(w, ws, row, 2, d.name, d.unit)
        w.unit_cell(ws, row, 3, d.unit)
        if source in w.model.items:
            now = live_text(w.m("workbook.inputs.generation.now"), value=Ref(source))
            w.formula(ws, row, 5, IF(Ref(source).eq(Ref(d.name)), "", now), "", None)
        put_text(ws.cell(row, 6), d.name)
        set_font(ws.cell(row, 6), NAME_FONT)
    return row


def range_table(w, ws, row: int, defs: list[InputDef]) -> int:
    if not defs:
        return row
    section = defs[0].section
    ws.cell(row, 1, section).font = SECTION_FONT
    # A table as wide as the sheet's columns (the stages) says its source and its spare rows
    # once, on its title row (columns D and E), so the sheet still prints one page wide.
    wide = len(defs) >= INPUT_COLUMNS
    title_row = row
    row += 1
    w.header(ws, row, [d.label for d in defs] + ([] if wide else [w.m("workbook.columns.source")]))
    for c, d in enumerate(defs, 1):     # "(currency/month)" follows the table's currency cell
        w.label_cell(ws, row, c, d.label, d.unit, currency=d.currency or "currency")
    first = row + 1
    values = [w.plan.inputs[d.name].value for d in defs]
    rows = len(values[0])
    source_at = (lambda r: (title_row, 4)) if wide else (lambda r: (r, len(defs) + 1))  # noqa: E731
    for r, line in enumerate(zip(*values)):
        for c, (d, v) in enumerate(zip(defs, line), 1):
            w.input_value(ws.cell(first + r, c), v, d.unit)
        put_text(ws.cell(*source_at(first + r)), w.plan.inputs[defs[0].name].source)
    if wide and not rows:
        put_text(ws.cell(title_row, 4), w.plan.inputs[defs[0].name].source)
    below, spare, hint = RANGE_TABLES[defs[0].name.split("_")[0]]
    last = first + rows + spare - 1
    for r in range(first + rows, last + 1):       # spare rows: blank, unlocked, validated
        for c, d in enumerate(defs, 1):
            w.input_value(ws.cell(r, c), None, d.unit)
    at = (title_row, 5) if wide else (first + rows, len(defs) + 1)
    put_text(ws.cell(*at), w.m(hint, rows=spare))
    ws.cell(*at).font = SUBTITLE_FONT
    for c, d in enumerate(defs, 1):
        col = get_column_letter(c)
        w.define(d.name, ws, f"${col}${first}:${col}${last}")
        if d.kind == "range":
            w.validate(ws, f"{col}{first}:{col}{last}", d)
    end = get_column_letter(len(defs))
    w.define(below, ws, f"$A${last + 1}:${end}${last + BELOW_ROWS}")
    return last + BELOW_ROWS


def candidate_inputs(w, ws, row: int) -> None:
    """The layouts the Parallelism sheet compares, as editable inputs."""
    layout = w.plan.layout
    if layout is None or not layout.candidates:
        return
    ws.cell(row, 1, w.m("workbook.inputs.candidates")).font = SECTION_FONT
    dims = w.model.layout_inputs()
    w.header(ws, row + 1, [w.m("workbook.columns.candidate")] + [d.short for d in dims])
    for n, cand in enumerate(layout.candidates):
        r = row + 2 + n
        put_text(ws.cell(r, 1), candidate_label(w.m, layout, n))
        cells = {}
        for c, name in enumerate((d.name for d in dims), 2):
            cell = ws.cell(r, c)
            w.input_value(cell, cand.layout.as_inputs()[name], w.model.inputs[name].unit)
            w.validate(ws, cell.coordinate, w.model.inputs[name])
            cells[name] = Cell(r, c, True, True, sheet="Inputs")
        w.candidate_cells.append(cells)

