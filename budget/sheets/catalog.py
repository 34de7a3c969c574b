"""The Catalog sheet: the catalog tables the model's lookups read, as inputs with their sources."""

from __future__ import annotations

from openpyxl.utils import get_column_letter

from ..model.model import ACCELERATOR_TABLE
from .writer import BELOW_ROWS, SECTION_FONT, SPARE_ROW_TABLES, SPARE_ROWS, UNLOCKED, put_text


def write_catalog(w) -> None:
    """The Catalog sheet: the tables the lookups read (accelerators, prices, architectures, FX...),
    each column a defined name, the growable ones with spare rows a reviewer can fill."""
    ws = w.wb["Catalog"]
    w.title(ws, w.m("workbook.catalog.title"), w.m("workbook.catalog.subtitle"))
    row = 4
    for tdef in w.model.tables.values():
        data = w.plan.tables[tdef.name]
        ws.cell(row, 1, tdef.title).font = SECTION_FONT
        row += 1
        w.header(ws, row, [w.with_unit(h, u) if u != "text" else h for _, h, u in tdef.columns]
                    + [w.m("workbook.columns.source")])
        first = row + 1
        for r, (values, source) in enumerate(zip(data.rows, data.sources)):
            for c, (col, _, unit) in enumerate(tdef.columns, 1):
                w.input_value(ws.cell(first + r, c), values[col], unit)
            put_text(ws.cell(first + r, len(tdef.columns) + 1), source)
        last = first + len(data.rows) - 1
        growable = tdef.name in SPARE_ROW_TABLES
        if growable:      # spare rows a reviewer can fill: the drop-down and lookups see them
            for r in range(last + 1, last + SPARE_ROWS + 1):
                for c, (_, _, unit) in enumerate(tdef.columns, 1):
                    w.input_value(ws.cell(r, c), None, unit)
                ws.cell(r, len(tdef.columns) + 1).protection = UNLOCKED
            put_text(ws.cell(last + 1, len(tdef.columns) + 1),
                     w.m(f"workbook.catalog.spare_rows.{tdef.name}"))
            last += SPARE_ROWS
        for c, (col, _, _) in enumerate(tdef.columns, 1):
            letter = get_column_letter(c)
            w.define(f"{tdef.name}_{col}", ws, f"${letter}${first}:${letter}${last}")
        if tdef.name == ACCELERATOR_TABLE:
            end = get_column_letter(len(tdef.columns))
            w.define("catalog_rows_below", ws, f"$A${last + 1}:${end}${last + BELOW_ROWS}")
            last += BELOW_ROWS
        row = last + 3
    w.widths(ws, [17, 22, 8, 8, 7, 7, 9, 9, 7, 7, 8, 10, 8, 7, 9, 7, 18])   # O, FP4: 10,000.0
    ws.freeze_panes = "B4"
    w.page_setup(ws, "1:3")

