"""The scenario's JSON Schema (schemas/scenario.schema.json, budget/inputs/scenario_schema.py):
generated from the loader's own models, committed as generated, named by every bundled scenario,
accepting every bundled scenario and rejecting what the loader rejects field by field.

The bad corpus is made by mutating the bundled scenarios: every bounded number the schema knows
set just past each bound (and to its bound, which both accept as far as that field goes), set to
text and to true; an unknown key added to every mapping; a count with a suffix it does not know.
For each, both the schema and the loader must refuse. Rules across fields (tp x pp dividing the
GPUs, one GPU price, stages adding up) and catalog ids are the loader's alone: the schema cannot
say them, and the corpus does not ask it to (see the module's docstring)."""

from __future__ import annotations

import copy
import datetime as dt
import json
import math
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from budget.core.errors import ScenarioError
from budget.core.i18n import languages
from budget.inputs.options import merge
from budget.inputs.scenario import validate_scenario
from budget.inputs.scenario_schema import COMMAND, SCHEMA_DIR, file_name, schema_text, stale
from support import ROOT, SCENARIOS, SEED_H100

BUNDLED = sorted(SCENARIOS.glob("*.yaml"))
# Starter scenarios (`trainbudget new`), wherever they are kept as files.
STARTERS = sorted(p for p in (ROOT / "templates").rglob("*.yaml") if "starter" in str(p.relative_to(ROOT)))
SCHEMA = json.loads((ROOT / SCHEMA_DIR / file_name()).read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def as_json(node):
    """YAML data as an editor's schema check sees it: dates as their ISO text, keys as text."""
    if isinstance(node, dict):
        return {str(k): as_json(v) for k, v in node.items()}
    if isinstance(node, list):
        return [as_json(v) for v in node]
    if isinstance(node, dt.date):
        return node.isoformat()
    return node


def load(path: Path) -> dict:
    return as_json(yaml.safe_load(path.read_text(encoding="utf-8")))


def schema_errors(data) -> list[str]:
    return [f"{_dotted(tuple(e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(data)]


def loader_problems(data, catalog) -> list | None:
    """The loader's problems with `data`, or None when it accepts it."""
    try:
        validate_scenario(data, "mutant.yaml", catalog)
    except ScenarioError as err:
        return err.problems
    return None


# --- the published files --------------------------------------------------------------------------

@pytest.mark.parametrize("lang", languages())
def test_the_committed_schema_is_what_the_models_generate(lang):
    path = ROOT / SCHEMA_DIR / file_name(lang)
    assert path.is_file() and path.read_text(encoding="utf-8") == schema_text(lang), (
        f"{path.relative_to(ROOT)} is stale: the scenario's models or their messages changed. Run `{COMMAND}` "
        "and commit the result")


def test_stale_names_nothing_now():
    assert stale(ROOT) == [], f"run `{COMMAND}`"


@pytest.mark.parametrize("lang", languages())
def test_the_schema_is_a_valid_draft_2020_12_schema(lang):
    schema = json.loads((ROOT / SCHEMA_DIR / file_name(lang)).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_descriptions_come_from_the_message_catalogs():
    data = SCHEMA["$defs"]["DataSection"]["properties"]
    assert data["train_tokens"]["description"] == "Training tokens (tokens)"
    zh = json.loads((ROOT / SCHEMA_DIR / file_name("zh")).read_text(encoding="utf-8"))
    assert zh["$defs"]["DataSection"]["properties"]["train_tokens"]["description"].startswith("训练 token")
    assert "trainbudget catalog presets" in SCHEMA["$defs"]["ModelSection"]["properties"]["preset"]["description"]
    bare = [name for name, sub in SCHEMA["properties"].items() if "description" not in sub]
    assert not bare, (f"sections without a description: {bare}; add scenario.schema.sections.<name> to "
                      f"budget/messages/*/scenario.yaml (every language) and run `{COMMAND}`")


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.name)
def test_every_bundled_scenario_names_the_schema_in_its_first_line(path):
    first = path.read_text(encoding="utf-8").splitlines()[0]
    lang = yaml.safe_load(path.read_text(encoding="utf-8")).get("language", "en")
    assert first == f"# yaml-language-server: $schema=../{SCHEMA_DIR}/{file_name(lang)}"
    assert (path.parent / first.partition("$schema=")[2]).resolve().is_file()


# --- what the schema accepts ----------------------------------------------------------------------

@pytest.mark.parametrize("path", BUNDLED + STARTERS, ids=lambda p: p.name)
def test_the_schema_accepts_every_bundled_scenario(path, catalog):
    data = load(path)
    assert schema_errors(data) == []
    assert loader_problems(data, catalog) is None       # the loader takes the same data as the schema saw it


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("job", ["pretraining", "continued_pretraining", "sft", "lora"])
def test_the_schema_accepts_every_starter_of_trainbudget_new_which_names_it(job, lang, tmp_path, catalog):
    """`trainbudget new --job MODE -o FILE` names the schema relative to FILE, and the schema
    (the starter's language's) accepts what it wrote, as the loader does."""
    from budget.cli.new import starter
    path = tmp_path / "deeper" / "plan.yaml"
    path.parent.mkdir()
    path.write_text(starter(job, lang, path), encoding="utf-8")
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert (path.parent / first.partition("$schema=")[2]).resolve() == (ROOT / SCHEMA_DIR / file_name(lang)).resolve()
    data = load(path)
    zh = jsonschema.Draft202012Validator(json.loads((ROOT / SCHEMA_DIR / file_name(lang)).read_text(encoding="utf-8")))
    assert schema_errors(data) == [] and not list(zh.iter_errors(data))
    assert loader_problems(data, catalog) is None


@pytest.mark.parametrize("path", [p for p in BUNDLED if "options" in load(p)], ids=lambda p: p.name)
def test_the_schema_accepts_every_option_merged_onto_its_base(path):
    data = load(path)
    base = {k: v for k, v in data.items() if k != "options"}
    for option in data["options"]:
        assert schema_errors(merge(base, option)) == [], option.get("name")


@pytest.mark.parametrize("text", ["175B", "3T", "1.5M", "175e9", "175_000_000_000", " 70b "])
def test_a_count_with_a_suffix_validates_as_the_loader_reads_it(text, catalog):
    data = load(SEED_H100)
    data["model"]["params"] = text
    assert schema_errors(data) == []
    assert loader_problems(data, catalog) is None


# --- the bad corpus -------------------------------------------------------------------------------

def _resolve(node: dict) -> dict:
    while "$ref" in node:
        node = SCHEMA["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def _branches(node: dict) -> list[dict]:
    node = _resolve(node)
    if "anyOf" in node:
        out = []
        for sub in node["anyOf"]:
            out += [{**{k: v for k, v in node.items() if k != "anyOf"}, **b} for b in _branches(sub)]
        return out
    return [node]


def _child(node: dict, key) -> dict | None:
    """The schema of `key` (a property name or a list index) under `node`."""
    for branch in _branches(node):
        if isinstance(key, int) and isinstance(branch.get("items"), dict):
            return branch["items"]
        if isinstance(key, str) and key in branch.get("properties", {}):
            return branch["properties"][key]
        if isinstance(key, str) and isinstance(branch.get("additionalProperties"), dict):
            return branch["additionalProperties"]
    return None


def bounded_numbers(node: dict, path: tuple = (), depth: int = 0):
    """(path, the number's schema) of every bounded number the schema names, in mappings only
    (list rows are reached through the scenarios' own rows below)."""
    if depth > 6:
        return
    for branch in _branches(node):
        if branch.get("type") in ("number", "integer") and any(k in branch for k in (
                "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")):
            yield path, branch
        for name, sub in branch.get("properties", {}).items():
            yield from bounded_numbers(sub, (*path, name), depth + 1)


def _leaves(data, path: tuple = ()):
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _leaves(value, (*path, i))
    else:
        yield path, data


def _schema_at(path: tuple) -> dict | None:
    node = SCHEMA
    for key in path:
        node = _child(node, key)
        if node is None:
            return None
    return node


def _set(data: dict, path: tuple, value) -> dict | None:
    """A copy of `data` with `value` at `path`, its mappings made where missing; None when the
    path runs through something that is not a mapping or a list."""
    out = copy.deepcopy(data)
    node = out
    for key in path[:-1]:
        if isinstance(node, dict):
            node = node.setdefault(key, {})
            if node is None:
                return None
        elif isinstance(node, list) and isinstance(key, int) and key < len(node):
            node = node[key]
        else:
            return None
        if not isinstance(node, (dict, list)):
            return None
    if not isinstance(node, dict) and not (isinstance(node, list) and isinstance(path[-1], int)):
        return None
    node[path[-1]] = value
    return out


def _dotted(path: tuple) -> str:
    return "".join(f"[{k}]" if isinstance(k, int) else (f".{k}" if i else k) for i, k in enumerate(path))


def _past(bound: float, integer: bool, up: bool) -> float:
    step = 1 if integer else max(abs(bound) * 1e-6, 1e-9)
    value = bound + step if up else bound - step
    return int(value) if integer else value


def _number_cases(path: tuple, number: dict):
    """(case name, value, refused?) around one number's bounds."""
    integer = number.get("type") == "integer"
    lo, hi = number.get("minimum"), number.get("maximum")
    xlo, xhi = number.get("exclusiveMinimum"), number.get("exclusiveMaximum")
    if lo is not None:
        yield "below-minimum", _past(lo, integer, up=False), True
        yield "at-minimum", lo, False
    if xlo is not None:
        yield "at-exclusive-minimum", xlo, True
    if hi is not None:
        yield "above-maximum", _past(hi, integer, up=True), True
        yield "at-maximum", hi, False
    if xhi is not None:
        yield "at-exclusive-maximum", xhi, True
    yield "text", "many", True
    yield "true", True, True
    if integer:
        yield "fraction", (lo if lo is not None else (xlo or 0)) + 1.5, True


def mutants():
    """(id, scenario data, dotted path, refused?) of the corpus."""
    seen = set()
    bases = {p.stem: load(p) for p in BUNDLED}
    # Every bounded number of the schema, set on the seed (its mappings made where needed).
    seed = bases["gpt3-175b-h100"]
    for path, number in bounded_numbers(SCHEMA):
        for case, value, refused in _number_cases(path, number):
            data = _set(seed, path, value)
            if data is not None:
                seen.add((path, case))
                yield f"seed:{_dotted(path)}:{case}", data, _dotted(path), refused
    # Every bounded number a bundled scenario holds, list rows included (stages, staffing).
    for stem, base in bases.items():
        for path, value in _leaves(base):
            if path and path[0] == "options":
                continue
            node = _schema_at(path)
            numbers = [b for b in _branches(node) if b.get("type") in ("number", "integer")] if node else []
            if not numbers or isinstance(value, bool):
                continue
            generic = tuple("*" if isinstance(k, int) else k for k in path)
            for case, bad, refused in _number_cases(path, numbers[0]):
                if refused and (generic, case) not in seen:
                    seen.add((generic, case))
                    yield f"{stem}:{_dotted(path)}:{case}", _set(base, path, bad), _dotted(path), refused
    # An unknown key in every mapping a bundled scenario has (the top level included).
    for stem, base in bases.items():
        mappings = [()] + [path[:-1] for path, _ in _leaves(base) if path and path[0] not in ("options", "sources")]
        for path in dict.fromkeys(mappings):
            node = _schema_at(path)
            if node is None or not any(b.get("additionalProperties") is False for b in _branches(node)):
                continue
            generic = tuple("*" if isinstance(k, int) else k for k in path)
            if (generic, "unknown") in seen:
                continue
            seen.add((generic, "unknown"))
            yield f"{stem}:{_dotted(path) or 'top'}:unknown-key", _set(base, (*path, "gpu_cont"), 1), \
                _dotted((*path, "gpu_cont")), True
    # Hand-written: wrong types and texts the loader refuses field by field.
    hand = {
        "params-bad-suffix": (("model", "params"), "175X"),
        "params-empty-text": (("model", "params"), ""),
        "tokens-a-list": (("data", "train_tokens"), [3e12]),
        "accelerator-a-number": (("hardware", "accelerator"), 100),
        "hardware-a-list": (("hardware",), ["nvidia_h100_sxm"]),
        "tier-unknown": (("prices", "tier"), "monthly"),
        "currency-lowercase": (("prices", "currency"), "usd"),
        "ownership-unknown": (("ownership",), "leased"),
        "language-a-number": (("language",), 7),
        "staffing-a-mapping": (("staffing",), {"role": "x"}),
        "price-unknown-key": (("prices", "per_gpu_hour"), {"amount": 1.8, "currency": "USD", "vat": 0}),
        "price-currency-bad": (("prices", "per_gpu_hour"), {"amount": 1.8, "currency": "dollars"}),
        "price-negative": (("prices", "per_gpu_hour"), -1.8),
        "start-date-not-a-date": (("schedule", "start_date"), "next spring"),
        "flops-basis-unknown": (("hardware", "flops_basis"), "six_n_d"),
        "name-a-mapping": (("name",), {"en": "x"}),
        "sources-value-a-number": (("sources", "seed_002"), 2),
    }
    for case, (path, value) in hand.items():
        yield f"hand:{case}", _set(seed, path, value), _dotted(path), True


MUTANTS = list(mutants())


def test_the_corpus_is_large_and_covers_each_kind_of_mistake():
    names = [m[0] for m in MUTANTS]
    assert len(MUTANTS) > 500
    for kind in ("below-minimum", "above-maximum", "at-exclusive-minimum", "text", "true", "fraction",
                 "unknown-key", "hand:"):
        assert any(kind in n for n in names), kind
    assert any(n.startswith("seed:stages[0]") or ":stages[0]." in n for n in names)


def _bound_problem(problems, path: str) -> bool:
    return any(p.path == path and re.search(r"greater than|less than", str(p.message_in("en")))
               for p in problems or ())


def disagreements(cases, catalog) -> list[str]:
    """The cases where the schema and the loader do not agree as they should."""
    out = []
    for case, data, path, refused in cases:
        if data is None:
            out.append(f"{case}: could not be made")
            continue
        errors, problems = schema_errors(data), loader_problems(data, catalog)
        if refused and not errors:
            out.append(f"{case}: the schema accepts it")
        elif refused and problems is None:
            out.append(f"{case}: the loader accepts what the schema refuses ({errors[0]})")
        elif not refused:
            # At a bound: the schema takes this number; the loader may refuse the scenario for a
            # rule across fields, but never for this number's bounds.
            mine = [e for e in errors if e.startswith(path + ":")]
            if mine:
                out.append(f"{case}: the schema refuses a number at its bound ({mine[0]})")
            if _bound_problem(problems, path):
                out.append(f"{case}: the loader refuses a number at the schema's bound")
    return out


GROUPS = sorted({m[0].split(":", 1)[0] for m in MUTANTS})


@pytest.mark.parametrize("group", GROUPS)
def test_schema_and_loader_agree_on_every_mutant(group, catalog):
    """`seed`: every bounded number of the schema set on the seed; a bundled scenario's name:
    the numbers and mappings it holds (list rows included); `hand`: the hand-written cases."""
    cases = [m for m in MUTANTS if m[0].split(":", 1)[0] == group]
    assert cases
    found = disagreements(cases, catalog)
    assert not found, f"{len(found)} of {len(cases)} cases:\n" + "\n".join(found)


def test_an_at_bound_case_is_accepted_by_the_schema_and_a_past_bound_one_refused():
    """A worked example: data.train_tokens has the loader's bounds 1e6..1e16 (base.Tokens)."""
    data = load(SEED_H100)
    for value, ok in ((1e6, True), (1e16, True), (999_999, False), (1.00000001e16, False)):
        data["data"]["train_tokens"] = value
        assert (schema_errors(data) == []) == ok, value
    assert not math.isnan(SCHEMA["$defs"]["DataSection"]["properties"]["train_tokens"]["maximum"])
