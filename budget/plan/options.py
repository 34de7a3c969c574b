"""Options planned: the base and each alternative a plan of its own, and which one to recommend.

`build_option_plans` plans every scenario `budget.inputs.options` merges; `plan_file` is what the
command line plans for a scenario file; `recommended` is the rule the Compare sheet's
recommendation cell computes and the decision page follows; `chosen_plan` the plan it picks.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..core.errors import InputError, Msg, Problem, ScenarioError, load_yaml
from ..inputs.catalog import Catalog
from ..inputs.options import _prefixed, load_scenario, option_scenarios, options_of
from ..inputs.scenario import Scenario, character_problem
from .plan import Plan, build_plan


def build_option_plans(source: dict | Scenario | str | Path, catalog: Catalog,
                       path: str | Path | None = None, scenario_id: str | None = None):
    """[(name, Plan)], the base first. `source` is the scenario's raw mapping, a loaded
    Scenario, or a scenario file. Plans cite the scenario file and carry its stem as their id."""
    if isinstance(source, (str, Path)):
        path = Path(source)
        data = load_yaml(path, ScenarioError)
        scenarios = option_scenarios(data, path, catalog)
    elif isinstance(source, Scenario):
        scenarios = options_of(source, path or "scenario.yaml", catalog)
    else:
        scenarios = option_scenarios(source, path or "scenario.yaml", catalog)
    file = Path(path).name if path is not None else None
    sid = scenario_id or (Path(path).stem if path is not None else "scenario")
    plans = []
    for i, (name, s) in enumerate(scenarios):
        try:
            plans.append((name, build_plan(s, catalog, scenario_id=sid, scenario_file=file,
                                                 curve=i == 0)))
        except InputError as err:   # a problem only the planner sees: name the option it is in
            problems = err.problems if i == 0 else _prefixed(f"options[{i - 1}]", err.problems)
            raise type(err)(path if path is not None else err.file, problems, err.lang or s.language) from None
    return plans


def plan_file(path: Path, catalog: Catalog, lang: str | None = None) -> Plan:
    """The plan of a scenario file, its options planned beside it (`Plan.options`); `lang`, when
    given, wins over the scenario's language."""
    name_problem = character_problem(path.name)
    if not name_problem and (path.stem.startswith(".") or not path.stem):
        # the outputs take the stem: .hidden.yaml or ..yaml would write hidden files
        name_problem = (Msg("errors.file_name.hidden.message"), Msg("errors.file_name.hidden.fix"))
    if name_problem:   # the file name reaches the workbook and the reports
        raise ScenarioError(path, [Problem("", Msg("errors.file_name.message", problem=name_problem[0]),
                                           Msg("errors.file_name.fix", fix=name_problem[1]))], lang)
    try:
        scenario = load_scenario(path, catalog)
    except InputError as err:
        raise type(err)(err.file, err.problems, lang or err.lang) from None
    if lang is not None:     # the command line's --lang wins over the scenario's language
        scenario = scenario.model_copy(update={"language": lang})
    try:
        # The outputs cite the bare file name (the same bytes from any folder); messages name
        # the file as given, as the schema's do.
        if scenario.options:     # the base and each option, a plan of its own (Compare sheet)
            plans = build_option_plans(scenario, catalog, path=path.name, scenario_id=path.stem)
            return replace(plans[0][1], options=tuple(plans[1:]))
        return build_plan(scenario, catalog, scenario_id=path.stem, scenario_file=path.name)
    except InputError as err:
        raise type(err)(path, err.problems, scenario.language) from None


def recommended(values: list) -> int | None:
    """Index of the cheapest plan (by its values) whose checks all pass, or None: the rule the
    Compare sheet's recommendation cell computes."""
    passing = [(v["total_cost"], i) for i, v in enumerate(values) if v["master_check"] == 0]
    return min(passing)[1] if passing else None


def chosen_plan(plan: Plan) -> tuple[int, str, Plan]:
    """(index, name, plan) a decision is asked for: the recommended option when the plan has
    options and one passes every check (the Compare sheet's recommendation), else the plan itself
    (index 0, the base). The decision page and plan.json show this plan's own figures."""
    plans = [(plan.scenario.name, plan), *plan.options]
    best = recommended([p.values for _, p in plans]) if plan.options else None
    i = best if best is not None else 0
    return i, plans[i][0], plans[i][1]
