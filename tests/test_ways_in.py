"""Ways in for a new user (issue 28 item 3, issue 29 item 7): `trainbudget catalog` lists the ids a
scenario can name with their cited figures; `--help` names every command; `--fail-on-checks` makes
a NOT APPROVABLE plan fail a script with exit status 3."""

from __future__ import annotations

import dataclasses
import json

import pytest

from budget.cli.app import main
from budget.cli.catalog import KINDS, table, width
from budget.cli.common import EXIT_BAD_INPUT, EXIT_FAILING_CHECKS, EXIT_OK
from support import SEED_A100, SEED_H100


def _run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def _row(out: str, row_id: str) -> list[str]:
    """The cells of the table line that starts with `row_id` (cells are two or more spaces apart)."""
    import re
    line = next(line for line in out.splitlines() if line.split(" ", 1)[0] == row_id)
    return re.split(r"\s{2,}", line)


# --- catalog --------------------------------------------------------------------------------------

# Given catalogs/accelerators.yaml's cited figures, the table shows them: HBM GB, dense BF16 and
# FP8 TFLOPS (FP8 blank where none is published), board power.
@pytest.mark.parametrize("acc_id, hbm, bf16, fp8, tdp", [
    ("nvidia_h100_sxm", "80", "989", "1,979", "700"),
    ("nvidia_a100_80gb_sxm", "80", "312", None, "400"),
])
def test_catalog_accelerators_lists_the_cited_figures(capsys, catalog, acc_id, hbm, bf16, fp8, tdp):
    code, out, err = _run(capsys, "catalog", "accelerators")
    assert code == EXIT_OK and err == ""
    cells = _row(out, acc_id)
    acc = catalog.accelerator(acc_id)
    assert cells[:3] == [acc_id, acc.name, hbm] and cells[3] == bf16
    assert (fp8 in cells) if fp8 else cells[4] == tdp
    assert acc.peak_bf16_tflops.source in cells[-1]
    listed = [line.split(" ", 1)[0] for line in out.splitlines()[2:-1]]
    assert listed == catalog.accelerator_ids()


def test_catalog_prices_lists_each_price_with_its_currency_tier_and_date(capsys, catalog):
    code, out, _ = _run(capsys, "catalog", "prices")
    assert code == EXIT_OK
    # The seed's platform price, $1.80 per H100-hour (seed 002), on demand, read 2026-11-30.
    assert _row(out, "h100_token_ai_seed002") == ["h100_token_ai_seed002", "nvidia_h100_sxm", "1.80", "USD",
                                                  "on_demand", "2026-11-30", "seed_002"]
    assert len(out.splitlines()) == 2 + len(catalog.prices.rental) + 1


def test_catalog_presets_lists_each_shape(capsys, catalog):
    code, out, _ = _run(capsys, "catalog", "presets")
    assert code == EXIT_OK
    # GPT-3 175B (Brown et al. 2020, Table 2.1): 96 layers, hidden 12,288, 96 heads, 2,048 tokens.
    cells = _row(out, "gpt3-175b")
    assert cells[:7] == ["gpt3-175b", "GPT-3 175B", "175B", "96", "12,288", "96", "2,048"]
    assert cells[-1].startswith("Brown et al. 2020")
    assert [line.split(" ", 1)[0] for line in out.splitlines()[2:-1]] == catalog.model_ids()


def test_catalog_in_chinese_has_chinese_headings_aligned_by_display_width(capsys):
    code, out, _ = _run(capsys, "catalog", "prices", "--lang", "zh")
    assert code == EXIT_OK
    head, rule, first = out.splitlines()[:3]
    assert "每 GPU 小时" in head and "币种" in head
    # Wide characters take two columns: every column starts where its rule starts.
    starts = [i for i, ch in enumerate(rule) if ch == "-" and (i == 0 or rule[i - 1] == " ")]
    assert width(head[:head.index("加速卡")]) == starts[1]
    assert first.index("nvidia_h100_sxm") == starts[1]


@pytest.mark.parametrize("kind", KINDS)
def test_catalog_json_holds_the_same_ids(capsys, catalog, kind):
    code, out, _ = _run(capsys, "catalog", kind, "--format", "json")
    assert code == EXIT_OK
    ids = [row["id"] for row in json.loads(out)]
    expected = {"accelerators": catalog.accelerator_ids(), "presets": catalog.model_ids(),
                "prices": [r.id for r in catalog.prices.rental]}[kind]
    assert ids == expected


