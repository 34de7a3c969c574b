"""What an earlier run parsed from the bundled YAML files, kept for the next run (issue 14).

Reading catalogs/throughput_runs.yaml alone takes libyaml about 60 ms a process, the whole
bundled set about 0.1 s; loading the same data with `marshal` takes about 2 ms. `cached(raw,
kind, parse)` returns `parse()`, saved the first time in a private folder of the user's under
the system's temporary folder (made with mode 0700 and used only while it is a folder of the
user's with that mode, as jinja2 does for its bytecode cache) and loaded from there afterwards.
The file's name is a digest of the bytes parsed, the kind of parse (the loader and its checks)
and PyYAML's and this format's versions, so any change to a catalog reads it again. Only data a
YAML load can give is kept (dicts, lists, text, numbers, booleans, None and dates); anything
else, or a folder that cannot be used, means parsing every time, never a failed run.

The folder stays small: an entry read is marked used (its modification time), and when a new
entry takes the folder over _CAP_BYTES the entries used longest ago are removed until it holds
half of that (an entry still needed is made again by the run that needs it). Catalogs edited
over months, or many model variants, so never fill the temporary folder.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import marshal
import os
import stat
import tempfile
from pathlib import Path
from typing import Callable

import yaml

_FORMAT = b"trainbudget-cache-1"  # i18n: not text (a format tag)
_CAP_BYTES = 64 * 2 ** 20          # ~85 versions of the bundled YAML's parses (0.75 MB a set)


class _NotKept(Exception):
    """Data the cache does not keep (a timestamp, an object of some other type)."""


def _folder() -> Path | None:
    getuid = getattr(os, "getuid", None)
    if getuid is None:          # no user ids (Windows): no cache
        return None
    path = Path(tempfile.gettempdir()) / f"trainbudget-cache-{getuid()}"  # i18n: not text (a folder name)
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != getuid() or stat.S_IMODE(st.st_mode) != 0o700:
        return None
    return path


_KEPT = (str, int, float, bool, type(None))


def _encode(x, dates: list):
    t = type(x)
    if t is dict:
        return {_encode(k, dates): _encode(v, dates) for k, v in x.items()}
    if t is list:
        return [_encode(v, dates) for v in x]
    if t is dt.date:
        dates.append(1)
        return (x.toordinal(),)      # a tuple: a YAML load never gives one
    if t in _KEPT:
        return x
    raise _NotKept(t)


def _decode(x):
    t = type(x)
    if t is dict:
        return {_decode(k): _decode(v) for k, v in x.items()}
    if t is list:
        return [_decode(v) for v in x]
    if t is tuple:
        return dt.date.fromordinal(x[0])
    return x


def entry_name(raw: bytes, kind: str) -> str:
    """The file that keeps the parse of `raw` as `kind`: a digest of both, of PyYAML's version
    and of this format's."""
    digest = hashlib.sha256(b"\0".join((_FORMAT, yaml.__version__.encode(), kind.encode(), raw))).hexdigest()
    return f"{digest}.marshal"


def cached(raw: bytes, kind: str, parse: Callable[[], object]) -> object:
    """`parse()` of the bytes `raw` (parsed as `kind` says), from the cache when an earlier run
    kept it; a fresh copy each call, as a parse gives."""
    folder = _folder()
    if folder is None:
        return parse()
    file = folder / entry_name(raw, kind)
    try:
        kept = file.read_bytes()
        has_dates, data = marshal.loads(kept)
        with contextlib.suppress(OSError):
            os.utime(file)          # used now: the last to go when the folder is pruned
        return _decode(data) if has_dates else data
    except (OSError, EOFError, ValueError, TypeError):
        pass
    value = parse()
    dates: list = []
    try:
        blob = marshal.dumps((False, value) if not _has_dates(value, dates) else (True, _encode(value, dates)))
    except (_NotKept, ValueError, RecursionError):
        return value
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)  # i18n: not text
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
        os.replace(tmp, file)
    except OSError:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return value
    _prune(folder)
    return value


def _prune(folder: Path, cap: int | None = None) -> None:
    """Entries removed, used longest ago first, until the folder holds half of `cap` bytes,
    when it holds more than `cap` (only this module's entries; nothing else is touched)."""
    cap = _CAP_BYTES if cap is None else cap
    entries = []
    try:
        with os.scandir(folder) as found:
            for entry in found:
                if entry.name.endswith(".marshal") and entry.is_file(follow_symlinks=False):
                    st = entry.stat(follow_symlinks=False)
                    entries.append((st.st_mtime_ns, entry.name, st.st_size))
    except OSError:
        return
    total = sum(size for _, _, size in entries)
    if total <= cap:
        return
    for _, name, size in sorted(entries):
        if total <= cap // 2:
            break
        with contextlib.suppress(OSError):
            os.unlink(folder / name)
            total -= size


def _has_dates(value, dates: list) -> bool:
    """Whether the data holds a date (then it is kept encoded); raises _NotKept for data the
    cache does not keep."""
    _encode(value, dates)
    return bool(dates)
