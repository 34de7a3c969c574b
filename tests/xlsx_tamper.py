"""Workbooks changed the way a hostile or careless hand changes them: at the level of the file's
parts and zip structure, below anything openpyxl would write (issue 30's import tests and fuzzer)."""

from __future__ import annotations

import io
import re
import struct
import zipfile
from xml.sax.saxutils import escape

INPUTS_PART = "xl/worksheets/sheet2.xml"     # the Inputs sheet of a generated book
CATALOG_PART = "xl/worksheets/sheet3.xml"


def parts(book: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(book)) as z:
        return {name: z.read(name) for name in z.namelist()}


def rezip(book: bytes, replace: dict[str, bytes] | None = None, drop=(), add: dict[str, bytes] | None = None,
          compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    """The book with parts replaced, dropped or added (in the original order, new ones last)."""
    replace, add = dict(replace or {}), dict(add or {})
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(book)) as src, zipfile.ZipFile(out, "w", compression) as dst:
        for name in src.namelist():
            if name in drop:
                continue
            dst.writestr(name, replace.pop(name, None) or src.read(name))
        for name, data in {**replace, **add}.items():
            dst.writestr(name, data)
    return out.getvalue()


def defined_name(book: bytes, name: str, text: str | None) -> bytes:
    """The book with a defined name's text replaced (None: the name removed)."""
    wb = parts(book)["xl/workbook.xml"].decode("utf-8")
    pattern = re.compile(r'<definedName name="%s"[^>]*>[^<]*</definedName>' % re.escape(name))
    assert pattern.search(wb), name
    new = "" if text is None else f'<definedName name="{name}">{escape(text)}</definedName>'
    return rezip(book, {"xl/workbook.xml": pattern.sub(lambda m: new, wb, count=1).encode("utf-8")})


def cell_ref(book: bytes, name: str) -> tuple[str, str]:
    """(sheet name, cell) of a single-cell defined name."""
    wb = parts(book)["xl/workbook.xml"].decode("utf-8")
    text = re.search(r'<definedName name="%s"[^>]*>([^<]*)</definedName>' % re.escape(name), wb).group(1)
    sheet, ref = text.rsplit("!", 1)
    return sheet.strip("'"), ref.replace("$", "")


def set_cell(book: bytes, part: str, ref: str, xml: str) -> bytes:
    """The book with one cell's element (<c r="B20" ...>...</c>) replaced by `xml`."""
    sheet = parts(book)[part].decode("utf-8")
    pattern = re.compile(r'<c r="%s"(?:[^>]*/>|[^>]*>.*?</c>)' % ref, re.S)
    assert pattern.search(sheet), ref
    return rezip(book, {part: pattern.sub(lambda m: xml, sheet, count=1).encode("utf-8")})


def number_cell(ref: str, text: str) -> str:
    return f'<c r="{ref}" t="n"><v>{text}</v></c>'


def corrupt_crc(book: bytes, name: str) -> bytes:
    """The book with one stored part's bytes changed after its CRC was recorded."""
    data = rezip(book, compression=zipfile.ZIP_STORED)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        info = z.getinfo(name)
    offset = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    out = bytearray(data)
    out[offset + info.file_size // 2] ^= 0xFF
    return bytes(out)


def lie_about_size(book: bytes, name: str, size: int) -> bytes:
    """The book whose central directory declares `size` bytes for one part (a zip bomb's lie)."""
    data = bytearray(book)
    with zipfile.ZipFile(io.BytesIO(book)) as z:
        info = z.getinfo(name)
    needle = info.filename.encode()
    start = 0
    while True:
        pos = data.find(b"PK\x01\x02", start)
        if pos < 0:
            raise AssertionError(name)
        length = struct.unpack_from("<H", data, pos + 28)[0]
        if data[pos + 46:pos + 46 + length] == needle:
            struct.pack_into("<I", data, pos + 24, size)
            return bytes(data)
        start = pos + 4
