"""The vocabulary of the model: named inputs, line items and checks.

A `Model` is an ordered table of these. The workbook writer lays the table out on sheets;
the planner compiles the same table to Python. Nothing here knows about scenarios or files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Mapping

from ..formula.expr import IF, IFERROR, Expr, Ref, Specializer, compile_items, lift

# Excel rejects defined names that look like cell references (A1, XFD1048576, R1C1) or the
# booleans; openpyxl and LibreOffice accept them silently, so we check ourselves.
_NAME_OK = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]{0,254}$")
_CELL_LIKE = re.compile(r"^[A-Za-z]{1,3}[0-9]+$|^[Rr][0-9]*[Cc]?[0-9]*$|^[Cc][0-9]*$")


def check_defined_name(name: str) -> str:
    if not _NAME_OK.match(name) or _CELL_LIKE.match(name) or name.upper() in {"TRUE", "FALSE"}:
        raise ValueError(f"{name!r} cannot be a spreadsheet defined name")  # i18n: not text
    return name


@dataclass(frozen=True)
class InputDef:
    """One assumption: a row on the Inputs sheet with a defined name on its value cell."""
    name: str
    label: str
    unit: str
    section: str
    kind: str = "number"          # number | integer | fraction | choice | text | date | range
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None
    choices_from: str | None = None   # a defined name holding the allowed values
    optional: bool = False            # blank means "use the default described in the note"
    positive: bool = False            # strictly above `minimum` (a divisor: 0 would be #DIV/0!)
    fmt: str | None = None
    # Where the value comes from and goes back to: the scenario's dotted path, how a scenario
    # value becomes a cell value (see budget.inputs.bind.CODECS), and the citation shown when the
    # scenario leaves the key out and the schema's default applies.
    path: str | None = None
    codec: str = "number"
    cite: str = ""
    constant: float | None = None     # a fixed convention (6 FLOPs per parameter per token, ...)
    search: str = ""                  # "layout" / "count": chosen by the search when not pinned
    domain: tuple | None = None       # the values the layout search tries (None: computed, e.g. PP)
    short: str = ""                   # a column heading for the candidate tables
    help: str = ""                    # one line shown when the reviewer selects the cell
    currency: str = ""                # money inputs: the text input naming the amount's currency

    def __post_init__(self):
        check_defined_name(self.name)

    @property
    def is_range(self) -> bool:
        return self.kind.startswith("range")

    @property
    def on_inputs_sheet(self) -> bool:
        """Structure inputs (the cells below a table, the Timeline grid) are not assumptions."""
        return self.kind != "structure"


@dataclass(frozen=True)
class Item:
    """A derived quantity: one row on a calculation sheet, one live formula."""
    name: str
    label: str
    unit: str
    expr: Expr
    sheet: str
    section: str
    note: str = ""
    fix: str = ""          # for checks and warnings: what to change when it fails
    # item | check (blocks approval) | warning (shown, does not block) | rows (a table's: its row
    # items, and the figures shown beside them, as the Cashflow sheet's periods' days in all)
    kind: str = "item"
    detail: Expr | None = None   # checks and warnings: the failure in words, live over the cells

    def __post_init__(self):
        check_defined_name(self.name)

    @property
    def is_check(self) -> bool:
        return self.kind == "check"

    def sentence(self, values: Mapping[str, object]) -> str:
        """A check's or warning's failure in words, its `detail` evaluated over `values`: the
        sentence the workbook's Summary row computes, for the CLI, the reports and plan.json."""
        if self.detail is None:
            return self.label
        return str(compile_items([("_", self.detail)])(dict(values), {})["_"])

    @property
    def is_flag(self) -> bool:
        """A check or a warning: 0 when fine, 1 when not."""
        return self.kind in ("check", "warning")


@dataclass(frozen=True)
class TableDef:
    """A lookup table written to the Catalog sheet, one defined name per column."""
    name: str
    title: str
    columns: tuple[tuple[str, str, str], ...]   # (column, header, unit)


