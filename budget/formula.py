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
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

# Numbers a reviewer reads as conventions rather than assumptions (hours in a day, and so
# on). Any other number must be a named input, so that it carries a label and a source.
BENIGN_CONSTANTS = frozenset({0, 1, 2, 7, 12, 24, 30, 52, 60, 100, 365, 1000, 1024, 3600, 86400})

# Functions LibreOffice 7.4 and Excel 2016 both have, without an _xlfn. prefix.
SUPPORTED_FUNCTIONS = frozenset({
    "IF", "AND", "OR", "NOT", "MAX", "MIN", "SUM", "ROUNDUP", "MOD",
    "ISNUMBER", "SQRT", "EXP", "INDEX", "MATCH", "ABS", "SUMPRODUCT", "ISERROR", "COUNTA",
    "ROUND", "YEAR", "COLUMNS", "COUNT", "LN", "NORMSINV", "LARGE", "ROW",
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
        p = self.precedence
        if child.precedence < p or (right and child.precedence == p and self.op in _NON_ASSOCIATIVE):
            return f"({text})"
        if self.op == "^" and isinstance(child, Bin):
            return f"({text})"  # Excel's ^ is left-associative, Python's right: never rely on it
        return text

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
    return expr


# --- Python runtime with spreadsheet semantics --------------------------------------------

_E48 = 2.0 ** -48  # rtl::math::approxEqual, which LibreOffice's comparisons use


def _approx_equal(a, b) -> bool:
    if a is None or b is None:   # a blank cell equals 0 or "", as in a spreadsheet
        a = ("" if isinstance(b, str) else 0.0) if a is None else a
        b = ("" if isinstance(a, str) else 0.0) if b is None else b
    if a == b:
        return True
    if isinstance(a, str) or isinstance(b, str):
        return str(a).lower() == str(b).lower()
    return abs(a - b) < max(abs(a), abs(b)) * _E48


def _eq(a, b): return _approx_equal(a, b)
def _ne(a, b): return not _approx_equal(a, b)
def _lt(a, b): return not _approx_equal(a, b) and a < b
def _le(a, b): return _approx_equal(a, b) or a < b
def _gt(a, b): return not _approx_equal(a, b) and a > b
def _ge(a, b): return _approx_equal(a, b) or a > b
def _cat(a, b): return f"{_text(a)}{_text(b)}"


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


def _max(*xs): return max(_flat(xs), default=0.0)
def _min(*xs): return min(_flat(xs), default=0.0)
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


def _isnumber(x): return isinstance(x, (int, float)) and not isinstance(x, bool)
def _sqrt(x): return math.sqrt(x)
def _exp(x):
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf   # #NUM! in a spreadsheet; the planner rejects non-finite figures by name
def _ln(x): return math.log(x)
def _abs(x): return abs(x)
def _not(x): return not x
def _sumproduct(*cols):
    # Blank cells (None) count as 0, as in a spreadsheet.
    return float(sum(math.prod(x or 0.0 for x in row) for row in zip(*cols)))


def _at(col, k): return col[k] if k < len(col) else None


def _blanks(col): return tuple(1.0 if x is None else 0.0 for x in col)
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
        exec(compile(source, "<trainbudget model>", "exec"), namespace)  # i18n: not text
        if len(_COMPILED) >= 4096:     # a long run's one-off sentences: start afresh
            _COMPILED.clear()
        compiled = _COMPILED[source] = namespace["_model"]
    return compiled


# source -> its compiled function: the functions are pure (they read their two arguments and
# the runtime above, and write only into the dict they are given), so one serves every caller
_COMPILED: dict[str, Callable[[dict, Mapping], dict]] = {}
