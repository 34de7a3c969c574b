"""A workbook from outside (.xlsx), read within bounds: only the parts, sheets and cells asked for.

openpyxl's `load_workbook` reads every sheet whole, with its styles, images and comments: a
1.2 MB book took 2.1 GB, and a defined name spanning a sheet or a million rows ran for minutes.
This reader takes what the importer needs and no more, under the bounds of
budget/core/limits.py, through core/reading.py's `Archive` (file size, part count, declared
sizes, compression ratios):

- the package relationships, the workbook part (its sheets and defined names), the document
  properties, the shared strings: each capped (MAX_META_PART_BYTES, MAX_STRINGS_BYTES);
- a sheet only when a cell on it is asked for, parsed once as a stream (ElementTree's pull
  parser fed 4 MB at a time, each element dropped once read) and only within the `box` of rows and columns the caller
  gives it (the areas of the names it reads, and a margin); rows come in order, so the parse
  stops after the box's last row; a sheet part is capped at MAX_PART_BYTES;
- a sheet's cell notes (its comments part) within the same box, capped at MAX_NOTES_BYTES; notes
  that cannot be read are named (`notes_unread`), not silently dropped;
- the whole read under MAX_IMPORT_SECONDS of wall time.

Values come as the file holds them, typed but not interpreted: numbers (a date is its serial
number: no date conversion that could overflow), text, booleans, error codes ("#REF!"), a
formula as "=" and its text; a value that cannot be read (a number past a spreadsheet's range, a
shared string that does not exist) is an `Unreadable`, for the caller to name with its cell.
No XML document type or entity is accepted. Problems are `ReadRefused` (core/reading.py).
"""

from __future__ import annotations

import datetime as dt
import gc
import math
import posixpath
import re
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from ..core import limits
from ..core.errors import Msg
from ..core.reading import Archive, ReadRefused

REL_OFFICE_DOCUMENT = "/officeDocument"
REL_CORE_PROPERTIES = "/core-properties"
REL_WORKSHEET = "/worksheet"
REL_SHARED_STRINGS = "/sharedStrings"
REL_COMMENTS = "/comments"
_FIX = "errors.read.archive.fix"
_CELL = re.compile(r"\$?([A-Za-z]{1,3})\$?([0-9]{1,7})")
MAX_ROW, MAX_COLUMN = 1_048_576, 16_384


class Unreadable:
    """A cell value the file holds but no spreadsheet would show as a value: why, as a Msg."""

    __slots__ = ("why",)

    def __init__(self, why: Msg):
        self.why = why

    def __repr__(self) -> str:
        return f"Unreadable({self.why!r})"


@dataclass
class Properties:
    """The document properties the importer reads (docProps/core.xml)."""
    title: str | None = None
    subject: str | None = None
    description: str | None = None
    identifier: str | None = None
    language: str | None = None


@dataclass
class Box:
    """The rows and columns of a sheet that are read (1-based, inclusive)."""
    last_row: int
    last_column: int


@dataclass
class Sheet:
    name: str
    cells: dict = field(default_factory=dict)          # (row, column) -> value
    notes: dict = field(default_factory=dict)          # (row, column) -> note text
    notes_unread: Msg | None = None                    # why the notes could not be read


def column_index(letters: str) -> int:
    n = 0
    for ch in letters.upper():
        n = n * 26 + ord(ch) - 64
    return n


def column_letters(index: int) -> str:
    out = ""
    while index:
        index, rest = divmod(index - 1, 26)
        out = chr(65 + rest) + out
    return out


def parse_cell(ref: str) -> tuple[int, int] | None:
    """'B20' or '$B$20' -> (20, 2); None when it is not one cell of a sheet."""
    match = _CELL.fullmatch(ref)
    if not match:
        return None
    row, column = int(match.group(2)), column_index(match.group(1))
    if not (1 <= row <= MAX_ROW and 1 <= column <= MAX_COLUMN):
        return None
    return row, column


_LOCAL_NAMES: dict = {}


