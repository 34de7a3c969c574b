"""Workbook → scenario: bring a reviewer's edits back into the file the team keeps.

`import_workbook(path, catalog)` reads the input cells of a trainbudget workbook — as
generated, or edited in Excel or LibreOffice — by their defined names, checks each against its
definition (a number where a number belongs, within the workbook's validation), and returns an
`Imported` with the scenario text (YAML with comments) and the warnings to show. The scenario is
`unbind` of the cells, plus the catalog rows that differ from the bundled catalog, and is
validated like any scenario before it is returned.

Nothing is read by the text a cell shows: cells by their defined names, choices by their ids.
The workbook's language (its `language` property, else the catalog whose subject line it
carries) is the scenario's `language`, and the language of the warnings, the errors and the
comments of the scenario it writes.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import string
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..core import limits
from ..core.dates import excel_serial
from ..core.reading import ReadRefused
from .bind import CODECS, _in_sentence, unbind
from .catalog import FIGURES, Catalog
from ..core.errors import InputError, Msg, Problem
from ..core.i18n import DEFAULT_LANG, catalog as messages, fmt, languages, text
from ..model.lineitems import InputDef, Model
from ..model.model import ACCELERATOR_TABLE, FX_TABLE, SEARCH_INPUTS, build_model
from .options import parse_scenario
from .workbook_reader import Box, Unreadable, XlsxReader, column_letters, parse_cell

# The dense FP8 and FP4 peaks: blank where not published, a figure a reviewer may type
PEAK_COLUMNS = ("peak_fp8_tflops", "peak_fp4_tflops")
CATALOG_COLUMNS = ("id", "name", "vendor", *FIGURES, *PEAK_COLUMNS)


class WorkbookError(InputError):
    """A workbook whose cells cannot become a scenario: each problem names sheet, cell, name."""


@dataclass
class Imported:
    text: str                                   # the scenario, YAML with comments
    data: dict                                  # the same, as data
    warnings: list[str] = field(default_factory=list)   # in the language asked for, else the book's
    lang: str = DEFAULT_LANG                    # the workbook's language: the scenario's


class _Label:
    """An input's label inside a message, in the language the message is printed in."""

    def __init__(self, name: str):
        self.name = name

    def render(self, lang: str = DEFAULT_LANG) -> str:
        return _in_sentence(build_model(lang).inputs[self.name].label, lang)


def _unit(unit: str):
    """A unit id as the message's language shows it."""
    return Msg(f"units.{unit}") if f"units.{unit}" in messages(DEFAULT_LANG) else unit


def book_language(props) -> str:
    """The language a workbook was written in: its `language` property (zh, zh-CN), else the
    language whose catalog wrote its subject line, else English."""
    known = languages()
    tag = (props.language or "").replace("_", "-").split("-")[0].lower()
    if tag in known:
        return tag
    for lang in known:
        if props.subject and props.subject == messages(lang).get("workbook.properties.subject"):
            return lang
    return DEFAULT_LANG


def _generated_description(props) -> bool:
    """Whether the description is the one trainbudget wrote (not a scenario's own): it carries
    the scenario version, or reads as a language's generated description."""
    description = props.description or ""
    if props.identifier and props.identifier in description:
        return True
    for lang in languages():
        template = messages(lang).get("workbook.properties.description")
        if template and _template_pattern(template).fullmatch(description):
            return True
    return False


def _template_pattern(template: str, **fixed: str) -> re.Pattern:
    """A catalog template as a pattern: the `fixed` figures as given, the others as any text
    (a named group each)."""
    out, seen = [], set()
    for literal, name, _, _ in string.Formatter().parse(template):
        out.append(re.escape(literal))
        if name is None:
            continue
        if name in fixed:
            out.append(re.escape(fixed[name]))
        else:
            out.append(f"(?P={name})" if name in seen else f"(?P<{name}>.*?)")
            seen.add(name)
    return re.compile("".join(out), re.S)


_AREA = re.compile(r"(?:'((?:[^']|'')+)'|([^'!:,;\s\[\]()\"=+*/<>&^-][^'!:,;\s\[\]()\"=+*/<>&^]*))!"
                   r"(\$?[A-Za-z]{1,3}\$?[0-9]{1,7})(?::(\$?[A-Za-z]{1,3}\$?[0-9]{1,7}))?")
