"""The message catalogs (budget/messages/<lang>/*.yaml): complete, no key unused, same keys in
every language, and no user-facing text left in the code or the templates.

`python tests/test_messages.py budget/x.py templates/y.j2` lists the literals a file still holds."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from budget.core import i18n
from budget.model.model import PILOT_VALUES, STAGE_VALUES, UNCERTAIN, build_model, message_keys

ROOT = Path(__file__).resolve().parent.parent
MODEL_AREA = "model.yaml"     # the model's catalog file: its ids are built from model names
NOT_TEXT = "# i18n: not text"  # marks a line whose literals are identifiers, codes or formats
# Mermaid's own syntax in the Gantt chart source.
TEMPLATE_WORDS_ALLOWED = {"mermaid", "gantt", "title", "dateFormat", "axisFormat", "section", "YYYY", "MM", "DD"}


def _docstrings(tree) -> set[int]:
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and node.body and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)}


def _is_text(value: str) -> bool:
    """A sentence or a phrase: words with a space between, or any CJK character."""
    return bool(re.search(r"[A-Za-z]{2,}[^\n]* |[^\n]* [A-Za-z]{2,}", value)
                or re.search(r"[\u3000-\u9fff\uff00-\uffef]", value))


def python_literals(path: Path) -> list[tuple[int, str]]:
    """Text literals of one module. Docstrings, unit ids (each has a `units.<id>` message) and
    statements whose first line carries NOT_TEXT (developer errors, generated code) aside."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    tree = ast.parse(source)
    skip = _docstrings(tree)
    units = {k.removeprefix("units.") for k in i18n.catalog("en") if k.startswith("units.")}
    found = []

    def visit(node, marked: bool) -> None:
        if isinstance(node, ast.stmt):
            marked = marked or NOT_TEXT in lines[node.lineno - 1]
        if (isinstance(node, ast.Constant) and isinstance(node.value, str) and not marked
                and id(node) not in skip and node.value not in units and _is_text(node.value)):
            found.append((node.lineno, node.value))
        for child in ast.iter_child_nodes(node):
            visit(child, marked)

    visit(tree, False)
    return sorted(found)


_JINJA = re.compile(r"\{%.*?%\}|\{\{.*?\}\}|\{#.*?#\}", re.S)
_BLOCKS = re.compile(r"<(style|script)\b.*?</\1>", re.S | re.I)
_TAGS = re.compile(r"<[^>]*>")


def template_literals(path: Path) -> list[str]:
    """Words a template writes itself, outside its {{ }} / {% %} and its markup."""
    text = _TAGS.sub(" ", _BLOCKS.sub(" ", _JINJA.sub(" ", path.read_text(encoding="utf-8"))))
    text = re.sub(r"&[a-z]+;|&#[0-9]+;", " ", text)
    return [w for w in re.findall(r"[A-Za-z]{2,}|[\u3400-\u9fff]+", text)
            if w not in TEMPLATE_WORDS_ALLOWED]


def _sources() -> str:
    files = [*sorted((ROOT / "budget").rglob("*.py")), *sorted((ROOT / "templates").glob("*.j2"))]
    return "\n".join(p.read_text(encoding="utf-8") for p in files)


def _area_keys(lang: str, area: str) -> set[str]:
    import yaml
    out: dict[str, str] = {}
    path = i18n.MESSAGES_DIR / lang / area
    i18n._flatten(yaml.safe_load(path.read_text(encoding="utf-8")) or {}, "", out, path)
    return set(out)


def test_every_key_the_model_uses_exists_in_english():
    used = message_keys("en")
    missing = used - i18n.catalog("en").keys()
    assert not missing, f"keys the model uses but en.yaml lacks: {sorted(missing)}"


def test_english_has_no_unused_key():
    """The model's ids are the ones it asks for; every other id appears in the code or a template
    whole, or as the literal prefix of an id built there (`f"errors.{kind}.fix"`)."""
    unused = _area_keys("en", MODEL_AREA) - message_keys("en")
    assert not unused, f"keys of en/{MODEL_AREA} nothing uses: {sorted(unused)}"
    sources = _sources()
    for path in i18n.catalog_files("en"):
        if path.name == MODEL_AREA:
            continue
        for key in sorted(_area_keys("en", path.name)):
            parts = key.split(".")
            prefixes = (".".join(parts[:i]) + "." for i in range(len(parts) - 1, 0, -1))
            assert key in sources or any(re.search(re.escape(p) + r"\{", sources) for p in prefixes), \
                f"en/{path.name}: {key!r} is used nowhere in budget/ or templates/"


def test_every_language_has_the_same_files():
    english = [p.name for p in i18n.catalog_files("en")]
    for lang in i18n.languages():
        assert [p.name for p in i18n.catalog_files(lang)] == english, lang


