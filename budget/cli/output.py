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
import shutil
import signal
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import __version__
from ..core.errors import InputError, Msg, Problem
from ..core.i18n import DEFAULT_LANG

LOCK_NAME = ".trainbudget.lock"
MANIFEST_NAME = ".trainbudget-manifest.json"
JOURNAL_NAME = ".trainbudget-journal.json"
STAGING_PREFIX = ".trainbudget-staging-"
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
        _write_set(outdir, list(zip(names, (out.data for out in outputs))), old, new, version)
    return Written([outdir / name for name in names], [outdir / n for n in overwritten])


def recover(outdir: Path) -> bool:
    """Finish a run that was killed while moving files into place; True if there was one.

    Re-applies the journal's moves whose staged files still exist, then writes the manifest
    from what is on disk: each moved file keeps the new record if its digest matches it, else
    the old record if that matches, else no record. Call it only while holding the lock."""
    outdir = Path(outdir)
    journal_path = outdir / JOURNAL_NAME
    if not journal_path.exists():
        return False
    try:
        journal = json.loads(journal_path.read_text(encoding="utf-8"))
        staging = outdir / _plain(journal["staging"])
        moves = [_plain(name) for name in journal["moves"]]
        old, new = _files(journal["old"]), _files(journal["new"])
        version = str(journal["version"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise OutputError(journal_path, [Problem(
            "", Msg("errors.output.journal.message", detail=_detail(exc)),
            Msg("errors.output.journal.fix", staging=f"{STAGING_PREFIX}*"))]) from None
    for name in moves:
        if (staging / name).is_file():
            os.replace(staging / name, outdir / name)
    _fsync_dir(outdir)
    records = {}
    for name, rec in new.items():
        path = outdir / name
        if not path.is_file() or path.is_symlink():
            continue
        if name not in moves:
            records[name] = rec
            continue
        on_disk = _record(path.read_bytes())
        if on_disk == rec:
            records[name] = rec
        elif old.get(name) == on_disk:
            records[name] = old[name]
    _write_atomically(outdir / MANIFEST_NAME, _manifest_bytes(records, version), outdir)
    shutil.rmtree(staging, ignore_errors=True)
    journal_path.unlink()
    _fsync_dir(outdir)
    return True


def read_manifest(outdir: Path, strict: bool = True) -> dict[str, dict]:
    """The manifest's records, {file name: {"sha256": ..., "size": ...}}; {} when there is none.
    An unreadable manifest is an OutputError when `strict`, else treated as empty."""
    path = Path(outdir) / MANIFEST_NAME
    try:
        return _files(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError) as exc:
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
        try:
            self.fd = os.open(self.outdir / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        except OSError as exc:
            raise _unusable(self.outdir, exc) from None
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


def _remove_stale(outdir: Path) -> None:
    """Staging folders and temp files of killed runs (we hold the lock: none is in use)."""
    for entry in outdir.iterdir():
        if entry.name.startswith(STAGING_PREFIX) and entry.is_dir() and not entry.is_symlink():
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
        if record is not None and not path.is_symlink() and _record(path.read_bytes()) == record:
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
               version: str) -> None:
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
            _fsync_dir(staging)
            journal = {"format": MANIFEST_FORMAT, "staging": staging.name,
                       "moves": [name for name, _ in files], "old": {"files": old},
                       "new": {"files": new}, "version": version}
            _write_atomically(outdir / JOURNAL_NAME, _json_bytes(journal), outdir)
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


def _write_file(path: Path, data: bytes) -> None:
    """Write and fsync; the mode is what a plain open() gives (0o666 less the umask)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
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
        if not isinstance(digest, str) or len(digest) != 64 or not isinstance(size, int):
            raise ValueError(Msg("errors.output.manifest.bad_record", name=repr(name)))
        out[_plain(name)] = {"sha256": digest, "size": size}
    return out


def _plain(name) -> str:
    if not isinstance(name, str) or not name or name != Path(name).name or name in {".", ".."}:
        raise ValueError(Msg("errors.output.manifest.not_plain", name=repr(name)))
    return name


def _test_pause(variable: str) -> None:
    """Test-only: sleep so a test can kill the process at this point."""
    if os.environ.get(variable) == "1":
        time.sleep(_TEST_PAUSE_SECONDS)
