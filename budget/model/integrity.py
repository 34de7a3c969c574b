"""Input integrity (issue 29): the book fails closed wherever the importer would refuse a cell.

Each input's declaration (InputDef: kind, minimum, maximum, positive, optional, choices) is the
one description of what its cell may hold: the data validation (budget/sheets/validation.py),
the importer's rule (budget/inputs/importer.py `_cell_value`) and the checks here all read it.
A data validation does not stop a paste, a blank or text typed where a number belongs; these
checks do: one per section of the Inputs sheet, failing when any of its inputs is blank where a
value is required, text where a number belongs, a percentage typed as a whole number (20 for
0.20) or outside its bounds, with a sentence naming the first such input, what it holds and
what to type instead.
"""

from __future__ import annotations

from ..formula.expr import AND, COUNT, COUNTA, IF, ISNUMBER, MAX, MIN, OR, ROUND, Expr, Num, Ref, lift
from .lineitems import InputDef, ModelBuilder

NUMERIC = ("number", "integer", "fraction")
# sections a reviewer does not type in: the values at generation and the workbook's structure
UNCHECKED_SECTIONS = ("at_generation", "workbook_structure")
# inputs per check: a long section is checked in parts, each check's formula and its sentence's
# well inside a spreadsheet's 8,192 characters and 64 nested IFs
PER_CHECK = 8


INPUT_CHECKS_SHEET = "Input checks"  # i18n: not text (a tab id; its name is workbook.sheets.input_checks)


def checked(d: InputDef) -> bool:
    """Inputs whose cells a check reads: every assumption a reviewer types (a table's text
    columns and the values at generation aside)."""
    return d.on_inputs_sheet and d.kind in (*NUMERIC, "date", "choice", "text", "range", "range_date")


def _bound(x: float) -> Num:
    return Num(x, bound=True)


def _within(d: InputDef, x: Expr) -> list[Expr]:
    """The declared bounds on a number `x` (the importer's: above `minimum` when positive)."""
    out = []
    if d.minimum is not None:
        out.append(x > _bound(d.minimum) if d.positive else x >= _bound(d.minimum))
    if d.maximum is not None:
        out.append(x <= _bound(d.maximum))
    return out


def input_ok(d: InputDef) -> Expr:
    """True when input `d`'s cell (or every cell of a table column) holds what the importer
    accepts: blank only where optional (a table's rows may be blank), a number where a number
    belongs, whole where whole, within the declared bounds; one of the choices."""
    x = Ref(d.name)
    if d.is_range:      # a table's column: no text in it, every number within the bounds
        no_text = (COUNTA(x) - COUNT(x)).eq(0)
        bounds = [b for b in ((MIN(x) > _bound(d.minimum) if d.positive else MIN(x) >= _bound(d.minimum))
                              if d.minimum is not None else None,
                              MAX(x) <= _bound(d.maximum) if d.maximum is not None else None) if b is not None]
        if d.kind != "range" or not bounds:
            return no_text
        return AND(no_text, OR(COUNT(x).eq(0), AND(*bounds)))
    if d.kind in NUMERIC:
        # behind IF: a spreadsheet's AND evaluates every argument, and ROUND of text is #VALUE!
        # (the check would still fail, but its sentence would be an error value)
        whole = [x.eq(ROUND(x, 0))] if d.kind == "integer" else []
        rules = [*whole, *_within(d, x)]
        ok = IF(ISNUMBER(x), AND(*rules) if len(rules) > 1 else rules[0], 0) if rules else ISNUMBER(x)
    elif d.kind == "date":
        ok = ISNUMBER(x)
    elif d.kind == "choice" and d.choices:
        ok = OR(*(x.eq(c) for c in d.choices))
    else:               # a choice from a table (the accelerator's id), a currency code: not blank
        ok = x.ne("")
    return OR(x.eq(""), ok) if d.optional else ok


def input_rule(b: ModelBuilder, d: InputDef) -> str:
    """What the cell must hold, in words, from the same declaration."""
    t = b.text
    if d.kind in ("date", "range_date"):
        rule = t("items.check_inputs.rule_date")
    elif d.kind == "choice" and d.choices:
        rule = t("items.check_inputs.rule_choice").format(choices=", ".join(d.choices))
    elif d.kind in ("choice", "text"):
        rule = t("items.check_inputs.rule_text")
    else:
        what = t("items.check_inputs.whole" if d.kind == "integer" else "items.check_inputs.number")
        low, high = (None if v is None else f"{v:g}" for v in (d.minimum, d.maximum))
        if low is None:     # no input is declared so today: the importer's words for a number
            rule = t("importer.errors.not_number.fix").format(unit=d.unit)
        else:
            key = (("above" if d.positive else "at_least") if high is None else
                   "above_at_most" if d.positive else "between")
            rule = t(f"items.check_inputs.rule_{key}").format(what=what, low=low, high=high)
        if d.kind == "fraction" or "fraction" in d.unit:
            rule += t("items.check_inputs.fraction_hint")
    if d.is_range:
        rule += t("items.check_inputs.range_blank")
    elif d.optional:
        rule += t("items.check_inputs.optional")
    return rule


def _sentence(b: ModelBuilder, d: InputDef) -> Expr:
    """The first failing input in words: its label, what it holds, what to type."""
    x = Ref(d.name)
    rule = input_rule(b, d)
    if d.is_range:
        return b.text("items.check_inputs.detail_range").format(label=d.label, rule=rule)
    before, after = b.text("items.check_inputs.detail").format(label=d.label, rule=rule, value="{value}").split("{value}")
    shown = IF(x.eq(""), b.text("items.check_inputs.blank"), x)
    out = lift(before).concat(shown) if before else shown
    return out.concat(after) if after else out


def input_checks(b: ModelBuilder) -> None:
    """One check per section of the Inputs sheet (its inputs in the sheet's order), named
    check_inputs_<section>, labelled and fixed from the family's messages."""
    slugs = {heading: slug for slug, heading in b.input_sections.items()}
    sections: dict[str, list[InputDef]] = {}
    for d in b.model.inputs.values():
        slug = slugs.get(d.section)
        if slug is not None and slug not in UNCHECKED_SECTIONS and checked(d):
            sections.setdefault(slug, []).append(d)
    for slug, all_inputs in sections.items():
        heading = b.input_sections[slug]
        for part, start in enumerate(range(0, len(all_inputs), PER_CHECK), start=1):
            inputs = all_inputs[start:start + PER_CHECK]
            oks = [input_ok(d) for d in inputs]
            detail: Expr | str = ""
            for d, ok in reversed(list(zip(inputs, oks))):
                detail = IF(ok, detail, _sentence(b, d))
            label = (b.text("items.check_inputs.label").format(section=heading) if part == 1 else
                     b.text("items.check_inputs.label_part").format(section=heading, part=part))
            b.check(f"check_inputs_{slug}" + (f"_{part}" if part > 1 else ""), AND(*oks), detail=detail,
                    note="", label=label, fix=b.text("items.check_inputs.fix"))
