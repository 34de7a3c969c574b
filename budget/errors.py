"""Typed input errors: each problem names a file, a field path and the fix.

The library raises these; only the CLI turns them into messages and exit status 2.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticCustomError


@dataclass(frozen=True)
class Problem:
    path: str       # dotted field path (hardware.gpu_count), or "line 3, column 5" for YAML syntax
    message: str
    fix: str


class InputError(Exception):
    """Bad input in one file: one or more problems, each with a path and a fix."""

    def __init__(self, file: str | Path, problems: list[Problem]):
        self.file = str(file)
        self.problems = problems
        super().__init__(self.render())

    def render(self) -> str:
        lines = []
        for p in self.problems:
            where = f"{self.file}: {p.path}: " if p.path else f"{self.file}: "
            lines.append(f"{where}{p.message}")
            lines.append(f"  fix: {p.fix}")
        return "\n".join(lines)


class ScenarioError(InputError):
    pass


class CatalogError(InputError):
    pass


def suggest(word: str, choices: list[str]) -> str:
    """ "did you mean 'x'? " for the closest choice, also matching ids without their suffix."""
    stems = {}
    for choice in choices:
        stems.setdefault(choice, choice)
        parts = choice.split("_")
        for n in range(2, len(parts)):
            stems.setdefault("_".join(parts[:n]), choice)
    close = difflib.get_close_matches(word, list(stems), n=1, cutoff=0.6)
    return f"did you mean '{stems[close[0]]}'? " if close else ""


def rule_error(message: str, fix: str, field: str | None = None) -> PydanticCustomError:
    """A cross-field rule broken; `field` names the path the message should point at."""
    ctx = {"message": message, "fix": fix}
    if field:
        ctx["field"] = field
    return PydanticCustomError("trainbudget_rule", "{message}", ctx)


# --- YAML -------------------------------------------------------------------------------

MAX_YAML_BYTES = 1_000_000      # a scenario is a few kilobytes; a catalog, a few tens
MAX_YAML_DEPTH = 50             # a scenario nests three levels; PyYAML composes recursively


class _TooDeep(yaml.composer.ComposerError):
    pass


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys, which plain YAML silently lets the last win, and
    documents nested deeper than MAX_YAML_DEPTH, which would exhaust Python's recursion."""

    def __init__(self, stream):
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent, index):
        event = self.peek_event()
        nested = isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent))
        if nested and self._depth >= MAX_YAML_DEPTH:
            raise _TooDeep(None, None, f"nested more than {MAX_YAML_DEPTH} levels deep",
                           event.start_mark)
        self._depth += nested
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= nested


def _mapping_no_duplicates(loader: _StrictLoader, node: yaml.MappingNode, deep=False):
    seen: dict = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "a key is a list or mapping, not a name", key_node.start_mark) from None
        if key in seen:
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first at line {seen[key] + 1})", mark)
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


def _marked(construct):
    """A scalar constructor whose ValueError (a 30 February, a 5,000-digit integer) names its line."""
    def wrapped(loader, node):
        try:
            return construct(loader, node)
        except (ValueError, OverflowError) as exc:
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read {str(node.value)[:40]!r} ({str(exc)[:80]})",
                node.start_mark) from None
    return wrapped


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_no_duplicates)
for _tag, _construct in (("int", yaml.constructor.SafeConstructor.construct_yaml_int),
                         ("float", yaml.constructor.SafeConstructor.construct_yaml_float),
                         ("timestamp", yaml.constructor.SafeConstructor.construct_yaml_timestamp)):
    _StrictLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _marked(_construct))


def load_yaml(path: Path, error: type[InputError]) -> object:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_YAML_BYTES + 1)
        if len(raw) > MAX_YAML_BYTES:
            raise error(path, [Problem("", f"the file is over {MAX_YAML_BYTES:,} bytes, too large "
                                           "for a scenario", "check that this is the right file; "
                                           "a scenario is a few kilobytes")])
        text = raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except FileNotFoundError:
        raise error(path, [Problem("", "file not found", "check the path")]) from None
    except UnicodeDecodeError as exc:
        raise error(path, [Problem("", f"not UTF-8 text ({exc.reason})",
                                   "save the file as UTF-8")]) from None
    except OSError as exc:
        raise error(path, [Problem("", f"cannot read the file ({exc.strerror})",
                                   "check the path and its permissions")]) from None
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except _TooDeep as exc:
        mark = exc.problem_mark
        raise error(path, [Problem(f"line {mark.line + 1}, column {mark.column + 1}", exc.problem,
                                   "a scenario nests a few levels at most; check the brackets "
                                   "and the indentation")]) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        what = exc.problem or exc.context or "invalid YAML"
        start = exc.context_mark
        if exc.context and start and mark and start.line != mark.line:
            what += f" ({exc.context} at line {start.line + 1}, column {start.column + 1})"
        fix = ("give each key once" if "duplicate key" in str(what)
               else "write a real date (YYYY-MM-DD) or an ordinary number, or quote the value"
               if "cannot read" in str(what)
               else "write each key as a plain name" if "not a name" in str(what)
               else "check the indentation and quoting on that line; text containing ': ' or "
                    "starting with a special character needs quotes")
        raise error(path, [Problem(where, f"this is not valid YAML: {what}", fix)]) from None
    except yaml.reader.ReaderError as exc:
        before = text[:exc.position] if isinstance(exc.position, int) else ""
        where = f"line {before.count(chr(10)) + 1}, column {len(before) - before.rfind(chr(10))}"
        raise error(path, [Problem(where, f"this is not valid YAML: character "
                                          f"U+{exc.character if isinstance(exc.character, int) else 0:04X} "
                                          "is not allowed in YAML",
                                   "remove it, or write it as an escape inside double quotes")]) from None
    except yaml.YAMLError as exc:
        raise error(path, [Problem("", f"this is not valid YAML: {' '.join(str(exc).split())}",
                                   "check the file's YAML syntax")]) from None


