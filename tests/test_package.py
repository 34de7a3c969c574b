"""The approval package: `trainbudget package A.yaml B.yaml -o DIR` writes every workbook and
report, NAME.plan.json with its published JSON Schema, index.html and SHA256SUMS; the same
inputs give the same bytes."""

from __future__ import annotations

import hashlib
import html.parser
import json
import shutil
import subprocess
import sys
import urllib.parse
from pathlib import Path

import jsonschema
import pytest
import yaml

from budget.cli.app import main
from budget.cli.output import Output
from budget.cli.package import (PLAN_FORMAT, plan_schema, sha256sums)
from budget.model.cashflow import cashflow_names
from support import ROOT, SCENARIOS, SEED_A100, SEED_H100, raw

OPTIONS = SCENARIOS / "gpt3-175b-options.yaml"
SCENARIO_FILES = [OPTIONS, SEED_A100]
STEMS = [p.stem for p in SCENARIO_FILES]


def _package(outdir: Path, *paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "generate.py"), "package", *map(str, paths),
                           "-o", str(outdir)], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def package_dir(tmp_path_factory):
    outdir = tmp_path_factory.mktemp("package")
    proc = _package(outdir, *SCENARIO_FILES)
    assert proc.returncode == 0, proc.stderr
    return outdir


def _files(outdir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(outdir.iterdir())
            if p.is_file() and not p.name.startswith(".")}


def _plan(outdir: Path, stem: str) -> dict:
    return json.loads((outdir / f"{stem}.plan.json").read_text(encoding="utf-8"))


def test_package_holds_every_file(package_dir):
    expected = {f"{stem}{suffix}" for stem in STEMS
                for suffix in (".xlsx", ".md", ".html", ".plan.json")}
    expected |= {"plan.schema.json", "index.html", "SHA256SUMS"}
    assert set(_files(package_dir)) == expected


