"""Deadlines as dates, and the GPU count that truly meets a deadline (issue 27 item 1).

"405B by June 30" written as a date; the search held to a brute-force scan over whole-node counts
on a case where days do not fall as GPUs rise; the refusal and the count's explanation never state
a figure that contradicts their verdict."""

from __future__ import annotations

import datetime as dt
import io
import math
import re
from statistics import NormalDist

import openpyxl
import pytest

from budget.core.dates import excel_serial, from_serial
from budget.core.errors import ScenarioError
from budget.plan.counts import DATE_FIGURES, Deadline, smallest_count_for_deadline
from budget.plan.layout import NoLayoutFits, search
from budget.plan.sensitivity import cases, range_figures
from budget.plan.sizing import deadline_of, deadline_start
from support import SCENARIOS, plan_of, raw, with_changes

START, JUNE_30 = "2027-01-04", "2027-06-30"


def _llama405b(**changes) -> dict:
    """Llama 3.1 405B on H100 over 15T tokens as Meta's published run sets it (storage, stack,
    memory), with the GPU count, the layout and the utilisation left to the planner."""
    data = raw(SCENARIOS / "llama3.1-405b-h100.yaml")
    data.pop("stages")
    data["parallelism"], data["sources"] = {}, {}
    return with_changes(data, {"hardware.gpu_count": None, "hardware.mfu": None, "data.train_tokens": "15T",
                               "schedule.start_date": START, **changes})


def _llama405b_plain(**changes) -> dict:
    """Llama 3 405B × 15T on H100 from the bundled deadline scenario (the issue's 100-day case)."""
    return with_changes(raw(SCENARIOS / "llama3-70b-h100-deadline.yaml"), {"model.preset": "llama3-405b", **changes})


def _day(serial: float) -> dt.date:
    return from_serial(serial)


@pytest.fixture(scope="module")
def by_june_30(catalog):
    return plan_of(_llama405b(**{"schedule.deadline": JUNE_30}), catalog)


def test_405b_by_june_30_as_a_date_ends_training_by_it_phases_before_counted(by_june_30, catalog):
    plan, v = by_june_30, by_june_30.values
    deadline = dt.date(2027, 6, 30)
    assert plan.layout.mode == "deadline"
    assert v["deadline_date"] == excel_serial(deadline)
    assert v["check_meets_deadline_date"] == 0 and not plan.failing_checks
    # met at the approval percentile of the training days (P80), the P50 date earlier
    assert v["approval_percentile"] == 80
    assert v["train_days_at_approval"] > v["train_days_at_median"] > 0
    assert _day(v["deadline_end_p50"]) <= _day(v["deadline_end_at_approval"]) <= deadline
    assert v["deadline_end"] == v["training_end"]
    # the phases before training count: data preparation, validation and scaling runs (8 weeks),
    # then queue, setup and transfer before the first step
    assert v["training_start"] == excel_serial(dt.date(2027, 1, 4)) + 8 * 7
    first_step = v["training_start"] + v["queue_days"] + v["setup_days"] + v["transfer_days"]
    assert v["deadline_end_at_approval"] >= first_step + v["train_days_at_approval"]
    assert v["training_end"] == pytest.approx(first_step + v["stretched_training_days"] + v["rollback_days"]
                                              + v["card_allowance_days"])
    # the count is the smallest: the next smaller count that splits the batch misses it
    source = plan.inputs["gpu_count"].source
    assert "2027-06-30" in source and f"{_day(v['deadline_end_at_approval'])} at P80" in source
    assert f"{_day(v['deadline_end_p50'])} at P50" in source
    smaller = re.search(r"the next smaller count that splits the batch, ([\d,]+) GPUs", source)
    below = plan_of(_llama405b(**{"schedule.deadline": JUNE_30,
                                  "hardware.gpu_count": int(smaller.group(1).replace(",", ""))}), catalog)
    assert below.values["check_meets_deadline_date"] == 1
    assert below.gpu_count < plan.gpu_count


