"""Options: alternatives to the scenario, each written as overrides of it.

    options:
      - name: 256 H100
        hardware: {gpu_count: 256}
      - name: 512 H100, layout left to the search
        parallelism: null                  # null removes the key: the search or the default decides

Each option is deep-merged onto the scenario (mappings merge key by key, lists replace, `null`
removes a key) and the result is validated exactly like a scenario, its problems named
`options[2].hardware.gpu_count`. An option may not hold `options` itself. The base comes first,
named by the scenario's `name`; every plan is built by `budget.plan.build_plan`, so an option's
plan is the plan of the merged scenario generated on its own.
"""

from __future__ import annotations

import copy
from pathlib import Path

from .catalog import Catalog
from ..core.errors import Msg, Problem, ScenarioError, load_yaml
from .scenario import Scenario, language_of, validate_scenario

MAX_OPTIONS = 20      # a typo guard: one column each on the Compare sheet


def merge(base: object, override: object) -> object:
    """`override` deep-merged onto `base`, neither changed: mappings merge key by key, a `None`
    value removes the key, anything else (lists included) replaces."""
    if not isinstance(base, dict) or not isinstance(override, dict):
        return copy.deepcopy(override)
    out = copy.deepcopy(base)
    for key, value in override.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _prefixed(where: str, problems: list[Problem]) -> list[Problem]:
    def one(p: Problem) -> Problem:
        inner = "" if p.top_level else p.path
        path = f"{where}{'.' if inner and not inner.startswith('[') else ''}{inner}"
        # "set hardware.gpu_count to ..." -> "set options[1].hardware.gpu_count to ..."
        return p.moved(path)
    return [one(p) for p in problems]


def _raw_options(data: dict, path) -> list:
    options = data.get("options") or []
    if not isinstance(options, list):
        raise ScenarioError(path, [Problem("options", Msg("errors.options.not_list.message"),
                                           Msg("errors.options.not_list.fix"))], language_of(data))
    if len(options) > MAX_OPTIONS:
        raise ScenarioError(path, [Problem("options", Msg("errors.options.too_many.message",
                                                          count=len(options), limit=MAX_OPTIONS),
                                           Msg("errors.options.too_many.fix", limit=MAX_OPTIONS))],
                            language_of(data))
    return options


def option_scenarios(data: dict, path: str | Path, catalog: Catalog) -> list[tuple[str, Scenario]]:
    """[(name, Scenario)]: the base (its `options` stripped) first, then each option merged onto
    it, all validated. Raises ScenarioError naming every problem (`options[i].…`) at once."""
    if not isinstance(data, dict):
        return [(None, validate_scenario(data, path, catalog))]   # validate_scenario says what is wrong
    options = _raw_options(data, path)
    base_data = {k: v for k, v in data.items() if k != "options"}
    base = validate_scenario(base_data, path, catalog)
    out: list[tuple[str, Scenario]] = [(base.name, base)]
    problems: list[Problem] = []
    seen = {base.name: Msg("errors.options.base")}
    for i, option in enumerate(options):
        where = f"options[{i}]"
        if not isinstance(option, dict):
            problems.append(Problem(where, Msg("errors.options.not_mapping.message"),
                                    Msg("errors.options.not_mapping.fix", where=where)))
            continue
        if "options" in option:
            problems.append(Problem(f"{where}.options", Msg("errors.options.nested.message"),
                                    Msg("errors.options.nested.fix")))
            continue
        if "stages" in option:      # the Compare sheet's columns share the stages table
            problems.append(Problem(f"{where}.stages", Msg("errors.options.stages.message"),
                                    Msg("errors.options.stages.fix")))
            continue
        if option.get("name") is None:
            problems.append(Problem(f"{where}.name", Msg("errors.types.missing.message"),
                                    Msg("errors.options.no_name.fix", where=where)))
            continue
        try:
            scenario = validate_scenario(merge(base_data, option), path, catalog)
        except ScenarioError as err:
            problems.extend(_prefixed(where, err.problems))
            continue
        if scenario.name in seen:
            problems.append(Problem(f"{where}.name", Msg("errors.options.name_used.message",
                                                         name=repr(scenario.name), by=seen[scenario.name]),
                                    Msg("errors.options.name_used.fix")))
            continue
        seen[scenario.name] = where
        out.append((scenario.name, scenario))
    if problems:
        raise ScenarioError(path, problems, language_of(data))
    return out


def scenario_data(scenario: Scenario) -> dict:
    """The mapping that validates back to `scenario`: only the keys it was given (so every
    default stays a default), without its options."""
    return scenario.model_dump(mode="python", exclude_unset=True, exclude={"options"})


def options_of(scenario: Scenario, path: str | Path, catalog: Catalog) -> list[tuple[str, Scenario]]:
    """`option_scenarios` for an already-loaded scenario, its raw options merged onto what it set."""
    data = scenario_data(scenario)
    if scenario.options:
        data["options"] = [copy.deepcopy(o) for o in scenario.options]
    return option_scenarios(data, path, catalog)


def parse_scenario(data: object, path: str | Path, catalog: Catalog) -> Scenario:
    """The scenario `data` holds, validated; every option it has is merged onto it and validated
    as a scenario of its own, text included (problems named `options[i].…`)."""
    scenario = validate_scenario(data, path, catalog)
    if scenario.options:
        option_scenarios(data, path, catalog)
    return scenario


def load_scenario(path: str | Path, catalog: Catalog) -> Scenario:
    return parse_scenario(load_yaml(Path(path), ScenarioError), path, catalog)
