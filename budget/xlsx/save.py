"""A built book saved as .xlsx bytes, on one of two paths that give the same workbook:

- **openpyxl's own writer** (`fast=False`): `ExcelWriter` as `Workbook.save` runs it, then one
  pass over the sheet parts that gives each formula cell its cached value (openpyxl writes
  `<v></v>` for every formula);
- **the fast writer** (`fast=True`, the default): openpyxl's writer with the cells, conditional
  formats, validations, headers and columns of each sheet written as text in one piece rather
  than one ElementTree element each, the cached values written with the cells. ~2.5x faster on
  a book (bench/bench_speed.py measures both paths).

tests/test_xlsx.py holds the two paths to the same XML parts after canonicalisation (empty
rows and the dimension element aside: the fast writer writes every row from the first to the
last and spans A1 to the last cell, as the book had when its sheets were once walked with
`iter_rows()`). Every cell kind the fast writer does not know (a comment, a link, rich text, a
date, a boolean, text that needs xml:space) goes through openpyxl's own `write_cell`.

Both paths name every font's face before a style's id is found (FontNames): a font without a
name prints in the viewer's fallback (a serif in LibreOffice) beside Calibri text.

This module and cells.py are the only places that touch openpyxl's internals; the subclassed
writers were checked against openpyxl 3.1.2-3.1.5 (`write_worksheet` follows 3.1's
`ExcelWriter.write_worksheet`; a later openpyxl gets the plain path, see `fast_path_fits`).
"""

from __future__ import annotations

import io
import math
import re
from copy import copy
from operator import itemgetter

from openpyxl import __version__ as OPENPYXL_VERSION
from openpyxl.cell._writer import write_cell
from openpyxl.cell.cell import Cell as XlCell
from openpyxl.comments.comment_sheet import CommentRecord
from openpyxl.drawing.spreadsheet_drawing import SpreadsheetDrawing
from openpyxl.formatting.formatting import ConditionalFormatting
from openpyxl.formatting.rule import Rule
from openpyxl.styles.cell_style import StyleArray
from openpyxl.styles.differential import DifferentialStyle
from openpyxl.utils import column_index_from_string, get_column_letter
from openpyxl.utils.escape import escape as header_escape
from openpyxl.worksheet._writer import WorksheetWriter
from openpyxl.worksheet.dimensions import SheetDimension
from openpyxl.worksheet.header_footer import HeaderFooter, HeaderFooterItem, _HeaderFooterPart
from openpyxl.workbook.defined_name import RESERVED, DefinedNameDict
from openpyxl.writer.excel import ExcelWriter
from openpyxl.xml.constants import ARC_WORKBOOK

from .cells import COLUMN_DIMENSION_FIELDS, LETTERS, NAME_OTHERS, ROW_DIMENSION_FIELDS, Formats, Name, defined_name
from .reproducible import FixedZip

FAST_PATH_OPENPYXL = ("3.1.2", "3.1.3", "3.1.4", "3.1.5")   # the openpyxl versions the fast writer was checked against


def fast_path_fits() -> bool:
    """Whether the installed openpyxl is one the fast writer was checked against."""
    return OPENPYXL_VERSION in FAST_PATH_OPENPYXL


def save_book(wb, cached: dict[str, dict[tuple[int, int], object]], body_font: str, fast: bool = True) -> bytes:
    """The book's bytes, each formula cell with its cached value (`cached`: sheet title ->
    (row, column) -> the value), fonts named `body_font` where they named none."""
    fonts = FontNames(wb._fonts, body_font)
    if wb.security is not None and not dict(wb.security):     # openpyxl lists only what is set
        wb.security = None      # nothing protected: no empty <workbookProtection/> element
    buffer = io.BytesIO()
    if fast and fast_path_fits():
        FastExcelWriter(wb, FixedZip(buffer), fonts, cached).save()
        return buffer.getvalue()
    name_fonts(wb, fonts)
    archive = FixedZip(buffer)
    ExcelWriter(wb, archive).write_data()       # what ExcelWriter.save does before it closes
    add_cached_values(archive, wb, cached)
    archive.close()
    return buffer.getvalue()


