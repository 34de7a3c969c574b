#!/usr/bin/env python3
"""Time and memory of `trainbudget import` on large and hostile workbooks (issue 30).

The goal: any import of a file up to 50 MB ends, accepted or with one clear error, in about 10 s
and 500 MB. Each case is a workbook built from the seed's generated book, imported by a fresh
process (`python -m budget.cli import BOOK -o OUT`); the table gives the file's size, the exit
status, the wall time and the process's peak RSS (os.wait4), and the first line of stderr.

    python bench/bench_import.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import base64
import io
import os
import random
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import xlsx_tamper as tamper  # noqa: E402
from budget.inputs.catalog import load_catalog  # noqa: E402
from budget.inputs.options import load_scenario  # noqa: E402
from budget.plan.plan import build_plan  # noqa: E402
from budget.sheets.book import write_workbook  # noqa: E402

MB = 1_000_000


def noise(size: int) -> bytes:
    """Printable bytes that deflate hardly at all (base64 of random bytes)."""
    return base64.b64encode(random.Random(size).randbytes(size * 3 // 4))[:size]


def with_filler(book: bytes, part: str, filler: bytes) -> bytes:
    sheet = tamper.parts(book)[part]
    i = sheet.index(b"<sheetData>")
    return tamper.rezip(book, {part: sheet[:i] + b"<!--" + filler + b"-->" + sheet[i:]})


def cases(seed: bytes) -> dict[str, bytes]:
    inputs = tamper.INPUTS_PART
    sheet = tamper.parts(seed)[inputs]
    out = {"the seed's generated book": seed}
    out["a 48 MB picture added (50 MB)"] = tamper.rezip(seed, add={"xl/media/image1.png": noise(48 * MB)},
                                                        compression=zipfile.ZIP_STORED)
    out["Inputs sheet at its 16 MB cap, +32 MB picture"] = tamper.rezip(
        with_filler(seed, inputs, noise(15_500_000)), add={"xl/media/image1.png": noise(32 * MB)},
        compression=zipfile.ZIP_STORED)
    rows = b"".join(b'<row r="%d"/>' % n for n in range(400, 800_400))
    out["800,000 empty rows after the inputs (14 MB)"] = tamper.rezip(
        seed, {inputs: sheet.replace(b"</sheetData>", rows + b"</sheetData>")})
    wide = b"".join(b'<row r="%d">' % n + b"".join(b'<c r="%s%d"><v>1</v></c>' % (chr(65 + k).encode(), n)
                                                 for k in range(20)) + b"</row>" for n in range(400, 1_000_400))
    out["a million rows x 20 cells after the inputs"] = tamper.rezip(
        seed, {inputs: sheet.replace(b"</sheetData>", wide + b"</sheetData>")})
    # every row numbered 1: out of order, so the sheet is read to the end of its part (16 MB)
    rng = random.Random(1)
    disorder = b"".join(b'<row r="1"><c r="Z1"><v>%d</v></c></row>' % rng.randrange(10 ** 12) for _ in range(290_000))
    out["290,000 rows all numbered 1 before the inputs"] = tamper.rezip(
        seed, {inputs: sheet.replace(b"<sheetData>", b"<sheetData>" + disorder)})
    # the recompute cell as shared string 0 ("full") of 350,000
    strings = b"<si><t>full</t></si>" + b"".join(b"<si><t>%d</t></si>" % n for n in range(350_000))
    rels = tamper.parts(seed)["xl/_rels/workbook.xml.rels"].replace(
        b"</Relationships>", b'<Relationship Id="rIdS" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
                             b'relationships/sharedStrings" Target="sharedStrings.xml"/></Relationships>')
    ref = tamper.cell_ref(seed, "recompute")[1]
    book = tamper.rezip(seed, {"xl/_rels/workbook.xml.rels": rels}, add={
        "xl/sharedStrings.xml": b'<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
                                + strings + b"</sst>"})
    out["350,000 shared strings (under the 8 MB cap)"] = tamper.set_cell(
        book, inputs, ref, f'<c r="{ref}" t="s"><v>0</v></c>')
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in tamper.parts(seed).items():
            if name != inputs:
                z.writestr(name, data)
        with z.open(inputs, "w", force_zip64=True) as fh:
            i = sheet.index(b"<sheetData>")
            fh.write(sheet[:i] + b"<!--")
            block = b" " * (1 << 20)
            for _ in range(1024):
                fh.write(block)
            fh.write(b"-->" + sheet[i:])
    out["1 GiB of XML comment in the Inputs sheet (zip bomb)"] = bomb.getvalue()
    out["a defined name spanning the whole Inputs sheet"] = tamper.defined_name(
        seed, "gpu_count", "'Inputs'!$A$1:$XFD$1048576")
    return out


def run(path: Path, out: Path) -> tuple[int, float, float, str]:
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "budget.cli", "import", str(path), "-o", str(out)],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = proc.stderr.read().decode("utf-8", "replace")
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.monotonic() - started
    out.unlink(missing_ok=True)
    return os.waitstatus_to_exitcode(status), seconds, usage.ru_maxrss / 1024, (stderr.splitlines() or [""])[0]


def build(folder: Path) -> None:
    """Write the cases' workbooks (in a process of their own: the children measured later must
    not inherit its memory, which Linux counts in their peak RSS)."""
    catalog = load_catalog()
    seed = write_workbook(build_plan(load_scenario(ROOT / "scenarios" / "gpt3-175b-h100.yaml", catalog), catalog,
                                     scenario_id="gpt3-175b-h100")).data
    for n, (name, book) in enumerate(cases(seed).items()):
        (folder / f"case{n:02d}.xlsx").write_bytes(book)
        (folder / f"case{n:02d}.txt").write_text(name, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="keep the workbooks in this folder")
    parser.add_argument("--build", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build:
        build(args.build)
        return
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench-import-"))
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, __file__, "--build", str(folder)], check=True)
    print(f"{'case':<52} {'MB':>6} {'exit':>4} {'s':>6} {'RSS MB':>7}  stderr")
    for path in sorted(folder.glob("case*.xlsx")):
        name = path.with_suffix(".txt").read_text(encoding="utf-8")
        size = path.stat().st_size
        code, seconds, rss, first = run(path, folder / "out.yaml")
        print(f"{name:<52} {size / MB:6.1f} {code:4d} {seconds:6.2f} {rss:7.0f}  {first.replace(str(path), 'BOOK')[:90]}")
        if not args.keep:
            path.unlink()
            path.with_suffix(".txt").unlink()


if __name__ == "__main__":
    main()
