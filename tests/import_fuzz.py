"""The import fuzzer's mutations and its worker (issue 30); tests/test_import_fuzz.py drives it.

A case is (seed, base book): a seeded RNG applies one to three mutations to a generated
workbook - its cells, its defined names, its parts, its zip structure - and the worker runs
`trainbudget import BOOK -o OUT.yaml` in-process on it. The worker is a subprocess with an
address-space limit (RLIMIT_AS) and a per-case alarm well above the tool's own 10 s bound, so a
case that hangs or eats memory is caught and reported instead of taking the suite down; it prints
one JSON line per case (exit status, stderr, whether the output was written, seconds, peak RSS).

    python tests/import_fuzz.py JOB.json        (the worker; JOB lists the books and the cases)
"""

from __future__ import annotations

import io
import json
import random
import re
import resource
import signal
import struct
import sys
import time
import zipfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

HERE = Path(__file__).resolve().parent
INPUT_PARTS = ("xl/worksheets/sheet2.xml", "xl/worksheets/sheet3.xml")     # Inputs, Catalog
CASE_ALARM_S = 60            # the harness's bound per case; the tool's own is 10 s
MEMORY_LIMIT = 2 << 30       # the worker's address space (the tool's budget is ~500 MB)

VALUES = [
    '<v>1e400</v>', '<v>-1e400</v>', '<v>NaN</v>', '<v>inf</v>', '<v>20270104</v>', '<v>-5</v>', '<v>0</v>',
    '<v>1</v>', '<v>0.5</v>', '<v>' + '9' * 400 + '</v>', '<v>lots</v>', '<v></v>', '<v>1e-320</v>',
    '<v>2958466</v>', '<v>4.2</v>', '<v>99999999999999999999</v>']
CELL_FORMS = [
    ('t="n"', VALUES), ('t="s"', ['<v>0</v>', '<v>999999</v>', '<v>-1</v>', '<v>x</v>']),
    ('t="b"', ['<v>1</v>', '<v>2</v>', '<v>x</v>']), ('t="e"', ['<v>#REF!</v>', '<v>#DIV/0!</v>']),
    ('t="d"', ['<v>2027-01-04</v>', '<v>10000-01-01</v>', '<v>x</v>']),
    ('t="str"', ['<v>=1+1</v>', '<v>text</v>']), ('t="inlineStr"', ['<is><t>=cmd|x</t></is>', '<is><t>\x1b[2J</t></is>',
                                                                    '<is><r><t>a</t></r><r><t>b</t></r></is>', '']),
    ('', ['<f>1+1</f><v>2</v>', '<f>SUM(A1:A9)</f>', '<f t="shared" si="0"/>']),
    ('t="zzz"', ['<v>1</v>'])]
NAME_TEXTS = [
    "42", "\"text\"", "SUM('Inputs'!$B$1:$B$9)", "'[1]Inputs'!$B$20", "[x.xlsx]Inputs!$B$2", "#REF!",
    "'Inputs'!#REF!", "'Gone'!$B$20", "'Inputs'!$B$1,'Inputs'!$B$2", "'Inputs'!$A$1:$XFD$1048576",
    "'Inputs'!$A:$A", "'Inputs'!$1:$1", "'Inputs'!$B$1048577", "'Inputs'!$ZZZZ$1", "Inputs!B5",
    "'Inputs'!$A$1:$C$3", "'Catalog'!$A$6:$A$37", "'Inputs'!$B$20:$B$99999", "", "   ", "'Inputs''!$B$2",
    "'Catalog'!$A$1", "'Summary'!$B$3", "'Inputs'!$IV$65536"]


def parts_of(book: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(book)) as z:
        return {n: z.read(n) for n in z.namelist()}


