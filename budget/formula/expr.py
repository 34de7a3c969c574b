"""Expressions that are evaluated in Python and rendered as spreadsheet formulas.

Every derived quantity in trainbudget is written once, as an expression tree built from
`Ref`s to named inputs or line items, a few spreadsheet functions and the arithmetic
operators. The same tree is

* compiled to a Python function, which is what the planner runs, and
* rendered as an Excel formula, which is what the workbook holds,

so the plan and the workbook cannot drift apart. The Python semantics follow LibreOffice and
Excel where they differ from Python's own: comparisons treat numbers equal to about 15
significant digits as equal, and ROUNDUP ignores float noise in the 16th digit
(`ROUNDUP(0.1*3*10,0)` is 3, not 4).
"""

from __future__ import annotations

import math
import re
import types
from dataclasses import dataclass
from statistics import NormalDist
from typing import Callable, Iterable, Mapping

# Numbers a reviewer reads as conventions rather than assumptions (hours in a day, and so
# on). Any other number must be a named input, so that it carries a label and a source.
BENIGN_CONSTANTS = frozenset({0, 1, 2, 7, 12, 24, 30, 52, 60, 100, 365, 1000, 1024, 3600, 86400})

# Functions LibreOffice 7.4 and Excel 2016 both have, without an _xlfn. prefix.
SUPPORTED_FUNCTIONS = frozenset({
    "IF", "AND", "OR", "NOT", "MAX", "MIN", "SUM", "ROUNDUP", "MOD",
    "ISNUMBER", "SQRT", "EXP", "INDEX", "MATCH", "ABS", "SUMPRODUCT", "ISERROR", "COUNTA",
    "ROUND", "YEAR", "COLUMNS", "COUNT", "LN", "NORMSINV", "NORMSDIST", "LARGE", "ROW",
    "DATE", "MONTH",   # dates: the Cashflow sheet's months (no EOMONTH: an add-in in old Excel)
})

# Excel operator precedence, low to high.
_PRECEDENCE = {"=": 1, "<>": 1, "<": 1, "<=": 1, ">": 1, ">=": 1, "&": 2,
               "+": 3, "-": 3, "*": 4, "/": 4, "^": 5}
_NON_ASSOCIATIVE = {"-", "/", "^", "=", "<>", "<", "<=", ">", ">=", "&"}
_COMPARE_FN = {"=": "_eq", "<>": "_ne", "<": "_lt", "<=": "_le", ">": "_gt", ">=": "_ge"}


class Expr:
    """Base of the expression tree. Operators build new nodes."""

    __slots__ = ()
    precedence = 9

    def __add__(self, other): return Bin("+", self, lift(other))
    def __radd__(self, other): return Bin("+", lift(other), self)
    def __sub__(self, other): return Bin("-", self, lift(other))
    def __rsub__(self, other): return Bin("-", lift(other), self)
    def __mul__(self, other): return Bin("*", self, lift(other))
    def __rmul__(self, other): return Bin("*", lift(other), self)
    def __truediv__(self, other): return Bin("/", self, lift(other))
    def __rtruediv__(self, other): return Bin("/", lift(other), self)
    def __pow__(self, other): return Bin("^", self, lift(other))
    def __lt__(self, other): return Bin("<", self, lift(other))
    def __le__(self, other): return Bin("<=", self, lift(other))
    def __gt__(self, other): return Bin(">", self, lift(other))
    def __ge__(self, other): return Bin(">=", self, lift(other))

    # == stays identity so nodes can live in sets; equality is spelt out.
    def eq(self, other) -> "Expr": return Bin("=", self, lift(other))
    def ne(self, other) -> "Expr": return Bin("<>", self, lift(other))
    def concat(self, other) -> "Expr": return Bin("&", self, lift(other))

    def refs(self) -> set[str]:
        out: set[str] = set()
        self._collect(out)
        return out

    def _collect(self, out: set[str]) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def excel(self, resolve: Callable[[str], str] = str) -> str:
        raise NotImplementedError

    def python(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True, eq=False)
class Num(Expr):
    value: float

    def _collect(self, out): pass

    def excel(self, resolve=str):
        if self.value not in BENIGN_CONSTANTS:
            raise ValueError(f"number {self.value!r} in a formula: make it a named input")  # i18n: not text
        return _num_text(self.value)

    def python(self):
        return repr(float(self.value))


@dataclass(frozen=True, eq=False)
class Text(Expr):
    value: str

    def _collect(self, out): pass

    def excel(self, resolve=str):
        return '"' + self.value.replace('"', '""') + '"'

    def python(self):
        return repr(self.value)


@dataclass(frozen=True, eq=False)
class Ref(Expr):
    """A named input or line item; rendered through `resolve` (a defined name by default)."""
    name: str

    def _collect(self, out): out.add(self.name)

    def excel(self, resolve=str):
        return resolve(self.name)

    def python(self):
        return f"v[{self.name!r}]"


@dataclass(frozen=True, eq=False)
class Bin(Expr):
    op: str
    left: Expr
    right: Expr

    @property
    def precedence(self):  # type: ignore[override]
        return _PRECEDENCE[self.op]

    def _collect(self, out):
        self.left._collect(out)
        self.right._collect(out)

    def _wrap(self, child: Expr, text: str, right: bool) -> str:
        return f"({text})" if self._parenthesised(child, right) else text

    def _parenthesised(self, child: Expr, right: bool) -> bool:
        p = self.precedence
        if child.precedence < p or (right and child.precedence == p and self.op in _NON_ASSOCIATIVE):
            return True
        # Excel's ^ is left-associative, Python's right: never rely on it
        return self.op == "^" and isinstance(child, Bin)

    def excel(self, resolve=str):
        left = self._wrap(self.left, self.left.excel(resolve), False)
        right = self._wrap(self.right, self.right.excel(resolve), True)
        return f"{left}{self.op}{right}"

    def python(self):
        if self.op in _COMPARE_FN:
            return f"{_COMPARE_FN[self.op]}({self.left.python()}, {self.right.python()})"
        if self.op == "&":
            return f"_cat({self.left.python()}, {self.right.python()})"
        op = "**" if self.op == "^" else self.op
        left = self._wrap(self.left, self.left.python(), False)
        right = self._wrap(self.right, self.right.python(), True)
        return f"{left} {op} {right}"


