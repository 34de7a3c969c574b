"""The decision page: the first printed page of the report, one A4 and one Letter page."""

from __future__ import annotations

import subprocess

import pytest

from budget.plan.options import recommended
from budget.render.report import render_html, render_markdown
from support import SCENARIOS, plan_of, raw, require_tool, with_changes
from test_report import _pdf_of

PAPERS = ("A4", "letter")


@pytest.fixture(scope="module")
def options_plan(catalog):
    from dataclasses import replace

    from budget.plan.options import build_option_plans
    plans = build_option_plans(SCENARIOS / "gpt3-175b-options.yaml", catalog)
    return replace(plans[0][1], options=tuple(plans[1:]))


def _pages_text(pdf) -> list[str]:
    tool = require_tool(subprocess.run(["which", "pdftotext"], capture_output=True, text=True).stdout.strip(),
                        "pdftotext (poppler-utils)", "apt-get install -y poppler-utils")
    text = subprocess.run([tool, "-layout", str(pdf), "-"], capture_output=True, text=True).stdout
    return text.split("\f")


@pytest.mark.office
@pytest.mark.parametrize("paper", PAPERS)
@pytest.mark.parametrize("which", ["seed", "options"])
def test_the_decision_page_prints_on_one_page(tmp_path, seed_h100, options_plan, paper, which):
    """Everything of the decision — the ask, the options, the range, the risks, the assumptions
    and the sign-off — is on page 1; the report proper starts on page 2."""
    plan = seed_h100 if which == "seed" else options_plan
    pages = _printed(tmp_path, plan, paper)
    first = pages[0]
    for words in ("Decision asked for", "Range of the total", "Top risks", "Key assumptions",
                  "Approved by", "Scenario version"):
        assert words in first, words
    assert "At a glance" not in first
    assert "At a glance" in "".join(pages[1:3])


def test_the_recommendation_is_the_compare_sheets(options_plan):
    """The cheapest option whose checks all pass: the seed's pinned layout fails its memory
    check, so the search-chosen layout on the same 512 H100 is recommended."""
    plans = [(options_plan.scenario.name, options_plan), *options_plan.options]
    best = recommended([p.values for _, p in plans])
    assert plans[best][0] == "512 H100, layout left to the search"
    text = render_markdown(options_plan)
    assert "Recommended: **512 H100, layout left to the search**" in text
    assert text.index("## Decision asked for") < text.index("## Status:")


def test_the_markdown_leads_with_the_same_decision(seed_h100):
    text = render_markdown(seed_h100)
    head = text[:text.index("## Status:")]
    assert "Approve 6,465,177 USD, the P80 of the total, to train" in head
    assert "The point estimate, 4,979,847 USD, sits at P47 (P50" in head
    assert "- Model error (step time):" in head and "- GPU rental price:" in head and "- Check failing: Layout does not fit in memory" in head
    assert "| Prepared by | Reviewed by | Approved by | Date |" in head


def test_risks_are_the_largest_swings_then_the_checks(seed_h100):
    from budget.render.decision import decision
    from budget.render.report import status
    from budget.plan.plan import scenario_digest
    d = decision(seed_h100, status(seed_h100), scenario_digest(seed_h100))
    swings = [r for r in d["risks"] if not r.startswith(("Check", "Warning"))]
    assert [r.split(":")[0] for r in swings] == ["Model error (step time)", "GPU rental price", "Training tokens",
                                                 "Setup", "Staffing cost"]
    assert d["digest"] == scenario_digest(seed_h100)


def test_a_plan_without_options_has_no_recommendation_line(catalog):
    plan = plan_of(raw(SCENARIOS / "llama3-70b-h100-deadline.yaml"), catalog, "llama")
    text = render_markdown(plan)
    assert "Recommended" not in text[:text.index("## Status:")]
    assert "**Status: All checks pass**" in text


def test_spend_by_quarter_sums_the_cashflow_months(seed_h100):
    """The quarters are the plan's months (the Cashflow sheet's) summed; together they are the
    total. No workbook is written for them."""
    from budget.render.decision import quarters
    q = quarters(seed_h100)
    assert [x["label"] for x in q][:3] == ["2027 Q1", "2027 Q2", "2027 Q3"]
    assert sum(x["value"] for x in q) == pytest.approx(seed_h100.total_cost, rel=1e-12)
    months = seed_h100.values["cashflow_month_total"]
    assert q[0]["value"] == pytest.approx(sum(months[:3]), rel=1e-12)       # January to March 2027
    assert "Spend by quarter: 2027 Q1 " in render_markdown(seed_h100)


@pytest.fixture(scope="module")
def dearer_option_plan(catalog):
    """The options scenario without its last option (the seed's 512 H100 with the layout left to
    the search): the base's pinned layout and the 256-GPU option fail their memory check, so the
    cheapest option that passes is 1,024 H100 at TP 4 x PP 16, dearer than the base."""
    from dataclasses import replace

    from budget.plan.options import build_option_plans
    path = SCENARIOS / "gpt3-175b-options.yaml"
    data = raw(path)
    plans = build_option_plans(with_changes(data, {"options": data["options"][:-1]}), catalog, path=path)
    return replace(plans[0][1], options=tuple(plans[1:]))


