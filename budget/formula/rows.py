"""Row items: an item evaluated once per row of a table (PerRow), rows that follow one another
(Chain, Prev), a row's cell of a column (At, UpTo) and arrays over a table's rows inside SUMPRODUCT
(Each, Of, BlankOf). The workbook writes one formula per row; Python gives a tuple."""

from __future__ import annotations

from dataclasses import dataclass

from .tree import Expr

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
class _OverRows(Expr):
    """`expr` once per row of the table whose column `rows` is: the same formula in a sheet,
    a tuple in Python whose loop variable (`_var`) the row's references read."""
    expr: Expr
    rows: str
    _var = ""

    def _collect(self, out):
        self.expr._collect(out)
        out.add(self.rows)

    def excel(self, resolve=str):
        return self.expr.excel(resolve)

    def python(self):
        return f"tuple(({self.expr.python()}) for {self._var} in range(len(v[{self.rows!r}])))"  # i18n: not text


@dataclass(frozen=True, eq=False)
class PerRow(_OverRows):
    """A row item: `expr` evaluated once per row of the table whose column `rows` is, each
    row's formula its own cell (the workbook's Stages sheet); a tuple in Python."""
    _var = "_k"


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
class Each(_OverRows):
    """An array over the rows of the table whose column `rows` is, as SUMPRODUCT reads one:
    `expr` with `Of(name)` for a column's value in the row (the Cashflow sheet's staffing by
    role, a year's months). The workbook writes `expr` over whole columns, which Excel 2016 and
    LibreOffice evaluate as an array inside SUMPRODUCT (as they do Blanks); Python gives a tuple."""
    _var = "_j"


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
