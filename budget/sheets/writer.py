"""The small writer every sheet module writes through: a formula cell from an expression (its
planner value recorded), a defined name, the workbook's named styles, a unit beside a figure,
a sheet's title, header row, widths and page set-up, an input cell with its validation, and the
green/red flag formats; plus the text helpers (text that stays text, live sentences, units) and
the styles the sheets share. Which sheets a book has, and in which order, is book.py's.

Formulas read workbook-scope defined names (`=gpu_hours*price_per_gpu_hour`); every formula cell
carries the planner's value of it, which the book stores as the cell's cached value and the
recalculation tests hold the spreadsheet engines' results to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from openpyxl import Workbook
from openpyxl.formatting.rule import Rule
from openpyxl.styles import Alignment, Border, Font, NamedStyle, PatternFill, Protection, Side
from openpyxl.styles.differential import DifferentialStyle
from openpyxl.utils.cell import column_index_from_string, coordinate_from_string
from openpyxl.worksheet.page import PageMargins

from .. import __version__
from ..core.text import display_width, has_wide, wrapped_lines  # noqa: F401 (the sheets' and tests' names)
from ..core.i18n import Messages
from ..formula.expr import AND, FALSE, IF, ISERROR, ISNUMBER, NOT, OR, Cell, Expr, Ref, Text, compile_items, lift
from ..model.integrity import INPUT_CHECKS_SHEET
from ..model.lineitems import InputDef
from ..model.model import ACCELERATOR_TABLE, ARCHITECTURE_TABLE, FX_TABLE, build_model
from ..plan.plan import Plan, scenario_digest
from ..xlsx.wrap import WRAP_TOP, Wrapping, line_height, text_height, text_width  # noqa: F401 (the sheets' names)
from ..xlsx.cells import (LETTERS, CellStyles, add_sheet, bind, bind_formula, bind_text, column_dimension,
                          defined_name, expression_rule, same_styles, set_style)
from .validation import validation_for

CALC_SHEETS = ("Memory", "Parallelism", "Compute", "Schedule", "Timeline", "Cost", "Checks", INPUT_CHECKS_SHEET)
CALC_WIDTHS = (46, 16, 16, 26, 48)      # a calculation sheet's columns: item, value, unit, name, note or fix
DATE_FORMAT = "yyyy-mm-dd"
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
COST_PRINT_SCALE = 62       # the Cost sheet in three pages, as the reviewer's pack needs (issue 29)
# the sheets of the reviewer's pack (Summary, Compare, Cost, Cashflow, Checks) that print at a fixed
# scale: their twelve pages hold the Checks sheet too (fit to width it printed 4 at 73%)
PACK_PRINT_SCALES = {"Cost": COST_PRINT_SCALE, "Checks": COST_PRINT_SCALE}
WIDE_SHEET_UNITS = 200      # wider than this (column width units) prints two pages wide
CHECK_FONT = Font(name="Calibri", color="C00000", bold=True)
WARNING_FONT = Font(name="Calibri", color="9C5700")
BODY_FONT = "Calibri"
NOTE_FONT = Font(name=BODY_FONT, italic=True, color="595959")
# Styles many cells share, made once: the workbook's style lists find a style they already hold
# by its identity (_SameStyles), without hashing and comparing it field by field.
NAME_FONT = Font(color="7F7F7F")           # a row's defined name beside it
BOLD_FONT = Font(bold=True)
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
# FLOP counts in thousands of powers of ten (3.15e24 reads 3,150.00 ×10²¹, 1.62e18 reads 1,620.00
# ×10¹⁵), smaller ones in full: each trailing comma divides by 1,000 (Excel, LibreOffice, Gnumeric)
FLOP_FORMAT = ('[>=1000000000000000000000]#,##0.00,,,,,,," ×10²¹";'    # i18n: not text
               '[>=1000000000000000]#,##0.00,,,,," ×10¹⁵";#,##0')


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
    if unit == "FLOP":      # on the Summary and Cost sheets, which finance reads: no E notation
        return FLOP_FORMAT
    if unit in {"GPU-s", "FLOP/s"}:
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


def add_named_styles(wb: Workbook) -> None:
    """The workbook's named styles: Input (blue on yellow, unlocked), Calculation, Header."""
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
    bind_text(cell, text)
    if lead:
        cell.quotePrefix = True


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
    texts are put in those places (a format string). Rendered with the defined names (`resolve`
    is str), an expression first met is rendered once, plainly: most of those are made for one
    cell (a rule, a label), and a template costs two renderings."""
    known = _TEMPLATES.get(id(expr))
    if known is None or known[0] is not expr:
        if resolve is str:
            return _plain(expr)
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


def _plain(expr: Expr) -> str:
    """expr.excel(), remembered for the process by the expression's identity."""
    known = _PLAIN.get(id(expr))
    if known is None or known[0] is not expr:
        if len(_PLAIN) >= 16384:        # expressions a long run made and dropped: start afresh
            _PLAIN.clear()
        known = _PLAIN[id(expr)] = (expr, expr.excel())
    return known[1]


