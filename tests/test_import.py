"""Round trip: a reviewer's edited workbook → `import` → scenario → `generate` → the same figures.

Edits are made with openpyxl (which, like a paste, bypasses data validation); the edited books
are recalculated by LibreOffice in one call, and the plan of the imported scenario must equal
what LibreOffice computed, name by name.
"""

from __future__ import annotations

import copy
import datetime as dt
import io
import re
from pathlib import Path

import openpyxl
import pytest
import yaml

from budget.inputs.bind import unbind
from budget.cli.app import main
from budget.core import i18n
from budget.core.i18n import MESSAGES_DIR as MESSAGES
from budget.inputs.importer import WorkbookError, import_workbook
from budget.model.model import build_model
from budget.xlsx.recalc import read_values, recalculate, relative_difference
from budget.sheets.book import write_workbook
from support import SCENARIOS, plan_of, raw, require_soffice, with_changes

BUNDLED = ("gpt3-175b-h100", "gpt3-175b-a100", "llama3-70b-h100-deadline")
TOLERANCE = 1e-9

# Edits a reviewer makes, by defined name; ranges take (name, row index) keys.
EDITS = {
    "gpt3-175b-h100": {"price_per_gpu_hour": 2.1, "buffer_rate": 0.25, "currency": "EUR",
                       ("staff_role", 3): "Evaluation lead", ("staff_headcount", 3): 1,
                       ("staff_monthly_cost", 3): 11000, ("staff_months", 0): None,
                       "storage_months": None, "zero_stage": 1, "queue_days": 20},
    "gpt3-175b-a100": {"gpu_count": 2048, "effective_tflops_given": 150,
                       "start_date": dt.datetime(2027, 3, 1), "checkpoints_kept": 5,
                       "deployment_weeks": 4},
    "llama3-70b-h100-deadline": {"mfu": 0.38, "price_per_gpu_hour": 2.5,
                                 "interruption_rate_per_gpu_hour": 3e-5, "spare_nodes": 2},
}
# A new accelerator typed into the catalog's first spare row and chosen in the drop-down.
NEW_ACCELERATOR = {"id": "my_gpu", "name": "My GPU 192", "vendor": "Example",
                   "peak_bf16_tflops": 1000, "hbm_gb": 192, "gpus_per_node": 8,
                   "intra_node_gb_per_s": 450, "inter_node_gbit_per_s": 400, "typical_mfu": 0.4}


def _cell(wb, names, name, index=0):
    sheet, ref = names[name].split("!")
    ws = wb[sheet]
    first = ref.split(":")[0]
    cell = ws[first]
    return ws.cell(cell.row + index, cell.column)


def _edit(source: bytes, names: dict, edits: dict, target: Path, new_row: dict | None = None) -> None:
    wb = openpyxl.load_workbook(io.BytesIO(source))
    for key, value in edits.items():
        name, index = key if isinstance(key, tuple) else (key, 0)
        _cell(wb, names, name, index).value = value
    if new_row:
        row = [c.value for c in _column(wb, names, "acc_id")].index(None)   # the first spare row
        for column, value in new_row.items():
            _cell(wb, names, f"acc_{column}", row).value = value
        _cell(wb, names, "gpu_type").value = new_row["id"]
    wb.save(target)


def _column(wb, names, name):
    sheet, ref = names[name].split("!")
    return [row[0] for row in wb[sheet][ref]]


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory, catalog):
    """Each bundled scenario generated, edited, recalculated, imported and planned again."""
    require_soffice()
    folder = tmp_path_factory.mktemp("round-trip")
    cases = {}
    for stem in BUNDLED:
        plan = plan_of(raw(SCENARIOS / f"{stem}.yaml"), catalog, stem)
        book = write_workbook(plan)
        plain = folder / f"{stem}.xlsx"
        plain.write_bytes(book.data)
        edited = folder / f"{stem}-edited.xlsx"
        _edit(book.data, book.names, EDITS[stem], edited,
              NEW_ACCELERATOR if stem == "gpt3-175b-h100" else None)
        cases[stem] = {"plan": plan, "names": book.names, "plain": plain, "edited": edited}
    books = [c[k] for c in cases.values() for k in ("plain", "edited")]
    recalculated = recalculate(books, folder / "recalculated")
    for stem, case in cases.items():
        for kind in ("plain", "edited"):
            case[f"{kind}_values"] = read_values(recalculated[case[kind]])
            imported = import_workbook(case[kind], catalog)
            case[f"{kind}_import"] = imported
            case[f"{kind}_plan"] = plan_of(yaml.safe_load(imported.text), catalog, stem)
    return cases


def _compared_names(model, edited: bool):
    # (a row item is a range of the Stages sheet: tests/test_stages.py compares it cell by cell)
    names = [*(n for n, it in model.items.items() if it.kind != "rows"), *(n for n, d in model.inputs.items()
                             if d.on_inputs_sheet and not d.is_range and not d.kind.startswith("generated"))]
    # A new generation records new gen_ cells; the search check compares with those.
    skip = {"search_inputs_changed", "check_search_inputs_unchanged", "master_check"} if edited else set()
    # The currency cell of an amount left blank (the node price, left to the Catalog) holds no
    # figure a scenario could carry: the reviewer's accelerator has no catalog node, so a new
    # generation shows the plan's currency there.
    if edited:
        skip |= {"node_price_currency", "fx_node"}
    return [n for n in names if n not in skip]


