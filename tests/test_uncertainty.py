"""The range learnt from the planner's own errors (issue 25, item 4): catalogs/model_error.yaml is
what budget/plan/uncertainty.py computes from the published rows, the calibration test is nested
(the spread applied to a source group is learnt without that group), and the README states the
figures the test computes.

What holds with the current step-time model is asserted; the criteria it does not meet yet are
`xfail(strict=True)` expectations, marked EXPECTATION below: they turn into failures the day the
refit (issue 25, items 1-3) meets them, so whoever refits removes the mark and updates the README."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import yaml

from budget.inputs.catalog import data_dir
from budget.plan import uncertainty as U

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def rows(catalog):
    return U.fit_rows(catalog)


@pytest.fixture(scope="module")
def fits(rows):
    return U._Fits(rows)


@pytest.fixture(scope="module")
def scored(rows, fits):
    return U.nested(rows, fits)


@pytest.fixture(scope="module")
def figures(scored):
    return U.score(scored)


@pytest.mark.slow
def test_nvidia_tables_are_one_source_group(rows):
    groups = {r.source_id: r.group for r in rows}
    assert len({groups[s] for s in ("nvidia_dgxc_benchmarking", "narayanan2021_sc21", "korthikanti2022")}) == 1
    assert groups["llmfoundry_mpt_benchmarks"] != groups["nvidia_dgxc_benchmarking"]


@pytest.mark.slow
def test_the_catalog_file_is_the_computed_one(rows, fits):
    """catalogs/model_error.yaml is `python -m budget.plan.uncertainty --write`'s output (its date aside)."""
    stored = yaml.safe_load((data_dir("catalogs") / U.FILE).read_text(encoding="utf-8"))
    computed = U.document(rows, __import__("datetime").date.fromisoformat(stored["as_of"]), fits)
    assert stored == computed


@pytest.mark.slow
def test_spread_applied_to_a_group_is_learnt_without_it(rows, fits, scored):
    """Nested: changing every measurement of one group moves its rows' errors, never the spread
    applied to them (and the spread is the other groups' held-out errors with the group left out
    of every fit)."""
    group = next(r.group for r in rows if r.source_id == "llmfoundry_mpt_benchmarks")
    mine = [s for s in scored if s.group == group]
    inner = [(r, e) for done in U.held_out(rows, fits, without=frozenset({group})).values() for r, e, _ in done]
    low, median, high = U.quantiles(inner, (0.1, 0.5, 0.9))
    assert mine and {(s.low, s.median, s.high) for s in mine} == {(low, median, high)}
    slower = [dataclasses.replace(r, tokens_per_gpu_s=r.tokens_per_gpu_s / 2) if r.group == group else r for r in rows]
    again = U.nested_group(slower, group)
    assert [(s.low, s.median, s.high) for s in again] == [(s.low, s.median, s.high) for s in mine]
    assert all(b.error > a.error for a, b in zip(mine, again))


@pytest.mark.slow
def test_each_source_group_weighs_the_same_in_the_spread(rows, fits):
    """NVIDIA's many near-identical tuned rows count as one group: repeating one group's rows ten
    times leaves the pooled spread where it was."""
    done = U.held_out(rows, fits)
    pairs = [(r, e) for scored in done.values() for r, e, _ in scored]
    group = next(iter(done))
    tenfold = pairs + [(r, e) for r, e in pairs if r.group == group] * 9
    assert U.quantiles(tenfold, (0.1, 0.5, 0.9)) == pytest.approx(U.quantiles(pairs, (0.1, 0.5, 0.9)))


