"""The reports' words in one language: messages with their figures, money, dates and units as the
language writes them (budget/messages/<lang>/report.yaml)."""

from __future__ import annotations

import datetime as dt
import re

from markupsafe import Markup

from ..core.i18n import DEFAULT_LANG, text
from ..core.dates import from_serial

# A date pattern's fields (CLDR: y year, M month, d day) and its quoted text.
_DATE_FIELDS = re.compile(r"'([^']*)'|y+|M+|d+")
_HTML_TEXT = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&#34;"})


# Units counted in the scenario's own notation (2.87T tokens, 405B parameters: the suffixes
# data.train_tokens accepts) rather than in twelve digits
_COUNTED = {"tokens", "parameters"}


def count(n: float) -> str:
    """A count as a scenario writes it: 2.87T, 800B, 12.5M; below a million, in digits."""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M")):   # i18n: not text (SI suffixes)
        if abs(n) >= scale:
            return f"{n / scale:,.4g}{suffix}"
    return f"{n:,.0f}"


def figure(value: float, unit: str = "") -> str:
    """A plain figure for a reader of the reports, never in E notation ("2e+11" reads as a typo
    to finance): tokens and parameters by count(); other figures from a million up in whole
    digits (31,923,750 GPU-hours) up to 10^15, scientific only beyond (FLOPs, 3.65e+25); below,
    up to two decimals without trailing zeros."""
    if unit in _COUNTED and abs(value) >= 1e6:
        return count(value)
    if abs(value) >= 1e15:
        return f"{value:.3g}"
    if abs(value) >= 1e6 or float(value).is_integer():
        return f"{value:,.0f}"
    if abs(value) < 0.01:
        return f"{value:.3g}"
    return f"{value:,.2f}".rstrip("0").rstrip(".")


class Words:
    """The report's texts and formats in one language (budget/messages/<lang>/report.yaml):
    `words("report.x", days=3)` is a message with its named placeholders filled in; money, dates
    and units are written the way the language writes them."""

    def __init__(self, lang: str = DEFAULT_LANG):
        self.lang = lang

    def __call__(self, key: str, /, **figures) -> str:
        message = text(key, self.lang)
        return message.format(**figures) if figures else message

    def html(self, key: str, /, **figures) -> Markup:
        """The message as HTML: the catalog's text escaped for a text node or a double-quoted
        attribute (an apostrophe stays as typed), each figure escaped unless it is markup
        already (a <strong>, a <sub>)."""
        return Markup(text(key, self.lang).translate(_HTML_TEXT)).format(**figures)

    def money(self, amount: float, currency: str) -> str:
        return self("report.formats.money", amount=f"{amount:,.0f}", currency=currency)

    def signed_money(self, amount: float, currency: str) -> str:
        sign = "+" if amount >= 0 else "\u2212"
        return self("report.formats.money", amount=f"{sign}{abs(amount):,.0f}", currency=currency)

    def date(self, day, pattern: str = "report.formats.date") -> str:
        """A date (or a spreadsheet serial) by one of the catalog's date patterns."""
        if not isinstance(day, dt.date):
            day = from_serial(day)
        months = self("report.formats.month_names").split()

        def field(m: re.Match) -> str:
            token = m.group(0)
            if m.group(1) is not None:
                return m.group(1) or "'"
            if token[0] == "y":
                return f"{day.year:0{len(token)}d}" if len(token) > 2 else str(day.year)
            if token[0] == "M":
                return months[day.month - 1] if len(token) >= 3 else f"{day.month:0{len(token)}d}"
            return f"{day.day:0{len(token)}d}"

        return _DATE_FIELDS.sub(field, self(pattern))

    def unit(self, unit: str, currency: str = "") -> str:
        """A unit id as the language shows it (units.yaml), its `currency` the plan's code."""
        if not unit:
            return ""
        shown = text(f"units.{unit}", self.lang)
        return shown.replace("currency", currency) if currency else shown

    def quantity(self, value: str, unit: str) -> str:
        return self("report.formats.quantity", value=value, unit=unit)
