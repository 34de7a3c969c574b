"""Writing one run's outputs into a folder: all or nothing, and never over a reviewer's edits.

A run writes its files into the output folder OUT like this:

1. **Lock.** `fcntl.flock` on `OUT/.trainbudget.lock` (non-blocking): a second run into the same
   folder fails at once instead of interleaving its files with ours. The lock file stays.
2. **Finish an interrupted run.** If `OUT/.trainbudget-journal.json` exists, an earlier run was
   killed while moving its files into place; `recover()` finishes it (see below).
3. **Never clobber.** `OUT/.trainbudget-manifest.json` records, for every file this tool wrote,
   its SHA-256 and size. An output about to be replaced that differs from its record, or that
   exists with no record at all (not written by us), is refused with `OutputError` before
   anything is written, unless `force=True`. Files the run does not write are left alone.
4. **Stage.** Every file is written and fsynced in a hidden directory inside OUT
   (`OUT/.trainbudget-staging-<pid>-<random>/`), and the directory is fsynced.
5. **Journal.** `OUT/.trainbudget-journal.json` lists the planned moves, the staging directory,
   the old manifest and the new one (written via temp file + fsync + rename).
6. **Move and record.** Each staged file is moved into place with `os.replace`, then the new
   manifest is written via temp file + fsync + rename, then the journal and staging directory
   are removed. The manifest has sorted keys and no timestamps: the same run gives a
   byte-identical manifest.

A reader knows a set is complete when every file matches the manifest. If the process dies
between two renames, the set on disk is mixed until the next run, which finds the journal and
`recover()`s: it re-applies the moves whose staged files still exist and writes the new manifest
(the complete new set). If the staged files are gone, it rewrites the manifest from what is on
disk, keeping a record only for files whose digest matches the old or the new record.

**The folder's own files are untrusted input** (a shared drive, a received package): the lock,
the manifest and the journal must be regular files, never links (the lock is opened with
O_NOFOLLOW, so a dangling link is not followed out of the folder), within the size caps of
budget/core/limits.py. A journal is applied only when everything in it checks out, before
anything is changed: its digest matches its contents and the digest file its run wrote into its
staging folder (`.trainbudget-journal-sha256`: the journal belongs to that folder), the staging
folder's name is one this module makes and it holds only regular files the journal lists, each
staged file matches its new record, the manifest on disk is the journal's old or new one, and
every file a move would replace is absent or still what the manifest records (the no-clobber
comparison of a normal run: a reviewer's edit made after a crash is never overwritten). Anything
else is one OutputError saying what to delete, with nothing changed.

SIGTERM and SIGINT are handled only while writing (the previous handlers are restored after):
while staging, the staged files are removed and `Interrupted` is raised; once the journal is
written, the signal is held until the set and its manifest are complete, then `Interrupted` is
raised. Any Python exception while staging removes the staged files too. An error once moves
have begun (a failing rename) keeps the journal and the staged files, so the next run can finish.

Test-only hooks (environment variables, for tests that must kill a real process mid-write):
`TRAINBUDGET_TEST_PAUSE_WHILE_STAGING=1` sleeps after the first file is staged, and
`TRAINBUDGET_TEST_PAUSE_AFTER_RENAMES=1` sleeps after the first rename. Never set them otherwise.

This module prints nothing; it raises `OutputError` (an `InputError`, so it reads like the
other errors: a file, a message and a fix) and `Interrupted`.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import __version__
from ..core import limits
from ..core.errors import InputError, Msg, Problem
from ..core.i18n import DEFAULT_LANG
from ..core.reading import ReadRefused, load_json, read_regular

LOCK_NAME = ".trainbudget.lock"
MANIFEST_NAME = ".trainbudget-manifest.json"
JOURNAL_NAME = ".trainbudget-journal.json"
STAGING_PREFIX = ".trainbudget-staging-"
JOURNAL_DIGEST_NAME = ".trainbudget-journal-sha256"     # inside the staging folder
_STAGING_NAME = re.compile(re.escape(STAGING_PREFIX) + r"[0-9]+-[A-Za-z0-9_]+")
MANIFEST_FORMAT = 1
PAUSE_WHILE_STAGING = "TRAINBUDGET_TEST_PAUSE_WHILE_STAGING"
PAUSE_AFTER_RENAMES = "TRAINBUDGET_TEST_PAUSE_AFTER_RENAMES"
_TEST_PAUSE_SECONDS = 60.0


@dataclass
class Output:
    """One file of a run: a bare file name inside the output folder, and its bytes."""
    path: Path
    data: bytes


@dataclass
class Written:
    """What a run wrote: the paths, and those that replaced changed files because of force."""
    paths: list[Path]
    overwritten: list[Path] = field(default_factory=list)


class OutputError(InputError):
    """The output folder cannot take this run: a file, a message and the fix."""

    def each(self) -> list[OutputError]:
        """One error per file, for printing."""
        return [self]


class OutputsRefused(OutputError):
    """Several outputs would clobber changed files: one error for each."""

    def __init__(self, errors: list[OutputError]):
        self.errors = errors
        super().__init__(errors[0].file, [p for e in errors for p in e.problems])

    def render(self, lang: str = DEFAULT_LANG) -> str:
        return "\n".join(e.render(lang) for e in self.errors)

    def each(self) -> list[OutputError]:
        return list(self.errors)


class Interrupted(BaseException):
    """SIGTERM or SIGINT arrived while writing. `written` tells whether the set was completed
    (the signal came while moving files into place) or nothing was written (while staging)."""

    def __init__(self, signum: int, written: bool):
        self.signum = signum
        self.written = written
        super().__init__(f"interrupted by {signal.Signals(signum).name}")  # i18n: not text


# --- the public entry points ----------------------------------------------------------------

def write_outputs(outdir: Path, outputs: list[Output], *, force: bool = False,
                  version: str = __version__) -> Written:
    """Write `outputs` into `outdir` as one set (see the module docstring)."""
    outdir = Path(outdir)
    names = [Path(out.path).name for out in outputs]
    for out, name in zip(outputs, names):
        if str(out.path) != name or name.startswith(".") or not name:
            raise ValueError(f"an output must be a plain file name, not {out.path!r}")  # i18n: not text
    if len(set(names)) != len(names):
        raise ValueError("two outputs share a file name")  # i18n: not text
    _prepare_folder(outdir)
    with _locked(outdir):
        try:
            recover(outdir)
            _remove_stale(outdir)
            old = read_manifest(outdir, strict=not force)
            overwritten = _check_clobber(outdir, names, old, force)
        except OSError as exc:
            raise _unusable(outdir, exc) from None
        new = dict(old)
        for out, name in zip(outputs, names):
            new[name] = _record(out.data)
        new = {name: rec for name, rec in new.items()
               if name in names or os.path.lexists(outdir / name)}
        forced = {name: _digest_record(outdir / name) for name in overwritten}
        _write_set(outdir, list(zip(names, (out.data for out in outputs))), old, new, version, forced)
    return Written([outdir / name for name in names], [outdir / n for n in overwritten])


def recover(outdir: Path) -> bool:
    """Finish a run that was killed while moving files into place; True if there was one.

    Re-applies the journal's moves whose staged files still exist, then writes the manifest
    from what is on disk: each moved file keeps the new record if its digest matches it, else
    the old record if that matches, else no record. Everything is checked first (see the module
    docstring): an unexpected journal, staging folder or file in the way is an OutputError and
    nothing is changed. Call it only while holding the lock."""
    outdir = Path(outdir)
    journal_path = outdir / JOURNAL_NAME
    if not os.path.lexists(journal_path):
        return False
    journal = _read_journal(outdir)
    staging = outdir / journal.staging
    manifest = read_manifest(outdir)
    if manifest not in (journal.old, journal.new):
        raise _journal_error(outdir, Msg("errors.output.journal.not_this_manifest"), journal.staging)
    pending = _pending_moves(outdir, journal, manifest)
    for name in pending:
        os.replace(staging / name, outdir / name)
    _fsync_dir(outdir)
    records = {}
    for name, rec in journal.new.items():
        on_disk = _digest_record(outdir / name)
        if on_disk is None:
            continue
        if on_disk == rec:
            records[name] = rec
        elif on_disk == manifest.get(name):
            records[name] = manifest[name]
        elif on_disk == journal.old.get(name):
            records[name] = journal.old[name]
    _write_atomically(outdir / MANIFEST_NAME, _manifest_bytes(records, journal.version), outdir)
    if os.path.lexists(staging):
        shutil.rmtree(staging)
    journal_path.unlink()
    _fsync_dir(outdir)
    return True


@dataclass
class _Journal:
    staging: str
    moves: list[str]
    old: dict
    new: dict
    version: str
    digest: str
    forced: dict


def _journal_body(staging: str, moves: list[str], old: dict, new: dict, version: str,
                  forced: dict) -> dict:
    """`forced`: the files --force let the run replace, each with its record as the run saw it
    (None: not a regular file), so that recovery replaces them only while they are unchanged."""
    return {"format": MANIFEST_FORMAT, "staging": staging, "moves": moves, "old": {"files": old},
            "new": {"files": new}, "version": version, "forced": forced}


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _journal_error(outdir: Path, detail, staging: str = f"{STAGING_PREFIX}*") -> OutputError:
    return OutputError(outdir / JOURNAL_NAME, [Problem(
        "", Msg("errors.output.journal.message", detail=detail),
        Msg("errors.output.journal.fix", staging=staging))])


def _read_journal(outdir: Path) -> _Journal:
    """The journal, checked in itself: a regular file within its cap, JSON of the shape this
    module writes, names it would write, and a digest that matches its contents."""
    try:
        data = load_json(read_regular(outdir / JOURNAL_NAME, limits.MAX_JOURNAL_BYTES, follow_links=False))
        body = {key: data[key] for key in ("format", "staging", "moves", "old", "new", "version", "forced")}
        digest = data["digest"]
        if body["format"] != MANIFEST_FORMAT or not isinstance(body["version"], str) \
                or not isinstance(digest, str):
            raise ValueError(Msg("errors.output.journal.not_ours"))
        staging = body["staging"]
        if not isinstance(staging, str) or not _STAGING_NAME.fullmatch(staging):
            raise ValueError(Msg("errors.output.journal.bad_staging", name=repr(staging)[:80]))
        moves = body["moves"]
        if not isinstance(moves, list):
            raise ValueError(Msg("errors.output.journal.not_ours"))
        moves = [_plain(name) for name in moves]
        old, new = _files(body["old"]), _files(body["new"])
        forced = body["forced"]
        if not isinstance(forced, dict) or any(name not in moves for name in forced):
            raise ValueError(Msg("errors.output.journal.not_ours"))
        forced = {name: None if rec is None else _files({"files": {name: rec}})[name]
                  for name, rec in forced.items()}
        if len(set(moves)) != len(moves) or any(name not in new for name in moves):
            raise ValueError(Msg("errors.output.journal.not_ours"))
        if _digest(_json_bytes(body)) != digest:
            raise ValueError(Msg("errors.output.journal.digest"))
    except ReadRefused as exc:
        raise _journal_error(outdir, exc.message) from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise _journal_error(outdir, _detail(exc)) from None
    return _Journal(staging, moves, old, new, body["version"], digest, forced)


def _pending_moves(outdir: Path, journal: _Journal, manifest: dict) -> list[str]:
    """The moves still to do, each checked: the staging folder is the journal's (its digest
    file), holds only regular files the journal lists, each matching its new record, and every
    file a move replaces is absent or what the manifest records. Raises before any change."""
    staging = outdir / journal.staging
    try:
        mode = os.lstat(staging).st_mode
    except FileNotFoundError:
        return []       # the staged files are gone: only the manifest is rewritten
    if not stat.S_ISDIR(mode):
        raise _journal_error(outdir, Msg("errors.output.journal.staging_not_folder", name=journal.staging),
                             journal.staging)
    try:
        tie = read_regular(staging / JOURNAL_DIGEST_NAME, 256, follow_links=False).decode("ascii", "replace")
    except (OSError, ReadRefused):
        tie = None
    if tie != journal.digest:
        raise _journal_error(outdir, Msg("errors.output.journal.not_tied", name=journal.staging), journal.staging)
    pending, refused = [], []
    for entry in sorted(os.listdir(staging)):
        if entry == JOURNAL_DIGEST_NAME:
            continue
        path = staging / entry
        if entry not in journal.moves or not stat.S_ISREG(os.lstat(path).st_mode):
            raise _journal_error(outdir, Msg("errors.output.journal.stranger", name=entry[:200],
                                             staging=journal.staging), journal.staging)
        if _digest_record(path) != journal.new[entry]:
            raise _journal_error(outdir, Msg("errors.output.journal.staged_changed", name=entry[:200]),
                                 journal.staging)
        target = outdir / entry
        if os.path.isdir(target) and not os.path.islink(target):
            raise OutputError(target, [Problem(
                "", Msg("errors.output.folder_in_the_way.message"), Msg("errors.output.folder_in_the_way.fix"))])
        on_disk = _digest_record(target) if os.path.lexists(target) else "absent"
        untouched = on_disk is not None and on_disk == manifest.get(entry)
        forced = entry in journal.forced and on_disk == journal.forced[entry]
        if on_disk != "absent" and not untouched and not forced:
            refused.append(OutputError(target, [Problem(
                "", Msg("errors.output.recover_changed.message"),
                Msg("errors.output.recover_changed.fix", journal=str(outdir / JOURNAL_NAME),
                    staging=str(staging)))]))
        pending.append(entry)
    if refused:
        raise refused[0] if len(refused) == 1 else OutputsRefused(refused)
    return [name for name in journal.moves if name in pending]


def read_manifest(outdir: Path, strict: bool = True) -> dict[str, dict]:
    """The manifest's records, {file name: {"sha256": ..., "size": ...}}; {} when there is none.
    An unreadable manifest is an OutputError when `strict`, else treated as empty."""
    path = Path(outdir) / MANIFEST_NAME
    try:
        return _files(load_json(read_regular(path, limits.MAX_MANIFEST_BYTES, follow_links=False)))
    except FileNotFoundError:
        return {}
    except ReadRefused as exc:
        if not strict:
            return {}
        raise OutputError(path, [Problem(
            "", Msg("errors.output.manifest.message", detail=exc.message),
            Msg("errors.output.manifest.fix"))]) from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        if not strict:
            return {}
        raise OutputError(path, [Problem(
            "", Msg("errors.output.manifest.message", detail=_detail(exc)),
            Msg("errors.output.manifest.fix"))]) from None


def manifest_bytes(records: dict[str, dict], version: str = __version__) -> bytes:
    """The manifest file for these records: sorted keys, no timestamps."""
    return _manifest_bytes(records, version)


# --- steps ----------------------------------------------------------------------------------

def _prepare_folder(outdir: Path) -> None:
    if outdir.exists() and not outdir.is_dir():
        raise OutputError(outdir, [Problem(
            "", Msg("errors.output.not_a_folder.message"), Msg("errors.output.not_a_folder.fix"))])
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _unusable(outdir, exc) from None
    if not os.access(outdir, os.W_OK | os.X_OK):
        raise _unusable(outdir, OSError(errno.EACCES, os.strerror(errno.EACCES)))


def _unusable(outdir: Path, exc: OSError) -> OutputError:
    return OutputError(outdir, [Problem(
        "", Msg("errors.output.unusable.message", reason=exc.strerror or str(exc)),
        Msg("errors.output.unusable.fix"))])


class _locked:
    """flock on OUT/.trainbudget.lock for the duration of the with-block."""

    def __init__(self, outdir: Path):
        self.outdir = outdir
        self.fd = -1

    def __enter__(self):
        path = self.outdir / LOCK_NAME
        try:
            # never through a link (a dangling one would create a file where it points), never
            # blocking on a FIFO
            self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK,
                              0o666)
        except OSError as exc:
            if exc.errno == errno.ELOOP or os.path.islink(path):
                raise _own_file_error(path, os.lstat(path).st_mode) from None
            raise _unusable(self.outdir, exc) from None
        mode = os.fstat(self.fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(self.fd)
            raise _own_file_error(path, mode)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(self.fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise OutputError(self.outdir, [Problem(
                    "", Msg("errors.output.locked.message"), Msg("errors.output.locked.fix"))]) from None
            raise _unusable(self.outdir, exc) from None
        return self

    def __exit__(self, *exc):
        os.close(self.fd)   # closing the descriptor releases the lock
        return False


def _own_file_error(path: Path, mode: int) -> OutputError:
    """One of the folder's own names holds something trainbudget does not write there."""
    kind = ("link" if stat.S_ISLNK(mode) else "folder" if stat.S_ISDIR(mode) else "fifo" if stat.S_ISFIFO(mode)
            else "device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "socket" if stat.S_ISSOCK(mode)
            else "other")
    return OutputError(path, [Problem("", Msg("errors.output.own_file.message", kind=Msg(f"errors.read.kind.{kind}")),
                                      Msg("errors.output.own_file.fix", path=str(path)))])