@pytest.mark.office
@pytest.mark.parametrize("stem", BUNDLED)
def test_unedited_workbook_imports_to_the_same_inputs_and_outputs(round_trip, stem):
    case = round_trip[stem]
    before, after = case["plan"], case["plain_plan"]
    model = build_model()
    for name in _compared_names(model, edited=False):
        want, got = before.values[name], after.values[name]
        if want is None or isinstance(want, str):
            assert got == want, name
        else:
            assert relative_difference(got, want) <= TOLERANCE, (name, got, want)
    for name in ("staff_role", "staff_headcount", "staff_monthly_cost", "staff_months"):
        assert after.values[name] == before.values[name], name


@pytest.mark.office
@pytest.mark.parametrize("stem", BUNDLED)
def test_edited_workbook_round_trips_to_libreoffices_figures(round_trip, stem):
    """Edited book → LibreOffice; edited book → import → generate: every named figure agrees."""
    case = round_trip[stem]
    values, names, plan = case["edited_values"], case["names"], case["edited_plan"]
    model = build_model()
    bad = {}
    for name in _compared_names(model, edited=True):
        got = values.get(names[name])
        want = plan.values[name]
        if want is None:
            if got is not None:
                bad[name] = (got, want)
        elif relative_difference(got, want) > TOLERANCE:
            bad[name] = (got, want)
    assert not bad


@pytest.mark.office
def test_edits_are_in_the_imported_scenario(round_trip):
    data = round_trip["gpt3-175b-h100"]["edited_import"].data
    # the reviewer switched the plan to euros: the dollar price keeps its currency and converts
    assert data["prices"]["per_gpu_hour"] == {"amount": 2.1, "currency": "USD"}
    assert data["prices"]["currency"] == "EUR" and data["prices"]["fx_rates"]["USD"] > 0
    assert data["hardware"]["accelerator"] == "my_gpu"
    rows = {r["id"]: r for r in data["catalog"]["accelerators"]}
    assert rows["my_gpu"]["hbm_gb"] == 192 and rows["my_gpu"]["name"] == "My GPU 192"
    # The seed's 990 peak on the H100 row stays, as a catalog row now that H100 is not chosen,
    # with its citations read from the Source column (not from a figure column beside it).
    assert rows["nvidia_h100_sxm"]["peak_bf16_tflops"] == 990
    assert "datasheet 989" in rows["nvidia_h100_sxm"]["source"]
    assert data["staffing"][3] == {"role": "Evaluation lead", "headcount": 1,
                                   "monthly_cost": {"amount": 11000, "currency": "USD"}}
    assert "months" not in data["staffing"][0]           # blank: follows the project
    assert "months_held" not in data["storage"]
    a100 = round_trip["gpt3-175b-a100"]["edited_import"].data
    assert a100["schedule"]["start_date"] == dt.date(2027, 3, 1)
    assert a100["hardware"]["effective_tflops"] == 150


@pytest.mark.office
def test_the_seeds_peak_override_comes_back_as_the_scenarios_key(round_trip):
    data = round_trip["gpt3-175b-h100"]["plain_import"].data
    assert data["hardware"]["peak_tflops"] == 990 and "catalog" not in data
    assert data["sources"]["prices.per_gpu_hour"] == "seed 002 section 5, TOKEN AI platform price"


@pytest.mark.office
def test_changed_search_inputs_are_commented_and_warned(round_trip):
    """The deadline example's layout was chosen by the search; a new accelerator in the book
    keeps the pins, says they were chosen for other inputs, and how to let the search rerun."""
    imported = round_trip["llama3-70b-h100-deadline"]["edited_import"]
    assert "chosen by the layout search; delete to let it choose again" in imported.text
    assert imported.warnings == []           # the edits touched nothing the search used
    seed = round_trip["gpt3-175b-h100"]["edited_import"]
    assert "  accelerator: my_gpu  # was nvidia_h100_sxm at generation" in seed.text
    assert seed.warnings == []               # the seed's layout is pinned: no search to rerun


def test_warns_when_the_search_inputs_changed(tmp_path, catalog):
    plan = plan_of(raw(SCENARIOS / "llama3-70b-h100-deadline.yaml"), catalog, "llama")
    book = write_workbook(plan)
    path = tmp_path / "llama.xlsx"
    _edit(book.data, book.names, {"gpu_type": "nvidia_h200_sxm"}, path)
    imported = import_workbook(path, catalog)
    assert len(imported.warnings) == 1
    assert "hardware.accelerator: nvidia_h100_sxm -> nvidia_h200_sxm" in imported.warnings[0]
    assert "remove hardware.gpu_count and the keys under parallelism" in imported.warnings[0]


