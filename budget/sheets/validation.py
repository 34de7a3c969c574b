"""An input cell's data validation, as strict as the scenario schema (divisors above 0), with
the unit and a line of help shown when the reviewer selects the cell."""

from __future__ import annotations

from openpyxl.worksheet.cell_range import MultiCellRange
from openpyxl.worksheet.datavalidation import DataValidation

from ..formula.expr import TRUE, Num, Ref, Text
from ..model.lineitems import InputDef
from ..xlsx.cells import data_validation

# (language, input, cells) -> (the input, its validation): a validation is a function of the
# input, the cells and the language alone, and nothing changes it once made, so one object
# serves every book of a process (the fast writer writes each one's XML once)
_VALIDATIONS: dict[tuple[str, str, str], tuple[InputDef, DataValidation]] = {}


def validation_for(w, coord: str, d: InputDef) -> DataValidation:
    """The validation of input `d` on the cells `coord` of a book written by `w` (its words and units)."""
    key = (w.plan.lang, d.name, coord)
    known = _VALIDATIONS.get(key)
    if known is None or known[0] is not d:
        if len(_VALIDATIONS) >= 16384:
            _VALIDATIONS.clear()
        known = _VALIDATIONS[key] = (d, _new_validation(w, coord, d))
    return known[1]


def _new_validation(w, coord: str, d: InputDef) -> DataValidation:
    dv = _rule(w.m, d)
    if dv is None:
        dv = data_validation(type="custom", formula1=TRUE.excel())   # a carrier for the input message
        dv.showErrorMessage = False
    else:
        dv.errorTitle = w.m("workbook.validation.error_title")
        dv.showErrorMessage = True
    unit = w.unit_text(d.unit)
    dv.promptTitle = d.label[:32]
    if unit and d.help:
        prompt = w.m("workbook.validation.prompt_unit_help", unit=unit, help=d.help)
    elif unit:
        prompt = w.m("workbook.validation.prompt_unit", unit=unit)
    else:
        prompt = d.help
    dv.prompt = prompt[:255]
    dv.showInputMessage = bool(dv.prompt)
    dv.sqref = MultiCellRange(coord)      # dv.add(coord), the first range
    return dv


def _rule(m, d: InputDef) -> DataValidation | None:
    if d.kind == "choice":
        source = (Ref(d.choices_from) if d.choices_from else Text(",".join(d.choices or ()))).excel()
        dv = data_validation(type="list", formula1=source, allow_blank=False)
        dv.error = m("workbook.validation.choice", label=d.label)
        return dv
    if d.kind == "date":
        dv = data_validation(type="date", operator="greaterThan", formula1=Num(1).excel())
        dv.error = m("workbook.validation.date", label=d.label)
        return dv
    if d.kind not in {"integer", "number", "fraction", "range"} or d.minimum is None:
        return None
    kind = "whole" if d.kind == "integer" else "decimal"
    low = _num(d.minimum)
    if d.maximum is not None and not d.positive:
        dv = data_validation(type=kind, operator="between", formula1=low, formula2=_num(d.maximum))
        dv.error = m("workbook.validation.between", label=d.label, low=low, high=_num(d.maximum))
    elif d.positive:
        dv = data_validation(type=kind, operator="greaterThan", formula1=low)
        dv.error = (m("workbook.validation.above_at_most", label=d.label, low=low, high=_num(d.maximum))
                    if d.maximum is not None else m("workbook.validation.above", label=d.label, low=low))
    else:
        dv = data_validation(type=kind, operator="greaterThanOrEqual", formula1=low)
        dv.error = m("workbook.validation.at_least", label=d.label, low=low)
    dv.allow_blank = d.optional
    return dv


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))