def _decision_of(plan):
    from budget.plan.plan import scenario_digest
    from budget.render.decision import decision
    from budget.render.report import status
    return decision(plan, status(plan), scenario_digest(plan))


def test_the_decision_page_is_the_recommended_options_own_plan(dearer_option_plan):
    """Given a base that fails its memory check and 1,024 H100 recommended, every figure of the
    page is that option's: the ask and the range from its own what-ifs (not the base's range
    scaled by the ratio of the totals), the quarters of its own months, which add up to its
    total, its end date, its GPUs; the base is one row of the options table."""
    from budget.plan.sensitivity import cases, range_figures
    from budget.plan.options import chosen_plan
    from budget.render.decision import quarters
    from budget.render.words import Words

    base = dearer_option_plan
    index, name, option = chosen_plan(base)
    assert (index, name) == (2, "1,024 H100 (TP 4 x PP 16 x DP 16)")
    assert (option.gpu_count, base.gpu_count) == (1024, 512)
    d, money = _decision_of(base), Words("en").money
    own, theirs = range_figures(option, cases(option)), range_figures(base, cases(base))
    assert d["range"]["ask"] == money(own["total_cost_ask"], "USD")
    assert d["range"]["p10"] == money(own["total_cost_p10"], "USD")
    assert d["range"]["p90"] == money(own["total_cost_p90"], "USD")
    assert d["range"]["point"] == money(option.total_cost, "USD")
    # the option's own range differs from the base's scaled by the ratio of the totals
    scaled = theirs["total_cost_p90"] * option.total_cost / base.total_cost
    assert abs(own["total_cost_p90"] - scaled) > 1000
    # the quarters are the option's months: they add up to its total, not the base's
    q = quarters(option)
    assert sum(x["value"] for x in q) == pytest.approx(option.total_cost, rel=1e-12)
    assert [x["amount"] for x in d["quarters"]] == [money(x["value"], "USD") for x in q]
    assert sum(x["value"] for x in quarters(base)) != pytest.approx(option.total_cost, rel=1e-6)
    # what the page says: the option's ask, GPUs and end; no risk is the base's failing check
    assert d["ask"].startswith(f"Approve {money(own['total_cost_ask'], 'USD')}, the P80 of the total")
    assert "option 1,024 H100 (TP 4 x PP 16 x DP 16): 1,024 × NVIDIA H100" in d["ask"]
    assert Words("en").date(option.values["project_end"]) in d["ask"]
    assert not any(r.startswith("Check failing") for r in d["risks"])
    assert d["approvable"] and not d["base_chosen"]
    text = render_markdown(base)
    head = text[:text.index("## Status:")]
    assert "Base plan:" not in head
    assert "Recommended: **1,024 H100 (TP 4 x PP 16 x DP 16)**" in head
    assert money(theirs["total_cost_ask"], "USD") not in head        # the base's ask nowhere on it
    assert money(theirs["total_cost_p50"], "USD") not in head        # nor its P50
    assert head.count(money(base.total_cost, "USD")) == 1            # the base: its row, once
    # the report proper (after the page) is still the base plan's
    assert "**Status: NOT APPROVABLE: 1 check fails**" in text or "## Status: NOT APPROVABLE" in text


def test_a_base_that_is_recommended_keeps_its_page(catalog):
    """The bundled searched example: the base passes and is the cheapest, so the page is the
    base's own, as for a scenario without options (the figures of the seed's page)."""
    from budget.plan.options import plan_file
    from budget.plan.options import chosen_plan

    plan = plan_file(SCENARIOS / "gpt3-175b-h100-searched.yaml", catalog)
    assert chosen_plan(plan)[0] == 0
    d = _decision_of(plan)
    assert d["base_chosen"] and d["ask"].startswith("Approve 6,465,177 USD, the P80 of the total, to train")
    assert "**Base plan: All checks pass** · Recommended:" in render_markdown(plan)


@pytest.fixture(scope="module")
def options_plan_zh(catalog):
    """The options scenario with `language: zh`."""
    from dataclasses import replace

    from budget.plan.options import build_option_plans
    path = SCENARIOS / "gpt3-175b-options.yaml"
    plans = build_option_plans(with_changes(raw(path), {"language": "zh"}), catalog, path=path)
    return replace(plans[0][1], options=tuple(plans[1:]))


@pytest.mark.office
@pytest.mark.parametrize("paper", PAPERS)
def test_the_chinese_decision_page_prints_on_one_page(tmp_path, options_plan_zh, paper):
    pages = _printed(tmp_path, options_plan_zh, paper)
    first = pages[0]
    for words in ("提请决策事项", "总计的区间", "按季度支出", "主要风险", "关键假设", "批准人", "场景版本"):
        assert words in first, words
    assert "概览" not in first
    assert "概览" in "".join(pages[1:3])
    assert 2 <= len(pages) - (pages[-1].strip() == "") <= 7