@pytest.mark.slow
def test_a_stack_with_few_held_out_rows_uses_the_pooled_spread(rows, fits, catalog):
    """Per stack where rows allow (at least U.MIN_STACK_ROWS held-out rows from two groups), the pooled
    spread otherwise; a scenario stating a stack the catalog has a spread for gets that spread."""
    by_stack = U.held_out_by_stack(rows, fits)
    assert all(len(v) >= U.MIN_STACK_ROWS and len({r.group for r, _ in v}) >= 2 for v in by_stack.values())
    assert set(catalog.model_error.by_stack) == set(by_stack)
    from budget.inputs.options import parse_scenario
    from budget.plan.plan import build_plan
    from support import SCENARIOS, raw, with_changes
    data = with_changes(raw(SCENARIOS / "llama3-70b-h100-deadline.yaml"), {"efficiency.stack": "deepspeed"})
    pooled = catalog.model_error.fitted
    plain = build_plan(parse_scenario(data, "s.yaml", catalog), catalog, "s")
    assert plain.values["unc_model_error_low"] == pooled.low.value
    own = dataclasses.replace(catalog, model_error=catalog.model_error.model_copy(
        update={"by_stack": {"deepspeed": pooled.model_copy(update={"low": pooled.low.model_copy(update={"value": 0.5})})}}))
    typed = build_plan(parse_scenario(data, "s.yaml", own), own, "s")
    assert typed.values["unc_model_error_low"] == 0.5


@pytest.mark.slow
def test_lower_tail_misses_ten_percent_of_held_out_rows(figures):
    assert U.TAIL_MISS[0] <= figures.lower_miss <= U.TAIL_MISS[1]


@pytest.mark.slow
def test_upper_tail_misses_ten_percent_of_held_out_rows(figures):
    assert U.TAIL_MISS[0] <= figures.upper_miss <= U.TAIL_MISS[1]


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="EXPECTATION (issue 25 item 4), not met by the current step-time model: "
                   "held out by source group, each weighing the same, the fitted model's errors spread "
                   "wider (P90/P10 2.27x) than a constant MFU's (1.94x), though both its tails hold (9.3%, 11.1%) "
                   "and its P50 is nearer (18.3% against 26.6% median error)")
def test_range_is_narrower_than_the_constant_mfu_rules_interval(figures):
    assert figures.median_ratio < figures.rule_interval


@pytest.mark.slow
def test_p50_beats_the_constant_mfu_rule_held_out(figures):
    """Done when: the P50 beats 6·N·D ÷ (peak × the training folds' median MFU) in median error and
    in the share within ±20% (and a constant 0.30 MFU, reported beside)."""
    assert figures.p50_median_error < figures.rule_median_error
    assert figures.p50_within > figures.rule_within
    assert figures.p50_median_error < figures.rule_030_median_error and figures.p50_within > figures.rule_030_within


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _words(pattern: str) -> str:
    """A pattern whose spaces match any run of white space (the README wraps its lines)."""
    return pattern.replace(" ", r"\s+")


@pytest.mark.slow
def test_readme_states_the_computed_figures(figures):
    f = figures
    stated = re.search(_words(r"P10 misses ([\d.]+)% and the P90 ([\d.]+)% of (\d+) held-out rows of (\d+) source "
                       r"groups; their median P90/P10 is ([\d.]+)× against ([\d.]+)× for the constant-MFU rule"),
                       README)
    assert stated, "README states the pooled calibration figures"
    assert stated.groups() == (f"{100 * f.lower_miss:.1f}", f"{100 * f.upper_miss:.1f}", str(f.rows), str(f.groups),
                               f"{f.median_ratio:.2f}", f"{f.rule_interval:.2f}")
    p50 = re.search(_words(r"P50 median error ([\d.]+)%, (\d+)% within ±20%; constant-MFU rule ([\d.]+)%, (\d+)%; "
                    r"0\.30 MFU ([\d.]+)%, (\d+)%"), README)
    assert p50 and p50.groups() == (
        f"{100 * f.p50_median_error:.1f}", _pct(f.p50_within)[:-1], f"{100 * f.rule_median_error:.1f}",
        _pct(f.rule_within)[:-1], f"{100 * f.rule_030_median_error:.1f}", _pct(f.rule_030_within)[:-1])
    for group, c in f.per_group.items():
        line = re.search(rf"\| `{group}` \| (\d+) \| (\d+)% \| (\d+)% \| ([\d.]+)× \| ([\d.]+)% \| ([\d.]+)% \|", README)
        assert line, group
        assert line.groups() == (str(c.rows), _pct(c.lower_miss)[:-1], _pct(c.upper_miss)[:-1],
                                 f"{c.median_ratio:.2f}", f"{100 * c.p50_median_error:.1f}",
                                 f"{100 * c.rule_median_error:.1f}")