@pytest.mark.parametrize("lang, expected", [
    ("en", "error: catalog: 'gpus' is not a kind of catalog entry\n"
           "  fix: name one of: accelerators, prices, presets (for example: trainbudget catalog accelerators)\n"),
    ("zh", "错误：catalog: 'gpus' 不是一种目录条目\n"
           "  处理办法：请指定以下之一：accelerators, prices, presets（例如：trainbudget catalog accelerators）\n"),
])
def test_catalog_refuses_an_unknown_kind_with_one_message(capsys, lang, expected):
    code, out, err = _run(capsys, "catalog", "gpus", "--lang", lang)
    assert (code, out, err) == (EXIT_BAD_INPUT, "", expected)


def test_catalog_text_never_reaches_the_terminal_as_an_escape_sequence(catalog):
    evil = catalog.accelerators[0].model_copy(update={"name": "H100\x1b[2J\x1b]0;pwned\x07"})
    shown = table("accelerators", dataclasses.replace(catalog, accelerators=(evil,)), "en")
    assert "\x1b" not in shown and "\x07" not in shown
    assert "H100\\x1b[2J\\x1b]0;pwned\\x07" in shown


# --- --help ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("lang, word", [("en", "Commands:"), ("zh", "命令：")])
def test_help_names_every_command(capsys, lang, word):
    with pytest.raises(SystemExit) as stop:
        main(["--help", "--lang", lang])
    out = capsys.readouterr().out
    assert stop.value.code == 0 and word in out and "--fail-on-checks" in out
    for command in ("trainbudget import", "trainbudget package", "trainbudget catalog", "trainbudget new"):
        assert command in " ".join(out.split()), command


@pytest.mark.parametrize("command", ["catalog", "package", "import"])
def test_each_command_has_its_own_help(capsys, command):
    with pytest.raises(SystemExit) as stop:
        main([command, "--help"])
    assert stop.value.code == 0 and f"trainbudget {command}" in capsys.readouterr().out


# --- --fail-on-checks -----------------------------------------------------------------------------

# The seed's layout (TP 4 x PP 8, no ZeRO) needs 89.1 GB per H100 of 72 usable: the memory check
# fails, the plan is NOT APPROVABLE. The A100 seed passes every check.
def test_fail_on_checks_exits_3_naming_the_failing_plan_after_writing(capsys, tmp_path):
    code, _, err = _run(capsys, SEED_H100, SEED_A100, "-o", tmp_path, "-q", "--fail-on-checks")
    assert code == EXIT_FAILING_CHECKS == 3
    assert "error: gpt3-175b-h100.yaml: NOT APPROVABLE, these checks fail: Chosen layout fits in usable HBM\n" in err
    assert "gpt3-175b-a100.yaml: NOT APPROVABLE" not in err
    assert err.endswith("exit status 3 (--fail-on-checks): plans with a failing check: 1 of 2\n")
    assert (tmp_path / "gpt3-175b-h100.xlsx").is_file() and (tmp_path / "gpt3-175b-a100.xlsx").is_file()


def test_without_the_flag_a_failing_plan_still_exits_0(capsys, tmp_path):
    code, _, err = _run(capsys, SEED_H100, "-o", tmp_path, "-q")
    assert code == EXIT_OK and "check failing" in err and "NOT APPROVABLE" not in err


def test_fail_on_checks_passes_a_plan_whose_checks_pass(capsys, tmp_path):
    code, _, err = _run(capsys, SEED_A100, "-o", tmp_path, "-q", "--fail-on-checks")
    assert code == EXIT_OK and "NOT APPROVABLE" not in err


def test_package_fail_on_checks(capsys, tmp_path):
    code, _, err = _run(capsys, "package", SEED_H100, "-o", tmp_path, "-q", "--fail-on-checks", "--lang", "zh")
    assert code == EXIT_FAILING_CHECKS
    assert "错误：gpt3-175b-h100.yaml: 不可审批，以下检查未通过：" in err
    assert (tmp_path / "SHA256SUMS").is_file()