def test_the_training_days_at_the_approval_percentile_are_the_sensitivity_sheets(by_june_30):
    """The model's P50 and approval-percentile training days are the Sensitivity sheet's
    lognormal range of the training days (its P10/P50/P90) read at those percentiles."""
    v = by_june_30.values
    rng = range_figures(by_june_30, cases(by_june_30))
    assert v["train_days_at_median"] == pytest.approx(rng["train_days_p50"], rel=1e-9)
    z = NormalDist().inv_cdf(v["approval_percentile"] / 100) / NormalDist().inv_cdf(0.9)
    expected = rng["train_days_p50"] * (rng["train_days_p90"] / rng["train_days_p50"]) ** z
    assert v["train_days_at_approval"] == pytest.approx(expected, rel=1e-9)


def test_a_project_end_deadline_counts_evaluation_and_deployment(catalog):
    plan = plan_of(_llama405b(**{"schedule.deadline": "2027-09-30", "schedule.deadline_applies_to": "project_end"}),
                   catalog)
    v = plan.values
    assert v["deadline_end"] == v["project_end"] > v["training_end"]
    assert _day(v["deadline_end_at_approval"]) <= dt.date(2027, 9, 30)
    assert v["check_meets_deadline_date"] == 0
    training = plan_of(_llama405b(**{"schedule.deadline": "2027-09-30"}), catalog)
    assert training.gpu_count <= plan.gpu_count


def test_a_given_count_is_checked_against_the_date(catalog):
    late = plan_of(_llama405b(**{"schedule.deadline": JUNE_30, "hardware.gpu_count": 8192}), catalog)
    v = late.values
    assert v["check_meets_deadline_date"] == 1 and "check_meets_deadline_date" in late.failing_checks
    days_late = v["deadline_end_at_approval"] - (v["deadline_date"] + 1)
    detail = late.model.items["check_meets_deadline_date"].sentence(v)
    assert f"At P80 of the training days the end comes {math.ceil(days_late * 10) / 10:g}" in detail.replace(".0 ", " ")


def test_both_deadlines_are_refused_with_one_message(catalog):
    with pytest.raises(ScenarioError) as err:
        plan_of(_llama405b(**{"schedule.deadline": JUNE_30, "hardware.deadline_days": 100}), catalog)
    text = str(err.value)
    assert "two deadlines: hardware.deadline_days (100 training days) and schedule.deadline (2027-06-30)" in text
    assert "keep one" in text


def test_the_workbook_holds_the_date_as_an_input_and_the_check_live(by_june_30):
    from budget.sheets.book import write_workbook
    result = write_workbook(by_june_30)
    wb = openpyxl.load_workbook(io.BytesIO(result.data))
    sheet, cell = result.names["deadline_date"].split("!")
    assert sheet == "Inputs"
    value = wb["Inputs"][cell.replace("$", "")].value
    assert value in (dt.datetime(2027, 6, 30), excel_serial(dt.date(2027, 6, 30)))
    rules = [dv for dv in wb["Inputs"].data_validations.dataValidation if cell.replace("$", "") in str(dv.sqref)]
    assert rules and rules[0].type == "date"
    sheet, cell = result.names["check_meets_deadline_date"].split("!")
    assert sheet == "Checks"
    formula = wb["Checks"][cell.replace("$", "")].value
    assert formula.startswith("=") and "deadline_end_at_approval" in formula and "deadline_date" in formula
    timeline = wb["Timeline"][result.names["deadline_end_at_approval"].split("!")[1].replace("$", "")].value
    assert "train_days_at_approval" in timeline


