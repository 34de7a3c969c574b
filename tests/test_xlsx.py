"""The two ways a book is saved, and the values it carries for readers that do not recalculate.

Given a plan, the fast writer and openpyxl's own writer give the same workbook: the same parts,
the same XML after canonicalisation (the fast writer also writes the empty rows between the
first and the last, which hold nothing). Every formula cell carries the planner's value as its
cached value on both paths, so a mail or phone preview, a file previewer or pandas shows the
numbers; and those cached values are what LibreOffice computes when it recalculates the book.
"""

from __future__ import annotations

import io
import re
import zipfile
from xml.etree.ElementTree import canonicalize

import openpyxl
import pytest

from budget.inputs.options import load_scenario
from budget.plan import build_plan
from budget.sheets.book import write_workbook
from budget.xlsx.recalc import read_values, recalculate, relative_difference
from budget.xlsx.save import cached_xml
from support import SCENARIOS, SEED_H100, plan_of, raw, require_soffice, with_changes

BUNDLED = sorted(SCENARIOS.glob("*.yaml"))
_EMPTY_ROW = re.compile(r'<row r="[0-9]+"></row>')


def canonical_parts(data: bytes) -> dict[str, str]:
    """Each part of an .xlsx: XML canonicalised (C14N 2.0), empty <row> elements dropped."""
    out = {}
    with zipfile.ZipFile(io.BytesIO(data)) as book:
        for name in book.namelist():
            raw = book.read(name)
            if name.endswith((".xml", ".rels")):
                out[name] = _EMPTY_ROW.sub("", canonicalize(xml_data=raw.decode("utf-8")))
            else:
                out[name] = raw.hex()
    return out


def both_paths(plan):
    return write_workbook(plan, fast=True), write_workbook(plan, fast=False)


def _plan(path, catalog):
    return build_plan(load_scenario(path, catalog), catalog, path.stem)


def formula_keys(data: bytes) -> list[str]:
    wb = openpyxl.load_workbook(io.BytesIO(data))
    return [f"{ws.title}!{c.coordinate}" for ws in wb.worksheets for row in ws.iter_rows()
            for c in row if c.data_type == "f"]


def cached_values(data: bytes) -> dict[str, object]:
    """What a reader that does not recalculate sees: openpyxl with data_only=True."""
    wb = openpyxl.load_workbook(io.BytesIO(data), data_only=True)
    return {f"{ws.title}!{c.coordinate}": c.value for ws in wb.worksheets for row in ws.iter_rows()
            for c in row}


def assert_same_value(got, want, key: str) -> None:
    """Numbers within 1e-9 relative, or 1e-9 apart (a difference of two equal figures leaves a
    residue of ~1e-10 in one engine and 0 in another: relative to 0 it is infinite); an empty
    text equal to a blank; text equal."""
    if want == "" and got in ("", None):
        return
    if isinstance(got, (int, float)) and isinstance(want, (int, float)) and abs(got - want) <= 1e-9:
        return
    assert relative_difference(got, want) <= 1e-9, f"{key}: {got!r} != {want!r}"


def test_a_residue_of_a_difference_counts_as_zero():
    assert_same_value(4.656612873077393e-10, 0, "Layout candidates!B142")     # LibreOffice gave 0
    with pytest.raises(AssertionError):
        assert_same_value(2e-9, 0, "a figure")
    with pytest.raises(AssertionError):
        assert_same_value(1.000001, 1.0, "a figure")


def test_cached_value_xml_types_numbers_text_and_booleans():
    assert cached_xml(2.5) == ("", "2.5")
    assert cached_xml(7) == ("", "7")
    assert cached_xml(0.1 + 0.2) == ("", repr(0.1 + 0.2))        # reads back as the same double
    assert cached_xml("A & <B>") == (' t="str"', "A &amp; &lt;B&gt;")
    assert cached_xml("") == (' t="str"', "")
    assert cached_xml(True) == (' t="b"', "1")
    assert cached_xml(None) is None
    assert cached_xml(float("nan")) is None and cached_xml(float("inf")) is None


