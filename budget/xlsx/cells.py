"""openpyxl's objects made without its per-call checks, while a book is built: cells, row and
column dimensions, defined names, data validations, conditional-format rules and the book's
style lists. Everything made here is openpyxl's own type holding what openpyxl would store
(tests/test_workbook.py compares the merge with openpyxl's; tests/test_xlsx.py the whole book
written through openpyxl's public writer), so openpyxl's writer and the fast one in save.py
read it alike.

This module and save.py are the only places that touch openpyxl's private attributes
(`cell._value`, `cell._style`, `ws._cells`, the descriptors' `__dict__`). Checked against
openpyxl 3.1.2-3.1.5; what each shortcut buys is measured by bench/bench_speed.py.
"""

from __future__ import annotations

from array import array as _Array
from copy import copy

from openpyxl.cell.cell import ERROR_CODES, ILLEGAL_CHARACTERS_RE, MergedCell
from openpyxl.cell.cell import Cell as XlCell
from openpyxl.compat import safe_string
from openpyxl.formatting.formatting import ConditionalFormatting, ConditionalFormattingList
from openpyxl.formatting.rule import Rule
from openpyxl.styles import Border, Font
from openpyxl.styles.cell_style import StyleArray
from openpyxl.styles.numbers import BUILTIN_FORMATS_MAX_SIZE, BUILTIN_FORMATS_REVERSE
from openpyxl.utils import get_column_letter
from openpyxl.utils.indexed_list import IndexedList
from openpyxl.utils.units import DEFAULT_COLUMN_WIDTH
from openpyxl.workbook.defined_name import RESERVED, DefinedName
from openpyxl.worksheet.cell_range import MultiCellRange
from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.dimensions import ColumnDimension, RowDimension
from openpyxl.worksheet.worksheet import Worksheet
from openpyxl.xml.functions import Element

MAX_TEXT = 32767              # openpyxl keeps this many characters of a cell's text
ALIGNMENT = 5                 # a StyleArray's alignmentId
FONT_ID = 0                   # and its fontId
_NEW_CELL = XlCell.__new__
_STYLE_COPY = _Array.__new__     # _STYLE_COPY(StyleArray, "i", a) is StyleArray(a) without its Python __new__


def style_copy(array: StyleArray) -> StyleArray:
    """A copy of a cell style array (what `copy(array)` gives, without StyleArray.__new__): a
    book gives ~10,000 cells a style it made once."""
    return _STYLE_COPY(StyleArray, "i", array)


def set_style(cell, array: StyleArray) -> None:
    """The cell takes a copy of `array` (a style array made once for many cells)."""
    cell._style = _STYLE_COPY(StyleArray, "i", array)


def style_of(cell) -> StyleArray:
    """A copy of the cell's style array (to give many cells the style one was given)."""
    return copy(cell._style)


class CellStyles:
    """The style arrays a book's cells take, each made once through openpyxl and then copied
    (set_style): a named style, and a named style with a number format."""

    def __init__(self, wb):
        self.wb = wb
        self.named: dict[str, StyleArray] = {}                         # named style -> its array
        self.formatted: dict[tuple[str, str | None], StyleArray] = {}  # and with a number format
        self.format_ids: dict[str, int] = {}                           # number format -> its id

    def named_array(self, cell, style: str) -> StyleArray:
        """The style array a named style sets, found the first time through openpyxl (on `cell`)."""
        array = self.named.get(style)
        if array is None:
            cell.style = style
            array = self.named[style] = copy(cell._style)
        return array

    def formatted_array(self, cell, style: str, fmt: str | None) -> StyleArray:
        array = self.formatted.get((style, fmt))
        if array is None:
            array = StyleArray(self.named_array(cell, style))
            if fmt:
                array.numFmtId = self.format_id(fmt)
            self.formatted[(style, fmt)] = array
        return array

    def format_id(self, fmt: str) -> int:
        """The id `cell.number_format = fmt` gives (the format added to the book's list on first
        use, as openpyxl adds it, so the list keeps its order)."""
        index = self.format_ids.get(fmt)
        if index is None:
            index = BUILTIN_FORMATS_REVERSE.get(fmt)
            if index is None:
                index = self.wb._number_formats.add(fmt) + BUILTIN_FORMATS_MAX_SIZE
            self.format_ids[fmt] = index
        return index