_WHOLE = re.compile(r"(?:'(?:[^']|'')+'|[^'!]+)!\$?([A-Za-z]{1,3}|[0-9]{1,7}):\$?([A-Za-z]{1,3}|[0-9]{1,7})")


@dataclass(frozen=True)
class _Area:
    sheet: str
    first: tuple[int, int]      # (row, column)
    last: tuple[int, int]

    def ref(self) -> str:
        a = f"{column_letters(self.first[1])}{self.first[0]}"
        return a if self.first == self.last else f"{a}:{column_letters(self.last[1])}{self.last[0]}"


def known_names() -> set[str]:
    """The defined names the importer may read: the model's inputs and its tables' columns."""
    model = build_model()
    return set(model.inputs) | {f"{t.name}_{c[0]}" for t in model.tables.values() for c in t.columns}


class _Book:
    """The cells behind a workbook's defined names, read within bounds (workbook_reader.py):
    only the sheets the names point at, only the rows and columns around their areas."""

    MARGIN_ROWS, MARGIN_COLUMNS = 2, 5     # the Source cells beside an input, a table

    def __init__(self, path: Path):
        try:
            self.reader = XlsxReader(path)
            self.props = self.reader.properties()
        except FileNotFoundError:
            raise WorkbookError(path, [Problem("", Msg("errors.file.not_found.message"),
                                               Msg("errors.file.not_found.fix"))]) from None
        except ReadRefused as exc:
            raise WorkbookError(path, [Problem("", exc.message, exc.fix)]) from None
        except OSError as exc:
            raise WorkbookError(path, [Problem("", Msg("importer.errors.unreadable.message",
                                                       detail=exc.strerror or str(exc)),
                                               Msg("importer.errors.unreadable.fix"))]) from None
        self.path = path
        self.lang = book_language(self.props)
        self.areas: dict[str, _Area | tuple] = {}
        for name in known_names() & set(self.reader.defined_names):
            self.areas[name] = self._area(self.reader.defined_names[name])
        self.boxes: dict[str, Box] = {}
        for area in self.areas.values():
            if isinstance(area, _Area):
                box = self.boxes.setdefault(area.sheet, Box(0, 0))
                box.last_row = min(max(box.last_row, area.last[0] + self.MARGIN_ROWS), limits.MAX_READ_ROWS)
                box.last_column = min(max(box.last_column, area.last[1] + self.MARGIN_COLUMNS),
                                      limits.MAX_READ_COLUMNS)

    def close(self) -> None:
        self.reader.close()

    def _area(self, text: str):
        """A defined name's text as an _Area, None for #REF! (a deleted row), else (why, figures)."""
        text = text.strip()
        if "#REF!" in text:
            return None
        match = _AREA.fullmatch(text)
        if match is None:
            whole = _WHOLE.fullmatch(text)
            if whole:
                return ("too_large", {"cells": f"{text[:80]}", "limit": limits.MAX_NAME_CELLS})
            if text.startswith("[") or re.match(r"'?\[", text):
                return ("other_workbook", {})
            if re.search(r"![^!]*[,;]|[,;]\s*'?[^,;]*!", text):
                return ("several_areas", {})
            return ("not_a_cell", {})
        sheet = match.group(1).replace("''", "'") if match.group(1) is not None else match.group(2)
        if sheet.startswith("["):       # '[1]Inputs'!B20: a sheet of another workbook
            return ("other_workbook", {})
        first = parse_cell(match.group(3))
        last = parse_cell(match.group(4)) if match.group(4) else first
        if first is None or last is None:
            return ("not_a_cell", {})
        first, last = (min(first[0], last[0]), min(first[1], last[1])), (max(first[0], last[0]), max(first[1], last[1]))
        area = _Area(sheet, first, last)
        cells = (last[0] - first[0] + 1) * (last[1] - first[1] + 1)
        if cells > limits.MAX_NAME_CELLS or last[0] > limits.MAX_READ_ROWS or last[1] > limits.MAX_READ_COLUMNS:
            return ("too_large", {"cells": f"{area.ref()}", "limit": limits.MAX_NAME_CELLS, "area": area})
        return area

    def _bad_name(self, name: str, why: str, figures: dict) -> WorkbookError:
        text = self.reader.defined_names.get(name, "")
        area = figures.pop("area", None)
        at = f"{area.sheet}!{area.ref()} ({name})" if area else name
        return WorkbookError(self.path, [Problem(
            at, Msg("importer.errors.bad_name.message", text=repr(text[:80]), why=Msg(f"importer.errors.bad_name.{why}", **figures)),
            Msg("importer.errors.bad_name.fix"))], self.lang)

    def area(self, name: str) -> _Area | None:
        """Where a defined name points: None when the book has no such name (or #REF!); a
        name that points at anything but cells of this workbook is a WorkbookError."""
        if name not in self.areas:
            if name not in self.reader.defined_names:
                return None
            self.areas[name] = self._area(self.reader.defined_names[name])
        area = self.areas[name]
        if isinstance(area, tuple):
            raise self._bad_name(name, area[0], dict(area[1]))
        if area is not None and area.sheet not in self.reader.sheet_parts:
            raise WorkbookError(self.path, [Problem(
                f"{area.sheet}!{area.ref()} ({name})", Msg("importer.errors.no_sheet.message", sheet=area.sheet),
                Msg("importer.errors.no_sheet.fix"))], self.lang)
        return area

    def where(self, name: str) -> tuple[str, str] | None:
        area = self.area(name)
        return None if area is None else (area.sheet, area.ref())

    def sheet(self, name: str):
        try:
            return self.reader.sheet(name, self.boxes.get(name, Box(0, 0)))
        except ReadRefused as exc:
            raise WorkbookError(self.path, [Problem("", exc.message, exc.fix)], self.lang) from None

    def value(self, sheet: str, row: int, column: int):
        ws = self.sheet(sheet)
        return None if ws is None else ws.cells.get((row, column))

    def cells(self, name: str) -> list[tuple[str, object]]:
        """[(Sheet!A1, value)] of a defined name's area, row by row."""
        area = self.area(name)
        if area is None:
            raise WorkbookError(self.path, [Problem(
                name, Msg("importer.errors.no_name.message"), Msg("importer.errors.no_name.fix"))], self.lang)
        ws = self.sheet(area.sheet)
        return [(f"{area.sheet}!{column_letters(c)}{r}", ws.cells.get((r, c)))
                for r in range(area.first[0], area.last[0] + 1) for c in range(area.first[1], area.last[1] + 1)]

    def notes(self) -> list[tuple[str, str | None, str]]:
        """(Sheet!A1, the defined name of that cell or None, the note) of every sheet read."""
        names = {}
        for name, area in self.areas.items():
            if isinstance(area, _Area) and area.first == area.last and not name.startswith("gen_"):
                names.setdefault((area.sheet, area.first), name)
        return [(f"{ws.name}!{column_letters(c)}{r}", names.get((ws.name, (r, c))), note)
                for ws in self.reader.sheets.values() for (r, c), note in sorted(ws.notes.items())]

    def notes_unread(self) -> list[tuple[str, Msg]]:
        return [(ws.name, ws.notes_unread) for ws in self.reader.sheets.values() if ws.notes_unread is not None]