def _local(tag) -> str:
    """A tag's name without its namespace (transitional and strict workbooks alike)."""
    name = _LOCAL_NAMES.get(tag)
    if name is None:
        name = tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""
        if len(_LOCAL_NAMES) < 10_000:       # a hostile part's made-up tags are not all kept
            _LOCAL_NAMES[tag] = name
    return name


def _text_of(element) -> str:
    """The text of a string item (<si>, <is>, a note's <text>): its <t>, or its runs' <t>, without
    the phonetic guides (<rPh>)."""
    parts = []
    for child in element:
        name = _local(child.tag)
        if name == "t":
            parts.append(child.text or "")
        elif name == "r":
            for t in child:
                if _local(t.tag) == "t":
                    parts.append(t.text or "")
    return "".join(parts)


class XlsxReader:
    """One workbook, read part by part within the bounds (see the module docstring)."""

    def __init__(self, path: Path):
        self.deadline = time.monotonic() + limits.MAX_IMPORT_SECONDS
        self.archive = Archive(path)
        try:
            root_rels = self._rels("_rels/.rels", "")
            self.workbook_part = _target(root_rels, REL_OFFICE_DOCUMENT) or "xl/workbook.xml"
            self.props_part = _target(root_rels, REL_CORE_PROPERTIES) or "docProps/core.xml"
            base = posixpath.dirname(self.workbook_part)
            rels = self._rels(_rels_part(self.workbook_part), base)
            self.sheet_parts: dict[str, str] = {}
            self.defined_names: dict[str, str] = {}
            self._read_workbook(rels)
            self.strings_part = _target(rels, REL_SHARED_STRINGS)
            self._strings: list[str] | None = None
            self.sheets: dict[str, Sheet] = {}
        except BaseException:
            self.archive.close()
            raise

    def close(self) -> None:
        self.archive.close()

    # --- parts ---------------------------------------------------------------------------

    def _check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise ReadRefused(Msg("errors.read.archive.too_slow", seconds=limits.MAX_IMPORT_SECONDS), Msg(_FIX))

    def _xml(self, part: str, limit: int = limits.MAX_META_PART_BYTES, required: bool = True):
        data = self.archive.read(part, limit)
        if data is None:
            if required:
                raise ReadRefused(Msg("errors.read.archive.missing", part=part[:200]), Msg(_FIX))
            return None
        _no_doctype(data, part)
        try:
            return ET.fromstring(data)
        except ET.ParseError as exc:
            raise ReadRefused(Msg("errors.read.archive.damaged", part=part[:200], detail=str(exc)[:120]),
                              Msg(_FIX)) from None

    def _rels(self, part: str, base: str) -> list[tuple[str, str]]:
        """[(type, target as a part name)] of a relationships part; [] when there is none."""
        root = self._xml(part, required=False)
        if root is None:
            return []
        out = []
        for rel in root:
            if _local(rel.tag) != "Relationship" or rel.get("TargetMode") == "External":
                continue
            target = rel.get("Target") or ""
            target = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join(base, target))
            out.append((rel.get("Type") or "", target, rel.get("Id") or ""))
        return out

    def _read_workbook(self, rels) -> None:
        root = self._xml(self.workbook_part)
        by_id = {rid: target for kind, target, rid in rels if kind.endswith(REL_WORKSHEET)}
        for element in root.iter():
            name = _local(element.tag)
            if name == "sheet":
                rid = next((v for k, v in element.attrib.items() if _local(k) == "id"), None)
                sheet = element.get("name")
                if sheet is not None and rid in by_id and sheet not in self.sheet_parts:
                    self.sheet_parts[sheet] = by_id[rid]
            elif name == "definedName":
                # only workbook-wide names, as a formula refers to them; the first of a name wins
                if element.get("localSheetId") is None and element.get("name") is not None:
                    self.defined_names.setdefault(element.get("name"), element.text or "")

    def properties(self) -> Properties:
        root = self._xml(self.props_part, required=False)
        props = Properties()
        if root is None:
            return props
        for element in root:
            name = _local(element.tag)
            if name in ("title", "subject", "description", "identifier", "language"):
                setattr(props, name, (element.text or "")[:10_000] or None)
        return props

    def _shared_strings(self) -> list[str]:
        if self._strings is None:
            self._strings = []
            if self.strings_part:
                data = self.archive.read(self.strings_part, limits.MAX_STRINGS_BYTES)
                if data is not None:
                    self._strings = self._parse_strings(data)
        return self._strings

    def _parse_strings(self, data: bytes) -> list[str]:
        _no_doctype(data, self.strings_part)
        out = []
        try:
            for element, _ in _stream(data, self.strings_part):
                if _local(element.tag) == "si":
                    out.append(_text_of(element))
                    if len(out) % 10_000 == 0:
                        self._check_time()
        except ET.ParseError as exc:
            raise ReadRefused(Msg("errors.read.archive.damaged", part=self.strings_part[:200],
                                  detail=str(exc)[:120]), Msg(_FIX)) from None
        return out

    # --- sheets ----------------------------------------------------------------------------

    def sheet(self, name: str, box: Box) -> Sheet | None:
        """The cells of a sheet within `box` (None when the workbook has no such sheet)."""
        if name in self.sheets:
            return self.sheets[name]
        part = self.sheet_parts.get(name)
        if part is None:
            return None
        data = self.archive.read(part, limits.MAX_PART_BYTES)
        if data is None:
            raise ReadRefused(Msg("errors.read.archive.missing", part=part[:200]), Msg(_FIX))
        _no_doctype(data, part)
        sheet = Sheet(name)
        strings = None
        try:
            row, ordered, seen = 0, True, 0
            for element, _ in _stream(data, part, keep=("c",)):
                seen += 1
                if seen % 4096 == 1:
                    self._check_time()
                tag = _local(element.tag)
                if tag == "row":
                    number = element.get("r")
                    number = int(number) if number and number.isdigit() else row + 1
                    ordered = ordered and number > row
                    row = number
                    if ordered and row >= box.last_row:
                        break       # rows come in order: nothing further is in the box
                elif tag == "c":
                    at = parse_cell(element.get("r") or "")
                    if at is not None and at[0] <= box.last_row and at[1] <= box.last_column:
                        if strings is None and element.get("t") == "s":
                            strings = self._shared_strings()
                        sheet.cells[at] = _value(element, strings)
        except ET.ParseError as exc:
            raise ReadRefused(Msg("errors.read.archive.damaged", part=part[:200], detail=str(exc)[:120]),
                              Msg(_FIX)) from None
        self._read_notes(sheet, part, box)
        self.sheets[name] = sheet
        return sheet

    def _read_notes(self, sheet: Sheet, part: str, box: Box) -> None:
        """The sheet's cell notes within the box; why they could not be read, if so."""
        try:
            rels = self._rels(_rels_part(part), posixpath.dirname(part))
            notes = _target(rels, REL_COMMENTS)
            if notes is None:
                return
            data = self.archive.read(notes, limits.MAX_NOTES_BYTES)
            if data is None:
                return
            _no_doctype(data, notes)
            for element, _ in _stream(data, notes, keep=("comment",)):
                if _local(element.tag) != "comment":
                    continue
                at = parse_cell(element.get("ref") or "")
                if at is not None and at[0] <= box.last_row and at[1] <= box.last_column:
                    text = next((_text_of(child) for child in element if _local(child.tag) == "text"), "")
                    if text.strip():
                        sheet.notes[at] = text
                self._check_time()
        except ReadRefused as exc:
            if exc.message.key == "errors.read.archive.too_slow":
                raise
            sheet.notes, sheet.notes_unread = {}, exc.message
        except ET.ParseError as exc:
            sheet.notes, sheet.notes_unread = {}, Msg("errors.read.archive.damaged", part=part[:200],
                                                      detail=str(exc)[:120])