@pytest.mark.slow
def test_the_two_writer_paths_give_the_same_workbook(seed_h100):
    fast, plain = both_paths(seed_h100)
    assert fast.expected == plain.expected and fast.names == plain.names
    assert canonical_parts(fast.data) == canonical_parts(plain.data)


@pytest.mark.slow
@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.stem)
def test_the_two_writer_paths_agree_on_every_bundled_book(path, catalog):
    fast, plain = both_paths(_plan(path, catalog))
    assert canonical_parts(fast.data) == canonical_parts(plain.data)


def test_no_empty_workbook_protection_element(seed_h100):
    """Nothing protects the workbook's structure (the sheets are protected, without a password):
    neither path writes an empty <workbookProtection/>, which reads as protection to a reviewer's
    tools."""
    import zipfile
    for result in both_paths(seed_h100):
        with zipfile.ZipFile(io.BytesIO(result.data)) as z:
            assert b"workbookProtection" not in z.read("xl/workbook.xml")


def test_the_plain_path_is_what_the_environment_asks_for(seed_h100, monkeypatch):
    monkeypatch.setenv("TRAINBUDGET_XLSX_WRITER", "openpyxl")
    asked = write_workbook(seed_h100)
    assert asked.data == write_workbook(seed_h100, fast=False).data


@pytest.mark.slow
@pytest.mark.parametrize("fast", [True, False], ids=["fast", "openpyxl"])
def test_every_formula_cell_caches_the_planners_value(seed_h100, fast):
    result = write_workbook(seed_h100, fast=fast)
    keys = formula_keys(result.data)
    assert sorted(keys) == sorted(result.expected)
    seen = cached_values(result.data)
    for key in keys:
        assert_same_value(seen[key], result.expected[key], key)
    assert sum(bool(isinstance(v, str) and v) for v in map(seen.get, keys)) > 100    # sentences, not only numbers
    assert openpyxl.load_workbook(io.BytesIO(result.data)).calculation.fullCalcOnLoad    # still recalculated


@pytest.mark.slow
def test_hostile_text_results_are_cached_as_text_not_markup(catalog):
    """A text result holding markup is escaped in <v>, and reads back as the same text."""
    plan = plan_of(with_changes(raw(SEED_H100), {"name": "<b>&x</b>", "sources": {}}), catalog, "hostile")
    for fast in (True, False):
        result = write_workbook(plan, fast=fast)
        seen = cached_values(result.data)
        texts = [k for k, v in result.expected.items() if isinstance(v, str) and "<" in v]
        for key in texts:
            assert seen[key] == result.expected[key]


@pytest.fixture(scope="module")
def recalculated_bundled(tmp_path_factory, catalog):
    """Every bundled scenario's book on both writer paths, recalculated in one LibreOffice call."""
    require_soffice()
    folder = tmp_path_factory.mktemp("cached")
    books = {}
    for path in BUNDLED:
        fast, plain = both_paths(_plan(path, catalog))
        for kind, result in (("fast", fast), ("openpyxl", plain)):
            book = folder / f"{path.stem}-{kind}.xlsx"
            book.write_bytes(result.data)
            books[book] = result
    done = recalculate(list(books), folder / "recalculated")
    return {book: (result, read_values(done[book])) for book, result in books.items()}


@pytest.mark.office
def test_cached_values_equal_libreoffices_recalculation(recalculated_bundled):
    """Issue 26: what a non-calculating reader sees is what a spreadsheet computes, on every
    formula cell of every bundled book, on both writer paths."""
    assert len(recalculated_bundled) == 2 * len(BUNDLED)
    for book, (result, recalculated) in recalculated_bundled.items():
        seen = cached_values(result.data)
        for key in result.expected:
            assert_same_value(seen.get(key), recalculated.get(key, ""), f"{book.name} {key}")