def _remove_stale(outdir: Path) -> None:
    """Staging folders and temp files of killed runs (we hold the lock: none is in use)."""
    for entry in outdir.iterdir():
        if _STAGING_NAME.fullmatch(entry.name) and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        elif entry.name.startswith(".trainbudget-") and entry.name.endswith(".tmp"):
            entry.unlink(missing_ok=True)


def _check_clobber(outdir: Path, names: list[str], old: dict, force: bool) -> list[str]:
    """Refuse (or, with force, list) outputs whose file changed since we wrote it."""
    errors, overwritten = [], []
    for name in names:
        path = outdir / name
        if not os.path.lexists(path):
            continue
        if path.is_dir() and not path.is_symlink():
            errors.append(OutputError(path, [Problem(
                "", Msg("errors.output.folder_in_the_way.message"), Msg("errors.output.folder_in_the_way.fix"))]))
            continue
        record = old.get(name)
        if record is not None and _digest_record(path) == record:
            continue   # untouched since we wrote it: replace silently
        if force:
            overwritten.append(name)
            continue
        message = (Msg("errors.output.changed.message") if record is not None
                   else Msg("errors.output.unknown.message"))
        errors.append(OutputError(path, [Problem("", message, _keep_edits_fix(path))]))
    if errors:
        raise errors[0] if len(errors) == 1 else OutputsRefused(errors)
    return overwritten