def test_the_summary_page_shows_the_deadline_and_the_end_it_is_judged_by(by_june_30):
    """Given "405B by June 30", the Summary's printed answer shows the deadline date and the end
    of training at the approval percentile (the check's figure), and the sign-off follows them."""
    from budget.sheets.book import write_workbook
    result = write_workbook(by_june_30)
    ws = openpyxl.load_workbook(io.BytesIO(result.data))["Summary"]
    labels = {ws.cell(r, 1).value: r for r in range(1, ws.max_row + 1) if isinstance(ws.cell(r, 1).value, str)}
    row = labels["Deadline date"]
    assert ws.cell(row, 2).value == "=deadline_date" and row < labels["Approved by"]
    assert result.expected[f"Summary!B{row}"] == excel_serial(dt.date(2027, 6, 30))
    assert ws.cell(row + 1, 2).value == "=deadline_end_at_approval"
    assert result.expected[f"Summary!A{row + 1}"] == "Training ends, at P80 of the training days"
    assert result.expected[f"Summary!B{row + 1}"] == by_june_30.values["deadline_end_at_approval"]
    assert result.expected[f"Summary!B{row + 1}"] < excel_serial(dt.date(2027, 7, 1))    # met


# --- the search against a brute-force scan ------------------------------------------------------

def _setup(data: dict, catalog):
    """The search's evaluator and space for a scenario, as build_plan sets them up."""
    from budget.inputs.bind import bind
    from budget.inputs.options import parse_scenario
    from budget.model.model import build_model
    from budget.plan import plan as P
    from budget.plan.reference_runs import run_inputs
    from budget.plan.sizing import search_setup
    s = parse_scenario(data, "t.yaml", catalog)
    cat = catalog.with_accelerators(s.catalog.accelerators)
    inputs = bind(build_model(s.language), s, cat, "t.yaml")
    inputs.update(run_inputs(cat, s.language))
    tables = {P.ACCELERATOR_TABLE: P.accelerator_table(cat, s), P.ARCHITECTURE_TABLE: P.architecture_table(cat, s.language),
              P.ACTIVATION_TABLE: P.activation_table(s.language), P.FX_TABLE: P.TableData(*P.fx_rows(s, cat))}
    lookups = {name: t.lookup() for name, t in tables.items()}
    inputs.update(P._structure(inputs, s.language, weeks=0))
    _model, _pins, _base, evaluate, space = search_setup(s, cat, inputs, lookups)
    return s, evaluate, space


def _brute_force(evaluate, space, deadline: Deadline, largest: int) -> dict[int, dict]:
    """The best layout's values at every whole-node count up to `largest` where a layout fits."""
    out = {}
    for n in range(space.gpus_per_node, largest + 1, space.gpus_per_node):
        try:
            best = search(evaluate, space, n, keep=1).best
        except NoLayoutFits:
            continue
        out[n] = (best if deadline.date is None else evaluate.more(best, n, DATE_FIGURES)).values
    return out


@pytest.fixture(scope="module")
def plain_405b(catalog):
    """Llama 3 405B × 15T on H100: the search's setup and every whole-node count to 40,960."""
    s, evaluate, space = _setup(_llama405b_plain(), catalog)
    return evaluate, space, _brute_force(evaluate, space, Deadline(days=1.0), 40960)


def test_days_do_not_fall_as_gpus_rise_in_the_405b_case(plain_405b):
    _, space, scan = plain_405b
    days = {n: v["stretched_training_days"] for n, v in scan.items()}
    assert days[12288] > days[8192]            # more GPUs, slower
    assert 10240 not in days                   # does not split the batch
    assert days[16384] < days[16128]


@pytest.mark.parametrize("deadline_days", [100, 110, 120, 150, 200, 250])
def test_the_search_finds_the_smallest_whole_node_count_a_brute_force_scan_finds(plain_405b, deadline_days):
    evaluate, space, scan = plain_405b
    deadline = Deadline(days=float(deadline_days))
    meeting = sorted(n for n, v in scan.items() if deadline.meets(v))
    start = deadline_start(evaluate.base, deadline)
    assert all(n >= start for n in meeting)     # the lower bound is one
    try:
        result, _ = smallest_count_for_deadline(evaluate, space, deadline, start)
    except NoLayoutFits as err:
        assert not meeting
        # the scan went past 40,960 for the refusal: nothing meets there either
        assert err.message.key == "layout.none_fits.deadline_fastest"
        fastest = min((v["stretched_training_days"], n) for n, v in scan.items())
        assert err.message.figures["gpus"] == fastest[1]
        assert err.message.figures["days"] > deadline_days
        return
    assert meeting and result.gpu_count == meeting[0]


