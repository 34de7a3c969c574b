"""Typed input errors: each problem names a file, a field path and the fix.

The library raises these; only the CLI turns them into messages and exit status 2. A problem
holds message ids and their named figures (`Msg`), not text: it is rendered in the reader's
language where it is printed (`Problem.message_in(lang)`); `.message` and `.fix` are English.
"""

from __future__ import annotations

import difflib
import re
from decimal import Decimal
from pathlib import Path

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticCustomError

from .i18n import DEFAULT_LANG, fmt
from .message import Msg, say  # noqa: F401 (the names every layer imports from here)
from .limits import MAX_YAML_BYTES, MAX_YAML_DEPTH  # noqa: F401 (catalog.py imports them from here)


class Lower:
    """A message rendered in lower case (a pydantic sentence quoted inside another)."""

    __slots__ = ("inner",)

    def __init__(self, inner):
        self.inner = inner

    def render(self, lang: str = DEFAULT_LANG) -> str:
        return str(say(self.inner, lang)).lower()


class Joined:
    """Figures (Msgs or texts) joined by a catalog separator (`sep`, a message id), as one figure."""

    __slots__ = ("items", "sep")

    def __init__(self, items, sep: str):
        self.items = tuple(items)
        self.sep = sep

    def render(self, lang: str = DEFAULT_LANG) -> str:
        return fmt(self.sep, lang).join(str(say(item, lang)) for item in self.items)

    def __eq__(self, other) -> bool:
        return isinstance(other, Joined) and (self.items, self.sep) == (other.items, other.sep)

    def __hash__(self) -> int:
        return hash(self.sep)

    def __repr__(self) -> str:
        return f"Joined({list(self.items)!r}, {self.sep!r})"


def text_in(value, lang: str = DEFAULT_LANG) -> str:
    return str(say(value, lang))


def both(first, second) -> Msg:
    """`first and second` as a sentence part in the reader's language."""
    return Msg("errors.list.and", first=first, second=second)


def one_of(items: list[str]):
    """'a', 'b' or 'c' in the reader's language (the items are ids, shown as they are)."""
    if len(items) == 1:
        return items[0]
    return Msg("errors.list.or", items=", ".join(items[:-1]), last=items[-1])


TOP_LEVEL = Msg("errors.where.top_level")


class Problem:
    """One problem: where (a dotted field path, a cell, or a line and column), what is wrong
    and the fix. `message` and `fix` are Msgs (or plain text that reads the same in every
    language: a path, an id); `renames` rewrite paths inside the rendered fix (an option's
    `hardware.gpu_count` is `options[1].hardware.gpu_count`)."""

    __slots__ = ("at", "what", "how", "renames")

    def __init__(self, path, message, fix, renames: tuple = ()):
        self.at = path
        self.what = message
        self.how = fix
        self.renames = tuple(renames)

    def path_in(self, lang: str = DEFAULT_LANG) -> str:
        return text_in(self.at, lang)

    def message_in(self, lang: str = DEFAULT_LANG) -> str:
        return text_in(self.what, lang)

    def fix_in(self, lang: str = DEFAULT_LANG) -> str:
        fix = text_in(self.how, lang)
        for inner, outer in self.renames:
            fix = re.sub(rf"(?<![\w.\[\]]){re.escape(inner)}(?![\w.\[])", lambda _: outer, fix)
        return fix

    @property
    def path(self) -> str:
        return self.path_in()

    @property
    def message(self) -> str:
        """The message in English."""
        return self.message_in()

    @property
    def fix(self) -> str:
        """The fix in English."""
        return self.fix_in()

    @property
    def top_level(self) -> bool:
        return self.at in ("", TOP_LEVEL)

    def moved(self, path: str) -> Problem:
        """This problem at another path (inside an option): the fix's own path follows."""
        inner = "" if self.top_level else self.path
        renames = self.renames + (((inner, path),) if inner else ())
        return Problem(path, self.what, self.how, renames)

    def _key(self):
        return self.path, self.message, self.fix

    def __eq__(self, other) -> bool:
        return isinstance(other, Problem) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Problem({self.at!r}, {self.what!r}, {self.how!r})"


def located(file: str, problem: Problem, lang: str = DEFAULT_LANG, *,
            at_path: str = "errors.format.at_path", at_file: str = "errors.format.at_file") -> str:
    """'FILE: path: message' (or 'FILE: message') in `lang`, said by the templates `at_path`
    and `at_file` (the CLI's add its 'error:')."""
    path = problem.path_in(lang)
    if path:
        return fmt(at_path, lang, file=file, path=path, message=problem.message_in(lang))
    return fmt(at_file, lang, file=file, message=problem.message_in(lang))


