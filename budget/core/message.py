"""A message of the catalogs with its figures, rendered in the reader's language when read (the
errors, the readers of outside files and the planner's sentences all carry them)."""

from __future__ import annotations

from .i18n import DEFAULT_LANG, fmt


class Msg:
    """A message id (budget/messages/<lang>/*.yaml) and its named figures, rendered when read.
    A figure may itself be a Msg (or anything with `render(lang)`): it is rendered in the same
    language; other figures are formatted by the message's own placeholders ({count:,})."""

    __slots__ = ("key", "figures")

    def __init__(self, key: str, /, **figures):
        self.key = key
        self.figures = figures

    def render(self, lang: str = DEFAULT_LANG) -> str:
        return fmt(self.key, lang, **{k: say(v, lang) for k, v in self.figures.items()})

    def __str__(self) -> str:
        return self.render()

    def __repr__(self) -> str:
        figures = "".join(f", {k}={v!r}" for k, v in self.figures.items())
        return f"Msg({self.key!r}{figures})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Msg) and (self.key, self.figures) == (other.key, other.figures)

    def __hash__(self) -> int:
        return hash(self.key)


def say(value, lang: str = DEFAULT_LANG):
    """A figure or a text in `lang`: a Msg rendered, anything else as it is."""
    render = getattr(value, "render", None)
    return render(lang) if callable(render) and not isinstance(value, (str, bytes)) else value