# --- pydantic ---------------------------------------------------------------------------

def problems_from_validation(exc: ValidationError, model: type[BaseModel]) -> list[Problem]:
    problems = []
    # An unknown key usually explains a "missing" one (a typo): list unknown keys first.
    errors = sorted(exc.errors(include_url=False), key=lambda e: e["type"] != "extra_forbidden")
    for err in errors:
        ctx = err.get("ctx") or {}
        loc = [str(part) for part in err["loc"]]
        path = ctx.get("field") or _dotted(loc)
        problems.append(Problem(path or "(top level)", _message(err), _fix(err, loc, model)))
    return problems


def _dotted(loc: list[str]) -> str:
    out = ""
    for part in loc:
        if part.isdigit():
            out += f"[{part}]"
        elif part.startswith("function-") or part in {"literal", "str", "int", "float", "bool",
                                                      "[key]"}:
            continue  # pydantic's union-branch tags, noise to a planner
        else:
            out += ("." if out else "") + part
    return out


def _message(err: dict) -> str:
    kind, ctx, got = err["type"], err.get("ctx") or {}, err.get("input")
    if kind == "trainbudget_rule":
        return ctx["message"]
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "required but missing"
    text = err["msg"].replace("Input should be", "should be")
    if kind.startswith("value_error") and text.startswith("Value error, "):
        text = text[len("Value error, "):]
    if got is not None and not isinstance(got, (dict, list)):
        text += f" (got {got!r})"
    return text


def _fix(err: dict, loc: list[str], model: type[BaseModel]) -> str:
    kind, ctx = err["type"], err.get("ctx") or {}
    field = _dotted(loc) or "the file"
    if kind == "trainbudget_rule":
        return ctx["fix"]
    if kind == "extra_forbidden":
        allowed = _allowed_keys(model, loc[:-1])
        close = difflib.get_close_matches(loc[-1], allowed, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        return f"{hint}remove or rename it; allowed keys here: {', '.join(allowed)}"
    if kind == "missing":
        return f"add {field}"
    if kind in {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}:
        bound = ctx.get("gt", ctx.get("ge", ctx.get("lt", ctx.get("le"))))
        words = {"greater_than": "greater than", "greater_than_equal": "at least",
                 "less_than": "less than", "less_than_equal": "at most"}[kind]
        return f"set {field} to a number {words} {_bound(bound)}"
    if kind in {"int_type", "int_parsing", "int_from_float"}:
        return f"set {field} to a whole number"
    if kind in {"float_type", "float_parsing", "finite_number"}:
        return f"set {field} to a number, such as 175e9 or 175B"
    if kind == "literal_error":
        return f"set {field} to one of {ctx.get('expected')}"
    if kind in {"bool_type", "bool_parsing"}:
        return f"set {field} to true or false"
    if kind in {"model_type", "dict_type"}:
        return f"make {field} a mapping of keys to values"
    if kind in {"list_type"}:
        return f"make {field} a list (lines starting with '- ')"
    if kind in {"date_type", "date_parsing", "date_from_datetime_parsing"}:
        return f"set {field} to a date written YYYY-MM-DD"
    if kind in {"string_type", "string_too_long", "string_too_short", "string_pattern_mismatch"}:
        return f"set {field} to suitable text ({err['msg'].lower()})"
    return f"correct {field}"


def _bound(value) -> str:
    """1000000.0 -> 1000000, 1e+16 -> 1e16: bounds as a planner would write them."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e9:
        return str(int(value))
    return f"{value:g}".replace("e+", "e") if isinstance(value, float) else str(value)


def _allowed_keys(model: type[BaseModel], loc: list[str]) -> list[str]:
    """The keys a mapping at `loc` may hold, found by walking the pydantic model."""
    current: object = model
    for part in loc:
        if part.isdigit():
            continue
        fields = getattr(current, "model_fields", None)
        if not fields or part not in fields:
            return []
        current = _model_in(fields[part].annotation)
    fields = getattr(current, "model_fields", None) or {}
    return [f.alias or name for name, f in fields.items()]


def _model_in(annotation):
    import typing

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None
