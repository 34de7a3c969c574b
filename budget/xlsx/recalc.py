"""Recalculate workbooks in LibreOffice headless and read back the values it computed.

openpyxl never evaluates formulas, so the proof that the workbook agrees with the plan is a
real spreadsheet engine. Following ../shared/reference/spreadsheets.md: a private profile per
call that forces "always recalculate" on load, all files in one soffice call (start-up
dominates), and a check that every converted file exists.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import openpyxl
from openpyxl.utils.datetime import to_excel

ERROR_VALUES = ("#NAME?", "#VALUE!", "#REF!", "#DIV/0!", "#N/A", "#NUM!", "#NULL!", "Err:")

_PROFILE = (  # i18n: not text
    """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="OOXMLRecalcMode" oor:op="fuse"><value>0</value></prop></item>
</oor:items>
""")


class RecalcError(RuntimeError):
    pass


def soffice_path() -> str | None:
    return shutil.which("soffice") or shutil.which("libreoffice")


def recalculate(books: list[Path], outdir: Path, timeout: float | None = None) -> dict[Path, Path]:
    """Recalculate `books` in one LibreOffice call; returns original path -> recalculated copy.

    Input file names must be unique: LibreOffice names each output after its input. The call is
    stopped after `timeout` seconds, by default 2 minutes plus 30 s a book: a guard against a hung
    soffice, generous enough for a loaded machine (a book takes ~5 s on a quiet one).
    """
    if timeout is None:
        timeout = 120 + 30 * len(books)
    soffice = soffice_path()
    if not soffice:
        raise RecalcError("LibreOffice (soffice) is not installed")  # i18n: not text
    names = [b.name for b in books]
    if len(set(names)) != len(names):
        raise RecalcError("workbooks to recalculate must have distinct file names")  # i18n: not text
    outdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="trainbudget-lo-") as tmp:
        profile = Path(tmp) / "profile"
        (profile / "user").mkdir(parents=True)
        (profile / "user" / "registrymodifications.xcu").write_text(_PROFILE, encoding="utf-8")
        env = dict(os.environ, HOME=tmp, LC_ALL="C.UTF-8")
        cmd = [soffice, f"-env:UserInstallation={profile.as_uri()}", "--headless", "--norestore",
               "--nolockcheck", "--convert-to", "xlsx", "--outdir", str(outdir),
               *[str(b) for b in books]]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    result = {}
    for book in books:
        out = outdir / book.name
        if not out.exists():
            raise RecalcError(f"LibreOffice wrote no {out.name} (exit {proc.returncode}): "  # i18n: not text
                              f"{proc.stderr.strip()[-500:]}")
        result[book] = out
    return result


def read_values(path: Path) -> dict[str, object]:
    """Every non-empty cell of a recalculated workbook as "Sheet!A1" -> value."""
    wb = openpyxl.load_workbook(path, data_only=True)
    out = {}
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for c in row:
                if c.value is not None:
                    out[f"{ws.title}!{c.coordinate}"] = c.value
    return out


def formula_cells(path: Path) -> list[str]:
    """The "Sheet!A1" keys of every formula cell in a workbook as written."""
    wb = openpyxl.load_workbook(path)
    return [f"{ws.title}!{c.coordinate}" for ws in wb.worksheets for row in ws.iter_rows()
            for c in row if c.data_type == "f"]


def is_error(value) -> bool:
    return isinstance(value, str) and value.startswith(ERROR_VALUES)


def relative_difference(got, want) -> float:
    """0 when equal; for numbers |got - want| / max(|want|, tiny); inf when types differ."""
    if isinstance(want, bool):
        want = float(want)
    if want is None:
        want = ""    # a blank input
    if want == "" and got is None:
        return 0.0   # a formula giving empty text reads back as an empty cell
    if isinstance(want, str) or isinstance(got, str):
        return 0.0 if str(got).lower() == str(want).lower() else math.inf
    if isinstance(got, dt.time):
        got = (got.hour * 3600 + got.minute * 60 + got.second) / 86400   # a date format's 0: midnight
    if isinstance(want, dt.time):
        want = (want.hour * 3600 + want.minute * 60 + want.second) / 86400
    if isinstance(got, (dt.datetime, dt.date)):
        got = to_excel(got)   # date-formatted results come back as datetimes
    if isinstance(want, (dt.datetime, dt.date)):
        want = to_excel(want)
    if got is None:
        got = 0.0   # an empty result; LibreOffice writes a formula giving 0 as 0, rarely None
    if isinstance(got, bool):
        got = float(got)
    scale = max(abs(want), 1e-300)
    return abs(float(got) - float(want)) / scale