@dataclass
class Model:
    inputs: dict[str, InputDef] = field(default_factory=dict)
    lang: str = "en"                          # the language of its texts (budget/messages/<lang>/)
    items: dict[str, Item] = field(default_factory=dict)
    tables: dict[str, TableDef] = field(default_factory=dict)

    @cached_property
    def _compiled(self) -> Callable[[dict, Mapping], dict]:
        return compile_items((i.name, i.expr) for i in self.items.values())

    def evaluate(self, inputs: Mapping[str, object], tables: Mapping) -> dict[str, object]:
        """Every input and item value, computed by the compiled model."""
        return self._compiled(dict(inputs), tables)

    def affected_by(self, inputs: set[str]) -> list[str]:
        """Items whose value changes when any of `inputs` changes, in model order."""
        inputs = frozenset(inputs)
        return list(self._memo(("affected_by", inputs), lambda: self._affected_by(inputs)))

    def _affected_by(self, inputs: frozenset) -> list[str]:
        changed = set(inputs)
        out = []
        for item in self.items.values():
            if item.expr.refs() & changed:
                changed.add(item.name)
                out.append(item.name)
        return out

    def closure(self, outputs) -> set[str]:
        """The items `outputs` need, themselves included."""
        outputs = tuple(outputs)
        return set(self._memo(("closure", outputs), lambda: self._closure(outputs)))

    def _closure(self, outputs: tuple) -> set[str]:
        needed: set[str] = set()
        stack = list(outputs)
        while stack:
            name = stack.pop()
            if name in needed or name not in self.items:
                continue
            needed.add(name)
            stack.extend(self.items[name].expr.refs())
        return needed

    def dependents(self, inputs: set[str], outputs) -> Callable[[dict, Mapping], dict]:
        """A compiled function that recomputes, from an already evaluated environment, the
        items of `outputs` (and their dependencies) that `inputs` affect."""
        inputs, outputs = frozenset(inputs), tuple(outputs)
        return self._memo(("dependents", inputs, outputs),
                          lambda: compile_items(self._rerun(inputs, outputs)))

    def specialized(self, inputs, outputs, steady=()) -> Specializer:
        """The items `dependents` recomputes, compiled for many calls over `inputs` alone
        (budget.formula.specialize.Specializer): `.bind(values, tables)` gives run(*inputs) -> outputs."""
        inputs, outputs, steady = tuple(inputs), tuple(outputs), tuple(steady)
        return self._memo(("specialized", inputs, outputs, steady),
                          lambda: Specializer(self._rerun(inputs, outputs), inputs, outputs, steady))

    def _rerun(self, inputs, outputs) -> list[tuple[str, Expr]]:
        needed = self.closure(outputs)
        return [(n, self.items[n].expr) for n in self.affected_by(inputs) if n in needed]

    def _memo(self, key: tuple, compute: Callable):
        """compute(), kept per model while its items are the same (a model is built once per
        language, then planned with many times; while it is built, this computes afresh)."""
        cache = self.__dict__.setdefault("_memo_cache", {})
        items = tuple(self.items.values())
        found = cache.get(key)
        if found is not None and found[0] == items:
            return found[1]
        value = compute()
        cache[key] = (items, value)
        return value

    def layout_inputs(self) -> list[InputDef]:
        """The layout dimensions the search chooses (TP, PP, micro-batch, ZeRO, ...), in order."""
        return [d for d in self.inputs.values() if d.search == "layout"]

    def checks(self) -> list[Item]:
        return [i for i in self.items.values() if i.kind == "check"]

    def warnings(self) -> list[Item]:
        return [i for i in self.items.values() if i.kind == "warning"]

    def sheet_items(self, sheet: str) -> list[Item]:
        return [i for i in self.items.values() if i.sheet == sheet and i.kind != "rows"]

    def row_items(self, rows: str = "stage_tokens") -> list[Item]:
        """The items evaluated row by row over the table whose key column is `rows`: by default
        the stages table (the Stages sheet's columns of figures); "ref_name" the Reference runs;
        "cashflow_month_cells" the Cashflow sheet's months."""
        return [i for i in self.items.values() if i.kind == "rows" and getattr(i.expr, "rows", None) == rows]