def test_the_chinese_decision_page_says_the_same_in_chinese(options_plan_zh):
    """The ask, the recommendation, the options, the range, the quarters and the risks in Chinese,
    with the same figures as the English page."""
    text = render_markdown(options_plan_zh)
    head = text[:text.index("## 状态：")]
    # the recommended option passes: the page is its own, the failing base one row of the table
    assert "基准计划" not in head
    assert ("批准 6,465,177 USD（总计的 P80），用于训练 "
            "GPT-3 175B on 512 H100 (seed 002 worked example)，采用方案 512 H100, layout left to the search："
            "512 × NVIDIA H100 80GB SXM5，2027年1月4日开始，2027年10月12日结束。点估计 4,979,847 USD 位于 P47"
            "（P50 5,101,399 USD，P90 7,317,513 USD）；20% 固定预留金（5,975,816 USD）可覆盖 P71，不另行计入。") in head
    assert "\n推荐：**512 H100, layout left to the search**（所有校验均通过的方案中成本最低者）" in head
    assert "| 方案 | 加速卡 | 训练天数 | 项目结束 | 总计 | 校验 |" in head
    assert "| 2027年10月12日 | 4,979,847 USD | 1 项未通过：" in head and "| 通过 |" in head
    assert ("（点估计 4,979,847 USD，位于 P47；申请金额 P80：6,465,177 USD）；项目结束日期 P90 2027年12月18日；"
            "训练天数 P10 103.5，P50 146.3，P90 206.7；计费卡时 P10 1,455,493，P50 2,056,848，P90 2,906,661。") in head
    assert "按季度支出：2027年第1季度 " in head
    assert "- GPU 租赁价格：取低值时 −699,727 USD，取高值时 +1,632,696 USD" in head
    assert "- 校验未通过：" not in head and "| 编制人 | 审核人 | 批准人 | 日期 |" in head
    for english in ("Approve", "Recommended", "Top risks", "at its low value", "Prepared by"):
        assert english not in head, english


def _printed(tmp_path, plan, paper: str) -> list[str]:
    """The text of each page Chromium prints of the plan's HTML report on `paper`."""
    return _pages_text(_pdf_of(tmp_path, render_html(plan), paper))


def test_the_command_line_states_each_options_own_ask(options_plan):
    """An option's line on the command line: its own ask and where its own total sits (1,024 H100:
    7,106,785 USD at P80, its total at P44), not the base's ask scaled by the totals (7,084,160)."""
    from budget.cli.app import _summary

    title, option = options_plan.options[1]
    assert title == "1,024 H100 (TP 4 x PP 16 x DP 16)"
    assert "total 5,456,622 USD; ask P80 7,106,785 USD (the total at P44)" in _summary(option)


@pytest.mark.parametrize("deadline, met", [("2028-06-30", True), ("2027-07-01", False)])
def test_a_deadline_date_is_stated_with_its_verdict_under_the_ask(catalog, deadline, met):
    """Given seed 002 with a deadline date, the decision page says, under the ask, the date, the
    end of training at the approval percentile (the Summary's and the check's figure) and whether
    it is met, in the Markdown and the HTML alike; without a deadline it says nothing of one."""
    from budget.core.dates import from_serial
    plan = plan_of(with_changes(raw(SCENARIOS / "gpt3-175b-h100.yaml"), {"schedule.deadline": deadline}), catalog)
    assert (plan.values["check_meets_deadline_date"] == 0) is met
    end = from_serial(plan.values["deadline_end_at_approval"]).isoformat()
    line = (f"Deadline {deadline} for the end of training: {'met' if met else 'MISSED'}; "
            f"at P80 of the training days, training ends on {end}.")
    text = render_markdown(plan)
    assert line in text[text.index("Approve "):text.index("**Status:")]
    html = render_html(plan)
    assert f'<p class="{"ok" if met else "bad"}">{line}</p>' in html
    assert "Deadline " not in render_markdown(plan_of(raw(SCENARIOS / "gpt3-175b-h100.yaml"), catalog))[:2000]


def test_the_chinese_decision_page_states_the_deadline_in_chinese(catalog):
    """The same line with `language: zh`, the end of the project this time."""
    from budget.render.words import Words
    plan = plan_of(with_changes(raw(SCENARIOS / "gpt3-175b-h100.yaml"),
                                {"language": "zh", "schedule.deadline": "2028-06-30",
                                 "schedule.deadline_applies_to": "project_end"}), catalog)
    words = Words("zh")
    end, deadline = words.date(plan.values["deadline_end_at_approval"]), words.date(plan.values["deadline_date"])
    assert deadline == "2028年6月30日"
    assert f"截止日期 {deadline}（项目结束）：可满足；按训练天数 P80 计，项目于 {end} 结束。" in render_markdown(plan)
