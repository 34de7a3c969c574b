"""Plan → .xlsx workbook in which every derived number is a live formula.

Layout follows what finance reviewers expect of a model workbook: a Summary cover, an Inputs
sheet (label | value | unit | source | note | name, blue on yellow, validated), the Catalog the
lookups read, one calculation sheet per stage, a Checks sheet where 0 means fine, and a change
log. Formulas read workbook-scope defined names (`=gpu_hours*price_per_gpu_hour`).

`write_workbook` returns the file's bytes plus, for every formula cell, the value the Python
plan computed for it, so tests can hold the spreadsheet engine's results against the plan.
"""

from __future__ import annotations

from array import array as _Array
import io
import math
import re
from copy import copy
from dataclasses import dataclass, field, replace
from operator import itemgetter
from typing import Callable
from xml.etree.ElementTree import _escape_attrib, _escape_cdata

from openpyxl import Workbook
from openpyxl.cell._writer import write_cell
from openpyxl.cell.cell import ERROR_CODES, ILLEGAL_CHARACTERS_RE, MergedCell
from openpyxl.cell.cell import Cell as XlCell
from openpyxl.comments.comment_sheet import CommentRecord
from openpyxl.compat import safe_string
from openpyxl.drawing.spreadsheet_drawing import SpreadsheetDrawing
from openpyxl.formatting.formatting import ConditionalFormatting, ConditionalFormattingList
from openpyxl.formatting.rule import FormulaRule, Rule
from openpyxl.styles import Alignment, Border, Font, NamedStyle, PatternFill, Protection, Side
from openpyxl.styles.cell_style import StyleArray
from openpyxl.styles.differential import DifferentialStyle
from openpyxl.styles.numbers import BUILTIN_FORMATS_MAX_SIZE, BUILTIN_FORMATS_REVERSE
from openpyxl.styles.stylesheet import write_stylesheet
from openpyxl.utils import column_index_from_string, get_column_letter, range_boundaries
from openpyxl.utils.cell import coordinate_from_string
from openpyxl.utils.indexed_list import IndexedList
from openpyxl.utils.escape import escape as header_escape
from openpyxl.utils.units import DEFAULT_COLUMN_WIDTH
from openpyxl.workbook._writer import WorkbookWriter
from openpyxl.workbook.defined_name import RESERVED, DefinedName, DefinedNameList
from openpyxl.worksheet._writer import WorksheetWriter
from openpyxl.worksheet.cell_range import MultiCellRange
from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.dimensions import ColumnDimension, RowDimension, SheetDimension, SheetFormatProperties
from openpyxl.worksheet.header_footer import HeaderFooter, HeaderFooterItem, _HeaderFooterPart
from openpyxl.worksheet.page import PageMargins, PrintOptions, PrintPageSetup
from openpyxl.worksheet.pagebreak import Break
from openpyxl.worksheet.worksheet import Worksheet
from openpyxl.writer.excel import ExcelWriter
from openpyxl.writer.theme import theme_xml
from openpyxl.xml.constants import ARC_APP, ARC_CORE, ARC_ROOT_RELS, ARC_STYLE, ARC_THEME, ARC_WORKBOOK, ARC_WORKBOOK_RELS
from openpyxl.xml.functions import Element, tostring

from .. import __version__
from ..core.text import display_width, has_wide, wrapped_lines  # noqa: F401 (display_width: tests measure with it)
from ..formula.expr import (AND, FALSE, IF, ISERROR, ISNUMBER, NOT, OR, ROUND, TRUE, YEAR, Cell, Expr, Num, Ref,
                            Text, compile_items, lift)
from ..core.i18n import DEFAULT_LANG, Messages, text
from ..model.lineitems import InputDef, Item
from ..model.model import build_model
from ..model.model import ACCELERATOR_TABLE, AFTER_SUBTOTAL, ARCHITECTURE_TABLE, COST_LINES, FX_TABLE, MEMO_LINES
from ..core.dates import from_serial
from ..plan.plan import Plan, scenario_digest  # noqa: F401 (scenario_digest: the name tests use)
from ..xlsx.reproducible import FixedZip, normalise_xlsx  # noqa: F401 (normalise_xlsx: the name scripts measured)

CALC_SHEETS = ("Memory", "Parallelism", "Compute", "Schedule", "Timeline", "Cost", "Checks")
CALC_WIDTHS = (46, 16, 16, 26, 48)      # a calculation sheet's columns: item, value, unit, name, note or fix
GANTT_COLOURS = ("9DC3E6", "A9D18E", "FFD966", "F4B183", "C9C9C9", "B4A7D6")
DATE_FORMAT = "yyyy-mm-dd"
CANDIDATE_KEYS = ("dp_size", "memory_per_gpu_gb", "check_memory_fits", "bubble_fraction",
                  "comm_fraction", "layout_efficiency", "train_days", "total_cost")
# Sheet tab names are identifiers (the importer and cross-sheet references use them); what a
# sheet shows as its name is workbook.sheets.<slug>.
CANDIDATES_SHEET, CHANGE_LOG_SHEET = "Layout candidates", "Change log"  # i18n: not text
REFERENCE_SHEET = "Reference runs"  # i18n: not text (a tab id: the published runs near the plan)
TAB_COLOURS = {"Summary": "1F4E79", "Inputs": "FFC000", "Catalog": "A6A6A6", "Checks": "C00000", "Glossary": "7F7F7F",
               CHANGE_LOG_SHEET: "7F7F7F"}
CALC_TAB = "70AD47"
INPUT_FILL = PatternFill("solid", fgColor="FFF2CC")
INPUT_FONT = Font(name="Calibri", color="0000FF")
HEADER_FILL = PatternFill("solid", fgColor="D9E1F2")
SECTION_FONT = Font(name="Calibri", bold=True, color="1F4E79")
# Conditional-format fills: Excel paints a dxf fill from its bgColor, LibreOffice from fgColor.
OK_RULE_FILL = PatternFill("solid", start_color="C6EFCE", end_color="C6EFCE")
BAD_RULE_FILL = PatternFill("solid", start_color="FFC7CE", end_color="FFC7CE")
WARN_RULE_FILL = PatternFill("solid", start_color="FFEB9C", end_color="FFEB9C")
CHANGED_FILL = PatternFill("solid", start_color="F8CBAD", end_color="F8CBAD")
SPARE_ROWS = 10       # unlocked blank rows inside each growable table
INPUTS_WIDTHS = [30, 18, 13, 30, 24, 19, 17, 7, 7]   # H, I: the candidates' CP and EP, the stages' PP and CP
INPUT_COLUMNS = len(INPUTS_WIDTHS)
# The Inputs sheet's tables of rows, by their columns' name prefix: the defined name of the
# cells below each, the spare rows inside it and the hint on its first spare row.
RANGE_TABLES = {"stage": ("stage_rows_below", 3, "workbook.inputs.spare_stages"),
                "staff": ("staff_rows_below", SPARE_ROWS, "workbook.inputs.spare_roles")}
BELOW_ROWS = 5        # rows under a table watched by check_tables_closed
THIN = Side(style="thin", color="BFBFBF")
SPARE_ROW_TABLES = (ACCELERATOR_TABLE, FX_TABLE, ARCHITECTURE_TABLE)   # growable: workbook.catalog.spare_rows.<table>
TIMELINE_PRINT_SCALE = 75   # the week grid prints several pages wide; A:C repeat on each
WIDE_SHEET_UNITS = 200      # wider than this (column width units) prints two pages wide
CHECK_FONT = Font(name="Calibri", color="C00000", bold=True)
WARNING_FONT = Font(name="Calibri", color="9C5700")
BODY_FONT = "Calibri"
NOTE_FONT = Font(name=BODY_FONT, italic=True, color="595959")
# Styles many cells share, made once: the workbook's style lists find a style they already hold
# by its identity (_SameStyles), without hashing and comparing it field by field.
NAME_FONT = Font(color="7F7F7F")           # a row's defined name beside it
BOLD_FONT = Font(bold=True)
WRAP_TOP = Alignment(wrap_text=True, vertical="top")
TOP_ALIGNMENT = Alignment(vertical="top")
TITLE_FONT = Font(bold=True, size=14)      # a sheet's title
COVER_FONT = Font(bold=True, size=16)      # the Summary's
SUBTITLE_FONT = Font(italic=True, color="595959")
GREY_FONT = Font(color="595959")
HEADING_FONT = Font(bold=True, color="1F4E79")
WARNING_HEAD_FONT = Font(bold=True, color="9C5700")
UNLOCKED = Protection(locked=False)
BOTTOM_BORDER = Border(bottom=THIN)


@dataclass
class WorkbookResult:
    data: bytes
    expected: dict[str, object] = field(default_factory=dict)   # "Sheet!A1" -> plan value
    names: dict[str, str] = field(default_factory=dict)         # defined name -> "Sheet!A1"


def number_format(unit: str, kind: str = "number") -> str | None:
    """The number format of a figure in `unit` (a pure function: remembered per unit and kind)."""
    try:
        return _FORMATS[(unit, kind)]
    except KeyError:
        fmt = _FORMATS[(unit, kind)] = _number_format(unit, kind)
        return fmt


_FORMATS: dict[tuple[str, str], str | None] = {}


def _number_format(unit: str, kind: str) -> str | None:
    if kind == "date" or unit == "date":
        return DATE_FORMAT
    if kind == "fraction" or unit.startswith("fraction"):
        return "0.0%"
    if unit == "per GPU-hour":
        return "0.000E+00"
    if unit in {"hours", "weeks"}:
        return "#,##0.00"
    if unit in {"GB/s", "Gbit/s"}:
        return "#,##0.0###"
    if unit in {"text", "catalog id", "mode", "yes/no"}:
        return None
    if unit in {"FLOP", "GPU-s", "FLOP/s"}:
        return "0.00E+00"
    if unit == "s":
        return "#,##0.00"
    if unit.startswith("currency/GB") or unit in {"kg CO2e/kWh", "currency/kWh", "rate"}:
        return "#,##0.000#"
    if unit in {"×", "kW", "kW/node", "kWh", "per year", "years", "fraction/year"}:
        return "#,##0.00##"
    if unit in {"tier", "ISO 4217 code"}:
        return None
    if unit.startswith("currency/GPU") or unit == "currency/month":
        return "#,##0.00"
    if unit in {"GB", "days", "TFLOPS", "PFLOPS", "GB-months", "bytes/parameter", "person-months"}:
        return "#,##0.0"
    if unit in {"flag", "checks", "stage"}:
        return "0"
    if unit == "months":       # a computed project length is 8.64 months, not 8.641432526
        return "#,##0.0#"
    if unit == "people" or unit.startswith("FLOP/"):
        return "General"
    return "#,##0"


def _styles(wb: Workbook) -> None:
    inp = NamedStyle("Input", font=INPUT_FONT, fill=INPUT_FILL,
                     border=Border(left=THIN, right=THIN, top=THIN, bottom=THIN),
                     protection=Protection(locked=False))
    calc = NamedStyle("Calculation", border=Border(bottom=THIN))
    head = NamedStyle("Header", font=Font(name="Calibri", bold=True), fill=HEADER_FILL,
                      alignment=Alignment(vertical="center", wrap_text=True))
    for style in (inp, calc, head):
        wb.add_named_style(style)


def put_text(cell, text: str) -> None:
    """Write text that must stay text, whatever it starts with: quote-prefixed when a spreadsheet
    could read it as a formula, judged as the scenario's text policy judges (after blanks, with
    full-width forms folded); text no workbook can hold is a bug here, never a corrupt file."""
    lead = _TEXT_LEADS.get(text)
    if lead is None:
        lead = _text_lead(cell, text)
    if len(text) <= _MAX_TEXT:
        # what `cell.value = text` stores (the checks above refuse every character openpyxl
        # refuses), then typed as text whatever it looks like
        cell._value = text
    else:
        cell.value = text
    cell.data_type = "s"
    if lead:
        cell.quotePrefix = True


_MAX_TEXT = 32767              # openpyxl keeps this many characters of a cell's text
_TEXT_LEADS: dict[str, bool] = {}   # text put_text has judged -> whether it starts a formula


def _text_lead(cell, text: str) -> bool:
    """Whether `text` would start a formula (after the checks put_text makes), remembered:
    both judgements are pure functions of the text, and a book writes many texts often."""
    from ..inputs.scenario import character_problem, formula_lead

    problem = character_problem(text)
    if problem:
        raise ValueError(f"text for {cell.coordinate} {problem[0]}: {text[:60]!r}")  # i18n: not text
    lead = bool(formula_lead(text))
    if len(_TEXT_LEADS) >= 65536:       # a long run's one-off texts: start afresh
        _TEXT_LEADS.clear()
    _TEXT_LEADS[text] = lead
    return lead


