"""The timeline report: Markdown (golden file) and self-contained HTML (rendered in Chromium)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import jinja2
import pytest

from budget.render.report import environment, md_escape, render_html, render_markdown
from support import SEED_H100, chromium, plan_of, raw, with_changes

GOLDEN = Path(__file__).parent / "golden" / "gpt3-175b-h100.md"
GOLDEN_ZH = Path(__file__).parent / "golden" / "gpt3-175b-h100.zh.md"   # the same plan with --lang zh
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars"]


def test_markdown_matches_the_golden_file(seed_h100):
    """Regenerate with UPDATE_GOLDEN=1 after an intended change, and read the diff."""
    text = render_markdown(seed_h100)
    if os.environ.get("UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(text, encoding="utf-8")
    assert text == GOLDEN.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def seed_h100_zh(catalog):
    """The bundled example as `--lang zh` writes it."""
    return plan_of(with_changes(raw(SEED_H100), {"language": "zh"}), catalog, "gpt3-175b-h100")


def test_chinese_markdown_matches_the_golden_file(seed_h100_zh):
    """Regenerate with UPDATE_GOLDEN=1 after an intended change, and read the diff."""
    text = render_markdown(seed_h100_zh)
    if os.environ.get("UPDATE_GOLDEN") == "1":
        GOLDEN_ZH.write_text(text, encoding="utf-8")
    assert text == GOLDEN_ZH.read_text(encoding="utf-8")


def test_the_chinese_report_declares_its_language_and_writes_dates_the_chinese_way(seed_h100, seed_h100_zh):
    """`lang` from the catalog; dates as 2027年1月4日 (no zero padding) in the tables and the
    sentences, while the Gantt chart's Mermaid data stays ISO; the English report is untouched."""
    html, text = render_html(seed_h100_zh), render_markdown(seed_h100_zh)
    assert html.startswith('<!DOCTYPE html>\n<html lang="zh-CN">')
    assert render_html(seed_h100).startswith('<!DOCTYPE html>\n<html lang="en">')
    assert "<td>2027年1月4日</td><td>2027年1月18日</td>" in html        # data preparation
    assert "| 正式训练 | 2027年3月1日 | 2027年9月14日 |" in text
    assert "2027年1月4日开始，2027年10月12日结束。" in text                 # the decision asked for
    assert "    正式训练 :training, 2027-03-01, 2027-09-14" in text        # Mermaid: ISO data
    assert "2027-01-04" not in html
    assert "## 状态：不可审批（1 项校验未通过）" in text
    assert "按季度支出：2027年第1季度 719,851 USD；2027年第2季度" in text
    assert '<text x="503.3" y="16" text-anchor="middle">2027年7月</text>' in html    # Gantt axis
    for english in ("Decision asked for", "At a glance", "Failure budget", "Key assumptions", "Total"):
        assert english not in html and english not in text, english


def test_formats_come_from_the_catalog():
    import datetime as dt

    from budget.render.decision import quarters
    from budget.render.report import keep_together
    from budget.render.words import Words
    en, zh = Words("en"), Words("zh")
    day = dt.date(2027, 1, 4)
    assert (en.date(day), zh.date(day)) == ("2027-01-04", "2027年1月4日")
    assert en.date(day, "report.formats.month_year") == "Jan 2027"
    assert zh.date(dt.date(2027, 11, 30), "report.formats.month") == "11月"
    assert en.money(1234567.4, "USD") == "1,234,567 USD" and zh.money(1234567.4, "CNY") == "1,234,567 CNY"
    assert en.signed_money(-5, "USD") == "\u22125 USD" and zh.signed_money(5, "CNY") == "+5 CNY"
    assert en.unit("currency/GPU-h", "CNY") == "CNY/GPU-h"
    assert en.html("package.index.verify", command="a", sums="<b>", schema="s").count("&lt;b&gt;") == 1
    assert "plan's" in en.html("package.index.verify", command="", sums="", schema="")
    assert keep_together("1 项未通过") == "1\u00a0项\u2060未\u2060通\u2060过"
    assert keep_together("2 failing") == "2 failing"


def test_markdown_has_phases_schedule_failures_costs_and_sources(seed_h100):
    text = render_markdown(seed_h100)
    for heading in ("## Phases", "## Schedule of the run", "## Failure budget", "## Cost",
                    "## Why this GPU count and layout", "## Key assumptions"):
        assert heading in text
    gantt = re.search(r"```mermaid\ngantt\n(.*?)```", text, re.S).group(1)
    assert gantt.count(":") >= 6 and "dateFormat YYYY-MM-DD" in gantt
    assert "Full training :training, 2027-03-01, 2027-09-14" in gantt
    assert "seed 002 section 5, TOKEN AI platform price" in text