class ModelBuilder:
    """Declares inputs and items in reading order; `item` returns a Ref for later formulas.

    Texts come from the message catalog `texts` by name: an input's label is
    `inputs.<name>.label` (with optional `.help`, `.cite`, `.short`), an item's, check's or
    warning's `items.<name>.label` (with `.note`, and `.fix` for checks), a section heading
    `sections.<slug>` (`sections.inputs.<slug>` on the Inputs sheet), a table's
    `tables.<name>.title` and `tables.<name>.columns.<column>`."""

    def __init__(self, texts):
        self.texts = texts
        self.model = Model(lang=getattr(texts, "lang", "en"))
        self._sheet = ""
        self._section = ""
        self._input_section = ""
        self.input_sections: dict[str, str] = {}   # the Inputs sheet's sections: slug -> heading

    def text(self, key: str) -> str:
        return self.texts(key)

    def sheet(self, sheet: str, section: str = "") -> None:
        """`sheet` is the sheet's id (the workbook places items by it); `section` a slug."""
        self._sheet = sheet
        self._section = self.texts(f"sections.{section}") if section else ""

    def section(self, section: str) -> None:
        self._section = self.texts(f"sections.{section}")

    def input_section(self, section: str) -> None:
        self._input_section = self.texts(f"sections.inputs.{section}")
        self.input_sections[section] = self._input_section

    def _claim(self, name: str) -> None:
        table_names = {f"{t.name}_{c[0]}" for t in self.model.tables.values() for c in t.columns}
        if name in self.model.inputs or name in self.model.items or name in table_names:
            raise ValueError(f"{name} defined twice")  # i18n: not text

    def input(self, name: str, unit: str, **kw) -> Ref:
        """`label=` (and `cite=`...) given here are texts already built from messages."""
        self._claim(name)
        for field in ("help", "cite", "short"):
            value = self.texts.get(f"inputs.{name}.{field}")
            if value:
                kw[field] = value
        label = kw.pop("label", None) or self.texts(f"inputs.{name}.label")
        self.model.inputs[name] = InputDef(name, label, unit, self._input_section, **kw)
        return Ref(name)

    def _known(self, name: str, expr: Expr) -> None:
        unknown = expr.refs() - self.model.inputs.keys() - self.model.items.keys()
        if unknown:  # keeps the item table in dependency order
            raise ValueError(f"{name} refers to {sorted(unknown)} before they are defined")  # i18n: not text

    def item(self, name: str, unit: str, expr, **kw) -> Ref:
        self._claim(name)
        expr = lift(expr)
        self._known(name, expr)
        detail = kw.get("detail")
        if detail is not None:
            self._known(name, detail)
        # `label=`/`note=` given: the texts of the item it re-evaluates (a pilot's, issue 13)
        label = kw.pop("label", None) or self.texts(f"items.{name}.label")
        note = kw.pop("note") if "note" in kw else self.texts.get(f"items.{name}.note")
        self.model.items[name] = Item(name, label, unit, expr, self._sheet, self._section, note, **kw)
        return Ref(name)

    def row_item(self, name: str, unit: str, expr: Expr, label: str | None = None, note: str = "") -> Ref:
        """A row item (a PerRow expression, one value per row of a table). `label` and `note`
        are those of the model item or input it re-evaluates row by row, else its own messages."""
        self._claim(name)
        self._known(name, expr)
        if label is None:
            label, note = self.texts(f"items.{name}.label"), self.texts.get(f"items.{name}.note")
        self.model.items[name] = Item(name, label, unit, expr, self._sheet, self._section, note, kind="rows")
        return Ref(name)

    def check(self, name: str, ok: Expr, detail=None, kind: str = "check", **texts) -> Ref:
        """0 when `ok` holds, 1 when not, and 1 when `ok` cannot be computed: an error value
        anywhere in its chain (a reviewer's #DIV/0! or a deleted row's #REF!) fails closed.
        What to change when it fails is `items.<name>.fix` (or `fix=`, `label=`: texts built
        from a family's messages, as the input-integrity checks' are)."""
        ok = lift(ok)
        detail = lift(detail) if detail is not None else None
        fix = texts.pop("fix", None) or self.texts(f"items.{name}.fix")
        return self.item(name, "flag", IFERROR(IF(ok, 0, 1), 1),
                         fix=fix, kind=kind, detail=detail, **texts)

    def warning(self, name: str, ok: Expr, detail=None) -> Ref:
        """A plausibility check: shown beside the checks, not counted in the master check."""
        return self.check(name, ok, detail, kind="warning")

    def table(self, name: str, columns) -> None:
        """`columns`: (column, unit) pairs; the title and headers come from the catalog."""
        title = self.texts(f"tables.{name}.title")
        self.model.tables[name] = TableDef(name, title, tuple(
            (column, self.texts(f"tables.{name}.columns.{column}"), unit) for column, unit in columns))
