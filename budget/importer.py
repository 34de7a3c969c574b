"""Workbook → scenario: bring a reviewer's edits back into the file the team keeps.

`import_workbook(path, catalog)` reads the input cells of a trainbudget workbook — as
generated, or edited in Excel or LibreOffice — by their defined names, checks each against its
definition (a number where a number belongs, within the workbook's validation), and returns an
`Imported` with the scenario text (YAML with comments) and the warnings to show. The scenario is
`unbind` of the cells, plus the catalog rows that differ from the bundled catalog, and is
validated like any scenario before it is returned.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .bind import CODECS, excel_serial, unbind
from .catalog import FIGURES, Catalog
from .errors import InputError, Problem
from .lineitems import InputDef, Model
from .model import ACCELERATOR_TABLE, FX_TABLE, SEARCH_INPUTS, build_model
from .scenario import parse_scenario

CATALOG_COLUMNS = ("id", "name", "vendor", *FIGURES)


class WorkbookError(InputError):
    """A workbook whose cells cannot become a scenario: each problem names sheet, cell, name."""


@dataclass
class Imported:
    text: str                                   # the scenario, YAML with comments
    data: dict                                  # the same, as data
    warnings: list[str] = field(default_factory=list)


class _Book:
    """The cells behind a workbook's defined names."""

    def __init__(self, path: Path):
        import openpyxl
        try:
            self.wb = openpyxl.load_workbook(path, data_only=False)
        except FileNotFoundError:
            raise WorkbookError(path, [Problem("", "file not found", "check the path")]) from None
        except Exception as exc:   # noqa: BLE001 - any unreadable file is one clear message
            raise WorkbookError(path, [Problem("", f"not an .xlsx workbook this tool can read ({exc})",
                                               "give the .xlsx file trainbudget wrote")]) from None
        self.path = path

    def where(self, name: str) -> tuple[str, str] | None:
        dn = self.wb.defined_names.get(name)
        if dn is None or "#REF!" in dn.attr_text:
            return None
        sheet, ref = dn.attr_text.rsplit("!", 1)
        return sheet.strip("'"), ref.replace("$", "")

    def cells(self, name: str) -> list[tuple[str, object]]:
        """[(Sheet!A1, value)] for a single cell or a one-column range."""
        at = self.where(name)
        if at is None:
            raise WorkbookError(self.path, [Problem(
                name, "the workbook has no cell by this name (a row was deleted?)",
                "restore the row from the generated workbook, or regenerate from the scenario")])
        sheet, ref = at
        ws = self.wb[sheet]
        if ":" not in ref:
            return [(f"{sheet}!{ref}", ws[ref].value)]
        return [(f"{sheet}!{c.coordinate}", c.value) for row in ws[ref] for c in row]