def cached_xml(value) -> tuple[str, str] | None:
    """(the cell's type attribute, its <v> text) for a formula's cached value: a number as a
    number (%.17g reads back as the same double), text as t="str", an empty text as an empty
    t="str", a boolean as t="b"; None (no cached value) for anything a cell cannot cache (a
    blank, an infinite or NaN number)."""
    kind = type(value)
    if kind is bool:
        return ' t="b"', "1" if value else "0"
    if kind is int or kind is float:
        return ("", repr(float(value)) if kind is float else str(value)) if math.isfinite(value) else None
    if kind is str:
        return ' t="str"', _escape_text(value)
    return None


def _escape_text(text: str) -> str:
    """Character data escaped as ElementTree escapes it (&, <, >)."""
    if "&" in text or "<" in text or ">" in text:
        text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text


def _escape_attribute(text: str) -> str:
    """An attribute's value escaped as ElementTree escapes it."""
    text = _escape_text(text)
    if '"' in text or "\r" in text or "\n" in text or "\t" in text:
        text = text.replace('"', "&quot;").replace("\r", "&#13;").replace("\n", "&#10;").replace("\t", "&#09;")
    return text


# --- openpyxl's writer, then the cached values ------------------------------------------

# a formula cell as openpyxl's ElementTree writer writes it: reference, style, formula, empty value
_FORMULA_CELL = re.compile(rb'<c r="([A-Z]+)([0-9]+)"( s="[0-9]+")?><f>([^<]*)</f><v ?/></c>')


def name_fonts(wb, fonts: "FontNames") -> None:
    """Every styled cell's font named, in the order the fast writer meets them (sheet by sheet,
    row by row), so the book's font and style lists come out in the same order."""
    for ws in wb.worksheets:
        cells = ws._cells
        for key in sorted(cells):
            style = cells[key]._style
            if style is not None and style.tobytes() != _PLAIN:
                named = fonts.named.get(style[0])
                style[0] = fonts(style[0]) if named is None else named


def add_cached_values(archive: FixedZip, wb, cached: dict[str, dict[tuple[int, int], object]]) -> None:
    """The sheet parts openpyxl wrote into `archive` with every formula cell's <v> holding its
    cached value: one pass over each sheet part's formula cells."""
    for ws in wb.worksheets:
        values, part = cached.get(ws.title), ws.path[1:]
        if values and part in archive.data:
            archive.data[part] = _FORMULA_CELL.sub(lambda match: _cached_cell(match, values), archive.data[part])


def _cached_cell(match, values) -> bytes:
    letters, row, style, formula = match.groups()
    key = (int(row), column_index_from_string(letters.decode()))
    cached = cached_xml(values.get(key))
    head = b'<c r="' + letters + row + b'"' + (style or b"")
    if cached is None:
        return head + b"><f>" + formula + b"</f><v /></c>"
    return (head + cached[0].encode() + b"><f>" + formula + b"</f><v>" + cached[1].encode("utf-8")
            + b"</v></c>")


# --- the fast writer ----------------------------------------------------------------------

class FontNames:
    """Font ids -> the id of the same font with its face named (`body_font` where it had none),
    each unnamed font copied once and added to the book's fonts when first met."""

    def __init__(self, fonts, body_font: str):
        self.fonts = fonts
        self.body_font = body_font
        self.named: dict[int, int] = {}

    def __call__(self, old: int) -> int:
        font = self.fonts[old]
        if font.name:
            new = old
        else:
            known = _NAMED_FONTS.get((id(font), self.body_font))
            if known is None or known[0] is not font:
                named = copy(font)
                named.name = self.body_font
                if len(_NAMED_FONTS) >= 1024:
                    _NAMED_FONTS.clear()
                known = _NAMED_FONTS[(id(font), self.body_font)] = (font, named)
            new = self.fonts.add(known[1])
        self.named[old] = new
        return new


# an unnamed font (the sheets' constants, mostly) -> its copy with a face, made once a
# process: style objects are not changed once made, and a book's list holds equal ones alike
_NAMED_FONTS: dict[tuple[int, str], tuple[object, object]] = {}