def new_cell(ws, row: int, column: int):
    """An empty cell of `ws`, as Worksheet.cell makes it, stored in the sheet."""
    if row < 1 or column < 1 or row > 1048576:
        raise ValueError(f"no cell at row {row}, column {column}")  # i18n: not text
    cell = _NEW_CELL(XlCell)
    cell.parent = ws
    cell.row = row
    cell.column = column
    cell._value = None
    cell._hyperlink = None
    cell.data_type = "n"
    cell._comment = None
    cell._style = None
    ws._cells[(row, column)] = cell
    if row > ws._current_row:
        ws._current_row = row
    return cell


def bind(cell, value) -> None:
    """`cell.value = value`: the common types typed here as openpyxl types them (text it
    would refuse, or cut, goes through openpyxl)."""
    kind = type(value)
    if kind is str:
        if len(value) <= MAX_TEXT and ILLEGAL_CHARACTERS_RE.search(value) is None:
            cell._value = value
            cell.data_type = ("f" if len(value) > 1 and value[0] == "=" else
                              "e" if value in ERROR_CODES else "s")
            return
    elif kind is float or kind is int or value is None:
        cell._value = value
        cell.data_type = "n"
        return
    cell.value = value


def bind_text(cell, text: str) -> None:
    """`cell.value = text`, typed as text whatever it looks like (the caller has refused the
    characters openpyxl refuses)."""
    if len(text) <= MAX_TEXT:
        cell._value = text
    else:
        cell.value = text
    cell.data_type = "s"


def bind_formula(cell, text: str) -> None:
    """`cell.value = "=" + text`, a formula cell."""
    value = "=" + text
    if text and len(value) <= MAX_TEXT and ILLEGAL_CHARACTERS_RE.search(value) is None:
        cell._value = value
        cell.data_type = "f"
    else:
        bind(cell, value)


class FastSheet(Worksheet):
    """openpyxl's worksheet with its cells made and filled without the per-call checks of
    Worksheet.cell (every bundled scenario's book is byte-identical): cells are openpyxl's."""

    def cell(self, row, column, value=None):
        cell = self._cells.get((row, column))
        if cell is None:
            cell = new_cell(self, row, column)
        if value is not None:
            bind(cell, value)
        return cell

    def _get_cell(self, row, column):
        cell = self._cells.get((row, column))
        return new_cell(self, row, column) if cell is None else cell

    def _setup(self):
        super()._setup()
        self.conditional_formatting = Formats()

    def _clean_merge_range(self, mcr):
        """openpyxl's, for a range of one row: the cells after the first become MergedCells and
        take the first one's borders and protection (MergedCellRange.format). The cells between
        the second and the last start alike and go through the same steps, so openpyxl runs
        them on the second and the others copy its style: the same styles, added to the book's
        lists in the same order. The steps' outcome depends only on the first cell's style (the
        others start empty), so it is remembered per book under that style."""
        row, first, last = mcr.min_row, mcr.min_col, mcr.max_col
        if mcr.max_row != row or last - first < 2:
            return super()._clean_merge_range(mcr)
        cells = self._cells
        for col in range(first + 1, last + 1):
            cells[row, col] = MergedCell(self, row, col)
        start, second, end = mcr.start_cell, cells[row, first + 1], cells[row, last]
        key = None if start._style is None else start._style.tobytes()
        known = self.merge_styles.get(key)
        if known is None:
            edges = {"top": (start, second, end), "left": (start,),
                     "right": (end,), "bottom": (start, second, end)}
            for name, edge in edges.items():
                side = getattr(start.border, name)
                if side and side.style is None:
                    continue
                border = Border(**{name: side})
                for cell in edge:
                    cell.border += border
            protection = copy(start.protection)
            for cell in (start, second, end):
                cell.protection = protection
            known = self.merge_styles[key] = (copy(start._style), copy(second._style), copy(end._style))
        else:
            start._style, second._style, end._style = (copy(style) for style in known)
        for col in range(first + 2, last):
            cells[row, col]._style = copy(known[1])

    @property
    def merge_styles(self) -> dict:
        """The book's merge outcomes (_clean_merge_range): first cell's style -> the styles."""
        book = self.parent
        known = getattr(book, "_merge_styles", None)
        if known is None:
            known = book._merge_styles = {}
        return known


