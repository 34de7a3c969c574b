"""Golden outputs: what the tool writes for the bundled scenarios (en and zh), a sweep sample and
a package, part by part, equals the committed digests (tests/golden_outputs.py)."""

from __future__ import annotations

import pytest

import golden_outputs as golden


@pytest.mark.slow
def test_every_output_part_is_as_recorded():
    reports = golden.check()
    assert not reports, "\n".join(reports)


def test_a_changed_part_is_reported_with_a_diff(tmp_path, monkeypatch):
    monkeypatch.setattr(golden, "STORE", tmp_path)
    old = golden._lines(b'<sheetData><row r="1"><c r="A1"><f>B1*2</f></c></row></sheetData>')
    new = old.replace("B1*2", "B1*3")
    (tmp_path / golden.digest(old)).write_text(old, encoding="utf-8")
    recorded = {"a.xlsx:xl/worksheets/sheet1.xml": golden.digest(old), "gone.md": "0" * 64}
    reports = golden.compare({"a.xlsx:xl/worksheets/sheet1.xml": new, "new.md": "x"}, recorded)
    text = "\n".join(reports)
    assert "-<f>B1*2</f>" in text and "+<f>B1*3</f>" in text
    assert "gone.md: no longer written" in text and "new.md: new part" in text
    assert golden.compare({"same.md": "x"}, {"same.md": golden.digest("x")}) == []


def test_canonical_parts_ignore_attribute_order_only():
    assert golden._lines(b'<c r="A1" s="2"/>') == golden._lines(b"<c s='2' r='A1'></c>")
    assert golden._lines(b'<c r="A1" s="2"/>') != golden._lines(b'<c r="A1" s="3"/>')