def test_the_100_day_case_and_the_110_day_case(catalog):
    """The issue's case: at 100 days no count meets (the fastest, 32,768 GPUs, takes 100.04 days
    with failures in today's model) and the refusal says so without contradicting itself; at 110
    days the search finds 16,384 (12,288 trains slower than 8,192; 10,240 does not split)."""
    with pytest.raises(ScenarioError) as err:
        plan_of(_llama405b_plain(**{"hardware.deadline_days": 100}), catalog)
    _consistent_refusal(str(err.value), days=100)
    plan = plan_of(_llama405b_plain(**{"hardware.deadline_days": 110}), catalog)
    assert plan.gpu_count == 16384
    assert plan.values["stretched_training_days"] <= 110
    _consistent_source(plan.inputs["gpu_count"].source, days=110)


def test_the_date_search_matches_a_brute_force_scan(catalog):
    data = _llama405b(**{"schedule.deadline": JUNE_30})
    s, evaluate, space = _setup(data, catalog)
    deadline = deadline_of(s, evaluate.base)
    scan = _brute_force(evaluate, space, deadline, 24576)
    meeting = sorted(n for n, v in scan.items() if deadline.meets(v))
    result, _ = smallest_count_for_deadline(evaluate, space, deadline, deadline_start(evaluate.base, deadline))
    assert meeting and result.gpu_count == meeting[0]
    # not monotone: some count above a smaller one ends later
    ends = [scan[n]["deadline_end_at_approval"] for n in sorted(scan)]
    assert any(b > a for a, b in zip(ends, ends[1:]))


# --- no message contradicts itself ---------------------------------------------------------------

_NUMBER = r"([\d,]+(?:\.\d+)?)"


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def _consistent_refusal(text: str, days: float | None = None, date: str | None = None):
    if days is not None:
        m = re.search(rf"no GPU count up to [\d,]+ trains within {days:g} days: the fastest of the [\d,]+ counts "
                      rf"that split the batch and fit, {_NUMBER} GPUs, takes {_NUMBER} days", text)
        assert m, text
        assert _num(m.group(2)) > days                       # the fastest misses it
        fix = re.search(rf"set hardware.deadline_days to {_NUMBER} or more \(at {_NUMBER} GPUs\)", text)
        assert fix and _num(fix.group(1)) == _num(m.group(2)) and fix.group(2) == m.group(1)
    else:
        m = re.search(rf"ends by {date} at P80 of the training days: the earliest of the [\d,]+ counts that split "
                      rf"the batch and fit, {_NUMBER} GPUs, ends on (\d{{4}}-\d\d-\d\d)", text)
        assert m, text
        assert m.group(2) > date
        assert f"set schedule.deadline to {m.group(2)} or later (at {m.group(1)} GPUs)" in text


def _consistent_source(text: str, days: float | None = None, date: str | None = None):
    """The count's source: its own figure meets the deadline, every smaller count named misses
    it, and a 'slower' pair is slower."""
    if days is not None:
        own = re.search(rf"meets it \({_NUMBER} days with failures\)", text)
        assert own and _num(own.group(1)) <= days, text
        for miss in re.finditer(rf"would miss it \({_NUMBER} days with failures\)", text):
            assert _num(miss.group(1)) > days, text
        for m in re.finditer(rf"{_NUMBER} GPUs is slower than {_NUMBER} \({_NUMBER} days with failures against "
                             rf"{_NUMBER} days with failures\)", text):
            assert _num(m.group(1)) > _num(m.group(2)) and _num(m.group(3)) > _num(m.group(4)), text
    else:
        own = re.search(r"ends by it \((\d{4}-\d\d-\d\d) at P80; (\d{4}-\d\d-\d\d) at P50\)", text)
        assert own and own.group(2) <= own.group(1) <= date, text
        for miss in re.finditer(r"would miss it \((\d{4}-\d\d-\d\d) at P80\)", text):
            assert miss.group(1) > date, text
        for m in re.finditer(rf"{_NUMBER} GPUs is slower than {_NUMBER} \((\d{{4}}-\d\d-\d\d) at P80 against "
                             r"(\d{4}-\d\d-\d\d) at P80\)", text):
            assert _num(m.group(1)) > _num(m.group(2)) and m.group(3) >= m.group(4), text