def _rels_part(part: str) -> str:
    folder, name = posixpath.split(part)
    return posixpath.join(folder, "_rels", f"{name}.rels")


def _target(rels, kind: str) -> str | None:
    return next((target for k, target, _ in rels if k.endswith(kind)), None)


def _no_doctype(data: bytes, part: str) -> None:
    """Office parts never declare a document type: one that does (entities) is refused."""
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise ReadRefused(Msg("errors.read.archive.doctype", part=part[:200]), Msg(_FIX))


FEED_BYTES = 2 << 20     # fed to the parser at a time: a token (a comment, a text) longer than a
# feed is scanned again at each feed, so small feeds make one huge token quadratic (ElementTree's
# iterparse feeds 16 KB: a 31.5 MB comment took 246 s; 1 MB feeds 5.1 s, 2 MB 1.7 s), while one
# feed's elements are all alive at once (2 MB of empty rows: ~125,000)


def _stream(data: bytes, part: str, keep: tuple[str, ...] = ("si",)):
    """(element, parent) at each element's end, each dropped from the tree once seen, except
    those inside an element named in `keep` (read whole at its end, then dropped)."""
    parser = ET.XMLPullParser(events=("start", "end"))
    stack = []
    view = memoryview(data)
    # No cyclic collection while parsing: elements hold no cycles (each is freed as it is
    # dropped), and passes over a feed's live elements made a 4 MB feed take 2.2 s instead of 0.7.
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield from _events(parser, view, len(data), stack, keep)
    finally:
        if collecting:
            gc.enable()