def column_dimension(ws, letter: str):
    """`ws.column_dimensions[letter]`, a missing one made as openpyxl's factory makes it (its
    default width, 13, included) without its descriptors' checks."""
    return _dimension(ws, ws.column_dimensions, letter, ColumnDimension, COLUMN_DIMENSION_FIELDS)


def row_dimension(ws, row: int):
    """`ws.row_dimensions[row]`, a missing one made as openpyxl's factory makes it (without its
    descriptors' checks: the same attributes)."""
    return _dimension(ws, ws.row_dimensions, row, RowDimension, ROW_DIMENSION_FIELDS)


def set_row_height(dim, height: float) -> None:
    """`dim.height = height` (what the descriptor stores, for a plain RowDimension)."""
    if type(dim) is RowDimension:
        dim.__dict__["ht"] = float(height)
    else:
        dim.height = height


def _dimension(ws, dims, index, kind, fields: dict):
    dim = dict.get(dims, index)
    if dim is None:
        dim = kind.__new__(kind)
        dim.__dict__.update(fields)
        dim.__dict__["index"] = index
        dim.parent = ws
        dim._style = None
        dict.__setitem__(dims, index, dim)
    return dim


COLUMN_DIMENSION_FIELDS = {"width": DEFAULT_COLUMN_WIDTH, "min": None, "max": None, "bestFit": False,
                           "collapsed": False, "index": "A", "hidden": False, "outlineLevel": 0}
ROW_DIMENSION_FIELDS = {"ht": None, "thickBot": False, "thickTop": False, "index": 0,
                        "hidden": False, "outlineLevel": 0, "collapsed": False}


def set_font(cell, font: Font) -> None:
    """`cell.font = font` (openpyxl's StyleDescriptor.__set__), the book's font list asked
    directly (by identity: SameStyles)."""
    style = cell._style
    if style is None:
        style = cell._style = StyleArray()
    style[FONT_ID] = cell.parent.parent._fonts.add(font)


def set_style_id(cell, key: str, index: int) -> None:
    """What `cell.alignment = x` does once x is in the workbook's list at `index`."""
    if cell._style is None:
        cell._style = StyleArray()
    setattr(cell._style, key, index)


_NEW_RULE = Rule.__new__
_RULE_FIELDS = {k: v for k, v in Rule(type="expression", formula=["x"]).__dict__.items() if k != "formula"}


def expression_rule(formula: str, dxf) -> Rule:
    """Rule(type="expression", formula=[formula]) with its differential style, made without its checks."""
    rule = _NEW_RULE(Rule)
    rule.__dict__.update(_RULE_FIELDS)
    rule.__dict__["formula"] = [formula]
    rule.dxf = dxf
    return rule


class Formats(ConditionalFormattingList):
    """A sheet's conditional formats: openpyxl's list with a range's rules kept under the
    range's text as openpyxl writes it (the str of its MultiCellRange, by which openpyxl's keys
    compare), so adding a rule makes no ConditionalFormatting and reads a range once a process."""

    def __init__(self):
        super().__init__()
        self.by_range: dict[str, list[Rule]] = {}

    def add(self, range_string, cfRule):
        if not isinstance(cfRule, Rule):
            return super().add(range_string, cfRule)      # refuses it
        key = _sqref(range_string) if isinstance(range_string, str) else str(range_string.sqref)
        self.max_priority += 1
        if not cfRule.priority:
            cfRule.priority = self.max_priority
        rules = self.by_range.get(key)
        if rules is None:
            rules = self.by_range[key] = []
        rules.append(cfRule)

    def __bool__(self):
        return bool(self.by_range)

    def __len__(self):
        return len(self.by_range)

    def __iter__(self):
        for key, rules in self.by_range.items():
            cf = ConditionalFormatting(key)
            cf.rules = rules
            yield cf

    def __getitem__(self, key):
        return self.by_range[_sqref(key) if isinstance(key, str) else str(key.sqref)]

    def __delitem__(self, key):
        del self.by_range[_sqref(key)]


