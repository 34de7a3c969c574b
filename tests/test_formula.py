"""One expression, two renderings: Excel text and Python with spreadsheet semantics."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from budget.formula.expr import (IF, MAX, MOD, ROUNDUP, SUMPRODUCT, Lookup, Num, Ref, compile_items)


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
    from budget.formula.expr import Call
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


# --- the runtime's fast paths give what the general rules give -------------------------------

def _reference_approx_equal(a, b):
    """The comparison as first written (before the float and text fast paths)."""
    if a is None or b is None:
        a = ("" if isinstance(b, str) else 0.0) if a is None else a
        b = ("" if isinstance(a, str) else 0.0) if b is None else b
    if a == b:
        return True
    if isinstance(a, str) or isinstance(b, str):
        return str(a).lower() == str(b).lower()
    return abs(a - b) < max(abs(a), abs(b)) * 2.0 ** -48


_REFERENCE = {
    "_eq": _reference_approx_equal,
    "_ne": lambda a, b: not _reference_approx_equal(a, b),
    "_lt": lambda a, b: not _reference_approx_equal(a, b) and a < b,
    "_le": lambda a, b: _reference_approx_equal(a, b) or a < b,
    "_gt": lambda a, b: not _reference_approx_equal(a, b) and a > b,
    "_ge": lambda a, b: _reference_approx_equal(a, b) or a > b,
}

_SPECIAL = [0.0, -0.0, 1.0, -1.0, 1.0 + 2 ** -50, 1.0 + 2 ** -40, 3.0, 1e308, -1e308, 5e-324,
            float("inf"), float("-inf"), float("nan"), None, "", "a", "A", "yes", "YES", "1", "1.0",
            "true", "inf", True, False, 0, 1, 3]
_values = st.one_of(st.sampled_from(_SPECIAL), st.floats(allow_nan=True, allow_infinity=True),
                    st.integers(-5, 5), st.text(max_size=3))


def _outcome(f, *args):
    try:
        return ("value", type(r := f(*args)), r)
    except Exception as err:        # the same exception type, or none at all
        return ("raises", type(err))


def _same(x, y):
    # values by type and repr, so that nan, -0.0 and True/1 count as what they are
    return x[:2] == y[:2] and (len(x) == 2 or repr(x[2]) == repr(y[2]))


@pytest.mark.parametrize("name", sorted(_REFERENCE))
@given(a=_values, b=_values)
def test_comparisons_fast_paths_match_the_general_rule(name, a, b):
    import budget.formula.runtime as f
    assert _same(_outcome(getattr(f, name), a, b), _outcome(_REFERENCE[name], a, b))


@given(a=_values, b=_values)
def test_near_equal_floats_compare_equal_both_ways(a, b):
    from budget.formula.runtime import _approx_equal
    assert _approx_equal(a, b) == _reference_approx_equal(a, b)


@pytest.mark.parametrize("a, b, equal", [
    (1.0, 1.0 + 2 ** -50, True), (1.0, 1.0 + 2 ** -40, False), (0.0, -0.0, True),
    (float("nan"), float("nan"), False), (float("inf"), float("inf"), True), (None, 0.0, True),
    (None, "", True), ("Full", "full", True), (True, "TRUE", True), (1.0, "1.0", True), (None, None, True)])
def test_tricky_equalities(a, b, equal):
    from budget.formula.runtime import _approx_equal, _eq
    assert _approx_equal(a, b) is equal and _eq(a, b) is equal


@given(xs=st.lists(st.one_of(st.floats(allow_nan=True), st.integers(-3, 3), st.none(), st.just("")),
                   min_size=0, max_size=3).map(tuple))
def test_max_min_isnumber_and_cat_match_the_general_rule(xs):
    import budget.formula.runtime as f
    for fn, builtin in ((f._max, max), (f._min, min)):
        def reference(*ys, builtin=builtin):
            return builtin(f._flat(ys), default=0.0)
        assert _same(_outcome(fn, *xs), _outcome(reference, *xs))
        assert _same(_outcome(fn, xs, *xs), _outcome(reference, xs, *xs))
    for x in (*xs, True, "1", 2):
        assert f._isnumber(x) is (isinstance(x, (int, float)) and not isinstance(x, bool))
    for a in (*xs, "x", True):
        for b in ("y", 2.0, a):
            assert f._cat(a, b) == f"{f._text(a)}{f._text(b)}"


# --- Specializer: the same numbers as the plain compiled function ----------------------------

def _plain(items, values, tables, outputs):
    env = compile_items(items)(dict(values), tables)
    return tuple(env[o] for o in outputs)


def _specialised(items, args, outputs, values, tables, calls, steady=()):
    """Each call's outputs, from the specialised function (or the plain one where bind says
    it cannot), beside the plain function's; the plain one's exceptions as (type,)."""
    from budget.formula.expr import Specializer
    spec = Specializer(items, args, outputs, steady)
    run = spec.bind(values, tables)
    got, want = [], []
    for call in calls:
        env = {**values, **dict(zip(args, call))}
        want.append(_outcome(_plain, items, env, tables, outputs))
        got.append(_outcome(run, *call) if run else want[-1])
    return run, got, want


def test_specialised_keeps_pythons_grouping_of_unparenthesised_sums():
    # x + (b - c) is written "x + b - c", which Python reads as (x + b) - c; b - c is fixed, but
    # computing it apart would change the last bits
    a, b, c, x = Ref("a"), Ref("b"), Ref("c"), Ref("x")
    items = [("out", x + (b - c)), ("prod", x * (b * c)), ("mixed", (b * c) * x + (b / c - a)),
             ("nested", x + ((b + c) - a))]     # "x + b + c - a": no node b + c either
    values = {"a": 0.1, "b": 0.2, "c": 0.3, "x": 3.0}
    calls = [(0.1,), (3.0,), (1e-17,), (7.3,)]
    assert (0.1 + 0.2) - 0.3 != 0.1 + (0.2 - 0.3) and (0.1 * 0.2) * 0.3 != 0.1 * (0.2 * 0.3)
    run, got, want = _specialised(items, ["x"], ["out", "prod", "mixed", "nested"], values, {}, calls)
    assert run is not None and all(w[0] == "value" for w in want)
    assert all(_same(g, w) for g, w in zip(got, want)), (got, want)


def test_specialised_folds_fixed_conditions_and_keeps_what_raises():
    from budget.formula.expr import AND, OR
    n, d, k, x = Ref("n"), Ref("d"), Ref("k"), Ref("x")
    items = [
        ("lazy", IF(d > 0, n / d, x)),                          # the branch not taken divides by 0
        ("text", IF(k.eq("FULL"), x * 2, x / d)),                # texts compare without case
        ("both", IF(AND(x > 1, d.eq(0), k.eq("full")), 1, 0)),   # fixed operands after a changing one
        ("either", IF(OR(d > 0, x > 2), n, x)),
        ("blank", IF(Ref("none").eq(0), x, n / d)),              # a blank cell equals 0
        ("changing", IF(x > 1, n / d, x)),                       # raises at some calls only
        ("always", n / d * x),                                   # raises at every call
        ("constant", IF(d.eq(0), n / d, x)),                     # raises whatever x: bind says no
    ]
    values = {"n": 1.0, "d": 0.0, "k": "full", "x": 1.0, "none": None}
    calls = [(0.5,), (1.5,), (3.0,)]
    outputs = ["lazy", "text", "both", "either", "blank"]
    run, got, want = _specialised(items[:-3], ["x"], outputs, values, {}, calls)
    assert run is not None and all(w[0] == "value" for w in want) and got == want
    run, got, want = _specialised(items[:-2], ["x"], outputs + ["changing"], values, {}, calls)
    assert run is not None and [w[0] for w in want] == ["value", "raises", "raises"] and got == want
    run, got, want = _specialised(items[:-1], ["x"], outputs + ["always"], values, {}, calls)
    assert run is not None and all(w[0] == "raises" for w in want) and got == want
    run, got, want = _specialised(items, ["x"], outputs, values, {}, calls)
    assert run is None and all(w[0] == "raises" for w in want)


def test_specialised_needs_every_name_it_reads():
    items = [("out", IF(Ref("x") > 0, Ref("x"), Ref("missing")))]
    from budget.formula.expr import Specializer
    spec = Specializer(items, ["x"], ["out"])
    assert spec.bind({"x": 1.0}, {}) is None             # the plain function raises KeyError
    run = spec.bind({"x": 1.0, "missing": 2.0}, {})
    assert run(1.0) == (1.0,) and run(-1.0) == (2.0,)


def test_specialised_remembers_items_by_the_args_they_read():
    x, y, f = Ref("x"), Ref("y"), Ref("f")
    items = [("xf", x * f), ("xy", Ref("xf") + y), ("fixed", f * 2)]
    calls = [(x_, y_) for x_ in (1.0, 2.0) for y_ in (3.0, 4.0, 5.0)] * 2
    run, got, want = _specialised(items, ["x", "y"], ["xy", "xf", "fixed", "f"], {"f": 3.0}, {}, calls, ("y",))
    assert run is not None and got == want


def test_specialised_remembers_through_the_items_an_arg_reaches_them_by():
    # "long" reads z only through "step" (z above 2?): z = 0, 1, 2 share its remembered value
    x, z = Ref("x"), Ref("z")
    step = ("step", IF(z > 2, x * Ref("f"), x / Ref("f")))
    long = ("long", (Ref("step") + x) * (Ref("step") - Ref("f")) / (x + Ref("f") * Ref("step"))
            + Ref("step") * Ref("step") * x - Ref("f") / (Ref("step") + 1) + x * x * Ref("f") - Ref("step") / x)
    items = [step, long, ("out", Ref("long") + z)]
    from budget.formula.expr import Specializer
    spec = Specializer(items, ["x", "z"], ["out"])
    assert spec._key(frozenset({"x", "z"}), ["long"], {"step": frozenset({"x", "z"}), "long": frozenset({"x", "z"})},
                     {"long": {"step", "x", "f"}}) == ["x", "step"]
    calls = [(x_, z_) for x_ in (1.0, 2.0, 3.5) for z_ in (0.0, 1.0, 2.0, 3.0)] * 2
    run, got, want = _specialised(items, ["x", "z"], ["out", "long", "step"], {"f": 3.0}, {}, calls)
    assert run is not None and got == want


def test_specialised_comparisons_decided_by_python_are_the_spreadsheets():
    x, y = Ref("x"), Ref("y")
    items = [("gt", IF(x > y, 1, 0)), ("lt", IF(x < y, 1, 0)), ("le", IF(x <= y, 1, 0)), ("ge", IF(x >= y, 1, 0)),
             ("raw", (x <= y) + 0), ("two", IF(x > 2.0, 1, 0))]
    near = 1.0 + 2.0 ** -50
    pairs = [(a, b) for a in (1.0, near, 2.0, -0.0, 0.0, math.nan) for b in (1.0, near, 2.0, 0.0, math.nan)]
    pairs += [("full", "FULL"), ("Full", "full"), ("a", "b"), (None, 0.0), (0.0, None), ("a", 1.0), (True, 1.0)]
    outputs = ["gt", "lt", "le", "ge", "raw", "two"]
    for a, b in pairs:
        run, got, want = _specialised(items, ["x", "y"], outputs, {"x": 0.0, "y": 0.0}, {}, [(a, b)])
        if got[0][0] == "raises":     # Python's comparison raises: the caller runs the plain function
            continue
        assert got == want, (a, b, got, want)


def test_specialised_rows_lookups_and_texts():
    from budget.formula.expr import At, Blanks, PerRow
    x = Ref("x")
    items = [("per_row", PerRow(At("rows") * x + Ref("f"), "rows")),
             ("empty", PerRow(At("nothing") / Ref("zero"), "nothing")),
             ("looked", Lookup("t", "x", Ref("key")) * x),
             ("label", x.concat(" GPUs")),
             ("total", SUMPRODUCT(Ref("rows"), Ref("per_row"), Blanks(Ref("gaps"))))]
    values = {"rows": (1.0, 2.0, 4.0), "gaps": (None, 1.0, None), "nothing": (), "zero": 0.0, "f": 0.5,
              "key": "A"}
    run, got, want = _specialised(items, ["x"], [n for n, _ in items], values, {"t": {"x": {"a": 7.0}}},
                                  [(1.0,), (2.5,)])
    assert run is not None and all(w[0] == "value" for w in want) and got == want


def test_chains_and_arrays_over_a_tables_rows():
    """A Chain's rows follow one another (its first row, then a step over the row before's value,
    each row its own formula); Each is an array over another table's rows inside SUMPRODUCT, a
    blank cell 0 in arithmetic and 1 under BlankOf, as the spreadsheet reads them."""
    from budget.formula.expr import At, BlankOf, Chain, Each, Of, PerRow, Prev, row_expr
    running = Chain(At("t"), Prev("running") + At("t"), "rows")
    per_role = PerRow(SUMPRODUCT(Ref("h"), Each(Of("m") + BlankOf("m") * Ref("p") + At("t"), "h")), "rows")
    run = compile_items([("running", running), ("per_role", per_role)])
    v = run({"t": (1.0, 2.0, 4.0), "rows": (0, 1, 2), "h": (2.0, None, 3.0), "m": (None, 5.0, 7.0), "p": 10.0}, {})
    assert v["running"] == (1.0, 3.0, 7.0)
    assert v["per_role"] == tuple(2.0 * (10.0 + t) + 3.0 * (7.0 + t) for t in (1.0, 2.0, 4.0))
    assert compile_items([("running", running)])({"t": (), "rows": ()}, {})["running"] == ()
    cells = {"t@row": "E9", "running@prev": "D10", "h": "h", "m": "m", "p": "p"}
    assert [row_expr(running, k).excel(cells.get) for k in (0, 1)] == ["E9", "D10+E9"]
    assert row_expr(per_role, 1).excel(cells.get) == 'SUMPRODUCT(h,m+(m="")*p+E9)'
    with pytest.raises(TypeError):
        running.excel()