def _cell_value(book: _Book, d: InputDef, where: str, value) -> object:
    """One input cell as the model's value, or a problem naming the cell."""
    def bad(message: Msg, fix: Msg):
        return WorkbookError(book.path, [Problem(f"{where} ({d.name})", message, fix)], book.lang)

    if isinstance(value, Unreadable):
        raise bad(Msg("importer.errors.unreadable_cell.message", why=value.why),
                  Msg("importer.errors.unreadable_cell.fix", unit=_unit(d.unit)))
    if isinstance(value, str) and value.startswith("="):
        raise bad(Msg("importer.errors.formula.message"), Msg("importer.errors.formula.fix"))
    if value is None or (isinstance(value, str) and not value.strip()):
        if d.optional or d.is_range:
            return None
        raise bad(Msg("importer.errors.blank.message"), Msg("importer.errors.blank.fix", label=_Label(d.name)))
    if d.kind in {"choice", "text", "range_text", "generated_text"}:
        typed = str(value).strip()
        if d.choices and typed not in d.choices:
            choices = ", ".join(d.choices)
            raise bad(Msg("importer.errors.choice.message", value=repr(typed), choices=choices),
                      Msg("importer.errors.choice.fix", choices=choices))
        return typed
    if d.kind in ("date", "range_date"):      # a date cell; a column of them (the reference runs')
        if isinstance(value, dt.datetime):
            return excel_serial(value.date())
        if isinstance(value, dt.date):
            return excel_serial(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and \
                not limits.FIRST_DATE_SERIAL <= value <= limits.LAST_DATE_SERIAL:
            raise bad(Msg("importer.errors.date_range.message", value=f"{value:g}"),
                      Msg("importer.errors.date_range.fix"))
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise bad(Msg("importer.errors.not_number.message", value=repr(value)),
                  Msg("importer.errors.not_number.fix", unit=_unit(d.unit)))
    value = float(value)
    if d.kind == "integer" and not value.is_integer():
        raise bad(Msg("importer.errors.not_whole.message", value=f"{value:g}"),
                  Msg("importer.errors.not_whole.fix"))
    low, high = d.minimum, d.maximum
    outside = Msg("importer.errors.outside.message", value=f"{value:g}")
    if low is not None and (value < low or (d.positive and value <= low)):
        raise bad(outside, Msg("importer.errors.outside.fix_above" if d.positive
                               else "importer.errors.outside.fix_at_least", bound=f"{low:g}"))
    if high is not None and value > high:     # a fraction typed as a percentage (20 for 0.20) says so
        raise bad(outside, Msg("importer.errors.outside.fix_fraction" if d.kind == "fraction"
                               else "importer.errors.outside.fix_at_most", bound=f"{high:g}"))
    return value


def read_inputs(book: _Book, model: Model) -> dict[str, object]:
    values: dict[str, object] = {}
    for d in model.inputs.values():
        if not d.on_inputs_sheet:
            continue
        if d.kind.startswith("generated") and book.where(d.name) is None:
            values[d.name] = None
            continue
        if d.is_range and book.where(d.name) is None:     # a book from before the table
            values[d.name] = ()
            continue
        cells = book.cells(d.name)
        if d.is_range:
            values[d.name] = tuple(_cell_value(book, d, w, v) for w, v in cells)
        else:
            values[d.name] = _cell_value(book, d, *cells[0])
    return values


# The Compare sheet (budget/sheets/compare.py): a header row of option names, defined by
# compare_option_names (the base first), and below it the workings, one row per input with the
# input's name in column C; an option's own inputs are values, the others link to the Inputs sheet.
COMPARE_NAMES, COMPARE_LAST_ROW, COMPARE_NAME_COLUMN = "compare_option_names", "compare_total_cost", 3


def _is_link(formula: str, name: str) -> bool:
    """Whether a Compare cell's formula is the link to the Inputs sheet's input `name` (as the
    grid writes it: `=name`, or `=IF(ISNUMBER(name),name,"")` for an optional number)."""
    typed = "".join(formula.lstrip("=").split()).lower()
    name = name.lower()
    return typed in (name, f'if(isnumber({name}),{name},"")')


def _overrides(base: dict, option: dict) -> dict:
    """The keys of `option` that differ from `base`, as an option of a scenario writes them
    (budget/inputs/options.py merges them back): mappings key by key, `None` for a key the
    option does not have."""
    out: dict = {}
    for key, value in option.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            inner = _overrides(base[key], value)
            if inner:
                out[key] = inner
        elif key not in base or value != base[key]:
            out[key] = value
    out.update({key: None for key in base if key not in option})
    return out


def read_options(book: _Book, model: Model, values: dict, base: dict, catalog_rows: list[dict],
                 catalog: Catalog) -> list[dict]:
    """The scenario's `options:` read back from the Compare sheet: each option column's name and
    the inputs it holds as values (its own, or a reviewer's typed over a link), written as the
    keys that differ from the base scenario `base`. [] for a book without options."""
    names = book.area(COMPARE_NAMES)
    last = book.area(COMPARE_LAST_ROW)
    if names is None or last is None or names.last[1] <= names.first[1]:
        return []
    sheet = names.sheet
    book.boxes[sheet] = Box(min(last.last[0], limits.MAX_READ_ROWS), min(names.last[1], limits.MAX_READ_COLUMNS))
    ws = book.sheet(sheet)
    rows: dict[str, int] = {}      # input -> its row of the workings (below the key figures)
    for (r, c), name in ws.cells.items():
        if c == COMPARE_NAME_COLUMN and r > names.first[0] and isinstance(name, str) and name in values \
                and not model.inputs[name].is_range:
            rows[name] = max(rows.get(name, 0), r)
    options = []
    for c in range(names.first[1] + 1, names.last[1] + 1):
        where = f"{sheet}!{column_letters(c)}{names.first[0]}"
        title = ws.cells.get((names.first[0], c))
        if isinstance(title, Unreadable) or title is None or not str(title).strip():
            raise WorkbookError(book.path, [Problem(
                f"{where} ({COMPARE_NAMES})", Msg("importer.errors.option_name.message"),
                Msg("importer.errors.option_name.fix"))], book.lang)
        own = dict(values)
        for name, r in rows.items():
            cell = ws.cells.get((r, c))
            if isinstance(cell, str) and cell.startswith("=") and _is_link(cell, name):
                continue
            own[name] = _cell_value(book, model.inputs[name], f"{sheet}!{column_letters(c)}{r}", cell)
        data = _scenario_data(book, catalog, model, own, catalog_rows)
        options.append({"name": str(title).strip(), **_overrides(base, data)})
    return options


def _scenario_data(book: _Book, catalog: Catalog, model: Model, values: dict, catalog_rows: list[dict]) -> dict:
    """The scenario data of one column of inputs (the Inputs sheet's, an option's), without the
    catalog rows, name and sources."""
    data = unbind(model, values)
    # A reviewer who types both wins with the MFU (the workbook uses it first).
    hardware = data.setdefault("hardware", {})
    if "effective_tflops" in hardware and ("mfu" in hardware or "baseline_mfu" in hardware):
        hardware.pop("effective_tflops")
    peak, _ = _catalog_changes(catalog_rows, catalog, str(values["gpu_type"]))
    hardware.update(peak)
    _node_edits(book, catalog, str(values["gpu_type"]), values, data)
    fx = read_fx_rates(book, str(values.get("currency") or "USD"))
    if fx:
        data.setdefault("prices", {})["fx_rates"] = fx
    return data


def _catalog_source(book: _Book, n: int):
    """Row n's Source cell: the column right of the accelerator table's last column (the table
    gains columns over time; its last column's defined name says where it ends)."""
    names = [f"{ACCELERATOR_TABLE}_{c}" for c, _, _ in build_model().tables[ACCELERATOR_TABLE].columns]
    last = next(name for name in reversed(names) if book.where(name) is not None)   # older books: fewer
    cells = book.cells(last)
    if n >= len(cells):          # a tampered name: its area shorter than the table's id column
        raise book._bad_name(last, "not_a_cell", {})
    sheet, coordinate = cells[n][0].rsplit("!", 1)
    r, c = parse_cell(coordinate)
    source = book.value(sheet, r, c + 1)
    # The first spare row's Source cell holds the hint to add a row there: not a citation.
    hints = {messages(lang).get(f"workbook.catalog.spare_rows.{ACCELERATOR_TABLE}") for lang in languages()}
    return None if source in hints or isinstance(source, Unreadable) else source


def read_catalog_rows(book: _Book) -> list[dict]:
    columns = {c: book.cells(f"{ACCELERATOR_TABLE}_{c}") for c in CATALOG_COLUMNS
               if c not in PEAK_COLUMNS or book.where(f"{ACCELERATOR_TABLE}_{c}") is not None}
    if len({len(cells) for cells in columns.values()}) > 1:     # a tampered column's area
        name = next(f"{ACCELERATOR_TABLE}_{c}" for c, cells in columns.items() if len(cells) != len(columns["id"]))
        raise book._bad_name(name, "not_a_cell", {})
    for c in PEAK_COLUMNS:      # a book from before the FP8 and FP4 columns: blank
        columns.setdefault(c, [(None, None)] * len(columns["id"]))
    rows = []
    for n in range(len(columns["id"])):
        row = {c: columns[c][n][1] for c in CATALOG_COLUMNS}
        for c in CATALOG_COLUMNS:
            if isinstance(row[c], Unreadable):
                raise WorkbookError(book.path, [Problem(
                    f"{columns[c][n][0]} (acc_{c})", Msg("importer.errors.unreadable_cell.message", why=row[c].why),
                    Msg("importer.errors.figure_not_number.fix" if c in (*FIGURES, *PEAK_COLUMNS)
                        else "importer.errors.unreadable_cell.fix_text"))], book.lang)
        if row["id"] in (None, ""):
            if any(row[c] not in (None, "") for c in CATALOG_COLUMNS):
                raise WorkbookError(book.path, [Problem(
                    f"{columns['id'][n][0]} (acc_id)", Msg("importer.errors.row_without_id.message"),
                    Msg("importer.errors.row_without_id.fix"))], book.lang)
            continue
        for c in (*FIGURES, *PEAK_COLUMNS):
            if c in ("tdp_w", *PEAK_COLUMNS) and row[c] in (None, ""):    # optional: blank stays blank
                row[c] = None
                continue
            if isinstance(row[c], bool) or not isinstance(row[c], (int, float)) or \
                    not math.isfinite(row[c]) or abs(row[c]) > limits.MAX_CELL_NUMBER:
                raise WorkbookError(book.path, [Problem(
                    f"{columns[c][n][0]} (acc_{c})", Msg("importer.errors.not_number.message", value=repr(row[c])),
                    Msg("importer.errors.figure_not_number.fix"))], book.lang)
        row["source"] = _catalog_source(book, n) or text("importer.added_in_workbook", book.lang)
        rows.append(row)
    return rows


def _catalog_changes(rows: list[dict], catalog: Catalog, gpu_type: str) -> tuple[dict, list[dict]]:
    """(hardware keys, catalog rows) that reproduce the workbook's Catalog sheet."""
    hardware, changed = {}, []
    bundled = {a.id: a for a in catalog.accelerators}
    for row in rows:
        acc = bundled.get(str(row["id"]))
        if acc is not None:
            diffs = [f for f in (*FIGURES, *PEAK_COLUMNS) if _figure(row[f]) != _figure(getattr(acc, f))]
            same_words = row["name"] == acc.name and str(row["vendor"] or "") == (acc.vendor or "")
            if not diffs and same_words:
                continue
            if diffs == ["peak_bf16_tflops"] and row["id"] == gpu_type and same_words:
                hardware["peak_tflops"] = _plain(row["peak_bf16_tflops"])
                continue
        entry = {"id": str(row["id"]), "name": str(row["name"] or row["id"]),
                 "vendor": str(row["vendor"] or "")}
        entry.update({f: _plain(row[f]) for f in (*FIGURES, *PEAK_COLUMNS) if row[f] is not None})
        entry["gpus_per_node"] = int(entry["gpus_per_node"])
        entry["source"] = str(row["source"])[:2000]
        changed.append(entry)
    return hardware, changed


def _figure(x):
    """A catalog figure or cell as a comparable number (None when blank)."""
    x = getattr(x, "value", x)
    return None if x in (None, "") else float(x)


def _node_edits(book: _Book, catalog: Catalog, gpu_type: str, values: dict, data: dict) -> None:
    """A reviewer's edit of the chosen accelerator's node figures on the Catalog sheet becomes
    the scenario's override (unless the Inputs sheet already overrides them)."""
    ids = [str(v or "").lower() for _, v in book.cells(f"{ACCELERATOR_TABLE}_id")]
    if gpu_type.lower() not in ids or catalog.prices is None:
        return
    n = ids.index(gpu_type.lower())
    cell = lambda column: book.cells(f"{ACCELERATOR_TABLE}_{column}")[n][1]  # noqa: E731
    node = catalog.prices.purchase_for(gpu_type)
    like = catalog.prices.node_for_power(gpu_type)
    power, price, currency = cell("node_overhead_kw"), cell("node_price"), cell("node_price_currency")
    if values.get("node_overhead_kw") in (None, "") and isinstance(power, (int, float)) and (
            like is None or float(power) != like.overhead_kw_per_node.value):
        data.setdefault("energy", {})["node_overhead_kw"] = _plain(power)
    if values.get("node_price") in (None, "") and isinstance(price, (int, float)) and (
            node is None or float(price) != node.price_per_node.value):
        data.setdefault("owned", {})["node_price"] = {"amount": _plain(price),
                                                      "currency": str(currency or values.get("currency"))}


def read_fx_rates(book: _Book, currency: str) -> dict[str, float]:
    """The FX table as `prices.fx_rates`: units of the plan's currency per unit of each other."""
    codes, rates = book.cells(f"{FX_TABLE}_id"), book.cells(f"{FX_TABLE}_rate")
    table = {str(c).strip().upper(): r for (_, c), (_, r) in zip(codes, rates)
             if c not in (None, "") and isinstance(r, (int, float)) and not isinstance(r, bool) and r > 0}
    if currency not in table:
        return {}
    return {code: _plain(rate / table[currency]) for code, rate in table.items() if code != currency}


def _plain(x):
    x = float(x)
    return int(x) if x.is_integer() and abs(x) < 1e15 else x


def _changed_since_generation(values: dict, model: Model) -> list[tuple[InputDef, object, object]]:
    out = []
    for name in SEARCH_INPUTS:
        gen = values.get(f"gen_{name}")
        now = values.get(name)
        if gen is None and now is None:
            continue
        if isinstance(now, float) and isinstance(gen, (int, float)):
            if abs(now - float(gen)) <= 1e-12 * max(abs(now), 1.0):
                continue
        elif now == gen:
            continue
        out.append((model.inputs[name], gen, now))
    return out


def _shown(d: InputDef, value, lang: str = DEFAULT_LANG) -> str:
    if value is None:
        return text("importer.blank", lang)
    if d.codec == "date" and isinstance(value, (int, float)):
        return CODECS["date"].decode(value).isoformat()
    return f"{_plain(value):,}" if isinstance(value, float) else str(value)


def import_workbook(path: str | Path, catalog: Catalog, lang: str | None = None) -> Imported:
    """The scenario a workbook's input cells make. `lang`: the language of the warnings (the
    book's when None); the scenario keeps the book's language."""
    path = Path(path)
    book = _Book(path)
    try:
        return _import(book, path, catalog, lang or book.lang)
    finally:
        book.close()


def _import(book: _Book, path: Path, catalog: Catalog, lang: str) -> Imported:
    model = build_model(book.lang)
    values = read_inputs(book, model)
    catalog_rows = read_catalog_rows(book)
    data = _scenario_data(book, catalog, model, values, catalog_rows)
    options = read_options(book, model, values, data, catalog_rows, catalog)
    _, rows = _catalog_changes(catalog_rows, catalog, str(values["gpu_type"]))
    if rows:
        data["catalog"] = {"accelerators": rows}
    props = book.props
    name = (props.title or path.stem).strip() or path.stem
    head = {"name": name}
    if props.description and not _generated_description(props):
        head["description"] = props.description
    if book.lang != DEFAULT_LANG:
        head["language"] = book.lang
    data = {**head, **data}
    data["sources"] = _sources(book, model)
    if options:
        data["options"] = options

    changed = _changed_since_generation(values, model)
    searched = values.get("layout_searched") == "yes"
    warnings = [fmt("importer.warnings.notes_unread", lang, sheet=sheet, reason=why.render(lang))
                for sheet, why in book.notes_unread()]
    if changed and searched:
        what = "; ".join(f"{d.path}: {_shown(d, gen, lang)} -> {_shown(d, now, lang)}" for d, gen, now in changed)
        warnings.append(fmt("importer.warnings.search_changed", lang, changes=what))
    try:
        parse_scenario(data, path, catalog)
    except InputError as err:
        raise WorkbookError(path, [Problem(p.at, p.what, Msg("importer.errors.in_cell", fix=p.how), p.renames)
                                   for p in err.problems], book.lang) from None
    return Imported(_yaml(data, changed, searched, path, book.lang, book.notes()), data, warnings, book.lang)


def _cited(source, path: str, lang: str) -> str | None:
    """The scenario's own citation of `path` in a Source cell, read by the template that wrote
    it (plan.bind.scenario_cited, "scenario f: path (x)"); None when the cell holds none."""
    if not isinstance(source, str):
        return None
    match = _template_pattern(text("plan.bind.scenario_cited", lang), path=path).fullmatch(source)
    return match.group("cited") if match else None


def _sources(book: _Book, model: Model) -> dict[str, str]:
    """The scenario's own citations, read back from the Source column ("scenario f: path (x)")."""
    out = {}
    for d in model.inputs.values():
        if d.path is None or d.is_range or not d.on_inputs_sheet or d.kind.startswith("generated"):
            continue
        at = book.where(d.name)
        if at is None:
            continue
        sheet, ref = at
        r, _c = parse_cell(ref.split(":")[0])
        cited = _cited(book.value(sheet, r, 4), d.path, book.lang)
        if cited is not None:
            out[d.path] = cited
    # the staffing table's Source column is right of it; the stages table's is on its title row
    for path, first, (down, right) in (("staffing", "staff_role", (0, 4)), ("stages", "stage_name", (-2, 3))):
        if book.where(first) is None:
            continue
        sheet, ref = book.cells(first)[0][0].rsplit("!", 1)
        r, c = parse_cell(ref)
        cited = _cited(book.value(sheet, r + down, c + right), path, book.lang) if r + down >= 1 else None
        if cited is not None:
            out[path] = cited
    return out


_NOT_IN_A_COMMENT = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]+")


