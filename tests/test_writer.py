"""The writer's fast rendering of formulas (remembered texts and format-string templates) gives
exactly what the expression renders itself: every item of the model, with the defined names and
with a resolver, first met either way and met again."""

from __future__ import annotations

import pytest

from budget.formula.expr import IF, Ref
from budget.model.model import build_model
from budget.sheets.writer import Resolved, excel


def _column(name: str) -> str:
    return f"Z{len(name)}" if name.startswith("c") else name


@pytest.mark.parametrize("first", ["names", "resolver"])
def test_excel_renders_every_model_item_as_the_tree_does(first):
    model = build_model()
    for item in model.items.values():
        expr = item.expr
        try:
            expr.excel()
        except TypeError:       # a chain of rows renders row by row (row_expr), never whole
            continue
        resolve = Resolved(_column).__getitem__
        calls = [(str, expr.excel()), (resolve, expr.excel(resolve))]
        if first == "resolver":
            calls.reverse()
        for how, want in calls + calls:          # first met, then remembered
            assert excel(expr, how) == want, item.name


def test_a_fresh_expression_renders_as_the_tree_does():
    expr = IF(Ref("total_cost") > 0, Ref("total_cost") * 2, "none")
    assert excel(expr) == expr.excel() == 'IF(total_cost>0,total_cost*2,"none")'
    assert excel(expr, lambda name: "B7") == expr.excel(lambda name: "B7") == 'IF(B7>0,B7*2,"none")'
