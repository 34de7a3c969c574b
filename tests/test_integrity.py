"""Input integrity (issue 29): the book's check and the importer's rule come from one
description of each input, and no bundled plan fails them.

The checks themselves, recalculated in LibreOffice and Gnumeric on edited books, are in
tests/test_reviewer_edits.py (a blank GPU price, text in a headcount, 20 typed for 20%, a pasted
out-of-bounds value, a row inserted in the Cost sheet, a pasted Compare column)."""

from __future__ import annotations

import pytest


from budget.formula.expr import compile_items
from budget.inputs.importer import WorkbookError, _cell_value
from budget.model.integrity import checked, input_ok
from budget.model.model import build_model
from support import SCENARIOS, plan_of, raw

MODEL = build_model()
CHECKED = [d for d in MODEL.inputs.values() if checked(d) and not d.is_range and d.section]
BUNDLED = sorted(SCENARIOS.glob("*.yaml"))
RECONCILIATION = ("check_cost_sheet_closed", "check_cost_lines_live")


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.stem)
def test_no_bundled_plan_fails_an_input_or_cost_check(path, catalog):
    """Given a bundled scenario, the planner's own evaluation of every input-integrity check and
    of the Cost sheet's reconciliation is 0 (passes): they fail on a reviewer's edit only."""
    plan = plan_of(raw(path), catalog, path.stem)
    names = [c.name for c in plan.model.checks() if c.name.startswith("check_inputs_")]
    assert len(names) >= 25
    assert {n: plan.values[n] for n in (*names, *RECONCILIATION) if plan.values[n] != 0} == {}


class _Book:
    path, lang = "edited.xlsx", "en"


def _importer_accepts(d, value) -> bool:
    try:
        _cell_value(_Book(), d, "Inputs!B1", value)
    except WorkbookError:
        return False
    return True


def _check_accepts(d, value) -> bool:
    return bool(compile_items([("ok", input_ok(d))])({d.name: value}, {})["ok"])


def _probes(d):
    """Values a reviewer might type or paste: blank, text, the bounds and either side of them,
    a percentage as a whole number."""
    yield None
    yield "twenty"
    if d.kind == "choice" and d.choices:
        yield from d.choices
        return
    for bound in (d.minimum, d.maximum):
        if bound is not None:
            yield from (float(bound), bound - 0.5, bound + 0.5, bound - 1e-9, bound + 1e-9)
    yield from (20.0, 0.2, 1.0, 3.5)


@pytest.mark.parametrize("d", [d for d in CHECKED if d.kind != "date" and not d.choices_from],
                         ids=lambda d: d.name)
def test_the_check_accepts_what_the_importer_accepts(d):
    """Given an input's declaration, the book's check and the importer's rule agree on every
    probe: blank (allowed only where optional), text, each bound and just past it, 20 where a
    fraction belongs. Both read the one declaration (budget/model/integrity.py)."""
    for value in _probes(d):
        if d.kind == "text" and value is not None:
            continue        # a currency code: any text; the FX check judges it
        assert _check_accepts(d, value) == _importer_accepts(d, value), (d.name, value)


def test_a_percentage_typed_as_a_whole_number_says_how_to_type_it():
    """The buffer typed as 20 for 20%: the check fails, and its words say to type 0.20."""
    d = MODEL.inputs["buffer_rate"]
    assert not _check_accepts(d, 20.0) and _check_accepts(d, 0.2)
    detail = MODEL.items["check_inputs_contingency"]
    values = {n: 0.1 for n in detail.expr.refs() | detail.detail.refs()}
    values.update(buffer_rate=20.0)
    sentence = detail.sentence({**values, **{n: MODEL.inputs[n].minimum or 0.0 for n in values
                                             if n != "buffer_rate" and MODEL.inputs[n].minimum}})
    assert "is 20" in sentence and "type 0.20 for 20%" in sentence, sentence


def test_the_importer_says_the_same_of_a_percentage():
    """… and the importer, refusing the same 20, gives the same advice (its rule reads the same
    declaration: a fraction)."""
    with pytest.raises(WorkbookError) as refused:
        _cell_value(_Book(), MODEL.inputs["buffer_rate"], "Inputs!B1", 20)
    assert "0.20 for 20%" in str(refused.value)
