"""Reading files from outside, within the bounds of budget/core/limits.py.

Every reader of a file trainbudget did not just write itself goes through here: a scenario or
catalog (YAML), a model's config.json, a workbook to import (a zip of XML parts), and the output
folder's journal and manifest. The rules are the same for all:

- **Regular files only.** The file is opened without blocking and checked with fstat on the
  open descriptor: a FIFO, a device (/dev/zero, /dev/urandom), a folder or a socket is refused
  before a byte is read. A link is followed (a scenario may be a link) unless the caller says
  no (the output folder's own files are never links).
- **A size cap.** At most `limit` bytes are read; one more means the file is refused.
- **Bounded nesting.** JSON is measured before it is parsed (json.loads recurses).
- **Bounded archives.** A zip's entry count, declared sizes and compression ratios are checked
  before any part is inflated, and a part is read only up to its cap (Python's zipfile stops at
  the declared size and checks the CRC).

Problems are raised as `ReadRefused(message, fix)` with Msgs; each caller turns it into its own
typed error (a scenario's, a workbook's, the output folder's) naming its file.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import zipfile
from pathlib import Path

from . import limits
from .message import Msg


class ReadRefused(Exception):
    """A file outside the bounds: the message and the fix, as Msgs."""

    def __init__(self, message: Msg, fix: Msg):
        super().__init__(message)
        self.message = message
        self.fix = fix


def _kind(mode: int) -> Msg:
    for test, kind in ((stat.S_ISDIR, "folder"), (stat.S_ISFIFO, "fifo"), (stat.S_ISCHR, "device"),
                       (stat.S_ISBLK, "device"), (stat.S_ISSOCK, "socket"), (stat.S_ISLNK, "link")):
        if test(mode):
            return Msg(f"errors.read.kind.{kind}")
    return Msg("errors.read.kind.other")


def open_regular(path: Path, *, follow_links: bool = True) -> int:
    """A descriptor of `path` opened for reading, checked to be a regular file (never blocks:
    a FIFO is refused, not waited on). OSError as open() raises it (FileNotFoundError...)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_links else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_links:
            raise ReadRefused(Msg("errors.read.not_regular.message", kind=Msg("errors.read.kind.link")),
                              Msg("errors.read.not_regular.fix")) from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise ReadRefused(Msg("errors.read.not_regular.message", kind=_kind(mode)),
                          Msg("errors.read.not_regular.fix"))
    os.set_blocking(fd, True)
    return fd


def read_regular(path: Path, limit: int, *, follow_links: bool = True) -> bytes:
    """The bytes of a regular file of at most `limit` bytes (see open_regular)."""
    fd = open_regular(path, follow_links=follow_links)
    try:
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > limit:
        raise ReadRefused(Msg("errors.read.too_large.message", limit=limit), Msg("errors.read.too_large.fix"))
    return b"".join(chunks)


_JSON_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_JSON_BRACKETS = re.compile(r"[\[\]{}]")


