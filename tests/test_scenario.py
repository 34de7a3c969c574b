"""Scenario validation: structured problems with dotted paths and fixes."""

from __future__ import annotations

import pytest

from budget.core.errors import ScenarioError
from budget.inputs.options import load_scenario, parse_scenario
from support import SEED_H100, raw, with_changes


def _problems(catalog, **changes):
    with pytest.raises(ScenarioError) as err:
        parse_scenario(with_changes(raw(SEED_H100), changes), "s.yaml", catalog)
    return [(p.path, p.message, p.fix) for p in err.value.problems]


def test_seed_scenario_loads(catalog):
    s = load_scenario(SEED_H100, catalog)
    assert s.data.train_tokens == 3e12
    assert s.hardware.gpu_count == 512 and s.parallelism.tp == 4


@pytest.mark.parametrize("text, value", [("175B", 175e9), ("3T", 3e12), ("175e9", 175e9),
                                         ("1.5M", 1.5e6), ("2_000_000", 2e6), (3e12, 3e12)])
def test_counts_accept_suffixes(catalog, text, value):
    s = parse_scenario(with_changes(raw(SEED_H100), {"data.train_tokens": text}), "s.yaml", catalog)
    assert s.data.train_tokens == value


def test_unknown_key_suggests_the_right_one(catalog):
    problems = _problems(catalog, **{"prices.per_gpu_hr": 2.0})
    assert problems[0][0] == "prices.per_gpu_hr"
    assert problems[0][1] == "unknown key"
    assert problems[0][2].startswith("did you mean 'per_gpu_hour'?")


@pytest.mark.parametrize("changes, path, fix_start", [
    ({"hardware.gpu_count": 0}, "hardware.gpu_count", "set hardware.gpu_count to a number greater than 0"),
    ({"hardware.mfu": 1.5, "hardware.effective_tflops": None}, "hardware.mfu", "set hardware.mfu to a number at most 1"),
    ({"buffer_rate": -0.1}, "buffer_rate", "set buffer_rate to a number at least 0"),
    ({"parallelism.zero_stage": 4}, "parallelism.zero_stage", "set parallelism.zero_stage to one of"),
    ({"parallelism.recompute": "some"}, "parallelism.recompute", "set parallelism.recompute to one of"),
    ({"parallelism.tp": 5, "hardware.gpu_count": 40 * 8}, "parallelism.tp", "choose a tp that divides"),
    ({"parallelism.pp": 128, "hardware.gpu_count": 512}, "parallelism.pp", "choose a pp of at most 96"),
    ({"prices.currency": "usd"}, "prices.currency", "set prices.currency to suitable text"),
    ({"hardware.mfu": 0.4}, "hardware.effective_tflops", "keep one"),
    ({"model.preset": "gpt3-157b"}, "model.preset", "did you mean 'gpt3-175b'?"),
    ({"staffing": [{"role": "@SUM(A1)", "headcount": 1, "monthly_cost": 1, "months": 1}]},
     "staffing[0].role", "remove the leading '@'"),
    ({"data.train_tokens": "lots"}, "data.train_tokens", "correct data.train_tokens"),
])
def test_impossible_values_name_field_and_fix(catalog, changes, path, fix_start):
    problems = _problems(catalog, **changes)
    assert problems[0][0] == path
    assert problems[0][2].startswith(fix_start), problems


def test_incomplete_custom_shape(catalog):
    problems = _problems(catalog, **{"model.preset": None, "model.layers": 10})
    assert problems[0][0] == "model.hidden_size"
    assert "set model.preset" in problems[0][2]


def test_duplicate_keys_are_refused(tmp_path, catalog):
    path = tmp_path / "dup.yaml"
    path.write_text(SEED_H100.read_text().replace("  gpu_count: 512", "  gpu_count: 512\n  gpu_count: 1024"))
    with pytest.raises(ScenarioError) as err:
        load_scenario(path, catalog)
    problem = err.value.problems[0]
    assert "duplicate key 'gpu_count'" in problem.message and problem.fix == "give each key once"


def test_empty_file(tmp_path, catalog):
    path = tmp_path / "empty.yaml"
    path.write_text("")
    with pytest.raises(ScenarioError) as err:
        load_scenario(path, catalog)
    assert err.value.problems[0].message == "the file is empty"


def test_sources_must_cite_known_fields(catalog):
    from budget.plan.plan import build_plan
    s = parse_scenario(with_changes(raw(SEED_H100), {"sources": {"prices.gpu": "x"}}), "s.yaml", catalog)
    with pytest.raises(ScenarioError) as err:
        build_plan(s, catalog)
    assert err.value.problems[0].path == "sources.prices.gpu"


# Each kind of pydantic error a scenario meets, said by the catalog in every language (not
# pydantic's own English as a fallback).
PYDANTIC_KINDS = {
    "int_parsing": {"hardware.gpu_count": "x"},
    "int_from_float": {"hardware.gpu_count": 1.5},
    "greater_than": {"hardware.gpu_count": 0},
    "greater_than_equal": {"buffer_rate": -0.1},
    "less_than_equal": {"hardware.mfu": 1.5, "hardware.effective_tflops": None},
    "less_than": {"prices.spot.discount": 1},
    "float_parsing": {"buffer_rate": "x"},
    "float_type": {"buffer_rate": [1]},
    "literal_error": {"parallelism.recompute": "some"},
    "bool_parsing": {"memory.flash_attention": "maybe"},
    "model_type": {"hardware": [1]},
    "dict_type": {"sources": [1]},
    "list_type": {"staffing": 3},
    "date_from_datetime_parsing": {"schedule.start_date": "soon"},
    "string_type": {"prices.catalog": 3},
    "string_pattern_mismatch": {"prices.currency": "usd"},
    "missing": {"data": None},
    "extra_forbidden": {"hardware.gpu_cont": 3},
    "count": {"data.train_tokens": "lots"},
    "start_date": {"schedule.start_date": "1899-12-31"},
}