class InputError(Exception):
    """Bad input in one file: one or more problems, each with a path and a fix. `lang` is the
    language of the input when it is known (a scenario's `language`, a workbook's), so its
    messages can be printed in it."""

    def __init__(self, file: str | Path, problems: list[Problem], lang: str | None = None):
        self.file = str(file)
        self.problems = problems
        self.lang = lang
        super().__init__(self.render())

    def render(self, lang: str = DEFAULT_LANG) -> str:
        lines = []
        for p in self.problems:
            lines.append(located(self.file, p, lang))
            lines.append(fmt("errors.format.fix", lang, fix=p.fix_in(lang)))
        return "\n".join(lines)


class ScenarioError(InputError):
    pass


class CatalogError(InputError):
    pass


def suggest(word: str, choices: list[str]) -> Msg | str:
    """ "did you mean 'x'? " for the closest choice, also matching ids without their suffix."""
    stems = {}
    for choice in choices:
        stems.setdefault(choice, choice)
        parts = choice.split("_")
        for n in range(2, len(parts)):
            stems.setdefault("_".join(parts[:n]), choice)
    close = difflib.get_close_matches(word, list(stems), n=1, cutoff=0.6)
    return Msg("errors.did_you_mean", choice=stems[close[0]]) if close else ""


def rule_error(message, fix=None, field: str | None = None, *, got: bool = False) -> PydanticCustomError:
    """A cross-field rule broken; `field` names the path the message should point at. `fix`
    None: the generic 'correct <field>'; `got`: the message ends with the value given."""
    ctx = {"message": message, "fix": fix}
    if field:
        ctx["field"] = field
    if got:
        ctx["got"] = True
    return PydanticCustomError("trainbudget_rule", "{message}", ctx)


# --- YAML -------------------------------------------------------------------------------

class _TooDeep(yaml.composer.ComposerError):
    pass


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys, which plain YAML silently lets the last win, and
    documents nested deeper than MAX_YAML_DEPTH, which would exhaust Python's recursion. Its own
    problems are Msgs (PyYAML's are English text)."""

    def __init__(self, stream):
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent, index):
        event = self.peek_event()
        nested = isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent))
        if nested and self._depth >= MAX_YAML_DEPTH:
            raise _TooDeep(None, None, Msg("errors.yaml.too_deep.message", levels=MAX_YAML_DEPTH),
                           event.start_mark)
        self._depth += nested
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= nested


# The fix for each of the loader's own problems; PyYAML's get the general one.
_YAML_FIXES = {"errors.yaml.duplicate_key.message": "errors.yaml.duplicate_key.fix",
               "errors.yaml.cannot_read.message": "errors.yaml.cannot_read.fix",
               "errors.yaml.key_not_a_name.message": "errors.yaml.key_not_a_name.fix"}


def _mapping_no_duplicates(loader: _StrictLoader, node: yaml.MappingNode, deep=False):
    seen: dict = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, Msg("errors.yaml.key_not_a_name.message"), key_node.start_mark) from None
        if key in seen:
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                None, None, Msg("errors.yaml.duplicate_key.message", key=repr(key), line=seen[key] + 1),
                mark)
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


def _marked(construct):
    """A scalar constructor whose ValueError (a 30 February, a 5,000-digit integer) names its line."""
    def wrapped(loader, node):
        try:
            return construct(loader, node)
        except (ValueError, OverflowError) as exc:
            raise yaml.constructor.ConstructorError(
                None, None, Msg("errors.yaml.cannot_read.message", value=repr(str(node.value)[:40]),
                                detail=str(exc)[:80]),
                node.start_mark) from None
    return wrapped


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_no_duplicates)
for _tag, _construct in (("int", yaml.constructor.SafeConstructor.construct_yaml_int),
                         ("float", yaml.constructor.SafeConstructor.construct_yaml_float),
                         ("timestamp", yaml.constructor.SafeConstructor.construct_yaml_timestamp)):
    _StrictLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _marked(_construct))


def _line_column(line: int, column: int) -> Msg:
    return Msg("errors.where.line_column", line=line, column=column)