def _cell_value(book: _Book, d: InputDef, where: str, value) -> object:
    """One input cell as the model's value, or a problem naming the cell."""
    def bad(message: str, fix: str):
        return WorkbookError(book.path, [Problem(f"{where} ({d.name})", message, fix)])

    if isinstance(value, str) and value.startswith("="):
        raise bad("holds a formula where an input value belongs", "type the value itself")
    if value is None or (isinstance(value, str) and not value.strip()):
        if d.optional or d.is_range:
            return None
        raise bad("is blank", f"type a value for {d.label.lower()}")
    if d.kind in {"choice", "text", "range_text", "generated_text"}:
        text = str(value).strip()
        if d.choices and text not in d.choices:
            raise bad(f"is {text!r}, not one of {', '.join(d.choices)}",
                      f"choose one of {', '.join(d.choices)}")
        return text
    if d.kind == "date":
        if isinstance(value, dt.datetime):
            return excel_serial(value.date())
        if isinstance(value, dt.date):
            return excel_serial(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise bad(f"holds {value!r} where a number belongs", f"type a number ({d.unit})")
    value = float(value)
    if d.kind == "integer" and not value.is_integer():
        raise bad(f"is {value:g}, not a whole number", "type a whole number")
    low, high = d.minimum, d.maximum
    if low is not None and (value < low or (d.positive and value <= low)):
        words = "above" if d.positive else "at least"
        raise bad(f"is {value:g}, outside its validation", f"type a number {words} {low:g}")
    if high is not None and value > high:
        raise bad(f"is {value:g}, outside its validation", f"type a number at most {high:g}")
    return value


def read_inputs(book: _Book, model: Model) -> dict[str, object]:
    values: dict[str, object] = {}
    for d in model.inputs.values():
        if not d.on_inputs_sheet:
            continue
        if d.kind.startswith("generated") and book.where(d.name) is None:
            values[d.name] = None
            continue
        cells = book.cells(d.name)
        if d.is_range:
            values[d.name] = tuple(_cell_value(book, d, w, v) for w, v in cells)
        else:
            values[d.name] = _cell_value(book, d, *cells[0])
    return values


def read_catalog_rows(book: _Book) -> list[dict]:
    columns = {c: book.cells(f"{ACCELERATOR_TABLE}_{c}") for c in CATALOG_COLUMNS}
    rows = []
    for n in range(len(columns["id"])):
        row = {c: columns[c][n][1] for c in CATALOG_COLUMNS}
        if row["id"] in (None, ""):
            if any(row[c] not in (None, "") for c in CATALOG_COLUMNS):
                raise WorkbookError(book.path, [Problem(
                    f"{columns['id'][n][0]} (acc_id)", "a catalog row has figures but no id",
                    "give the row an id (lower-case letters, digits and _)")])
            continue
        for c in FIGURES:
            if c == "tdp_w" and row[c] in (None, ""):    # power is optional: energy stays blank
                row[c] = None
                continue
            if isinstance(row[c], bool) or not isinstance(row[c], (int, float)):
                raise WorkbookError(book.path, [Problem(
                    f"{columns[c][n][0]} (acc_{c})", f"holds {row[c]!r} where a number belongs",
                    "type the figure as a number")])
        source_cell = columns["id"][n][0].split("!")
        ws = book.wb[source_cell[0]]
        from openpyxl.utils.cell import coordinate_from_string
        col, r = coordinate_from_string(source_cell[1])
        row["source"] = ws.cell(r, 1 + len(CATALOG_COLUMNS)).value or "added in the workbook"
        rows.append(row)
    return rows


def _catalog_changes(rows: list[dict], catalog: Catalog, gpu_type: str) -> tuple[dict, list[dict]]:
    """(hardware keys, catalog rows) that reproduce the workbook's Catalog sheet."""
    hardware, changed = {}, []
    bundled = {a.id: a for a in catalog.accelerators}
    for row in rows:
        acc = bundled.get(str(row["id"]))
        if acc is not None:
            diffs = [f for f in FIGURES if _figure(row[f]) != _figure(getattr(acc, f))]
            if not diffs and row["name"] == acc.name:
                continue
            if diffs == ["peak_bf16_tflops"] and row["id"] == gpu_type and row["name"] == acc.name:
                hardware["peak_tflops"] = _plain(row["peak_bf16_tflops"])
                continue
        entry = {"id": str(row["id"]), "name": str(row["name"] or row["id"]),
                 "vendor": str(row["vendor"] or "")}
        entry.update({f: _plain(row[f]) for f in FIGURES if row[f] is not None})
        entry["gpus_per_node"] = int(entry["gpus_per_node"])
        entry["source"] = str(row["source"])[:2000]
        changed.append(entry)
    return hardware, changed


def _figure(x):
    """A catalog figure or cell as a comparable number (None when blank)."""
    x = getattr(x, "value", x)
    return None if x in (None, "") else float(x)


def _node_edits(book: _Book, catalog: Catalog, gpu_type: str, values: dict, data: dict) -> None:
    """A reviewer's edit of the chosen accelerator's node figures on the Catalog sheet becomes
    the scenario's override (unless the Inputs sheet already overrides them)."""
    ids = [str(v or "").lower() for _, v in book.cells(f"{ACCELERATOR_TABLE}_id")]
    if gpu_type.lower() not in ids or catalog.prices is None:
        return
    n = ids.index(gpu_type.lower())
    cell = lambda column: book.cells(f"{ACCELERATOR_TABLE}_{column}")[n][1]  # noqa: E731
    node = catalog.prices.purchase_for(gpu_type)
    like = catalog.prices.node_for_power(gpu_type)
    power, price, currency = cell("node_overhead_kw"), cell("node_price"), cell("node_price_currency")
    if values.get("node_overhead_kw") in (None, "") and isinstance(power, (int, float)) and (
            like is None or float(power) != like.overhead_kw_per_node.value):
        data.setdefault("energy", {})["node_overhead_kw"] = _plain(power)
    if values.get("node_price") in (None, "") and isinstance(price, (int, float)) and (
            node is None or float(price) != node.price_per_node.value):
        data.setdefault("owned", {})["node_price"] = {"amount": _plain(price),
                                                      "currency": str(currency or values.get("currency"))}


def read_fx_rates(book: _Book, currency: str) -> dict[str, float]:
    """The FX table as `prices.fx_rates`: units of the plan's currency per unit of each other."""
    codes, rates = book.cells(f"{FX_TABLE}_id"), book.cells(f"{FX_TABLE}_rate")
    table = {str(c).strip().upper(): r for (_, c), (_, r) in zip(codes, rates)
             if c not in (None, "") and isinstance(r, (int, float)) and not isinstance(r, bool) and r > 0}
    if currency not in table:
        return {}
    return {code: _plain(rate / table[currency]) for code, rate in table.items() if code != currency}


def _plain(x):
    x = float(x)
    return int(x) if x.is_integer() and abs(x) < 1e15 else x


def _changed_since_generation(values: dict, model: Model) -> list[tuple[InputDef, object, object]]:
    out = []
    for name in SEARCH_INPUTS:
        gen = values.get(f"gen_{name}")
        now = values.get(name)
        if gen is None and now is None:
            continue
        if isinstance(now, float) and isinstance(gen, (int, float)):
            if abs(now - float(gen)) <= 1e-12 * max(abs(now), 1.0):
                continue
        elif now == gen:
            continue
        out.append((model.inputs[name], gen, now))
    return out


def _shown(d: InputDef, value) -> str:
    if value is None:
        return "blank"
    if d.codec == "date" and isinstance(value, (int, float)):
        return CODECS["date"].decode(value).isoformat()
    return f"{_plain(value):,}" if isinstance(value, float) else str(value)


def import_workbook(path: str | Path, catalog: Catalog) -> Imported:
    path = Path(path)
    book = _Book(path)
    model = build_model()
    values = read_inputs(book, model)
    data = unbind(model, values)
    # A reviewer who types both wins with the MFU (the workbook uses it first).
    hardware = data.setdefault("hardware", {})
    if "effective_tflops" in hardware and ("mfu" in hardware or "baseline_mfu" in hardware):
        hardware.pop("effective_tflops")
    peak, rows = _catalog_changes(read_catalog_rows(book), catalog, str(values["gpu_type"]))
    hardware.update(peak)
    _node_edits(book, catalog, str(values["gpu_type"]), values, data)
    fx = read_fx_rates(book, str(values.get("currency") or "USD"))
    if fx:
        data.setdefault("prices", {})["fx_rates"] = fx
    if rows:
        data["catalog"] = {"accelerators": rows}
    props = book.wb.properties
    name = (props.title or path.stem).strip() or path.stem
    head = {"name": name}
    if props.description and not props.description.startswith("Generated by trainbudget"):
        head["description"] = props.description
    data = {**head, **data}
    data["sources"] = _sources(book, model)

    changed = _changed_since_generation(values, model)
    searched = values.get("layout_searched") == "yes"
    warnings = []
    if changed and searched:
        what = "; ".join(f"{d.path}: {_shown(d, gen)} -> {_shown(d, now)}" for d, gen, now in changed)
        warnings.append(f"the GPU count and layout were chosen by the layout search for other inputs "
                        f"({what}); remove hardware.gpu_count and the keys under parallelism to let "
                        "the search choose again")
    try:
        parse_scenario(data, path, catalog)
    except InputError as err:
        raise WorkbookError(path, [Problem(p.path, p.message, p.fix + " (in the workbook's cell "
                                           "for this field)") for p in err.problems]) from None
    text = _yaml(data, changed, searched, path)
    return Imported(text, data, warnings)


def _sources(book: _Book, model: Model) -> dict[str, str]:
    """The scenario's own citations, read back from the Source column ("scenario f: path (x)")."""
    out = {}
    for d in model.inputs.values():
        if d.path is None or d.is_range or not d.on_inputs_sheet or d.kind.startswith("generated"):
            continue
        at = book.where(d.name)
        if at is None:
            continue
        sheet, ref = at
        ws = book.wb[sheet]
        source = ws.cell(ws[ref].row, 4).value
        if isinstance(source, str) and source.startswith("scenario ") and source.endswith(")") \
                and f": {d.path} (" in source:
            out[d.path] = source.split(f": {d.path} (", 1)[1][:-1]
    first_role = book.cells("staff_role")[0][0].split("!")
    ws = book.wb[first_role[0]]
    cell = ws[first_role[1]]
    source = ws.cell(cell.row, cell.column + 4).value
    if isinstance(source, str) and source.startswith("scenario ") and ": staffing (" in source:
        out["staffing"] = source.split(": staffing (", 1)[1][:-1]
    return out


def _yaml(data: dict, changed, searched: bool, path: Path) -> str:
    """The scenario as YAML: a header that says where it came from, a comment on each value
    that differs from the one the workbook was generated with, and on the search's choices."""
    body = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    notes = {d.path: f"was {_shown(d, gen)} at generation" for d, gen, _ in changed}
    if searched:
        for key in ("hardware.gpu_count", "parallelism.tp", "parallelism.pp",
                    "parallelism.micro_batch_size", "parallelism.zero_stage",
                    "parallelism.recompute", "parallelism.sequence_parallel"):
            notes.setdefault(key, "chosen by the layout search; delete to let it choose again")
    lines, section = [], ""
    for line in body.splitlines():
        stripped = line.lstrip(" ")
        indent = len(line) - len(stripped)
        key = stripped.split(":", 1)[0] if ":" in stripped and not stripped.startswith("- ") else None
        if indent == 0 and key:
            section = key
        dotted = key if indent == 0 else (f"{section}.{key}" if indent == 2 and key else None)
        if dotted in notes and not line.endswith(":"):
            line = f"{line}  # {notes[dotted]}"
        lines.append(line)
    header = [f"# Imported by trainbudget from the workbook {path.name}: its input cells as the "
              "reviewer left them.",
              "# Generate from this file to get a workbook whose figures equal the edited one's."]
    if changed:
        header.append("# Values marked 'was ... at generation' differ from the generated workbook.")
    return "\n".join(header + lines) + "\n"