def json_depth(text: str) -> int:
    """How deep a JSON text nests its arrays and objects (strings skipped; linear time)."""
    depth = deepest = 0
    for match in _JSON_BRACKETS.finditer(_JSON_STRINGS.sub("", text)):
        if match.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def load_json(data: bytes, depth: int = limits.MAX_JSON_DEPTH):
    """JSON from bytes: UTF-8, nested at most `depth` levels. ReadRefused names the line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ReadRefused(Msg("errors.read.not_utf8.message", reason=exc.reason),
                          Msg("errors.read.not_utf8.fix")) from None
    if json_depth(text) > depth:
        raise ReadRefused(Msg("errors.read.too_deep.message", levels=depth), Msg("errors.read.too_deep.fix"))
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ReadRefused(Msg("errors.read.bad_json.message", line=getattr(exc, "lineno", 1)),
                          Msg("errors.read.bad_json.fix")) from None


class Archive:
    """A zip archive from outside (an .xlsx), checked before any part is inflated: a regular
    file of at most MAX_WORKBOOK_BYTES, at most MAX_WORKBOOK_ENTRIES parts declaring at most
    MAX_WORKBOOK_UNCOMPRESSED bytes in all, none over 1 MB inflating more than
    MAX_COMPRESSION_RATIO times. `read(name, limit)` reads one part up to its cap."""

    FIX = "errors.read.archive.fix"

    def __init__(self, path: Path):
        fd = open_regular(path)
        self._file = os.fdopen(fd, "rb")
        try:
            size = os.fstat(fd).st_size
            if size > limits.MAX_WORKBOOK_BYTES:
                raise ReadRefused(Msg("errors.read.archive.too_large", size=size, limit=limits.MAX_WORKBOOK_BYTES),
                                  Msg(self.FIX))
            try:
                self._zip = zipfile.ZipFile(self._file)
            except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError,
                    NotImplementedError) as exc:
                raise ReadRefused(Msg("errors.read.archive.not_zip", detail=str(exc)[:120]), Msg(self.FIX)) from None
            infos = self._zip.infolist()
            if len(infos) > limits.MAX_WORKBOOK_ENTRIES:
                raise ReadRefused(Msg("errors.read.archive.entries", count=len(infos),
                                      limit=limits.MAX_WORKBOOK_ENTRIES), Msg(self.FIX))
            total = sum(i.file_size for i in infos)
            if total > limits.MAX_WORKBOOK_UNCOMPRESSED:
                raise ReadRefused(Msg("errors.read.archive.unpacked", size=total,
                                      limit=limits.MAX_WORKBOOK_UNCOMPRESSED), Msg(self.FIX))
            for info in infos:
                if info.file_size > limits.RATIO_CHECKED_FROM and \
                        info.file_size > limits.MAX_COMPRESSION_RATIO * max(info.compress_size, 1):
                    raise ReadRefused(Msg("errors.read.archive.ratio", part=info.filename[:200],
                                          ratio=info.file_size / max(info.compress_size, 1),
                                          limit=limits.MAX_COMPRESSION_RATIO), Msg(self.FIX))
            # the last entry of a name wins in zipfile; two entries of one name are not a workbook
            self._infos = {}
            for info in infos:
                if info.filename in self._infos:
                    raise ReadRefused(Msg("errors.read.archive.duplicate", part=info.filename[:200]), Msg(self.FIX))
                self._infos[info.filename] = info
        except BaseException:
            self._file.close()
            raise

    def close(self) -> None:
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def names(self) -> list[str]:
        return list(self._infos)

    def size(self, name: str) -> int | None:
        info = self._infos.get(name)
        return None if info is None else info.file_size

    def read(self, name: str, limit: int = limits.MAX_PART_BYTES) -> bytes | None:
        """One part's bytes (None when the archive has no such part)."""
        info = self._infos.get(name)
        if info is None:
            return None
        if info.file_size > limit:
            raise ReadRefused(Msg("errors.read.archive.part_too_large", part=name[:200], size=info.file_size,
                                  limit=limit), Msg(self.FIX))
        try:
            with self._zip.open(info) as fh:
                data = fh.read(limit + 1)
        except (zipfile.BadZipFile, ValueError, EOFError, OSError, NotImplementedError, RuntimeError) as exc:
            raise ReadRefused(Msg("errors.read.archive.damaged", part=name[:200], detail=str(exc)[:120]),
                              Msg(self.FIX)) from None
        except Exception as exc:   # noqa: BLE001 - zlib.error and the like: a damaged part
            raise ReadRefused(Msg("errors.read.archive.damaged", part=name[:200], detail=str(exc)[:120]),
                              Msg(self.FIX)) from None
        if len(data) > limit:
            raise ReadRefused(Msg("errors.read.archive.part_too_large", part=name[:200], size=len(data),
                                  limit=limit), Msg(self.FIX))
        return data
