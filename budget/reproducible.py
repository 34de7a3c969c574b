"""Byte-identical .xlsx files: the same scenario must give the same bytes on every run.

openpyxl stamps the save time into docProps/core.xml and into every zip entry's header.
We rewrite the archive with a fixed timestamp and fixed document dates.
"""

from __future__ import annotations

import io
import re
import zipfile

FIXED_ZIP_TIME = (1980, 1, 1, 0, 0, 0)
FIXED_DOC_TIME = "2000-01-01T00:00:00Z"
_DOC_DATES = re.compile(rb"(<dcterms:(created|modified)[^>]*>)[^<]*(</dcterms:\2>)")


def normalise_xlsx(data: bytes) -> bytes:
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            body = source.read(info.filename)
            if info.filename == "docProps/core.xml":
                body = _DOC_DATES.sub(lambda m: m.group(1) + FIXED_DOC_TIME.encode() + m.group(3), body)
            entry = zipfile.ZipInfo(info.filename, date_time=FIXED_ZIP_TIME)
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = 0o600 << 16
            target.writestr(entry, body, compresslevel=6)
    return out.getvalue()


def content_digest(data: bytes) -> str:
    """A digest over (entry name, uncompressed bytes): equal across zlib builds."""
    import hashlib

    h = hashlib.sha256()
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        for name in sorted(z.namelist()):
            h.update(name.encode() + b"\0" + z.read(name) + b"\0")
    return h.hexdigest()