@pytest.fixture(scope="module")
def hostile(catalog):
    name = "<script>alert('x')</script> & <b>bold</b> | pipe"
    data = with_changes(raw(SEED_H100), {"name": name, "description": "<img src=x onerror=alert(1)>",
                                         "staffing": [{"role": "Lead <i>ML</i>", "headcount": 1,
                                                       "monthly_cost": 1000, "months": 1}]})
    return name, plan_of(data, catalog, "hostile")


def test_scenario_text_stays_text_in_html(hostile):
    name, plan = hostile
    html = render_html(plan)
    assert "<script>" not in html and "<img" not in html and "<b>bold" not in html
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in html


def test_scenario_text_stays_text_in_markdown(hostile):
    _, plan = hostile
    text = render_markdown(plan)
    assert "<script>" not in text and "<img" not in text
    assert text.startswith("# &lt;script&gt;alert('x')&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt; \\| pipe\n")
    assert md_escape("a|b*c_[d]`e") == "a\\|b\\*c\\_\\[d\\]\\`e"


def test_html_is_self_contained(seed_h100):
    html = render_html(seed_h100)
    assert "<script" not in html and "<link" not in html and "@import" not in html
    assert not re.search(r"""(src|href)\s*=""", html)
    assert html.count("<svg") == 2 and "<style>" in html


def test_templates_are_strict():
    with pytest.raises(jinja2.UndefinedError):
        environment().get_template("timeline.md.j2").render({})


def test_report_is_reproducible(seed_h100, catalog):
    from support import seed_plan
    again = seed_plan(catalog)
    assert render_html(seed_h100) == render_html(again)
    assert render_markdown(seed_h100) == render_markdown(again)


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args],
                          capture_output=True, text=True, timeout=120)


def _pdf_of(tmp_path: Path, html: str, paper: str | None = None) -> Path:
    """The PDF Chromium prints of a report's HTML (on `paper` when given)."""
    if paper:
        html = html.replace("@page { margin: 14mm; }", f"@page {{ size: {paper}; margin: 14mm; }}")
    page = tmp_path / "report.html"
    page.write_text(html, encoding="utf-8")
    pdf = tmp_path / "report.pdf"
    proc = _chromium(tmp_path, "--no-pdf-header-footer", f"--print-to-pdf={pdf}", page.as_uri())
    assert pdf.is_file(), proc.stderr[-2000:]
    return pdf


@pytest.mark.office
def test_html_renders_in_chromium_to_a_non_blank_screenshot(tmp_path, seed_h100):
    from PIL import Image

    page = tmp_path / "report.html"
    page.write_text(render_html(seed_h100), encoding="utf-8")
    shot = tmp_path / "report.png"
    proc = _chromium(tmp_path, "--window-size=1000,2400", f"--screenshot={shot}", page.as_uri())
    assert shot.is_file(), proc.stderr[-2000:]
    image = Image.open(shot).convert("RGB")
    assert image.size == (1000, 2400)
    grey = image.convert("L").histogram()
    ink = sum(grey[:200]) / sum(grey)                     # share of pixels darker than light grey
    colours = len(image.getcolors(maxcolors=1 << 24))
    assert ink > 0.02, "the page is almost blank"
    assert colours > 50, "no charts or colours rendered"


@pytest.mark.office
@pytest.mark.parametrize("paper", ["A4", "letter"])
def test_html_prints_on_a4_and_letter(tmp_path, seed_h100, paper):
    data = _pdf_of(tmp_path, render_html(seed_h100), paper).read_bytes()
    pages = len(re.findall(rb"/Type\s*/Page[^s]", data))
    assert 2 <= pages <= 7      # the decision page, then the workings
    width, height = (595.3, 841.9) if paper == "A4" else (612, 792)
    box = re.search(rb"/MediaBox\s*\[\s*0\s+0\s+([\d.]+)\s+([\d.]+)", data)
    assert box and abs(float(box[1]) - width) < 2 and abs(float(box[2]) - height) < 2