def _note_line(where: str, name: str | None, note: str) -> str:
    """A cell note as one comment line: line breaks and control characters as spaces, at most
    MAX_NOTE_CHARS characters."""
    note = " ".join(_NOT_IN_A_COMMENT.sub(" ", note).split())
    if len(note) > limits.MAX_NOTE_CHARS:
        note = note[:limits.MAX_NOTE_CHARS - 1] + "…"
    return f"  {where}{f' ({name})' if name else ''}: {note}"


def _yaml(data: dict, changed, searched: bool, path: Path, lang: str = DEFAULT_LANG,
          cell_notes: list | None = None) -> str:
    """The scenario as YAML: a header that says where it came from, a comment on each value
    that differs from the one the workbook was generated with, and on the search's choices;
    the comments in the workbook's language."""
    body = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    notes = {d.path: fmt("importer.comments.was", lang, value=_shown(d, gen, lang)) for d, gen, _ in changed}
    if searched:
        for key in ("hardware.gpu_count", "parallelism.tp", "parallelism.pp",
                    "parallelism.micro_batch_size", "parallelism.zero_stage",
                    "parallelism.recompute", "parallelism.sequence_parallel"):
            notes.setdefault(key, text("importer.comments.chosen", lang))
    lines, section = [], ""
    for line in body.splitlines():
        stripped = line.lstrip(" ")
        indent = len(line) - len(stripped)
        key = stripped.split(":", 1)[0] if ":" in stripped and not stripped.startswith("- ") else None
        if indent == 0 and key:
            section = key
        dotted = key if indent == 0 else (f"{section}.{key}" if indent == 2 and key else None)
        if dotted in notes and not line.endswith(":"):
            line = f"{line}  # {notes[dotted]}"
        lines.append(line)
    header = [fmt("importer.comments.header", lang, book=path.name), text("importer.comments.generate", lang)]
    if changed:
        header.append(text("importer.comments.marked", lang))
    if cell_notes:      # a reviewer's notes on the cells: kept with the scenario, not dropped
        header.append(text("importer.comments.notes", lang))
        header.extend(_note_line(*note) for note in cell_notes)
    return "\n".join(f"# {line}" for line in header) + "\n" + "\n".join(lines) + "\n"