_PLAIN: dict[int, tuple] = {}       # id(expr) -> (expr, its text with the defined names)
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
    """A conditional format that applies `fill` where the expression is true (openpyxl's
    FormulaRule), its differential style shared by every rule with that fill (a module
    constant), so that writing the book finds the style's id once per fill."""
    known = _RULE_STYLES.get(id(fill))
    if known is None or known[0] is not fill:
        known = _RULE_STYLES[id(fill)] = (fill, DifferentialStyle(fill=fill))
    return expression_rule(excel(expr), known[1])


def flag_fine(flag: Expr) -> Expr:
    """A flag (a check, the master check) is fine only as a number equal to 0: an error value,
    text or a blank is not."""
    return AND(ISNUMBER(flag), flag.eq(0))


def _flag_rules(first: str, blank_ok: bool) -> tuple[Expr, Expr]:
    """flag_format's two conditions for a range whose first cell is `first`, made once a process
    (the same cells carry flags in every book: their texts are then remembered by excel())."""
    known = _FLAG_RULES.get((first, blank_ok))
    if known is None:
        letters, row = coordinate_from_string(first)
        cell = Cell(row, column_index_from_string(letters))
        fine = flag_fine(cell)
        blank = IF(ISERROR(cell), FALSE, cell.eq(""))
        known = _FLAG_RULES[(first, blank_ok)] = (fine, NOT(OR(fine, blank)) if blank_ok else NOT(fine))
    return known


_FLAG_RULES: dict[tuple[str, bool], tuple[Expr, Expr]] = {}


class _Values(dict):
    """A compiled formula's values: the plan's, read through (a missing name is looked up in
    `base`); what it writes stays here."""

    __slots__ = ("base",)

    def __missing__(self, key):
        return self.base[key]