class FastExcelWriter(ExcelWriter):
    """openpyxl's ExcelWriter with each sheet written by FastSheetWriter into memory (openpyxl's
    goes through a temporary file)."""

    def __init__(self, workbook, archive, font_names: FontNames, cached):
        super().__init__(workbook, archive)
        self.dxf_ids: dict[int, tuple[object, int | None]] = {}   # differential style ids, by identity
        # a cell's style array (its bytes, before its font is named) -> ' s="its id in the book"'
        self.style_ids: dict[bytes, str] = {}
        self.font_names = font_names
        self.cached = cached

    def font_name(self, cell) -> None:
        """Name the font of a styled cell before its style's id is found."""
        style = cell._style
        named = self.font_names.named.get(style[0])
        style[0] = self.font_names(style[0]) if named is None else named

    def write_data(self):
        """openpyxl's, with the book's own defined names (~850) written as text: openpyxl builds
        and serialises an element per name, ~40 ms of a ~250 ms sweep book. One stand-in name
        takes their place while openpyxl writes the workbook part (the sheets' print titles
        after it, as openpyxl orders them); the stand-in's element is then replaced by theirs."""
        names = self.workbook.defined_names
        text = _names_xml(names.values()) if names else None
        if text is None:
            return super().write_data()
        self.workbook.defined_names = DefinedNameDict({_STAND_IN: defined_name(_STAND_IN, _STAND_IN)})
        try:
            super().write_data()
        finally:
            self.workbook.defined_names = names
        part = self._archive.data[ARC_WORKBOOK]      # a FixedZip keeps each entry until it closes
        marker = f'<definedName name="{_STAND_IN}">{_STAND_IN}</definedName>'.encode()  # i18n: not text
        if part.count(marker) != 1:
            raise RuntimeError("the workbook part's defined names are not where openpyxl 3.1 writes them")  # i18n: not text
        self._archive.data[ARC_WORKBOOK] = part.replace(marker, text.encode("utf-8"))

    def write_worksheet(self, ws):
        """openpyxl 3.1's write_worksheet for a workbook that is not write-only, the sheet
        written into memory."""
        ws._drawing = SpreadsheetDrawing()
        ws._drawing.charts = ws._charts
        ws._drawing.images = ws._images
        writer = FastSheetWriter(ws, out=io.BytesIO())
        writer.book = self
        writer.cached = self.cached.get(ws.title, {})
        writer.write()
        ws._rels = writer._rels
        self._archive.writestr(ws.path[1:], writer.read())
        self.manifest.append(ws)


class FastSheetWriter(WorksheetWriter):
    """openpyxl's worksheet writer with the cells written as text in one piece, and the
    conditional formats, data validations and header likewise (the text openpyxl's elements
    serialise to).

    Every row from the first to the last is written, an empty one as `<row r="n"></row>`, and
    the dimension spans A1 to the last cell. The book's cell styles are found by their bytes
    (openpyxl hashed each cell's style), after the cell's font is named (FontNames): the fonts
    and styles are added to the book's lists in the order openpyxl's walk adds them."""

    book: FastExcelWriter           # set by FastExcelWriter
    cached: dict                    # (row, column) -> a formula cell's cached value

    def write_formatting(self):
        """openpyxl's, with each differential style's id found once per book (by identity):
        openpyxl compared every rule's style with each one held, twice."""
        formats = self.ws.conditional_formatting
        if not isinstance(formats, Formats):
            return super().write_formatting()
        empty = DifferentialStyle()
        styles = self.ws.parent._differential_styles
        dxf_ids = self.book.dxf_ids
        for key, rules in formats.by_range.items():
            for rule in rules:
                dxf = rule.dxf
                known = dxf_ids.get(id(dxf))
                if known is None or known[0] is not dxf:
                    index = styles.add(dxf) if dxf and dxf != empty else None
                    known = dxf_ids[id(dxf)] = (dxf, index)
                if known[1] is not None:
                    rule.dxfId = known[1]
            text = _formatting_xml(key, rules)
            if text is None:
                cf = ConditionalFormatting(key)
                cf.rules = rules
                self.xf.send(cf.to_tree())
            else:
                self._write_text(text)

    def write_validations(self):
        text = _validations_xml(self.ws.data_validations) if self.ws.data_validations else None
        if text is None:
            return super().write_validations()
        self._write_text(text)

    def write_header(self):
        hf = self.ws.HeaderFooter
        text = _header_xml(hf) if hf else None
        if text is None:
            return super().write_header()
        self._write_text(text)

    def _write_text(self, text: str) -> None:
        """XML text, already serialised, written at this point of the sheet's stream (openpyxl's
        xmlfile writer hands its file over while sent True)."""
        xf = self.xf.send(True)
        xf._file(text)
        self.xf.send(None)

    def write_cols(self):
        """openpyxl's <cols>, a column with only a width written without its descriptors."""
        dims = self.ws.column_dimensions
        cols = []
        for dim in dims.values():
            fields = dim.__dict__
            width = fields.get("width")
            if fields.keys() != COLUMN_DIMENSION_FIELDS.keys() or dim._style is not None \
                    or type(width) is not float or not width or fields["hidden"] or fields["outlineLevel"] \
                    or fields["collapsed"] or fields["bestFit"]:
                return super().write_cols()
            low, high = fields["min"], fields["max"]
            if not (low and high):          # ColumnDimension.reindex
                low = high = column_index_from_string(fields["index"])
            cols.append((low, width, high))
        if not cols:
            return
        cols.sort(key=_first_of)            # by min, as openpyxl sorts them (stable)
        dims.max_outline = 0
        col = '<col width="{}" customWidth="1" min="{}" max="{}" />'  # i18n: not text
        self._write_text("<cols>" + "".join(col.format("%.16g" % width, low, high) for low, width, high in cols)
                         + "</cols>")

    def write_dimensions(self):
        cells = self.ws._cells
        if not cells:
            return super().write_dimensions()
        last_row = max(cells)[0]
        last_col = max(map(_column_of, cells))
        self.xf.send(SheetDimension(f"A1:{get_column_letter(last_col)}{last_row}").to_tree())

    def write_rows(self):
        xf = self.xf.send(True)
        with xf.element("sheetData"):
            out = _Rows(self, xf)
            out.write()
            xf._file("".join(out.parts))
        self.xf.send(None)


