"""The command line: outputs, exact error messages, exit status 2, nothing half-written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from budget import __version__
from budget.cli.app import main
from support import ROOT, SEED_H100

SEED_TEXT = SEED_H100.read_text(encoding="utf-8")


def _bad(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


BAD_INPUTS = {
    "broken-yaml": (
        "name: broken\nmodel: [unclosed\ndata:\n  train_tokens: 3T\n",
        "error: {f}: line 3, column 5: this is not valid YAML: expected ',' or ']', but got ':' "
        "(while parsing a flow sequence at line 2, column 8)\n"
        "  fix: check the indentation and quoting on that line; text containing ': ' or starting "
        "with a special character needs quotes\n"),
    "unknown-key": (
        SEED_TEXT.replace("  gpu_count: 512", "  gpu_cont: 512"),
        "error: {f}: hardware.gpu_cont: unknown key\n"
        "  fix: did you mean 'gpu_count'? remove or rename it; allowed keys here: accelerator, "
        "gpu_count, deadline_days, peak_tflops, mfu, effective_tflops, baseline_mfu, hfu, "
        "flops_basis, precision, mfu_peak, usable_memory_fraction\n"),
    "negative-tokens": (
        SEED_TEXT.replace("  train_tokens: 3T ", "  train_tokens: -3e12 "),
        "error: {f}: data.train_tokens: should be greater than or equal to 1000000 (got '-3e12')\n"
        "  fix: set data.train_tokens to a number at least 1000000\n"),
    "tp-pp-not-dividing": (
        SEED_TEXT.replace("  gpu_count: 512", "  gpu_count: 500"),
        "error: {f}: parallelism.pp: tp 4 x pp 8 = 32 does not divide gpu_count 500, so the "
        "data-parallel degree would not be whole\n"
        "  fix: choose a gpu_count that is a multiple of 32, or change tp or pp\n"),
    "unknown-accelerator": (
        SEED_TEXT.replace("accelerator: nvidia_h100_sxm", "accelerator: nvidia_h1000"),
        "error: {f}: hardware.accelerator: unknown accelerator 'nvidia_h1000'\n"
        "  fix: did you mean 'nvidia_h100_sxm'? use an id from catalogs/accelerators.yaml: "
        "nvidia_h100_sxm, nvidia_h200_sxm, nvidia_h800_sxm, nvidia_a100_80gb_sxm, "
        "nvidia_a100_40gb_sxm, nvidia_a800_sxm, nvidia_b100, nvidia_b200, nvidia_gb200, "
        "amd_mi300x, amd_mi325x, huawei_ascend_910b, nvidia_h20, google_tpu_v4, google_tpu_v5p, "
        "google_tpu_v5e, google_tpu_v6e, aws_trainium2, intel_gaudi3, nvidia_b300, nvidia_gb300, "
        "amd_mi355x\n"),
    "formula-name": (
        SEED_TEXT.replace("name: GPT-3 175B on 512 H100", "name: =HYPERLINK(\"http://x\")"),
        "error: {f}: name: text may not start with '=': a spreadsheet would read it as a formula\n"
        "  fix: remove the leading '=' or start the text with a letter or digit\n"),
}


# Refusals of the planner, each with its ways out (issue 13 item 4): found and costed by the
# planner itself (tests/test_plan.py plans each suggestion).
_PLAIN = "name: refused\nmodel:\n  preset: {preset}\ndata:\n  train_tokens: {tokens}\n{batch}" \
         "hardware:\n  accelerator: nvidia_h100_sxm\n  {count}\nprices:\n  currency: USD\n  per_gpu_hour: 2.0\n"
REFUSALS = {
    "batch-does-not-split": (
        _PLAIN.format(preset="llama3-8b", tokens="100B", batch="  global_batch_sequences: 1001\n",
                      count="gpu_count: 512"),
        "error: {f}: hardware.gpu_count: no layout splits 512 GPUs: TP x PP must divide the GPU count "
        "and DP x micro-batch must divide the global batch\n"
        "  fix: set data.global_batch_sequences to 1,000 (8,192,000 tokens per step) or 1,002 "
        "(8,208,384 tokens per step), the nearest batches that split over 512 GPUs, or "
        "hardware.gpu_count to 448 or 616, the nearest whole-node counts that split the batch of "
        "1,001 sequences\n"),
    "no-layout-fits": (
        _PLAIN.format(preset="gpt3-175b", tokens="300B", batch="", count="gpu_count: 8"),
        "error: {f}: hardware.gpu_count: no layout of 8 GPUs fits in memory: the leanest (TP 8 × PP 1 "
        "× DP 1, micro-batch 1, no ZeRO, full recomputation, sequence parallel) needs 350.6 GB of "
        "72.0 GB usable\n"
        "  fix: ways out, cheapest first: 48 GPUs (hardware.gpu_count: 48), the fewest whole nodes "
        "that fit, as TP 8 × PP 1 × DP 6, micro-batch 1, ZeRO-3, no recomputation, sequence parallel "
        "(69.5 of 72.0 GB per GPU): 172.5 training days, total 738,625 USD; no larger accelerator of the catalog fits at 8 GPUs\n"),
    "deadline-not-met": (
        _PLAIN.format(preset="llama3-8b", tokens="15T", batch="  global_batch_sequences: 1009\n",
                      count="deadline_days: 2"),
        "error: {f}: hardware: no GPU count up to 1,048,576 trains within 2 days: the fastest of the 12 "
        "counts that split the batch and fit, 8,072 GPUs, takes 3.6 days with failures\n"
        "  fix: set hardware.deadline_days to 3.6 or more (at 8,072 GPUs), or choose a faster "
        "accelerator (hardware.accelerator) or lower the interruptions that grow with the count "
        "(reliability.*)\n"),
}
BAD_INPUTS.update(REFUSALS)


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_exact_message_exit_2_nothing_written(tmp_path, capsys, case):
    text, expected = BAD_INPUTS[case]
    scenario = _bad(tmp_path, case, text)
    out_dir = tmp_path / "out"
    code, out, err = _run(capsys, scenario, "-o", out_dir)
    assert code == 2
    assert err == expected.format(f=scenario)
    assert out == ""
    assert not out_dir.exists()


def test_one_bad_scenario_stops_all_outputs(tmp_path, capsys):
    bad = _bad(tmp_path, "bad", SEED_TEXT.replace("  gpu_count: 512", "  gpu_count: -4"))
    out_dir = tmp_path / "out"
    code, _, err = _run(capsys, SEED_H100, bad, "-o", out_dir)
    assert code == 2 and "hardware.gpu_count" in err
    assert not out_dir.exists(), "the good scenario's workbook must not be written either"


def test_bad_input_from_a_real_process_has_no_traceback(tmp_path):
    bad = _bad(tmp_path, "bad", "name: x\nmodel: {preset: gpt3-175b}\n")
    proc = subprocess.run([sys.executable, str(ROOT / "generate.py"), str(bad), "-o", str(tmp_path / "o")],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"error: {bad}: data: required but missing\n")
    assert not (tmp_path / "o").exists()


def test_missing_file(tmp_path, capsys):
    code, _, err = _run(capsys, tmp_path / "nope.yaml", "-o", tmp_path / "o")
    assert code == 2
    assert err == f"error: {tmp_path / 'nope.yaml'}: file not found\n  fix: check the path\n"


def test_no_arguments_builds_the_bundled_example(tmp_path, monkeypatch, capsys):
    """Issue 27: a newcomer's first run passes every check (seed 002's plan with the layout the
    planner finds), and shows the seed's own layout as the compared option that fails, and why."""
    monkeypatch.chdir(tmp_path)
    code, out, err = _run(capsys)
    assert code == 0
    for ext in ("xlsx", "md", "html"):
        assert (tmp_path / "out" / f"gpt3-175b-h100-searched.{ext}").is_file()
        assert (tmp_path / "out" / f"gpt3-175b-h100-searched.{ext}").stat().st_mode & 0o044, "readable by others"
    assert out.startswith("gpt3-175b-h100-searched: 512 x NVIDIA H100 80GB SXM5 (8 × 8 × 8), 158.2 training "
                          "days, 1,944,444 GPU-hours, total 4,979,847 USD; ask P80 6,465,177 USD (the total at P47)\n")
    assert "check failing" not in err
    report = (tmp_path / "out" / "gpt3-175b-h100-searched.md").read_text(encoding="utf-8")
    assert "**Base plan: All checks pass**" in report
    assert ("| The seed's layout (TP 4 x PP 8, no ZeRO) | 512 × NVIDIA H100 80GB SXM5 | 158.2 | 2027-10-12 | "
            "4,979,847 USD | 1 failing: Layout does not fit in memory: 89.1 > 72 GB per GPU |") in report