def test_reports_lead_with_the_status_and_the_failing_checks(seed_h100):
    """NOT APPROVABLE first, each failing check in words (the workbook's sentence) with its fix,
    then the warnings; the total is labelled indicative while checks fail."""
    text = render_markdown(seed_h100)
    html = render_html(seed_h100)
    status = text.index("## Status: NOT APPROVABLE: 1 check fails")
    assert status < text.index("## At a glance")
    assert "- **Layout does not fit in memory: 89.1 &gt; 72 GB per GPU.** Fix: Ways out, cheapest first: " in text
    assert "Staffing is paid for 6 months, the project runs 9.3" in text
    assert "**Total (point estimate; indicative: checks fail)**" in text
    assert "| **The ask: P80 of the total (indicative: checks fail)** | **6,465,177 USD** | |" in text
    assert html.index("Status: NOT APPROVABLE: 1 check fails") < html.index("At a glance")
    assert "Layout does not fit in memory: 89.1 &gt; 72 GB per GPU." in html


def test_a_passing_plan_says_so(catalog):
    from support import SCENARIOS, plan_of, raw
    plan = plan_of(raw(SCENARIOS / "llama3-70b-h100-deadline.yaml"), catalog, "deadline")
    assert not plan.failing_checks
    text = render_markdown(plan)
    assert "## Status: All checks pass" in text and "| **Total (point estimate)** |" in text and "| **The ask: P80 of the total** |" in text
    assert "indicative" not in text
    assert "Status: All checks pass" in render_html(plan)


@pytest.mark.parametrize("render", [render_markdown, render_html])
def test_memo_lines_sit_under_not_in_the_total(seed_h100, render):
    text = render(seed_h100)
    total = text.index("Total (point estimate; indicative: checks fail)", text.index("Cost</h2>" if "<h2>" in text else "## Cost"))
    memo = text.index("Not in the total")
    assert total < memo
    assert text.index("3,500,000 USD", memo) > memo            # the seed's pure-training rental
    assert text.index("1,024,507 USD", memo) > memo            # billed minus pure (with the full-run allowance)
    assert text.index("5,975,816 USD", memo) > memo            # the total with the flat 20% buffer, not asked


@pytest.mark.office
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_chinese_text_renders_in_a_cjk_font(tmp_path, catalog, lang):
    """Scenario text in Chinese (a plan in yuan with Chinese role names), in the English report
    and in the Chinese one (--lang zh: every heading, label and date Chinese), prints in the CJK
    font the stack names and fontconfig matches for Simplified Chinese (zh-cn), and comes back out
    of the printed PDF as text."""
    from support import require_tool
    fc_match = require_tool(__import__("shutil").which("fc-match"), "fontconfig (fc-match)",
                            "apt-get install -y fontconfig fonts-noto-cjk")
    family = subprocess.run([fc_match, "-f", "%{family[0]}", ":lang=zh-cn"], capture_output=True,
                            text=True, timeout=30).stdout
    html = render_html(plan_of(with_changes(raw(SEED_H100), {
        "name": "GPT-3 175B 训练预算", "prices.currency": "CNY", "prices.fx_rates": {"USD": 7.1},
        "staffing": [{"role": "算法工程师", "headcount": 2, "monthly_cost": 60000}], "language": lang}), catalog))
    stack = re.search(r"body \{ font: [^;]*;", html, re.S).group()
    if family not in stack:
        require_tool(None, f"a CJK font named in the report's font stack (fontconfig matched {family!r})",
                     "apt-get install -y fonts-noto-cjk")
    pdf = _pdf_of(tmp_path, html)
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, timeout=60).stdout
    assert "训练预算" in text
    if lang == "zh":
        assert '<html lang="zh-CN">' in html
        for words in ("提请决策事项", "主要风险", "批准人", "概览", "故障预算", "2027年1月4日"):
            assert words in text, words


@pytest.mark.parametrize("value, unit, shown", [
    (2e11, "tokens", "200B"), (1.5e13, "tokens", "15T"), (72.7e9, "parameters", "72.7B"),
    (31_923_750, "GPU-h", "31,923,750"), (3.65e25, "FLOPs", "3.65e+25"), (0.465, "", "0.47"),
    (512, "GPUs", "512"), (0.004, "", "0.004")])
def test_a_figure_is_written_as_a_reader_reads_it(value, unit, shown):
    """Given a 200B-token continued pretraining, the reports say "200B tokens", as the scenario
    does, not "2e+11" (which finance reads as a typo); whole digits up to 10^15, FLOPs beyond."""
    from budget.render.words import figure
    assert figure(value, unit) == shown


def test_no_report_figure_is_in_e_notation_below_a_quadrillion(seed_h100):
    """The seed's report (175B parameters, 3T tokens, tens of millions of GPU-hours): only
    figures of 10^15 and more (FLOPs) may be written in E notation."""
    md = render_markdown(seed_h100)
    small = [m for m in re.findall(r"\b\d(?:\.\d+)?e\+(\d\d)\b", md) if int(m) < 15]
    assert not small