def zipped(parts: list[tuple[str, bytes]], compression=zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # a duplicate name is a mutation, not a mistake
        with zipfile.ZipFile(out, "w", compression) as z:
            for name, data in parts:
                z.writestr(name, data)
    return out.getvalue()


# --- mutations: each takes (rng, list of [name, bytes]) and changes it in place -----------------

def _part(rng, parts, names=None):
    choices = [i for i, (n, _) in enumerate(parts) if names is None or n in names]
    return rng.choice(choices) if choices else None


def cell(rng, parts):
    i = _part(rng, parts, INPUT_PARTS)
    if i is None:
        return
    text = parts[i][1].decode("utf-8", "replace")
    cells = list(re.finditer(r'<c r="([A-Z]+[0-9]+)"(?:[^>]*/>|[^>]*>.*?</c>)', text, re.S))
    if not cells:
        return
    for _ in range(rng.choice([1, 1, 2, 5])):
        m = rng.choice(cells)
        attrs, values = rng.choice(CELL_FORMS)
        new = rng.choice([f'<c r="{m.group(1)}" {attrs}>{rng.choice(values)}</c>', "",
                          m.group(0) + m.group(0), f'<c r="{m.group(1)}" {attrs}/>',
                          f'<c {attrs}>{rng.choice(values)}</c>'])
        text = text[:m.start()] + new + text[m.end():]
        cells = list(re.finditer(r'<c r="([A-Z]+[0-9]+)"(?:[^>]*/>|[^>]*>.*?</c>)', text, re.S))
        if not cells:
            break
    parts[i][1] = text.encode("utf-8", "surrogatepass")


def name(rng, parts):
    i = _part(rng, parts, ("xl/workbook.xml",))
    if i is None:
        return
    text = parts[i][1].decode("utf-8", "replace")
    names = list(re.finditer(r'<definedName name="([^"]+)"[^>]*>([^<]*)</definedName>', text))
    if not names:
        return
    m = rng.choice(names)
    op = rng.choice(["text", "text", "text", "drop", "twice", "local", "swap"])
    if op == "text":
        from xml.sax.saxutils import escape
        new = f'<definedName name="{m.group(1)}">{escape(rng.choice(NAME_TEXTS))}</definedName>'
    elif op == "drop":
        new = ""
    elif op == "twice":
        new = m.group(0) + f'<definedName name="{m.group(1)}">{rng.choice(NAME_TEXTS)}</definedName>'
    elif op == "local":
        new = m.group(0).replace("<definedName ", '<definedName localSheetId="0" ')
    else:
        other = rng.choice(names)
        new = f'<definedName name="{m.group(1)}">{other.group(2)}</definedName>'
    parts[i][1] = (text[:m.start()] + new + text[m.end():]).encode("utf-8")


def part(rng, parts):
    i = _part(rng, parts)
    if i is None:
        return
    op = rng.choice(["drop", "truncate", "garbage", "empty", "doctype", "comment", "rows", "rels", "swap",
                     "not-utf8", "deep"])
    name_, data = parts[i]
    if op == "drop":
        del parts[i]
    elif op == "truncate":
        parts[i][1] = data[:rng.randrange(max(1, len(data)))]
    elif op == "garbage":
        parts[i][1] = rng.randbytes(rng.choice([0, 10, 1000, 100_000]))
    elif op == "empty":
        parts[i][1] = b"<x/>"
    elif op == "doctype":
        parts[i][1] = b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "' + b"a" * 1000 + b'">]>' + data
    elif op == "comment":
        size = rng.choice([1_000, 1_000_000, 5_000_000])
        j = data.find(b">") + 1
        parts[i][1] = data[:j] + b"<!--" + b"x" * size + b"-->" + data[j:]
    elif op == "rows" and b"</sheetData>" in data:
        first = rng.choice([400, 1_048_000, 5])
        rows = b"".join(b'<row r="%d"><c r="B%d"><v>1</v></c></row>' % (r, r)
                        for r in range(first, first + rng.choice([10, 10_000, 200_000])))
        parts[i][1] = data.replace(b"</sheetData>", rows + b"</sheetData>")
    elif op == "rels" and name_.endswith(".rels"):
        parts[i][1] = re.sub(rb'Target="[^"]*"', lambda m: rng.choice(
            [b'Target="missing.xml"', b'Target="../../../etc/passwd"', b'Target="/xl/workbook.xml"',
             b'Target="' + b"a/" * 500 + b'"']), data, count=1)
    elif op == "swap":
        j = _part(rng, parts)
        parts[i][1], parts[j][1] = parts[j][1], parts[i][1]
    elif op == "not-utf8":
        parts[i][1] = data.replace(b"Inputs", b"\xff\xfe", 1)
    elif op == "deep":
        depth = rng.choice([100, 10_000])
        parts[i][1] = b"<a>" * depth + b"</a>" * depth