def test_placeholders_match_english():
    """A translation fills the same figures: the same {name} and {0} placeholders."""
    english = i18n.catalog("en")
    for lang in i18n.languages():
        for key, message in i18n.catalog(lang).items():
            want = sorted(set(re.findall(r"\{[^{}]*\}", english[key])))
            assert sorted(set(re.findall(r"\{[^{}]*\}", message))) == want, (lang, key)


@pytest.mark.parametrize("module", sorted(p.relative_to(ROOT / "budget").as_posix() for p in (ROOT / "budget").rglob("*.py")))
def test_no_user_facing_literal_in_the_code(module):
    found = python_literals(ROOT / "budget" / module)
    assert not found, f"literal text left in budget/{module}: {found}"


@pytest.mark.parametrize("template", sorted(p.name for p in (ROOT / "templates").glob("*.j2")))
def test_no_user_facing_literal_in_the_templates(template):
    found = template_literals(ROOT / "templates" / template)
    assert not found, f"literal text left in templates/{template}: {found}"


def test_every_language_has_every_english_key():
    english = i18n.catalog("en").keys()
    for lang in i18n.languages():
        missing = english - i18n.catalog(lang).keys()
        assert not missing, f"{lang}.yaml lacks {sorted(missing)}"
        extra = i18n.catalog(lang).keys() - english
        assert not extra, f"{lang}.yaml has keys English does not: {sorted(extra)}"


def test_every_catalog_is_text_keyed_by_dotted_ids():
    assert "en" in i18n.languages()
    for lang in i18n.languages():
        for key, value in i18n.catalog(lang).items():
            assert isinstance(value, str) and key.count(".") >= 1, (lang, key)


def test_missing_key_names_the_key():
    with pytest.raises(KeyError, match="items.no_such_item.label"):
        i18n.text("items.no_such_item.label")


def test_model_texts_come_from_the_catalog():
    model, t = build_model(), i18n.catalog("en")
    for name, d in model.inputs.items():
        if not name.startswith(("unc_", "gen_")):
            assert d.label == t[f"inputs.{name}.label"]
            assert d.cite == t.get(f"inputs.{name}.cite", "")
    for name, item in model.items.items():
        # a stage's row of a model item or input is labelled as that item or input
        # and a pilot's (issue 13) as that item or input with calibration.pilot_of around it
        if name.startswith("check_inputs_"):    # issue 29: one family, labelled by the section it checks
            assert item.label.startswith(t["items.check_inputs.label"].split("{")[0]), item.label
            assert (item.note, item.fix) == ("", t["items.check_inputs.fix"])
            continue
        pilot = name.startswith("pilot_") and f"items.{name}.label" not in t
        own = f"items.{name}.label" in t or (item.kind != "rows" and not pilot)
        key = name if own else name.removeprefix("stage_").removeprefix("pilot_")
        as_pilot = t["calibration.pilot_of"].format if pilot else str
        if own:
            assert item.label == t[f"items.{key}.label"]
            assert item.note == t.get(f"items.{key}.note", "")
        elif key in model.items:
            assert (item.label, item.note) == (as_pilot(model.items[key].label), model.items[key].note)
        else:       # stage_<column>_used: the plan input the stages table's column stands for
            plan_input = {f"{c}_used": n for n, c in (*STAGE_VALUES.items(), *PILOT_VALUES.items())}[name]
            assert item.label == as_pilot(model.inputs[plan_input].label)
        if item.is_flag:
            assert item.fix == t[f"items.{name}.fix"]
    for key, (_, label, _, _, _, cite) in UNCERTAIN.items():
        assert (label, cite) == (t[f"uncertain.{key}.label"], t[f"uncertain.{key}.cite"])
    assert model.inputs["gen_gpu_count"].label == "GPUs when the layout was chosen"
    assert model.inputs["unc_model_error_low"].label == "Model error (step time): low (base ×)"


def test_messages_are_not_loaded_at_import():
    """Importing the package reads no catalog; building the model does (fresh interpreter)."""
    probe = ("import budget.cli.app, budget.plan.plan, budget.sheets.writer, budget.inputs.scenario, budget.core.i18n as i\n"
             "print(i.catalog.cache_info().currsize)\n"
             "import budget.model.model as m; m.build_model()\n"
             "print(i.catalog.cache_info().currsize)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "1"]


if __name__ == "__main__":
    for name in sys.argv[1:]:
        p = Path(name)
        for item in (template_literals(p) if p.suffix == ".j2" else python_literals(p)):
            print(f"{p}: {item}")


def test_the_c_yaml_loader_reads_every_catalog_as_the_python_loader_does():
    """i18n reads the catalogs with libyaml when PyYAML has it (issue 14: about four times faster);
    the messages must be the very same."""
    import yaml

    for lang in i18n.languages():
        for path in i18n.catalog_files(lang):
            text = path.read_text(encoding="utf-8")
            assert yaml.load(text, Loader=i18n.SAFE_LOADER) == yaml.safe_load(text), path
