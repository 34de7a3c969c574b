"""What every section of a scenario shares: the strict base model (unknown keys refused, frozen),
bounded numbers that carry no YAML true/false, counts with suffixes ("175B", "3T"), the start
date's bounds and the text policy of every free-text field and key."""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from typing import Annotated

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from ...core import limits
from ...core.errors import Msg, rule_error

_SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
_COUNT = re.compile(r"^\s*([+-]?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMbBgGtT]?)\s*$")


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


MAX_ROWS = 50     # accelerator rows of a scenario, staffing roles: a typo guard


def not_bool(value):
    """YAML's true/false are not numbers (pydantic's lax mode would take true as 1)."""
    if isinstance(value, bool):
        raise rule_error(Msg("errors.scenario.not_bool.message", value=str(value).lower()),
                         Msg("errors.scenario.not_bool.fix"))
    return value


def _parse_count(value):
    """175e9, '175e9', '175B', '3T', '1.5M' -> float. Other types pass through to pydantic."""
    value = not_bool(value)
    if isinstance(value, str):
        match = _COUNT.match(value.replace("_", "").replace(",", ""))
        if not match:
            raise rule_error(Msg("errors.scenario.count.message"), got=True)
        number, suffix = match.groups()
        return float(number) * _SUFFIX.get(suffix.lower(), 1.0)
    return value


# Bounds are typo guards, not policy: generous ranges inside which every figure the model
# derives stays finite and every date displayable (the plan checks the project's length).
def counted(ge: float, le: float):
    return Annotated[float, BeforeValidator(_parse_count), Field(ge=ge, le=le, allow_inf_nan=False)]


def number(*, ge: float | None = None, gt: float | None = None, le: float | None = None,
           lt: float | None = None):
    return Annotated[float, BeforeValidator(not_bool),
                     Field(ge=ge, gt=gt, le=le, lt=lt, allow_inf_nan=False)]


def whole(*, le: int, ge: int | None = None, gt: int | None = None):
    return Annotated[int, BeforeValidator(not_bool), Field(ge=ge, gt=gt, le=le)]


Params = counted(1e6, 1e15)                      # a million to a quadrillion parameters
Tokens = counted(1e6, 1e16)
Tflops = number(ge=0.001, le=1e6)                # per accelerator
Fraction = number(ge=0.001, le=1)
Money = number(ge=0, le=1e9)                     # a price per unit, in any currency
Days = number(ge=0, le=1826)                     # one schedule segment: up to five years
Weeks = number(ge=0, le=261)                     # one project phase: up to five years
Months = number(ge=0.01, le=1200)
Gigabytes = number(ge=0, le=1e12)
Bandwidth = number(ge=0.001, le=1e9)             # GB/s or Gbit/s
Minutes = number(ge=0, le=525_960)               # a year
PositiveInt = whole(gt=0, le=2 ** 24)            # shapes, batch, layout: up to 16,777,216
GpuCount = whole(gt=0, le=10_000_000)
Headcount = number(ge=0.01, le=1e6)
# Generic names kept for other sections: finite, and neither tiny nor astronomically large.
Count = counted(1, 1e16)
PositiveFloat = number(ge=1e-6, le=1e12)
NonNegativeFloat = number(ge=0, le=1e12)
EARLIEST_START, LATEST_START = limits.EARLIEST_START, limits.LATEST_START


def _plausible_date(value: dt.date) -> dt.date:
    if not EARLIEST_START <= value <= LATEST_START:
        dates = {"earliest": EARLIEST_START.isoformat(), "latest": LATEST_START.isoformat()}
        raise rule_error(Msg("errors.scenario.start_date.message", date=value.isoformat(), **dates),
                         Msg("errors.scenario.start_date.fix", **dates))
    return value


StartDate = Annotated[dt.date, AfterValidator(_plausible_date)]

# XML 1.0 cannot hold these at all (a workbook with them is corrupt); lone surrogates are not
# characters (they cannot be encoded); other C0 and C1 controls are refused too, except tab and
# line feed, so nothing a terminal or a report would act on gets in.
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff"
FORMULA_LEADS = ("=", "+", "-", "@")


def formula_lead(text: str) -> tuple[str, str] | None:
    """(the character as written, as a spreadsheet reads it) when `text` would start a formula:
    judged after leading blanks and with full-width forms folded (NFKC), never altering `text`."""
    for ch in text:
        folded = unicodedata.normalize("NFKC", ch).lstrip().lstrip(_INVISIBLE).lstrip()
        if not folded:
            continue
        return (ch, folded[0]) if folded[0] in FORMULA_LEADS else None
    return None


def character_problem(value: str) -> tuple[Msg, Msg] | None:
    """(message, fix) when `value` holds a character no workbook, report or terminal should get."""
    bad = _XML_ILLEGAL.search(value) or _CONTROL.search(value)
    if bad:
        code = f"U+{ord(bad.group()):04X}"
        if 0xD800 <= ord(bad.group()) <= 0xDFFF:
            return (Msg("errors.text.surrogate.message", code=code), Msg("errors.text.surrogate.fix"))
        if ord(bad.group()) in (0xFFFE, 0xFFFF):
            return (Msg("errors.text.noncharacter.message", code=code), Msg("errors.text.noncharacter.fix"))
        return (Msg("errors.text.control.message", code=code), Msg("errors.text.control.fix"))
    return None


def text_problem(value: str) -> tuple[Msg, Msg] | None:
    """(message, fix) when `value` breaks the text policy shared by every free-text field and
    key; None when it is fine."""
    problem = character_problem(value)
    if problem:
        return problem
    lead = formula_lead(value)
    if lead:
        written, read = lead
        key = {(False, False): "errors.text.formula.message",
               (True, False): "errors.text.formula.message_read_as",
               (False, True): "errors.text.formula.message_after_blanks",
               (True, True): "errors.text.formula.message_read_as_after_blanks"}[
            (written != read, value[:1] != written)]
        return (Msg(key, char=repr(written), read=repr(read)),
                Msg("errors.text.formula.fix", char=repr(written)))
    return None


def _safe_text(value: str, max_len: int = 200) -> str:
    """Scenario text ends up in cells, reports and messages: one policy for every field and key."""
    if not isinstance(value, str):
        raise rule_error(Msg("errors.text.not_text.message"), Msg("errors.text.not_text.fix"))
    problem = text_problem(value)
    if problem:
        raise rule_error(*problem)
    if len(value) > max_len:
        raise rule_error(Msg("errors.text.too_long.message", length=len(value), limit=max_len),
                         Msg("errors.text.too_long.fix", limit=max_len))
    return value


SafeText = Annotated[str, BeforeValidator(_safe_text)]
LongText = Annotated[str, BeforeValidator(lambda v: _safe_text(v, 2000))]