@pytest.mark.parametrize("days", [60, 110, 150, 200, 99.97])
def test_a_deadline_in_days_explains_its_count_consistently(catalog, days):
    try:
        plan = plan_of(_llama405b_plain(**{"hardware.deadline_days": days}), catalog)
    except ScenarioError as err:
        _consistent_refusal(str(err), days=days)
        return
    assert plan.values["stretched_training_days"] <= days
    _consistent_source(plan.inputs["gpu_count"].source, days=days)


@pytest.mark.parametrize("date", ["2027-05-31", JUNE_30, "2027-08-31", "2027-03-01"])
def test_a_deadline_date_explains_its_count_consistently(catalog, date):
    try:
        plan = plan_of(_llama405b(**{"schedule.deadline": date}), catalog)
    except ScenarioError as err:
        _consistent_refusal(str(err), date=date)
        return
    assert plan.values["check_meets_deadline_date"] == 0
    _consistent_source(plan.inputs["gpu_count"].source, date=date)


def test_a_seed_deadline_explains_its_count_consistently(catalog):
    from support import SEED_H100
    data = with_changes(raw(SEED_H100), {"parallelism": {}, "sources": {}, "hardware.effective_tflops": None,
                                         "hardware.peak_tflops": None, "memory.activation_gb_per_microbatch": None,
                                         "hardware.gpu_count": None, "hardware.deadline_days": 100})
    plan = plan_of(data, catalog)
    _consistent_source(plan.inputs["gpu_count"].source, days=100)


def test_a_date_deadline_round_trips_through_the_workbook(catalog, tmp_path):
    import yaml
    from budget.inputs.importer import import_workbook
    from budget.sheets.book import write_workbook
    plan = plan_of(_llama405b(**{"schedule.deadline": "2027-08-31", "schedule.deadline_applies_to": "project_end"}),
                   catalog)
    path = tmp_path / "book.xlsx"
    path.write_bytes(write_workbook(plan).data)
    data = yaml.safe_load(import_workbook(path, catalog).text)
    assert data["schedule"]["deadline"] == dt.date(2027, 8, 31)
    assert data["schedule"]["deadline_applies_to"] == "project_end"
    again = plan_of(data, catalog)
    assert again.gpu_count == plan.gpu_count
    assert again.values["deadline_end_at_approval"] == pytest.approx(plan.values["deadline_end_at_approval"])


def test_the_curve_judges_a_date_deadline_as_the_check_does(by_june_30):
    """Given 405B by June 30, the days-against-GPUs curve marks the counts that end after the
    deadline at the approval percentile, and names the smallest count on it that meets the
    date: the plan's own (the search's smallest), never one below it."""
    from budget.plan.curve import DATE_END, deadline_sentence
    curve, v = by_june_30.curve, by_june_30.values
    assert curve.deadline_date == v["deadline_date"] and DATE_END in curve.items
    plan_point = curve.points[curve.plan_index]
    assert plan_point.values[DATE_END] == pytest.approx(v["deadline_end_at_approval"], rel=1e-12)
    assert not curve.misses_deadline(plan_point)
    fewer = [p for p in curve.points if p.gpu_count < plan_point.gpu_count]
    assert fewer and all(curve.misses_deadline(p) for p in fewer)
    said = deadline_sentence(curve).render("en")
    assert "2027-06-30" in said and f"{plan_point.gpu_count:,}" in said
    assert "2027-06-30" in deadline_sentence(curve).render("zh")