def structure(rng, book: bytes) -> bytes:
    """A change of the archive itself (after the parts are zipped)."""
    op = rng.choice(["truncate", "flip", "junk-before", "lie-size", "many", "stored", "empty", "cd-count"])
    data = bytearray(book)
    if op == "truncate":
        return bytes(data[:rng.randrange(len(data))])
    if op == "flip":
        for _ in range(rng.choice([1, 10, 100])):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        return bytes(data)
    if op == "junk-before":
        return rng.randbytes(rng.choice([10, 1000])) + bytes(data)
    if op == "lie-size":
        positions = [m.start() for m in re.finditer(rb"PK\x01\x02", data)]
        if positions:
            pos = rng.choice(positions)
            struct.pack_into("<I", data, pos + 24, rng.choice([0, 1, 2 ** 31, 2 ** 32 - 1, 150_000_000]))
        return bytes(data)
    if op == "many":
        parts = [(n, d) for n, d in parts_of(book).items()]
        return zipped(parts + [(f"x/{n}", b"") for n in range(rng.choice([100, 10_001]))], zipfile.ZIP_STORED)
    if op == "stored":
        return zipped(list(parts_of(book).items()), zipfile.ZIP_STORED)
    if op == "empty":
        return b""
    end = data.rfind(b"PK\x05\x06")          # the end record's entry counts
    if end >= 0:
        struct.pack_into("<HH", data, end + 8, 65535, 65535)
    return bytes(data)


def mutate(book: bytes, seed: int) -> bytes:
    """One case's workbook: 1 to 3 mutations of cells, names and parts, sometimes of the zip."""
    rng = random.Random(seed)
    parts = [[n, d] for n, d in parts_of(book).items()]
    for _ in range(rng.choice([1, 1, 2, 3])):
        rng.choice([cell, cell, cell, name, name, name, part])(rng, parts)
    if rng.random() < 0.15:
        parts.append(list(rng.choice(parts)))            # a part twice
    out = zipped([(n, d) for n, d in parts])
    if rng.random() < 0.15:
        out = structure(rng, out)
    return out


# --- the worker ----------------------------------------------------------------------------------

class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang()


def own_peak_rss_mb() -> float:
    """This process's own peak resident memory. Not getrusage's ru_maxrss: Linux carries the parent's
    high-water mark across fork and exec, so a worker started by a pytest process that has grown to
    600 MB over a whole suite reported 611 MB before its first case (CI, 2026-12-02). VmHWM in
    /proc/self/status belongs to the address space exec made."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_cases(job: dict) -> None:
    sys.path[:0] = [str(HERE.parent), str(HERE)]
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    from budget.cli.app import main

    books = [Path(p).read_bytes() for p in job["books"]]
    folder = Path(job["folder"])
    signal.signal(signal.SIGALRM, _alarm)
    for seed, base in job["cases"]:
        book = mutate(books[base], seed)
        path, target = folder / f"case-{seed}.xlsx", folder / f"case-{seed}.yaml"
        path.write_bytes(book)
        out, err = io.StringIO(), io.StringIO()
        started = time.monotonic()
        signal.alarm(CASE_ALARM_S)
        try:
            with redirect_stdout(out), redirect_stderr(err):
                code = main(["import", str(path), "-o", str(target)])
            crash = None
        except _Hang:
            code, crash = None, f"still running after {CASE_ALARM_S} s"
        except MemoryError:
            code, crash = None, f"MemoryError (address space {MEMORY_LIMIT >> 20} MB)"
        except BaseException as exc:     # noqa: BLE001 - a traceback is what the fuzzer looks for
            import traceback
            code, crash = None, "".join(traceback.format_exception(exc))[-3000:]
        finally:
            signal.alarm(0)
        seconds = time.monotonic() - started
        written = target.exists()
        text = target.read_text(encoding="utf-8", errors="replace") if written else None
        for leftover in (path, target):
            leftover.unlink(missing_ok=True)
        print(json.dumps({"seed": seed, "base": base, "code": code, "err": err.getvalue(), "out": out.getvalue(),
                          "crash": crash, "written": written, "text": text, "seconds": seconds,
                          "max_rss_mb": own_peak_rss_mb(),
                          "size": len(book)}), flush=True)


if __name__ == "__main__":
    run_cases(json.loads(Path(sys.argv[1]).read_text(encoding="utf-8")))
