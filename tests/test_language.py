"""One plan, two languages: the Chinese workbook is the English one with its words translated.

Defined names, where they point, formulas (their string literals aside) and every value after
LibreOffice recalculates both books are identical; only text differs. The command line's --lang
wins over the scenario's `language`.
"""

from __future__ import annotations

import re

import openpyxl
import pytest

from budget.core import i18n
from budget.cli.app import main
from budget.xlsx.recalc import is_error, read_values, recalculate
from budget.sheets.book import write_workbook
from budget.plan.plan import scenario_digest
from support import SCENARIOS, SEED_H100, plan_of, raw, require_soffice, with_changes

ZH_EXAMPLE = SCENARIOS / "gpt3-175b-h800-cny.yaml"
OPTIONS = SCENARIOS / "gpt3-175b-options.yaml"
# (case, scenario): each written in English and in Chinese.
PAIRS = {"zh-example": ZH_EXAMPLE, "seed-h100": SEED_H100, "options": OPTIONS,
         "deadline": SCENARIOS / "llama3-70b-h100-deadline.yaml"}
CJK = re.compile(r"[\u3400-\u9fff]")
SAME_FORMATS = {(i18n.text("workbook.cashflow.month_format", "zh"),
                 i18n.text("workbook.cashflow.month_format", "en"))}
_STRING_LITERAL = re.compile(r'"(?:[^"]|"")*"')


def _plan(path, lang, catalog, name):
    from budget.plan.options import build_option_plans
    from dataclasses import replace

    data = with_changes(raw(path), {"language": lang})
    if data.get("options"):
        plans = build_option_plans(data, catalog, path=path.name, scenario_id=name)
        return replace(plans[0][1], options=tuple(plans[1:]))
    return plan_of(data, catalog, name)


@pytest.fixture(scope="module")
def books(tmp_path_factory, catalog):
    """{case: {lang: (plan, written book, recalculated book)}}, recalculated in one call."""
    require_soffice()
    folder = tmp_path_factory.mktemp("languages")
    out: dict[str, dict[str, tuple]] = {}
    for case, path in PAIRS.items():
        for lang in ("en", "zh"):
            plan = _plan(path, lang, catalog, path.stem)
            book = folder / f"{case}-{lang}.xlsx"
            book.write_bytes(write_workbook(plan).data)
            out.setdefault(case, {})[lang] = (plan, book)
    recalculated = recalculate([b for pair in out.values() for _, b in pair.values()],
                               folder / "recalculated")
    return {case: {lang: (plan, book, recalculated[book]) for lang, (plan, book) in pair.items()}
            for case, pair in out.items()}


def test_the_plans_agree_value_for_value(catalog):
    for path in PAIRS.values():
        en, zh = (_plan(path, lang, catalog, path.stem) for lang in ("en", "zh"))
        assert (en.lang, zh.lang) == ("en", "zh")
        assert dict(zh.values) == dict(en.values)
        assert scenario_digest(zh) == scenario_digest(en)   # one scenario version


@pytest.mark.office
@pytest.mark.parametrize("case", PAIRS)
def test_names_and_formulas_are_the_english_ones(books, case):
    """Every formula is the English one, its string literals aside. A formula that computes a
    sentence may differ in grammar (English plurals: `IF(n=1,"","s")`), but reads no other cell."""
    en = openpyxl.load_workbook(books[case]["en"][1])
    zh = openpyxl.load_workbook(books[case]["zh"][1])
    en_values = read_values(books[case]["en"][2])
    assert zh.sheetnames == en.sheetnames
    assert {n: d.attr_text for n, d in zh.defined_names.items()} == \
           {n: d.attr_text for n, d in en.defined_names.items()}
    numeric = sentences = 0
    for ws in en.worksheets:
        other = zh[ws.title]
        for row in ws.iter_rows():
            for c in row:
                twin, where = other[c.coordinate], f"{ws.title}!{c.coordinate}"
                if c.data_type == "f":
                    assert twin.data_type == "f", where
                    mine, theirs = (_STRING_LITERAL.sub('""', str(x.value)) for x in (twin, c))
                    if not isinstance(en_values.get(where), (int, float)):   # text, or "" read back as empty
                        sentences += 1
                        assert _refs(mine) <= _refs(theirs), where
                    else:
                        numeric += 1
                        assert mine == theirs, where
                elif not isinstance(c.value, str):
                    assert twin.value == c.value, where
                # Number formats are the same codes, but a month header reads "2027年1月".
                assert (twin.number_format, c.number_format) in SAME_FORMATS or \
                       twin.number_format == c.number_format, where
    assert numeric > 500 and sentences > 0