@pytest.mark.parametrize("edit, message", [
    ({"gpu_count": "lots"}, "holds 'lots' where a number belongs"),
    ({"mfu": 1.5}, "is 1.5, outside its validation"),
    ({"usable_memory_fraction": 0}, "is 0, outside its validation"),
    ({"tp_size": 2.5}, "is 2.5, not a whole number"),
    ({"recompute": "sometimes"}, "is 'sometimes', not one of none, selective, full"),
    ({"price_per_gpu_hour": "=1+1"}, "holds a formula where an input value belongs"),
])
@pytest.mark.slow
def test_bad_cells_are_one_clear_error_and_exit_2(tmp_path, capsys, seed_h100, edit, message):
    book = write_workbook(seed_h100)
    path = tmp_path / "bad.xlsx"
    _edit(book.data, book.names, edit, path)
    target = tmp_path / "out.yaml"
    code = main(["import", str(path), "-o", str(target)])
    out, err = capsys.readouterr()
    name = next(iter(edit))
    assert code == 2 and out == "" and not target.exists()
    lines = err.splitlines()
    assert len(lines) == 2
    assert lines[0] == f"error: {path}: {book.names[name]} ({name}): {message}"
    assert lines[1].startswith("  fix: ")


def test_import_command_writes_the_scenario_and_generate_reads_it(tmp_path, capsys, seed_h100):
    book = tmp_path / "seed.xlsx"
    book.write_bytes(write_workbook(seed_h100).data)
    scenario = tmp_path / "seed.yaml"
    assert main(["import", str(book), "-o", str(scenario)]) == 0
    assert main([str(scenario), "-o", str(tmp_path / "out"), "-q"]) == 0
    assert (tmp_path / "out" / "seed.xlsx").exists()
    capsys.readouterr()


def test_unbind_inverts_bind_for_every_input_with_a_path(seed_h100, catalog):
    """bind(unbind(cells)) == cells for every input that has a scenario path."""
    model = build_model()
    values = {k: iv.value for k, iv in seed_h100.inputs.items()}
    data = unbind(model, values)
    data["name"] = "round trip"
    again = plan_of(data, catalog, "again")
    for name, d in model.inputs.items():
        if d.path is None or d.kind.startswith("generated"):
            continue
        assert again.inputs[name].value == values[name], name


def test_not_a_workbook_is_a_clear_error(tmp_path, catalog):
    path = tmp_path / "x.xlsx"
    path.write_text("not a zip", encoding="utf-8")
    with pytest.raises(WorkbookError) as err:
        import_workbook(path, catalog)
    assert "not an .xlsx workbook" in err.value.problems[0].message


# --- a Chinese workbook reads as the English one ---------------------------------------------------
ZH_CATALOGS = [MESSAGES / "zh" / f"{area}.yaml" for area in ("model", "workbook", "importer")]


def _zh_books_or_skip():
    missing = [p.name for p in ZH_CATALOGS if not p.is_file()]
    if missing:
        pytest.skip(f"a Chinese workbook needs budget/messages/zh/{', '.join(missing)}")


def _book(tmp_path, catalog, stem, lang, edits=None, new_row=None):
    """A scenario's workbook written in `lang`, edited by defined names as a reviewer would."""
    plan = plan_of(with_changes(raw(SCENARIOS / f"{stem}.yaml"), {"language": lang}), catalog, stem)
    book = write_workbook(plan)
    path = tmp_path / f"{stem}-{lang}.xlsx"
    if edits or new_row:
        _edit(book.data, book.names, edits or {}, path, new_row)
    else:
        path.write_bytes(book.data)
    return path, book


@pytest.mark.slow
@pytest.mark.parametrize("stem", (*BUNDLED, "gpt3-175b-h800-cny"))
def test_a_chinese_workbook_imports_to_the_english_ones_scenario(tmp_path, catalog, stem):
    """Generated with --lang zh, as generated and as a reviewer edited it: the same scenario as
    the English book gives, the language kept, the comments in Chinese; nothing is read by the
    text a cell shows."""
    _zh_books_or_skip()
    edits = EDITS.get(stem, {"buffer_rate": 0.25, "queue_days": 20})
    for edits, new_row in (({}, None), (edits, NEW_ACCELERATOR if stem == "gpt3-175b-h100" else None)):
        en = import_workbook(_book(tmp_path, catalog, stem, "en", edits, new_row)[0], catalog)
        zh = import_workbook(_book(tmp_path, catalog, stem, "zh", edits, new_row)[0], catalog)
        assert (en.lang, zh.lang) == ("en", "zh")
        assert "language" not in en.data and zh.data["language"] == "zh"
        assert yaml.safe_load(zh.text) == zh.data and yaml.safe_load(en.text) == en.data
        same = {lang: copy.deepcopy(book.data) for lang, book in (("en", en), ("zh", zh))}
        same["zh"].pop("language")
        for lang, data in same.items():
            for row in data.get("catalog", {}).get("accelerators", []):
                source = row.pop("source")
                if row["id"] == "my_gpu":   # typed without a source: says so in the book's language
                    assert source == i18n.text("importer.added_in_workbook", lang)
                else:                       # the Source cell, as the book's language wrote it
                    assert "mleng_accel (2026-08-22)" in source
        assert same["zh"] == same["en"]
        assert zh.data["sources"] and zh.data["sources"] == en.data["sources"]   # read by the zh template
        assert zh.text.startswith(f"# 由 trainbudget 从工作簿 {stem}-zh.xlsx 导入")
    # and the imported Chinese scenario plans to the English one's figures
    assert dict(plan_of(zh.data, catalog, stem).values) == dict(plan_of(en.data, catalog, stem).values)


