"""The days-against-GPUs curve (issue 27, item 2): its counts, its explained non-monotone points,
its marks (the plan, where adding GPUs stops paying, the deadline) in the workbook and the
reports for every bundled scenario, and `--curve` on the command line."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path

import openpyxl
import pytest

from budget.cli.app import main, parser
from budget.plan.curve import (DAYS, KNEE_MAX_COST_RISE, KNEE_MIN_DAYS_CUT, MAX_POINTS, CurvePoint, choose_counts,
                               knee_of)
from budget.plan.layout import Layout
from budget.plan.options import plan_file
from budget.render.report import render_html, render_markdown
from budget.sheets.book import write_workbook
from budget.sheets.curve import CURVE_SHEET

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
_PLANS: dict = {}


def _plan(path: Path, catalog):
    if path not in _PLANS:
        _PLANS[path] = plan_file(path, catalog)
    return _PLANS[path]


def test_the_counts_are_at_most_forty_and_include_the_plans():
    split = list(range(8, 200_000, 8))
    counts = choose_counts(split, 4096)
    assert 4096 in counts and len(counts) <= MAX_POINTS
    assert counts == sorted(counts)
    assert min(counts) <= 4096 // 8 and max(counts) >= 4096 * 8      # log-spaced out both sides
    assert choose_counts([], 512) == [512]


def _point(n: int, days: float, cost: float) -> CurvePoint:
    return CurvePoint(n, Layout(1, 1, 1, 0, "none", "no"), {DAYS: days, "total_cost": cost})


def test_adding_gpus_stops_paying_where_a_doubling_cuts_too_little_or_costs_too_much():
    # halving days at the same cost pays; from 256, a doubling cuts the days by 10% only
    points = [_point(64, 400, 100), _point(128, 200, 100), _point(256, 100, 100), _point(512, 90, 100)]
    knee, reason = knee_of(points)
    assert points[knee].gpu_count == 256 and reason.figures["doubled"] == 512
    # or raises the total by more than the rule allows
    points = [_point(64, 400, 100), _point(128, 200, 100 * (1 + KNEE_MAX_COST_RISE) + 1)]
    assert knee_of(points)[0] == 0
    # every doubling pays: no knee, and the sentence says so with the rule's figures
    points = [_point(64, 400, 100), _point(128, 200 * (1 - KNEE_MIN_DAYS_CUT) / 0.5 - 1, 100)]
    knee, reason = knee_of(points)
    assert knee is None and reason.key == "plan.curve.knee.none"


@pytest.mark.slow       # a workbook written and read back per scenario: seconds each
@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_every_bundled_scenario_has_the_curve_in_its_workbook_and_reports(path, catalog):
    plan = _plan(path, catalog)
    curve = plan.curve
    assert curve is not None and curve.varies is not None
    md, html = render_markdown(plan), render_html(plan)
    assert "## Training days against GPUs" in md or "## 训练天数与 GPU 数量" in md
    assert curve.varies.render(plan.lang) in md
    book = openpyxl.load_workbook(io.BytesIO(write_workbook(plan).data))
    ws = book[CURVE_SHEET]
    if plan.scenario.stages:        # a run in stages: the sentence saying why, no points
        assert not curve.points and curve.varies.key == "plan.curve.varies.stages"
        return
    counts = [p.gpu_count for p in curve.points]
    assert len(counts) <= MAX_POINTS and counts == sorted(set(counts))
    assert plan.gpu_count in counts and [p.gpu_count for p in curve.points if p.is_plan] == [plan.gpu_count]
    fastest = None
    for p in curve.points:           # days never rise without a reason given
        if fastest is not None and p.days > fastest * (1 + 1e-9):
            assert p.note is not None, p.gpu_count
        fastest = p.days if fastest is None else min(fastest, p.days)
    # the plan's own point is the plan
    mine = curve.points[curve.plan_index]
    assert mine.days == pytest.approx(plan.values[DAYS]) and mine.cost == pytest.approx(plan.total_cost)
    # the marks: in the sheet's notes, in the reports, on the charts
    notes = [ws.cell(r, c).value for r in range(1, ws.max_row + 1) for c in range(1, 20)]
    assert any(isinstance(v, str) and v.startswith(book_words(plan, "workbook.curve.marks.plan")) for v in notes)
    assert curve.knee_reason.render(plan.lang) in html.replace("&#39;", "'")
    if curve.knee is not None:
        assert any(isinstance(v, str) and book_words(plan, "workbook.curve.marks.knee") in v for v in notes)
    assert len(ws._charts) == 2
    titles = [s.tx.strRef.f if s.tx.strRef else s.tx.v for s in ws._charts[0].series]
    assert len(titles) == 1 + 1 + (curve.knee is not None) + (curve.deadline_days is not None)
    for p in curve.points:
        assert f"| {p.gpu_count:,} |" in md or f"| **{p.gpu_count:,}** |" in md


def book_words(plan, key: str) -> str:
    from budget.core.i18n import text
    return text(key, plan.lang)


def test_the_deadline_scenario_marks_the_deadline_and_explains_its_slower_counts(catalog):
    plan = _plan(ROOT / "scenarios" / "llama3-70b-h100-deadline.yaml", catalog)
    curve = plan.curve
    assert curve.deadline_days == plan.scenario.hardware.deadline_days
    md = render_markdown(plan)
    assert "hardware.deadline\\_days" in md and "misses the deadline" in md
    # 2,560 GPUs (PP 5: the batch does not split over DP 640) trains slower than 2,048
    notes = {p.gpu_count: p.note for p in curve.points if p.note is not None}
    assert notes and all(n.key.startswith("plan.curve.notes.") for n in notes.values())
    assert any(n.key == "plan.curve.notes.layout_change" for n in notes.values())


def test_the_command_line_prints_the_curve_on_request(tmp_path):
    scenario = ROOT / "scenarios" / "llama3-70b-h100-deadline.yaml"
    asked = io.StringIO()
    with redirect_stdout(asked):
        assert main([str(scenario), "-o", str(tmp_path), "--curve"]) == 0
    out = asked.getvalue()
    assert "curve: Adding GPUs stops paying" in out
    assert "Layout (TP × PP × DP)" in out and "the plan" in out
    assert "   4,096  " in out
    assert parser().parse_args([]).curve is False          # only on request