def _keep_edits_fix(path: Path) -> Msg:
    if path.suffix == ".xlsx":
        return Msg("errors.output.changed.fix_workbook", path=str(path))
    return Msg("errors.output.changed.fix")


def _detail(exc: Exception):
    """Why a file could not be read, for the message's parentheses: our own reason (a Msg),
    else the exception's text."""
    return exc.args[0] if len(exc.args) == 1 and isinstance(exc.args[0], Msg) else str(exc)


def _write_set(outdir: Path, files: list[tuple[str, bytes]], old: dict, new: dict,
               version: str, forced: dict | None = None) -> None:
    signals = _Signals()
    signals.install()
    staging = None
    try:
        try:
            staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=outdir))
            for i, (name, data) in enumerate(files):
                _write_file(staging / name, data)
                if i == 0:
                    _test_pause(PAUSE_WHILE_STAGING)
            body = _journal_body(staging.name, [name for name, _ in files], old, new, version, forced or {})
            digest = _digest(_json_bytes(body))
            _write_file(staging / JOURNAL_DIGEST_NAME, digest.encode("ascii"))
            _fsync_dir(staging)
            _write_atomically(outdir / JOURNAL_NAME, _json_bytes({**body, "digest": digest}), outdir)
            # The journal is on disk: from here the set is finished, now or by the next run.
            signals.hold()
        except BaseException as exc:
            signals.hold()
            # Nothing has been moved yet: the old set is intact, so drop what this run staged.
            if staging is not None:
                shutil.rmtree(staging, ignore_errors=True)
            for leftover in (JOURNAL_NAME, JOURNAL_NAME + ".tmp"):
                (outdir / leftover).unlink(missing_ok=True)
            if isinstance(exc, OSError):
                raise _unusable(outdir, exc) from None
            raise
        for i, (name, _) in enumerate(files):
            os.replace(staging / name, outdir / name)
            if i == 0:
                _test_pause(PAUSE_AFTER_RENAMES)
        _fsync_dir(outdir)
        _write_atomically(outdir / MANIFEST_NAME, _manifest_bytes(new, version), outdir)
        shutil.rmtree(staging, ignore_errors=True)
        (outdir / JOURNAL_NAME).unlink()
        _fsync_dir(outdir)
    except OSError as exc:
        raise _unusable(outdir, exc) from None   # the journal lets the next run finish the set
    finally:
        signals.restore()
    if signals.pending is not None:
        raise Interrupted(signals.pending, written=True)


