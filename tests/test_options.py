"""Options in one scenario: deep-merge semantics, validation with option-prefixed paths, and
seed 002's comparison regenerated from scenarios/gpt3-175b-options.yaml."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest
import yaml

from budget.cli.app import main
from budget.core.errors import ScenarioError
from budget.inputs.options import merge, option_scenarios, options_of
from budget.plan.options import build_option_plans
from budget.plan.plan import build_plan
from budget.inputs.options import load_scenario, parse_scenario
from support import ROOT, SCENARIOS, SEED_H100, raw

OPTIONS = SCENARIOS / "gpt3-175b-options.yaml"


@pytest.fixture(scope="module")
def option_plans(catalog):
    return build_option_plans(OPTIONS, catalog)


# --- merge ------------------------------------------------------------------------------------

def test_merge_mappings_merge_key_by_key():
    base = {"hardware": {"accelerator": "a", "gpu_count": 512, "peak_tflops": 990}, "name": "x"}
    out = merge(base, {"hardware": {"gpu_count": 256}})
    assert out == {"hardware": {"accelerator": "a", "gpu_count": 256, "peak_tflops": 990}, "name": "x"}
    assert base["hardware"]["gpu_count"] == 512          # the base is not changed


def test_merge_lists_replace():
    base = {"staffing": [{"role": "a", "headcount": 1}, {"role": "b", "headcount": 2}]}
    out = merge(base, {"staffing": [{"role": "c", "headcount": 3}]})
    assert out == {"staffing": [{"role": "c", "headcount": 3}]}
    assert merge(base, {"staffing": []}) == {"staffing": []}


def test_merge_null_removes_a_key_at_any_depth():
    base = {"parallelism": {"tp": 4, "pp": 8}, "memory": {"precision": "p", "activation_gb_per_microbatch": 50}}
    out = merge(base, {"parallelism": None, "memory": {"activation_gb_per_microbatch": None},
                       "absent": None})
    assert out == {"memory": {"precision": "p"}}


def test_merge_mapping_replaces_a_scalar_and_a_scalar_replaces_a_mapping():
    assert merge({"a": 1}, {"a": {"b": 2}}) == {"a": {"b": 2}}
    assert merge({"a": {"b": 2}}, {"a": 3}) == {"a": 3}


def test_merged_option_is_a_copy_not_a_reference():
    override = {"staffing": [{"role": "c"}]}
    out = merge({}, override)
    out["staffing"][0]["role"] = "changed"
    assert override["staffing"][0]["role"] == "c"


# --- the example: seed 002's comparison --------------------------------------------------------

def test_options_example_regenerates_seed_002_days(option_plans):
    names = [name for name, _ in option_plans]
    assert names[0] == "GPT-3 175B on 512 H100 (seed 002 worked example)"
    days = {name: round(plan.train_days, 1) for name, plan in option_plans}
    gpus = {name: plan.gpu_count for name, plan in option_plans}
    assert days[names[0]] == 158.2 and gpus[names[0]] == 512
    assert days["256 H100 (TP 4 x PP 8 x DP 8)"] == 316.5
    assert gpus["256 H100 (TP 4 x PP 8 x DP 8)"] == 256
    assert days["1,024 H100 (TP 4 x PP 16 x DP 16)"] == 79.1
    assert gpus["1,024 H100 (TP 4 x PP 16 x DP 16)"] == 1024
    a100 = dict(option_plans)["1,024 A100 80GB"]
    assert a100.train_days == pytest.approx(254.3, abs=0.05)
    assert a100.gpu_count == 1024 and a100.values["accelerator_name"].startswith("NVIDIA A100")
    # the catalog's peak (the base's 990 override removed), at the seed's 140 effective TFLOPS
    assert a100.scenario.hardware.peak_tflops is None
    assert a100.effective_tflops == pytest.approx(140)


def test_layout_left_to_the_search_finds_one_that_fits(option_plans):
    plan = dict(option_plans)["512 H100, layout left to the search"]
    assert plan.layout.search is not None
    assert plan.fits and plan.gpu_count == 512
    assert plan.train_days == pytest.approx(158.24, abs=0.01)   # all-in 450 TFLOPS: any layout


def test_each_option_plan_equals_the_merged_scenario_built_on_its_own(option_plans, catalog, tmp_path):
    data = raw(OPTIONS)
    base = {k: v for k, v in data.items() if k != "options"}
    alone = [base] + [merge(base, option) for option in data["options"]]
    assert len(alone) == len(option_plans)
    for (name, plan), merged in zip(option_plans, alone):
        path = tmp_path / OPTIONS.name            # same file name: the sources cite it
        path.write_text(yaml.safe_dump(merged, sort_keys=False, allow_unicode=True), encoding="utf-8")
        scenario = load_scenario(path, catalog)
        own = build_plan(scenario, catalog, scenario_id=OPTIONS.stem, scenario_file=OPTIONS.name)
        assert scenario.name == name
        assert dict(plan.values) == dict(own.values), name
        assert {k: (v.value, v.source) for k, v in plan.inputs.items()} == \
               {k: (v.value, v.source) for k, v in own.inputs.items()}, name


def test_base_equals_the_plan_generate_builds(option_plans, catalog):
    scenario = load_scenario(OPTIONS, catalog)
    assert len(scenario.options) == 4
    plan = build_plan(scenario, catalog, scenario_id=OPTIONS.stem, scenario_file=OPTIONS.name)
    assert dict(plan.values) == dict(option_plans[0][1].values)


def test_options_of_a_loaded_scenario_matches_the_raw_data(catalog):
    from_raw = option_scenarios(raw(OPTIONS), OPTIONS, catalog)
    from_loaded = options_of(load_scenario(OPTIONS, catalog), OPTIONS, catalog)
    assert [(n, s.model_dump()) for n, s in from_raw] == [(n, s.model_dump()) for n, s in from_loaded]


def test_base_is_the_h100_seed(catalog, option_plans, seed_h100):
    assert option_plans[0][1].train_days == seed_h100.train_days
    assert option_plans[0][1].total_cost == seed_h100.total_cost


def test_scenario_without_options_has_one_plan(catalog):
    plans = build_option_plans(SEED_H100, catalog)
    assert [name for name, _ in plans] == [raw(SEED_H100)["name"]]


# --- validation ---------------------------------------------------------------------------------

def _problems(data, catalog):
    with pytest.raises(ScenarioError) as err:
        option_scenarios(data, "s.yaml", catalog)
    return err.value.problems


def _with_options(*options):
    data = copy.deepcopy(raw(SEED_H100))
    data["options"] = list(options)
    return data


def test_error_path_names_the_option_and_the_field(catalog):
    data = _with_options({"name": "ok", "hardware": {"gpu_count": 256}},
                         {"name": "bad", "hardware": {"gpu_count": -3}})
    problems = _problems(data, catalog)
    assert [p.path for p in problems] == ["options[1].hardware.gpu_count"]
    assert "greater than 0" in problems[0].message
    assert problems[0].fix == "set options[1].hardware.gpu_count to a number greater than 0"


def test_cross_field_rule_in_an_option_is_prefixed(catalog):
    # TP 4 x PP 8 = 32 does not divide 100
    problems = _problems(_with_options({"name": "odd", "hardware": {"gpu_count": 100}}), catalog)
    assert [p.path for p in problems] == ["options[0].parallelism.pp"]


def test_unknown_key_in_an_option(catalog):
    problems = _problems(_with_options({"name": "typo", "hardware": {"gpu_cuont": 256}}), catalog)
    assert problems[0].path == "options[0].hardware.gpu_cuont"
    assert "did you mean 'gpu_count'" in problems[0].fix


def test_null_removing_a_required_key_is_an_error(catalog):
    problems = _problems(_with_options({"name": "no prices", "prices": None}), catalog)
    assert [p.path for p in problems] == ["options[0].prices"]
    assert problems[0].message == "required but missing"
    assert problems[0].fix == "add options[0].prices"


def test_every_bad_option_is_reported_at_once(catalog):
    data = _with_options({"name": "a", "hardware": {"gpu_count": 0}}, {"name": "b"},
                         {"hardware": {"gpu_count": 256}}, {"name": "c", "options": []}, "text")
    assert [p.path for p in _problems(data, catalog)] == [
        "options[0].hardware.gpu_count", "options[2].name", "options[3].options", "options[4]"]


def test_option_name_follows_the_text_policy(catalog):
    problems = _problems(_with_options({"name": "=HYPERLINK(1)"}), catalog)
    assert [p.path for p in problems] == ["options[0].name"]
    assert "formula" in problems[0].message


def test_option_names_are_unique(catalog):
    data = _with_options({"name": "x", "hardware": {"gpu_count": 256}},
                         {"name": "x", "hardware": {"gpu_count": 1024}, "parallelism": {"pp": 16}})
    problems = _problems(data, catalog)
    assert [p.path for p in problems] == ["options[1].name"]


def test_options_must_be_a_list(catalog):
    data = copy.deepcopy(raw(SEED_H100))
    data["options"] = {"name": "x"}
    with pytest.raises(ScenarioError) as err:
        load_scenario_from(data, catalog)
    assert err.value.problems[0].path == "options"


def load_scenario_from(data, catalog):
    scenario = parse_scenario(data, "s.yaml", catalog)
    option_scenarios(data, "s.yaml", catalog)
    return scenario


def test_a_planner_problem_in_an_option_names_the_option(catalog):
    # 175B on 8 GPUs: no layout the search may try fits (2.8 TB of weights and optimizer state)
    data = _with_options({"name": "tiny", "hardware": {"gpu_count": 8}})
    data["parallelism"] = {"tp": 1}            # the base lets the search choose the rest
    data["memory"].pop("activation_gb_per_microbatch")
    with pytest.raises(ScenarioError) as err:
        build_option_plans(data, catalog, path="s.yaml")
    assert [p.path for p in err.value.problems] == ["options[0].hardware.gpu_count"]


def test_cli_refuses_a_scenario_with_a_bad_option(tmp_path, capsys):
    data = _with_options({"name": "bad", "hardware": {"gpu_count": -3}},
                         {"name": "worse", "hardware": {"gpu_count": -4}})
    path = tmp_path / "bad-options.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert main([str(path), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "bad-options.yaml: options[1].hardware.gpu_count:" in err
    assert "bad-options.yaml: options[0].hardware.gpu_count:" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_generate_py_builds_the_options_scenario(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "generate.py"), str(OPTIONS), "-o", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "gpt3-175b-options: 512 x" in proc.stdout
    for suffix in (".xlsx", ".md", ".html"):
        assert (tmp_path / f"gpt3-175b-options{suffix}").stat().st_size > 0


def test_an_options_problems_are_in_the_scenarios_language(catalog):
    """The option's path is in the Chinese fix as in the English one."""
    data = _with_options({"name": "bad", "hardware": {"gpu_count": -3}},
                         {"name": data_name(), "hardware": {"gpu_count": 256}})
    data["language"] = "zh"
    with pytest.raises(ScenarioError) as err:
        option_scenarios(data, "s.yaml", catalog)
    assert err.value.lang == "zh"
    first, second = err.value.problems
    assert first.path == "options[0].hardware.gpu_count"
    assert first.message_in("zh") == "应大于 0（实际为 -3）"
    assert first.fix_in("zh") == "将 options[0].hardware.gpu_count 设为大于 0 的数"
    assert first.fix == "set options[0].hardware.gpu_count to a number greater than 0"
    assert second.message_in("zh") == f"名称 {data_name()!r} 已被 基准场景 使用"


def data_name() -> str:
    return raw(SEED_H100)["name"]
