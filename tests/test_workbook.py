"""The workbook as a reviewer opens it: sheets, names, inputs, formulas, text safety, bytes."""

from __future__ import annotations

import io
import re

import openpyxl
import pytest

from budget.formula import BENIGN_CONSTANTS, SUPPORTED_FUNCTIONS
from budget.reproducible import content_digest
from budget.workbook import CALC_SHEETS, put_text, write_workbook
from support import seed_plan

FUNCTION = re.compile(r"([A-Z][A-Z0-9.]*)\(")
NUMBER = re.compile(r"(?<![A-Za-z_$0-9.])(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)(?![A-Za-z_0-9(!])")


@pytest.fixture(scope="module")
def book(seed_h100):
    result = write_workbook(seed_h100)
    return result, openpyxl.load_workbook(io.BytesIO(result.data))


def test_sheets_in_reviewer_order(book):
    _, wb = book
    assert wb.sheetnames == ["Summary", "Inputs", "Catalog", "Memory", "Parallelism",
                             "Layout candidates", "Compute", "Schedule", "Timeline", "Cost", "Checks",
                             "Glossary", "Change log"]


def test_names_point_at_inputs_and_outputs(book):
    result, wb = book
    for name in ("gpu_type", "gpu_count", "params_override", "train_tokens", "mfu",
                 "price_per_gpu_hour", "buffer_rate", "tp_size", "pp_size", "currency"):
        assert result.names[name].startswith("Inputs!B"), name
        assert wb.defined_names[name].attr_text.startswith("'Inputs'!$B$")
    for name in ("model_params", "baseline_mfu", "train_flops", "effective_tflops", "gpu_hours", "gpu_days", "train_days",
                 "dp_size", "memory_per_gpu_gb", "rental_cost", "storage_cost", "staffing_cost",
                 "subtotal_cost", "buffer_cost", "total_cost"):
        sheet = result.names[name].split("!")[0]
        assert sheet in CALC_SHEETS, name


def test_reviewers_read_named_formulas(book):
    result, wb = book
    sheet, coord = result.names["rental_cost"].split("!")
    assert wb[sheet][coord].value == "=gpu_hours*price_per_gpu_hour"
    sheet, coord = result.names["peak_tflops"].split("!")
    assert wb[sheet][coord].value == "=INDEX(acc_peak_bf16_tflops,MATCH(gpu_type,acc_id,0))"


def test_inputs_are_styled_unlocked_and_validated(book):
    result, wb = book
    ws = wb["Inputs"]
    validations = {str(dv.sqref): dv for dv in ws.data_validations.dataValidation}
    for name, coord in result.names.items():
        sheet, cell = coord.split("!")
        if sheet != "Inputs" or ":" in cell or name.startswith("gen_") or name == "layout_searched":
            continue
        c = ws[cell]
        assert c.font.color.rgb.endswith("0000FF") and c.fill.fgColor.rgb.endswith("FFF2CC"), name
        assert c.protection.locked is False, name
    gpu_type = validations[result.names["gpu_type"].split("!")[1]]
    assert gpu_type.type == "list" and gpu_type.formula1 == "acc_id"
    gpu_count = validations[result.names["gpu_count"].split("!")[1]]
    assert gpu_count.type == "whole" and gpu_count.formula1 == "1"
    assert ws.protection.sheet


def test_inputs_rows_carry_label_unit_source(book):
    result, wb = book
    ws = wb["Inputs"]
    row = int(result.names["price_per_gpu_hour"].split("!B")[1])
    label, value, unit, source = (ws.cell(row, c).value for c in range(1, 5))
    assert (label, value, unit) == ("GPU rental", 1.8, '=currency&"/GPU-hour"')
    assert result.expected[f"Inputs!C{row}"] == "USD/GPU-hour"
    assert "seed 002" in source


def test_no_numeric_constants_or_unsupported_functions_on_calculation_sheets(book):
    _, wb = book
    for title in (*CALC_SHEETS, "Summary", "Layout candidates", "Glossary", "Change log"):
        for row in wb[title].iter_rows():
            for c in row:
                if c.data_type == "f":
                    body = re.sub(r'"[^"]*"', '""', c.value)
                    assert set(FUNCTION.findall(body)) <= SUPPORTED_FUNCTIONS, c.coordinate
                    numbers = {float(n) for n in NUMBER.findall(body)}
                    assert numbers <= BENIGN_CONSTANTS, (title, c.coordinate, c.value)
                else:
                    assert not isinstance(c.value, (int, float)), (title, c.coordinate, c.value)


def test_text_from_the_scenario_stays_text(book, seed_h100):
    _, wb = book
    assert wb["Summary"]["A1"].value == seed_h100.scenario.name
    assert wb["Summary"]["A1"].data_type == "s"
    roles = [c.value for c in wb["Inputs"]["A"] if c.value in {"ML research engineer", "Data engineer"}]
    assert roles == ["ML research engineer", "Data engineer"]


@pytest.mark.parametrize("text", ["=1+1", "+cmd", "-2", "@SUM(A1)", "=HYPERLINK(\"x\")"])
def test_put_text_never_writes_a_formula(text):
    wb = openpyxl.Workbook()
    cell = wb.active["A1"]
    put_text(cell, text)
    assert cell.data_type == "s" and cell.quotePrefix
    buf = io.BytesIO()
    wb.save(buf)
    again = openpyxl.load_workbook(buf)["Sheet"]["A1"]
    assert again.value == text and again.data_type == "s"


def test_checks_have_red_green_formatting_and_a_master_check(book):
    result, wb = book
    sheet, coord = result.names["master_check"].split("!")
    assert sheet == "Checks"
    summary_refs = [c for row in wb["Summary"].iter_rows() for c in row if c.value == "=master_check"]
    assert len(summary_refs) == 1
    ranges = {str(r.sqref) for r in wb["Summary"].conditional_formatting}
    assert summary_refs[0].coordinate in ranges


def test_same_plan_same_bytes(seed_h100, catalog):
    first = write_workbook(seed_h100).data
    again = write_workbook(seed_plan(catalog)).data
    assert first == again
    assert content_digest(first) == content_digest(again)


def test_different_scenarios_differ(seed_h100, seed_a100):
    assert content_digest(write_workbook(seed_h100).data) != content_digest(write_workbook(seed_a100).data)


def test_document_properties_carry_the_version(book):
    from budget import __version__
    _, wb = book
    assert wb.properties.version == __version__
    assert wb.properties.creator == "trainbudget"
    assert wb.calculation.fullCalcOnLoad
