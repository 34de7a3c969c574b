"""The import fuzzer (issue 30): seeded mutations of generated workbooks, each imported by a worker
subprocess under an address-space limit and a per-case alarm (tests/import_fuzz.py).

Every case must end with exit status 0 (a scenario written that YAML reads, only warnings on
stderr) or 2 (exactly one `error:` / `  fix:` pair, no raw control character, nothing written),
within the harness's bound per case (far above the tool's own 10 s) and the worker's memory.

A seeded subset of FAST_CASES runs in every test run; the full FULL_CASES run when the
environment has TRAINBUDGET_FUZZ=full (CI's .ci/run sets it), or with `-m fuzz` and that variable.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from budget.sheets.book import write_workbook
from import_fuzz import CASE_ALARM_S
from support import SCENARIOS, plan_of, raw, with_changes

HERE = Path(__file__).resolve().parent
FAST_CASES = 80
FULL_CASES = 2000
SECONDS_PER_CASE = 30          # the harness's bound per case (the tool stops itself at 10 s)
PEAK_MEMORY_MB = 600           # the worker's peak RSS over all its cases (the tool's budget ~500 MB)
BASES = [("gpt3-175b-h100", "en"), ("gpt3-175b-h100", "zh"), ("llama3-70b-h100-deadline", "en")]


@pytest.fixture(scope="module")
def books(tmp_path_factory, catalog) -> list[Path]:
    folder = tmp_path_factory.mktemp("fuzz-books")
    paths = []
    for stem, lang in BASES:
        plan = plan_of(with_changes(raw(SCENARIOS / f"{stem}.yaml"), {"language": lang}), catalog, stem)
        path = folder / f"{stem}-{lang}.xlsx"
        path.write_bytes(write_workbook(plan).data)
        paths.append(path)
    return paths


def run_fuzzer(books: list[Path], seeds: list[int], folder: Path, workers: int = 1) -> list[dict]:
    """Each seed's case in a worker subprocess; the results, one dict a case."""
    jobs = []
    for w in range(workers):
        job = folder / f"job-{w}.json"
        cases = [(seed, seed % len(books)) for seed in seeds[w::workers]]
        job.write_text(json.dumps({"books": [str(b) for b in books], "folder": str(folder), "cases": cases}),
                       encoding="utf-8")
        jobs.append((job, len(cases)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent), str(HERE)])}
    procs = [(subprocess.Popen([sys.executable, str(HERE / "import_fuzz.py"), str(job)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env, cwd=folder), count)
             for job, count in jobs]
    results = []
    for proc, count in procs:
        try:
            out, err = proc.communicate(timeout=120 + count * CASE_ALARM_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        results.extend(json.loads(line) for line in out.splitlines() if line.startswith("{"))
        assert proc.returncode == 0, f"the worker died ({proc.returncode}): {err[-3000:]}"
    assert len(results) == len(seeds), "every case reported"
    return results


_RAW_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def check(results: list[dict]) -> Counter:
    stats: Counter = Counter()
    bad = []
    for r in results:
        why = None
        lines = r["err"].splitlines()
        if r["crash"]:
            why = r["crash"]
        elif r["code"] == 2:
            if r["written"] or r["out"]:
                why = "refused, yet wrote"
            elif len(lines) != 2 or not lines[0].startswith(("error: ", "错误：")) \
                    or not lines[1].startswith(("  fix: ", "  处理办法：")):
                why = f"not one error and its fix: {r['err']!r}"
        elif r["code"] == 0:
            if not r["written"] or not isinstance(yaml.safe_load(r["text"]), dict):
                why = "exit 0 without a scenario"
            elif any(not line.startswith(("warning: ", "警告：")) for line in lines):
                why = f"exit 0 with an error: {r['err']!r}"
        else:
            why = f"exit status {r['code']}"
        if why is None and _RAW_CONTROL.search(r["err"]):
            why = f"a raw control character on the terminal: {r['err']!r}"
        if why is None and r["seconds"] > SECONDS_PER_CASE:
            why = f"took {r['seconds']:.1f} s"
        if why:
            bad.append((r["seed"], r["base"], why))
        stats["accepted" if r["code"] == 0 else "refused"] += 1
    peak = max(r["max_rss_mb"] for r in results)
    assert not bad, f"{len(bad)} of {len(results)} cases failed; first: seed {bad[0][0]}, base {bad[0][1]}: {bad[0][2]}"
    assert peak < PEAK_MEMORY_MB, f"the worker peaked at {peak:.0f} MB"
    stats["slowest_ms"] = int(1000 * max(r["seconds"] for r in results))
    stats["peak_mb"] = int(peak)
    return stats


@pytest.mark.slow
def test_import_fuzzer_seeded_subset(books, tmp_path):
    stats = check(run_fuzzer(books, list(range(FAST_CASES)), tmp_path))
    print(f"import fuzzer: {dict(stats)}")
    assert stats["accepted"] >= 3 and stats["refused"] >= FAST_CASES // 2, stats


@pytest.mark.fuzz
def test_import_fuzzer_full(books, tmp_path):
    if os.environ.get("TRAINBUDGET_FUZZ") != "full":
        pytest.skip("the full import fuzzer runs with TRAINBUDGET_FUZZ=full (CI's .ci/run sets it)")
    stats = check(run_fuzzer(books, list(range(FAST_CASES, FAST_CASES + FULL_CASES)), tmp_path, workers=2))
    print(f"import fuzzer: {dict(stats)}")
    assert stats["accepted"] >= 50, stats


@pytest.mark.slow
def test_the_worker_reports_its_own_peak_memory_not_the_parents(books, tmp_path):
    """Linux carries a parent's high-water mark into ru_maxrss across fork and exec: a pytest process
    grown over a whole suite made every worker report 611 MB (CI failed on it). A parent holding 400 MB
    must not lift the worker's figure."""
    ballast = bytearray(400 << 20)
    ballast[::4096] = b"\x01" * len(range(0, len(ballast), 4096))     # touched, so it is resident
    results = run_fuzzer(books, [0, 1, 2], tmp_path)
    assert max(r["max_rss_mb"] for r in results) < 300
    del ballast
