"""budget/cache.py: what an earlier run parsed, kept for the next one, in a folder that stays small."""

from __future__ import annotations

import datetime as dt
import os
import tempfile

import pytest

from budget.core import cache


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """The cache's folder under a private temporary folder (not the machine's)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    path = cache._folder()
    assert path is not None and path.parent == tmp_path
    return path


def parser(value, calls: list):
    def parse():
        calls.append(1)
        return value
    return parse


def entries(folder):
    return sorted(p.name for p in folder.glob("*.marshal"))


def test_a_parse_is_kept_and_read_back_with_its_dates(folder):
    value = {"runs": [{"name": "a", "as_of": dt.date(2024, 7, 23), "gpus": 16384, "mfu": 0.41,
                       "note": None, "ok": True}]}
    calls: list = []
    assert cache.cached(b"raw bytes", "kind", parser(value, calls)) == value
    again = cache.cached(b"raw bytes", "kind", parser("never used", calls))
    assert again == value and type(again["runs"][0]["as_of"]) is dt.date
    assert calls == [1] and len(entries(folder)) == 1


def test_other_bytes_or_another_kind_of_parse_are_parsed_afresh(folder):
    calls: list = []
    cache.cached(b"one", "kind", parser([1], calls))
    assert cache.cached(b"two", "kind", parser([2], calls)) == [2]
    assert cache.cached(b"one", "other kind", parser([3], calls)) == [3]
    assert calls == [1, 1, 1] and len(entries(folder)) == 3


def test_data_a_yaml_load_cannot_give_is_parsed_every_time(folder):
    calls: list = []
    stamp = dt.datetime(2026, 1, 1, 12, 0)
    for _ in range(2):
        assert cache.cached(b"raw", "kind", parser({"at": stamp}, calls)) == {"at": stamp}
    assert calls == [1, 1] and entries(folder) == []


def test_a_damaged_entry_is_parsed_again_and_replaced(folder):
    calls: list = []
    cache.cached(b"raw", "kind", parser({"a": 1}, calls))
    (entry,) = folder.glob("*.marshal")
    entry.write_bytes(b"\x00not marshal")
    assert cache.cached(b"raw", "kind", parser({"a": 1}, calls)) == {"a": 1}
    assert cache.cached(b"raw", "kind", parser("never used", calls)) == {"a": 1}
    assert calls == [1, 1]


def test_a_folder_others_could_write_is_not_used(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    path = tmp_path / f"trainbudget-cache-{os.getuid()}"
    path.mkdir(mode=0o777)
    path.chmod(0o777)
    assert cache._folder() is None
    calls: list = []
    for _ in range(2):
        cache.cached(b"raw", "kind", parser([1], calls))
    assert calls == [1, 1] and list(path.iterdir()) == []


def test_the_folder_is_pruned_of_the_entries_used_longest_ago(folder, monkeypatch):
    """Over the cap, entries go oldest use first until half the cap is left; an entry read
    counts as used, and files that are not entries are left alone."""
    blob = "x" * 10_000               # ~10 KB an entry
    monkeypatch.setattr(cache, "_CAP_BYTES", 45_000)
    (folder / "notes.txt").write_text("not an entry")
    calls: list = []
    for n in range(4):                # 4 entries, ~40 KB: under the cap
        cache.cached(f"raw {n}".encode(), "kind", parser([n, blob], calls))
    made = {n: folder / cache.entry_name(f"raw {n}".encode(), "kind") for n in range(4)}
    for n, entry in made.items():     # written in this order, an hour apart
        os.utime(entry, ns=(n * 3600 * 10 ** 9, n * 3600 * 10 ** 9))
    assert cache.cached(b"raw 0", "kind", parser("never used", calls))[0] == 0  # read: now the newest
    assert len(calls) == 4
    cache.cached(b"raw 4", "kind", parser([4, blob], calls))   # ~50 KB: over the cap
    kept = {n for n, entry in made.items() if entry.exists()}
    assert kept == {0}                # down to half the cap: 1 and 2 and 3 went, the one read stayed
    assert len(entries(folder)) == 2 and (folder / "notes.txt").exists()
    assert cache.cached(b"raw 0", "kind", parser("never used", calls))[0] == 0
    assert cache.cached(b"raw 1", "kind", parser([1, blob], calls))[0] == 1    # parsed again
    assert len(calls) == 6
