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

from openpyxl.utils import get_column_letter

from ..formula.expr import IF, ISNUMBER, Expr, Ref
from ..model.lineitems import Model


@dataclass(frozen=True)
class Variant:
    title: str
    values: Mapping[str, object]               # every input and item value of this variant
    own: frozenset[str] = field(default_factory=frozenset)   # inputs held as this column's cells
    ranges: Mapping[str, str] = field(default_factory=dict)  # table inputs of its own: name -> range
    formulas: Mapping[str, Expr] = field(default_factory=dict)  # own inputs set by a formula over
                                                                 # the workbook's names (a what-if)
    only: frozenset[str] | None = None   # render just these rows; the others are the base's
                                         # (global names), e.g. what one input does not affect


def grid_rows(model: Model, stages: int = 0) -> list[str]:
    """The names a grid column renders: the single-cell inputs, every line item, then each row
    item (the Stages sheet's figures) once per stage as `name#k`, so that a column's totals add
    up its own stages."""
    inputs = [d.name for d in model.inputs.values() if not d.is_range and d.kind != "structure"]
    items = [name for name, item in model.items.items() if item.kind != "rows"]
    return inputs + items + [f"{item.name}#{k}" for item in model.row_items() for k in range(stages)]


def row_def(model: Model, name: str):
    """The input or item a grid row shows (a stage's row: the row item it is a row of)."""
    base = name.partition("#")[0]
    return model.inputs.get(base) or model.items[base]


def row_label(w, model: Model, name: str) -> str:
    base, _, k = name.partition("#")
    label = row_def(model, name).label
    return w.m("workbook.grid.stage_row", label=label, stage=int(k) + 1) if k else label


def stage_count(variants: list[Variant]) -> int:
    return len(variants[0].values.get("stage_tokens", ())) if variants else 0


def _stage_resolver(w, local: dict[str, str], row_of: dict[str, int], letter: str, stages: int, k: int | None):
    """Names in a column's formulas: the column's cells; a row item's whole range is its rows
    of this column; in stage k's rows, `name@row` is stage k's cell (or row of the stages
    table), `name@upto` its rows from the first stage."""
    def resolve(name: str) -> str:
        base, _, how = name.partition("@")
        if how == "row":
            if f"{base}#{k}" in local:
                return local[f"{base}#{k}"]
            from .stages import table_cell     # the stages table's row, or the Stages sheet's cell
            return table_cell(w, base, k)
        if how == "upto":
            if f"{base}#0" in local:
                return f"{letter}{row_of[base + '#0']}:{letter}{row_of[f'{base}#{k}']}"
            from .stages import table_cell
            return f"{table_cell(w, base, 0)}:{table_cell(w, base, k).split('!')[1]}"
        if f"{name}#0" in local and stages:
            return f"{letter}{row_of[name + '#0']}:{letter}{row_of[f'{name}#{stages - 1}']}"
        return local.get(name, name)

    return resolve


def _link(d) -> Expr:
    """A column's cell of an input it does not hold: the input's cell on the Inputs sheet, a
    blank optional number or date shown blank (""). A plain link to a blank cell is 0 in Excel
    and Gnumeric (LibreOffice keeps it empty): a blank deadline date would read as 1899-12-30."""
    numeric = d.kind not in {"choice", "text", "generated_text"}
    return IF(ISNUMBER(Ref(d.name)), Ref(d.name), "") if d.optional and numeric else Ref(d.name)


def _linked_value(d, value):
    """What a column's link to input `d` shows: the input's value; "" for a blank one."""
    return "" if value is None else value


def write_grid(w, ws, top: int, first_col: int, variants: list[Variant], model: Model,
               on_row: Callable[[int, str], None] | None = None) -> dict[str, int]:
    """Write the grid with its first data row at `top`; returns name -> row.

    `w` is the workbook writer (its `formula`, `input_value` and `live` helpers record the
    Python value of every formula cell for the recalculation tests).
    """
    from .writer import BOLD_FONT, Resolved, number_format

    stages = stage_count(variants)
    rows = grid_rows(model, stages)
    row_of = {name: top + n for n, name in enumerate(rows)}
    parts = {name: name.partition("#") for name in rows}     # name -> (base, "#", stage k)
    links: dict[str, Expr] = {}     # input -> its link, one expression for every column
    bases = [(name, parts[name][0]) for name in rows]
    for j, variant in enumerate(variants):
        col = first_col + j
        letter = get_column_letter(col)
        only = variant.only
        shown = rows if only is None else [name for name, base in bases if base in only]
        local = {name: f"{letter}{row_of[name]}" for name in shown}
        local.update(variant.ranges)
        resolve = Resolved(_stage_resolver(w, local, row_of, letter, stages, None)).__getitem__
        stage_resolvers: dict[int, Callable[[str], str]] = {}    # stage k -> its rows' resolver

        for name in shown:
            r = row_of[name]
            value = variant.values.get(name)
            base, _, k = parts[name]
            if k:                              # stage k's row of a row item
                item = model.items[base]
                stage = stage_resolvers.get(int(k))
                if stage is None:
                    stage = stage_resolvers[int(k)] = \
                        Resolved(_stage_resolver(w, local, row_of, letter, stages, int(k))).__getitem__
                cell = w.formula(ws, r, col, item.expr, variant.values[base][int(k)],
                                 number_format(item.unit), stage)
                continue
            if name in model.inputs:
                d = model.inputs[name]
                fmt = number_format(d.unit, d.kind)
                if name in variant.formulas:
                    # over the workbook's names (the Inputs sheet), not the column's own cells
                    cell = w.formula(ws, r, col, variant.formulas[name], value, fmt)
                    cell.font = BOLD_FONT
                elif name in variant.own:
                    w.input_value(ws.cell(r, col), value, d.unit, d.kind)
                else:
                    # A link a reviewer may type over; a blank optional input stays blank ("").
                    link = links.get(name)
                    if link is None:
                        link = links[name] = _link(d)
                    cell = w.formula(ws, r, col, link, _linked_value(d, value), fmt)
                    w.named(cell, "Input")
                    if fmt:
                        cell.number_format = fmt
            else:
                item = model.items[name]
                cell = w.formula(ws, r, col, item.expr, value, number_format(item.unit), resolve)
                if item.is_flag or name == "master_check":
                    w.flag_format(ws, cell.coordinate, item.kind == "warning")
    if on_row:
        for name, r in row_of.items():
            on_row(r, name)
    return row_of
