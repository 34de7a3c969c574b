"""Writing a run: one staged set, a manifest, a lock, and never over a reviewer's edits."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from budget import __version__
from budget.cli.app import main
from budget.cli.output import (JOURNAL_DIGEST_NAME, JOURNAL_NAME, LOCK_NAME, MANIFEST_NAME, PAUSE_AFTER_RENAMES,
                           PAUSE_WHILE_STAGING, STAGING_PREFIX, Output, manifest_bytes, read_manifest, recover,
                           write_outputs)
from support import ROOT, SEED_A100, SEED_H100

STEM = "gpt3-175b-h100"
NAMES_EXT = ("xlsx", "md", "html")
NAMES = [f"{STEM}.{ext}" for ext in NAMES_EXT]


def _run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _leftovers(folder: Path) -> list[str]:
    """Anything a run must not leave behind: staging folders, journals, temp files."""
    return sorted(p.name for p in folder.iterdir()
                  if p.name.startswith(STAGING_PREFIX) or p.name == JOURNAL_NAME
                  or p.name.endswith(".tmp"))


def _assert_matches_manifest(folder: Path, names=NAMES) -> dict:
    records = read_manifest(folder)
    for name in names:
        path = folder / name
        assert records[name] == {"sha256": _sha(path), "size": path.stat().st_size}, name
    return records


@pytest.fixture
def scenario_b(tmp_path) -> Path:
    """The seed with twice the GPUs, under the seed's file name: same outputs, other bytes."""
    folder = tmp_path / "b-scenario"
    folder.mkdir()
    path = folder / f"{STEM}.yaml"
    path.write_text(SEED_H100.read_text(encoding="utf-8").replace(
        "  gpu_count: 512", "  gpu_count: 1024"), encoding="utf-8")
    return path


@pytest.fixture
def built(tmp_path, capsys, scenario_b):
    """Set A (the seed) written into out/, and set B's bytes built elsewhere for reference."""
    out, ref = tmp_path / "out", tmp_path / "ref"
    assert _run(capsys, SEED_H100, "-o", out, "-q")[0] == 0
    assert _run(capsys, scenario_b, "-o", ref, "-q")[0] == 0
    a = {name: (out / name).read_bytes() for name in NAMES}
    b = {name: (ref / name).read_bytes() for name in NAMES}
    assert all(a[name] != b[name] for name in NAMES)
    return out, a, b


