"""The JSON Schema of a scenario file, generated from the pydantic models the loader validates
with (`budget.inputs.scenario.Scenario`), so an editor can complete and check a scenario's keys.

    python3 -m budget.inputs.scenario_schema --write     regenerate schemas/scenario.schema*.json
    python3 -m budget.inputs.scenario_schema --check     exit 1 when a committed file is stale

Run `--write` after any change to budget/inputs/schema/*, budget/inputs/scenario.py, the input
declarations (budget/model/inputs_*.py: their labels are the descriptions) or the descriptions'
messages; tests/test_scenario_schema.py fails until the committed files equal what the models give.

What the schema holds (draft 2020-12): every key the loader knows, unknown keys refused
(`additionalProperties: false`, as the models' extra="forbid"), types, enumerations, patterns
and each number's bounds exactly as the loader's (ge/gt/le/lt); counts (parameters, tokens) as a
number or as text with a suffix ("175B", "3T"), as the loader reads them; an amount as a number
in the scenario's currency or {amount, currency}. Descriptions: each field's label, unit and help
from the message catalogs (the input the field feeds, budget/model/inputs_*.py `path=`), each
section's from scenario.yaml's `scenario.schema.sections`.

What it cannot say (the loader still refuses these, with a message naming the field):
- rules across fields: a GPU price given once (per_gpu_hour or catalog), tp x pp dividing the
  GPU count, stages' tokens adding up, a calibration's one measurement, deadlines;
- rules that need the catalogs: an accelerator, preset, price or grid id that exists;
- the text policy of free text (no control characters, nothing a spreadsheet would read as a
  formula, the length limits), and a count written as text against its bounds;
- numbers written as quoted text ("12"), which pydantic's lax mode accepts: the schema wants a
  number there, nudging the file to the plain form.
The scenario's `options:` are overrides merged onto the scenario (budget/inputs/options.py); the
schema checks only that they are mappings.

Files: schemas/scenario.schema.json (English, which bundled scenarios name in their first line,
`# yaml-language-server: $schema=../schemas/scenario.schema.json`) and one per other language
(schemas/scenario.schema.zh.json). The wheel carries schemas/ as budget/schemas/, beside
budget/scenarios/, so the relative reference holds there too.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path

from pydantic.json_schema import GenerateJsonSchema

from ..core.i18n import DEFAULT_LANG, catalog as messages, languages
from .schema.base import _COUNT, _parse_count
from .schema.prices import as_amount

SCHEMA_DIR = "schemas"
DRAFT = "https://json-schema.org/draft/2020-12/schema"
COMMAND = "python3 -m budget.inputs.scenario_schema --write"     # i18n: not text (a command)

# A count as text: the loader drops '_' and ',' and then reads _COUNT.
COUNT_TEXT = _COUNT.pattern.replace("[0-9]", "[0-9_,]")
_BOUNDS = {"ge": "minimum", "gt": "exclusiveMinimum", "le": "maximum", "lt": "exclusiveMaximum"}
# Keywords whose value is a schema, a list of schemas, or a mapping of names to schemas.
_ONE = ("items", "additionalProperties", "propertyNames", "not", "contains")
_LIST = ("anyOf", "oneOf", "allOf", "prefixItems")
_MAP = ("properties", "$defs", "patternProperties")


def file_name(lang: str = DEFAULT_LANG) -> str:
    return "scenario.schema.json" if lang == DEFAULT_LANG else f"scenario.schema.{lang}.json"


class _Generator(GenerateJsonSchema):
    """pydantic's generator, taught the loader's two before-validators: a count's suffixed text
    and an amount's plain number."""

    def function_before_schema(self, schema):
        function = schema.get("function", {}).get("function")
        inner = self.generate_inner(schema["schema"])
        if function is _parse_count:
            return {"anyOf": [inner, {"type": "string", "pattern": COUNT_TEXT}]}
        if function is as_amount:
            amount = _amount_model(schema["schema"]).model_json_schema(schema_generator=_Plain)["properties"]["amount"]
            _walk(amount, _tidy)
            return {"anyOf": [amount, inner]}
        return inner

    def date_schema(self, schema):
        """A date as the loader reads it from YAML: YYYY-MM-DD (a `format` alone is not checked
        by every validator)."""
        return {**super().date_schema(schema), "pattern": r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}

    def field_title_should_be_set(self, schema) -> bool:
        return False