def _events(parser, view, size: int, stack: list, keep: tuple[str, ...]):
    inside, local = 0, _local
    for offset in range(0, max(size, 1), FEED_BYTES):
        parser.feed(view[offset:offset + FEED_BYTES].tobytes())
        if offset + FEED_BYTES >= size:
            parser.close()
        for event, element in parser.read_events():
            if event == "start":
                stack.append(element)
                if local(element.tag) in keep:
                    inside += 1
                continue
            stack.pop()
            parent = stack[-1] if stack else None
            kept = local(element.tag) in keep
            if kept:
                inside -= 1
            if inside and not kept:
                continue            # a part of a kept element: read with it
            yield element, parent
            element.clear()
        # Drop what this feed completed: every child of an open element but the open one
        # (removing each as it ends shifts its siblings: quadratic, 32 s for 800,000 strings).
        for depth, open_element in enumerate(stack):
            if _local(open_element.tag) in keep:
                break               # a kept element's children are read at its end
            child = stack[depth + 1] if depth + 1 < len(stack) else None
            if child is not None and len(open_element) and open_element[-1] is child:
                del open_element[:-1]
            else:
                del open_element[:]


def _value(cell, strings: list[str] | None):
    """A cell element's value as the file holds it (see the module docstring)."""
    kind = cell.get("t") or "n"
    v = f = inline = None
    for child in cell:
        name = _local(child.tag)
        if name == "v":
            v = child.text
        elif name == "f":
            f = child
        elif name == "is":
            inline = child
    if f is not None:
        return "=" + (f.text or "")
    if kind == "inlineStr":
        return _text_of(inline) if inline is not None else None
    if v is None:
        return None
    if kind == "s":
        try:
            return strings[int(v)]
        except (ValueError, IndexError, TypeError):
            return Unreadable(Msg("importer.errors.unreadable_cell.no_string", index=v[:20]))
    if kind in ("str", "e"):
        return v
    if kind == "b":
        if v.strip() in ("0", "1"):
            return v.strip() == "1"
        return Unreadable(Msg("importer.errors.unreadable_cell.not_boolean", value=repr(v[:20])))
    if kind == "d":
        try:
            return dt.datetime.fromisoformat(v.strip())
        except ValueError:
            return Unreadable(Msg("importer.errors.unreadable_cell.not_date", value=repr(v[:40])))
    text = v.strip()
    try:
        if re.fullmatch(r"[+-]?[0-9]{1,18}", text):
            return int(text)
        number = float(text) if len(text) <= 64 else math.nan
    except ValueError:
        return Unreadable(Msg("importer.errors.unreadable_cell.not_number", value=repr(text[:40])))
    if not math.isfinite(number) or abs(number) > limits.MAX_CELL_NUMBER:
        return Unreadable(Msg("importer.errors.unreadable_cell.out_of_range", value=repr(text[:40])))
    return number