def test_several_scenarios_and_output_dir(tmp_path, capsys):
    code, out, _ = _run(capsys, SEED_H100, ROOT / "scenarios" / "gpt3-175b-a100.yaml",
                        "-o", tmp_path / "books", "-q")
    assert code == 0 and out == ""
    assert sorted(p.name for p in (tmp_path / "books").iterdir() if not p.name.startswith(".")) == [
        f"gpt3-175b-{gpu}.{ext}" for gpu in ("a100", "h100") for ext in ("html", "md", "xlsx")]


@pytest.mark.slow
def test_several_scenarios_on_a_pool_give_what_one_process_gives(tmp_path, capsys, monkeypatch):
    """Several scenarios are built by a pool of processes (issue 14, both cores): the files, the
    printed lines and their order are those of a run in one process."""
    import budget.cli.app as cli

    scenarios = [SEED_H100, ROOT / "scenarios" / "gpt3-175b-a100.yaml", ROOT / "scenarios" / "gpt3-175b-options.yaml"]
    monkeypatch.setattr(cli, "workers", lambda count: 2)
    pooled = _run(capsys, *scenarios, "-o", tmp_path / "pool")
    monkeypatch.setattr(cli, "workers", lambda count: 1)
    alone = _run(capsys, *scenarios, "-o", tmp_path / "alone")
    assert pooled[0] == alone[0] == 0
    assert pooled[1].replace(str(tmp_path / "pool"), "DIR") == alone[1].replace(str(tmp_path / "alone"), "DIR")
    assert pooled[2] == alone[2]
    names = sorted(p.name for p in (tmp_path / "alone").iterdir() if not p.name.startswith(".trainbudget.lock"))
    assert names == sorted(p.name for p in (tmp_path / "pool").iterdir() if not p.name.startswith(".trainbudget.lock"))
    for name in names:
        assert (tmp_path / "pool" / name).read_bytes() == (tmp_path / "alone" / name).read_bytes(), name


