"""The expression tree: every derived number is written once as a tree of `Ref`s to named inputs
or line items, a few spreadsheet functions and the arithmetic operators, and each node renders
itself as Excel text (`excel`) and as the Python the compiled model runs (`python`). The Python
calls the spreadsheet's semantics in budget.formula.runtime; the row items (a table's rows) are
in budget.formula.rows, the spreadsheet functions built as calls in budget.formula.expr."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

# Numbers a reviewer reads as conventions rather than assumptions (hours in a day, and so
# on). Any other number must be a named input, so that it carries a label and a source.
BENIGN_CONSTANTS = frozenset({0, 1, 2, 7, 12, 24, 30, 52, 60, 100, 365, 1000, 1024, 3600, 86400})

# Functions LibreOffice 7.4 and Excel 2016 both have, without an _xlfn. prefix.
SUPPORTED_FUNCTIONS = frozenset({
    "IF", "IFERROR", "AND", "OR", "NOT", "MAX", "MIN", "SUM", "ROUNDUP", "MOD",
    "ISNUMBER", "SQRT", "EXP", "INDEX", "MATCH", "ABS", "SUMPRODUCT", "ISERROR", "COUNTA",
    "ROUND", "YEAR", "COLUMNS", "COUNT", "LN", "NORMSINV", "NORMSDIST", "LARGE", "ROW",
    "FIXED",    # a count in words with its thousands separator ("16,384 × H100")
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
    # an input's declared validation bound (issue 29's input-integrity checks): the number the
    # input's declaration, its data validation and the importer's rule hold, so it may stand in
    # a formula as they do (tests/test_workbook.py allows it on those checks' rows alone)
    bound: bool = False

    def _collect(self, out): pass

    def excel(self, resolve=str):
        if self.value not in BENIGN_CONSTANTS and not self.bound:
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
