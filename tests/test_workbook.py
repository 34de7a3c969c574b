"""The workbook as a reviewer opens it: sheets, names, inputs, formulas, text safety, bytes."""

from __future__ import annotations

import io
import re

import openpyxl

from budget.model.model import build_model
import pytest

from budget.formula.expr import BENIGN_CONSTANTS, SUPPORTED_FUNCTIONS
from budget.xlsx.reproducible import content_digest
from budget.sheets.writer import CALC_SHEETS, put_text
from budget.sheets.book import write_workbook
from support import seed_plan

FUNCTION = re.compile(r"([A-Z][A-Z0-9.]*)\(")
NUMBER = re.compile(r"(?<![A-Za-z_$0-9.])(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)(?![A-Za-z_0-9(!])")


@pytest.fixture(scope="module")
def book(seed_h100):
    result = write_workbook(seed_h100)
    return result, openpyxl.load_workbook(io.BytesIO(result.data))


def test_sheets_in_reviewer_order(book):
    _, wb = book
    planned = [s for s in wb.sheetnames if s not in ("Sensitivity", "Cashflow", "Reference runs", "Curve")]   # others' sheets
    assert planned == ["Summary", "Inputs", "Catalog", "Memory", "Parallelism",
                             "Layout candidates", "Compute", "Stages", "Schedule", "Timeline", "Cost", "Checks", "Input checks",
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
    # blank ("") for an owned cluster given no rental price (issue 28)
    assert wb[sheet][coord].value == '=IF(ISNUMBER(price_per_gpu_hour),gpu_hours*tier_rate,"")'
    sheet, coord = result.names["peak_bf16_tflops"].split("!")
    assert wb[sheet][coord].value == "=INDEX(acc_peak_bf16_tflops,MATCH(gpu_type,acc_id,0))"


def test_inputs_are_styled_unlocked_and_validated(book):
    result, wb = book
    ws = wb["Inputs"]
    validations = {str(dv.sqref): dv for dv in ws.data_validations.dataValidation}
    for name, coord in result.names.items():
        sheet, cell = coord.split("!")
        generated = name.startswith("gen_") or name in ("layout_searched", "inert_recompute", "inert_compute_precision")
        if sheet != "Inputs" or ":" in cell or generated:
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
    # the price's unit follows the currency it is typed in (its own cell), not the plan's
    assert (label, value, unit) == ("GPU price as quoted for the tier", 1.8, '=price_currency&"/GPU-hour"')
    assert result.expected[f"Inputs!C{row}"] == "USD/GPU-hour"
    assert "seed 002" in source


def test_no_numeric_constants_or_unsupported_functions_on_calculation_sheets(book):
    """Only conventions (BENIGN_CONSTANTS) stand as numbers in a formula; the input-integrity
    checks (issue 29) and their sentences may hold the inputs' declared bounds too, the numbers
    each input's data validation and the importer's rule hold."""
    _, wb = book
    declared = {abs(float(v)) for d in build_model().inputs.values() for v in (d.minimum, d.maximum)
                if v is not None}
    for title in (*CALC_SHEETS, "Summary", "Layout candidates", "Glossary", "Change log"):
        for row in wb[title].iter_rows():
            for c in row:
                if c.data_type == "f":
                    body = re.sub(r'"[^"]*"', '""', c.value)
                    assert set(FUNCTION.findall(body)) <= SUPPORTED_FUNCTIONS, c.coordinate
                    numbers = {float(n) for n in NUMBER.findall(body)}
                    integrity = "check_inputs_" in body or str(c.parent.cell(c.row, 4).value or "").startswith("check_inputs_")
                    allowed = BENIGN_CONSTANTS | declared if integrity else BENIGN_CONSTANTS
                    assert numbers <= allowed, (title, c.coordinate, c.value)
                else:
                    assert not isinstance(c.value, (int, float)), (title, c.coordinate, c.value)


def test_text_from_the_scenario_stays_text(book, seed_h100):
    _, wb = book
    assert seed_h100.scenario.name in wb["Summary"]["A2"].value     # as written at generation (issue 29)
    assert wb["Summary"]["A2"].data_type == "s"
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


# --- presentation (issue 7, items 2, 6, 7, 8) ----------------------------------------------------

def _cells(wb, sheet):
    return {c.coordinate: c.value for row in wb[sheet].iter_rows() for c in row if c.value is not None}


def _row_of(wb, sheet, text):
    return next(c.row for row in wb[sheet].iter_rows() for c in row if c.value == text)


def test_summary_leads_with_the_status_and_one_row_per_check_and_warning(book, seed_h100):
    result, wb = book
    ws = wb["Summary"]
    # the title is live (issue 29), the count with its thousands separator ("16,384 × ...")
    assert ws["A1"].value == '=IF(ISNUMBER(gpu_count),FIXED(gpu_count,0),gpu_count)&" × "&accelerator_name'
    assert result.expected["Summary!A1"] == "512 × NVIDIA H100 80GB SXM5"
    status = ws["A5"].value
    assert status.startswith("=IF(ISERROR(master_check)") and '"All checks pass"' in status
    assert result.expected["Summary!A5"] == "NOT APPROVABLE: 1 check fails, in words at the foot of this page"
    model = seed_h100.model
    texts = {c: v for c, v in _cells(wb, "Summary").items() if isinstance(v, str) and c.startswith("A")}
    for item in (*model.checks(), *model.warnings()):   # one fixed row each, in model order
        rows = [c for c, v in texts.items() if v.startswith(f"=IF(ISERROR({item.name}),")]
        assert len(rows) == 1, item.name
        expected = result.expected[f"Summary!{rows[0]}"]
        assert (expected == "") == (seed_h100.values[item.name] == 0), item.name
    failing = [k for k, v in result.expected.items() if k.startswith("Summary!A") and
               isinstance(v, str) and v.startswith("Layout does not fit")]
    # at the foot of the printed page, under the sign-off (the first failing check), and its own
    # row in the workings below the print area
    signed = max(r for r in range(1, ws.max_row + 1) if ws.cell(r, 1).value == "Approved by")
    last_printed = int(ws.print_area.split("$")[-1])
    rows = sorted(int(k.split("!A")[1]) for k in failing)
    assert len(rows) == 2 and signed < rows[0] <= last_printed < rows[1], (signed, rows, last_printed)
    assert result.expected[f"Summary!A{rows[0]}"] == "Layout does not fit in memory: 89.1 > 72 GB per GPU"
    assert result.expected[f"Summary!A{rows[0] + 1}"] == ""
    assert "2 warnings: plausibility, shown here, not blocking approval" in result.expected.values()


def test_summary_total_is_labelled_indicative_and_memo_lines_sit_below_it(book):
    result, wb = book
    ws = wb["Summary"]
    top, total = [c for row in ws.iter_rows() for c in row if c.value == "=total_cost"]
    assert ws.cell(top.row - 1, 2).value == "=total_cost_ask"       # the printed page: the ask first
    assert ws.cell(top.row + 1, 2).value == "=total_cost_p10"       # then the range (issue 29)
    label = ws.cell(total.row, 1)
    assert label.data_type == "f" and result.expected[f"Summary!{label.coordinate}"] == \
        "Total (point estimate; indicative: checks fail)"
    assert ws.cell(total.row + 1, 2).value == "=total_cost_ask"      # the ask right under it (issue 25)
    memo = _row_of(wb, "Summary", "Memo: not in the total")
    assert memo > total.row
    below = [ws.cell(r, 2).value for r in range(memo + 1, memo + 9)]
    assert below == ["=buffer_cost", "=buffered_total_cost", "=rental_cost", "=rental_gap_cost",
                     "=billed_rental_cost", "=reserved_unused_cost", "=energy_cost_equivalent",
                     "=vat_recoverable_memo"]
    cost = wb["Cost"]
    memo = _row_of(wb, "Cost", "Memo: not in the total")
    sheet, coord = result.names["total_cost"].split("!")
    assert int(coord[1:]) < memo
    assert [result.names[n] for n in ("buffer_cost", "buffered_total_cost", "rental_cost", "rental_gap_cost")] == \
        [f"Cost!B{memo + 1}", f"Cost!B{memo + 2}", f"Cost!B{memo + 3}", f"Cost!B{memo + 4}"]
    assert cost.cell(memo + 1, 1).value.startswith("Flat contingency buffer (not added)")


def test_headline_answers_are_formulas(book):
    result, wb = book
    formulas = {v for v in _cells(wb, "Summary").values() if isinstance(v, str) and v.startswith("=")}
    for name in ("accelerator_name", "gpu_count", "layout_label", "train_days", "project_end", "total_cost"):
        assert f"={name}" in formulas, name
    memory = next(v for v in formulas if "does NOT fit" in v)
    assert "check_memory_fits" in memory
    assert "89.1 GB needed of 72 GB usable: does NOT fit" in result.expected.values()


def test_generated_sentences_sit_under_a_live_warning(book, seed_h100):
    result, wb = book
    for sheet in ("Summary", "Parallelism"):
        ws = wb[sheet]
        head = _row_of(wb, sheet, "Generated for these inputs")
        warning = ws.cell(head + 1, 1).value
        assert warning.startswith("=IFERROR(IF(OR(search_inputs_changed<>0,layout_label<>")
        assert "Inputs changed since generation" in warning
        assert result.expected[f"{sheet}!A{head + 1}"] == ""
        sentences = [ws.cell(r, 1).value for r in range(head + 2, head + 4)]
        assert sentences[1] == f"Layout: {seed_h100.layout.explanation}"
    static = [v for v in _cells(wb, "Summary").values() if isinstance(v, str) and "NOT fit" in v
              and not v.startswith("=")]
    assert all(_row_of(wb, "Summary", v) > _row_of(wb, "Summary", "Generated for these inputs")
               for v in static)


CURRENCY_INPUTS = {d.name for d in build_model().inputs.values() if d.unit == "ISO 4217 code"}


def test_every_currency_label_is_a_formula_over_the_currency_cell(book):
    result, wb = book
    allowed = {result.names[n] for n in CURRENCY_INPUTS if n in result.names}
    # beside each currency input, its value at generation (column G, issue 29): a constant
    allowed |= {cell.replace("!B", "!G") for cell in allowed if cell.startswith("Inputs!B")}
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for c in row:
                value = result.expected.get(f"{ws.title}!{c.coordinate}")
                if isinstance(value, str) and "USD" in value:
                    assert "currency" in c.value, (ws.title, c.coordinate)
                elif isinstance(c.value, str) and not c.value.startswith("="):
                    assert ("USD" not in c.value or f"{ws.title}!{c.coordinate}" in allowed
                            or ws.title == "Catalog"), (ws.title, c.coordinate, c.value)
                if c.data_type == "n" and c.number_format:
                    assert "USD" not in c.number_format and "$" not in c.number_format
    labels = {v for v in result.expected.values() if isinstance(v, str) and "USD" in v}
    assert {"USD", "USD/GPU-hour", "USD/GB-month", "Monthly cost per person (USD/month)",
            "Total cost (USD)"} <= labels


def test_a_book_of_another_currency_labels_every_total_in_it(catalog):
    """Seed 002's example in yuan: the catalog defaults (electricity, operations) and the
    plausibility band are dollar amounts (their currency cells say USD, their rows' units follow them, the FX table converts
    them); every line of the bill and every total is labelled CNY."""
    from support import SEED_H100, plan_of, raw, with_changes
    plan = plan_of(with_changes(raw(SEED_H100), {"prices.currency": "CNY"}), catalog, "cny")
    result = write_workbook(plan)
    wb = openpyxl.load_workbook(io.BytesIO(result.data))
    dollar_inputs = {n for n in CURRENCY_INPUTS if plan.inputs[n].value == "USD"}
    # the seed types its storage price, so it is in the plan's currency; the defaults are not
    # (the node price is left to the Catalog: its currency cell shows the catalog node's)
    assert dollar_inputs == {"plausibility_currency", "electricity_currency", "ops_currency",
                             "node_price_currency"}
    dollar_rows = {int(result.names[n].split("!B")[1]) for n in dollar_inputs}
    dollar_rows |= {int(result.names[d.name].split("!B")[1]) for d in build_model().inputs.values()
                    if d.currency in dollar_inputs}
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for c in row:
                shown = result.expected.get(f"{ws.title}!{c.coordinate}", c.value)
                if isinstance(shown, str) and "USD" in shown:
                    assert (ws.title == "Inputs" and c.row in dollar_rows) or ws.title == "Catalog", \
                        (ws.title, c.coordinate, shown)
    assert "CNY/GPU-hour" in result.expected.values()
    assert "Total cost (CNY)" in result.expected.values()


def test_glossary_before_the_change_log(book):
    _, wb = book
    assert wb.sheetnames[-2:] == ["Glossary", "Change log"]
    terms = {c.value for c in wb["Glossary"]["A"] if c.value}
    for term in ("TP (tensor parallel)", "PP (pipeline parallel)", "DP (data parallel)", "ZeRO", "MFU",
                 "HFU", "HBM", "Goodput", "1F1B bubble", "Micro-batch", "GPU-hour", "Checkpoint",
                 "Young/Daly interval", "Contingency buffer"):
        assert term in terms, term


def test_change_log_is_writable_and_shows_the_scenario_digest(book, seed_h100):
    import hashlib
    _, wb = book
    # the language is left out: the English and the Chinese books of one scenario are one version;
    # so are the schema's defaults, so that a key the schema gains keeps every scenario's version
    digest = hashlib.sha256(seed_h100.scenario.model_dump_json(exclude={"language"}, exclude_defaults=True)
                            .encode()).hexdigest()[:12]
    ws = wb["Change log"]
    assert ws.protection.sheet
    assert ws["B5"].value == digest
    assert all(ws.cell(r, c).protection.locked is False for r in (6, 50, 205) for c in range(1, 5))
    assert digest in wb["Summary"]["A3"].value
    assert wb.properties.identifier == digest and digest in wb.properties.description
    assert digest in wb["Memory"].oddHeader.right.text
    texts = " ".join(str(v) for ws in wb.worksheets for v in _cells(wb, ws.title).values())
    assert not re.search(r"\b20\d\d-\d\d-\d\dT\d\d:\d\d", texts), "no wall-clock time in the book"


def test_layout_candidates_are_columns(seed_a100):
    result = write_workbook(seed_a100)
    wb = openpyxl.load_workbook(io.BytesIO(result.data))
    ws = wb["Layout candidates"]
    head = next(c.row for c in ws["A"] if c.value == "Candidate")
    labels = [ws.cell(head, c).value for c in range(2, ws.max_column + 1)]
    assert labels[0] == "1: chosen at generation" and len(labels) == len(seed_a100.layout.candidates)
    assert ws.max_column <= 16
    total = next(c.row for c in ws["A"] if isinstance(c.value, str) and c.value.startswith('="Total cost ('))
    for n, values in enumerate(seed_a100.candidate_values):
        assert result.expected[f"Layout candidates!{ws.cell(total, 2 + n).coordinate}"] == values["total_cost"]


# --- the Chinese book (issue 11) ------------------------------------------------------------------

@pytest.fixture(scope="module")
def zh_book(catalog):
    from support import SEED_H100, plan_of, raw, with_changes
    plan = plan_of(with_changes(raw(SEED_H100), {"language": "zh"}), catalog, "gpt3-175b-h100")
    result = write_workbook(plan)
    return plan, result, openpyxl.load_workbook(io.BytesIO(result.data))


CJK = re.compile(r"[\u4e00-\u9fff]")


def _zh(key, **figures):
    from budget.core import i18n
    return i18n.fmt(key, "zh", **figures) if figures else i18n.text(key, "zh")


def test_the_chinese_book_keeps_the_tab_names_and_writes_its_headings_in_chinese(zh_book, book):
    plan, result, wb = zh_book
    assert plan.lang == "zh"
    assert wb.sheetnames == book[1].sheetnames          # tab names are identifiers
    assert wb["Inputs"]["A1"].value == _zh("workbook.inputs.title")
    assert [wb["Inputs"].cell(4, c).value for c in range(1, 4)] == \
        [_zh("workbook.inputs.columns.assumption"), _zh("workbook.columns.value"), _zh("workbook.columns.unit")]
    assert wb["Memory"]["A1"].value == _zh("workbook.sheets.memory")
    assert wb["Memory"]["A2"].value == _zh("workbook.subtitles.memory")
    assert wb["Checks"]["E4"].value == _zh("workbook.columns.fix")
    for text in (wb["Inputs"]["A1"].value, wb["Memory"]["A1"].value, wb["Checks"]["E4"].value):
        assert CJK.search(text), text
    footer = _zh("workbook.print.footer", sheet=_zh("workbook.sheets.memory"), page="&P", pages="&N")
    assert wb["Memory"].oddFooter.center.text == footer
    assert wb.properties.subject == _zh("workbook.properties.subject")


def test_the_chinese_summary_speaks_chinese_live(zh_book):
    plan, result, wb = zh_book
    ws = wb["Summary"]
    assert result.expected["Summary!A5"] == _zh("workbook.summary.status.fail.one", count=1)
    _row_of(wb, "Summary", _zh("workbook.summary.checks_failing"))
    assert result.expected["Summary!A1"] == "512 × NVIDIA H100 80GB SXM5"
    verdict = _zh("workbook.summary.memory.words", needed="89.1", usable="72",
                  verdict=_zh("workbook.summary.memory.does_not_fit"))
    assert verdict in result.expected.values()
    memory = next(c for c in ws["B"] if isinstance(c.value, str) and "check_memory_fits" in c.value)
    assert memory.data_type == "f" and result.expected[f"Summary!{memory.coordinate}"] == verdict
    assert _zh("workbook.summary.warnings.some.other", count=2) in result.expected.values()
    for key in ("blocks.answer", "blocks.cost", "labels.gpu_count"):
        _row_of(wb, "Summary", _zh(f"workbook.summary.{key}"))
    memo = _row_of(wb, "Summary", _zh("workbook.memo_heading"))
    assert ws.cell(memo + 1, 1).value == plan.model.items["buffer_cost"].label
    failing = [v for k, v in result.expected.items() if k.startswith("Summary!A") and isinstance(v, str)
               and v == plan.model.items["check_memory_fits"].sentence(plan.values)]
    assert len(failing) == 2 and CJK.search(failing[0])     # the printed page's line and the workings' row


def test_the_chinese_inputs_show_chinese_units_messages_and_labels(zh_book):
    plan, result, wb = zh_book
    ws = wb["Inputs"]
    row = int(result.names["price_per_gpu_hour"].split("!B")[1])
    assert ws.cell(row, 1).value == plan.model.inputs["price_per_gpu_hour"].label
    assert CJK.search(ws.cell(row, 1).value)
    assert ws.cell(row, 3).value == '=price_currency&"/GPU 小时"'
    assert result.expected[f"Inputs!C{row}"] == _zh("units.currency/GPU-hour").replace("currency", "USD")
    days = int(result.names["deadline_days"].split("!B")[1])
    assert ws.cell(days, 3).value == _zh("units.days") == "天"
    validations = {str(dv.sqref): dv for dv in ws.data_validations.dataValidation}
    count = validations[result.names["gpu_count"].split("!")[1]]
    label = plan.model.inputs["gpu_count"].label
    assert count.error.startswith(f"“{label}”") and CJK.search(count.error)
    assert count.prompt.startswith(_zh("workbook.validation.prompt_unit", unit=_zh("units.GPUs")))


def test_the_chinese_glossary_and_change_log(zh_book):
    from budget.sheets.notes import GLOSSARY
    _, _, wb = zh_book
    ws = wb["Glossary"]
    assert ws["A1"].value == _zh("workbook.sheets.glossary")
    terms = [ws.cell(r, 1).value for r in range(5, 5 + len(GLOSSARY))]
    assert terms == [_zh(f"workbook.glossary.terms.{t}.term") for t in GLOSSARY]
    meanings = [ws.cell(r, 2).value for r in range(5, 5 + len(GLOSSARY))]
    assert all(CJK.search(m) for m in meanings)
    assert wb["Change log"]["D4"].value == _zh("workbook.change_log.columns.change")
    assert wb["Change log"]["D5"].value == _zh("workbook.change_log.generated", scenario="gpt3-175b-h100")


def test_no_english_workbook_text_is_left_in_the_chinese_book(zh_book):
    """Every sentence of the English workbook catalog that Chinese says otherwise is absent from
    the Chinese book, as a cell's text or as the text a formula shows."""
    from budget.core import i18n
    _, result, wb = zh_book
    en, zh = i18n.catalog("en"), i18n.catalog("zh")
    english = {v for k, v in en.items() if k.startswith("workbook.") and " " in v and "{" not in v
               and v != zh[k]}
    shown = {c.value for ws in wb.worksheets for row in ws.iter_rows() for c in row if isinstance(c.value, str)}
    shown |= {v for v in result.expected.values() if isinstance(v, str)}
    assert not english & shown, sorted(english & shown)[:5]


def test_the_chinese_book_has_the_english_names_formulas_and_formats(zh_book, book):
    """Only text differs: the same defined names, and every formula that computes a number is
    the English book's, with its number format."""
    from budget.core import i18n
    _, zh_result, zh_wb = zh_book
    en_result, en_wb = book
    assert zh_result.names == en_result.names
    for ref, value in en_result.expected.items():
        if isinstance(value, str):
            continue
        sheet, coord = ref.split("!")
        en_cell, zh_cell = en_wb[sheet][coord], zh_wb[sheet][coord]
        assert zh_cell.value == en_cell.value, ref
        # The same format codes, but a month header reads "2027年1月" in Chinese.
        months = (i18n.text("workbook.cashflow.month_format", "en"),
                  i18n.text("workbook.cashflow.month_format", "zh"))
        assert zh_cell.number_format == en_cell.number_format or \
               (en_cell.number_format, zh_cell.number_format) == months, ref


def test_widths_count_cjk_characters_twice(zh_book):
    from budget.core.text import display_width, wrapped_lines
    assert display_width("GPU 小时") == 8 and display_width("Total (USD)") == 11
    assert display_width("预留金（buffer）") == 6 + 2 + 6 + 2
    assert wrapped_lines("中" * 40, 35) == 3          # 17 characters (34 columns) a line
    # a dotted key moves to the next line whole, as the spreadsheet wraps it
    assert wrapped_lines("场景 gpt3-175b-h100.yaml：data.train_tokens（seed 002 section 1）", 35) == 3
    _, _, wb = zh_book
    ws = wb["Cashflow"]       # a long Chinese label in column A wraps and its row grows
    label = _zh("items.cashflow_reserved_term.label")      # the row's item's label (issue 24)
    cell = next(c for c in ws["A"] if c.value == label)
    assert cell.alignment.wrap_text and (ws.row_dimensions[cell.row].height or 15) >= 30


@pytest.mark.parametrize("start_style", ["Input", "Calculation", "Header", None])
@pytest.mark.parametrize("width", [2, 3, 7])
def test_a_sheet_merges_a_row_as_openpyxl_does(start_style, width):
    """The writer's sheets merge a row faster (the cells between the second and the last copy
    the second's style): the cells and the book's style lists are what openpyxl's own gives."""
    from openpyxl.styles import Border, Side
    from openpyxl.worksheet.worksheet import Worksheet

    from budget.sheets.writer import add_named_styles as _styles
    from budget.xlsx.cells import FastSheet as _Sheet

    def merged(kind):
        wb = openpyxl.Workbook()
        _styles(wb)
        ws = kind(parent=wb, title="S")
        wb._add_sheet(ws)
        ws.cell(3, 2, "a long line of prose")
        if start_style:
            ws.cell(3, 2).style = start_style
        ws.cell(3, 1 + width).border = Border(right=Side(style="thin"), bottom=Side(style="double"))
        ws.cell(4, 3, 5)
        ws.merge_cells(start_row=3, start_column=2, end_row=3, end_column=1 + width)
        cells = {key: (type(c).__name__, c._value, None if c._style is None else tuple(c._style))
                 for key, c in ws._cells.items()}
        lists = [list(getattr(wb, k)) for k in ("_fonts", "_fills", "_borders", "_alignments", "_protections")]
        return cells, lists, [str(r) for r in ws.merged_cells.ranges]

    assert merged(_Sheet) == merged(Worksheet)


def test_writing_a_book_leaves_the_collector_as_it_was(seed_h100):
    """The collector is paused while a book is built, and left as the caller had it."""
    import gc

    assert gc.isenabled()
    write_workbook(seed_h100)
    assert gc.isenabled()
    gc.disable()
    try:
        write_workbook(seed_h100)
        assert not gc.isenabled()
    finally:
        gc.enable()


FINANCE_SHEETS = ("Summary", "Cost", "Cashflow", "Compare")


@pytest.mark.slow
def test_no_scientific_notation_where_finance_reads(catalog):
    """The options example's Summary, Cost and Cashflow sheets and the Compare sheet's printed
    part hold no number format in E notation: a FLOP count reads in thousands of a power of ten
    (the seed's 3.15e24 FLOPs as 3,150.00 ×10²¹)."""
    import io
    import re
    from openpyxl.utils.cell import range_boundaries
    from budget.plan.options import plan_file
    from budget.sheets.writer import FLOP_FORMAT
    from support import SCENARIOS
    wb = openpyxl.load_workbook(io.BytesIO(write_workbook(plan_file(SCENARIOS / "gpt3-175b-options.yaml", catalog)).data))
    scientific = re.compile(r"(?<![\"A-Za-z])[0#][.0#]*E[+-]0", re.I)
    found = []
    for sheet in FINANCE_SHEETS:
        ws = wb[sheet]
        last_row = ws.max_row
        if ws.print_area:
            last_row = range_boundaries(str(ws.print_area).split("!")[-1].replace("$", ""))[3]
        found += [f"{sheet}!{c.coordinate} {c.number_format}" for row in ws.iter_rows(max_row=last_row) for c in row
                  if c.value is not None and scientific.search(c.number_format or "")]
    assert found == []
    flops = [c for row in wb["Summary"].iter_rows() for c in row if c.value == "=train_flops"]
    assert flops and all(c.number_format == FLOP_FORMAT for c in flops)
