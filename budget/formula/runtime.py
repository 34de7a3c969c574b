"""The Python semantics of the spreadsheet functions and operators that the compiled model calls
(budget.formula.tree writes calls to them: `_eq` for =, `_roundup` for ROUNDUP, ...). They follow
LibreOffice and Excel where those differ from Python: numbers equal to about 15 significant digits
compare equal, a blank cell equals 0 and "", texts compare without case, ROUNDUP ignores float
noise in the 16th digit. `_RUNTIME` is the namespace compiled code runs in."""

from __future__ import annotations

import math
from statistics import NormalDist

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


def _count(*xs): return float(sum(1 for x in _flat(xs) if _isnumber(x)))
def _counta(*cols): return float(sum(1 for col in cols for x in col if x not in (None, "")))


def _iserror(x):
    # The planner raises on an error instead of carrying it (a division by zero names its
    # line item), so a value that reached this point is never an error.
    return False


def _iferror(x, fallback):
    return x        # as _iserror: an error raised before it got here


def _fixed(x, digits):
    # FIXED(x, d): x rounded as ROUND does, as text with thousands separators (the en locale's,
    # which LibreOffice and Gnumeric use for the tests' books)
    return f"{_round(x, digits):,.{max(int(digits), 0)}f}"


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