_NEW_CELL = XlCell.__new__
_STYLE_COPY = _Array.__new__     # _STYLE_COPY(StyleArray, "i", a) is StyleArray(a) without its Python __new__


def _new_cell(ws, row: int, column: int):
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


def _bind(cell, value) -> None:
    """`cell.value = value`: the common types typed here as openpyxl types them (text it
    would refuse, or cut, goes through openpyxl)."""
    kind = type(value)
    if kind is str:
        if len(value) <= _MAX_TEXT and ILLEGAL_CHARACTERS_RE.search(value) is None:
            cell._value = value
            cell.data_type = ("f" if len(value) > 1 and value[0] == "=" else
                              "e" if value in ERROR_CODES else "s")
            return
    elif kind is float or kind is int or value is None:
        cell._value = value
        cell.data_type = "n"
        return
    cell.value = value


class _Sheet(Worksheet):
    """openpyxl's worksheet with its cells made and filled without the per-call checks of
    Worksheet.cell (every bundled scenario's book is byte-identical): cells are openpyxl's."""

    def cell(self, row, column, value=None):
        cell = self._cells.get((row, column))
        if cell is None:
            cell = _new_cell(self, row, column)
        if value is not None:
            _bind(cell, value)
        return cell

    def _get_cell(self, row, column):
        cell = self._cells.get((row, column))
        return _new_cell(self, row, column) if cell is None else cell

    def _setup(self):
        super()._setup()
        self.conditional_formatting = _Formats()

    def _clean_merge_range(self, mcr):
        """openpyxl's, for a range of one row: the cells after the first become MergedCells and
        take the first one's borders and protection (MergedCellRange.format). The cells between
        the second and the last start alike and go through the same steps, so openpyxl runs
        them on the second and the others copy its style: the same styles, added to the book's
        lists in the same order. The steps' outcome depends only on the first cell's style (the
        others start empty), so it is remembered per book under that style: the styles they add
        are in the lists from the first time."""
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
    return _dimension(ws, ws.column_dimensions, letter, ColumnDimension, _COLUMN_DIMENSION_FIELDS)


def row_dimension(ws, row: int):
    """`ws.row_dimensions[row]`, a missing one made as openpyxl's factory makes it (without its
    descriptors' checks: the same attributes)."""
    return _dimension(ws, ws.row_dimensions, row, RowDimension, _ROW_DIMENSION_FIELDS)


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


_COLUMN_DIMENSION_FIELDS = {"width": DEFAULT_COLUMN_WIDTH, "min": None, "max": None, "bestFit": False,
                            "collapsed": False, "index": "A", "hidden": False, "outlineLevel": 0}
_ROW_DIMENSION_FIELDS = {"ht": None, "thickBot": False, "thickTop": False, "index": 0,
                         "hidden": False, "outlineLevel": 0, "collapsed": False}


def _style_id(cell, key: str) -> int:
    """A cell's font, alignment, ... id in the workbook's style lists (0, the default, when the
    cell has no style yet): what `cell.font` reads, without building a proxy."""
    style = cell._style
    return getattr(style, key) if style is not None else 0


def set_font(cell, font: Font) -> None:
    """`cell.font = font` (openpyxl's StyleDescriptor.__set__), the book's font list asked
    directly (by identity: _SameStyles)."""
    style = cell._style
    if style is None:
        style = cell._style = StyleArray()
    style[_FONT_ID] = cell.parent.parent._fonts.add(font)


def _set_style_id(cell, key: str, index: int) -> None:
    """What `cell.alignment = x` does once x is in the workbook's list at `index`."""
    if cell._style is None:
        cell._style = StyleArray()
    setattr(cell._style, key, index)


_WIDTHS: dict[str, tuple[int, bool]] = {}


def _text_width(text: str) -> tuple[int, bool]:
    """(display_width, has_wide) of a text, remembered: a book measures the same labels often."""
    known = _WIDTHS.get(text)
    if known is None:
        if len(_WIDTHS) >= 65536:
            _WIDTHS.clear()
        known = _WIDTHS[text] = (display_width(text), has_wide(text))
    return known


_ALIGNMENT = 5          # a StyleArray's alignmentId
_FONT_ID = 0            # and its fontId


def _alignment_look(align: Alignment) -> tuple[bool, bool]:
    """(turned, wrapped) of an alignment: what wrap_long_text reads of it."""
    return bool(align.text_rotation), bool(align.wrap_text)