def _refs(formula: str) -> set[str]:
    """The names, cells and functions a formula mentions (its string literals removed)."""
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_.!$]*", formula))


@pytest.mark.office
@pytest.mark.parametrize("case", PAIRS)
def test_every_value_agrees_after_recalculation(books, case):
    """Name by name, and cell by cell: numbers, dates and flags identical; text may differ."""
    en_plan, _, en_book = books[case]["en"]
    zh_plan, _, zh_book = books[case]["zh"]
    en_values, zh_values = read_values(en_book), read_values(zh_book)
    names = write_workbook(en_plan).names
    assert names == write_workbook(zh_plan).names
    for name, cell in names.items():
        got, want = zh_values.get(cell), en_values.get(cell)
        if not isinstance(want, str):
            assert got == want, f"{name} ({cell}): zh {got!r}, en {want!r}"
    texts = differing = 0
    for cell, want in en_values.items():
        got = zh_values.get(cell)
        assert not is_error(got), f"{cell}: {got}"
        if isinstance(want, str):
            texts += 1
            differing += got != want
        else:
            assert got == want, f"{cell}: zh {got!r}, en {want!r}"
    assert set(zh_values) == set(en_values)
    assert differing > texts / 3, f"only {differing} of {texts} texts are translated"


def _shared_strings(path) -> str:
    """Every text of a workbook as written, one per line."""
    wb = openpyxl.load_workbook(path)
    return "\n".join(c.value for ws in wb.worksheets for row in ws.iter_rows() for c in row
                     if isinstance(c.value, str))


@pytest.mark.slow
def test_lang_on_the_command_line_wins(tmp_path):
    """An English scenario asked for in Chinese, and the Chinese example asked for in English."""
    label = "items.train_days.label"
    assert main([str(SEED_H100), "--lang", "zh", "-o", str(tmp_path / "zh"), "-q"]) == 0
    strings = _shared_strings(tmp_path / "zh" / f"{SEED_H100.stem}.xlsx")
    assert i18n.text(label, "zh") in strings and i18n.text(label, "en") not in strings
    assert main([str(ZH_EXAMPLE), "--lang", "en", "-o", str(tmp_path / "en"), "-q"]) == 0
    strings = _shared_strings(tmp_path / "en" / f"{ZH_EXAMPLE.stem}.xlsx")
    assert i18n.text(label, "en") in strings and i18n.text(label, "zh") not in strings
    # Without --lang, the scenario's language decides.
    assert main([str(ZH_EXAMPLE), "-o", str(tmp_path / "own"), "-q"]) == 0
    own = (tmp_path / "own" / f"{ZH_EXAMPLE.stem}.xlsx").read_bytes()
    assert own != (tmp_path / "en" / f"{ZH_EXAMPLE.stem}.xlsx").read_bytes()
    assert i18n.text(label, "zh") in _shared_strings(tmp_path / "own" / f"{ZH_EXAMPLE.stem}.xlsx")


def test_the_zh_example_is_priced_in_yuan_on_a_domestic_quote(catalog):
    """Seed 002's context: H800 on a one-year lease in China, CNY throughout, every figure sourced."""
    plan = _plan(ZH_EXAMPLE, "zh", catalog, ZH_EXAMPLE.stem)
    s = plan.scenario
    assert (s.language, s.prices.currency, s.hardware.accelerator) == ("zh", "CNY", "nvidia_h800_sxm")
    row = catalog.prices.rental_price(s.prices.catalog)
    assert row.per_gpu_hour.currency == "CNY" and row.tier == "reserved"
    assert plan.values["check_memory_fits"] == 0 and not plan.failing_checks
    for key in ("prices.catalog", "prices.storage_per_gb_month", "staffing", "hardware.mfu"):
        assert s.sources[key], key
    assert CJK.search(s.name) and CJK.search(s.description)


@pytest.mark.office
def test_a_chinese_book_says_its_language(books):
    """zh-CN in the book's properties (what `import` reads first); English books carry none."""
    from budget.inputs.importer import book_language

    zh = openpyxl.load_workbook(books["zh-example"]["zh"][1])
    en = openpyxl.load_workbook(books["zh-example"]["en"][1])
    assert zh.properties.language == "zh-CN" and en.properties.language is None
    assert (book_language(zh.properties), book_language(en.properties)) == ("zh", "en")