def _amount_model(core: dict):
    """The model an amount's number becomes (Price, StaffCost), from its core schema: the model
    itself, or a reference named module.Class:id."""
    if "cls" in core:
        return core["cls"]
    module, _, name = core["schema_ref"].partition(":")[0].rpartition(".")
    return getattr(sys.modules[module], name)        # imported already: the model uses it


class _Plain(GenerateJsonSchema):
    def field_title_should_be_set(self, schema) -> bool:
        return False


def _walk(node, visit, path: str = "") -> None:
    """Call visit(schema, path) on every schema object under `node`, keyword-aware (a property
    named `description` or `ge` is a name, not a keyword)."""
    if not isinstance(node, dict):
        return
    visit(node, path)
    for key in _ONE:
        if isinstance(node.get(key), dict):
            _walk(node[key], visit, path)
    for key in _LIST:
        for sub in node.get(key, ()):
            _walk(sub, visit, path)
    for key in _MAP:
        for name, sub in node.get(key, {}).items():
            _walk(sub, visit, f"{path}.{name}" if path else name)


def _tidy(node: dict, _path: str) -> None:
    """JSON Schema's names for pydantic's bounds; no titles; no docstrings (developer notes,
    not the messages' descriptions, which are added after)."""
    for short, keyword in _BOUNDS.items():
        if short in node and ("type" in node or "anyOf" in node):
            node[keyword] = node.pop(short)
    node.pop("title", None)
    node.pop("description", None)


_CLOSING = (")", "\uff09")       # i18n: not text (a parenthesis, ASCII or full-width)


def _unit(unit: str, lang: str, texts: dict[str, str]) -> str:
    return texts.get(f"units.{unit}", unit) if unit else ""


def descriptions(lang: str = DEFAULT_LANG) -> dict[str, str]:
    """Scenario path ("prices.vat_rate", "stages[].tokens") -> its description in `lang`: the
    label, unit and help of the model input the field feeds; a section's own from the messages."""
    from ..model.model import build_model

    texts = messages(lang)
    out: dict[str, str] = {}
    for item in build_model(lang).inputs.values():
        if not item.path or item.path in out:
            continue
        unit = _unit(item.unit, lang, texts)
        # A label that ends in its own parenthesis ("Training tokens: low (base ×)") says its unit.
        words = (texts["scenario.schema.labelled"].format(label=item.label, unit=unit)
                 if unit and not item.label.rstrip().endswith(_CLOSING) else item.label)
        if item.help:
            words = texts["scenario.schema.helped"].format(text=words, help=item.help)
        out[item.path] = words
    for prefix in ("scenario.schema.sections.", "scenario.schema.fields."):
        for key, value in texts.items():
            if key.startswith(prefix):
                out.setdefault(key.removeprefix(prefix), value)
    return out


def _train_tokens_by_job(schema: dict) -> None:

    """data.train_tokens is required but for sft and lora jobs, whose tokens may be
    job.dataset_tokens × job.epochs instead (budget/inputs/schema/job.py fills it before the
    sections validate): a condition on the job's mode, as the loader's rule."""
    from .schema.job import TOKENS_FROM_EPOCHS

    data = schema["$defs"]["DataSection"]
    data["required"] = [name for name in data.get("required", []) if name != "train_tokens"]
    if not data["required"]:
        del data["required"]
    schema["required"] = [name for name in schema["required"] if name != "data"]   # the condition requires it
    tokens = {"properties": {"data": {"required": ["train_tokens"]}}, "required": ["data"]}
    epochs = {"properties": {"job": {"required": ["dataset_tokens"]}}}
    fine_tuning = {"properties": {"job": {"properties": {"mode": {"enum": list(TOKENS_FROM_EPOCHS)}},
                                          "required": ["mode"]}}, "required": ["job"]}
    schema.setdefault("allOf", []).append({"if": fine_tuning, "then": {"anyOf": [tokens, epochs]}, "else": tokens})