class _Rows:
    """One sheet's <row> and <c> elements as text."""

    def __init__(self, writer: FastSheetWriter, xf):
        self.writer, self.xf = writer, xf
        self.parts: list[str] = []

    def write(self) -> None:
        ws, book, cached = self.writer.ws, self.writer.book, self.writer.cached
        dims = ws.row_dimensions
        ids, cell_styles, letters = book.style_ids, ws.parent._cell_styles, LETTERS
        cells = ws._cells
        put = self.parts.append
        last = 0                    # the last row begun
        for key in sorted(cells):   # the keys alone: sorting (key, cell) pairs is slower
            cell = cells[key]
            r, col = key
            if r != last:
                if last:
                    put("</row>")
                for gap in range(last + 1, r + 1):
                    dim = dict.get(dims, gap)
                    put(f'<row r="{gap}">' if dim is None else _row_head(gap, dim))  # i18n: not text
                    if gap < r:
                        put("</row>")
                last, row = r, str(r)
            style = cell._style
            if cell._comment is not None or (type(cell) is XlCell and cell._hyperlink is not None):
                put = self.openpyxl_cell(cell, style is not None and style.tobytes() != _PLAIN)
                continue
            value = cell._value
            if style is None:
                if value is None:
                    continue
                styled = ""
            else:
                style_key = style.tobytes()
                styled = ids.get(style_key)
                if styled is None:
                    if style_key == _PLAIN:
                        if value is None:
                            continue
                        styled = ""
                    else:
                        book.font_name(cell)         # its font named before its id is found
                        styled = ids[style_key] = f' s="{cell_styles.add(style)}"'
            kind = cell.data_type
            if kind == "f":
                if type(value) is str:
                    text = _escape_text(value[1:])
                    known = cached_xml(cached.get(key))
                    if known is None:
                        put(f'<c r="{letters[col]}{row}"{styled}><f>{text}</f><v /></c>')  # not formula text
                    else:
                        put(f'<c r="{letters[col]}{row}"{styled}{known[0]}><f>{text}</f>'  # not formula text
                            f'<v>{known[1]}</v></c>')
                    continue
            elif kind == "s":
                if type(value) is str and value and (
                        not (value[0].isspace() or value[-1].isspace()) or not value.strip()):
                    put(f'<c r="{letters[col]}{row}"{styled} t="inlineStr"><is><t>{_escape_text(value)}</t></is></c>')  # not formula text
                    continue
            elif kind == "n":
                if value is None:
                    put(f'<c r="{letters[col]}{row}"{styled} t="n" />')
                    continue
                kind_of_value = type(value)
                if kind_of_value is int or kind_of_value is float and math.isfinite(value):
                    put(f'<c r="{letters[col]}{row}"{styled} t="n"><v>{"%.16g" % value}</v></c>')  # not formula text
                    continue
            put = self.openpyxl_cell(cell, bool(styled))
        if last:
            put("</row>")
        for r in sorted(r for r in dims.keys() if r > last):   # rows with only a height
            put(_row_head(r, dims[r]) + "</row>")

    def openpyxl_cell(self, cell, styled: bool):
        """A cell as openpyxl's write_row writes it (the text so far written first); returns the
        new `put`."""
        self.xf._file("".join(self.parts))
        self.parts = []
        if cell._comment is not None:
            self.writer.ws._comments.append(CommentRecord.from_cell(cell))
        elif cell._value is None and not styled:
            return self.parts.append
        if styled:
            self.writer.book.font_name(cell)
        write_cell(self.xf, self.writer.ws, cell, styled)
        return self.parts.append