def load_yaml(path: Path, error: type[InputError]) -> object:
    from .reading import ReadRefused, read_regular
    try:
        try:
            raw = read_regular(path, MAX_YAML_BYTES)
        except ReadRefused as exc:
            if exc.message.key == "errors.read.too_large.message":
                raise error(path, [Problem("", Msg("errors.file.too_large.message", limit=MAX_YAML_BYTES),
                                           Msg("errors.file.too_large.fix"))]) from None
            raise error(path, [Problem("", exc.message, exc.fix)]) from None
        text = raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except FileNotFoundError:
        raise error(path, [Problem("", Msg("errors.file.not_found.message"),
                                   Msg("errors.file.not_found.fix"))]) from None
    except UnicodeDecodeError as exc:
        raise error(path, [Problem("", Msg("errors.file.not_utf8.message", reason=exc.reason),
                                   Msg("errors.file.not_utf8.fix"))]) from None
    except OSError as exc:
        raise error(path, [Problem("", Msg("errors.file.unreadable.message", reason=exc.strerror),
                                   Msg("errors.file.unreadable.fix"))]) from None
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except _TooDeep as exc:
        mark = exc.problem_mark
        raise error(path, [Problem(_line_column(mark.line + 1, mark.column + 1), exc.problem,
                                   Msg("errors.yaml.too_deep.fix"))]) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = _line_column(mark.line + 1, mark.column + 1) if mark else ""
        what = exc.problem or exc.context or Msg("errors.yaml.invalid")
        start = exc.context_mark
        fix = Msg(_YAML_FIXES.get(getattr(what, "key", None), "errors.yaml.syntax.fix"))
        if exc.context and start and mark and start.line != mark.line:
            message = Msg("errors.yaml.syntax.message_context", what=what, context=exc.context,
                          line=start.line + 1, column=start.column + 1)
        else:
            message = Msg("errors.yaml.syntax.message", what=what)
        raise error(path, [Problem(where, message, fix)]) from None
    except yaml.reader.ReaderError as exc:
        before = text[:exc.position] if isinstance(exc.position, int) else ""
        where = _line_column(before.count(chr(10)) + 1, len(before) - before.rfind(chr(10)))
        code = exc.character if isinstance(exc.character, int) else 0
        raise error(path, [Problem(where, Msg("errors.yaml.character.message", code=f"U+{code:04X}"),
                                   Msg("errors.yaml.character.fix"))]) from None
    except yaml.YAMLError as exc:
        raise error(path, [Problem("", Msg("errors.yaml.syntax.message", what=" ".join(str(exc).split())),
                                   Msg("errors.yaml.other.fix"))]) from None


# --- pydantic ---------------------------------------------------------------------------

def problems_from_validation(exc: ValidationError, model: type[BaseModel]) -> list[Problem]:
    problems = []
    # An unknown key usually explains a "missing" one (a typo): list unknown keys first.
    errors = sorted(exc.errors(include_url=False), key=lambda e: e["type"] != "extra_forbidden")
    for err in errors:
        ctx = err.get("ctx") or {}
        loc = [str(part) for part in err["loc"]]
        path = ctx.get("field") or _dotted(loc)
        problems.append(Problem(path or TOP_LEVEL, _message(err), _fix(err, loc, model)))
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


def pydantic_number(value) -> str:
    """A bound as pydantic writes it in its messages: never an exponent, no '.0' (1e-06 ->
    0.000001, 1000000.0 -> 1000000)."""
    if isinstance(value, float):
        text = format(Decimal(repr(value)), "f")
        return text[:-2] if text.endswith(".0") else text
    return str(value)


def _expected(ctx: dict):
    """pydantic's "'a', 'b' or 'c'" as a list said in the reader's language."""
    expected = str(ctx.get("expected", ""))
    head, sep, last = expected.rpartition(" or ")  # i18n: not text
    return one_of([*head.split(", "), last]) if sep else expected


# pydantic's error types: the message (its own sentence, without "Input") and the figures
# taken from its context.
_BOUNDS = {"greater_than": "gt", "greater_than_equal": "ge", "less_than": "lt", "less_than_equal": "le"}
_TYPE_MESSAGES = {
    "greater_than": "errors.types.greater_than.message",
    "greater_than_equal": "errors.types.greater_than_equal.message",
    "less_than": "errors.types.less_than.message",
    "less_than_equal": "errors.types.less_than_equal.message",
    "int_type": "errors.types.int_type.message",
    "int_parsing": "errors.types.int_parsing.message",
    "int_from_float": "errors.types.int_from_float.message",
    "int_parsing_size": "errors.types.int_parsing_size.message",
    "float_type": "errors.types.float_type.message",
    "float_parsing": "errors.types.float_parsing.message",
    "finite_number": "errors.types.finite_number.message",
    "literal_error": "errors.types.literal_error.message",
    "bool_type": "errors.types.bool_type.message",
    "bool_parsing": "errors.types.bool_parsing.message",
    "model_type": "errors.types.model_type.message",
    "dict_type": "errors.types.dict_type.message",
    "list_type": "errors.types.list_type.message",
    "date_type": "errors.types.date_type.message",
    "date_parsing": "errors.types.date_parsing.message",
    "date_from_datetime_parsing": "errors.types.date_from_datetime_parsing.message",
    "date_from_datetime_inexact": "errors.types.date_from_datetime_inexact.message",
    "string_type": "errors.types.string_type.message",
    "string_pattern_mismatch": "errors.types.string_pattern_mismatch.message",
}


