"""The whole model as a column: variants of the plan side by side, every figure a live formula.

A `Variant` is the plan under some inputs of its own (an option of the scenario, a low or high
value of an uncertain input). `write_grid` lays the model out with one row per input and per
line item and one column per variant: the variant's own inputs are input cells holding its
values; every other input links to the Inputs sheet (`=price_per_gpu_hour`), so a reviewer's
edit there moves every variant that does not override it, and typing over a link overrides it
for that column alone. Line items are the model's own expressions with names resolved to the
column's cells, exactly as the candidate layouts on the Parallelism sheet are rendered — one
definition, no second copy of the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

from openpyxl.styles import Font
from openpyxl.utils import get_column_letter

from .lineitems import Model


@dataclass(frozen=True)
class Variant:
    title: str
    values: Mapping[str, object]               # every input and item value of this variant
    own: frozenset[str] = field(default_factory=frozenset)   # inputs held as this column's cells
    ranges: Mapping[str, str] = field(default_factory=dict)  # table inputs of its own: name -> range
    formulas: Mapping[str, str] = field(default_factory=dict)  # own inputs set by a formula over
                                                                # the workbook's names (a what-if)
    only: frozenset[str] | None = None   # render just these rows; the others are the base's
                                         # (global names), e.g. what one input does not affect


def grid_rows(model: Model) -> list[str]:
    """The names a grid column renders: the single-cell inputs, then every line item."""
    inputs = [d.name for d in model.inputs.values() if not d.is_range and d.kind != "structure"]
    return inputs + list(model.items)


def write_grid(w, ws, top: int, first_col: int, variants: list[Variant], model: Model,
               on_row: Callable[[int, str], None] | None = None) -> dict[str, int]:
    """Write the grid with its first data row at `top`; returns name -> row.

    `w` is the workbook writer (its `formula`, `input_value` and `live` helpers record the
    Python value of every formula cell for the recalculation tests).
    """
    from .workbook import number_format

    rows = grid_rows(model)
    row_of = {name: top + n for n, name in enumerate(rows)}
    for j, variant in enumerate(variants):
        col = first_col + j
        letter = get_column_letter(col)
        shown = rows if variant.only is None else [n for n in rows if n in variant.only]
        local = {name: f"{letter}{row_of[name]}" for name in shown}
        local.update(variant.ranges)

        def resolve(name: str, local=local) -> str:
            return local.get(name, name)

        for name in shown:
            r = row_of[name]
            value = variant.values.get(name)
            if name in model.inputs:
                d = model.inputs[name]
                fmt = number_format(d.unit, d.kind)
                if name in variant.formulas:
                    cell = w.formula(ws, r, col, variant.formulas[name], value, fmt)
                    cell.font = Font(bold=True)
                elif name in variant.own:
                    w.input_value(ws.cell(r, col), value, d.unit, d.kind)
                else:
                    # A link a reviewer may type over; a blank optional input stays blank ("").
                    numeric = d.kind not in {"choice", "text", "generated_text", "date"}
                    text = f'IF(ISNUMBER({name}),{name},"")' if d.optional and numeric else name
                    cell = w.formula(ws, r, col, text, "" if value is None else value, fmt)
                    cell.style = "Input"
                    if fmt:
                        cell.number_format = fmt
            else:
                item = model.items[name]
                cell = w.formula(ws, r, col, item.expr.excel(resolve), value,
                                 number_format(item.unit))
                if item.is_flag or name == "master_check":
                    w.flag_format(ws, cell.coordinate, item.kind == "warning")
    if on_row:
        for name, r in row_of.items():
            on_row(r, name)
    return row_of
