"""One expression, two renderings: Excel text and Python with spreadsheet semantics."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from budget.formula import (IF, MAX, MOD, ROUNDUP, SUMPRODUCT, Lookup, Num, Ref, compile_items)


def _eval(expr, **values):
    return compile_items([("out", expr)])(dict(values), {"t": {"x": {"a": 7.0}}})["out"]


def test_renders_readable_formulas_with_names():
    expr = Ref("gpu_hours") * Ref("price_per_gpu_hour")
    assert expr.excel() == "gpu_hours*price_per_gpu_hour"
    assert (Ref("a") / (Ref("b") * Ref("c"))).excel() == "a/(b*c)"
    assert (Ref("a") - (Ref("b") - Ref("c"))).excel() == "a-(b-c)"
    assert ((Ref("a") + Ref("b")) * Ref("c")).excel() == "(a+b)*c"
    assert Lookup("t", "x", Ref("k")).excel() == "INDEX(t_x,MATCH(k,t_id,0))"
    assert IF(Ref("z") > 2, Ref("d"), 1).excel() == "IF(z>2,d,1)"
    assert Ref("a").concat(" × ").excel() == 'a&" × "'


def test_constants_must_be_named_inputs():
    with pytest.raises(ValueError, match="make it a named input"):
        (Ref("a") * 6).excel()
    assert (Ref("h") / 3600).excel() == "h/3600"


def test_only_supported_functions():
    from budget.formula import Call
    with pytest.raises(ValueError):
        Call("XLOOKUP", (Ref("a"),))


@pytest.mark.parametrize("expr, want", [
    (ROUNDUP(Num(0.1) * 3 * 10, 0), 3.0),      # Excel and LibreOffice give 3, plain ceil 4
    (ROUNDUP(Ref("x"), 0), 159.0),
    (MOD(Ref("n"), Ref("d")), 0.0),
    (IF((Num(0.1) + Num(0.2)) <= Num(0.3), 1, 0), 1),   # LibreOffice compares approximately
    (MAX(Ref("x"), 1000), 1000),
])
def test_python_follows_spreadsheet_semantics(expr, want):
    assert _eval(expr, x=158.2, n=512.0, d=32.0) == want


def test_if_is_lazy_like_a_spreadsheet():
    assert _eval(IF(Ref("d") > 0, Ref("n") / Ref("d"), 0), n=1.0, d=0.0) == 0


def test_lookup_and_sumproduct():
    assert _eval(Lookup("t", "x", Ref("k")), k="A") == 7.0
    assert _eval(SUMPRODUCT(Ref("a"), Ref("b")), a=(1.0, 2.0), b=(3.0, 4.0)) == 11.0


@given(st.floats(0.001, 1e6), st.floats(0.001, 1e6), st.floats(0.001, 1e6))
def test_arithmetic_matches_python(a, b, c):
    expr = (Ref("a") + Ref("b")) * Ref("c") / Ref("b") - Ref("a") / (Ref("b") * Ref("c"))
    assert _eval(expr, a=a, b=b, c=c) == pytest.approx((a + b) * c / b - a / (b * c))