def _type_message(err: dict) -> Msg:
    """pydantic's message for this error, said by the catalog; its own English text (held as a
    figure) when the catalog has no sentence that reads exactly like it."""
    kind, ctx = err["type"], err.get("ctx") or {}
    english = err["msg"].replace("Input should be", "should be")  # i18n: not text
    if kind.startswith("value_error") and english.startswith("Value error, "):  # i18n: not text
        english = english[len("Value error, "):]  # i18n: not text
    key = _TYPE_MESSAGES.get(kind)
    if key is not None:
        figures = {"bound": pydantic_number(ctx[_BOUNDS[kind]])} if kind in _BOUNDS else {}
        if kind == "literal_error":
            figures["expected"] = _expected(ctx)
        for name in ("class_name", "error", "pattern"):
            if name in ctx:
                figures[name] = str(ctx[name])
        message = Msg(key, **figures)
        if message.render() == english:
            return message
    return Msg("errors.types.other.message", detail=english)


def _message(err: dict):
    kind, ctx, got = err["type"], err.get("ctx") or {}, err.get("input")
    if kind == "trainbudget_rule":
        message = ctx["message"]
        if not ctx.get("got"):
            return message
    elif kind == "extra_forbidden":
        return Msg("errors.types.extra_forbidden.message")
    elif kind == "missing":
        return Msg("errors.types.missing.message")
    else:
        message = _type_message(err)
    if got is not None and not isinstance(got, (dict, list)):
        return Msg("errors.got", message=message, value=repr(got))
    return message


_BOUND_FIXES = {"greater_than": "errors.types.greater_than.fix",
                "greater_than_equal": "errors.types.greater_than_equal.fix",
                "less_than": "errors.types.less_than.fix",
                "less_than_equal": "errors.types.less_than_equal.fix"}
_KIND_FIXES = {
    **{kind: "errors.types.int_type.fix" for kind in ("int_type", "int_parsing", "int_from_float")},
    **{kind: "errors.types.float_type.fix" for kind in ("float_type", "float_parsing", "finite_number")},
    "literal_error": "errors.types.literal_error.fix",
    "bool_type": "errors.types.bool_type.fix",
    "bool_parsing": "errors.types.bool_type.fix",
    "model_type": "errors.types.dict_type.fix",
    "dict_type": "errors.types.dict_type.fix",
    "list_type": "errors.types.list_type.fix",
    **{kind: "errors.types.date_type.fix"
       for kind in ("date_type", "date_parsing", "date_from_datetime_parsing")},
    **{kind: "errors.types.string_type.fix"
       for kind in ("string_type", "string_too_long", "string_too_short", "string_pattern_mismatch")},
}


def _fix(err: dict, loc: list[str], model: type[BaseModel]):
    kind, ctx = err["type"], err.get("ctx") or {}
    field = _dotted(loc) or Msg("errors.where.the_file")
    if kind == "trainbudget_rule":
        if ctx["fix"] is not None:
            return ctx["fix"]
        return Msg("errors.types.other.fix", field=field)
    if kind == "extra_forbidden":
        allowed = _allowed_keys(model, loc[:-1])
        close = difflib.get_close_matches(loc[-1], allowed, n=1)
        hint = Msg("errors.did_you_mean", choice=close[0]) if close else ""
        return Msg("errors.types.extra_forbidden.fix", hint=hint, allowed=", ".join(allowed))
    if kind == "missing":
        return Msg("errors.types.missing.fix", field=field)
    if kind in _BOUND_FIXES:
        return Msg(_BOUND_FIXES[kind], field=field, bound=_bound(ctx[_BOUNDS[kind]]))
    if kind in _KIND_FIXES:
        figures = {"field": field}
        if kind == "literal_error":
            figures["expected"] = _expected(ctx)
        if _KIND_FIXES[kind] == "errors.types.string_type.fix":
            # pydantic's own sentence, "Input" and all, in lower case
            figures["detail"] = Lower(Msg("errors.types.string_type.detail") if kind == "string_type"
                                      else _type_message(err))
        return Msg(_KIND_FIXES[kind], **figures)
    return Msg("errors.types.other.fix", field=field)


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
