"""The message catalogs (budget/messages/<lang>.yaml): complete, no key unused, same keys in
every language, and the model's texts come from them."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from budget import i18n
from budget.model import UNCERTAIN, build_model, message_keys

MODEL_SOURCE = Path(__file__).resolve().parent.parent / "budget" / "model.py"


def test_every_key_the_model_uses_exists_in_english():
    used = message_keys("en")
    missing = used - i18n.catalog("en").keys()
    assert not missing, f"keys the model uses but en.yaml lacks: {sorted(missing)}"


def test_english_has_no_unused_key():
    unused = i18n.catalog("en").keys() - message_keys("en")
    assert not unused, f"keys of en.yaml nothing uses: {sorted(unused)}"


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
        assert item.label == t[f"items.{name}.label"]
        assert item.note == t.get(f"items.{name}.note", "")
        if item.is_flag:
            assert item.fix == t[f"items.{name}.fix"]
    for key, (_, label, _, _, _, cite) in UNCERTAIN.items():
        assert (label, cite) == (t[f"uncertain.{key}.label"], t[f"uncertain.{key}.cite"])
    assert model.inputs["gen_gpu_count"].label == "GPUs when the layout was chosen"
    assert model.inputs["unc_mfu_low"].label == "Baseline MFU: low (base +)"


def test_no_sentence_literal_left_in_the_model():
    """Text in model.py is identifiers and units (no spaces), not sentences: docstrings aside,
    a string constant with a space is user-facing text that belongs in the catalog."""
    tree = ast.parse(MODEL_SOURCE.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    allowed = {" × ", "× base", "catalog id", "ISO 4217 code", "per GPU-hour", "kg CO2e/kWh",
               "fraction of subtotal", "fraction of step", "fraction of training", "fraction of compute",
               "t CO2e", "per year"}
    found = [(node.lineno, node.value) for node in ast.walk(tree)
             if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
             and " " in node.value and node.value not in allowed]
    assert not found, f"literal text left in budget/model.py: {found}"


def test_messages_are_not_loaded_at_import():
    """Importing the package reads no catalog; building the model does (fresh interpreter)."""
    probe = ("import budget.cli, budget.plan, budget.workbook, budget.scenario, budget.i18n as i\n"
             "print(i.catalog.cache_info().currsize)\n"
             "import budget.model as m; m.build_model()\n"
             "print(i.catalog.cache_info().currsize)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "1"]
