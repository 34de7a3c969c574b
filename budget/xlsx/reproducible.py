"""Byte-identical .xlsx files: the same scenario must give the same bytes on every run.

openpyxl stamps the save time into docProps/core.xml and into every zip entry's header.
We write the archive with a fixed timestamp and fixed document dates: `FixedZip` takes the
entries openpyxl's save writes and deflates each once; `normalise_xlsx` rewrites an archive
already written the same way.
"""

from __future__ import annotations

import io
import re
import zipfile

FIXED_ZIP_TIME = (1980, 1, 1, 0, 0, 0)
FIXED_DOC_TIME = "2000-01-01T00:00:00Z"
_DOC_DATES = re.compile(rb"(<dcterms:(created|modified)[^>]*>)[^<]*(</dcterms:\2>)")
_CORE = "docProps/core.xml"
# zlib level 1, not 6: on the bundled A100 book (1.5 MB of XML) 16 ms against 37 ms a book, for
# 280 kB against 235 kB; a sweep book's whole write is ~250 ms
COMPRESS_LEVEL = 1


class FixedZip:
    """What openpyxl's ExcelWriter writes into (writestr, write, namelist, close), kept until
    close and then deflated with fixed dates: an entry written twice has its last bytes at
    each place, as a zip read back by name gives them."""

    def __init__(self, out):
        self.out = out
        self.entries: list[str] = []
        self.data: dict[str, bytes] = {}

    def writestr(self, name, data) -> None:
        if isinstance(name, zipfile.ZipInfo):
            name = name.filename
        name = zipfile.ZipInfo(name).filename       # the name as a zip stores it
        if isinstance(data, str):
            data = data.encode("utf-8")
        self.entries.append(name)
        self.data[name] = data

    def write(self, filename, arcname) -> None:
        with open(filename, "rb") as source:
            self.writestr(arcname, source.read())

    def namelist(self) -> list[str]:
        return list(self.entries)

    def close(self) -> None:
        if self.out is None:
            return
        with zipfile.ZipFile(self.out, "w", zipfile.ZIP_DEFLATED) as target:
            for name in self.entries:
                _write_entry(target, name, self.data[name])
        self.out = None


def _write_entry(target: zipfile.ZipFile, name: str, body: bytes) -> None:
    if name == _CORE:
        body = _DOC_DATES.sub(lambda m: m.group(1) + FIXED_DOC_TIME.encode() + m.group(3), body)
    entry = zipfile.ZipInfo(name, date_time=FIXED_ZIP_TIME)
    entry.compress_type = zipfile.ZIP_DEFLATED
    entry.external_attr = 0o600 << 16
    target.writestr(entry, body, compresslevel=COMPRESS_LEVEL)


def normalise_xlsx(data: bytes) -> bytes:
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            _write_entry(target, info.filename, source.read(info.filename))
    return out.getvalue()


def content_digest(data: bytes) -> str:
    """A digest over (entry name, uncompressed bytes): equal across zlib builds."""
    import hashlib

    h = hashlib.sha256()
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        for name in sorted(z.namelist()):
            h.update(name.encode() + b"\0" + z.read(name) + b"\0")
    return h.hexdigest()