def test_a_bad_scenario_on_a_pool_stops_the_run_with_the_first_error(tmp_path, capsys, monkeypatch):
    import budget.cli.app as cli

    monkeypatch.setattr(cli, "workers", lambda count: 2)
    bad = _bad(tmp_path, "bad", SEED_TEXT.replace("  gpu_count: 512", "  gpu_count: -4"))
    worse = _bad(tmp_path, "worse", "name: x\nmodel: {preset: gpt3-175b}\n")
    code, out, err = _run(capsys, SEED_H100, bad, worse, "-o", tmp_path / "out")
    assert code == 2 and out == ""
    assert err.startswith(f"error: {bad}: hardware.gpu_count: should be greater than 0 (got -4)\n")
    assert "worse" not in err
    assert not (tmp_path / "out").exists()


def test_same_file_name_twice_is_refused(tmp_path, capsys):
    other = tmp_path / "gpt3-175b-h100.yaml"
    other.write_text(SEED_TEXT, encoding="utf-8")
    code, _, err = _run(capsys, SEED_H100, other, "-o", tmp_path / "o")
    assert code == 2 and "overwrite each other" in err


def test_version_and_help(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"trainbudget {__version__}\n"
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "SCENARIO.yaml" in capsys.readouterr().out


@pytest.mark.slow
def test_generate_py_twice_gives_byte_identical_files(tmp_path):
    for run in ("a", "b"):
        subprocess.run([sys.executable, str(ROOT / "generate.py"), str(SEED_H100), "-o",
                        str(tmp_path / run), "-q"], check=True, capture_output=True)
    for ext in ("xlsx", "md", "html"):
        name = f"gpt3-175b-h100.{ext}"
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_deadline_example_is_sized_and_explained(tmp_path, capsys):
    code, out, err = _run(capsys, ROOT / "scenarios" / "llama3-70b-h100-deadline.yaml", "-o", tmp_path)
    assert code == 0 and err == ""
    headline, layout_line = out.splitlines()[:2]
    assert headline.startswith("llama3-70b-h100-deadline: 4,096 x NVIDIA H100 80GB SXM5")
    assert layout_line.startswith("  layout: TP 4 × PP 1 × DP 1024")
    assert "the fastest of" in layout_line


# --- messages in the scenario's language, or --lang's ------------------------------------------
ZH_SEED_TEXT = "language: zh\n" + SEED_TEXT
ZH_ALLOWED = ("accelerator, gpu_count, deadline_days, peak_tflops, mfu, effective_tflops, "
              "baseline_mfu, hfu, flops_basis, precision, mfu_peak, usable_memory_fraction")
ZH_BAD_INPUTS = {
    "unknown-key": (
        ZH_SEED_TEXT.replace("  gpu_count: 512", "  gpu_cont: 512"),
        "错误：{f}: hardware.gpu_cont: 未知的键\n"
        f"  处理办法：是否想写 'gpu_count'？请删除或重命名；此处允许的键：{ZH_ALLOWED}\n"),
    "out-of-range": (
        ZH_SEED_TEXT.replace("  train_tokens: 3T ", "  train_tokens: -3e12 "),
        "错误：{f}: data.train_tokens: 应大于或等于 1000000（实际为 '-3e12'）\n"
        "  处理办法：将 data.train_tokens 设为不小于 1000000 的数\n"),
    "cross-field-rule": (
        ZH_SEED_TEXT.replace("  gpu_count: 512", "  gpu_count: 500"),
        "错误：{f}: parallelism.pp: tp 4 x pp 8 = 32 不能整除 gpu_count 500，数据并行度将不是整数\n"
        "  处理办法：请把 gpu_count 设为 32 的整数倍，或修改 tp 或 pp\n"),
    "unknown-accelerator": (
        ZH_SEED_TEXT.replace("accelerator: nvidia_h100_sxm", "accelerator: nvidia_h1000"),
        "错误：{f}: hardware.accelerator: 未知的加速卡 'nvidia_h1000'\n"
        "  处理办法：是否想写 'nvidia_h100_sxm'？请使用 catalogs/accelerators.yaml 中的 id："),
}


@pytest.mark.parametrize("case", sorted(ZH_BAD_INPUTS))
def test_a_chinese_scenarios_errors_are_chinese(tmp_path, capsys, case):
    """`language: zh` in a broken scenario: the message and the fix in Chinese, naming the file
    and the dotted field; exit 2 and nothing written."""
    text, expected = ZH_BAD_INPUTS[case]
    scenario = _bad(tmp_path, case, text)
    out_dir = tmp_path / "out"
    code, out, err = _run(capsys, scenario, "-o", out_dir)
    assert code == 2 and out == ""
    assert err.startswith(expected.format(f=scenario)) and err.endswith("\n")
    assert not out_dir.exists()


def test_lang_wins_over_the_scenarios_language_in_errors(tmp_path, capsys):
    """--lang zh on an English scenario gives Chinese; --lang en on a Chinese one, English."""
    text, expected = ZH_BAD_INPUTS["cross-field-rule"]
    english = _bad(tmp_path, "english", text.replace("language: zh\n", ""))
    code, out, err = _run(capsys, english, "--lang", "zh", "-o", tmp_path / "o")
    assert code == 2 and out == "" and err == expected.format(f=english)
    chinese = _bad(tmp_path, "chinese", text)
    code, _, err = _run(capsys, chinese, "--lang", "en", "-o", tmp_path / "o")
    assert code == 2 and err == BAD_INPUTS["tp-pp-not-dividing"][1].format(f=chinese)
    assert not (tmp_path / "o").exists()


def test_a_file_that_does_not_parse_is_reported_in_english(tmp_path, capsys):
    """The scenario's language is known only once the file parses."""
    broken = _bad(tmp_path, "broken", "language: zh\nname: broken\nmodel: [unclosed\n")
    code, _, err = _run(capsys, broken, "-o", tmp_path / "o")
    assert code == 2 and err.startswith(f"error: {broken}: line 4, column 1: this is not valid YAML")
    code, _, err = _run(capsys, broken, "--lang", "zh", "-o", tmp_path / "o")
    assert code == 2 and err.startswith(f"错误：{broken}: 第 4 行第 1 列: 不是有效的 YAML：")


@pytest.mark.slow
def test_chinese_error_from_a_real_process_has_no_traceback(tmp_path):
    """A real process, its terminal not UTF-8: the Chinese message is escaped, never a traceback."""
    import os

    bad = _bad(tmp_path, "bad", ZH_BAD_INPUTS["unknown-key"][0])
    for encoding in ("utf-8", "latin-1"):
        proc = subprocess.run([sys.executable, str(ROOT / "generate.py"), str(bad), "-o", str(tmp_path / "o")],
                              capture_output=True, cwd=tmp_path,
                              env={**os.environ, "PYTHONIOENCODING": encoding})
        stderr = proc.stderr.decode(encoding)
        assert proc.returncode == 2 and proc.stdout == b""
        assert "Traceback" not in stderr
        assert stderr.startswith(f"错误：{bad}: hardware.gpu_cont: 未知的键\n" if encoding == "utf-8"
                                 else f"\\u9519\\u8bef\\uff1a{bad}: hardware.gpu_cont: ")
    assert not (tmp_path / "o").exists()


def test_help_follows_lang_and_survives_a_latin1_terminal(capsys):
    import os

    with pytest.raises(SystemExit):
        main(["--lang", "zh", "--help"])
    out = capsys.readouterr().out
    assert "规划一次大模型训练" in out and "--lang LANG" in out
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "Plan an LLM training run" in capsys.readouterr().out
    proc = subprocess.run([sys.executable, str(ROOT / "generate.py"), "--lang=zh", "--help"],
                          capture_output=True, env={**os.environ, "PYTHONIOENCODING": "latin-1"})
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr
    assert b"\\u89c4\\u5212" in proc.stdout     # 规划, escaped


def test_the_headline_is_in_the_plans_language(catalog):
    from budget.cli.app import _headline
    from support import seed_plan

    en, zh = seed_plan(catalog), seed_plan(catalog, language="zh")
    assert _headline(en) == ("gpt3-175b-h100: 512 x NVIDIA H100 80GB SXM5 (4 × 8 × 16), 158.2 training "
                             "days, 1,944,444 GPU-hours, total 4,979,847 USD; ask P80 6,465,177 USD (the total at P47)")
    assert _headline(zh).startswith("gpt3-175b-h100：512 张 NVIDIA H100 80GB SXM5（")
    assert _headline(zh).endswith("），训练 158.2 天，1,944,444 GPU 小时，总计 4,979,847 USD；申请 P80 6,465,177 USD"
                                  "（总计位于 P47）")
    assert _headline(en, "zh") == _headline(zh)


@pytest.mark.slow
def test_the_command_line_does_not_import_numpy_or_pillow_for_openpyxl(tmp_path):
    # openpyxl imports numpy only to accept numpy scalars and Pillow only for images; the CLI
    # refuses those imports (a third of start-up) and leaves both importable afterwards.
    code = ("import sys; from budget.cli.app import main; "
            f"code = main(['-q', '-o', {str(tmp_path)!r}]); "
            "import openpyxl.compat.numbers as n, openpyxl.drawing.image as i; "
            "print(code, 'numpy' in sys.modules, 'PIL' in sys.modules, n.NUMPY, bool(i.PILImage), "
            "sum(type(f).__name__ == '_OpenpyxlWithoutNumpy' for f in sys.meta_path)); "
            "import numpy, PIL.Image; print(numpy.ones(2).sum())")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["0", "False", "False", "False", "False", "0", "2.0"]
    assert (tmp_path / "gpt3-175b-h100-searched.xlsx").stat().st_size > 0


def test_the_model_is_built_once_per_language():
    from budget.model.model import build_model
    assert build_model() is build_model("en")
    assert build_model("zh") is not build_model("en")


def test_a_run_leaves_the_garbage_collector_as_it_was(tmp_path):
    import gc
    before = gc.get_threshold(), gc.get_freeze_count()
    assert main(["-q", "-o", str(tmp_path)]) == 0
    assert (gc.get_threshold(), gc.get_freeze_count()) == before