@pytest.mark.slow
def test_a_chinese_workbooks_errors_and_warnings_are_chinese(tmp_path, capsys, catalog):
    _zh_books_or_skip()
    path, book = _book(tmp_path, catalog, "gpt3-175b-h100", "zh", {"gpu_count": "lots"})
    target = tmp_path / "out.yaml"
    assert main(["import", str(path), "-o", str(target)]) == 2
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert out == "" and not target.exists() and len(lines) == 2
    assert lines[0] == f"错误：{path}: {book.names['gpu_count']} (gpu_count): 应填数字的地方是 'lots'"
    assert lines[1].startswith("  处理办法：请输入一个数字（")
    assert main(["import", str(path), "--lang", "en", "-o", str(target)]) == 2     # --lang wins
    assert capsys.readouterr().err.startswith(f"error: {path}: {book.names['gpu_count']} (gpu_count): holds 'lots'")
    # a value the scenario refuses names the field, and the fix says where to change it
    path, book = _book(tmp_path, catalog, "gpt3-175b-h100", "zh", {"gpu_count": 500})
    assert main(["import", str(path), "-o", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"错误：{path}: parallelism.pp: tp 4 x pp 8 = 32 不能整除 gpu_count 500")
    assert err.endswith("（在工作簿中该字段对应的单元格里修改）\n")
    # the search's inputs changed: the warning in Chinese, the scenario written
    path, _ = _book(tmp_path, catalog, "llama3-70b-h100-deadline", "zh", {"gpu_type": "nvidia_h200_sxm"})
    assert main(["import", str(path), "-o", str(target)]) == 0
    out, err = capsys.readouterr()
    assert err.startswith(f"警告：{path}: GPU 数量和并行布局是并行布局搜索针对其他输入选定的"
                          "（hardware.accelerator: nvidia_h100_sxm -> nvidia_h200_sxm）")
    assert out == f"  已写入 {target}\n"
    text = target.read_text(encoding="utf-8")
    assert "  accelerator: nvidia_h200_sxm  # 生成时为 nvidia_h100_sxm" in text
    assert yaml.safe_load(text)["language"] == "zh"


def test_the_books_language_is_its_language_property_else_its_subject():
    from types import SimpleNamespace

    from budget.core import i18n
    from budget.inputs.importer import book_language

    def props(language=None, subject=None):
        return SimpleNamespace(language=language, subject=subject)

    assert book_language(props("zh-CN")) == "zh" and book_language(props("en")) == "en"
    assert book_language(props()) == "en" and book_language(props("xx", "a subject")) == "en"
    for lang in i18n.languages():
        subject = i18n.catalog(lang).get("workbook.properties.subject")
        if subject:
            assert book_language(props(subject=subject)) == lang


@pytest.mark.slow
def test_fp8_peaks_typed_on_the_catalog_sheet_come_back(tmp_path, catalog):
    """An FP8 plan's book: a reviewer types a dense FP8 peak on the H100 row of the Catalog sheet,
    or adds an accelerator with its own FP8 peak and chooses it; either comes back as a catalog row
    of the scenario carrying peak_fp8_tflops, and the plan computes at that peak."""
    data = with_changes(raw(SCENARIOS / "gpt3-175b-h100.yaml"),
                        {"hardware.precision": "fp8", "hardware.effective_tflops": None, "hardware.mfu": 0.4})
    book = write_workbook(plan_of(data, catalog, "fp8"))
    wb = openpyxl.load_workbook(io.BytesIO(book.data))
    ids = [c.value for c in _column(wb, book.names, "acc_id")]
    _cell(wb, book.names, "acc_peak_fp8_tflops", ids.index("nvidia_h100_sxm")).value = 1500
    edited = tmp_path / "fp8-peak.xlsx"
    wb.save(edited)
    imported = import_workbook(edited, catalog)
    rows = {r["id"]: r for r in imported.data["catalog"]["accelerators"]}
    assert rows["nvidia_h100_sxm"]["peak_fp8_tflops"] == 1500
    assert "peak_fp4_tflops" not in rows["nvidia_h100_sxm"]          # blank stays blank
    assert plan_of(yaml.safe_load(imported.text), catalog, "again")["peak_tflops"] == 1500

    added = tmp_path / "fp8-new-row.xlsx"
    _edit(book.data, book.names, {}, added, {**NEW_ACCELERATOR, "peak_fp8_tflops": 2000})
    imported = import_workbook(added, catalog)
    rows = {r["id"]: r for r in imported.data["catalog"]["accelerators"]}
    assert rows["my_gpu"]["peak_fp8_tflops"] == 2000
    assert plan_of(yaml.safe_load(imported.text), catalog, "again")["peak_tflops"] == 2000


def test_a_pilot_calibration_round_trips(tmp_path, catalog):
    """Issue 13 item 2: the calibration section comes back from the Inputs sheet's pilot cells —
    the pilot's GPUs, the layout values it changes, its measurement — and a reviewer's new
    measurement typed there is the imported scenario's (no LibreOffice needed: inputs only)."""
    from conftest import PLAIN_CASES
    path, changes = PLAIN_CASES["pilot-calibrated"]
    plan = plan_of(with_changes(raw(path), changes), catalog, "pilot")
    book = write_workbook(plan)
    plain = tmp_path / "pilot.xlsx"
    plain.write_bytes(book.data)
    imported = yaml.safe_load(import_workbook(plain, catalog).text)
    assert imported["calibration"] == changes["calibration"]
    again = plan_of(imported, catalog, "again")
    for name in ("pilot_effective_mfu", "calibration_factor", "calibrated_mfu", "gpu_hours", "total_cost"):
        assert again.values[name] == pytest.approx(plan.values[name], rel=TOLERANCE), name

    edited = tmp_path / "pilot-edited.xlsx"
    _edit(book.data, book.names, {"pilot_step_time_s": None, "pilot_tokens_per_gpu_s": 2600}, edited)
    imported = yaml.safe_load(import_workbook(edited, catalog).text)
    assert imported["calibration"] == {**{k: v for k, v in changes["calibration"].items() if k != "step_time_s"},
                                       "tokens_per_gpu_second": 2600}
    assert plan_of(imported, catalog, "edited").values["pilot_measured_mfu"] == pytest.approx(
        2600 * plan.values["model_flops_per_token"] / (plan.values["peak_tflops"] * 1e12))


# --- hostile and tampered workbooks (issue 30) -----------------------------------------------

import signal  # noqa: E402
import time  # noqa: E402
import zipfile  # noqa: E402

import xlsx_tamper as tamper  # noqa: E402
from budget.core import limits  # noqa: E402


@pytest.fixture(scope="module")
def seed_book(seed_h100) -> bytes:
    return write_workbook(seed_h100).data


def _import(tmp_path, capsys, book: bytes, *extra, name="book.xlsx"):
    """`trainbudget import book -o out.yaml` under a harness bound well above the tool's own."""
    path, target = tmp_path / name, tmp_path / "out.yaml"
    path.write_bytes(book)
    signal.alarm(60)
    try:
        code = main(["import", str(path), "-o", str(target), *extra])
    finally:
        signal.alarm(0)
    out, err = capsys.readouterr()
    return code, out, err, path, target


def _one_error(code, out, err, target) -> list[str]:
    lines = err.splitlines()
    assert code == 2 and out == "" and not target.exists(), err
    assert len(lines) == 2 and lines[0].startswith("error: ") and lines[1].startswith("  fix: "), err
    return lines


@pytest.mark.parametrize("text, says", [
    ("42", "the defined name holds '42': not a cell, row or column of cells of this workbook"),
    ("SUM('Inputs'!$B$20:$B$21)", "holds \"SUM('Inputs'!$B$20:$B$21)\": not a cell, row or column"),
    ("'[1]Inputs'!$B$20", "it points into another workbook"),
    ("[other.xlsx]Inputs!$B$20", "it points into another workbook"),
    ("'Inputs'!$B$20,'Inputs'!$B$21", "it names several areas"),
    ("'Inputs'!$A$1:$XFD$1048576", "more than the 100,000 cells an input area may have"),
    ("'Inputs'!$A:$XFD", "more than the 100,000 cells an input area may have"),
])
def test_a_tampered_defined_name_is_one_error_naming_it(tmp_path, capsys, seed_book, text, says):
    """Each of these was a traceback (or, for a whole sheet, minutes of reading)."""
    code, out, err, path, target = _import(tmp_path, capsys, tamper.defined_name(seed_book, "gpu_count", text))
    lines = _one_error(code, out, err, target)
    assert lines[0].startswith(f"error: {path}: "), lines[0]
    assert "gpu_count" in lines[0] and says in lines[0], lines[0]


@pytest.mark.parametrize("text", ["'Gone'!$B$20", "'Inputs'!$B$20"])
def test_a_missing_sheet_is_named_with_its_cell_and_name(tmp_path, capsys, seed_book, text):
    book = tamper.defined_name(seed_book, "gpu_count", text)
    if text.startswith("'Inputs'"):      # the Inputs sheet removed from the book
        wb = tamper.parts(book)["xl/workbook.xml"].decode()
        book = tamper.rezip(book, {"xl/workbook.xml": wb.replace('<sheet name="Inputs"', '<sheet name="Gone"').encode()})
    code, out, err, path, target = _import(tmp_path, capsys, book)
    lines = _one_error(code, out, err, target)
    sheet = "Gone" if text.startswith("'Gone'") else "Inputs"
    first = "gpu_count" if sheet == "Gone" else "params_override"      # the first input read from it
    assert re.match(rf"error: {re.escape(str(path))}: {sheet}![A-Z]+[0-9]+ \({first}\): the sheet {sheet} this "
                    "name points at is not in the workbook", lines[0]), lines[0]


@pytest.mark.parametrize("name, xml, says", [
    ("start_date", "20270104", "is 2.02701e+07, not a date a spreadsheet can show (1900-01-01 to 9999-12-31)"),
    ("start_date", "-5", "is -5, not a date a spreadsheet can show"),
    ("gpu_count", "1e400", "holds a value no spreadsheet shows ('1e400' is outside the numbers a spreadsheet can hold)"),
    ("gpu_count", "NaN", "holds a value no spreadsheet shows ('NaN' is outside the numbers"),
    ("gpu_count", "9" * 5000, "outside the numbers a spreadsheet can hold"),
    ("gpu_count", "lots", "holds a value no spreadsheet shows ('lots' is not a number)"),
])
def test_out_of_range_numbers_and_dates_are_errors_naming_the_cell(tmp_path, capsys, seed_book, name, xml, says):
    """20270104 typed into the start date was an OverflowError."""
    sheet, ref = tamper.cell_ref(seed_book, name)
    book = tamper.set_cell(seed_book, tamper.INPUTS_PART, ref, tamper.number_cell(ref, xml))
    code, out, err, path, target = _import(tmp_path, capsys, book)
    lines = _one_error(code, out, err, target)
    assert lines[0].startswith(f"error: {path}: {sheet}!{ref} ({name}): ") and says in lines[0], lines[0]


def test_a_shared_string_that_does_not_exist_is_named(tmp_path, capsys, seed_book):
    sheet, ref = tamper.cell_ref(seed_book, "recompute")
    book = tamper.set_cell(seed_book, tamper.INPUTS_PART, ref, f'<c r="{ref}" t="s"><v>99999</v></c>')
    code, out, err, path, target = _import(tmp_path, capsys, book)
    lines = _one_error(code, out, err, target)
    assert lines[0] == f"error: {path}: {sheet}!{ref} (recompute): holds a value no spreadsheet shows " \
                       "(shared string 99999 does not exist)"


@pytest.mark.parametrize("case, says", [
    ("not-a-zip", "not an .xlsx workbook (not a zip archive"),
    ("truncated", "not an .xlsx workbook (not a zip archive"),
    ("bad-crc", "the part xl/worksheets/sheet2.xml is damaged"),
    ("no-workbook-part", "the part xl/workbook.xml is missing"),
    ("duplicate-part", "the archive holds the part xl/workbook.xml twice"),
    ("10001-parts", "parts, over the 10,000 a workbook may have"),
    ("declared-1-GB", "the archive's parts unpack to 1,"),
    ("bomb-200-MB-comment", "unpacks to "),
    ("sheet-over-16-MB", "over the 16,000,000 read"),
    ("doctype", "declares a document type"),
    ("sheet-not-xml", "the part xl/worksheets/sheet2.xml is damaged"),
])
def test_a_damaged_or_hostile_archive_is_one_error(tmp_path, capsys, seed_book, case, says):
    if case == "not-a-zip":
        book = b"not a zip"
    elif case == "truncated":
        book = seed_book[:len(seed_book) // 2]
    elif case == "bad-crc":
        book = tamper.corrupt_crc(seed_book, tamper.INPUTS_PART)
    elif case == "no-workbook-part":
        book = tamper.rezip(seed_book, drop=["xl/workbook.xml"])
    elif case == "duplicate-part":
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            book = tamper.rezip(seed_book, add={"xl/workbook.xml": b"<workbook/>"})
    elif case == "10001-parts":
        book = tamper.rezip(seed_book, add={f"extra/{n}.bin": b"" for n in range(10_001)},
                            compression=zipfile.ZIP_STORED)
        says = f"the archive holds {len(tamper.parts(seed_book)) + 10_001:,} {says}"    # the book's own parts too
    elif case == "declared-1-GB":
        book = tamper.lie_about_size(seed_book, "xl/theme/theme1.xml", 1_000_000_001)
    elif case == "bomb-200-MB-comment":
        sheet = tamper.parts(seed_book)[tamper.INPUTS_PART]
        i = sheet.index(b"<sheetData>")
        book = tamper.rezip(seed_book, {tamper.INPUTS_PART: sheet[:i] + b"<!--" + b" " * 200_000_000 + b"-->" + sheet[i:]})
    elif case == "sheet-over-16-MB":
        sheet = tamper.parts(seed_book)[tamper.INPUTS_PART]
        i = sheet.index(b"<sheetData>")
        import base64
        import random
        filler = base64.b64encode(random.Random(30).randbytes(13_000_000))     # 17 MB that hardly compresses
        book = tamper.rezip(seed_book, {tamper.INPUTS_PART: sheet[:i] + b"<!--" + filler + b"-->" + sheet[i:]})
    elif case == "doctype":
        wb = tamper.parts(seed_book)["xl/workbook.xml"]
        book = tamper.rezip(seed_book, {"xl/workbook.xml": b'<!DOCTYPE w [<!ENTITY a "aaaa">]>' + wb})
    elif case == "sheet-not-xml":
        book = tamper.rezip(seed_book, {tamper.INPUTS_PART: b"<worksheet><sheetData><row>"})
    started = time.monotonic()
    code, out, err, path, target = _import(tmp_path, capsys, book)
    lines = _one_error(code, out, err, target)
    assert lines[0].startswith(f"error: {path}: ") and says in lines[0], lines[0]
    assert time.monotonic() - started < 30


def test_800000_empty_rows_after_the_inputs_import_in_seconds(tmp_path, capsys, seed_book):
    """A 1M-row book was accepted after 91 s and 561 MB: the rows past the inputs are not read
    (800,000 empty rows, 14 MB: a million are over the 16 MB a sheet part may unpack to)."""
    sheet = tamper.parts(seed_book)[tamper.INPUTS_PART]
    rows = b"".join(b'<row r="%d"/>' % n for n in range(400, 800_400))
    book = tamper.rezip(seed_book, {tamper.INPUTS_PART: sheet.replace(b"</sheetData>", rows + b"</sheetData>")})
    started = time.monotonic()
    code, out, err, _, target = _import(tmp_path, capsys, book)
    assert code == 0, err
    assert time.monotonic() - started < 15
    assert yaml.safe_load(target.read_text(encoding="utf-8"))["hardware"]["gpu_count"] == 512


def test_the_import_stops_at_its_own_time_bound(tmp_path, capsys, seed_book, monkeypatch):
    """Whatever a part holds within its cap, the read stops with a clear error at the time bound
    (10 s; 0 here, so that the first sheet read trips it)."""
    monkeypatch.setattr(limits, "MAX_IMPORT_SECONDS", 0.0)
    code, out, err, path, target = _import(tmp_path, capsys, seed_book)
    lines = _one_error(code, out, err, target)
    assert lines[0] == f"error: {path}: reading the workbook took over 0 s, the limit"


def test_import_onto_an_existing_scenario_refuses_and_says_what_would_be_lost(tmp_path, capsys, seed_book):
    """`import -o existing.yaml` overwrote a hand-written scenario and its comments silently."""
    from support import SEED_H100
    path, target = tmp_path / "book.xlsx", tmp_path / "out.yaml"
    path.write_bytes(seed_book)
    mine = SEED_H100.read_text(encoding="utf-8").replace("  gpu_count: 512", "  gpu_count: 1024  # mine")
    target.write_text(mine, encoding="utf-8")
    comments = sum(1 for line in mine.splitlines() if line.lstrip().startswith("#") or " #" in line)
    assert main(["import", str(path), "-o", str(target)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and target.read_text(encoding="utf-8") == mine
    # the seed's preset, token count as "300B" and the like are written out by the import, so they count too
    assert re.fullmatch(rf"error: {re.escape(str(target))}: already exists: importing would replace it, losing "
                        rf"{comments} comment lines and [0-9]+ values that differ from the workbook's \([^)]*"
                        r"hardware\.gpu_count[^)]*\)\n  fix: choose another path with -o, or pass --force to replace "
                        r"it\n", err), err
    assert main(["import", str(path), "-o", str(target), "--force"]) == 0
    assert yaml.safe_load(target.read_text(encoding="utf-8"))["hardware"]["gpu_count"] == 512
    capsys.readouterr()
    target.write_bytes(b"\x00\x01 not yaml")
    assert main(["import", str(path), "-o", str(target)]) == 2
    assert "losing 11 bytes that are not a scenario" in capsys.readouterr().err


def _with_note(book: bytes, name: str, note: str) -> bytes:
    from openpyxl.comments import Comment
    wb = openpyxl.load_workbook(io.BytesIO(book))
    sheet, ref = tamper.cell_ref(book, name)
    wb[sheet][ref].comment = Comment(note, "reviewer")
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


def test_cell_notes_are_kept_as_comments_in_the_scenario(tmp_path, capsys, seed_book):
    """Notes on the cells were dropped without a word: each is a comment line of the scenario."""
    book = _with_note(seed_book, "gpu_count", "Finance caps us at 512.\nAsk before changing.")
    code, out, err, _, target = _import(tmp_path, capsys, book)
    assert code == 0 and err == "", err
    sheet, ref = tamper.cell_ref(seed_book, "gpu_count")
    text = target.read_text(encoding="utf-8")
    assert "# Notes on the workbook's cells, as the reviewer left them:\n" in text
    assert f"#   {sheet}!{ref} (gpu_count): Finance caps us at 512. Ask before changing.\n" in text
    assert yaml.safe_load(text)["hardware"]["gpu_count"] == 512


def test_notes_that_cannot_be_read_are_named(tmp_path, capsys, seed_book, monkeypatch):
    book = _with_note(seed_book, "gpu_count", "x" * 2000)
    monkeypatch.setattr(limits, "MAX_NOTES_BYTES", 1000)
    code, out, err, _, target = _import(tmp_path, capsys, book)
    assert code == 0 and target.exists()
    assert err.startswith(f"warning: {tmp_path / 'book.xlsx'}: the notes on the sheet Inputs were not read (the part "
                          "xl/comments/comment1.xml unpacks to"), err
    assert "copy them into the scenario by hand" in err


def test_a_vendor_edited_on_the_catalog_sheet_comes_back(tmp_path, catalog, seed_book):
    """A vendor typed over on the Catalog sheet was dropped without a word."""
    wb = openpyxl.load_workbook(io.BytesIO(seed_book))
    names = {n: wb.defined_names[n].attr_text.replace("'", "").replace("$", "") for n in ("acc_id", "acc_vendor")}
    ids = [c.value for c in _column(wb, names, "acc_id")]
    _cell(wb, names, "acc_vendor", ids.index("amd_mi300x")).value = "AMD (via our reseller)"
    path = tmp_path / "vendor.xlsx"
    wb.save(path)
    rows = {r["id"]: r for r in import_workbook(path, catalog).data["catalog"]["accelerators"]}
    assert rows["amd_mi300x"]["vendor"] == "AMD (via our reseller)"


@pytest.mark.office
def test_a_real_book_resaved_by_libreoffice_with_a_picture_and_notes_imports(tmp_path, catalog, seed_h100):
    """The bounds do not refuse real books: the seed's workbook re-saved by LibreOffice (shared
    strings, its own styles and parts), then a 19 MB picture and two notes added with openpyxl,
    about 20 MB in all, imports to the same scenario as the generated book."""
    require_soffice()
    import os as _os

    from openpyxl.comments import Comment
    from openpyxl.drawing.image import Image
    from PIL import Image as PILImage

    generated = tmp_path / "seed.xlsx"
    generated.write_bytes(write_workbook(seed_h100).data)
    resaved = recalculate([generated], tmp_path / "lo")[generated]
    wb = openpyxl.load_workbook(resaved)
    picture = tmp_path / "noise.png"
    PILImage.frombytes("RGB", (2500, 2500), _os.urandom(2500 * 2500 * 3)).save(picture, compress_level=1)
    wb["Summary"].add_image(Image(str(picture)), "H2")
    sheet, ref = tamper.cell_ref(generated.read_bytes(), "gpu_count")
    wb[sheet][ref].comment = Comment("Finance approved 512.", "reviewer")
    wb["Catalog"]["A1"].comment = Comment("Prices as of the last review.", "reviewer")
    book = tmp_path / "reviewed.xlsx"
    wb.save(book)
    size = book.stat().st_size
    assert 18_000_000 < size <= 21_000_000, size
    started = time.monotonic()
    imported = import_workbook(book, catalog)
    assert time.monotonic() - started < 10
    _same(imported.data, import_workbook(generated, catalog).data)   # LibreOffice keeps 15 digits
    assert f"#   {sheet}!{ref} (gpu_count): Finance approved 512.\n" in imported.text
    assert "#   Catalog!A1: Prices as of the last review.\n" in imported.text


def _same(a, b, path="") -> None:
    """Equal data, numbers to 1e-12 relative."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), path
        for key in a:
            _same(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), path
        for n, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{path}[{n}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-12), path
    else:
        assert a == b, path


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "folder", "link-to-dev-urandom"])
def test_a_workbook_path_that_is_no_regular_file_is_refused_at_once(tmp_path, capsys, kind):
    import os as _os
    path = tmp_path / "book.xlsx"
    if kind == "dev-zero":
        path = Path("/dev/zero")
    elif kind == "fifo":
        _os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    else:
        path.symlink_to("/dev/urandom")
    target = tmp_path / "out.yaml"
    signal.alarm(60)
    try:
        code = main(["import", str(path), "-o", str(target)])
    finally:
        signal.alarm(0)
    out, err = capsys.readouterr()
    lines = _one_error(code, out, err, target)
    assert lines[0].startswith(f"error: {path}: is not a regular file ("), lines[0]


def test_an_unreadable_catalog_cell_is_named(tmp_path, capsys, seed_book):
    wb = tamper.parts(seed_book)["xl/workbook.xml"].decode()
    ref = re.search(r'<definedName name="acc_hbm_gb">[^<]*\$([A-Z]+)\$([0-9]+):', wb)
    cell = f"{ref.group(1)}{ref.group(2)}"
    book = tamper.set_cell(seed_book, tamper.CATALOG_PART, cell, tamper.number_cell(cell, "1e999"))
    code, out, err, path, target = _import(tmp_path, capsys, book)
    lines = _one_error(code, out, err, target)
    assert lines[0] == (f"error: {path}: Catalog!{cell} (acc_hbm_gb): holds a value no spreadsheet shows "
                        "('1e999' is outside the numbers a spreadsheet can hold)")
