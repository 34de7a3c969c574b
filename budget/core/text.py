"""Text as a spreadsheet or a report lays it out: display widths (a CJK character takes two
columns) and the lines a text wraps to in a cell."""

from __future__ import annotations

import unicodedata


def _wide(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in "WF"


def display_width(text: str) -> int:
    """The columns a text takes: a CJK (East Asian wide or full-width) character takes two."""
    if text.isascii():           # no ASCII character is wide
        return len(text)
    return sum(2 if _wide(ch) else 1 for ch in text)


def has_wide(text: str) -> bool:
    if text.isascii():
        return False
    return any(_wide(ch) for ch in text)


def wrapped_lines(text: str, per_line: float) -> int:
    """The lines a text with CJK characters wraps to in a cell `per_line` columns wide: greedy,
    breaking at spaces and beside any CJK character (each two columns), as a spreadsheet
    does; a run of Latin letters or digits without spaces (a file name, a dotted key) moves
    to the next line whole, or breaks inside when it is longer than a line."""
    per_line = max(per_line, 1.0)
    lines = 0
    for paragraph in text.split("\n"):
        tokens: list[str] = []
        for ch in paragraph:
            if ch.isspace():
                tokens.append(" ")
            elif _wide(ch) or not tokens or tokens[-1] == " " or _wide(tokens[-1][-1]):
                tokens.append(ch)
            else:
                tokens[-1] += ch
        lines += 1
        used, space = 0.0, False
        for token in tokens:
            if token == " ":
                space = used > 0
                continue
            need = display_width(token) + (1 if space else 0)
            if used and used + need > per_line:
                lines, used, need = lines + 1, 0.0, display_width(token)
            while need > per_line:        # longer than a line: it breaks inside
                lines, need = lines + 1, need - per_line
            used, space = used + need, False
    return lines