@pytest.mark.parametrize("kind", sorted(PYDANTIC_KINDS))
def test_each_problem_is_said_by_the_catalog_in_chinese(catalog, kind):
    import re
    import datetime as dt

    changes = dict(PYDANTIC_KINDS[kind])
    if kind == "start_date":
        changes["schedule.start_date"] = dt.date(1899, 12, 31)
    data = with_changes(raw(SEED_H100), {"language": "zh", **changes})
    with pytest.raises(ScenarioError) as err:
        parse_scenario(data, "s.yaml", catalog)
    assert err.value.lang == "zh"
    problem = err.value.problems[0]
    for text in (problem.message_in("zh"), problem.fix_in("zh")):
        assert re.search(r"[\u4e00-\u9fff]", text), (kind, text)
    assert problem.path_in("zh") == problem.path     # field paths are never translated
    assert not re.search(r"[\u4e00-\u9fff]", problem.message + problem.fix)


def test_an_english_scenarios_problems_carry_no_language(catalog):
    with pytest.raises(ScenarioError) as err:
        parse_scenario(with_changes(raw(SEED_H100), {"hardware.gpu_count": 0}), "s.yaml", catalog)
    assert err.value.lang is None        # printed in --lang's language, else English
    with pytest.raises(ScenarioError) as err:
        parse_scenario(with_changes(raw(SEED_H100), {"language": "xx"}), "s.yaml", catalog)
    assert err.value.lang is None
    assert (err.value.problems[0].path, err.value.problems[0].message) == ("language", "unknown language 'xx'")
    assert err.value.problems[0].fix_in("zh") == "请使用以下之一：en, zh"


def test_yaml_errors_are_said_by_the_catalog(tmp_path, catalog):
    path = tmp_path / "dup.yaml"
    path.write_text("name: x\nname: y\n", encoding="utf-8")
    with pytest.raises(ScenarioError) as err:
        load_scenario(path, catalog)
    problem = err.value.problems[0]
    assert (problem.path, problem.message, problem.fix) == (
        "line 2, column 1", "this is not valid YAML: duplicate key 'name' (first at line 1)", "give each key once")
    assert (problem.path_in("zh"), problem.message_in("zh"), problem.fix_in("zh")) == (
        "第 2 行第 1 列", "不是有效的 YAML：重复的键 'name'（首次出现在第 1 行）", "每个键只写一次")


# --- issue 12: the shape's details ---------------------------------------------------------

@pytest.mark.parametrize("changes, path, fix_start", [
    ({"model.num_kv_heads": 7}, "model.num_kv_heads", "give num_kv_heads as a divisor"),
    ({"model.num_kv_heads": 192}, "model.num_kv_heads", "give num_kv_heads as a divisor"),
    ({"model.moe": {"experts": 8}}, "model.moe.experts_per_token", "give both"),
    ({"model.moe": {"experts_per_token": 2}}, "model.moe.experts", "give both"),
    ({"model.moe": {"experts": 8, "experts_per_token": 9}}, "model.moe.experts_per_token", "give both"),
    ({"model.moe": {"experts": 8, "experts_per_token": 2, "first_dense_layers": 96}},
     "model.moe.first_dense_layers", "give fewer leading dense layers"),
    ({"model.activation": "relu"}, "model.activation", "set model.activation to one of"),
    ({"model.moe": {"experts": 8, "topk": 2}}, "model.moe.topk", "remove or rename it; allowed keys here: experts,"),
])
def test_shape_details_name_field_and_fix(catalog, changes, path, fix_start):
    problems = _problems(catalog, **changes)
    assert problems[0][0] == path
    assert problems[0][2].startswith(fix_start), problems


def test_preset_details_and_scenario_overrides(catalog):
    from budget.inputs.scenario import resolved_shape
    data = with_changes(raw(SEED_H100), {"model": {"preset": "deepseek-v3", "moe": {"experts_per_token": 6}},
                                         "parallelism": {}})
    shape = resolved_shape(parse_scenario(data, "s.yaml", catalog), catalog)
    assert shape["moe_experts"] == 256 and shape["moe_experts_per_token"] == 6    # the scenario's
    assert shape["mla_kv_lora_rank"] == 512 and shape["active_params"] == 37e9    # the preset's
    assert shape["hidden_size"] % shape["attention_heads"] == 0 or shape["head_dim"] == 128


def test_hfu_is_one_more_utilisation_figure(catalog):
    problems = _problems(catalog, **{"hardware.hfu": 0.5})         # the seed gives effective_tflops
    assert problems[0][0] == "hardware.hfu"
    assert problems[0][2].startswith("keep one: mfu, hfu or effective_tflops")


def test_flops_basis_values(catalog):
    problems = _problems(catalog, **{"hardware.flops_basis": "6nd"})
    assert problems[0][0] == "hardware.flops_basis"