class _Signals:
    """SIGTERM/SIGINT while writing: raise Interrupted while staging, hold them afterwards."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self):
        self.holding = False
        self.pending: int | None = None
        self.previous: dict = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return   # signal handlers can only be set from the main thread
        for sig in self.SIGNALS:
            self.previous[sig] = signal.signal(sig, self._handle)

    def hold(self) -> None:
        self.holding = True

    def restore(self) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        self.previous = {}

    def _handle(self, signum, frame) -> None:
        if self.holding:
            self.pending = self.pending or signum
            return
        self.holding = True
        raise Interrupted(signum, written=False)


# --- files ----------------------------------------------------------------------------------

def _record(data: bytes) -> dict:
    return {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


def _digest_record(path: Path) -> dict | None:
    """The record of a regular file, read without following a link or blocking on a FIFO;
    None when it is anything else (or unreadable): it is then no file of ours."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        h, size = hashlib.sha256(), 0
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
            size += len(chunk)
        return {"sha256": h.hexdigest(), "size": size}
    except OSError:
        return None
    finally:
        os.close(fd)


def _write_file(path: Path, data: bytes) -> None:
    """Write and fsync a new file (a name left by a killed run is removed first; a link there
    is removed, never followed); the mode is what a plain open() gives (0o666 less the umask)."""
    if os.path.lexists(path):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_atomically(path: Path, data: bytes, outdir: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    _write_file(tmp, data)
    os.replace(tmp, path)
    _fsync_dir(outdir)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _json_bytes(value) -> bytes:
    return (json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _manifest_bytes(records: dict[str, dict], version: str) -> bytes:
    return _json_bytes({"files": records, "format": MANIFEST_FORMAT, "tool": "trainbudget",
                        "version": version})


def _files(manifest) -> dict[str, dict]:
    """The file records of a manifest, checked: plain names, hex digests, whole sizes."""
    files = manifest["files"]
    if not isinstance(files, dict):
        raise ValueError(Msg("errors.output.manifest.files_not_mapping"))
    out = {}
    for name, rec in files.items():
        digest, size = rec["sha256"], rec["size"]
        if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest) \
                or not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ValueError(Msg("errors.output.manifest.bad_record", name=repr(name)))
        out[_plain(name)] = {"sha256": digest, "size": size}
    return out


def _plain(name) -> str:
    """An output's name: a plain file name, never hidden (the folder's own files are)."""
    if not isinstance(name, str) or not name or name != Path(name).name or name.startswith(".") \
            or "\x00" in name:
        raise ValueError(Msg("errors.output.manifest.not_plain", name=repr(name)))
    return name


def _test_pause(variable: str) -> None:
    """Test-only: sleep so a test can kill the process at this point."""
    if os.environ.get(variable) == "1":
        time.sleep(_TEST_PAUSE_SECONDS)