class Writer:
    """What every sheet module writes one plan's book through. `wb` holds the sheets named
    `titles` (book.py decides which, in which order); `result` gathers each formula cell's
    planner value and each defined name's cell."""

    def __init__(self, plan: Plan, titles: list[str]):
        self.plan = plan
        self.m = Messages(plan.lang)
        self.model = plan.model or build_model(plan.lang)
        self.currency = plan.scenario.prices.currency
        # The generation version: the scenario's content digest, never a clock, so rebuilds of
        # one scenario stay byte-identical.
        self.digest = scenario_digest(plan)
        self.wb = Workbook()
        same_styles(self.wb)
        add_named_styles(self.wb)
        self.wb.remove(self.wb.active)
        for title in titles:
            add_sheet(self.wb, title).sheet_properties.tabColor = TAB_COLOURS.get(title, CALC_TAB)
        self.styles = CellStyles(self.wb)
        self.wrapping = Wrapping(self.wb)
        self.result = WorkbookResult(b"")
        self.cached: dict[str, dict[tuple[int, int], object]] = {t: {} for t in titles}   # sheet -> cell -> value
        self.candidate_cells: list[dict[str, Cell]] = []   # per candidate: layout input -> Inputs cell
        self.table_cells: dict[tuple[str, int], str] = {}  # stages.table_cell's answers
        self.units: dict[tuple[str, str], tuple] = {}      # unit_cell's (formula or None, value)
        self.changed_rows: tuple[int, int] | None = None   # Inputs: the first and last input rows (column H counts)

    # --- words and units ---------------------------------------------------------------
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

    def unit_expr(self, unit: str, label: str | None = None, currency: str = "currency") -> Expr | None:
        """The unit (or the heading "label (unit)") as a formula over the `currency` cell, or
        None when the unit names no currency (then it is plain text)."""
        if "currency" not in unit:
            return None
        parts: list = []
        for n, piece in enumerate(self.unit_display(unit).split("currency")):
            if n:
                parts.append(Ref(currency))
            parts.append(piece)
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
        known = self.units.get((unit, currency))
        if known is None:           # the same unit gives the same formula and value in a book
            expr = self.unit_expr(unit, currency=currency)
            known = self.units[(unit, currency)] = \
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

    # --- formulas and names ------------------------------------------------------------
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

    def formula(self, ws, row: int, col: int, expr: Expr, expected, fmt: str | None,
                resolve: Callable[[str], str] = str):
        """A formula cell: `expr` rendered, each name it reads through `resolve` (a defined name by
        default), in the calculation style with `fmt`; `expected` is the planner's value of it,
        the cell's cached value and what the recalculation tests hold the spreadsheet's to."""
        if not isinstance(expr, Expr):      # a formula is an expression of the model, never text
            raise TypeError(f"formula at row {row}, column {col}: an expression, not {type(expr).__name__}")  # i18n: not text
        cell = ws.cell(row, col)
        bind_formula(cell, excel(expr, resolve))
        set_style(cell, self.styles.formatted_array(cell, "Calculation", fmt))
        self.result.expected[f"{ws.title}!{LETTERS[col]}{row}"] = expected
        self.cached[ws.title][(row, col)] = expected
        return cell

    def define(self, name: str, ws, ref: str) -> None:
        sheet = ws.title
        if name in self.wb.defined_names:
            raise ValueError(f"defined name {name} written twice")  # i18n: not text
        self.wb.defined_names[name] = defined_name(name, f"'{sheet}'!{ref}")
        self.result.names[name] = f"{sheet}!{ref.replace('$', '')}"

    # --- styles --------------------------------------------------------------------------
    def named(self, cell, style: str) -> None:
        """`cell.style = style` for the workbook's own named styles."""
        set_style(cell, self.styles.named_array(cell, style))

    def styled(self, cell, style: str, fmt: str | None) -> None:
        """`named(cell, style)` then `cell.number_format = fmt` when there is one."""
        set_style(cell, self.styles.formatted_array(cell, style, fmt))

    def flag_format(self, ws, coord: str, warning: bool = False, blank_ok: bool = False) -> None:
        """Green only for a number equal to 0; red (amber for a warning) for anything else,
        an error value included. Formula rules: a cellIs rule never matches an error. With
        `blank_ok`, an empty text (a spare stage's column) is left plain."""
        fine, bad = _flag_rules(coord.split(":")[0].replace("$", ""), blank_ok)
        ws.conditional_formatting.add(coord, formula_rule(fine, OK_RULE_FILL))
        ws.conditional_formatting.add(coord, formula_rule(bad, WARN_RULE_FILL if warning else BAD_RULE_FILL))

    def shade_by_flag(self, ws, coord: str, flag: Expr, green: bool = True) -> None:
        """Shade the cells `coord` red while `flag` (a check elsewhere) is not fine, and green
        while it is (unless `green` is False: a row that is plain when fine)."""
        fine = flag_fine(flag)
        if green:
            ws.conditional_formatting.add(coord, formula_rule(fine, OK_RULE_FILL))
        ws.conditional_formatting.add(coord, formula_rule(NOT(fine), BAD_RULE_FILL))

    # --- a sheet's frame -------------------------------------------------------------------
    def header(self, ws, row: int, labels: list[str]) -> None:
        for col, label in enumerate(labels, 1):
            self.named(ws.cell(row, col, label), "Header")

    def title(self, ws, text: str, subtitle: str) -> None:
        put_text(ws.cell(1, 1), text)
        ws.cell(1, 1).font = TITLE_FONT
        put_text(ws.cell(2, 1), subtitle)
        ws.cell(2, 1).font = SUBTITLE_FONT

    def widths(self, ws, widths: list[int]) -> None:
        for i, w in enumerate(widths, 1):
            column_dimension(ws, LETTERS[i]).width = w

    def page_setup(self, ws, title_rows: str = "1:4") -> None:
        """Landscape A4 (Letter prints the same: fit to width), narrow margins, one page wide;
        the Timeline's week grid runs over several pages at a fixed scale with the phase, start
        and end columns repeated. tests/test_print.py holds every sheet to 60% or more. Long
        text then wraps (wrap.py)."""
        ws.page_setup.orientation = "landscape"
        ws.page_setup.paperSize = ws.PAPERSIZE_A4
        ws.page_margins = PageMargins(left=0.4, right=0.4, top=0.6, bottom=0.6, header=0.3, footer=0.3)
        if ws.title == "Summary":       # a cover: one column of answers, read top to bottom
            ws.page_setup.orientation = "portrait"
        if ws.title == "Timeline":
            ws.sheet_properties.pageSetUpPr.fitToPage = False
            ws.page_setup.scale = TIMELINE_PRINT_SCALE
            ws.print_title_cols = "A:C"
        elif ws.title in PACK_PRINT_SCALES:
            ws.sheet_properties.pageSetUpPr.fitToPage = False
            ws.page_setup.scale = PACK_PRINT_SCALES[ws.title]
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
        self.wrapping.wrap_long_text(ws)

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

    # --- inputs --------------------------------------------------------------------------------
    def input_value(self, cell, value, unit: str, kind: str = "number") -> None:
        """An input cell: text stays text, numbers get their unit's format, both the input style."""
        if isinstance(value, str):
            put_text(cell, value)
            self.styled(cell, "Input", None)
        else:
            bind(cell, value)
            self.styled(cell, "Input", number_format(unit, kind))

    def validate(self, ws, coord: str, d: InputDef) -> None:
        """The input's data validation on `coord` (validation.py)."""
        ws.add_data_validation(validation_for(self, coord, d))