_STAND_IN = "trainbudget_defined_names"


def _names_xml(names) -> str | None:
    """The book's defined names as openpyxl's DefinedName.to_tree and ElementTree write them;
    None when one is not a plain workbook-scope name (Name, made by cells.defined_name)."""
    parts = []
    for name in names:
        fields = name.__dict__
        if type(name) is not Name or any(fields.get(key) is not None for key in NAME_OTHERS) \
                or type(name.attr_text) is not str or name.name in RESERVED:
            return None
        parts.append(f'<definedName name="{_escape_attribute(name.name)}">'  # i18n: not text; not formula text
                     f"{_escape_text(name.attr_text)}</definedName>")
    return "".join(parts)


def _header_xml(hf: HeaderFooter) -> str | None:
    """A sheet's HeaderFooter as its to_tree and HeaderFooterItem.__str__ write it, for items of
    plain text parts (no font, size, colour or &[...] code); None for anything else."""
    if any(getattr(hf, name) is not None for name in HeaderFooter.__attrs__):
        return None
    out = ["<headerFooter>"]
    for name in HeaderFooter.__elements__:
        item = getattr(hf, name)
        if type(item) is not HeaderFooterItem:
            return None
        text = []
        for key, part in zip("LCR", (item.left, item.center, item.right)):
            if type(part) is not _HeaderFooterPart or part.font or part.size or part.color:
                return None
            if part.text is not None:
                text.append(f"&{key}{part.text}")  # not formula text
        text = "".join(text)
        if "&[" in text:                # a code HeaderFooterItem.__str__ rewrites
            return None
        text = header_escape(text)
        out.append(f"<{name}>{_escape_text(text)}</{name}>" if text else f"<{name} />")  # not formula text
    out.append("</headerFooter>")
    return "".join(out)


_PLAIN = StyleArray().tobytes()     # a style array of a cell without a style
_column_of = itemgetter(1)           # a cell key's column
_first_of = itemgetter(0)
# a row dimension's fields besides its height and index, as row_dimension makes them
_row_others = itemgetter(*(k for k in ROW_DIMENSION_FIELDS if k not in ("ht", "index")))
_ROW_OTHERS = _row_others(ROW_DIMENSION_FIELDS)


def _row_head(r: int, dim) -> str:
    """A row's start tag with its dimension's attributes, as openpyxl writes it (a row with only
    a height, the common case, without walking the dimension's fields)."""
    fields = dim.__dict__
    if fields.keys() == ROW_DIMENSION_FIELDS.keys() and dim._style is None and type(fields["ht"]) is float \
            and _row_others(fields) == _ROW_OTHERS:
        return f'<row r="{r}" ht="{"%.16g" % fields["ht"]}" customHeight="1">'  # i18n: not text
    return f'<row r="{r}"' + "".join(f' {k}="{_escape_attribute(v)}"' for k, v in dim) + ">"  # i18n: not text; not formula text