def scenario_schema(lang: str = DEFAULT_LANG) -> dict:
    """The schema, as a JSON document (keys in a stable order)."""
    from .scenario import Scenario

    schema = Scenario.model_json_schema(schema_generator=_Generator, mode="validation")
    _walk(schema, _tidy)
    _train_tokens_by_job(schema)
    texts = messages(lang)
    words = descriptions(lang)
    defs = schema.get("$defs", {})
    reach: dict[str, set[str]] = {}

    def paths(node: dict, prefix: str) -> None:
        for name, sub in node.get("properties", {}).items():
            for ref, at in _refs(sub, f"{prefix}.{name}" if prefix else name):
                if at not in reach.setdefault(ref, set()):
                    reach[ref].add(at)
                    paths(defs[ref], at)

    paths(schema, "")
    described: set[str] = set()

    def describe(node: dict, prefix: str) -> None:
        """Each property's description at its path; a definition reached by one path is
        described in place, one reached by several (an amount, a spread) is copied into each
        place whose fields have descriptions of their own."""
        for name, sub in node.get("properties", {}).items():
            path = f"{prefix}.{name}" if prefix else name
            if path in words:
                sub["description"] = words[path]

            def visit(site: dict, at: str) -> None:
                ref = site.get("$ref", "").rsplit("/", 1)[-1]
                if not ref:
                    return
                if len(reach[ref]) == 1:
                    if ref not in described:
                        described.add(ref)
                        describe(defs[ref], at)
                elif any(f"{at}.{key}" in words for key in defs[ref].get("properties", {})):
                    site.pop("$ref")
                    site.update(copy.deepcopy(defs[ref]))
                    describe(site, at)
            _walk_items(sub, visit, path)

    describe(schema, "")
    used = {ref for node in [schema] for ref, _ in _all_refs(schema)}
    for name in [name for name in defs if name not in used]:
        del defs[name]
    document = {"$schema": DRAFT, "$id": f"https://trainbudget.invalid/{SCHEMA_DIR}/{file_name(lang)}",
                "title": texts["scenario.schema.title"], "description": texts["scenario.schema.description"]}
    document.update(schema)
    return document


def _refs(node: dict, path: str):
    """(definition name, the path its properties sit at) of every $ref under one property: a
    list's items sit at path[]."""
    found = []

    def visit(sub, at):
        ref = sub.get("$ref")
        if ref:
            found.append((ref.rsplit("/", 1)[-1], at))
    _walk_items(node, visit, path)
    return found


def _all_refs(node):
    found = []
    _walk(node, lambda sub, at: found.append((sub["$ref"].rsplit("/", 1)[-1], at)) if "$ref" in sub else None)
    return found


def _walk_items(node, visit, path: str) -> None:
    if not isinstance(node, dict):
        return
    visit(node, path)
    if isinstance(node.get("items"), dict):
        _walk_items(node["items"], visit, f"{path}[]")
    for key in _LIST:
        for sub in node.get(key, ()):
            _walk_items(sub, visit, path)


def schema_text(lang: str = DEFAULT_LANG) -> str:
    return json.dumps(scenario_schema(lang), ensure_ascii=False, indent=1, sort_keys=False) + "\n"


def schema_path(root: Path, lang: str = DEFAULT_LANG) -> Path:
    return root / SCHEMA_DIR / file_name(lang)


def stale(root: Path) -> list[Path]:
    """The committed schema files that differ from what the models give now."""
    out = []
    for lang in languages():
        path = schema_path(root, lang)
        if not path.is_file() or path.read_text(encoding="utf-8") != schema_text(lang):
            out.append(path)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m budget.inputs.scenario_schema",  # i18n: not text
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--write", action="store_true")
    p.add_argument("--check", action="store_true")
    p.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent.parent)
    args = p.parse_args(argv)
    if args.write:
        (args.root / SCHEMA_DIR).mkdir(exist_ok=True)
        for lang in languages():
            path = schema_path(args.root, lang)
            path.write_text(schema_text(lang), encoding="utf-8")
            print(path)
        return 0
    if args.check:
        old = stale(args.root)
        for path in old:
            print(f"{path}: stale; run {COMMAND}", file=sys.stderr)  # i18n: not text (a developer's tool)
        return 1 if old else 0
    sys.stdout.write(schema_text())
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