def text_height(text: str, width: float) -> float:
    """The height in points of a row whose wrapped `text` fills a column `width` characters wide."""
    return (line_height(True) * wrapped_lines(text, width / 1.1) if has_wide(text)
            else 15 * (1 + int(len(text) * 1.1 // width)))


def line_height(cjk: bool) -> int:
    """Points per line of wrapped 11-point text: a CJK face (Noto Sans CJK) sets its lines taller."""
    return 17 if cjk else 15


_FIELD = re.compile(r"\{(\w+)\}")


def _parts(template: str, figures: dict) -> list:
    """A catalog template split at its named placeholders: text and the figures, in the
    translation's order."""
    pieces = _FIELD.split(template)
    return [figures[p] if k % 2 else p for k, p in enumerate(pieces) if k % 2 or p]


def _joined(parts: list) -> Expr:
    """Text and expressions joined with &, adjacent text as one literal."""
    merged: list = []
    for part in parts:
        if isinstance(part, str) and merged and isinstance(merged[-1], str):
            merged[-1] += part
        else:
            merged.append(part)
    out = lift(merged[0]) if merged else Text("")
    for part in merged[1:]:
        out = out.concat(part)
    return out


def text_with_currency(pieces: list[str], chunk: int = 250) -> Expr:
    """Text pieces joined by the live currency cell, as one formula; each piece cut to at most
    `chunk` characters (Excel refuses a text constant of more than 255 in a formula)."""
    out: Expr | None = None
    for k, piece in enumerate(pieces):
        parts = [piece[i:i + chunk] for i in range(0, len(piece), chunk)]
        if k:
            parts.insert(0, Ref("currency"))
        for part in parts:
            out = lift(part) if out is None else out.concat(part)
    return out if out is not None else lift("")


def live_text(template: str, **figures) -> Expr:
    """A catalog sentence as a live formula: its text with the named figures (expressions over
    the workbook's cells) where its placeholders stand, so a translation may reorder them."""
    return _joined(_parts(template, figures))


def plural_text(count: Expr, one: str, other: str, **figures) -> Expr:
    """The sentence for a count: `one` when it is 1, `other` otherwise, both catalog templates
    with the same placeholders (`count` among the figures as {count}). The parts the two share
    at the start, and the words they end on, stay outside the IF."""
    figures = {"count": count, **figures}
    a, b = _parts(one, figures), _parts(other, figures)
    if a == b:
        return _joined(a)
    same = lambda x, y: x == y if isinstance(x, str) and isinstance(y, str) else x is y  # noqa: E731
    head = 0
    while head < min(len(a), len(b)) and same(a[head], b[head]):
        head += 1
    a, b, prefix = a[head:], b[head:], a[:head]
    tail = ""
    if a and b and isinstance(a[-1], str) and isinstance(b[-1], str):
        n = 0
        while n < min(len(a[-1]), len(b[-1])) and a[-1][-1 - n] == b[-1][-1 - n]:
            n += 1
        if n:
            tail = a[-1][len(a[-1]) - n:]
            a, b = a[:-1] + [a[-1][:-n]], b[:-1] + [b[-1][:-n]]
    choice = IF(count.eq(1), _joined([p for p in a if p != ""]), _joined([p for p in b if p != ""]))
    return _joined([*prefix, choice, *([tail] if tail else [])])


def excel(expr: Expr, resolve: Callable[[str], str] = str) -> str:
    """`expr.excel(resolve)` for an expression of the model (kept for the process): its
    rendering is a pure function of the tree and of what the (pure) `resolve` gives for each
    name it asks, so it is rendered once with a marker where each name goes, and then the names'
    texts are put in those places (a format string)."""
    known = _TEMPLATES.get(id(expr))
    if known is None or known[0] is not expr:
        known = _template(expr)
        if known is None:
            return expr.excel(resolve)
    if resolve is str:
        return known[3]
    return known[1].format(*map(resolve, known[2]))


class Resolved(dict):
    """A resolver's answers, remembered: `Resolved(resolve).__getitem__` gives what `resolve`
    gives, asking it once per name (for a resolver that is a pure function of the name, as
    the workbook's column and row resolvers are)."""

    __slots__ = ("resolve",)

    def __init__(self, resolve: Callable[[str], str]):
        super().__init__()
        self.resolve = resolve

    def __missing__(self, name: str) -> str:
        text = self[name] = self.resolve(name)
        return text


_TEMPLATES: dict[int, tuple] = {}   # id(expr) -> (expr, its format string, the names, its text)
_MARKED = re.compile("\x00([0-9]+)\x01")   # no formula holds these: put_text refuses them in a cell


def _template(expr: Expr) -> tuple | None:
    """The expression rendered with a marker for each name it resolves (in the text's order,
    which is not always the order it asks in); None when its text holds a marker or does not
    read back as it renders."""
    asked: list[str] = []

    def mark(name: str) -> str:
        asked.append(name)
        return f"\x00{len(asked) - 1}\x01"

    pieces = _MARKED.split(expr.excel(mark))
    parts, names = pieces[0::2], [asked[int(k)] for k in pieces[1::2]]
    plain = expr.excel()
    if sorted(names) != sorted(asked) or "".join(p for pair in zip(parts, names + [""]) for p in pair) != plain \
            or "\x00" in plain or "\x01" in plain:
        return None
    if len(_TEMPLATES) >= 16384:        # expressions a long run made and dropped: start afresh
        _TEMPLATES.clear()
    fmt = "{}".join(part.replace("{", "{{").replace("}", "}}") for part in parts)
    known = _TEMPLATES[id(expr)] = (expr, fmt, names, plain)
    return known


_RULE_STYLES: dict[int, tuple[PatternFill, DifferentialStyle]] = {}


def formula_rule(expr: Expr, fill: PatternFill) -> Rule:
    """openpyxl's FormulaRule(formula=[expr rendered], fill=fill), its differential style shared by
    every rule with that fill (a module constant), so that writing the book finds the style's
    id once (_FastSheetWriter.write_formatting) rather than comparing it with each one held."""
    rule = _NEW_RULE(Rule)           # Rule(type="expression", formula=[formula]), made without its checks
    rule.__dict__.update(_RULE_FIELDS)
    rule.__dict__["formula"] = [excel(expr)]
    known = _RULE_STYLES.get(id(fill))
    if known is None or known[0] is not fill:
        known = _RULE_STYLES[id(fill)] = (fill, DifferentialStyle(fill=fill))
    rule.dxf = known[1]
    return rule


_NEW_RULE = Rule.__new__
_RULE_FIELDS = {k: v for k, v in Rule(type="expression", formula=["x"]).__dict__.items() if k != "formula"}


class _Formats(ConditionalFormattingList):
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


class _Name(DefinedName):
    """A workbook-scope defined name (_defined_name), written as openpyxl's to_tree writes it
    without walking its fields' descriptors."""

    def to_tree(self, tagname=None, idx=None, namespace=None):
        fields = self.__dict__
        if tagname not in (None, self.tagname) or namespace is not None \
                or any(fields.get(key) is not None for key in _NAME_OTHERS):
            return super().to_tree(tagname, idx, namespace)
        name = fields["name"]
        node = Element(self.tagname, {"name": "_xlnm." + name if name in RESERVED else name})
        node.text = safe_string(fields["attr_text"])
        return node


_NEW_NAME = _Name.__new__
_NAME_FIELDS = dict(DefinedName("x", attr_text="x").__dict__)
_NAME_OTHERS = [key for key in DefinedName.__attrs__ if key not in ("name", "attr_text")]
_name_others = itemgetter(*_NAME_OTHERS)      # a _Name's other fields, all None for a plain name
_NO_OTHERS = (None,) * len(_NAME_OTHERS)


def _defined_name(name: str, text: str) -> DefinedName:
    """DefinedName(name, attr_text=text), made without its descriptors' checks."""
    node = _NEW_NAME(_Name)
    fields = node.__dict__
    fields.update(_NAME_FIELDS)
    fields["name"] = name
    fields["attr_text"] = text
    return node


_VALIDATIONS: dict[tuple[str, str, str], tuple[InputDef, DataValidation]] = {}   # _Writer.validate's
_NEW_VALIDATION = DataValidation.__new__
_VALIDATION_DEFAULTS = {k: v for k, v in DataValidation().__dict__.items() if k != "sqref"}


def _data_validation(**fields) -> DataValidation:
    """DataValidation(**fields): the defaults copied, the fields given set through openpyxl."""
    dv = _NEW_VALIDATION(DataValidation)
    dv.__dict__.update(_VALIDATION_DEFAULTS)
    dv.__dict__["sqref"] = MultiCellRange()
    for key, value in fields.items():
        setattr(dv, key, value)
    return dv


class _Values(dict):
    """A compiled formula's values: the plan's, read through (a missing name is looked up in
    `base`); what it writes stays here."""

    __slots__ = ("base",)

    def __missing__(self, key):
        return self.base[key]


class _SameStyles(IndexedList):
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


class _Writer:
    def __init__(self, plan: Plan):
        self.plan = plan
        self.m = Messages(plan.lang)
        self.model = plan.model or build_model(plan.lang)
        self.currency = plan.scenario.prices.currency
        # The generation version: the scenario's content digest, never a clock, so rebuilds of
        # one scenario stay byte-identical.
        self.digest = scenario_digest(plan)
        self.wb = Workbook()
        for key in ("_fonts", "_fills", "_borders", "_alignments", "_protections"):
            setattr(self.wb, key, _SameStyles(getattr(self.wb, key)))
        self.named_arrays: dict[str, StyleArray] = {}   # named style -> the cell style it sets
        self.format_arrays: dict[tuple[str, str | None], StyleArray] = {}  # and with a number format
        self.format_ids: dict[str, int] = {}            # number format -> its id in the book
        self.calculation_arrays: dict[str | None, StyleArray] = {}   # formula(): format -> its style
        self.result = WorkbookResult(b"")
        self.candidate_cells: list[dict[str, Cell]] = []   # per candidate: layout input -> Inputs cell
        self.wrap_top: int | None = None          # style ids wrap_long_text reuses (speed)
        self.top_aligned: dict[int, int] = {}
        self.alignment_looks: dict[int, tuple[bool, bool]] = {}   # alignment id -> _alignment_look
        self.font_sizes: dict[int, float] = {}    # font id -> its size over 11 points
        self.unit_formulas: dict[tuple[str, str], tuple] = {}    # unit_cell's (formula or None, value)
        self.table_cells: dict[tuple[str, int], str] = {}          # stages.table_cell's answers
        _styles(self.wb)
        self.wb.remove(self.wb.active)
        sheets = ["Summary", "Inputs", "Catalog", *CALC_SHEETS, CHANGE_LOG_SHEET]
        if plan.layout is not None and plan.layout.candidates:
            sheets.insert(sheets.index("Parallelism") + 1, CANDIDATES_SHEET)
        sheets.insert(sheets.index("Cost") + 1, "Cashflow")
        sheets.insert(sheets.index("Compute") + 1, "Stages")
        sheets.insert(sheets.index("Checks"), REFERENCE_SHEET)
        sheets.insert(sheets.index(CHANGE_LOG_SHEET), "Glossary")
        sheets.insert(sheets.index("Checks"), "Sensitivity")
        if plan.options:
            sheets.insert(1, "Compare")
        for title in sheets:
            ws = _Sheet(parent=self.wb, title=title)     # what create_sheet makes, cells made faster
            self.wb._add_sheet(ws)
            ws.sheet_properties.tabColor = TAB_COLOURS.get(title, CALC_TAB)

    # --- helpers ---------------------------------------------------------------------
    def sheet_name(self, title: str) -> str:
        """What a sheet calls itself in its heading and print header (its tab name is an id)."""
        return self.m(f"workbook.sheets.{title.lower().replace(' ', '_')}")

    def unit_display(self, unit: str) -> str:
        """A unit id as the catalog shows it; its `currency` token is left for the caller."""
        return self.m(f"units.{unit}")

    def unit_text(self, unit: str) -> str:
        """A unit where no formula can go (input messages): "currency" stays a word, since the
        currency is the live value of the `currency` input; cells use `unit_cell`."""
        if unit == "text":
            return ""
        return self.unit_display(unit).replace("currency", self.m("workbook.validation.currency"))

    def with_unit(self, label: str, unit: str) -> str:
        """A heading "label (unit)" as static text (the Catalog's columns name no currency)."""
        return self.m("workbook.with_unit", label=label, unit=self.unit_display(unit))

    def live(self, ws, row: int, col: int, expr: Expr, fmt: str | None = None):
        """A formula cell from an expression, its expected value computed by the same compiler
        the planner uses (so text formulas record exactly the text the spreadsheet shows)."""
        return self.formula(ws, row, col, expr, self.value_of(expr), fmt)

    def value_of(self, expr: Expr):
        """What the compiled expression gives over the plan's values (read through, not copied:
        the compiled function reads its names and writes only its own)."""
        values = _Values()
        values.base = self.plan.values
        return compile_items([("_", expr)])(values, {})["_"]

    def unit_parts(self, unit: str, currency: str = "currency") -> list:
        """The unit's display as text and the `currency` cell where its currency token stands."""
        parts: list = []
        for n, piece in enumerate(self.unit_display(unit).split("currency")):
            if n:
                parts.append(Ref(currency))
            parts.append(piece)
        return parts

    def unit_expr(self, unit: str, label: str | None = None, currency: str = "currency") -> Expr | None:
        """The unit (or the heading "label (unit)") as a formula over the `currency` cell, or
        None when the unit names no currency (then it is plain text)."""
        if "currency" not in unit:
            return None
        parts = self.unit_parts(unit, currency)
        if label is not None:
            pieces = _FIELD.split(self.m("workbook.with_unit"))
            parts = [p for k, piece in enumerate(pieces)
                     for p in ((parts if piece == "unit" else [label]) if k % 2 else [piece])]
        return _joined([p for p in parts if p != ""])

    def unit_cell(self, ws, row: int, col: int, unit: str, currency: str = "currency"):
        """The unit beside a figure: `=currency&"/GPU-hour"` when it names the currency (every
        label follows the one `currency` input), else text; nothing for text inputs."""
        if not unit or unit == "text":
            return None
        known = self.unit_formulas.get((unit, currency))
        if known is None:           # the same unit gives the same formula and value in a book
            expr = self.unit_expr(unit, currency=currency)
            known = self.unit_formulas[(unit, currency)] = \
                (None, self.unit_display(unit)) if expr is None else (expr, self.value_of(expr))
        if known[0] is None:
            put_text(ws.cell(row, col), known[1])
            return ws.cell(row, col)
        cell = self.formula(ws, row, col, known[0], known[1], None)
        self.named(cell, "Normal")
        return cell

    def label_cell(self, ws, row: int, col: int, label: str, unit: str, style: str | None = "Header",
                   currency: str = "currency"):
        """A column heading "label (unit)", a formula when the unit names the currency."""
        expr = (self.unit_expr(unit, label, currency)
                if unit and unit not in ("text", "flag") else None)
        if expr is None:
            text = self.with_unit(label, unit) if unit and unit not in ("text", "flag") else label
            put_text(ws.cell(row, col), text)
            cell = ws.cell(row, col)
        else:
            cell = self.live(ws, row, col, expr)
        if style:
            self.named(cell, style)
        return cell

    def named(self, cell, style: str) -> None:
        """`cell.style = style` for the workbook's own named styles, the style array looked up
        once per book rather than once per cell."""
        cell._style = _STYLE_COPY(StyleArray, "i", self.named_array(cell, style))

    def named_array(self, cell, style: str) -> StyleArray:
        """The style array a named style sets, found the first time through openpyxl (on `cell`)."""
        array = self.named_arrays.get(style)
        if array is None:
            cell.style = style
            array = self.named_arrays[style] = copy(cell._style)
        return array

    def styled(self, cell, style: str, fmt: str | None) -> None:
        """`named(cell, style)` then `cell.number_format = fmt` when there is one: the pair's
        style array made once per book."""
        array = self.format_arrays.get((style, fmt))
        if array is None:
            array = StyleArray(self.named_array(cell, style))
            if fmt:
                array.numFmtId = self.format_id(fmt)
            self.format_arrays[(style, fmt)] = array
        cell._style = _STYLE_COPY(StyleArray, "i", array)

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

    def define(self, name: str, ws, ref: str) -> None:
        sheet = ws.title
        if name in self.wb.defined_names:
            raise ValueError(f"defined name {name} written twice")  # i18n: not text
        self.wb.defined_names[name] = _defined_name(name, f"'{sheet}'!{ref}")
        self.result.names[name] = f"{sheet}!{ref.replace('$', '')}"

    def formula(self, ws, row: int, col: int, expr: Expr, expected, fmt: str | None,
                resolve: Callable[[str], str] = str):
        """A formula cell: `expr` rendered, each name it reads through `resolve` (a defined name by
        default), in the calculation style with `fmt`; `expected` is the planner's value of it,
        which the recalculation tests hold the spreadsheet's to."""
        if not isinstance(expr, Expr):      # a formula is an expression of the model, never text
            raise TypeError(f"formula at row {row}, column {col}: an expression, not {type(expr).__name__}")  # i18n: not text
        text = excel(expr, resolve)
        cell = ws._cells.get((row, col))
        if cell is None:
            cell = _new_cell(ws, row, col)
        value = "=" + text
        if text and len(value) <= _MAX_TEXT and ILLEGAL_CHARACTERS_RE.search(value) is None:
            cell._value = value          # what _bind does with a formula's text
            cell.data_type = "f"
        else:
            _bind(cell, value)
        array = self.calculation_arrays.get(fmt)
        if array is None:           # styled(cell, "Calculation", fmt), remembered by format
            self.styled(cell, "Calculation", fmt)
            array = self.calculation_arrays[fmt] = self.format_arrays[("Calculation", fmt)]
        cell._style = _STYLE_COPY(StyleArray, "i", array)
        self.result.expected[f"{ws.title}!{_LETTERS[col]}{row}"] = expected
        return cell

    def header(self, ws, row: int, labels: list[str]) -> None:
        for col, label in enumerate(labels, 1):
            self.named(ws.cell(row, col, label), "Header")

    def title(self, ws, text: str, subtitle: str) -> None:
        put_text(ws.cell(1, 1), text)
        ws.cell(1, 1).font = TITLE_FONT
        put_text(ws.cell(2, 1), subtitle)
        ws.cell(2, 1).font = SUBTITLE_FONT

    def page_setup(self, ws, title_rows: str = "1:4") -> None:
        """Landscape A4 (Letter prints the same: fit to width), narrow margins, one page wide;
        the Timeline's week grid runs over several pages at a fixed scale with the phase, start
        and end columns repeated. tests/test_print.py holds every sheet to 60% or more."""
        ws.page_setup.orientation = "landscape"
        ws.page_setup.paperSize = ws.PAPERSIZE_A4
        ws.page_margins = PageMargins(left=0.4, right=0.4, top=0.6, bottom=0.6, header=0.3, footer=0.3)
        if ws.title == "Summary":       # a cover: one column of answers, read top to bottom
            ws.page_setup.orientation = "portrait"
        if ws.title == "Timeline":
            ws.sheet_properties.pageSetUpPr.fitToPage = False
            ws.page_setup.scale = TIMELINE_PRINT_SCALE
            ws.print_title_cols = "A:C"
        else:
            ws.sheet_properties.pageSetUpPr.fitToPage = True
            ws.page_setup.fitToWidth = 1
            ws.page_setup.fitToHeight = 0
        ws.print_title_rows = title_rows
        ws.print_options.horizontalCentered = False
        name = self.sheet_name(ws.title)      # &A prints the tab name; a translated one is text
        sheet = "&A" if name == ws.title else name.replace("&", "&&")
        ws.oddHeader.left.text = sheet
        ws.oddHeader.right.text = self.m("workbook.version", version=__version__, digest=self.digest)
        ws.oddFooter.center.text = self.m("workbook.print.footer", sheet=sheet, page="&P", pages="&N")
        ws.protection.sheet = True      # formulas locked, inputs unlocked; no password
        self.wrap_long_text(ws)

    def wrap_long_text(self, ws) -> None:
        """Text wider than the room it may overflow into (the empty cells to its right, up to
        the sheet's last column) wraps, so the printed page keeps every word and the print range
        stays the sheet's columns: in its own column, or merged across the empty cells to the
        last column when it starts a line of prose. Each row is then as tall as its longest
        wrapped cell (LibreOffice keeps an .xlsx row's stored height).

        Text that fits its own column is passed over first (its room is at least that wide);
        a merge here spans one row and only empty cells, so it changes no other text's room.
        A column's width is read (its dimension made, as openpyxl's factory would) only where
        a text needs it, so the sheet's <cols> stay as they were."""
        cells = ws._cells
        if not cells:
            return
        last = max(map(_column_of, cells))      # ws.max_column
        known: list[float | None] = [None] * (last + 2)   # column -> its width, once read

        def width_of(col: int) -> float:
            width = known[col] = column_dimension(ws, _LETTERS[col]).width or 8.43
            return width

        aligns, fonts = self.wb._alignments, self.wb._fonts   # styles by id: no proxies, no copies
        merged = {(rng.min_row, rng.min_col) for rng in ws.merged_cells.ranges}
        looks, widths = self.alignment_looks, _WIDTHS
        texts: list[tuple[int, int]] = []     # text cells that may not fit, not turned nor merged
        for key, c in cells.items():
            if c.data_type != "s":
                continue
            value = c._value
            if not isinstance(value, str):
                continue
            style = c._style
            align = style[_ALIGNMENT] if style is not None else 0
            look = looks.get(align)
            if look is None:
                look = looks[align] = _alignment_look(aligns[align])
            if look[0] or key in merged:      # turned, or merged already
                continue
            if not look[1]:                   # fits its own column: fits its room
                shown = widths.get(value)
                if shown is None:
                    shown = _text_width(value)
                col = key[1]
                width = known[col]
                if width is None:
                    width = width_of(col)
                if shown[0] <= width * 1.1:
                    continue
            texts.append(key)
        texts.sort()
        lines: dict[int, int] = {}
        cjk: set[int] = set()           # rows with CJK text: its lines are taller
        sizes = self.font_sizes
        get = cells.get
        for key in texts:
            r, col = key
            c = cells[key]
            style = c._style
            look = looks[style[_ALIGNMENT] if style is not None else 0]
            text = c._value
            shown, wide = _text_width(text)
            own = known[col]
            if own is None:
                own = width_of(col)
            span = col                  # up to the next filled cell, or the last column
            extra = 0                   # the widths right of it, summed left to right
            while span < last:
                right = get((r, span + 1))
                if right is not None and (right._value is not None or right.has_style):
                    break
                span += 1
                width = known[span]
                extra += width_of(span) if width is None else width
            room = own + extra
            width = own
            if look[1]:                 # wraps already
                pass
            elif shown <= room * 1.1:
                continue
            elif span == last and span > col:
                ws.merge_cells(start_row=r, start_column=col, end_row=r, end_column=span)
                width = room
                _set_style_id(c, "alignmentId", self.wrap_top_id())
            else:
                _set_style_id(c, "alignmentId", self.wrap_top_id())
            font = c._style[_FONT_ID] if c._style is not None else 0
            size = sizes.get(font)
            if size is None:
                size = sizes[font] = (fonts[font].sz or 11) / 11
            per_line = max(int(width * 1.1), 1)
            need = wrapped_lines(text, per_line / size) if wide else -(-int(len(text) * size) // per_line)
            if need > lines.get(r, 1):
                lines[r] = need
            elif r not in lines:
                lines[r] = 1
            if wide:
                cjk.add(r)
        self.top_align(ws, lines, cjk, last)

    def top_align(self, ws, lines: dict[int, int], cjk: set[int], last: int) -> None:
        """Each row with a wrapped text of several lines made as tall as that text, its written
        cells aligned to the top (in column order, each alignment copied once per book: the
        styles keep their order; a merge above made only empty cells)."""
        cells, aligns, top = ws._cells, self.wb._alignments, self.top_aligned
        tall = [r for r, n in lines.items() if n > 1]
        for r in tall:
            dim = row_dimension(ws, r)
            height = max(dim.height or 0, line_height(r in cjk) * lines[r])
            if type(dim) is RowDimension:
                dim.__dict__["ht"] = float(height)      # what `dim.height = height` stores
            else:
                dim.height = height
        if len(tall) * last > len(cells):     # one pass over the sheet's cells costs less
            rows = set(tall)
            keys = [key for key, c in cells.items() if key[0] in rows and c._value is not None]
            keys.sort()
        else:
            get = cells.get
            keys = [(r, k) for r in tall for k in range(1, last + 1)
                    if (c := get((r, k))) is not None and c._value is not None]
        for key in keys:
            c = cells[key]
            style = c._style
            old = style[_ALIGNMENT] if style is not None else 0
            new = top.get(old)
            if new is None:
                if aligns[old].vertical is not None:    # kept (the default never is)
                    top[old] = old
                    continue
                align = copy(aligns[old])     # each alignment copied once
                align.vertical = "top"
                new = top[old] = aligns.add(align)
            if style is None:
                style = c._style = StyleArray()
            style[_ALIGNMENT] = new

    def wrap_top_id(self) -> int:
        """The id of the alignment wrap_long_text gives a cell (added on first use, as setting
        cell.alignment would, so the styles keep their order)."""
        if self.wrap_top is None:
            self.wrap_top = self.wb._alignments.add(WRAP_TOP)
        return self.wrap_top

    def widths(self, ws, widths: list[int]) -> None:
        for i, w in enumerate(widths, 1):
            column_dimension(ws, _LETTERS[i]).width = w

    # --- sheets ----------------------------------------------------------------------
    def sectioned_rows(self, ws, row: int, entries, write_row) -> int:
        """One row per entry, with a heading row wherever the section changes."""
        section = None
        for entry in entries:
            if entry.section != section:
                section = entry.section
                row += 1
                ws.cell(row, 1, section).font = SECTION_FONT
                row += 1
            write_row(ws, row, entry)
            row += 1
        return row

    def input_value(self, cell, value, unit: str, kind: str = "number") -> None:
        """An input cell: text stays text, numbers get their unit's format, both the input style."""
        if isinstance(value, str):
            put_text(cell, value)
            self.styled(cell, "Input", None)
        else:
            _bind(cell, value)
            self.styled(cell, "Input", number_format(unit, kind))

    def inputs(self, reference_table: Callable[["_Writer", object, int], int]) -> None:
        """The Inputs sheet; `reference_table(writer, ws, row)` writes the reference-runs table
        from `row` and returns its last row (the Reference runs sheet's module owns it)."""
        ws, m = self.wb["Inputs"], self.m
        self.title(ws, m("workbook.inputs.title"), m("workbook.inputs.subtitle"))
        self.header(ws, 4, [m("workbook.inputs.columns.assumption"), m("workbook.columns.value"),
                            m("workbook.columns.unit"), m("workbook.columns.source"),
                            m("workbook.columns.note"), m("workbook.inputs.columns.name"),
                            m("workbook.inputs.columns.at_generation")])
        defs = [d for d in self.model.inputs.values() if d.on_inputs_sheet]
        singles = [d for d in defs if not d.is_range and not d.kind.startswith("generated")]
        ranges = [d for d in defs if d.is_range and d.name.split("_")[0] in RANGE_TABLES]   # not the Reference runs'
        row = self.sectioned_rows(ws, 5, singles, self.input_row)
        tables: dict[str, list[InputDef]] = {}
        for d in ranges:                  # one table per section: the stages, the staffing
            tables.setdefault(d.section, []).append(d)
        for defs in tables.values():
            row = self.range_table(ws, row + 1, defs)
        row = reference_table(self, ws, row + 2)
        # What the search saw starts a printed page of its own
        ws.row_breaks.append(Break(id=row + 1))
        row = self.generation_block(ws, row + 2)
        self.candidate_inputs(ws, row + 2)
        self.widths(ws, INPUTS_WIDTHS)
        ws.freeze_panes = "B5"
        self.page_setup(ws)

    def input_row(self, ws, row: int, d: InputDef) -> None:
        iv = self.plan.inputs[d.name]
        put_text(ws.cell(row, 1), d.label)
        cell = ws.cell(row, 2)
        self.input_value(cell, iv.value, d.unit, d.kind)
        self.unit_cell(ws, row, 3, d.unit, d.currency or "currency")
        put_text(ws.cell(row, 4), iv.source)
        if d.name == "gpu_type":       # the product name, live beside the drop-down
            self.formula(ws, row, 5, Ref("accelerator_name"), self.plan.values["accelerator_name"], None)
        elif iv.note:
            put_text(ws.cell(row, 5), iv.note)
        put_text(ws.cell(row, 6), d.name)
        set_font(ws.cell(row, 6), NAME_FONT)
        self.define(d.name, ws, f"$B${row}")
        self.validate(ws, cell.coordinate, d)
        twin = f"gen_{d.name}"
        if twin in self.model.inputs:   # the value the layout search saw, kept visibly
            self.generated_value(ws, row, 7, twin, d.unit)
            changed = formula_rule(Cell(row, 2, fixed_col=True).ne(Cell(row, 7, fixed_col=True)), CHANGED_FILL)
            ws.conditional_formatting.add(f"A{row}:G{row}", changed)

    def generated_value(self, ws, row: int, col: int, name: str, unit: str) -> None:
        cell = ws.cell(row, col)
        value = self.plan.inputs[name].value
        if isinstance(value, str):
            put_text(cell, value)
        else:
            cell.value = value
            fmt = number_format(unit)
            if fmt:
                cell.number_format = fmt
        cell.font = GREY_FONT
        self.define(name, ws, f"${get_column_letter(col)}${row}")

    def generation_block(self, ws, row: int) -> int:
        """What the layout search saw besides the inputs above (column G): the catalog figures
        it read and whether it ran. The check on the Checks sheet compares them with the live cells."""
        ws.cell(row, 1, self.m("workbook.inputs.generation.heading")).font = SECTION_FONT
        row += 1
        put_text(ws.cell(row, 1), self.m("workbook.inputs.generation.note"))
        ws.cell(row, 1).font = SUBTITLE_FONT
        for d in self.model.inputs.values():
            source = d.name.removeprefix("gen_")
            if not d.kind.startswith("generated") or (source != d.name and source in self.model.inputs):
                continue
            row += 1
            put_text(ws.cell(row, 1), d.label)
            self.generated_value(ws, row, 2, d.name, d.unit)
            self.unit_cell(ws, row, 3, d.unit)
            if source in self.model.items:
                now = live_text(self.m("workbook.inputs.generation.now"), value=Ref(source))
                self.formula(ws, row, 5, IF(Ref(source).eq(Ref(d.name)), "", now), "", None)
            put_text(ws.cell(row, 6), d.name)
            set_font(ws.cell(row, 6), NAME_FONT)
        return row

    def validate(self, ws, coord: str, d: InputDef) -> None:
        """Data validation as strict as the scenario schema (divisors above 0), with the unit and
        a line of help shown when the reviewer selects the cell. It is a function of the input,
        the cells and the language alone, and nothing changes it once made, so one object serves
        every book of a process (the writer reads it)."""
        key = (self.plan.lang, d.name, coord)
        known = _VALIDATIONS.get(key)
        if known is None or known[0] is not d:
            if len(_VALIDATIONS) >= 16384:
                _VALIDATIONS.clear()
            known = _VALIDATIONS[key] = (d, self.new_validation(coord, d))
        ws.add_data_validation(known[1])

    def new_validation(self, coord: str, d: InputDef) -> DataValidation:
        dv = self._validation(d)
        if dv is None:
            dv = _data_validation(type="custom", formula1=excel(TRUE))   # a carrier for the input message
            dv.showErrorMessage = False
        else:
            dv.errorTitle = self.m("workbook.validation.error_title")
            dv.showErrorMessage = True
        unit = self.unit_text(d.unit)
        dv.promptTitle = d.label[:32]
        if unit and d.help:
            prompt = self.m("workbook.validation.prompt_unit_help", unit=unit, help=d.help)
        elif unit:
            prompt = self.m("workbook.validation.prompt_unit", unit=unit)
        else:
            prompt = d.help
        dv.prompt = prompt[:255]
        dv.showInputMessage = bool(dv.prompt)
        dv.sqref = MultiCellRange(coord)      # dv.add(coord), the first range
        return dv

    def _validation(self, d: InputDef) -> DataValidation | None:
        m = self.m
        if d.kind == "choice":
            source = excel(Ref(d.choices_from) if d.choices_from else Text(",".join(d.choices or ())))
            dv = _data_validation(type="list", formula1=source, allow_blank=False)
            dv.error = m("workbook.validation.choice", label=d.label)
            return dv
        if d.kind == "date":
            dv = _data_validation(type="date", operator="greaterThan", formula1=excel(Num(1)))
            dv.error = m("workbook.validation.date", label=d.label)
            return dv
        if d.kind not in {"integer", "number", "fraction", "range"} or d.minimum is None:
            return None
        kind = "whole" if d.kind == "integer" else "decimal"
        low = _num(d.minimum)
        if d.maximum is not None and not d.positive:
            dv = _data_validation(type=kind, operator="between", formula1=low, formula2=_num(d.maximum))
            dv.error = m("workbook.validation.between", label=d.label, low=low, high=_num(d.maximum))
        elif d.positive:
            dv = _data_validation(type=kind, operator="greaterThan", formula1=low)
            dv.error = (m("workbook.validation.above_at_most", label=d.label, low=low, high=_num(d.maximum))
                        if d.maximum is not None else m("workbook.validation.above", label=d.label, low=low))
        else:
            dv = _data_validation(type=kind, operator="greaterThanOrEqual", formula1=low)
            dv.error = m("workbook.validation.at_least", label=d.label, low=low)
        dv.allow_blank = d.optional
        return dv

    def range_table(self, ws, row: int, defs: list[InputDef]) -> int:
        if not defs:
            return row
        section = defs[0].section
        ws.cell(row, 1, section).font = SECTION_FONT
        # A table as wide as the sheet's columns (the stages) says its source and its spare rows
        # once, on its title row (columns D and E), so the sheet still prints one page wide.
        wide = len(defs) >= INPUT_COLUMNS
        title_row = row
        row += 1
        self.header(ws, row, [d.label for d in defs] + ([] if wide else [self.m("workbook.columns.source")]))
        for c, d in enumerate(defs, 1):     # "(currency/month)" follows the table's currency cell
            self.label_cell(ws, row, c, d.label, d.unit, currency=d.currency or "currency")
        first = row + 1
        values = [self.plan.inputs[d.name].value for d in defs]
        rows = len(values[0])
        source_at = (lambda r: (title_row, 4)) if wide else (lambda r: (r, len(defs) + 1))  # noqa: E731
        for r, line in enumerate(zip(*values)):
            for c, (d, v) in enumerate(zip(defs, line), 1):
                self.input_value(ws.cell(first + r, c), v, d.unit)
            put_text(ws.cell(*source_at(first + r)), self.plan.inputs[defs[0].name].source)
        if wide and not rows:
            put_text(ws.cell(title_row, 4), self.plan.inputs[defs[0].name].source)
        below, spare, hint = RANGE_TABLES[defs[0].name.split("_")[0]]
        last = first + rows + spare - 1
        for r in range(first + rows, last + 1):       # spare rows: blank, unlocked, validated
            for c, d in enumerate(defs, 1):
                self.input_value(ws.cell(r, c), None, d.unit)
        at = (title_row, 5) if wide else (first + rows, len(defs) + 1)
        put_text(ws.cell(*at), self.m(hint, rows=spare))
        ws.cell(*at).font = SUBTITLE_FONT
        for c, d in enumerate(defs, 1):
            col = get_column_letter(c)
            self.define(d.name, ws, f"${col}${first}:${col}${last}")
            if d.kind == "range":
                self.validate(ws, f"{col}{first}:{col}{last}", d)
        end = get_column_letter(len(defs))
        self.define(below, ws, f"$A${last + 1}:${end}${last + BELOW_ROWS}")
        return last + BELOW_ROWS

    def candidate_inputs(self, ws, row: int) -> None:
        """The layouts the Parallelism sheet compares, as editable inputs."""
        layout = self.plan.layout
        if layout is None or not layout.candidates:
            return
        ws.cell(row, 1, self.m("workbook.inputs.candidates")).font = SECTION_FONT
        dims = self.model.layout_inputs()
        self.header(ws, row + 1, [self.m("workbook.columns.candidate")] + [d.short for d in dims])
        for n, cand in enumerate(layout.candidates):
            r = row + 2 + n
            put_text(ws.cell(r, 1), _candidate_label(self.m, layout, n))
            cells = {}
            for c, name in enumerate((d.name for d in dims), 2):
                cell = ws.cell(r, c)
                self.input_value(cell, cand.layout.as_inputs()[name], self.model.inputs[name].unit)
                self.validate(ws, cell.coordinate, self.model.inputs[name])
                cells[name] = Cell(r, c, True, True, sheet="Inputs")
            self.candidate_cells.append(cells)

    def catalog(self) -> None:
        ws = self.wb["Catalog"]
        self.title(ws, self.m("workbook.catalog.title"), self.m("workbook.catalog.subtitle"))
        row = 4
        for tdef in self.model.tables.values():
            data = self.plan.tables[tdef.name]
            ws.cell(row, 1, tdef.title).font = SECTION_FONT
            row += 1
            self.header(ws, row, [self.with_unit(h, u) if u != "text" else h for _, h, u in tdef.columns]
                        + [self.m("workbook.columns.source")])
            first = row + 1
            for r, (values, source) in enumerate(zip(data.rows, data.sources)):
                for c, (col, _, unit) in enumerate(tdef.columns, 1):
                    self.input_value(ws.cell(first + r, c), values[col], unit)
                put_text(ws.cell(first + r, len(tdef.columns) + 1), source)
            last = first + len(data.rows) - 1
            growable = tdef.name in SPARE_ROW_TABLES
            if growable:      # spare rows a reviewer can fill: the drop-down and lookups see them
                for r in range(last + 1, last + SPARE_ROWS + 1):
                    for c, (_, _, unit) in enumerate(tdef.columns, 1):
                        self.input_value(ws.cell(r, c), None, unit)
                    ws.cell(r, len(tdef.columns) + 1).protection = UNLOCKED
                put_text(ws.cell(last + 1, len(tdef.columns) + 1),
                         self.m(f"workbook.catalog.spare_rows.{tdef.name}"))
                last += SPARE_ROWS
            for c, (col, _, _) in enumerate(tdef.columns, 1):
                letter = get_column_letter(c)
                self.define(f"{tdef.name}_{col}", ws, f"${letter}${first}:${letter}${last}")
            if tdef.name == ACCELERATOR_TABLE:
                end = get_column_letter(len(tdef.columns))
                self.define("catalog_rows_below", ws, f"$A${last + 1}:${end}${last + BELOW_ROWS}")
                last += BELOW_ROWS
            row = last + 3
        self.widths(ws, [17, 22, 8, 8, 7, 7, 9, 9, 7, 7, 8, 10, 8, 7, 9, 7, 18])   # O, FP4: 10,000.0
        ws.freeze_panes = "B4"
        self.page_setup(ws, "1:3")

    def calc_sheet(self, title: str, subtitle: str) -> None:
        ws, m = self.wb[title], self.m
        self.title(ws, self.sheet_name(title), subtitle)
        if title == "Timeline":
            self.timeline(ws)
            return
        is_checks = title == "Checks"
        self.header(ws, 4, [m("workbook.columns.item"), m("workbook.columns.value"), m("workbook.columns.unit"),
                            m("workbook.columns.name"),
                            m("workbook.columns.fix") if is_checks else m("workbook.columns.note")])
        items = self.model.sheet_items(title)
        if title == "Cost":   # the pure-training rental is a memo: below the total, not in its flow
            items = ([i for i in items if i.name not in MEMO_LINES]
                     + [replace(i, section=m("workbook.memo_heading"))
                        for i in sorted((i for i in items if i.name in MEMO_LINES), key=lambda i: MEMO_LINES.index(i.name))])
        row = self.sectioned_rows(ws, 5, items, self.item_row)
        self.widths(ws, list(CALC_WIDTHS))
        if title == "Parallelism":
            self.candidate_rows(ws, row + 1)
        ws.freeze_panes = "B5"
        self.page_setup(ws)

    def generated_for(self, ws, row: int, lines: list[str], last_col: int) -> int:
        """Sentences that can only be written at generation, under a heading, with a formula line
        above them that turns on as soon as the inputs or the figures the sentences state differ
        from generation. Returns the last row written."""
        ws.cell(row, 1, self.m("workbook.generated.heading")).font = SECTION_FONT
        v = self.plan.values
        stated = ["memory_per_gpu_gb", "usable_hbm_gb", "train_days"]
        as_text = lambda name: ROUND(Ref(name), 1).concat("")  # noqa: E731
        figures = compile_items([(n, as_text(n)) for n in stated])(dict(v), {})
        changed = OR(Ref("search_inputs_changed").ne(0), Ref("layout_label").ne(Text(str(v["layout_label"]))),
                     *(as_text(n).ne(Text(figures[n])) for n in stated))
        warning = Text(self.m("workbook.generated.changed"))
        cell = self.live(ws, row + 1, 1, IF(ISERROR(changed), warning, IF(changed, warning, "")))
        self.named(cell, "Normal")
        cell.font = CHECK_FONT
        for n, text in enumerate(lines):
            row += 2 if n == 0 else 1
            put_text(ws.cell(row, 1), text)
            ws.cell(row, 1).alignment = WRAP_TOP
            ws.merge_cells(start_row=row, start_column=1, end_row=row, end_column=last_col)
            width = sum(column_dimension(ws, _LETTERS[c]).width or 8.43
                        for c in range(1, last_col + 1))
            ws.row_dimensions[row].height = text_height(text, width)
        return row

    def generated_lines(self) -> list[str]:
        """The sizing and the layout decision in words, as generation wrote them."""
        return [self.m("workbook.generated.gpu_count", source=self.plan.inputs["gpu_count"].source),
                self.m("workbook.generated.layout", explanation=self.plan.layout.explanation)]

    def candidate_rows(self, ws, row: int) -> None:
        """The layout decision in words on Parallelism, and each candidate layout as a column of
        live formulas on "Layout candidates": the same expressions as the calculation sheets,
        with layout-dependent names resolved to the candidate's own cells. Columns, not rows, so
        that the sheet prints on one page wide: the key figures first, then the workings."""
        layout = self.plan.layout
        if layout is None:
            return
        m = self.m
        lines = self.generated_lines()
        if layout.candidates:
            lines.append(m("workbook.generated.candidates_sheet"))
        self.generated_for(ws, row + 1, lines, 5)
        if not layout.candidates:
            return
        keys, working = candidate_columns(self.model)
        wk = self.wb[CANDIDATES_SHEET]
        self.title(wk, self.sheet_name(CANDIDATES_SHEET), m("workbook.layout_candidates.subtitle"))
        count = len(self.plan.candidate_values)
        self.widths(wk, [44] + [11] * count)
        last = self.generated_for(wk, 4, [m("workbook.generated.why_first", explanation=layout.explanation)],
                                  1 + count)
        head = last + 2
        row_of: dict[str, int] = {}
        r = head + 1
        for n, name in enumerate(keys + working):
            if n == len(keys):
                r += 1
                put_text(wk.cell(r, 1), m("workbook.layout_candidates.workings"))
                wk.cell(r, 1).font = SECTION_FONT
                r += 1
            row_of[name] = r
            label, unit = self._column_label(name)
            self.label_cell(wk, r, 1, label, unit, style=None)
            r += 1
        self.header(wk, head, [m("workbook.columns.candidate")] + [_candidate_label(m, layout, n) for n in range(count)])
        wk.row_dimensions[head].height = 45
        for n, values in enumerate(self.plan.candidate_values):
            col = get_column_letter(2 + n)
            refs = {name: f"{col}{at}" for name, at in row_of.items()}
            resolve = Resolved(lambda name, refs=refs: refs.get(name, name)).__getitem__
            for name, at in row_of.items():
                self.candidate_cell(wk, at, 2 + n, n, name, values[name], resolve)
        wk.freeze_panes = f"B{head + 1}"
        self.page_setup(wk, f"{head}:{head}")

    def timeline(self, ws) -> None:
        """One row per phase whose Start and End cells are the named line items, beside a week
        grid; the bars are conditional formatting over the formula dates of the week columns."""
        values, head, first_col, m = self.plan.values, 4, 4, self.m
        weeks = len(self.plan.inputs["timeline_week_cells"].value)
        self.header(ws, head, [m("workbook.timeline.columns.phase"), m("workbook.timeline.columns.start"),
                               m("workbook.timeline.columns.end")])
        for w in range(weeks):
            col = first_col + w
            letter, week, before = get_column_letter(col), Cell(head, col), Cell(head, col - 1)
            day = values["start_date"] + 7 * w
            cell = self.formula(ws, head, col, Ref("start_date") if w == 0 else before + 7, day, "mm-dd")
            self.named(cell, "Header")
            cell.number_format = "mm-dd"
            cell.alignment = WEEK_ALIGNMENT
            # the year above the week where it changes (and above the first week)
            year = from_serial(day).year
            if w == 0:
                self.formula(ws, head - 1, col, YEAR(week), float(year), "0")
            else:
                changed = year != from_serial(day - 7).year
                self.formula(ws, head - 1, col, IF(YEAR(week).ne(YEAR(before)), YEAR(week), ""),
                             float(year) if changed else "", "0")
            set_font(ws.cell(head - 1, col), YEAR_FONT)
            ws.cell(head - 1, col).alignment = WEEK_ALIGNMENT    # a number does not spill: 2027 reads upright
            column_dimension(ws, letter).width = 3.2
        ws.row_dimensions[head].height = 36
        ws.row_dimensions[head - 1].height = 24
        first, last = get_column_letter(first_col), get_column_letter(first_col + weeks - 1)
        self.define("timeline_week_cells", ws, f"${first}${head}:${last}${head}")
        for n, key in enumerate(TIMELINE_PHASES):
            r = head + 1 + n
            put_text(ws.cell(r, 1), m(f"workbook.timeline.phases.{key}"))
            for c, suffix in ((2, "start"), (3, "end")):
                item = self.model.items[f"{key}_{suffix}"]
                self.formula(ws, r, c, item.expr, values[item.name], DATE_FORMAT)
                self.define(item.name, ws, f"${get_column_letter(c)}${r}")
            colour = GANTT_COLOURS[n % len(GANTT_COLOURS)]
            week = Cell(head, first_col, fixed_row=True)     # relative to the bar's first cell
            in_week = AND(week < Cell(r, 3, fixed_col=True), week + 7 > Cell(r, 2, fixed_col=True))
            rule = FormulaRule(formula=[excel(in_week)], fill=PatternFill("solid", start_color=colour, end_color=colour))
            ws.conditional_formatting.add(f"{first}{r}:{last}{r}", rule)
        row = head + len(TIMELINE_PHASES) + 2
        phase_items = {f"{key}_{end}" for key in TIMELINE_PHASES for end in ("start", "end")}
        project = [i for i in self.model.sheet_items("Timeline") if i.name not in phase_items]
        ws.cell(row, 1, project[0].section).font = SECTION_FONT     # the model's heading
        for r, item in enumerate(project, row + 1):
            name = item.name
            put_text(ws.cell(r, 1), m("workbook.timeline.label_note", label=item.label, note=item.note)
                     if item.note else item.label)
            self.formula(ws, r, 2, item.expr, values[name], number_format(item.unit))
            if item.unit != "date":
                put_text(ws.cell(r, 3), self.unit_text(item.unit))
            self.define(name, ws, f"$B${r}")
        row += len(project) - 3
        put_text(ws.cell(row + 5, 1), m("workbook.timeline.note"))
        ws.cell(row + 5, 1).font = SUBTITLE_FONT
        self.widths(ws, [34, 11, 11])
        ws.freeze_panes = ws.cell(head + 1, first_col)
        self.page_setup(ws)

    def _column_label(self, name: str) -> tuple[str, str]:
        """(label, unit) of a candidate figure."""
        if name in self.model.inputs:
            return self.model.inputs[name].short, ""
        item = self.model.items[name]
        # the key figures go by short labels of their own (workbook.layout_candidates.labels.<name>)
        label = self.m(f"workbook.layout_candidates.labels.{name}") if name in CANDIDATE_KEYS else item.label
        return label, item.unit

    def candidate_cell(self, ws, row: int, col: int, n: int, name: str, value, resolve) -> None:
        if name in self.candidate_cells[n]:
            self.formula(ws, row, col, self.candidate_cells[n][name], value, None)
            return
        item = self.model.items[name]
        cell = self.formula(ws, row, col, item.expr, value, number_format(item.unit), resolve)
        if item.is_flag:
            self.flag_format(ws, cell.coordinate, item.kind == "warning")

    def item_row(self, ws, row: int, item: Item) -> None:
        put_text(ws.cell(row, 1), item.label)
        cell = self.formula(ws, row, 2, item.expr, self.plan.values[item.name],
                            number_format(item.unit))
        self.unit_cell(ws, row, 3, item.unit)
        put_text(ws.cell(row, 4), item.name)
        set_font(ws.cell(row, 4), NAME_FONT)
        pieces = self.plan.fix_pieces(item.name) if item.is_flag else None
        if pieces is not None:      # written for this plan (issue 25): its currency live
            fix_expr = text_with_currency(pieces)
            fix_value = self.value_of(fix_expr)
            fix = self.formula(ws, row, 5, fix_expr, fix_value, None)
            # a formula's text is not wrapped by wrap_long_text (it knows only typed text): wrapped
            # here, the row as tall as the text the plan gives, so the page prints at its scale
            fix.alignment = WRAP_TOP
            ws.row_dimensions[row].height = max(ws.row_dimensions[row].height or 15,
                                                text_height(str(fix_value), CALC_WIDTHS[4]))
        elif item.fix or item.note:
            put_text(ws.cell(row, 5), item.fix or item.note)
        self.define(item.name, ws, f"$B${row}")
        if item.is_flag or item.name == "master_check":
            self.flag_format(ws, cell.coordinate, item.kind == "warning")

    def flag_format(self, ws, coord: str, warning: bool = False, blank_ok: bool = False) -> None:
        """Green only for a number equal to 0; red (amber for a warning) for anything else,
        an error value included. Formula rules: a cellIs rule never matches an error. With
        `blank_ok`, an empty text (a spare stage's column) is left plain."""
        letters, row = coordinate_from_string(coord.split(":")[0].replace("$", ""))
        cell = Cell(row, column_index_from_string(letters))
        fine = AND(ISNUMBER(cell), cell.eq(0))
        blank = IF(ISERROR(cell), FALSE, cell.eq(""))
        ws.conditional_formatting.add(coord, formula_rule(fine, OK_RULE_FILL))
        ws.conditional_formatting.add(coord, formula_rule(NOT(OR(fine, blank)) if blank_ok else NOT(fine),
                                                          WARN_RULE_FILL if warning else BAD_RULE_FILL))

    def summary(self) -> None:
        """What a CFO reads in 30 seconds: the status and, one fixed row per check and warning,
        what fails in words (blank when it passes: no TEXTJOIN in Excel 2016); the answers as live
        formulas; the cost lines to the total (labelled indicative while checks fail); the memo
        lines not in the total; and the sentences only generation could write, under their own
        heading with a warning that turns on when the inputs move."""
        ws, m = self.wb["Summary"], self.m
        s = self.plan.scenario
        self.widths(ws, [46, 20, 16, 24])
        put_text(ws.cell(1, 1), s.name)
        ws.cell(1, 1).font = COVER_FONT
        if s.description:
            put_text(ws.cell(2, 1), s.description)
            ws.cell(2, 1).alignment = WRAP_TOP
            ws.merge_cells("A2:D2")
            ws.row_dimensions[2].height = (line_height(True) * wrapped_lines(s.description, 120 / 1.1)
                                           if has_wide(s.description)
                                           else 15 * (1 + int(len(s.description) * 1.1 // 120)))
        put_text(ws.cell(3, 1), m("workbook.summary.version", version=__version__,
                                  scenario=self.plan.scenario_id, digest=self.digest))
        ws.cell(3, 1).font = NOTE_FONT
        master = Ref("master_check")
        status = IF(ISERROR(master), m("workbook.summary.status.cannot"),
                    IF(master.eq(0), m("workbook.summary.status.pass"),
                       plural_text(master, m("workbook.summary.status.fail.one"),
                                   m("workbook.summary.status.fail.other"))))
        cell = self.live(ws, 5, 1, status)
        self.named(cell, "Normal")
        cell.font = TITLE_FONT
        fine = AND(ISNUMBER(master), master.eq(0))
        ws.conditional_formatting.add("A5:D5", FormulaRule(formula=[excel(fine)], fill=OK_RULE_FILL))
        ws.conditional_formatting.add("A5:D5", FormulaRule(formula=[excel(NOT(fine))], fill=BAD_RULE_FILL))
        row = self.summary_row(ws, 6, "master_check", m("workbook.summary.checks_failing"))
        for check in self.model.checks():
            self.flag_line(ws, row, check, CHECK_FONT)
            row += 1
        count = Ref("warning_count")
        line = IF(ISERROR(count), m("workbook.summary.warnings.cannot"),
                  IF(count.eq(0), m("workbook.summary.warnings.none"),
                     plural_text(count, m("workbook.summary.warnings.some.one"),
                                 m("workbook.summary.warnings.some.other"))))
        cell = self.live(ws, row + 1, 1, line)
        self.named(cell, "Normal")
        cell.font = WARNING_HEAD_FONT
        row = self.summary_row(ws, row + 2, "warning_count", m("workbook.summary.warnings.heading"))
        for warning in self.model.warnings():
            self.flag_line(ws, row, warning, WARNING_FONT)
            row += 1
        for block, names in SUMMARY_BLOCKS:
            row += 1
            ws.cell(row, 1, m(f"workbook.summary.blocks.{block}")).font = SECTION_FONT
            self.header(ws, row + 1, ["", m("workbook.columns.value"), m("workbook.columns.unit")])
            row += 2
            for name in names:
                if name == "memory_in_words":
                    put_text(ws.cell(row, 1), m("workbook.summary.labels.memory_in_words"))
                    self.live(ws, row, 2, memory_in_words(m))
                    fits = Ref("check_memory_fits")
                    fine = AND(ISNUMBER(fits), fits.eq(0))
                    ws.conditional_formatting.add(f"A{row}:C{row}", FormulaRule(formula=[excel(fine)],
                                                                                  fill=OK_RULE_FILL))
                    ws.conditional_formatting.add(f"A{row}:C{row}", FormulaRule(formula=[excel(NOT(fine))],
                                                                                  fill=BAD_RULE_FILL))
                    row += 1
                    continue
                if name == "total_cost":    # the label says "indicative" while checks fail
                    indicative = m("workbook.summary.total_indicative")
                    label = self.live(ws, row, 1, IF(ISERROR(master), indicative,
                                                     IF(master.eq(0), m("workbook.summary.total"), indicative)))
                    self.named(label, "Normal")
                    label.font = BOLD_FONT
                    row = self.summary_row(ws, row, name, None)
                    ws.cell(row - 1, 2).font = BOLD_FONT
                    continue
                if name in ASK_ROWS:
                    row = self.ask_row(ws, row, name, master)
                    continue
                label = m(f"workbook.summary.labels.{name}") if name in SUMMARY_LABELS else None
                row = self.summary_row(ws, row, name, label)
            if block == "cost":
                row += 1
                ws.cell(row, 1, m("workbook.memo_heading")).font = SECTION_FONT
                row += 1
                for name in MEMO_LINES:
                    row = self.summary_row(ws, row, name, None)
                    ws.cell(row - 1, 1).font = NOTE_FONT
        self.layout_reasoning(ws, row + 1)
        self.page_setup(ws, "1:1")

    def ask_row(self, ws, row: int, name: str, master: Expr) -> int:
        """One of ASK_ROWS: a live label (the percentile asked, the buffer's rate) and the
        Sensitivity sheet's cell of that name; returns the next row."""
        from ..plan.sensitivity import cases, range_figures
        m = self.m
        rng = range_figures(self.plan, cases(self.plan))
        figures = {"percentile": Ref("approval_percentile"), "rate": ROUND(Ref("buffer_rate") * 100, 1)}
        text = live_text(m(f"workbook.summary.{name}"), **figures)
        if name == "total_cost_ask":       # indicative while checks fail, as the total
            text = IF(AND(ISNUMBER(master), master.eq(0)), text,
                      live_text(m("workbook.summary.total_cost_ask_indicative"), **figures))
        label = self.live(ws, row, 1, text)
        self.named(label, "Normal")
        money = name == "total_cost_ask"
        cell = self.formula(ws, row, 2, Ref(name), rng[name], number_format("currency") if money else '"P"0')
        if money:
            self.unit_cell(ws, row, 3, "currency")
            label.font = cell.font = BOLD_FONT
        return row + 1

    def summary_row(self, ws, row: int, name: str, label: str | None) -> int:
        """label | =name | unit; returns the next row."""
        item = self.model.items.get(name) or self.model.inputs[name]
        if label is not None or ws.cell(row, 1).value is None:
            put_text(ws.cell(row, 1), label or item.label)
        cell = self.formula(ws, row, 2, Ref(name), self.plan.values[name], number_format(item.unit))
        if item.unit not in ("checks", "date"):
            self.unit_cell(ws, row, 3, item.unit)
        if getattr(item, "is_flag", False) or name in ("master_check", "warning_count"):
            self.flag_format(ws, cell.coordinate, getattr(item, "kind", "") == "warning"
                             or name == "warning_count")
        if name == "master_check":
            ws.cell(row, 1).font = BOLD_FONT
            cell.font = BOLD_FONT
        return row + 1

    def flag_line(self, ws, row: int, item: Item, font: Font) -> None:
        """One fixed row per check or warning: blank when it passes, the failure in words (live
        over the cells) when not, and "cannot be computed" when its cells hold an error."""
        flag = Ref(item.name)
        detail = item.detail if item.detail is not None else Text(item.label)
        cannot = Text(self.m("workbook.summary.cannot_compute", label=item.label))
        cell = self.live(ws, row, 1, IF(ISERROR(flag), cannot,
                                        IF(flag.eq(0), "", IF(ISERROR(detail), cannot, detail))))
        self.named(cell, "Normal")
        cell.font = font

    def layout_reasoning(self, ws, row: int) -> int:
        """The sizing and layout decision in words: only generation can write it, so it sits
        under "Generated for these inputs" with its live warning line."""
        layout = self.plan.layout
        if layout is None:
            return row
        return self.generated_for(ws, row, self.generated_lines(), 4) + 2

    def glossary(self) -> None:
        ws, m = self.wb["Glossary"], self.m
        self.title(ws, self.sheet_name("Glossary"), m("workbook.glossary.subtitle"))
        self.header(ws, 4, [m("workbook.glossary.columns.term"), m("workbook.glossary.columns.meaning")])
        for r, term in enumerate(GLOSSARY, 5):
            put_text(ws.cell(r, 1), m(f"workbook.glossary.terms.{term}.term"))
            ws.cell(r, 1).font = BOLD_FONT
            put_text(ws.cell(r, 2), m(f"workbook.glossary.terms.{term}.meaning"))
            ws.cell(r, 2).alignment = WRAP_TOP
            ws.cell(r, 1).alignment = TOP_ALIGNMENT
        self.widths(ws, [26, 110])
        self.page_setup(ws)

    def change_log(self) -> None:
        """The generated row, then rows the reviewer writes in: unlocked under sheet protection."""
        ws, m = self.wb[CHANGE_LOG_SHEET], self.m
        self.title(ws, self.sheet_name(CHANGE_LOG_SHEET), m("workbook.change_log.subtitle"))
        self.header(ws, 4, [m(f"workbook.change_log.columns.{c}") for c in ("date", "version", "who", "change")])
        put_text(ws.cell(5, 2), self.digest)
        put_text(ws.cell(5, 3), f"trainbudget {__version__}")  # i18n: not text (the tool and its version)
        put_text(ws.cell(5, 4), m("workbook.change_log.generated", scenario=self.plan.scenario_id))
        arrays: dict[int, StyleArray] = {}     # column -> its style, set once (the same ids)
        for r in range(6, 6 + CHANGE_LOG_ROWS):
            for c in range(1, 5):
                cell = ws.cell(r, c)
                if c in arrays:
                    cell._style = copy(arrays[c])
                    continue
                cell.protection = UNLOCKED
                cell.border = BOTTOM_BORDER
                if c == 1:
                    cell.number_format = DATE_FORMAT
                arrays[c] = copy(cell._style)
        self.widths(ws, [12, 18, 22, 80])
        self.page_setup(ws)

    def properties(self) -> None:
        p = self.wb.properties
        p.title = self.plan.scenario.name
        p.subject = self.m("workbook.properties.subject")
        p.creator = "trainbudget"
        p.keywords = self.m("workbook.version", version=__version__, digest=self.digest)
        p.version = __version__
        p.identifier = self.digest
        p.revision = self.digest
        p.description = self.m("workbook.properties.description", version=__version__,
                               scenario=self.plan.scenario_id, digest=self.digest)
        # The language tag (zh-CN) lets `import` tell the book's language without reading its
        # words; English books carry none, as before languages existed (their bytes unchanged).
        tag = self.m("report.html_lang")
        if tag != text("report.html_lang", DEFAULT_LANG):
            p.language = tag
        self.wb.calculation.fullCalcOnLoad = True

    def wide_sheets(self) -> None:
        """A sheet whose print range is wider than WIDE_SHEET_UNITS prints two pages wide, its
        row labels (column A) repeated on each: one page would shrink it below 60%."""
        for ws in self.wb.worksheets:
            if not ws.sheet_properties.pageSetUpPr.fitToPage or ws.page_setup.fitToWidth != 1:
                continue
            last = max(map(_column_of, ws._cells), default=1)     # ws.max_column
            if ws.print_area:
                last = range_boundaries(str(ws.print_area).split(",")[0].split("!")[-1].replace("$", ""))[2]
            units = sum(column_dimension(ws, _LETTERS[c]).width or 8.43 for c in range(1, last + 1))
            if units > WIDE_SHEET_UNITS:
                ws.page_setup.fitToWidth = 2
                ws.print_title_cols = "A:A"

    def fonts(self) -> None:
        """Every font names its face: a font without a name prints in the viewer's fallback
        (a serif in LibreOffice) beside Calibri text. The sheet writer names each cell's font
        as it writes the cell (_FontNames), in the order this pass once walked the cells."""
        self.font_names = _FontNames(self.wb._fonts)

    def release(self) -> None:
        """Drop what the sheets and the book hold, so that their objects are freed now by
        reference counting rather than by the cyclic collector (each refers to its sheet)."""
        for ws in self.wb.worksheets:
            ws._cells.clear()
            dict.clear(ws.row_dimensions)
            dict.clear(ws.column_dimensions)
            if isinstance(ws.conditional_formatting, _Formats):
                ws.conditional_formatting.by_range.clear()
            ws.data_validations.dataValidation = []
        self.wb.defined_names.clear()
        self.wb._cell_styles = IndexedList()

    def save(self) -> WorkbookResult:
        """The book's properties and fonts, then the book written (after every sheet)."""
        self.properties()
        self.wide_sheets()
        self.fonts()
        buffer = io.BytesIO()
        # openpyxl's save into an archive that deflates each entry once, with fixed dates
        _FastExcelWriter(self.wb, FixedZip(buffer), self.font_names).save()
        self.result.data = buffer.getvalue()
        return self.result


class _FontNames:
    """Font ids -> the id of the same font with its face named (BODY_FONT where it had none),
    each unnamed font copied once and added to the book's fonts when first met."""

    def __init__(self, fonts):
        self.fonts = fonts
        self.named: dict[int, int] = {}

    def __call__(self, old: int) -> int:
        font = self.fonts[old]
        if font.name:
            new = old
        else:
            known = _NAMED_FONTS.get(id(font))
            if known is None or known[0] is not font:
                named = copy(font)
                named.name = BODY_FONT
                if len(_NAMED_FONTS) >= 1024:
                    _NAMED_FONTS.clear()
                known = _NAMED_FONTS[id(font)] = (font, named)
            new = self.fonts.add(known[1])
        self.named[old] = new
        return new


# an unnamed font (the module's constants, mostly) -> its copy named BODY_FONT, made once a
# process: style objects are not changed once made, and a book's list holds equal ones alike
_NAMED_FONTS: dict[int, tuple[Font, Font]] = {}


class _FastSheetWriter(WorksheetWriter):
    """openpyxl's worksheet writer with the cells written as text in one piece rather than one
    ElementTree element each, and the conditional formats and data validations likewise: the
    very bytes openpyxl writes (every bundled scenario's workbook is byte-identical), in a
    fraction of the time. A cell of another kind (a comment, a link, rich text, a date, a
    boolean, text that needs xml:space) goes through openpyxl's own write_cell.

    Every row from the first to the last is written, an empty one as `<row r="n"></row>`, and
    the dimension spans A1 to the last cell: the bytes the book had when its sheets were walked
    with `ws.iter_rows()`, which filled each gap with an empty cell.

    The book's cell styles are found by their bytes (openpyxl hashed each cell's style), after
    the cell's font is named (_FontNames): the fonts and styles are added to the book's lists
    in the order openpyxl's walk over the cells added them."""

    book: "_FastExcelWriter"        # set by _FastExcelWriter

    def write_formatting(self):
        """openpyxl's, with each differential style's id found once per book (by identity):
        openpyxl compared every rule's style with each one held, twice."""
        empty = DifferentialStyle()
        styles = self.ws.parent._differential_styles
        dxf_ids = self.book.dxf_ids
        formats = self.ws.conditional_formatting
        if not isinstance(formats, _Formats):
            return super().write_formatting()
        for key, rules in formats.by_range.items():
            for rule in rules:
                dxf = rule.dxf
                known = dxf_ids.get(id(dxf))
                if known is None or known[0] is not dxf:
                    index = styles.add(dxf) if dxf and dxf != empty else None
                    known = dxf_ids[id(dxf)] = (dxf, index)
                if known[1] is not None:
                    if type(known[1]) is int and type(rule) is Rule:
                        rule.__dict__["dxfId"] = known[1]    # what Rule.dxfId's descriptors store
                    else:
                        rule.dxfId = known[1]
            text = _formatting_xml(key, rules)
            if text is None:
                cf = ConditionalFormatting(key)
                cf.rules = rules
                self.xf.send(cf.to_tree())
            else:
                self._write_text(text)

    def write_validations(self):
        dv = self.ws.data_validations
        if not dv:
            return
        text = _validations_xml(dv)
        if text is None:
            return super().write_validations()
        self._write_text(text)

    def write_format(self):
        self.ws.sheet_format.outlineLevelCol = self.ws.column_dimensions.max_outline
        self._send(self.ws.sheet_format)

    def write_print(self):
        if self.ws.print_options:
            self._send(self.ws.print_options)

    def write_margins(self):
        if self.ws.page_margins:
            self._send(self.ws.page_margins)

    def write_page(self):
        if self.ws.page_setup:
            self._send(self.ws.page_setup)

    def write_header(self):
        hf = self.ws.HeaderFooter
        if not hf:
            return
        text = _header_xml(hf)
        if text is None:
            return super().write_header()
        self._write_text(text)

    def _write_text(self, text: str) -> None:
        """XML text, already serialised, written at this point of the sheet's stream (openpyxl's
        xmlfile writer hands its file over while sent True)."""
        xf = self.xf.send(True)
        xf._file(text)
        self.xf.send(None)

    def _send(self, obj) -> None:
        """`self.xf.send(obj.to_tree())`, the text remembered per process for the few kinds
        whose element is a function of their fields alone (_tree_key): every sheet of every
        book has much the same page set-up and margins."""
        key = _tree_key(obj)
        if key is None:
            return self.xf.send(obj.to_tree())
        text = _TREES.get(key)
        if text is None:
            if len(_TREES) >= 4096:
                _TREES.clear()
            text = _TREES[key] = _element_text(obj.to_tree())
        self._write_text(text)

    def write_cols(self):
        """openpyxl's <cols>, a column with only a width written without its descriptors."""
        dims = self.ws.column_dimensions
        cols = []
        for dim in dims.values():
            fields = dim.__dict__
            width = fields.get("width")
            if fields.keys() != _COLUMN_DIMENSION_FIELDS.keys() or dim._style is not None \
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
        ws, book = self.ws, self.book
        dims = ws.row_dimensions
        ids, cell_styles, letters = book.style_ids, ws.parent._cell_styles, _LETTERS
        xf = self.xf.send(True)
        cells = ws._cells
        with xf.element("sheetData"):
            out: list[str] = []
            put = out.append
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
                    out = self._openpyxl_cell(xf, out, cell, style is not None and style.tobytes() != _PLAIN)
                    put = out.append
                    continue
                value = cell._value
                if style is None:
                    if value is None:
                        continue
                    styled = ""
                else:
                    key = style.tobytes()
                    styled = ids.get(key)
                    if styled is None:
                        if key == _PLAIN:
                            if value is None:
                                continue
                            styled = ""
                        else:
                            book.font_name(cell)         # its font named before its id is found
                            styled = ids[key] = f' s="{cell_styles.add(style)}"'
                kind = cell.data_type
                if kind == "f":
                    if type(value) is str:
                        text = value[1:]
                        if "&" in text or "<" in text or ">" in text:
                            text = _escape_cdata(text)
                        put(f'<c r="{letters[col]}{row}"{styled}><f>{text}</f><v /></c>')  # not formula text
                        continue
                elif kind == "s":
                    if type(value) is str and value and (
                            not (value[0].isspace() or value[-1].isspace()) or not value.strip()):
                        if "&" in value or "<" in value or ">" in value:
                            value = _escape_cdata(value)
                        put(f'<c r="{letters[col]}{row}"{styled} t="inlineStr"><is><t>{value}</t></is></c>')  # not formula text
                        continue
                elif kind == "n":
                    if value is None:
                        put(f'<c r="{letters[col]}{row}"{styled} t="n" />')
                        continue
                    kind_of_value = type(value)
                    if kind_of_value is int or kind_of_value is float and math.isfinite(value):
                        put(f'<c r="{letters[col]}{row}"{styled} t="n"><v>{"%.16g" % value}</v></c>')  # not formula text
                        continue
                out = self._openpyxl_cell(xf, out, cell, bool(styled))
                put = out.append
            if last:
                put("</row>")
            for r in sorted(r for r in dims.keys() if r > last):   # rows with only a height
                put(_row_head(r, dims[r]) + "</row>")
            xf._file("".join(out))
        self.xf.send(None)

    def _openpyxl_cell(self, xf, out: list[str], cell, styled: bool) -> list[str]:
        """A cell as openpyxl's write_row writes it (the text so far written first)."""
        xf._file("".join(out))
        if cell._comment is not None:
            self.ws._comments.append(CommentRecord.from_cell(cell))
        elif cell._value is None and not styled:
            return []
        if styled:
            self.book.font_name(cell)
        write_cell(xf, self.ws, cell, styled)
        return []


_TREES: dict[tuple, str] = {}      # _tree_key -> the element's text


def _element_text(node) -> str:
    """An element as the sheet's xmlfile writes it (ElementTree's serialiser, no namespaces)."""
    import xml.etree.ElementTree as ET
    return ET.tostring(node, encoding="unicode")


_FLAT_KINDS = (PageMargins, PrintOptions, PrintPageSetup, SheetFormatProperties)   # attributes only
_PLAIN_VALUES = (type(None), bool, int, float, str)


def _fields_key(obj) -> tuple | None:
    """An object's own fields (not its `_` ones) as a key, or None when one is not a plain value."""
    fields = tuple((k, type(v), v) for k, v in obj.__dict__.items() if not k.startswith("_"))
    return fields if all(kind in _PLAIN_VALUES for _, kind, _ in fields) else None


def _tree_key(obj) -> tuple | None:
    """What decides the element `obj.to_tree()` gives, for an attribute-only kind (its fields);
    None for anything else."""
    kind = type(obj)
    if kind in _FLAT_KINDS:
        fields = _fields_key(obj)
        return None if fields is None else (kind, fields)
    return None


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
        out.append(f"<{name}>{_escape_cdata(text)}</{name}>" if text else f"<{name} />")  # not formula text
    out.append("</headerFooter>")
    return "".join(out)


_PLAIN = StyleArray().tobytes()     # a style array of a cell without a style
_column_of = itemgetter(1)           # a cell key's column
_first_of = itemgetter(0)


def _row_head(r: int, dim) -> str:
    """A row's start tag with its dimension's attributes, as openpyxl writes it (a row with only
    a height, the common case, without walking the dimension's fields)."""
    fields = dim.__dict__
    if fields.keys() == _ROW_DIMENSION_FIELDS.keys() and dim._style is None and type(fields["ht"]) is float \
            and _row_others(fields) == _ROW_OTHERS:
        return f'<row r="{r}" ht="{"%.16g" % fields["ht"]}" customHeight="1">'  # i18n: not text
    return f'<row r="{r}"' + "".join(f' {k}="{_escape_attrib(v)}"' for k, v in dim) + ">"  # i18n: not text; not formula text


class _Letters(dict):
    """Column number -> letters, each made once when first asked for (a list of all 16,384
    made at import cost ~4 ms of every run; a book uses a few dozen)."""

    def __missing__(self, column: int) -> str:
        letters = self[column] = get_column_letter(column) if column else ""
        return letters


_LETTERS = _Letters()
# a row dimension's fields besides its height and index, as row_dimension makes them
_row_others = itemgetter(*(k for k in _ROW_DIMENSION_FIELDS if k not in ("ht", "index")))
_ROW_OTHERS = _row_others(_ROW_DIMENSION_FIELDS)


def _formatting_xml(sqref: str, rules: list[Rule]) -> str | None:
    """A range's ConditionalFormatting as openpyxl's to_tree writes it, for rules of a type, a
    priority, a differential style and formulas; None for anything else."""
    parts = [f'<conditionalFormatting sqref="{_escape_attrib(sqref)}">']  # i18n: not text
    for rule in rules:
        fields = rule.__dict__
        others = _other_rule_fields(fields) if fields.keys() >= _OTHER_RULE_KEYS else None
        if (others != _NO_OTHER_RULE_FIELDS and any(fields.get(name) is not None for name in _OTHER_RULE_FIELDS)) \
                or not rule.formula \
                or type(rule.priority) is not int or not isinstance(rule.dxfId, (int, type(None))):
            return None
        parts.append(f'<cfRule type="{_escape_attrib(rule.type)}" priority="{rule.priority}"'  # i18n: not text
                     + ("" if rule.dxfId is None else f' dxfId="{rule.dxfId}"') + ">")
        for formula in rule.formula:
            if type(formula) is not str or not formula:
                return None
            parts.append(f"<formula>{_escape_cdata(formula)}</formula>")  # not formula text
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


# DataValidation -> its XML: _Writer.validate's objects serve every book of a process and are
# not changed once made, so each is written out once
_VALIDATION_XML: dict[int, tuple[DataValidation, str | None]] = {}


def _validation_xml(dv: DataValidation) -> str | None:
    """One DataValidation as openpyxl's to_tree writes it, or None when it is not the common case."""
    parts = [f'<dataValidation sqref="{_escape_attrib(str(dv.sqref))}"']  # i18n: not text
    for name in _VALIDATION_FIELDS:
        value = getattr(dv, name)
        if value is None:
            continue
        if type(value) is bool:
            value = "1" if value else "0"
        elif type(value) is not str:
            return None
        parts.append(f' {name}="{_escape_attrib(value)}"')  # not formula text
    formulas = [(tag, getattr(dv, tag)) for tag in ("formula1", "formula2")]
    formulas = [(tag, text) for tag, text in formulas if text is not None]
    if not formulas:
        return "".join(parts) + " />"
    parts.append(">")
    for tag, text in formulas:
        stripped = text.strip() if type(text) is str and text else None
        if stripped is None or (stripped and text != stripped):     # empty, or openpyxl adds xml:space
            return None
        parts.append(f"<{tag}>{_escape_cdata(text)}</{tag}>")  # not formula text
    parts.append("</dataValidation>")
    return "".join(parts)


class _BookWriter(WorkbookWriter):
    """openpyxl's workbook part with its defined names (~850 a book) written as text, as
    ElementTree writes them: the list openpyxl builds is serialised with one stand-in name,
    whose text is then replaced."""

    def write(self):
        self.write_properties()
        self.write_worksheets()
        self.write_names()
        self.write_pivots()
        self.write_views()
        self.write_refs()
        names = self.package.definedNames
        text = _names_xml(names.definedName) if names is not None and names.definedName else None
        if text is None:
            return tostring(self.package.to_tree())
        self.package.definedNames = DefinedNameList(definedName=[DefinedName(_STAND_IN, attr_text=_STAND_IN)])
        xml = tostring(self.package.to_tree())
        stand_in = tostring(self.package.definedNames.to_tree())
        if xml.count(stand_in) != 1:
            self.package.definedNames = names
            return tostring(self.package.to_tree())
        return xml.replace(stand_in, text.encode("utf-8"))


_STAND_IN = "trainbudget_defined_names"
_WRITE_DATA_OF = "3.1.5"     # the openpyxl whose ExcelWriter.write_data _FastExcelWriter.write_data copies


def _names_xml(names) -> str | None:
    """<definedNames> as ElementTree writes DefinedNameList.to_tree(), or None when a name is
    not a plain one (_Name) and not one of a sheet's few (written through openpyxl)."""
    parts = ["<definedNames>"]
    for name in names:
        if type(name) is _Name and _name_others(name.__dict__) == _NO_OTHERS \
                and type(name.attr_text) is str and name.name not in RESERVED:
            parts.append(f'<definedName name="{_escape_attrib(name.name)}">'  # i18n: not text; not formula text
                         f"{_escape_cdata(name.attr_text)}</definedName>")
        else:
            parts.append(tostring(name.to_tree()).decode("utf-8"))
    parts.append("</definedNames>")
    return "".join(parts)


class _FastExcelWriter(ExcelWriter):
    def __init__(self, workbook, archive, font_names: _FontNames):
        super().__init__(workbook, archive)
        self.dxf_ids: dict[int, tuple[object, int | None]] = {}   # differential style ids, by identity
        # a cell's style array (its bytes, before its font is named) -> ' s="its id in the book"'
        self.style_ids: dict[bytes, str] = {}
        self.font_names = font_names

    def font_name(self, cell) -> None:
        """Name the font of a styled cell before its style's id is found."""
        style = cell._style
        named = self.font_names.named.get(style[0])
        style[0] = self.font_names(style[0]) if named is None else named

    def write_data(self):
        """openpyxl's ExcelWriter.write_data (3.1), with the workbook part written by
        _BookWriter (its defined names as text)."""
        from openpyxl import __version__ as openpyxl_version
        from openpyxl.packaging.extended import ExtendedProperties

        if len(self.workbook.custom_doc_props) >= 1 or openpyxl_version != _WRITE_DATA_OF:
            return super().write_data()     # not what this copy was made from: openpyxl's own
        archive = self._archive
        archive.writestr(ARC_APP, tostring(ExtendedProperties().to_tree()))
        archive.writestr(ARC_CORE, tostring(self.workbook.properties.to_tree()))
        archive.writestr(ARC_THEME, self.workbook.loaded_theme or theme_xml)
        self._write_worksheets()
        self._write_chartsheets()
        self._write_images()
        self._write_charts()
        self._write_external_links()
        archive.writestr(ARC_STYLE, tostring(write_stylesheet(self.workbook)))
        writer = _BookWriter(self.workbook)
        archive.writestr(ARC_ROOT_RELS, writer.write_root_rels())
        archive.writestr(ARC_WORKBOOK, writer.write())
        archive.writestr(ARC_WORKBOOK_RELS, writer.write_rels())
        self._merge_vba()
        self.manifest._write(archive, self.workbook)

    def write_worksheet(self, ws):
        ws._drawing = SpreadsheetDrawing()
        ws._drawing.charts = ws._charts
        ws._drawing.images = ws._images
        writer = _FastSheetWriter(ws, out=io.BytesIO())
        writer.book = self
        writer.write()
        ws._rels = writer._rels
        self._archive.writestr(ws.path[1:], writer.read())
        self.manifest.append(ws)


WEEK_ALIGNMENT = Alignment(text_rotation=90, horizontal="center")   # the Timeline's week heads
YEAR_FONT = Font(bold=True, size=8)                                 # and the years above them
TIMELINE_PHASES = ("data_prep", "validation", "scaling", "training", "evaluation", "deployment")


def candidate_columns(model) -> tuple[list[str], list[str]]:
    """(layout inputs and key outputs, every other layout-dependent item they need)."""
    layout_inputs = [d.name for d in model.layout_inputs()]
    needed = model.closure(CANDIDATE_KEYS)
    # row items are the Stages sheet's: a run in stages has its layout pinned, one candidate
    working = [n for n in model.affected_by(set(layout_inputs))
               if n in needed and n not in CANDIDATE_KEYS and model.items[n].kind != "rows"]
    return layout_inputs + list(CANDIDATE_KEYS), working


def _candidate_label(m: Messages, layout, n: int) -> str:
    if layout.search is None:
        return m("workbook.layout_candidates.pinned")
    if n >= layout.rejected_from:
        return m("workbook.layout_candidates.rejected")
    return m("workbook.layout_candidates.chosen") if n == 0 else str(n + 1)


# The ask (issue 25): the Sensitivity sheet's cells under the total, labelled live
# (workbook.summary.<name>): the approval percentile of the total, and where the point estimate
# and the total with the flat buffer sit in the range.
ASK_ROWS = ("total_cost_ask", "point_percentile", "buffer_percentile")
# The Summary's blocks: (id, the names it shows); the heading is workbook.summary.blocks.<id>.
SUMMARY_BLOCKS = (
    ("answer", ("accelerator_name", "gpu_count", "reserved_gpus", "layout_label", "memory_in_words",
                "train_days", "stretched_training_days", "start_date", "project_end")),
    ("cost", (*COST_LINES, "subtotal_cost", *AFTER_SUBTOTAL, "total_cost", *ASK_ROWS)),
    ("energy", ("energy_mwh", "co2_tonnes", "pue", "grid_intensity")),
    ("details", ("ownership", "price_tier", "tier_rate", "train_flops", "effective_tflops", "gpu_hours", "gpu_days",
                 "goodput", "non_training_days", "run_days", "training_start", "training_end", "project_weeks",
                 "memory_per_gpu_gb", "usable_hbm_gb", "min_gpus_for_memory")),
)
# Summary rows with a label of their own (workbook.summary.labels.<name>), not the model's.
SUMMARY_LABELS = ("accelerator_name", "gpu_count", "layout_label", "train_days", "project_end", "start_date")


def memory_in_words(m: Messages) -> Expr:
    """The memory verdict in words, live: "89.1 GB needed of 72 GB usable: does NOT fit"."""
    mem, usable, fits = Ref("memory_per_gpu_gb"), Ref("usable_hbm_gb"), Ref("check_memory_fits")
    verdict = IF(fits.eq(0), m("workbook.summary.memory.fits"), m("workbook.summary.memory.does_not_fit"))
    return IF(ISERROR(mem - usable + fits), m("workbook.summary.memory.cannot"),
              live_text(m("workbook.summary.memory.words"), needed=ROUND(mem, 1), usable=ROUND(usable, 1),
                        verdict=verdict))


CHANGE_LOG_ROWS = 200
# The Glossary's terms in order: workbook.glossary.terms.<id>.term and .meaning.
GLOSSARY = ("gpu", "gpu_hour", "node", "hbm", "flop", "parameters", "tokens", "mfu", "hfu", "tp", "pp", "dp",
            "zero", "sp", "recomputation", "micro_batch", "bubble", "layout_efficiency", "goodput", "checkpoint",
            "young_daly", "mtbi", "buffer", "memo_line", "check_warning", "input_generated")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))
