"""Message catalogs: every user-facing text, one YAML file per language in budget/messages/.

A catalog is nested YAML read as dotted message ids (`items.train_days.label`). Catalogs load
when first asked for, not when the package is imported.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

MESSAGES_DIR = Path(__file__).resolve().parent / "messages"
DEFAULT_LANG = "en"


def languages() -> list[str]:
    """The languages with a catalog, by file name (en.yaml -> en)."""
    return sorted(p.stem for p in MESSAGES_DIR.glob("*.yaml"))


def _flatten(tree: dict, prefix: str, out: dict[str, str], path: Path) -> None:
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict):
            _flatten(value, f"{dotted}.", out, path)
        elif isinstance(value, str):
            out[dotted] = value
        else:
            raise ValueError(f"{path}: message {dotted!r} is not text: {value!r}")


@lru_cache(maxsize=None)
def catalog(lang: str = DEFAULT_LANG) -> dict[str, str]:
    """Every message of one language, keyed by dotted message id."""
    path = MESSAGES_DIR / f"{lang}.yaml"
    if not path.is_file():
        raise LookupError(f"no message catalog for language {lang!r} (looked for {path})")
    tree = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    out: dict[str, str] = {}
    _flatten(tree, "", out, path)
    return out


def text(key: str, lang: str = DEFAULT_LANG) -> str:
    """One message; a KeyError names the missing id and the catalog."""
    try:
        return catalog(lang)[key]
    except KeyError:
        raise KeyError(f"message {key!r} is missing from budget/messages/{lang}.yaml") from None


class Messages:
    """The messages of one language, remembering which ids were asked for (see
    tests/test_messages.py: no catalog key goes unused)."""

    def __init__(self, lang: str = DEFAULT_LANG):
        self.lang = lang
        self.used: set[str] = set()

    def __call__(self, key: str) -> str:
        """A required message."""
        self.used.add(key)
        return text(key, self.lang)

    def get(self, key: str, default: str = "") -> str:
        """An optional message (a note, a citation): `default` when the catalog has none."""
        messages = catalog(self.lang)
        if key in messages:
            self.used.add(key)
        return messages.get(key, default)