def _formatting_xml(sqref: str, rules: list[Rule]) -> str | None:
    """A range's ConditionalFormatting as openpyxl's to_tree writes it, for rules of a type, a
    priority, a differential style and formulas; None for anything else."""
    parts = [f'<conditionalFormatting sqref="{_escape_attribute(sqref)}">']  # i18n: not text
    for rule in rules:
        fields = rule.__dict__
        others = _other_rule_fields(fields) if fields.keys() >= _OTHER_RULE_KEYS else None
        if (others != _NO_OTHER_RULE_FIELDS and any(fields.get(name) is not None for name in _OTHER_RULE_FIELDS)) \
                or not rule.formula \
                or type(rule.priority) is not int or not isinstance(rule.dxfId, (int, type(None))):
            return None
        parts.append(f'<cfRule type="{_escape_attribute(rule.type)}" priority="{rule.priority}"'  # i18n: not text
                     + ("" if rule.dxfId is None else f' dxfId="{rule.dxfId}"') + ">")
        for formula in rule.formula:
            if type(formula) is not str or not formula:
                return None
            parts.append(f"<formula>{_escape_text(formula)}</formula>")  # not formula text
        parts.append("</cfRule>")
    if not rules:
        return None
    parts.append("</conditionalFormatting>")
    return "".join(parts)


# Rule fields _formatting_xml does not write (any of them set: openpyxl writes the rule)
_OTHER_RULE_FIELDS = ("rank", "equalAverage", "operator", "aboveAverage", "stdDev", "stopIfTrue", "timePeriod",
                      "text", "percent", "bottom", "colorScale", "dataBar", "iconSet")
_OTHER_RULE_KEYS = frozenset(_OTHER_RULE_FIELDS)
_other_rule_fields = itemgetter(*_OTHER_RULE_FIELDS)
_NO_OTHER_RULE_FIELDS = (None,) * len(_OTHER_RULE_FIELDS)
_VALIDATION_FIELDS = ("showDropDown", "showInputMessage", "showErrorMessage", "allowBlank", "errorTitle", "error",
                      "promptTitle", "prompt", "type", "errorStyle", "imeMode", "operator")


def _validations_xml(dvs) -> str | None:
    """A sheet's DataValidationList as openpyxl's to_tree writes it (validations without cells
    left out); None when it is not the common case."""
    if dvs.disablePrompts is not None or dvs.xWindow is not None or dvs.yWindow is not None:
        return None
    shown = [dv for dv in dvs.dataValidation if dv.sqref]
    if not shown:
        return None
    parts = [f'<dataValidations count="{len(shown)}">']  # i18n: not text
    for dv in shown:
        known = _VALIDATION_XML.get(id(dv))
        if known is None or known[0] is not dv:
            if len(_VALIDATION_XML) >= 16384:
                _VALIDATION_XML.clear()
            known = _VALIDATION_XML[id(dv)] = (dv, _validation_xml(dv))
        if known[1] is None:
            return None
        parts.append(known[1])
    parts.append("</dataValidations>")
    return "".join(parts)


# DataValidation -> its XML: the sheets' validation objects serve every book of a process and
# are not changed once made, so each is written out once
_VALIDATION_XML: dict[int, tuple[object, str | None]] = {}


def _validation_xml(dv) -> str | None:
    """One DataValidation as openpyxl's to_tree writes it, or None when it is not the common case."""
    parts = [f'<dataValidation sqref="{_escape_attribute(str(dv.sqref))}"']  # i18n: not text
    for name in _VALIDATION_FIELDS:
        value = getattr(dv, name)
        if value is None:
            continue
        if type(value) is bool:
            value = "1" if value else "0"
        elif type(value) is not str:
            return None
        parts.append(f' {name}="{_escape_attribute(value)}"')  # not formula text
    formulas = [(tag, getattr(dv, tag)) for tag in ("formula1", "formula2")]
    formulas = [(tag, text) for tag, text in formulas if text is not None]
    if not formulas:
        return "".join(parts) + " />"
    parts.append(">")
    for tag, text in formulas:
        stripped = text.strip() if type(text) is str and text else None
        if stripped is None or (stripped and text != stripped):     # empty, or openpyxl adds xml:space
            return None
        parts.append(f"<{tag}>{_escape_text(text)}</{tag}>")  # not formula text
    parts.append("</dataValidation>")
    return "".join(parts)
