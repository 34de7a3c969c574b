"""Message catalogs: every user-facing text, one folder of YAML files per language.

`budget/messages/<lang>/` holds one file per area (model.yaml for the planning model,
workbook.yaml, report.yaml, cli.yaml, ...); together they are that language's catalog. A file is
nested YAML read as dotted message ids (`items.train_days.label`); an id defined in two files of
one language is an error. Every language has exactly English's ids (tests/test_messages.py).

Why YAML keyed by id rather than gettext .po: the workbook's check sentences are templates with
numbered live figures ({0}, {1}) that the model turns into formulas, labels come in families
(label, note, fix, cite) per model name, and the model already addresses its texts by name; an
id-keyed catalog keeps that one definition per quantity, reads in review like the workbook it
feeds, and needs no compile step or extra dependency.

Catalogs load when first asked for, not when the package is imported.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

MESSAGES_DIR = Path(__file__).resolve().parent.parent / "messages"
DEFAULT_LANG = "en"


def languages() -> list[str]:
    """The languages with a catalog, by folder name (messages/zh/ -> zh)."""
    return sorted(p.name for p in MESSAGES_DIR.iterdir() if p.is_dir() and any(p.glob("*.yaml")))


def catalog_files(lang: str) -> list[Path]:
    """One language's catalog files, by area."""
    folder = MESSAGES_DIR / lang
    files = sorted(folder.glob("*.yaml")) if folder.is_dir() else []
    if not files:
        raise LookupError(f"no message catalog for language {lang!r} (looked in {folder})")  # i18n: not text
    return files


def _flatten(tree: dict, prefix: str, out: dict[str, str], path: Path) -> None:
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict):
            _flatten(value, f"{dotted}.", out, path)
        elif isinstance(value, str):
            if dotted in out:
                raise ValueError(f"{path}: message {dotted!r} is defined twice")  # i18n: not text
            out[dotted] = value
        else:
            raise ValueError(f"{path}: message {dotted!r} is not text: {value!r}")  # i18n: not text


# The bundled catalogs are read by libyaml when PyYAML has it (about four times faster than the
# pure Python loader; the same data: tests/test_messages.py compares the two).
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@lru_cache(maxsize=None)
def catalog(lang: str = DEFAULT_LANG) -> dict[str, str]:
    """Every message of one language, keyed by dotted message id: read once, then from
    budget/cache.py while the files' bytes stay the same (issue 14)."""
    from .cache import cached

    files = catalog_files(lang)
    raw = [path.read_bytes() for path in files]
    key = b"\0".join(p.name.encode() + b"\0" + data for p, data in zip(files, raw))
    return cached(key, f"i18n.catalog: {SAFE_LOADER.__name__}", lambda: _read(files, raw))  # i18n: not text


def _read(files: list[Path], raw: list[bytes]) -> dict[str, str]:
    out: dict[str, str] = {}
    for path, data in zip(files, raw):
        text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")   # as read_text() reads it
        _flatten(yaml.load(text, Loader=SAFE_LOADER) or {}, "", out, path)
    return out


def text(key: str, lang: str = DEFAULT_LANG) -> str:
    """One message; a KeyError names the missing id and the language."""
    try:
        return catalog(lang)[key]
    except KeyError:
        raise KeyError(f"message {key!r} is missing from budget/messages/{lang}/") from None  # i18n: not text


def fmt(key: str, lang: str = DEFAULT_LANG, /, **figures) -> str:
    """One message with its named placeholders ({days}, {currency}) filled in."""
    return text(key, lang).format(**figures)


class Messages:
    """The messages of one language, remembering which ids were asked for (see
    tests/test_messages.py: no catalog key goes unused)."""

    def __init__(self, lang: str = DEFAULT_LANG):
        self.lang = lang
        self.used: set[str] = set()

    def __call__(self, key: str, /, **figures) -> str:
        """A required message, its named placeholders filled in when figures are given."""
        self.used.add(key)
        message = text(key, self.lang)
        return message.format(**figures) if figures else message

    def get(self, key: str, default: str = "") -> str:
        """An optional message (a note, a citation): `default` when the catalog has none."""
        messages = catalog(self.lang)
        if key in messages:
            self.used.add(key)
        return messages.get(key, default)
