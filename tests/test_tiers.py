"""The two test tiers (README, "Two commands"): a test that starts an office program must say so.

`pytest -m "not office"` runs on a machine with Python alone, so a test that starts LibreOffice,
Gnumeric or Chromium without @pytest.mark.office is a failure wherever it runs, the office
programs installed or not: the helpers and an audit hook on subprocesses stop it first.
"""

from __future__ import annotations

import subprocess

import pytest

import support

MESSAGE = "mark it @pytest.mark.office"


@pytest.mark.parametrize("start", [
    support.require_soffice,
    support.chromium,
    lambda: support.require_tool("/usr/bin/ssconvert", "Gnumeric (ssconvert)", "apt-get install -y gnumeric"),
    lambda: support.require_tool(None, "pdftoppm (poppler-utils)", "apt-get install -y poppler-utils"),
], ids=["soffice", "chromium", "ssconvert", "missing-pdftoppm"])
def test_an_unmarked_test_asking_for_an_office_program_fails(start):
    """Fails, not skips, even where the program is missing."""
    with pytest.raises(pytest.fail.Exception, match=MESSAGE):
        start()


@pytest.mark.parametrize("argv", [["soffice", "--version"], ["/usr/bin/chromium", "--version"],
                                  ["ssconvert", "--version"], ["pdftoppm", "-v"]])
def test_an_unmarked_test_cannot_start_one_as_a_subprocess(argv):
    """However it is started (budget.xlsx.recalc.recalculate, a test's own subprocess.run), before
    the program runs: the audit hook sees the command whether it exists or not."""
    with pytest.raises(pytest.fail.Exception, match=MESSAGE):
        subprocess.run(argv, capture_output=True, timeout=60)


def test_other_subprocesses_are_not_office_programs(tmp_path):
    assert subprocess.run(["true"]).returncode == 0


@pytest.fixture(scope="session")
def seen_by_a_session_fixture():
    """What a session fixture (the oracle's kind) sees when the test asking for it is set up."""
    return support.current_test()


def test_a_session_fixture_is_checked_against_the_test_that_asks_for_it(request, seen_by_a_session_fixture):
    assert seen_by_a_session_fixture == (request.node.nodeid, False)


@pytest.mark.office
def test_a_marked_test_is_recorded_as_office(request):
    """(In the office tier, though it starts nothing: the record it checks is the marker's.)"""
    assert support.current_test() == (request.node.nodeid, True)
    support.office_program("LibreOffice")      # no failure