def test_sha256sum_verifies_the_package(package_dir):
    proc = subprocess.run(["sha256sum", "-c", "--strict", "SHA256SUMS"], cwd=package_dir,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    listed = {line.rsplit(": ", 1)[0] for line in proc.stdout.splitlines()}
    assert listed == set(_files(package_dir)) - {"SHA256SUMS"}   # every other file, no more


def test_sha256sum_notices_a_changed_file(package_dir, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(package_dir, copy)
    (copy / f"{STEMS[0]}.md").write_text("changed\n", encoding="utf-8")
    proc = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=copy, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode != 0 and f"{STEMS[0]}.md: FAILED" in proc.stdout


def test_two_runs_give_identical_bytes(package_dir, tmp_path):
    again = tmp_path / "again"
    assert main(["package", *map(str, SCENARIO_FILES), "-o", str(again), "-q"]) == 0
    assert _files(again) == _files(package_dir)


def test_rerun_into_the_same_folder_is_accepted_and_unchanged(package_dir, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(package_dir, copy)
    before = _files(copy)
    assert main(["package", *map(str, SCENARIO_FILES), "-o", str(copy), "-q"]) == 0
    assert _files(copy) == before


def test_every_plan_json_validates_against_the_published_schema(package_dir):
    schema = json.loads((package_dir / "plan.schema.json").read_text(encoding="utf-8"))
    assert schema == plan_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for stem in STEMS:
        errors = sorted(validator.iter_errors(_plan(package_dir, stem)), key=str)
        assert not errors, [e.message for e in errors[:5]]


def test_schema_rejects_a_broken_plan(package_dir):
    validator = jsonschema.Draft202012Validator(plan_schema())
    plan = _plan(package_dir, STEMS[1])
    plan["headline"]["gpu_count"] = "many"
    del plan["checks"]
    assert len(list(validator.iter_errors(plan))) == 2


def test_plan_json_has_every_input_with_its_source_and_every_output(package_dir, catalog, seed_a100):
    doc = _plan(package_dir, "gpt3-175b-a100")
    assert doc["format"] == PLAN_FORMAT
    left_out = cashflow_names(seed_a100.model)     # the Cashflow sheet's month and year tables
    assert set(doc["inputs"]) == set(seed_a100.inputs) - left_out
    for name, iv in seed_a100.inputs.items():
        if name in left_out:
            continue
        entry = doc["inputs"][name]
        assert entry["source"] == iv.source
        value = list(iv.value) if isinstance(iv.value, tuple) else iv.value
        assert entry["value"] == value, name
    outputs = {k: v for k, v in seed_a100.values.items() if k not in seed_a100.inputs and k not in left_out}
    assert set(doc["outputs"]) == set(outputs)
    for name, value in outputs.items():
        got = doc["outputs"][name]["value"]
        assert got == (list(value) if isinstance(value, tuple) else value), name
    assert doc["inputs"]["gpu_count"]["source"].startswith("scenario gpt3-175b-a100.yaml: hardware.gpu_count")
    assert doc["outputs"]["total_cost"]["unit"] == "currency"
    assert doc["outputs"]["project_end"]["date"] == doc["headline"]["project_end"]
    assert doc["headline"]["gpu_count"] == 1024
    assert doc["headline"]["train_days"] == seed_a100.train_days          # floats as repr, exactly
    assert doc["headline"]["total_cost"] == seed_a100.total_cost
    assert doc["files"] == {"workbook": "gpt3-175b-a100.xlsx", "markdown": "gpt3-175b-a100.md",
                            "html": "gpt3-175b-a100.html", "plan": "gpt3-175b-a100.plan.json"}
    assert doc["options"] == []


def test_plan_json_checks_pass_and_fail_with_their_sentence(package_dir, seed_h100):
    doc = _plan(package_dir, "gpt3-175b-options")
    checks = {c["name"]: c for c in doc["checks"]}
    model = seed_h100.model
    assert list(checks) == [i.name for i in (*model.checks(), *model.warnings())]
    memory = checks["check_memory_fits"]       # the seed's pinned layout does not fit 80 GB
    assert (memory["kind"], memory["passed"], memory["status"]) == ("check", False, "fail")
    assert memory["sentence"].startswith("Layout does not fit in memory: 89.1 > 72")
    assert f"check failing: {memory['sentence']}. {memory['fix']}" in seed_h100.warnings
    staff = checks["warn_staff_months"]
    assert (staff["kind"], staff["status"]) == ("warning", "warn")
    assert f"warning: {staff['sentence']}. {staff['fix']}" in seed_h100.warnings
    passing = checks["check_layout_divides"]
    assert passing["passed"] and passing["status"] == "pass" and passing["sentence"] == passing["label"]
    assert doc["headline"]["status"] == "fail"
    assert doc["headline"]["checks_failing"] == ["check_memory_fits"]


def test_plan_json_lists_the_options_headline_figures(package_dir):
    doc = _plan(package_dir, "gpt3-175b-options")
    options = doc["options"]
    assert [o["name"] for o in options] == [raw(OPTIONS)["name"]] + [o["name"] for o in raw(OPTIONS)["options"]]
    assert [o["base"] for o in options] == [True, False, False, False, False]
    assert [round(o["train_days"], 1) for o in options] == [158.2, 316.5, 79.1, 254.3, 158.2]
    assert [o["gpu_count"] for o in options] == [512, 256, 1024, 1024, 512]
    assert options[3]["accelerator"] == "nvidia_a100_80gb_sxm"
    assert options[0]["total_cost"] == doc["headline"]["total_cost"]


def test_plan_json_carries_the_decisions_plan(package_dir, catalog):
    """Issue 29: plan.json says which plan the decision asks for and why, its range and its monthly
    spend — the decision page's figures — and every option's own range. Given the options example
    (the base's pinned layout fails its memory check), the search-chosen layout on 512 H100 is
    recommended; its range and ask are the report's."""
    from budget.plan.options import plan_file
    from budget.plan.sensitivity import cases, range_figures
    from budget.render.report import report_context
    from budget.render.words import Words

    doc = _plan(package_dir, "gpt3-175b-options")
    r = doc["recommendation"]
    assert (r["option"], r["index"], r["base"], r["rule"]) == ("512 H100, layout left to the search", 4, False,
                                                               "cheapest_passing")
    assert r["reason"] == "Recommended: 512 H100, layout left to the search (the cheapest option whose checks all pass)"
    assert [o["recommended"] for o in doc["options"]] == [False, False, False, False, True]
    assert doc["range"] == doc["options"][4]["range"] and r["ask"] == doc["range"]["ask"]
    # the page's figures: the report's decision page says the same range and ask
    plan = plan_file(OPTIONS, catalog)
    page, money = report_context(plan)["decision"], Words("en").money
    for key, figure in (("p10", "total_cost_p10"), ("p50", "total_cost_p50"), ("p90", "total_cost_p90"),
                        ("ask", "ask"), ("point", "total_cost")):
        assert page["range"][key] == money(doc["range"][figure], "USD"), key
    assert page["range"]["end_p90"] == doc["range"]["project_end_p90"]
    # the monthly cash flow is the recommended plan's: it adds up to its total; the quarters of the page
    months = doc["cashflow"]
    assert months[0]["month"] == "2027-01" and months[-1]["month"] == "2027-09"
    assert sum(m["total"] for m in months) == pytest.approx(r["total_cost"], rel=1e-12)
    assert months[-1]["cumulative"] == pytest.approx(r["total_cost"], rel=1e-12)
    assert len(page["quarters"]) == 3
    # every option its own range, computed from its own plan (not the base's scaled)
    plans = [plan, *(p for _, p in plan.options)]
    for entry, p in zip(doc["options"], plans):
        own = range_figures(p, cases(p))
        assert entry["range"]["total_cost_p90"] == own["total_cost_p90"] == pytest.approx(own["total_cost_p90"])
        assert entry["ask"] == entry["range"]["ask"] == own["total_cost_ask"]
    base, dearer = doc["options"][0], doc["options"][2]          # 1,024 H100: its own spread
    scaled = base["range"]["total_cost_p90"] * dearer["total_cost"] / base["total_cost"]
    assert abs(dearer["range"]["total_cost_p90"] - scaled) > 1000


def test_plan_json_of_a_scenario_without_options_decides_for_itself(package_dir):
    doc = _plan(package_dir, "gpt3-175b-a100")
    r = doc["recommendation"]
    assert (r["index"], r["base"], r["rule"], r["reason"]) == (0, True, "no_options", "")
    assert r["option"] == doc["scenario"]["name"] and r["ask"] == doc["headline"]["ask"]
    assert doc["range"]["ask"] == doc["headline"]["ask"] and doc["range"]["total_cost"] == doc["headline"]["total_cost"]
    assert sum(m["total"] for m in doc["cashflow"]) == pytest.approx(doc["headline"]["total_cost"], rel=1e-12)


def test_index_names_the_recommended_option(package_dir):
    text = " ".join(" ".join(_index(package_dir).text).split())
    assert "Recommended: 512 H100, layout left to the search: the ask (P80 of its own total) 6,465,177 USD" in text
    assert "total 4,979,847 USD (point estimate); the decision page is its own." in text
    assert "512 H100, layout left to the search (recommended)" in text


class _Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs, self.ids, self.text = [], set(), []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "a" and "href" in attrs:
            self.hrefs.append(attrs["href"])
        if "id" in attrs:
            self.ids.add(attrs["id"])

    def handle_data(self, data):
        self.text.append(data)


def _index(outdir: Path) -> _Links:
    parser = _Links()
    parser.feed((outdir / "index.html").read_text(encoding="utf-8"))
    return parser


def test_index_links_resolve_to_files_in_the_package(package_dir):
    links = _index(package_dir)
    files = set(_files(package_dir))
    linked = set()
    for href in links.hrefs:
        if href.startswith("#"):
            assert href[1:] in links.ids, href
            continue
        parsed = urllib.parse.urlparse(href)
        assert not parsed.scheme and not parsed.netloc, href   # self-contained: nothing fetched
        name = urllib.parse.unquote(parsed.path)
        assert (package_dir / name).is_file(), href
        linked.add(name)
    assert linked == files - {"index.html"}       # every workbook, report and plan is linked


def test_index_shows_each_scenarios_headline(package_dir):
    text = " ".join(" ".join(_index(package_dir).text).split())
    for stem in STEMS:
        doc = _plan(package_dir, stem)
        h = doc["headline"]
        assert doc["scenario"]["name"] in text
        assert f"{h['train_days']:,.1f}" in text and f"{h['total_cost']:,.0f} USD" in text
        assert h["accelerator_name"] in text and f"{h['gpu_count']:,}" in text
        # the GPU cluster's line of the total (the billed rental), not the memo of GPU-hours x rate
        assert f"GPU cluster (billed rental, or the owned cluster's cost) {h['cluster_cost']:,.0f} USD" in text
        assert h["cluster_cost"] > h["rental_cost"] and f"{h['rental_cost']:,.0f} USD" not in text
    assert "1 failing" in text and "2 warnings" in text
    assert "256 H100 (TP 4 x PP 8 x DP 8)" in text and "316.5" in text


def test_index_escapes_scenario_text(tmp_path):
    data = raw(SEED_H100)
    data["name"] = "GPT <script>alert(1)</script> & co"
    data["description"] = 'A "quoted" <b>bold</b> claim'
    path = tmp_path / "odd name & <x>.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    assert main(["package", str(path), "-o", str(tmp_path / "out"), "-q"]) == 0
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert "<script>" not in page and "<b>" not in page
    assert "GPT &lt;script&gt;alert(1)&lt;/script&gt; &amp; co" in page
    assert 'href="odd%20name%20%26%20%3Cx%3E.xlsx"' in page
    assert subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=tmp_path / "out",
                          capture_output=True, timeout=60).returncode == 0


def test_sha256sums_format_and_escaping():
    outputs = [Output(Path("b.txt"), b"b"), Output(Path("a\\b.txt"), b"a")]
    text = sha256sums(outputs).decode()
    digest_a, digest_b = hashlib.sha256(b"a").hexdigest(), hashlib.sha256(b"b").hexdigest()
    assert text == f"\\{digest_a}  a\\\\b.txt\n{digest_b}  b.txt\n"


def test_bad_scenario_writes_nothing(tmp_path, capsys):
    data = raw(OPTIONS)
    data["options"][1]["hardware"]["gpu_count"] = -1
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert main(["package", str(SEED_A100), str(bad), "-o", str(tmp_path / "out")]) == 2
    assert "bad.yaml: options[1].hardware.gpu_count:" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_scenario_named_index_is_refused(tmp_path, capsys):
    index = tmp_path / "index.yaml"
    index.write_text(SEED_A100.read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["package", str(index), "-o", str(tmp_path / "out")]) == 2
    assert "index.html" in capsys.readouterr().err


def test_same_file_name_twice_is_refused(tmp_path, capsys):
    (tmp_path / "x").mkdir()
    copy = tmp_path / "x" / SEED_A100.name
    copy.write_text(SEED_A100.read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["package", str(SEED_A100), str(copy), "-o", str(tmp_path / "out")]) == 2
    assert "share this file name" in capsys.readouterr().err


@pytest.mark.slow
def test_a_reviewer_changed_file_is_not_overwritten(package_dir, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(package_dir, copy)
    (copy / "index.html").write_text("mine\n", encoding="utf-8")
    assert main(["package", *map(str, SCENARIO_FILES), "-o", str(copy)]) == 2
    assert "index.html: changed since trainbudget wrote it" in capsys.readouterr().err
    assert (copy / "index.html").read_text(encoding="utf-8") == "mine\n"
    assert main(["package", *map(str, SCENARIO_FILES), "-o", str(copy), "--force", "-q"]) == 0
    assert _files(copy) == _files(package_dir)


def test_trainbudget_package_entry_point_help():
    exe = shutil.which("trainbudget")
    if exe is None:
        pytest.skip("the trainbudget script is not installed")
    proc = subprocess.run([exe, "package", "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "SHA256SUMS" in proc.stdout


# --- the package in Chinese ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def package_zh(tmp_path_factory):
    outdir = tmp_path_factory.mktemp("package-zh")
    proc = subprocess.run([sys.executable, str(ROOT / "generate.py"), "package", *map(str, SCENARIO_FILES),
                           "--lang", "zh", "-o", str(outdir)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return outdir, proc.stdout


@pytest.mark.slow
def test_the_chinese_package_index_and_summary(package_zh):
    """--lang zh: the index declares zh-CN and is Chinese (dates 2027年10月12日, kept on one line in
    their column), and so are the command's summary lines."""
    from budget.render.report import keep_together
    outdir, stdout = package_zh
    page = (outdir / "index.html").read_text(encoding="utf-8")
    assert page.startswith('<!DOCTYPE html>\n<html lang="zh-CN">')
    assert "<h1>训练预算审批材料包</h1>" in page and "<h2>场景概览</h2>" in page
    assert f"<td>{keep_together('2027年10月12日')}</td>" in page
    text = " ".join(" ".join(_index(outdir).text).split())
    assert "项目 2027年1月4日至2027年10月12日" in text and "总计 4,979,847 USD（点估计），申请金额（总计的 P80） 6,465,177 USD" in text
    for english in ("Scenarios at a glance", "training days", "failing", "Files:"):
        assert english not in page, english
    assert ("gpt3-175b-options：512 x NVIDIA H100 80GB SXM5，训练 158.2 天，总计 4,979,847 USD，申请 P80 6,465,177 USD，"
            "校验未通过" in stdout)
    assert "已将 11 个文件写入" in stdout
    assert subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=outdir, capture_output=True,
                          timeout=60).returncode == 0


def test_chinese_plan_json_is_the_same_data_with_chinese_labels(package_dir, package_zh):
    """plan.json is data: the same keys and values in every language, only its labels and
    sentences follow the language; it validates against the same schema."""
    outdir, _ = package_zh
    schema = json.loads((outdir / "plan.schema.json").read_text(encoding="utf-8"))
    assert (outdir / "plan.schema.json").read_bytes() == (package_dir / "plan.schema.json").read_bytes()
    for stem in STEMS:
        en, zh = _plan(package_dir, stem), _plan(outdir, stem)
        jsonschema.validate(zh, schema)
        assert zh["headline"] == en["headline"] and zh["options"] == en["options"]
        assert {k: v["value"] for k, v in zh["outputs"].items()} == {k: v["value"] for k, v in en["outputs"].items()}
        assert [(c["name"], c["status"]) for c in zh["checks"]] == [(c["name"], c["status"]) for c in en["checks"]]
        assert zh["outputs"]["total_cost"]["label"] != en["outputs"]["total_cost"]["label"]


def test_the_package_command_speaks_chinese(tmp_path, capsys):
    from budget.cli.package import parser
    assert "生成审批材料包" in parser("zh").format_help()
    with pytest.raises(SystemExit):
        main(["package", "--lang", "zh", "--help"])
    assert "生成审批材料包" in capsys.readouterr().out
    index = tmp_path / "index.yaml"
    index.write_text(SEED_A100.read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["package", str(index), "--lang", "zh", "-o", str(tmp_path / "out")]) == 2
    assert "与材料包的索引页重名" in capsys.readouterr().err
