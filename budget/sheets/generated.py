"""Sentences only generation can write (the sizing and the layout decision in words), under a
heading with a live warning line above them that turns on as soon as the inputs, or the
figures the sentences state, differ from generation."""

from __future__ import annotations

from ..formula.expr import IF, IFERROR, OR, ROUND, Ref, Text, compile_items
from ..xlsx.cells import LETTERS, column_dimension
from .writer import CHECK_FONT, SECTION_FONT, WRAP_TOP, put_text, text_height


def generated_for(w, ws, row: int, lines: list[str], last_col: int) -> int:
    """Sentences that can only be written at generation, under a heading, with a formula line
    above them that turns on as soon as the inputs or the figures the sentences state differ
    from generation. Returns the last row written."""
    ws.cell(row, 1, w.m("workbook.generated.heading")).font = SECTION_FONT
    v = w.plan.values
    stated = ["memory_per_gpu_gb", "usable_hbm_gb", "train_days"]
    as_text = lambda name: ROUND(Ref(name), 1).concat("")  # noqa: E731
    figures = compile_items([(n, as_text(n)) for n in stated])(dict(v), {})
    changed = OR(Ref("search_inputs_changed").ne(0), Ref("layout_label").ne(Text(str(v["layout_label"]))),
                 *(as_text(n).ne(Text(figures[n])) for n in stated))
    warning = Text(w.m("workbook.generated.changed"))
    cell = w.live(ws, row + 1, 1, IFERROR(IF(changed, warning, ""), warning))
    w.named(cell, "Normal")
    cell.font = CHECK_FONT
    for n, text in enumerate(lines):
        row += 2 if n == 0 else 1
        put_text(ws.cell(row, 1), text)
        ws.cell(row, 1).alignment = WRAP_TOP
        ws.merge_cells(start_row=row, start_column=1, end_row=row, end_column=last_col)
        width = sum(column_dimension(ws, LETTERS[c]).width or 8.43
                    for c in range(1, last_col + 1))
        ws.row_dimensions[row].height = text_height(text, width)
    return row


def generated_lines(w) -> list[str]:
    """The sizing and the layout decision in words, as generation wrote them."""
    return [w.m("workbook.generated.gpu_count", source=w.plan.inputs["gpu_count"].source),
            w.m("workbook.generated.layout", explanation=w.plan.layout.explanation)]