def _writer(scenario: Path, out: Path, hook: str) -> subprocess.Popen:
    env = {**os.environ, hook: "1"}
    return subprocess.Popen([sys.executable, str(ROOT / "generate.py"), str(scenario), "-o",
                             str(out), "-q"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_for(condition, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            raise AssertionError(f"the writer exited ({proc.returncode}): {proc.stderr.read()}")
        if time.monotonic() > deadline:
            raise AssertionError("the writer never reached its pause")
        time.sleep(0.02)


def _staging_dirs(out: Path) -> list[Path]:
    return [p for p in out.iterdir() if p.name.startswith(STAGING_PREFIX)]


def _staged_files(out: Path) -> int:
    """Outputs waiting in staging folders (the journal's digest file aside)."""
    try:
        return sum(1 for d in _staging_dirs(out) for p in d.iterdir() if p.name != JOURNAL_DIGEST_NAME)
    except FileNotFoundError:   # a staging folder vanished while we looked
        return 0


@pytest.fixture
def processes():
    """Writers started by a test; any still running at the end are killed."""
    started: list[subprocess.Popen] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


# --- a normal run ---------------------------------------------------------------------------

def test_a_run_leaves_only_its_outputs_the_manifest_and_the_lock(tmp_path, capsys):
    out = tmp_path / "out"
    code, _, _ = _run(capsys, SEED_H100, "-o", out, "-q")
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == sorted([*NAMES, LOCK_NAME, MANIFEST_NAME])


@pytest.mark.slow
def test_manifest_records_every_file_and_is_byte_identical_across_runs(tmp_path, capsys):
    for folder in ("a", "b"):
        assert _run(capsys, SEED_H100, SEED_A100, "-o", tmp_path / folder, "-q")[0] == 0
    assert _run(capsys, SEED_H100, SEED_A100, "-o", tmp_path / "a", "-q")[0] == 0   # again
    manifest = (tmp_path / "a" / MANIFEST_NAME).read_bytes()
    assert manifest == (tmp_path / "b" / MANIFEST_NAME).read_bytes()
    written = [f"gpt3-175b-{gpu}.{ext}" for gpu in ("h100", "a100") for ext in NAMES_EXT]
    data = json.loads(manifest)
    assert sorted(data["files"]) == sorted(written)
    assert data["version"] == __version__ and data["tool"] == "trainbudget"
    assert manifest == (json.dumps(data, sort_keys=True, indent=2) + "\n").encode()
    _assert_matches_manifest(tmp_path / "a", written)


def test_untouched_output_is_replaced_silently(built, capsys, scenario_b):
    out, _, b = built
    code, stdout, err = _run(capsys, scenario_b, "-o", out)
    assert code == 0
    assert "error" not in err and "overwritten" not in err
    assert f"  wrote {out / NAMES[0]}" in stdout
    assert {name: (out / name).read_bytes() for name in NAMES} == b
    _assert_matches_manifest(out)
    assert _leftovers(out) == []


def test_files_the_run_does_not_write_are_left_alone(tmp_path, capsys):
    out = tmp_path / "out"
    assert _run(capsys, SEED_A100, "-o", out, "-q")[0] == 0
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    a100 = _snapshot(out)
    assert _run(capsys, SEED_H100, "-o", out, "-q")[0] == 0
    after = _snapshot(out)
    for name in ("notes.txt", "gpt3-175b-a100.xlsx", "gpt3-175b-a100.md", "gpt3-175b-a100.html"):
        assert after[name] == a100[name], name
    records = _assert_matches_manifest(out, NAMES + ["gpt3-175b-a100.xlsx"])
    assert "notes.txt" not in records


# --- never clobber a reviewer ---------------------------------------------------------------

def test_changed_workbook_is_refused_with_exit_2_and_left_untouched(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _run(capsys, SEED_H100, "-o", "out", "-q")[0] == 0
    book = tmp_path / "out" / f"{STEM}.xlsx"
    book.write_bytes(book.read_bytes() + b"a reviewer's edit")
    before = _snapshot(tmp_path / "out")
    code, stdout, err = _run(capsys, SEED_H100, "-o", "out")
    assert code == 2 and stdout == ""
    assert err == (
        f"error: out/{STEM}.xlsx: changed since trainbudget wrote it\n"
        f"  fix: bring the edits back with 'trainbudget import out/{STEM}.xlsx -o SCENARIO.yaml', "
        "or pass --force to overwrite it\n")
    assert _snapshot(tmp_path / "out") == before, "nothing is written, not even the other files"
    assert _leftovers(tmp_path / "out") == []


def test_every_changed_output_is_named(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _run(capsys, SEED_H100, "-o", "out", "-q")[0] == 0
    for name in NAMES[:2]:
        (tmp_path / "out" / name).write_bytes(b"edited")
    code, _, err = _run(capsys, SEED_H100, "-o", "out")
    assert code == 2
    assert err.splitlines()[2:] == [
        f"error: out/{STEM}.md: changed since trainbudget wrote it",
        "  fix: move it elsewhere to keep it, or pass --force to overwrite it"]


def test_force_overwrites_a_changed_workbook(built, capsys):
    out, a, _ = built
    book = out / NAMES[0]
    book.write_bytes(b"a reviewer's edit")
    code, _, err = _run(capsys, SEED_H100, "-o", out, "--force", "-q")
    assert code == 0
    assert f"warning: {book}: overwritten (--force)" in err
    assert {name: (out / name).read_bytes() for name in NAMES} == a
    _assert_matches_manifest(out)


def test_unknown_file_with_an_outputs_name_is_refused(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / f"{STEM}.md").write_text("my own notes\n", encoding="utf-8")
    code, _, err = _run(capsys, SEED_H100, "-o", out)
    assert code == 2
    assert err == (f"error: {out / STEM}.md: exists, but trainbudget has no record of writing it\n"
                   "  fix: move it elsewhere to keep it, or pass --force to overwrite it\n")
    assert (out / f"{STEM}.md").read_text(encoding="utf-8") == "my own notes\n"
    assert not (out / f"{STEM}.xlsx").exists() and not (out / MANIFEST_NAME).exists()
    assert _run(capsys, SEED_H100, "-o", out, "-f", "-q")[0] == 0
    _assert_matches_manifest(out)


# --- interrupted runs -----------------------------------------------------------------------

@pytest.mark.slow
def test_sigkill_between_renames_then_the_next_run_completes_the_set(built, capsys, scenario_b,
                                                                     processes):
    out, a, b = built
    proc = _writer(scenario_b, out, PAUSE_AFTER_RENAMES)
    processes.append(proc)
    # Paused after the first rename: the journal is down, one of three files has moved.
    _wait_for(lambda: (out / JOURNAL_NAME).exists() and _staged_files(out) == 2, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert (out / NAMES[0]).read_bytes() == b[NAMES[0]]
    assert (out / NAMES[1]).read_bytes() == a[NAMES[1]], "a mixed set until the next run"
    assert read_manifest(out)[NAMES[1]]["sha256"] == hashlib.sha256(a[NAMES[1]]).hexdigest()

    code, _, err = _run(capsys, scenario_b, "-o", out, "-q")
    assert code == 0, err
    assert {name: (out / name).read_bytes() for name in NAMES} == b
    _assert_matches_manifest(out)
    assert _leftovers(out) == []


def test_interrupted_run_is_finished_from_its_journal(built, scenario_b, processes):
    out, _, b = built
    proc = _writer(scenario_b, out, PAUSE_AFTER_RENAMES)
    processes.append(proc)
    _wait_for(lambda: (out / JOURNAL_NAME).exists() and _staged_files(out) == 2, proc)
    proc.kill()
    proc.wait(timeout=30)
    assert recover(out) is True
    assert {name: (out / name).read_bytes() for name in NAMES} == b, "the complete new set"
    _assert_matches_manifest(out)
    assert _leftovers(out) == [] and recover(out) is False


def test_interrupted_run_without_its_staged_files_records_what_is_on_disk(built, capsys,
                                                                          scenario_b, processes):
    out, a, b = built
    proc = _writer(scenario_b, out, PAUSE_AFTER_RENAMES)
    processes.append(proc)
    _wait_for(lambda: (out / JOURNAL_NAME).exists() and _staged_files(out) == 2, proc)
    proc.kill()
    proc.wait(timeout=30)
    for staging in _staging_dirs(out):
        shutil.rmtree(staging)
    (out / NAMES[2]).write_bytes(b"edited after the crash")
    assert recover(out) is True
    records = read_manifest(out)
    assert records[NAMES[0]]["sha256"] == hashlib.sha256(b[NAMES[0]]).hexdigest()   # moved: new
    assert records[NAMES[1]]["sha256"] == hashlib.sha256(a[NAMES[1]]).hexdigest()   # not: old
    assert NAMES[2] not in records, "matches neither record, so no record"
    assert _leftovers(out) == []
    code, _, err = _run(capsys, scenario_b, "-o", out)
    assert code == 2 and err == (f"error: {out / NAMES[2]}: exists, but trainbudget has no "
                                 "record of writing it\n  fix: move it elsewhere to keep it, or "
                                 "pass --force to overwrite it\n")


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_while_staging_leaves_no_staging_and_the_old_set(built, scenario_b, processes,
                                                                signum):
    out, a, _ = built
    manifest = (out / MANIFEST_NAME).read_bytes()
    proc = _writer(scenario_b, out, PAUSE_WHILE_STAGING)
    processes.append(proc)
    _wait_for(lambda: _staged_files(out) >= 1, proc)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signum
    assert err == (f"error: {out}: interrupted by {signal.Signals(signum).name}; nothing was "
                   "written\n  fix: run the command again\n")
    assert _staging_dirs(out) == [] and _leftovers(out) == []
    assert {name: (out / name).read_bytes() for name in NAMES} == a
    assert (out / MANIFEST_NAME).read_bytes() == manifest


def test_python_exception_while_staging_removes_the_staged_files(tmp_path, monkeypatch):
    import budget.cli.output as output

    out = tmp_path / "out"
    write_outputs(out, [Output(Path("a.md"), b"old")])
    real, calls = output._write_file, []

    def failing(path, data):
        calls.append(path)
        if len(calls) == 2:
            raise RuntimeError("disk on fire")
        real(path, data)

    monkeypatch.setattr(output, "_write_file", failing)
    with pytest.raises(RuntimeError):
        write_outputs(out, [Output(Path("a.md"), b"new"), Output(Path("b.md"), b"new")])
    assert _leftovers(out) == []
    assert (out / "a.md").read_bytes() == b"old" and not (out / "b.md").exists()


# --- the folder -----------------------------------------------------------------------------

@pytest.mark.slow
def test_a_second_run_into_a_locked_folder_is_refused(built, capsys, scenario_b, processes):
    out, a, _ = built
    proc = _writer(scenario_b, out, PAUSE_WHILE_STAGING)
    processes.append(proc)
    _wait_for(lambda: _staged_files(out) >= 1, proc)
    code, stdout, err = _run(capsys, SEED_H100, "-o", out)
    assert code == 2 and stdout == ""
    assert err == (f"error: {out}: another trainbudget run is writing into this folder\n"
                   "  fix: wait for it to finish, or choose another folder with -o DIR\n")
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    # The lock goes with the process; the folder takes the next run.
    with open(out / LOCK_NAME) as fh:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    assert _run(capsys, SEED_H100, "-o", out, "-q")[0] == 0


def test_output_path_that_is_a_file_exits_2(tmp_path, capsys):
    target = tmp_path / "report.txt"
    target.write_text("not a folder", encoding="utf-8")
    code, stdout, err = _run(capsys, SEED_H100, "-o", target)
    assert code == 2 and stdout == ""
    assert err == (f"error: {target}: is a file, not a folder\n"
                   "  fix: choose a folder with -o DIR, or move the file out of the way\n")
    assert target.read_text(encoding="utf-8") == "not a folder"


def test_output_under_a_file_exits_2(tmp_path, capsys):
    target = tmp_path / "report.txt"
    target.write_text("not a folder", encoding="utf-8")
    code, _, err = _run(capsys, SEED_H100, "-o", target / "out")
    assert code == 2
    assert err.startswith(f"error: {target / 'out'}: cannot write to this folder: ")
    assert err.endswith("\n  fix: choose a writable output folder with -o DIR\n")


def test_a_folder_in_place_of_an_output_is_refused_even_with_force(tmp_path, capsys):
    out = tmp_path / "out"
    (out / f"{STEM}.html").mkdir(parents=True)
    code, _, err = _run(capsys, SEED_H100, "-o", out, "--force")
    assert code == 2
    assert err.startswith(f"error: {out / STEM}.html: is a folder, so the output cannot take "
                          "its place\n")


def test_the_output_folders_errors_are_in_the_runs_language(tmp_path, capsys):
    """A Chinese scenario's run (or --lang zh) says why the folder cannot take it in Chinese;
    a folder's problem is about no one scenario, so --lang en wins over the scenario."""
    target = tmp_path / "report.txt"
    target.write_text("not a folder", encoding="utf-8")
    chinese = tmp_path / STEM / f"{STEM}.yaml"
    chinese.parent.mkdir()
    chinese.write_text("language: zh\n" + SEED_H100.read_text(encoding="utf-8"), encoding="utf-8")
    zh = f"错误：{target}: 是文件，不是文件夹\n  处理办法：请用 -o DIR 选择一个文件夹，或把该文件移走\n"
    for args, expected in (((chinese,), zh), ((SEED_H100, "--lang", "zh"), zh),
                           ((chinese, "--lang", "en"), f"error: {target}: is a file, not a folder\n"
                            "  fix: choose a folder with -o DIR, or move the file out of the way\n")):
        code, stdout, err = _run(capsys, *args, "-o", target)
        assert (code, stdout, err) == (2, "", expected)
    assert target.read_text(encoding="utf-8") == "not a folder"


def test_a_refused_workbook_tells_how_to_keep_the_edits_in_chinese(tmp_path, capsys):
    out = tmp_path / "out"
    assert _run(capsys, SEED_H100, "-o", out, "-q")[0] == 0
    (out / f"{STEM}.xlsx").write_bytes(b"edited by a reviewer")
    code, _, err = _run(capsys, SEED_H100, "-o", out, "--lang", "zh")
    assert code == 2
    assert err == (f"错误：{out / STEM}.xlsx: trainbudget 写入之后已被修改\n"
                   f"  处理办法：请用 'trainbudget import {out / STEM}.xlsx -o SCENARIO.yaml' 把修改带回场景，"
                   "或加 --force 覆盖\n")


# --- the folder's own files are untrusted input (issue 30) -----------------------------------

A = [Output(Path(n), f"old {n}".encode()) for n in ("a.md", "b.md", "c.md")]
B = [Output(Path(n), f"new {n}".encode()) for n in ("a.md", "b.md", "c.md")]


def _crashed(out: Path, monkeypatch, force: bool = False) -> None:
    """Set A written, then set B killed after its first move: the journal and the staged b.md
    and c.md are left, as a SIGKILL between two renames leaves them (in-process: the third
    os.replace fails; the first puts the journal in place)."""
    import budget.cli.output as output

    write_outputs(out, A)
    real, calls = os.replace, []

    def failing(src, dst):
        calls.append(dst)
        if len(calls) == 3:
            raise OSError(5, "Input/output error")
        real(src, dst)

    monkeypatch.setattr(output.os, "replace", failing)
    with pytest.raises(output.OutputError):
        write_outputs(out, B, force=force)
    monkeypatch.setattr(output.os, "replace", real)
    assert (out / JOURNAL_NAME).is_file() and (out / "a.md").read_bytes() == b"new a.md"
    assert (out / "b.md").read_bytes() == b"old b.md"


def _state(folder: Path) -> dict:
    """Every path under a folder, with its bytes or link target: to show nothing changed."""
    out = {}
    for p in sorted(folder.rglob("*")):
        key = str(p.relative_to(folder))
        out[key] = ("link", os.readlink(p)) if p.is_symlink() else \
            ("dir",) if p.is_dir() else ("file", p.read_bytes()) if p.is_file() else ("other",)
    return out


def _journal(out: Path) -> dict:
    return json.loads((out / JOURNAL_NAME).read_text(encoding="utf-8"))


def _rewrite_journal(out: Path, journal: dict, digest: bool = True) -> None:
    """A journal planted by someone who knows the format (its digest made to match)."""
    import budget.cli.output as output
    body = {k: v for k, v in journal.items() if k != "digest"}
    sha = hashlib.sha256(output._json_bytes(body)).hexdigest() if digest else journal["digest"]
    (out / JOURNAL_NAME).write_bytes(output._json_bytes({**body, "digest": sha}))


def test_a_real_journal_completes_the_set_after_a_crash(tmp_path, monkeypatch):
    out = tmp_path / "out"
    _crashed(out, monkeypatch)
    assert recover(out) is True
    assert [(out / n).read_bytes() for n in ("a.md", "b.md", "c.md")] == [o.data for o in B]
    _assert_matches_manifest(out, ["a.md", "b.md", "c.md"])
    assert _leftovers(out) == []


def test_recovery_never_overwrites_an_edit_made_after_the_crash(tmp_path, capsys, monkeypatch):
    """A reviewer edits b.md between the crash and the next run: the journal's move would
    overwrite it (it did, with exit 0): now the run stops, names the file, and changes nothing."""
    out = tmp_path / "out"
    _crashed(out, monkeypatch)
    (out / "b.md").write_bytes(b"a reviewer's edit")
    before = _state(out)
    code, stdout, err = _run(capsys, SEED_H100, "-o", out)
    assert code == 2 and stdout == ""
    assert err.startswith(f"error: {out / 'b.md'}: changed since trainbudget wrote it, and an interrupted "
                          "run's journal would replace it\n  fix: move it elsewhere to keep it")
    assert err.count("error:") == 1
    assert _state(out) == before
    (out / "b.md").rename(tmp_path / "b.md.kept")      # the fix: move it away, run again
    assert recover(out) is True and (out / "b.md").read_bytes() == b"new b.md"


def test_a_forced_run_that_crashed_is_finished_while_its_files_are_unchanged(tmp_path, monkeypatch):
    out = tmp_path / "out"
    write_outputs(out, A)
    (out / "b.md").write_bytes(b"edited, then --force")
    import budget.cli.output as output
    real, calls = os.replace, []

    def failing(src, dst):
        calls.append(dst)
        if len(calls) == 3:
            raise OSError(5, "Input/output error")
        real(src, dst)

    monkeypatch.setattr(output.os, "replace", failing)
    with pytest.raises(output.OutputError):
        write_outputs(out, B, force=True)
    monkeypatch.setattr(output.os, "replace", real)
    assert recover(out) is True and (out / "b.md").read_bytes() == b"new b.md"


@pytest.mark.parametrize("staging", ["notes", "../outside", ".trainbudget-staging-x/..", "", 7])
def test_a_planted_journal_cannot_remove_a_folder(tmp_path, capsys, staging):
    """A crafted journal naming a folder of the user's as its staging folder made the next run
    delete it: now the journal is refused, the folder and everything else untouched."""
    out = tmp_path / "out"
    write_outputs(out, A)
    for folder in (out / "notes", tmp_path / "outside"):
        folder.mkdir()
        (folder / "keep.txt").write_text("mine", encoding="utf-8")
    journal = {"format": 1, "staging": staging, "moves": [], "old": {"files": read_manifest(out)},
               "new": {"files": read_manifest(out)}, "version": __version__, "forced": {}}
    _rewrite_journal(out, {**journal, "digest": ""})
    before, outside = _state(out), _state(tmp_path / "outside")
    code, stdout, err = _run(capsys, SEED_H100, "-o", out)
    assert code == 2 and stdout == ""
    assert err.startswith(f"error: {out / JOURNAL_NAME}: cannot read the journal of an interrupted run (")
    assert err.count("\n") == 2 and "fix: delete it and any" in err
    assert _state(out) == before and _state(tmp_path / "outside") == outside


def test_a_planted_journal_cannot_move_a_file_over_an_output(tmp_path, monkeypatch):
    """A staging folder of the right name with a file in it, and a journal that moves it over
    a.md: without the digest file the real run wrote, the journal is not this folder's."""
    out = tmp_path / "out"
    write_outputs(out, A)
    staging = out / f"{STAGING_PREFIX}1-planted"
    staging.mkdir()
    (staging / "a.md").write_bytes(b"planted")
    rec = {"sha256": hashlib.sha256(b"planted").hexdigest(), "size": 7}
    manifest = read_manifest(out)
    _rewrite_journal(out, {"format": 1, "staging": staging.name, "moves": ["a.md"], "old": {"files": manifest},
                           "new": {"files": {**manifest, "a.md": rec}}, "version": __version__, "forced": {}})
    before = _state(out)
    import budget.cli.output as output
    with pytest.raises(output.OutputError) as err:
        recover(out)
    assert "it was not written with the staging folder" in err.value.render()
    assert _state(out) == before


@pytest.mark.parametrize("tamper, says", [
    ("digest", "its digest does not match its contents"),
    ("extra-staged-file", "which the journal does not list"),
    ("staged-file-changed", "the staged b.md does not match the journal"),
    ("staged-link", "which the journal does not list"),
    ("manifest-changed", "it does not belong to this folder's manifest"),
    ("journal-is-a-link", "is not a regular file (a symbolic link)"),
    ("journal-too-large", "the file is over 8,000,000 bytes"),
    ("journal-not-json", "not valid JSON"),
    ("hidden-move", "not a plain file name"),
])
def test_a_tampered_journal_is_one_error_and_nothing_changes(tmp_path, monkeypatch, tamper, says):
    out = tmp_path / "out"
    _crashed(out, monkeypatch)
    journal = _journal(out)
    staging = out / journal["staging"]
    if tamper == "digest":
        journal["version"] = "0"
        _rewrite_journal(out, journal, digest=False)
    elif tamper == "extra-staged-file":
        (staging / "d.md").write_bytes(b"x")
    elif tamper == "staged-file-changed":
        (staging / "b.md").write_bytes(b"swapped")
    elif tamper == "staged-link":
        (staging / "e.md").symlink_to(tmp_path)
    elif tamper == "manifest-changed":
        (out / MANIFEST_NAME).write_bytes(manifest_bytes({}))
    elif tamper == "journal-is-a-link":
        (tmp_path / "j.json").write_bytes((out / JOURNAL_NAME).read_bytes())
        (out / JOURNAL_NAME).unlink()
        (out / JOURNAL_NAME).symlink_to(tmp_path / "j.json")
    elif tamper == "journal-too-large":
        (out / JOURNAL_NAME).write_bytes(b" " * 8_000_001)
    elif tamper == "journal-not-json":
        (out / JOURNAL_NAME).write_bytes(b"{")
    elif tamper == "hidden-move":
        journal["moves"] = [".trainbudget.lock"]
        _rewrite_journal(out, journal)
    before = _state(out)
    import budget.cli.output as output
    with pytest.raises(output.OutputError) as err:
        recover(out)
    assert says in err.value.render(), err.value.render()
    assert _state(out) == before


def test_a_dangling_lock_link_is_not_followed(tmp_path, capsys):
    """A dangling .trainbudget.lock link made the run create a file where it pointed."""
    out, target = tmp_path / "out", tmp_path / "elsewhere" / "created"
    out.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (out / LOCK_NAME).symlink_to(target)
    code, stdout, err = _run(capsys, SEED_H100, "-o", out)
    assert code == 2 and stdout == ""
    assert err == (f"error: {out / LOCK_NAME}: is a symbolic link, where trainbudget keeps a file of its own\n"
                   f"  fix: delete it ({out / LOCK_NAME}), then run again\n")
    assert not target.exists() and sorted(p.name for p in out.iterdir()) == [LOCK_NAME]


@pytest.mark.parametrize("name", [LOCK_NAME, MANIFEST_NAME])
def test_a_fifo_or_folder_in_place_of_the_folders_own_files_is_refused(tmp_path, capsys, name):
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / name)
    signal.alarm(60)        # opening or reading a FIFO would wait for a writer
    try:
        code, _, err = _run(capsys, SEED_H100, "-o", out)
    finally:
        signal.alarm(0)
    assert code == 2 and err.startswith(f"error: {out / name}: ") and "named pipe" in err
    assert sorted(p.name for p in out.iterdir()) == sorted({name, LOCK_NAME})


def test_a_link_left_at_a_temp_name_is_not_written_through(tmp_path):
    out = tmp_path / "out"
    write_outputs(out, A)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep", encoding="utf-8")
    (out / (MANIFEST_NAME + ".tmp")).symlink_to(victim)
    write_outputs(out, B)
    assert victim.read_text(encoding="utf-8") == "keep"
    _assert_matches_manifest(out, ["a.md", "b.md", "c.md"])


def test_a_fifo_in_place_of_an_output_is_refused_without_hanging(tmp_path):
    import budget.cli.output as output
    out = tmp_path / "out"
    write_outputs(out, A)
    (out / "b.md").unlink()
    os.mkfifo(out / "b.md")
    signal.alarm(60)
    try:
        with pytest.raises(output.OutputError) as err:
            write_outputs(out, B)
        assert "b.md: changed since trainbudget wrote it" in err.value.render()
        write_outputs(out, B, force=True)
    finally:
        signal.alarm(0)
    assert (out / "b.md").read_bytes() == b"new b.md"


@pytest.mark.parametrize("name", [".hidden.yaml", "..yaml"])
def test_a_scenario_named_like_a_hidden_file_is_refused(tmp_path, capsys, name):
    path = tmp_path / name
    path.write_text(SEED_H100.read_text(encoding="utf-8"), encoding="utf-8")
    code, stdout, err = _run(capsys, path, "-o", tmp_path / "out")
    assert code == 2 and stdout == ""
    assert err == (f"error: {path}: the file name starts with '.', so the outputs named after it would be "
                   "hidden files\n  fix: rename the file: give it a name that does not start with '.'\n")
    assert not (tmp_path / "out").exists()