@dataclass(frozen=True, eq=False)
class Call(Expr):
    fn: str
    args: tuple[Expr, ...]

    def __post_init__(self):
        if self.fn not in SUPPORTED_FUNCTIONS:
            raise ValueError(f"{self.fn} is not in the supported function set")  # i18n: not text

    def _collect(self, out):
        for a in self.args:
            a._collect(out)

    def excel(self, resolve=str):
        return f"{self.fn}(" + ",".join(a.excel(resolve) for a in self.args) + ")"

    def python(self):
        args = [a.python() for a in self.args]
        if self.fn == "IF":
            return f"({args[1]} if {args[0]} else {args[2]})"  # i18n: not text
        if self.fn == "AND":
            return "(" + " and ".join(f"bool({a})" for a in args) + ")"  # i18n: not text
        if self.fn == "OR":
            return "(" + " or ".join(f"bool({a})" for a in args) + ")"  # i18n: not text
        return f"_{self.fn.lower()}(" + ", ".join(args) + ")"


@dataclass(frozen=True, eq=False)
class Lookup(Expr):
    """INDEX(table column, MATCH(key, table keys, 0)): a row of a catalog table."""
    table: str
    column: str
    key: Expr

    def _collect(self, out):
        self.key._collect(out)

    def excel(self, resolve=str):
        col = resolve(table_column_name(self.table, self.column))
        keys = resolve(table_column_name(self.table, "id"))
        return f"INDEX({col},MATCH({self.key.excel(resolve)},{keys},0))"

    def python(self):
        return f"_lookup(T, {self.table!r}, {self.column!r}, {self.key.python()})"  # i18n: not text


def table_column_name(table: str, column: str) -> str:
    """The defined name of a catalog table's column, e.g. acc_peak_bf16_tflops."""
    return f"{table}_{column}"


def lift(x) -> Expr:
    if isinstance(x, Expr):
        return x
    if isinstance(x, bool):
        return Num(int(x))
    if isinstance(x, (int, float)):
        return Num(x)
    if isinstance(x, str):
        return Text(x)
    raise TypeError(f"cannot use {type(x).__name__} in a formula")  # i18n: not text


def _num_text(x: float) -> str:
    if float(x).is_integer():
        return str(int(x))
    return repr(float(x)).upper()


# --- the spreadsheet functions, built as calls ------------------------------------------

def IF(cond, a, b) -> Expr: return Call("IF", (lift(cond), lift(a), lift(b)))
def AND(*xs) -> Expr: return Call("AND", tuple(lift(x) for x in xs))
def OR(*xs) -> Expr: return Call("OR", tuple(lift(x) for x in xs))
def NOT(x) -> Expr: return Call("NOT", (lift(x),))
def MAX(*xs) -> Expr: return Call("MAX", tuple(lift(x) for x in xs))
def MIN(*xs) -> Expr: return Call("MIN", tuple(lift(x) for x in xs))
def SUM(*xs) -> Expr: return Call("SUM", tuple(lift(x) for x in xs))
def ROUNDUP(x, digits=0) -> Expr: return Call("ROUNDUP", (lift(x), lift(digits)))
def MOD(a, b) -> Expr: return Call("MOD", (lift(a), lift(b)))
def ISNUMBER(x) -> Expr: return Call("ISNUMBER", (lift(x),))
def SQRT(x) -> Expr: return Call("SQRT", (lift(x),))
def EXP(x) -> Expr: return Call("EXP", (lift(x),))
def LN(x) -> Expr: return Call("LN", (lift(x),))
def ABS(x) -> Expr: return Call("ABS", (lift(x),))
def SUMPRODUCT(*ranges: Expr) -> Expr: return Call("SUMPRODUCT", tuple(ranges))
def ISERROR(x) -> Expr: return Call("ISERROR", (lift(x),))
def COUNTA(*xs) -> Expr: return Call("COUNTA", tuple(lift(x) for x in xs))
def ROUND(x, digits=0) -> Expr: return Call("ROUND", (lift(x), lift(digits)))
def COLUMNS(x: Ref) -> Expr: return Call("COLUMNS", (x,))
def YEAR(x) -> Expr: return Call("YEAR", (lift(x),))
def MONTH(x) -> Expr: return Call("MONTH", (lift(x),))
def DATE(y, m, d) -> Expr: return Call("DATE", (lift(y), lift(m), lift(d)))
# Sheet-side functions: a sheet's own lookups and sorting (the Sensitivity tornado, a table's rows);
# the planner's model does not use them, so they have no Python twin.
def INDEX(area, k) -> Expr: return Call("INDEX", (lift(area), lift(k)))
def MATCH(x, area) -> Expr: return Call("MATCH", (lift(x), lift(area), Num(0)))    # exact match
def LARGE(area, k) -> Expr: return Call("LARGE", (lift(area), lift(k)))
def ROW() -> Expr: return Call("ROW", ())
def NORMSINV(p) -> Expr: return Call("NORMSINV", (lift(p),))
def NORMSDIST(z) -> Expr: return Call("NORMSDIST", (lift(z),))     # the standard normal's CDF
def COUNT(*xs) -> Expr: return Call("COUNT", tuple(lift(x) for x in xs))