_SQREFS: dict[str, str] = {}


def _sqref(text: str) -> str:
    """A range as openpyxl writes it (its ranges parsed and sorted), remembered."""
    known = _SQREFS.get(text)
    if known is None:
        if len(_SQREFS) >= 65536:
            _SQREFS.clear()
        known = _SQREFS[text] = str(MultiCellRange(text))
    return known


class Name(DefinedName):
    """A workbook-scope defined name (defined_name), written as openpyxl's to_tree writes it
    without walking its fields' descriptors."""

    def to_tree(self, tagname=None, idx=None, namespace=None):
        fields = self.__dict__
        if tagname not in (None, self.tagname) or namespace is not None \
                or any(fields.get(key) is not None for key in NAME_OTHERS):
            return super().to_tree(tagname, idx, namespace)
        name = fields["name"]
        node = Element(self.tagname, {"name": "_xlnm." + name if name in RESERVED else name})
        node.text = safe_string(fields["attr_text"])
        return node


_NEW_NAME = Name.__new__
_NAME_FIELDS = dict(DefinedName("x", attr_text="x").__dict__)
NAME_OTHERS = [key for key in DefinedName.__attrs__ if key not in ("name", "attr_text")]


def defined_name(name: str, text: str) -> DefinedName:
    """DefinedName(name, attr_text=text), made without its descriptors' checks."""
    node = _NEW_NAME(Name)
    fields = node.__dict__
    fields.update(_NAME_FIELDS)
    fields["name"] = name
    fields["attr_text"] = text
    return node


_NEW_VALIDATION = DataValidation.__new__
_VALIDATION_DEFAULTS = {k: v for k, v in DataValidation().__dict__.items() if k != "sqref"}


def data_validation(**fields) -> DataValidation:
    """DataValidation(**fields): the defaults copied, the fields given set through openpyxl."""
    dv = _NEW_VALIDATION(DataValidation)
    dv.__dict__.update(_VALIDATION_DEFAULTS)
    dv.__dict__["sqref"] = MultiCellRange()
    for key, value in fields.items():
        setattr(dv, key, value)
    return dv


class SameStyles(IndexedList):
    """A workbook's list of fonts (fills, borders, ...): openpyxl's, plus a memo by identity,
    so a style object used again (a module constant) is found without hashing it; what the
    list holds and the ids it gives are openpyxl's. The memo keeps each object it saw alive,
    so an id is never reused while the book is built."""

    def __init__(self, items=()):
        super().__init__(items)
        self._seen: dict[int, tuple[object, int]] = {}

    def add(self, value):
        seen = self._seen.get(id(value))
        if seen is not None and seen[0] is value:
            return seen[1]
        index = super().add(value)
        self._seen[id(value)] = (value, index)
        return index


def same_styles(wb) -> None:
    """The book's five style lists made SameStyles (the ids they give are openpyxl's)."""
    for key in ("_fonts", "_fills", "_borders", "_alignments", "_protections"):
        setattr(wb, key, SameStyles(getattr(wb, key)))


def add_sheet(wb, title: str) -> FastSheet:
    """What `wb.create_sheet(title)` makes, a FastSheet."""
    ws = FastSheet(parent=wb, title=title)
    wb._add_sheet(ws)
    return ws


def release(wb) -> None:
    """Drop what the sheets and the book hold, so that their objects are freed now by
    reference counting rather than by the cyclic collector (each refers to its sheet)."""
    for ws in wb.worksheets:
        ws._cells.clear()
        dict.clear(ws.row_dimensions)
        dict.clear(ws.column_dimensions)
        if isinstance(ws.conditional_formatting, Formats):
            ws.conditional_formatting.by_range.clear()
        ws.data_validations.dataValidation = []
    wb.defined_names.clear()
    wb._cell_styles = IndexedList()


class Letters(dict):
    """Column number -> letters, each made once when first asked for (a list of all 16,384
    made at import cost ~4 ms of every run; a book uses a few dozen)."""

    def __missing__(self, column: int) -> str:
        letters = self[column] = get_column_letter(column) if column else ""
        return letters


LETTERS = Letters()
