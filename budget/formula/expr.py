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

This module is the one the model, the plan and the sheets import from: it builds the
spreadsheet functions as calls and names the rest of the package's public parts, which live in
tree.py (the nodes and their two renderings), rows.py (row items), runtime.py (the spreadsheet
semantics compiled code calls), compiler.py (`compile_items`) and specialize.py (`Specializer`).
"""

from __future__ import annotations

from .compiler import compile_items
from .rows import At, BlankOf, Chain, Each, Of, PerRow, Prev, UpTo, row_expr
from .specialize import Specializer
from .tree import (BENIGN_CONSTANTS, FALSE, SUPPORTED_FUNCTIONS, TRUE, Area, Bin, Blanks, Bool, Call, Cell, Expr,
                   Group, Lookup, Num, Ref, Text, column_letter, lift, substitute, table_column_name)

__all__ = [
    "BENIGN_CONSTANTS", "SUPPORTED_FUNCTIONS", "TRUE", "FALSE",
    "Expr", "Num", "Text", "Ref", "Bin", "Call", "Lookup", "Bool", "Cell", "Area", "Group", "Blanks",
    "At", "UpTo", "PerRow", "Chain", "Prev", "Each", "Of", "BlankOf",
    "lift", "substitute", "row_expr", "table_column_name", "column_letter", "compile_items", "Specializer",
    "IF", "IFERROR", "AND", "OR", "NOT", "MAX", "MIN", "SUM", "ROUNDUP", "MOD", "ISNUMBER", "SQRT", "EXP", "LN", "ABS",
    "SUMPRODUCT", "ISERROR", "COUNTA", "ROUND", "COLUMNS", "YEAR", "MONTH", "DATE",
    "FIXED", "INDEX", "MATCH", "LARGE", "ROW", "NORMSINV", "NORMSDIST", "COUNT",
]


# --- the spreadsheet functions, built as calls ------------------------------------------

def IF(cond, a, b) -> Expr: return Call("IF", (lift(cond), lift(a), lift(b)))
# IFERROR(x, fallback), not IF(ISERROR(x), fallback, x): the formula once, not twice (Excel 2007,
# LibreOffice and Gnumeric all have it without a prefix)
def IFERROR(x, fallback) -> Expr: return Call("IFERROR", (lift(x), lift(fallback)))
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
def FIXED(x, digits=0) -> Expr: return Call("FIXED", (lift(x), lift(digits)))   # text, with separators
def ROUND(x, digits=0) -> Expr: return Call("ROUND", (lift(x), lift(digits)))
def COLUMNS(x: Ref) -> Expr: return Call("COLUMNS", (x,))
def YEAR(x) -> Expr: return Call("YEAR", (lift(x),))
def MONTH(x) -> Expr: return Call("MONTH", (lift(x),))
def DATE(y, m, d) -> Expr: return Call("DATE", (lift(y), lift(m), lift(d)))
# Sheet-side functions: a sheet's own lookups and sorting (the Sensitivity tornado, a table's rows);
# the planner's model does not use them, so they have no Python twin.
def INDEX(area, k, column=None) -> Expr:
    """INDEX(area, k): the k-th cell of a column; INDEX(area, 1, k): the k-th of a row (Gnumeric
    reads a lone second argument as a row number, #REF! in a one-row area)."""
    return Call("INDEX", (lift(area), lift(k)) if column is None else (lift(area), lift(k), lift(column)))
def MATCH(x, area) -> Expr: return Call("MATCH", (lift(x), lift(area), Num(0)))    # exact match
def LARGE(area, k) -> Expr: return Call("LARGE", (lift(area), lift(k)))
def ROW() -> Expr: return Call("ROW", ())
def NORMSINV(p) -> Expr: return Call("NORMSINV", (lift(p),))
def NORMSDIST(z) -> Expr: return Call("NORMSDIST", (lift(z),))     # the standard normal's CDF
def COUNT(*xs) -> Expr: return Call("COUNT", tuple(lift(x) for x in xs))