def column_letter(col: int) -> str:
    """A column's letters: 1 -> A, 27 -> AA."""
    letters = ""
    while col > 0:
        col, rest = divmod(col - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


@dataclass(frozen=True, eq=False)
class Bool(Expr):
    """TRUE or FALSE."""
    value: bool

    def _collect(self, out): pass

    def excel(self, resolve=str):
        return "TRUE" if self.value else "FALSE"

    def python(self):
        return repr(bool(self.value))


TRUE, FALSE = Bool(True), Bool(False)


@dataclass(frozen=True, eq=False)
class Cell(Expr):
    """A cell by position ($ where fixed; on another sheet when `sheet` is given): a sheet's own
    arithmetic over its cells (a month's column, a table's row) that no line item names. Only
    rendered: the planner never reads a cell, so it has no Python form."""
    row: int
    col: int
    fixed_row: bool = False
    fixed_col: bool = False
    sheet: str | None = None

    def _collect(self, out): pass

    def excel(self, resolve=str):
        where = "" if self.sheet is None else "'" + self.sheet.replace("'", "''") + "'!"
        return (f"{where}{'$' if self.fixed_col else ''}{column_letter(self.col)}"
                f"{'$' if self.fixed_row else ''}{self.row}")

    def python(self):
        raise TypeError(f"cell {self.excel()} has no value in the planner's Python")  # i18n: not text

    def to(self, last: "Cell") -> "Area":
        return Area(self, last)

    def fixed(self) -> "Cell":
        return Cell(self.row, self.col, True, True, self.sheet)


@dataclass(frozen=True, eq=False)
class Area(Expr):
    """A block of the sheet's cells, first:last (a row of months, a table's column)."""
    first: Cell
    last: Cell

    def _collect(self, out): pass

    def excel(self, resolve=str):
        return f"{self.first.excel(resolve)}:{self.last.excel(resolve)}"

    def python(self):
        raise TypeError(f"area {self.excel()} has no value in the planner's Python")  # i18n: not text


@dataclass(frozen=True, eq=False)
class Group(Expr):
    """`expr` in parentheses where the operators alone would leave them out: a+(b-c) renders as
    a+b-c, which a spreadsheet and Python compute as (a+b)-c, in floating point not always the
    same number. A formula that adds differences (the Sensitivity sheet's day means) keeps its
    order, and so its values, with it."""
    expr: Expr

    def _collect(self, out):
        self.expr._collect(out)

    def excel(self, resolve=str):
        return f"({self.expr.excel(resolve)})"

    def python(self):
        return f"({self.expr.python()})"


@dataclass(frozen=True, eq=False)
class Blanks(Expr):
    """1 for each blank cell of a range, 0 otherwise: `(range="")*1`, an array inside
    SUMPRODUCT in Excel 2016 and LibreOffice alike (IF would need an array formula)."""
    range: Ref

    def _collect(self, out):
        self.range._collect(out)

    def excel(self, resolve=str):
        return f'({self.range.excel(resolve)}="")*1'

    def python(self):
        return f"_blanks({self.range.python()})"


@dataclass(frozen=True, eq=False)
class At(Expr):
    """Row k of a table column (a range input, or a row item) inside a row item's formula.
    The workbook writes one formula per row and resolves `name@k` to that row's cell; Python
    reads the k-th value (None for a blank cell, as ISNUMBER sees it)."""
    name: str

    def _collect(self, out): out.add(self.name)

    def excel(self, resolve=str):
        return resolve(f"{self.name}@row")

    def python(self):
        return f"_at(v[{self.name!r}], _k)"


@dataclass(frozen=True, eq=False)
class UpTo(Expr):
    """A row item's rows from the first to this one (a running total's range)."""
    name: str

    def _collect(self, out): out.add(self.name)

    def excel(self, resolve=str):
        return resolve(f"{self.name}@upto")

    def python(self):
        return f"v[{self.name!r}][:_k + 1]"


@dataclass(frozen=True, eq=False)
class PerRow(Expr):
    """A row item: `expr` evaluated once per row of the table whose column `rows` is, each
    row's formula its own cell (the workbook's Stages sheet); a tuple in Python."""
    expr: Expr
    rows: str

    def _collect(self, out):
        self.expr._collect(out)
        out.add(self.rows)

    def excel(self, resolve=str):
        return self.expr.excel(resolve)

    def python(self):
        return f"tuple(({self.expr.python()}) for _k in range(len(v[{self.rows!r}])))"  # i18n: not text


@dataclass(frozen=True, eq=False)
class Chain(Expr):
    """A row item whose rows follow one another, as a spreadsheet's chains do: `first` in the
    table's first row, `step` in every later one, where `Prev(name)` is the item's own value in
    the row before (a month starts a month after the one before; a running total adds its row to
    the one before's). A tuple in Python, built row by row. Its rows hold different formulas:
    render `row_expr(chain, k)` for row k."""
    first: Expr
    step: Expr
    rows: str

    def _collect(self, out):
        self.first._collect(out)
        self.step._collect(out)
        out.add(self.rows)

    def excel(self, resolve=str):
        raise TypeError("a chain's first row and the others have formulas of their own: render row_expr(chain, k)")  # i18n: not text

    def python(self):
        return (f"_chain(len(v[{self.rows!r}]), lambda _k: ({self.first.python()}), "  # i18n: not text
                f"lambda _k, _last: ({self.step.python()}))")


@dataclass(frozen=True, eq=False)
class Prev(Expr):
    """Inside a Chain's `step`: the chain's own value in the row before. The workbook resolves
    `name@prev` (name: the chain's item) to that row's cell."""
    name: str

    def _collect(self, out): pass     # the chain's own item: not a name to define before it

    def excel(self, resolve=str):
        return resolve(f"{self.name}@prev")

    def python(self):
        return "_last"


def row_expr(expr: Expr, k: int) -> Expr:
    """The formula row k of a row item holds: a Chain's first or step, a PerRow's expression."""
    if isinstance(expr, Chain):
        return expr.first if k == 0 else expr.step
    if isinstance(expr, PerRow):
        return expr.expr
    return expr


@dataclass(frozen=True, eq=False)
class Each(Expr):
    """An array over the rows of the table whose column `rows` is, as SUMPRODUCT reads one:
    `expr` with `Of(name)` for a column's value in the row (the Cashflow sheet's staffing by
    role, a year's months). The workbook writes `expr` over whole columns, which Excel 2016 and
    LibreOffice evaluate as an array inside SUMPRODUCT (as they do Blanks); Python gives a tuple."""
    expr: Expr
    rows: str

    def _collect(self, out):
        self.expr._collect(out)
        out.add(self.rows)

    def excel(self, resolve=str):
        return self.expr.excel(resolve)

    def python(self):
        return f"tuple(({self.expr.python()}) for _j in range(len(v[{self.rows!r}])))"  # i18n: not text


@dataclass(frozen=True, eq=False)
class Of(Expr):
    """Inside Each: the column `name`'s value in the row, a blank cell 0 as arithmetic reads it
    (rendered as the whole column)."""
    name: str

    def _collect(self, out): out.add(self.name)

    def excel(self, resolve=str):
        return resolve(self.name)

    def python(self):
        return f"_of(v[{self.name!r}], _j)"


@dataclass(frozen=True, eq=False)
class BlankOf(Expr):
    """Inside Each: 1 where the column `name`'s cell in the row is blank, else 0 (`(name="")`)."""
    name: str

    def _collect(self, out): out.add(self.name)

    def excel(self, resolve=str):
        return f'({resolve(self.name)}="")'

    def python(self):
        return f"_blank_of(v[{self.name!r}], _j)"


def substitute(expr: Expr, swap: Callable[[str], Expr | None]) -> Expr:
    """`expr` with every Ref for which `swap(name)` gives an expression replaced by it."""
    if isinstance(expr, Ref):
        return swap(expr.name) or expr
    if isinstance(expr, Bin):
        return Bin(expr.op, substitute(expr.left, swap), substitute(expr.right, swap))
    if isinstance(expr, Call):
        return Call(expr.fn, tuple(substitute(a, swap) for a in expr.args))
    if isinstance(expr, Lookup):
        return Lookup(expr.table, expr.column, substitute(expr.key, swap))
    if isinstance(expr, Blanks):
        return Blanks(substitute(expr.range, swap))
    if isinstance(expr, Group):
        return Group(substitute(expr.expr, swap))
    return expr


# --- Python runtime with spreadsheet semantics --------------------------------------------

_E48 = 2.0 ** -48  # rtl::math::approxEqual, which LibreOffice's comparisons use


def _approx_equal(a, b) -> bool:
    kind = type(a)
    if kind is type(b):     # the common cases first, exactly as the general rule below decides them
        if kind is float:
            if a == b:
                return True
            x, y = abs(a), abs(b)
            return abs(a - b) < (y if y > x else x) * _E48      # max(x, y), as max() picks it
        if kind is str:
            return a == b or a.lower() == b.lower()
    if a is None or b is None:   # a blank cell equals 0 or "", as in a spreadsheet
        a = ("" if isinstance(b, str) else 0.0) if a is None else a
        b = ("" if isinstance(a, str) else 0.0) if b is None else b
    if a == b:
        return True
    if isinstance(a, str) or isinstance(b, str):
        return str(a).lower() == str(b).lower()
    return abs(a - b) < max(abs(a), abs(b)) * _E48


# The comparisons: floats take a fast path that gives what the general form gives (a > b implies
# a != b; without it `not approx and a > b` is False whatever approx is).
_eq = _approx_equal


def _ne(a, b): return not _approx_equal(a, b)


def _lt(a, b):
    if type(a) is float and type(b) is float:
        if a < b:
            x, y = abs(a), abs(b)
            return not abs(a - b) < (y if y > x else x) * _E48
        return False
    return not _approx_equal(a, b) and a < b


def _le(a, b):
    if type(a) is float and type(b) is float:
        if a <= b:
            return True
        x, y = abs(a), abs(b)
        return abs(a - b) < (y if y > x else x) * _E48
    return _approx_equal(a, b) or a < b


def _gt(a, b):
    if type(a) is float and type(b) is float:
        if a > b:
            x, y = abs(a), abs(b)
            return not abs(a - b) < (y if y > x else x) * _E48
        return False
    return not _approx_equal(a, b) and a > b


def _ge(a, b):
    if type(a) is float and type(b) is float:
        if a >= b:
            return True
        x, y = abs(a), abs(b)
        return abs(a - b) < (y if y > x else x) * _E48
    return _approx_equal(a, b) or a > b


def _cat(a, b):
    if type(a) is str and type(b) is str:
        return a + b
    return f"{_text(a)}{_text(b)}"


def _text(x) -> str:
    if isinstance(x, bool):
        return "TRUE" if x else "FALSE"
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return str(x)


def _significant(x: float) -> float:
    """x to 15 significant digits: the precision spreadsheets round to before ROUNDUP."""
    return float(f"{x:.15g}")


def _roundup(x, digits):
    scale = 10.0 ** int(digits)
    y = _significant(abs(x) * scale)
    return math.copysign(math.ceil(y) / scale, x) if y else 0.0


def _mod(a, b):
    r = a - b * math.floor(_significant(a / b))
    return 0.0 if _approx_equal(r, 0.0) or _approx_equal(r, b) else r


def _flat(xs):
    """Arguments with ranges (tuples) spread out; blank cells skipped, as MIN/MAX/SUM do."""
    for x in xs:
        if isinstance(x, tuple):
            yield from (y for y in x if y is not None and y != "")
        else:
            yield x


def _max(*xs):
    if len(xs) == 2:
        a, b = xs
        if type(a) is float and type(b) is float:
            return b if b > a else a        # max() keeps the first of equals
    return max(_flat(xs), default=0.0)


def _min(*xs):
    if len(xs) == 2:
        a, b = xs
        if type(a) is float and type(b) is float:
            return b if b < a else a
    return min(_flat(xs), default=0.0)

def _sum(*xs): return float(sum(_flat(xs)))
def _columns(x): return float(len(x))


def _day(serial) -> "datetime.date":
    import datetime
    return datetime.date(1899, 12, 30) + datetime.timedelta(days=math.floor(serial))


def _year(x): return float(_day(x).year)
def _month(x): return float(_day(x).month)


def _date(y, m, d):
    """DATE(y, m, d) as a serial: months and days past the end roll over, as in a spreadsheet."""
    import datetime
    y, m = int(y) + (int(m) - 1) // 12, (int(m) - 1) % 12 + 1
    first = datetime.date(y, m, 1) + datetime.timedelta(days=int(d) - 1)
    return float((first - datetime.date(1899, 12, 30)).days)


def _isnumber(x):
    if type(x) is float:
        return True
    return x is not None and isinstance(x, (int, float)) and not isinstance(x, bool)
def _sqrt(x): return math.sqrt(x)
def _exp(x):
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf   # #NUM! in a spreadsheet; the planner rejects non-finite figures by name
def _ln(x): return math.log(x)
def _normsinv(p): return NormalDist().inv_cdf(p)
def _normsdist(z): return NormalDist().cdf(z)
def _abs(x): return abs(x)
def _not(x): return not x
def _sumproduct(*cols):
    # Blank cells (None) count as 0, as in a spreadsheet.
    return float(sum(math.prod(x or 0.0 for x in row) for row in zip(*cols)))


def _at(col, k): return col[k] if k < len(col) else None


def _blanks(col): return tuple(1.0 if x is None else 0.0 for x in col)


def _of(col, j):
    x = col[j] if j < len(col) else None
    return 0.0 if x is None or x == "" else x


def _blank_of(col, j):
    x = col[j] if j < len(col) else None
    return 1.0 if x is None or x == "" else 0.0


def _chain(n, first, step):
    """A Chain's rows: first(0), then step(k, the row before's value)."""
    out = []
    for k in range(n):
        out.append(step(k, out[-1]) if out else first(k))
    return tuple(out)


def _counta(*cols): return float(sum(1 for col in cols for x in col if x not in (None, "")))


def _iserror(x):
    # The planner raises on an error instead of carrying it (a division by zero names its
    # line item), so a value that reached this point is never an error.
    return False


def _round(x, digits):
    scale = 10.0 ** int(digits)
    y = _significant(abs(x) * scale)
    return math.copysign(math.floor(y + 0.5) / scale, x)


def _lookup(tables, table, column, key):
    try:
        return tables[table][column][str(key).lower()]
    except KeyError:
        raise KeyError(f"{key!r} is not a row of the {table} table") from None  # i18n: not text


_RUNTIME = {name: obj for name, obj in globals().items() if name.startswith("_") and callable(obj)}


def compile_items(items: Iterable[tuple[str, Expr]]) -> Callable[[dict, Mapping], dict]:
    """Compile (name, expr) pairs, in dependency order, into one Python function.

    The function takes a dict of input values and the lookup tables, adds every item's value
    to the dict and returns it. Compiling once keeps the layout search fast.
    """
    lines = ["def _model(v, T):"]  # i18n: not text
    for name, expr in items:
        lines.append(f"    v[{name!r}] = {expr.python()}")
    lines.append("    return v")  # i18n: not text
    source = "\n".join(lines)
    compiled = _COMPILED.get(source)
    if compiled is None:     # the same expressions compile once per process (issue 14)
        namespace = dict(_RUNTIME)
        exec(_code(source, "<trainbudget model>"), namespace)  # i18n: not text
        if len(_COMPILED) >= 4096:     # a long run's one-off sentences: start afresh
            _COMPILED.clear()
        compiled = _COMPILED[source] = namespace["_model"]
    return compiled


# Sources from this size up (the whole model, the search's functions: 10-40 ms to compile)
# are compiled once per machine, not per process.
_KEEP_COMPILED_FROM = 8192


def _code(source: str, filename: str) -> types.CodeType:
    """compile(source), kept across runs for a large source: budget.cache keeps the code's
    marshal bytes (as Latin-1 text) under a digest of the source and the bytecode's version,
    as a .pyc keeps a module's; anything unreadable is compiled afresh."""
    if len(source) < _KEEP_COMPILED_FROM:
        return compile(source, filename, "exec")
    import importlib.util
    import marshal

    from ..core.cache import cached

    def fresh() -> str:
        return marshal.dumps(compile(source, filename, "exec")).decode("latin-1")

    kind = f"compiled {filename} {importlib.util.MAGIC_NUMBER.hex()}"  # i18n: not text
    try:
        code = marshal.loads(cached(source.encode("utf-8"), kind, fresh).encode("latin-1"))
    except (ValueError, EOFError, TypeError):
        code = None
    return code if isinstance(code, types.CodeType) else compile(source, filename, "exec")


# source -> its compiled function: the functions are pure (they read their two arguments and
# the runtime above, and write only into the dict they are given), so one serves every caller
_COMPILED: dict[str, Callable[[dict, Mapping], dict]] = {}


# --- specialised compilation: the same items evaluated many times over a few changing inputs ---
# The layout search evaluates the layout-dependent items for ~1,500 layouts per GPU count. Most
# of each formula reads inputs that do not change between those calls: `Specializer` computes
# such parts once per set of fixed values (`bind`), keeps only the branch of an IF whose
# condition is fixed, and remembers the items that depend on a few of the changing inputs
# (those of the recomputation mode alone, say) under their values. The Python expressions are
# those `Expr.python` writes, parts of them replaced by names holding the values they had: the
# numbers are the same. Whatever raises is evaluated as it is written: where a part raises at
# `bind` it stays in the function, and a caller that sees any exception runs the plain function
# (`compile_items`) instead, which raises what it always did.

_FAILED = type("_Failed", (), {"__repr__": lambda self: "FAILED"})()  # i18n: not text
_SPECIALIZED: dict[str, Callable] = {}
_MAX_SPECIALIZATIONS = 256     # per Specializer: distinct sets of fixed conditions seen
# Items whose Python text is shorter than this (a few products) compute about as fast as
# their remembered values are looked up (measured on the sweep scenarios' searches).
_WORTH_REMEMBERING = 150
# A remembered group's key takes at most this many earlier items in place of args (Specializer._key)
_KEY_CARRIERS = 2


# a > b follows from _gt(a, b), a < b from _lt(a, b), and _le(a, b) from a <= b, _ge(a, b) from
# a >= b, whatever the operands (a blank or text beside a number raises in Python: the caller
# then runs the plain function). So "a > b and _gt(a, b)" is _gt(a, b), "a <= b or _le(a, b)"
# is _le(a, b), each calling only where Python's comparison does not decide. Names and numbers only.
_DECIDED_BY = {">": "and", "<": "and", "<=": "or", ">=": "or"}
_SIMPLE = re.compile(r"[nh][0-9]+|-?[0-9][0-9.e+-]*")


class _Unsupported(Exception):
    """An expression node the specialising renderer does not know: use the plain function."""


class _Render:
    """Python source for the items, as `Expr.python` writes it, with parts fixed by `outcome`
    (one entry per probe: _FAILED, a condition's truth, or None for a value held in H[i]).
    Without an outcome it collects the probes: the fixed parts, in a traversal order that does
    not depend on the outcome (branches not taken are still walked, `dead`)."""

    def __init__(self, spec: "Specializer", outcome: tuple | None):
        self.spec, self.outcome = spec, outcome
        self.probes: list[tuple[str, bool]] = []
        self.count = 0
        self.dead = 0           # inside a branch that is never taken: nothing is used
        self.plain = 0          # inside a part that failed to be fixed: written as it is
        self.names: dict[str, str] = {}
        self.used: dict[str, None] = {}      # names read by live code, in first-use order
        self.hoisted: dict[int, None] = {}   # probes read by live code
        self.refs: set[str] = set()          # names read by the current item's live code

    def ident(self, name: str) -> str:
        found = self.names.get(name)
        if found is None:
            found = self.names[name] = f"n{len(self.names)}"
        return found

    def ref(self, name: str) -> str:
        if not self.dead:
            self.used[name] = None
            self.refs.add(name)
        return self.ident(name)

    def probe(self, e: Expr | str, test: bool):
        """The outcome (_FAILED while collecting) of a fixed part (an expression, or its Python
        text), and its index."""
        i = self.count
        self.count += 1
        if self.outcome is None:
            self.probes.append((e if isinstance(e, str) else e.python(), test))
            return _FAILED, i
        return self.outcome[i], i

    def inline(self, e: Expr) -> str:
        self.plain += 1
        try:
            return self.r(e, True)
        finally:
            self.plain -= 1

    def walk_dead(self, e: Expr, sub: bool = True) -> None:
        self.dead += 1
        try:
            self.r(e, sub)
        finally:
            self.dead -= 1

    def fixed(self, e: Expr) -> bool:
        return not self.plain and self.spec.invariant(e)

    def r(self, e: Expr, sub: bool) -> str:
        kind = type(e)
        if kind is Num or kind is Text:
            return e.python()
        if kind is Ref:
            return self.ref(e.name)
        if sub and self.fixed(e):
            state, i = self.probe(e, False)
            if state is _FAILED:
                return self.inline(e)
            if not self.dead:
                self.hoisted[i] = None
            return f"h{i}"
        if kind is Bin:
            return self.binary(e, sub)
        if kind is Call:
            if e.fn == "IF":
                return self.condition(e)
            if e.fn in ("AND", "OR"):
                return self.logical(e)
            return f"_{e.fn.lower()}(" + ", ".join(self.r(a, True) for a in e.args) + ")"
        if kind is Lookup:
            return f"_lookup(T, {e.table!r}, {e.column!r}, {self.r(e.key, True)})"  # i18n: not text
        if kind is Blanks:
            return f"_blanks({self.r(e.range, True)})"
        if kind is At:
            return f"_at({self.ref(e.name)}, _k)"
        if kind is UpTo:
            return f"{self.ref(e.name)}[:_k + 1]"
        if kind is PerRow:
            if not self.plain and e.rows not in self.spec.varying:
                state, _i = self.probe(f"len(v[{e.rows!r}])", True)
                if state is False:      # no rows: the empty tuple, the rows' formula never runs
                    self.walk_dead(e.expr)
                    return "()"
            return f"tuple(({self.r(e.expr, True)}) for _k in range(len({self.ref(e.rows)})))"  # i18n: not text
        raise _Unsupported(kind.__name__)

    def binary(self, e: Bin, sub: bool) -> str:
        if e.op in _COMPARE_FN:
            left, right = self.r(e.left, True), self.r(e.right, True)
            call = f"{_COMPARE_FN[e.op]}({left}, {right})"
            if e.op in _DECIDED_BY and _SIMPLE.fullmatch(left) and _SIMPLE.fullmatch(right):
                # Python's comparison decides the common case without the call (see _DECIDED_BY)
                return f"({left} {e.op} {right} {_DECIDED_BY[e.op]} {call})"
            return call
        if e.op == "&":
            return f"_cat({self.r(e.left, True)}, {self.r(e.right, True)})"
        # Which children are whole Python subexpressions of the text `Bin.python` writes: a
        # parenthesised one, one that binds tighter, and a left one of equal precedence where
        # the parent is one (Python reads a + b - c as (a + b) - c, so the Expr a + (b - c),
        # written without parentheses, has no node b - c).
        p = e.precedence
        left_wrapped, right_wrapped = e._parenthesised(e.left, False), e._parenthesised(e.right, True)
        left = self.r(e.left, left_wrapped or e.left.precedence > p or sub)
        right = self.r(e.right, right_wrapped or e.right.precedence > p)
        op = "**" if e.op == "^" else e.op
        return f"{f'({left})' if left_wrapped else left} {op} {f'({right})' if right_wrapped else right}"

    def condition(self, e: Call) -> str:
        test, yes, no = e.args
        if self.fixed(test):
            state, _i = self.probe(test, True)
            if state is not _FAILED:        # keep the branch taken; walk the other one dead
                if state:
                    text = self.r(yes, True)
                    self.walk_dead(no)
                else:
                    self.walk_dead(yes)
                    text = self.r(no, True)
                return f"({text})"
            test_text = self.inline(test)
        else:
            test_text = self.r(test, True)
        return f"({self.r(yes, True)} if {test_text} else {self.r(no, True)})"  # i18n: not text

    def logical(self, e: Call) -> str:
        """AND / OR: fixed operands that do not decide are left out, one that decides ends it
        (the operands before it still run: they may raise)."""
        decides = e.fn == "OR"      # AND stops at a False operand, OR at a True one
        parts, decided = [], False
        for a in e.args:
            if decided:
                self.walk_dead(a)
                continue
            if self.fixed(a):
                state, _i = self.probe(a, True)
                if state is _FAILED:
                    parts.append(f"bool({self.inline(a)})")
                elif state == decides:
                    parts.append(repr(decides))
                    decided = True
                continue
            parts.append(f"bool({self.r(a, True)})")
        if not parts:
            parts.append(repr(not decides))
        return "(" + f" {e.fn.lower()} ".join(parts) + ")"


class Specializer:
    """`items` ((name, expr) in dependency order) compiled for many calls in which only `args`
    change. `bind(values, tables)` returns run(*args) -> the `outputs` as a tuple, computed
    over `values` (every other name's value) and those args, or None where it cannot (then
    use `compile_items`). `steady` args change seldom (a GPU count held through a search): an
    item that depends on every other arg is not remembered. Args must not be -0.0 or NaN
    (they are remembered by value, and -0.0 == 0.0)."""

    def __init__(self, items: Iterable[tuple[str, Expr]], args: Iterable[str], outputs: Iterable[str],
                 steady: Iterable[str] = ()):
        self.items = list(items)
        self.args, self.outputs, self.steady = tuple(args), tuple(outputs), frozenset(steady)
        self.varying = set(self.args) | {name for name, _ in self.items}
        self._invariant: dict[int, bool] = {}
        self._made: dict[tuple, Callable | None] = {}
        try:
            render = _Render(self, None)
            for _name, expr in self.items:
                render.r(expr, True)
        except _Unsupported:
            self._probe = None
            return
        self.tests = tuple(test for _text, test in render.probes)
        self._probe = _compile_cached(_probe_source(render.probes), "_probe")

    def invariant(self, e: Expr) -> bool:
        """No changing name inside and no row index: the same value at every call of a bind."""
        key = id(e)
        found = self._invariant.get(key)
        if found is None:
            kind = type(e)
            if kind is Num or kind is Text:
                found = True
            elif kind is Ref:
                found = e.name not in self.varying
            elif kind is Bin:
                found = self.invariant(e.left) and self.invariant(e.right)
            elif kind is Call:
                found = all(self.invariant(a) for a in e.args)
            elif kind is Lookup:
                found = self.invariant(e.key)
            elif kind is Blanks:
                found = self.invariant(e.range)
            else:                   # At, UpTo, PerRow: the row index changes
                found = False
            self._invariant[key] = found
        return found

    def bind(self, values: Mapping, tables: Mapping) -> Callable | None:
        if self._probe is None:
            return None
        held = self._probe(values, tables)
        try:
            outcome = tuple(_FAILED if x is _FAILED else (bool(x) if test else None)
                            for x, test in zip(held, self.tests))
        except Exception:
            return None
        if outcome not in self._made:
            if len(self._made) >= _MAX_SPECIALIZATIONS:
                self._made.clear()
            try:
                self._made[outcome] = _compile_cached(self._source(outcome), "_make")
            except _Unsupported:
                self._made[outcome] = None
        make = self._made[outcome]
        if make is None:
            return None
        try:
            return make(values, tables, held)
        except Exception:   # a missing name, an item that raises whatever the args: the plain way
            return None

    def _source(self, outcome: tuple) -> str:
        render = _Render(self, outcome)
        for name in self.args:
            render.ident(name)
        texts, deps, reads = [], {}, {}
        for name, expr in self.items:
            render.refs = set()
            texts.append(render.r(expr, True))
            reads[name] = render.refs
            deps[name] = frozenset().union(*({n} if n in self.args else deps.get(n, ()) for n in render.refs))
        outputs = [render.ref(name) for name in self.outputs]
        every = set(self.args)
        groups: dict[frozenset, list[int]] = {}
        for i, (name, _expr) in enumerate(self.items):
            groups.setdefault(deps[name], []).append(i)
        # a group's items read only groups of fewer args (or their own, earlier): fewer first
        order = sorted(groups.items(), key=lambda g: (len(g[0]), g[1][0]))
        made = [name for name in render.used if name not in self.varying]
        lines = ["def _make(v, T, H):"]  # i18n: not text
        lines += [f"    {render.ident(name)} = v[{name!r}]" for name in made]
        lines += [f"    h{i} = H[{i}]" for i in sorted(render.hoisted)]
        body = []
        kept_groups = {group for group, members in order if group and not group | self.steady >= every
                       and sum(len(texts[i]) + 3 + len(render.ident(self.items[i][0])) for i in members)
                       >= _WORTH_REMEMBERING}
        order = [(group, members) for group, members in self._moved(order, kept_groups, reads)]
        for n, (group, members) in enumerate(order):
            assign = [f"{render.ident(self.items[i][0])} = {texts[i]}" for i in members]
            if not group:                   # the same at every call: computed once, here
                lines += ["    " + a for a in assign]
            elif group not in kept_groups:
                body += ["        " + a for a in assign]
            else:
                lines.append(f"    C{n} = {{}}")
                # a group remembers the items read outside it (by other groups, as outputs)
                inside = {self.items[i][0] for i in members}
                outside = set(self.outputs).union(*(reads[name] for name, _e in self.items if name not in inside))
                kept = [render.ident(self.items[i][0]) for i in members if self.items[i][0] in outside]
                names = ", ".join(kept) + "," if kept else ""
                keys = self._key(group, [self.items[i][0] for i in members], deps, reads)
                key = ", ".join(render.ident(a) for a in keys)
                # one name is its own key (a tuple of one compares and hashes as it does)
                body += [f"        k = {key}" if len(keys) == 1 else f"        k = ({key})",  # i18n: not text
                         f"        c = C{n}.get(k)", "        if c is None:"]
                body += ["            " + a for a in assign]
                body += [f"            C{n}[k] = ({names})", "        else:",  # i18n: not text
                         f"            {names} = c" if kept else "            pass"]  # i18n: not text
        lines.append(f"    def _run({', '.join(render.ident(a) for a in self.args)}):")  # i18n: not text
        lines += body
        lines.append(f"        return ({', '.join(outputs)},)")  # i18n: not text
        lines.append("    return _run")  # i18n: not text
        return "\n".join(lines)


    def _moved(self, order: list, kept: set, reads: dict) -> list:
        """`order` with each item computed at every call that only one remembered group reads
        (and no output) moved into that group, computed when the group is: read nowhere else,
        it is needed only there (its own args are among the group's)."""
        names = [name for name, _expr in self.items]
        group_of = {i: group for group, members in order for i in members}
        readers: dict[str, set[int]] = {}
        for j, name in enumerate(names):
            for r in reads[name]:
                readers.setdefault(r, set()).add(j)
        outputs = set(self.outputs)
        for i in reversed(range(len(names))):
            group = group_of[i]
            if not group or group in kept or names[i] in outputs or not readers.get(names[i]):
                continue
            targets = {group_of[j] for j in readers[names[i]]}
            if len(targets) == 1 and next(iter(targets)) in kept:
                group_of[i] = next(iter(targets))
        return [(group, [i for i in range(len(names)) if group_of[i] == group]) for group, _m in order]

    def _key(self, group: frozenset, members: list[str], deps: dict, reads: dict) -> list[str]:
        """The names a remembered group's values are remembered under: its args, but an arg its
        items do not read is replaced by the few earlier items they read that depend on it (the
        search's time items read the ZeRO stage only as "above 2?", through two earlier items:
        stages 0, 1 and 2 share their values). Items are pure functions of what they read."""
        own = set(members)
        read = set().union(*(reads[name] for name in members)) - own
        names = [name for name, _expr in self.items]
        carriers = [n for n in names if n in read and deps.get(n)]
        dropped, added = set(), set()
        for arg in self.args:
            if arg in group and arg not in read and arg not in self.steady:
                via = {n for n in carriers if arg in deps[n]}
                if 0 < len(via) <= _KEY_CARRIERS and len(added | via) <= _KEY_CARRIERS:
                    dropped.add(arg)
                    added |= via
        return [a for a in self.args if a in group and a not in dropped] + [n for n in names if n in added]


def _probe_source(probes: list[tuple[str, bool]]) -> str:
    lines = ["def _probe(v, T):", "    out = []"]  # i18n: not text
    for text, _test in probes:
        lines += ["    try:", f"        out.append({text})",  # i18n: not text
                  "    except Exception:", "        out.append(_FAILED)"]
    lines.append("    return out")  # i18n: not text
    return "\n".join(lines)


def _compile_cached(source: str, name: str) -> Callable:
    compiled = _SPECIALIZED.get(source)
    if compiled is None:
        namespace = dict(_RUNTIME, _FAILED=_FAILED)
        exec(_code(source, "<trainbudget specialised>"), namespace)  # i18n: not text
        if len(_SPECIALIZED) >= 1024:
            _SPECIALIZED.clear()
        compiled = _SPECIALIZED[source] = namespace[name]
    return compiled
