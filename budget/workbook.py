"""Plan → .xlsx workbook in which every derived number is a live formula.

Layout follows what finance reviewers expect of a model workbook: a Summary cover, an Inputs
sheet (label | value | unit | source | note | name, blue on yellow, validated), the Catalog the
lookups read, one calculation sheet per stage, a Checks sheet where 0 means fine, and a change
log. Formulas read workbook-scope defined names (`=gpu_hours*price_per_gpu_hour`).

`write_workbook` returns the file's bytes plus, for every formula cell, the value the Python
plan computed for it, so tests can hold the spreadsheet engine's results against the plan.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

from openpyxl import Workbook
from openpyxl.formatting.rule import FormulaRule
from openpyxl.styles import Alignment, Border, Font, NamedStyle, PatternFill, Protection, Side
from openpyxl.utils import get_column_letter
from openpyxl.workbook.defined_name import DefinedName
from openpyxl.worksheet.datavalidation import DataValidation

from . import __version__
from .lineitems import InputDef, Item
from .model import build_model
from .model import ACCELERATOR_TABLE
from .plan import Plan, from_serial
from .reproducible import normalise_xlsx

CALC_SHEETS = ("Memory", "Parallelism", "Compute", "Schedule", "Timeline", "Cost", "Checks")
GANTT_COLOURS = ("9DC3E6", "A9D18E", "FFD966", "F4B183", "C9C9C9", "B4A7D6")
DATE_FORMAT = "yyyy-mm-dd"
CANDIDATE_KEYS = ("dp_size", "memory_per_gpu_gb", "check_memory_fits", "bubble_fraction",
                  "comm_fraction", "layout_efficiency", "train_days", "total_cost")
CANDIDATE_LABELS = {"dp_size": "DP", "memory_per_gpu_gb": "Memory per GPU",
                    "check_memory_fits": "Does not fit (1)", "bubble_fraction": "Bubble",
                    "comm_fraction": "Exposed communication", "layout_efficiency": "Layout efficiency",
                    "train_days": "Training days", "total_cost": "Total cost"}
LAYOUT_COLUMNS = (("tp_size", "TP", "integer"), ("pp_size", "PP", "integer"),
                  ("micro_batch_size", "Micro-batch", "integer"), ("zero_stage", "ZeRO", "integer"),
                  ("recompute", "Recompute", "choice"), ("sequence_parallel", "SP", "choice"))
TAB_COLOURS = {"Summary": "1F4E79", "Inputs": "FFC000", "Catalog": "A6A6A6", "Checks": "C00000",
               "Change log": "7F7F7F"}
CALC_TAB = "70AD47"
INPUT_FILL = PatternFill("solid", fgColor="FFF2CC")
INPUT_FONT = Font(color="0000FF")
HEADER_FILL = PatternFill("solid", fgColor="D9E1F2")
SECTION_FONT = Font(bold=True, color="1F4E79")
# Conditional-format fills: Excel paints a dxf fill from its bgColor, LibreOffice from fgColor.
OK_RULE_FILL = PatternFill("solid", start_color="C6EFCE", end_color="C6EFCE")
BAD_RULE_FILL = PatternFill("solid", start_color="FFC7CE", end_color="FFC7CE")
WARN_RULE_FILL = PatternFill("solid", start_color="FFEB9C", end_color="FFEB9C")
CHANGED_FILL = PatternFill("solid", start_color="F8CBAD", end_color="F8CBAD")
SPARE_ROWS = 10       # unlocked blank rows inside each growable table
BELOW_ROWS = 5        # rows under a table watched by check_tables_closed
THIN = Side(style="thin", color="BFBFBF")


@dataclass
class WorkbookResult:
    data: bytes
    expected: dict[str, object] = field(default_factory=dict)   # "Sheet!A1" -> plan value
    names: dict[str, str] = field(default_factory=dict)         # defined name -> "Sheet!A1"


def number_format(unit: str, kind: str = "number") -> str | None:
    if kind == "date" or unit == "date":
        return DATE_FORMAT
    if kind == "fraction" or unit.startswith("fraction"):
        return "0.0%"
    if unit == "per GPU-hour":
        return "0.000E+00"
    if unit in {"hours", "weeks"}:
        return "#,##0.00"
    if unit in {"GB/s", "Gbit/s"}:
        return "#,##0.0###"
    if unit in {"text", "catalog id", "mode", "yes/no"}:
        return None
    if unit in {"FLOP", "GPU-s", "FLOP/s"}:
        return "0.00E+00"
    if unit == "s":
        return "#,##0.00"
    if unit.startswith("currency/GB"):
        return "#,##0.000"
    if unit.startswith("currency/GPU") or unit == "currency/month":
        return "#,##0.00"
    if unit in {"GB", "days", "TFLOPS", "PFLOPS", "GB-months", "bytes/parameter", "person-months"}:
        return "#,##0.0"
    if unit in {"flag", "checks", "stage"}:
        return "0"
    if unit in {"people", "months"} or unit.startswith("FLOP/"):
        return "General"
    return "#,##0"


def _styles(wb: Workbook) -> None:
    inp = NamedStyle("Input", font=INPUT_FONT, fill=INPUT_FILL,
                     border=Border(left=THIN, right=THIN, top=THIN, bottom=THIN),
                     protection=Protection(locked=False))
    calc = NamedStyle("Calculation", border=Border(bottom=THIN))
    head = NamedStyle("Header", font=Font(bold=True), fill=HEADER_FILL,
                      alignment=Alignment(vertical="center", wrap_text=True))
    for style in (inp, calc, head):
        wb.add_named_style(style)


def put_text(cell, text: str) -> None:
    """Write text that must stay text, whatever it starts with: quote-prefixed when a spreadsheet
    could read it as a formula, judged as the scenario's text policy judges (after blanks, with
    full-width forms folded); text no workbook can hold is a bug here, never a corrupt file."""
    from .scenario import character_problem, formula_lead

    problem = character_problem(text)
    if problem:
        raise ValueError(f"text for {cell.coordinate} {problem[0]}: {text[:60]!r}")
    cell.value = text
    cell.data_type = "s"
    if formula_lead(text):
        cell.quotePrefix = True


class _Writer:
    def __init__(self, plan: Plan):
        self.plan = plan
        self.model = plan.model or build_model()
        self.currency = plan.scenario.prices.currency
        self.wb = Workbook()
        self.result = WorkbookResult(b"")
        self.candidate_cells: list[dict[str, str]] = []   # per candidate: layout input -> Inputs cell
        _styles(self.wb)
        self.wb.remove(self.wb.active)
        sheets = ["Summary", "Inputs", "Catalog", *CALC_SHEETS, "Change log"]
        if plan.layout is not None and plan.layout.candidates:
            sheets.insert(sheets.index("Parallelism") + 1, "Layout workings")
        for title in sheets:
            ws = self.wb.create_sheet(title)
            ws.sheet_properties.tabColor = TAB_COLOURS.get(title, CALC_TAB)

    # --- helpers ---------------------------------------------------------------------
    def unit_text(self, unit: str) -> str:
        return "" if unit == "text" else unit.replace("currency", self.currency)

    def define(self, name: str, ws, ref: str) -> None:
        sheet = ws.title
        if name in self.wb.defined_names:
            raise ValueError(f"defined name {name} written twice")
        self.wb.defined_names[name] = DefinedName(name, attr_text=f"'{sheet}'!{ref}")
        self.result.names[name] = f"{sheet}!{ref.replace('$', '')}"

    def formula(self, ws, row: int, col: int, text: str, expected, fmt: str | None):
        cell = ws.cell(row, col, "=" + text)
        cell.style = "Calculation"
        if fmt:
            cell.number_format = fmt
        self.result.expected[f"{ws.title}!{cell.coordinate}"] = expected
        return cell

    def header(self, ws, row: int, labels: list[str]) -> None:
        for col, label in enumerate(labels, 1):
            ws.cell(row, col, label).style = "Header"

    def title(self, ws, text: str, subtitle: str) -> None:
        put_text(ws.cell(1, 1), text)
        ws.cell(1, 1).font = Font(bold=True, size=14)
        put_text(ws.cell(2, 1), subtitle)
        ws.cell(2, 1).font = Font(italic=True, color="595959")

    def page_setup(self, ws, title_rows: str = "1:4") -> None:
        ws.page_setup.orientation = "landscape"
        ws.page_setup.paperSize = ws.PAPERSIZE_A4
        ws.sheet_properties.pageSetUpPr.fitToPage = True
        ws.page_setup.fitToWidth = 1
        ws.page_setup.fitToHeight = 0
        ws.print_title_rows = title_rows
        ws.oddHeader.right.text = f"trainbudget {__version__}"
        ws.oddFooter.center.text = "&A, page &P of &N"
        ws.protection.sheet = True      # formulas locked, inputs unlocked; no password

    def widths(self, ws, widths: list[int]) -> None:
        for i, w in enumerate(widths, 1):
            ws.column_dimensions[get_column_letter(i)].width = w

    # --- sheets ----------------------------------------------------------------------
    def sectioned_rows(self, ws, row: int, entries, write_row) -> int:
        """One row per entry, with a heading row wherever the section changes."""
        section = None
        for entry in entries:
            if entry.section != section:
                section = entry.section
                row += 1
                ws.cell(row, 1, section).font = SECTION_FONT
                row += 1
            write_row(ws, row, entry)
            row += 1
        return row

    def input_value(self, cell, value, unit: str, kind: str = "number") -> None:
        """An input cell: text stays text, numbers get their unit's format, both the input style."""
        if isinstance(value, str):
            put_text(cell, value)
        else:
            cell.value = value
        cell.style = "Input"
        fmt = None if isinstance(value, str) else number_format(unit, kind)
        if fmt:
            cell.number_format = fmt

    def inputs(self) -> None:
        ws = self.wb["Inputs"]
        self.title(ws, "Inputs: every assumption of the plan",
                   "Blue on yellow cells are inputs: change them and the whole book recomputes. "
                   "Blank optional inputs fall back to the formula named in the note.")
        self.header(ws, 4, ["Assumption", "Value", "Unit", "Source", "Note", "Name in formulas",
                            "At generation"])
        defs = [d for d in self.model.inputs.values() if d.on_inputs_sheet]
        singles = [d for d in defs if not d.is_range and not d.kind.startswith("generated")]
        ranges = [d for d in defs if d.is_range]
        row = self.sectioned_rows(ws, 5, singles, self.input_row)
        row = self.range_table(ws, row + 1, ranges)
        row = self.generation_block(ws, row + 2)
        self.candidate_inputs(ws, row + 2)
        self.widths(ws, [46, 20, 22, 60, 50, 26, 16])
        ws.freeze_panes = "B5"
        self.page_setup(ws)

    def input_row(self, ws, row: int, d: InputDef) -> None:
        iv = self.plan.inputs[d.name]
        put_text(ws.cell(row, 1), d.label)
        cell = ws.cell(row, 2)
        self.input_value(cell, iv.value, d.unit, d.kind)
        if self.unit_text(d.unit):
            put_text(ws.cell(row, 3), self.unit_text(d.unit))
        put_text(ws.cell(row, 4), iv.source)
        if d.name == "gpu_type":       # the product name, live beside the drop-down
            self.formula(ws, row, 5, "accelerator_name", self.plan.values["accelerator_name"], None)
        elif iv.note:
            put_text(ws.cell(row, 5), iv.note)
        put_text(ws.cell(row, 6), d.name)
        ws.cell(row, 6).font = Font(color="7F7F7F")
        self.define(d.name, ws, f"$B${row}")
        self.validate(ws, cell.coordinate, d)
        twin = f"gen_{d.name}"
        if twin in self.model.inputs:   # the value the layout search saw, kept visibly
            self.generated_value(ws, row, 7, twin, d.unit)
            changed = FormulaRule(formula=[f"$B{row}<>$G{row}"], fill=CHANGED_FILL)
            ws.conditional_formatting.add(f"A{row}:G{row}", changed)

    def generated_value(self, ws, row: int, col: int, name: str, unit: str) -> None:
        cell = ws.cell(row, col)
        value = self.plan.inputs[name].value
        if isinstance(value, str):
            put_text(cell, value)
        else:
            cell.value = value
            fmt = number_format(unit)
            if fmt:
                cell.number_format = fmt
        cell.font = Font(color="595959")
        self.define(name, ws, f"${get_column_letter(col)}${row}")

    def generation_block(self, ws, row: int) -> int:
        """What the layout search saw besides the inputs above (column G): the catalog figures
        it read and whether it ran. The check on the Checks sheet compares them with the live cells."""
        ws.cell(row, 1, "At generation: what the layout search saw").font = SECTION_FONT
        row += 1
        put_text(ws.cell(row, 1), "Column G keeps each input the search used as it was at "
                                  "generation; rows that differ turn orange. These are the figures "
                                  "it read from the Catalog. Locked: they record, not assume.")
        ws.cell(row, 1).font = Font(italic=True, color="595959")
        for d in self.model.inputs.values():
            source = d.name.removeprefix("gen_")
            if not d.kind.startswith("generated") or (source != d.name and source in self.model.inputs):
                continue
            row += 1
            put_text(ws.cell(row, 1), d.label)
            self.generated_value(ws, row, 2, d.name, d.unit)
            if self.unit_text(d.unit):
                put_text(ws.cell(row, 3), self.unit_text(d.unit))
            if source in self.model.items:
                self.formula(ws, row, 5, f'IF({source}={d.name},"","now "&{source})',
                             "", None)
            put_text(ws.cell(row, 6), d.name)
            ws.cell(row, 6).font = Font(color="7F7F7F")
        return row

    def validate(self, ws, coord: str, d: InputDef) -> None:
        """Data validation as strict as the scenario schema (divisors above 0), with the unit and
        a line of help shown when the reviewer selects the cell."""
        dv = self._validation(d)
        if dv is None:
            dv = DataValidation(type="custom", formula1="TRUE")   # a carrier for the input message
            dv.showErrorMessage = False
        else:
            dv.errorTitle = "Invalid input"
            dv.showErrorMessage = True
        unit = self.unit_text(d.unit)
        dv.promptTitle = d.label[:32]
        dv.prompt = "; ".join(p for p in (f"Unit: {unit}" if unit else "", d.help) if p)[:255]
        dv.showInputMessage = bool(dv.prompt)
        dv.add(coord)
        ws.add_data_validation(dv)

    def _validation(self, d: InputDef) -> DataValidation | None:
        if d.kind == "choice":
            source = d.choices_from or '"' + ",".join(d.choices or ()) + '"'
            dv = DataValidation(type="list", formula1=source, allow_blank=False)
            dv.error = f"Pick one of the listed values for {d.label}."
            return dv
        if d.kind == "date":
            dv = DataValidation(type="date", operator="greaterThan", formula1="1")
            dv.error = f"{d.label} must be a date."
            return dv
        if d.kind not in {"integer", "number", "fraction", "range"} or d.minimum is None:
            return None
        kind = "whole" if d.kind == "integer" else "decimal"
        low = _num(d.minimum)
        if d.maximum is not None and not d.positive:
            dv = DataValidation(type=kind, operator="between", formula1=low, formula2=_num(d.maximum))
            dv.error = f"{d.label} must be between {low} and {_num(d.maximum)}."
        elif d.positive:
            dv = DataValidation(type=kind, operator="greaterThan", formula1=low)
            dv.error = f"{d.label} must be above {low}" + (
                f" and at most {_num(d.maximum)}." if d.maximum is not None else ".")
        else:
            dv = DataValidation(type=kind, operator="greaterThanOrEqual", formula1=low)
            dv.error = f"{d.label} must be at least {low}."
        dv.allow_blank = d.optional
        return dv

    def range_table(self, ws, row: int, defs: list[InputDef]) -> int:
        if not defs:
            return row
        section = defs[0].section
        ws.cell(row, 1, section).font = SECTION_FONT
        row += 1
        self.header(ws, row, [f"{d.label} ({self.unit_text(d.unit)})" for d in defs] + ["Source"])
        first = row + 1
        values = [self.plan.inputs[d.name].value for d in defs]
        rows = len(values[0])
        for r, line in enumerate(zip(*values)):
            for c, (d, v) in enumerate(zip(defs, line), 1):
                self.input_value(ws.cell(first + r, c), v, d.unit)
            put_text(ws.cell(first + r, len(defs) + 1), self.plan.inputs[defs[0].name].source)
        last = first + rows + SPARE_ROWS - 1
        for r in range(first + rows, last + 1):       # spare rows: blank, unlocked, validated
            for c, d in enumerate(defs, 1):
                self.input_value(ws.cell(r, c), None, d.unit)
        put_text(ws.cell(first + rows, len(defs) + 1),
                 f"Spare rows: type more roles here ({SPARE_ROWS} rows inside the table)")
        ws.cell(first + rows, len(defs) + 1).font = Font(italic=True, color="595959")
        for c, d in enumerate(defs, 1):
            col = get_column_letter(c)
            self.define(d.name, ws, f"${col}${first}:${col}${last}")
            if d.kind == "range":
                self.validate(ws, f"{col}{first}:{col}{last}", d)
        end = get_column_letter(len(defs))
        self.define("staff_rows_below", ws, f"$A${last + 1}:${end}${last + BELOW_ROWS}")
        return last + BELOW_ROWS

    def candidate_inputs(self, ws, row: int) -> None:
        """The layouts the Parallelism sheet compares, as editable inputs."""
        layout = self.plan.layout
        if layout is None or not layout.candidates:
            return
        ws.cell(row, 1, "Layout candidates (compared on the Parallelism sheet; edit to try others)").font = SECTION_FONT
        self.header(ws, row + 1, ["Candidate"] + [label for _, label, _ in LAYOUT_COLUMNS])
        for n, cand in enumerate(layout.candidates):
            r = row + 2 + n
            put_text(ws.cell(r, 1), _candidate_label(layout, n))
            cells = {}
            for c, (name, _, _) in enumerate(LAYOUT_COLUMNS, 2):
                cell = ws.cell(r, c)
                self.input_value(cell, cand.layout.as_inputs()[name], self.model.inputs[name].unit)
                self.validate(ws, cell.coordinate, self.model.inputs[name])
                cells[name] = f"'Inputs'!${get_column_letter(c)}${r}"
            self.candidate_cells.append(cells)

    def catalog(self) -> None:
        ws = self.wb["Catalog"]
        self.title(ws, "Catalog: the tables the calculations look up",
                   "Figures with their sources and as-of dates (catalogs/*.yaml). Editable: a change "
                   "here flows through every INDEX/MATCH.")
        row = 4
        for tdef in self.model.tables.values():
            data = self.plan.tables[tdef.name]
            ws.cell(row, 1, tdef.title).font = SECTION_FONT
            row += 1
            self.header(ws, row, [f"{h} ({u})" if u != "text" else h for _, h, u in tdef.columns] + ["Source"])
            first = row + 1
            for r, (values, source) in enumerate(zip(data.rows, data.sources)):
                for c, (col, _, unit) in enumerate(tdef.columns, 1):
                    self.input_value(ws.cell(first + r, c), values[col], unit)
                put_text(ws.cell(first + r, len(tdef.columns) + 1), source)
            last = first + len(data.rows) - 1
            growable = tdef.name == ACCELERATOR_TABLE
            if growable:      # spare rows a reviewer can fill: the drop-down and lookups see them
                for r in range(last + 1, last + SPARE_ROWS + 1):
                    for c, (_, _, unit) in enumerate(tdef.columns, 1):
                        self.input_value(ws.cell(r, c), None, unit)
                    ws.cell(r, len(tdef.columns) + 1).protection = Protection(locked=False)
                put_text(ws.cell(last + 1, len(tdef.columns) + 1),
                         "Spare rows: add an accelerator here (id, name, figures, source)")
                last += SPARE_ROWS
            for c, (col, _, _) in enumerate(tdef.columns, 1):
                letter = get_column_letter(c)
                self.define(f"{tdef.name}_{col}", ws, f"${letter}${first}:${letter}${last}")
            if growable:
                end = get_column_letter(len(tdef.columns))
                self.define("catalog_rows_below", ws, f"$A${last + 1}:${end}${last + BELOW_ROWS}")
                last += BELOW_ROWS
            row = last + 3
        self.widths(ws, [24, 44, 12, 14, 12, 12, 16, 16, 12, 90])
        ws.freeze_panes = "B4"
        self.page_setup(ws, "1:3")

    def calc_sheet(self, title: str, subtitle: str) -> None:
        ws = self.wb[title]
        self.title(ws, title, subtitle)
        if title == "Timeline":
            self.timeline(ws)
            return
        is_checks = title == "Checks"
        self.header(ws, 4, ["Item", "Value", "Unit", "Name", "Fix when not 0" if is_checks else "Note"])
        row = self.sectioned_rows(ws, 5, self.model.sheet_items(title), self.item_row)
        if title == "Parallelism":
            self.candidate_rows(ws, row + 2)
        if title == "Parallelism":   # the candidate table below shares these columns
            self.widths(ws, [52, 16, 14, 28, 44] + [14] * 12)
        else:
            self.widths(ws, [52, 20, 18, 30, 80])
        ws.freeze_panes = "B5"
        self.page_setup(ws)

    def candidate_rows(self, ws, row: int) -> None:
        """Each candidate layout as a row of live formulas: the same expressions as the sheets
        above, with layout-dependent names resolved to the candidate's own cells. The key figures
        sit on Parallelism; the intermediate ones on "Layout workings", one row per candidate."""
        layout = self.plan.layout
        if layout is None or not layout.candidates:
            return
        keys, working = candidate_columns(self.model)
        put_text(ws.cell(row, 1), "Layout candidates: the search's best layouts that fit, then faster "
                                  "ones that do not. Live formulas over the Inputs sheet's candidate "
                                  "table; intermediate figures on the Layout workings sheet.")
        ws.cell(row, 1).font = SECTION_FONT
        put_text(ws.cell(row + 1, 1), "Why the first row: " + layout.explanation)
        ws.cell(row + 1, 1).alignment = Alignment(wrap_text=True, vertical="top")
        ws.merge_cells(start_row=row + 1, start_column=1, end_row=row + 1, end_column=12)
        ws.row_dimensions[row + 1].height = 75
        head = row + 2
        wk = self.wb["Layout workings"]
        self.title(wk, "Layout workings", "Intermediate figures of each candidate on the Parallelism "
                                          "sheet, one row per candidate, same formulas as the sheets.")
        self.header(ws, head, ["Candidate"] + [self._column_label(n) for n in keys])
        self.header(wk, 4, ["Candidate"] + [self._column_label(n) for n in working])
        ws.row_dimensions[head].height = 60
        wk.row_dimensions[4].height = 75
        for n, values in enumerate(self.plan.candidate_values):
            r, wr = head + 1 + n, 5 + n
            where = {name: f"{get_column_letter(c)}{r}" for c, name in enumerate(keys, 2)}
            where.update({name: f"'Layout workings'!{get_column_letter(c)}{wr}"
                          for c, name in enumerate(working, 2)})
            back = {name: f"'Parallelism'!{cell}" for name, cell in where.items() if "!" not in cell}
            back.update({name: f"{get_column_letter(c)}{wr}" for c, name in enumerate(working, 2)})
            for sheet, at_row, names, refs in ((ws, r, keys, where), (wk, wr, working, back)):
                put_text(sheet.cell(at_row, 1), _candidate_label(layout, n))
                resolve = lambda name, refs=refs: refs.get(name, name)  # noqa: E731
                for c, name in enumerate(names, 2):
                    self.candidate_cell(sheet, at_row, c, n, name, values[name], resolve)
        self.widths(wk, [22] + [14] * len(working))
        wk.freeze_panes = "B5"
        self.page_setup(wk)

    def timeline(self, ws) -> None:
        """One row per phase whose Start and End cells are the named line items, beside a week
        grid; the bars are conditional formatting over the formula dates of the week columns."""
        values, head, first_col = self.plan.values, 4, 4
        weeks = len(self.plan.inputs["timeline_week_cells"].value)
        self.header(ws, head, ["Phase (seed 002 section 6)", "Start", "End"])
        for w in range(weeks):
            col = first_col + w
            letter, before = get_column_letter(col), get_column_letter(col - 1)
            text = "start_date" if w == 0 else f"{before}{head}+7"
            day = values["start_date"] + 7 * w
            cell = self.formula(ws, head, col, text, day, "mm-dd")
            cell.style = "Header"
            cell.number_format = "mm-dd"
            cell.alignment = Alignment(text_rotation=90, horizontal="center")
            # the year above the week where it changes (and above the first week)
            year = from_serial(day).year
            if w == 0:
                self.formula(ws, head - 1, col, f"YEAR({letter}{head})", float(year), "0")
            else:
                changed = year != from_serial(day - 7).year
                self.formula(ws, head - 1, col, f'IF(YEAR({letter}{head})<>YEAR({before}{head}),'
                                                f'YEAR({letter}{head}),"")',
                             float(year) if changed else "", "0")
            ws.cell(head - 1, col).font = Font(bold=True, size=8)
            ws.column_dimensions[letter].width = 3.2
        ws.row_dimensions[head].height = 36
        first, last = get_column_letter(first_col), get_column_letter(first_col + weeks - 1)
        self.define("timeline_week_cells", ws, f"${first}${head}:${last}${head}")
        for n, key in enumerate(TIMELINE_PHASES):
            r = head + 1 + n
            put_text(ws.cell(r, 1), self.model.items[f"{key}_start"].label.removesuffix(": start"))
            for c, suffix in ((2, "start"), (3, "end")):
                item = self.model.items[f"{key}_{suffix}"]
                self.formula(ws, r, c, item.expr.excel(), values[item.name], DATE_FORMAT)
                self.define(item.name, ws, f"${get_column_letter(c)}${r}")
            colour = GANTT_COLOURS[n % len(GANTT_COLOURS)]
            rule = FormulaRule(formula=[f"AND({first}${head}<$C{r},{first}${head}+7>$B{r})"],
                               fill=PatternFill("solid", start_color=colour, end_color=colour))
            ws.conditional_formatting.add(f"{first}{r}:{last}{r}", rule)
        row = head + len(TIMELINE_PHASES) + 2
        ws.cell(row, 1, "Project").font = SECTION_FONT
        project = [i.name for i in self.model.sheet_items("Timeline") if i.section == "Project"]
        for r, name in enumerate(project, row + 1):
            item = self.model.items[name]
            put_text(ws.cell(r, 1), f"{item.label} ({item.note})" if item.note else item.label)
            self.formula(ws, r, 2, item.expr.excel(), values[name], number_format(item.unit))
            if self.unit_text(item.unit) != "date":
                put_text(ws.cell(r, 3), self.unit_text(item.unit))
            self.define(name, ws, f"$B${r}")
        row += len(project) - 3
        put_text(ws.cell(row + 5, 1), "Each phase starts when the one before ends; the full-training "
                                      "phase is queue + setup + transfer + training with failures "
                                      "(Schedule sheet), the others are input durations.")
        ws.cell(row + 5, 1).font = Font(italic=True, color="595959")
        self.widths(ws, [48, 12, 12])
        ws.freeze_panes = ws.cell(head + 1, first_col)
        self.page_setup(ws)

    def _column_label(self, name: str) -> str:
        for input_name, label, _ in LAYOUT_COLUMNS:
            if input_name == name:
                return label
        unit = self.unit_text(self.model.items[name].unit)
        label = CANDIDATE_LABELS.get(name, self.model.items[name].label)
        return f"{label} ({unit})" if unit and unit != "flag" else label

    def candidate_cell(self, ws, row: int, col: int, n: int, name: str, value, resolve) -> None:
        if name in self.candidate_cells[n]:
            self.formula(ws, row, col, self.candidate_cells[n][name], value, None)
            return
        item = self.model.items[name]
        cell = self.formula(ws, row, col, item.expr.excel(resolve), value, number_format(item.unit))
        if item.is_flag:
            self.flag_format(ws, cell.coordinate, item.kind == "warning")

    def item_row(self, ws, row: int, item: Item) -> None:
        put_text(ws.cell(row, 1), item.label)
        cell = self.formula(ws, row, 2, item.expr.excel(), self.plan.values[item.name],
                            number_format(item.unit))
        if self.unit_text(item.unit):
            put_text(ws.cell(row, 3), self.unit_text(item.unit))
        put_text(ws.cell(row, 4), item.name)
        ws.cell(row, 4).font = Font(color="7F7F7F")
        if item.fix or item.note:
            put_text(ws.cell(row, 5), item.fix or item.note)
        self.define(item.name, ws, f"$B${row}")
        if item.is_flag or item.name == "master_check":
            self.flag_format(ws, cell.coordinate, item.kind == "warning")

    def flag_format(self, ws, coord: str, warning: bool = False) -> None:
        """Green only for a number equal to 0; red (amber for a warning) for anything else,
        an error value included. Formula rules: a cellIs rule never matches an error."""
        cell = coord.split(":")[0].replace("$", "")
        fine = f"AND(ISNUMBER({cell}),{cell}=0)"
        ws.conditional_formatting.add(coord, FormulaRule(formula=[fine], fill=OK_RULE_FILL))
        ws.conditional_formatting.add(coord, FormulaRule(formula=[f"NOT({fine})"],
                                                         fill=WARN_RULE_FILL if warning else BAD_RULE_FILL))

    def summary(self) -> None:
        ws = self.wb["Summary"]
        s = self.plan.scenario
        put_text(ws.cell(1, 1), s.name)
        ws.cell(1, 1).font = Font(bold=True, size=16)
        if s.description:
            put_text(ws.cell(2, 1), s.description)
            ws.cell(2, 1).alignment = Alignment(wrap_text=True, vertical="top")
            ws.merge_cells("A2:D2")
            ws.row_dimensions[2].height = 48
        put_text(ws.cell(3, 1), f"trainbudget {__version__}, scenario file {self.plan.scenario_id}.yaml. "
                                "Every figure is a live formula over the Inputs sheet.")
        ws.cell(3, 1).font = Font(italic=True, color="595959")
        row = 5
        for heading, names in SUMMARY_BLOCKS:
            ws.cell(row, 1, heading).font = SECTION_FONT
            row += 1
            self.header(ws, row, ["", "Value", "Unit"])
            row += 1
            for name in names:
                item = self.model.items.get(name) or self.model.inputs[name]
                put_text(ws.cell(row, 1), SUMMARY_LABELS.get(name, item.label))
                cell = self.formula(ws, row, 2, name, self.plan.values[name], number_format(item.unit))
                if self.unit_text(item.unit):
                    put_text(ws.cell(row, 3), self.unit_text(item.unit))
                if name in {"total_cost", "master_check"}:
                    ws.cell(row, 1).font = Font(bold=True)
                    cell.font = Font(bold=True)
                if getattr(item, "is_check", False) or name == "master_check":
                    self.flag_format(ws, cell.coordinate)
                row += 1
            row += 1
            if heading == "How many accelerators":
                row = self.layout_reasoning(ws, row)
        self.widths(ws, [50, 22, 18, 30])
        self.page_setup(ws, "1:1")

    def layout_reasoning(self, ws, row: int) -> int:
        """The sizing and layout decision in words (as computed when the book was generated)."""
        layout = self.plan.layout
        if layout is None:
            return row
        ws.cell(row, 1, "Why this GPU count and layout (at generation)").font = SECTION_FONT
        lines = [f"GPU count: {self.plan.inputs['gpu_count'].source}", f"Layout: {layout.explanation}"]
        for text in lines:
            row += 1
            put_text(ws.cell(row, 1), text)
            ws.cell(row, 1).alignment = Alignment(wrap_text=True, vertical="top")
            ws.merge_cells(start_row=row, start_column=1, end_row=row, end_column=4)
            ws.row_dimensions[row].height = 15 * (1 + len(text) // 110)
        return row + 2

    def change_log(self) -> None:
        ws = self.wb["Change log"]
        self.title(ws, "Change log", "Add a row for every change made to this workbook after it was generated.")
        self.header(ws, 4, ["Date", "Version", "Who", "Change"])
        put_text(ws.cell(5, 2), f"trainbudget {__version__}")
        put_text(ws.cell(5, 3), "trainbudget")
        put_text(ws.cell(5, 4), f"Generated from scenario {self.plan.scenario_id}.yaml")
        self.widths(ws, [14, 20, 20, 80])
        self.page_setup(ws)

    def properties(self) -> None:
        p = self.wb.properties
        p.title = self.plan.scenario.name
        p.subject = "LLM training compute, schedule and cost plan"
        p.creator = "trainbudget"
        p.keywords = f"trainbudget {__version__}"
        p.version = __version__
        p.description = f"Generated by trainbudget {__version__} from {self.plan.scenario_id}.yaml"
        self.wb.calculation.fullCalcOnLoad = True

    def build(self) -> WorkbookResult:
        self.inputs()
        self.catalog()
        subtitles = {
            "Compute": "Training FLOPs, throughput, GPU-hours and days (seed 002 sections 1-2)",
            "Memory": "Memory first: model states and activations per GPU (seed 000 step 1, seed 002 section 4)",
            "Cost": "Rental, network, storage, staffing and the contingency buffer (seed 002 section 5)",
            "Checks": "Each check is 0 when fine, 1 when not; the master check on Summary adds them up",
            "Parallelism": "The layout, its pipeline bubble, communication and recomputation, and the "
                           "efficiency they leave (seed 000 section 2, seed 002 section 3)",
            "Schedule": "Data and checkpoints, failures (Young/Daly), data loading, and the segments "
                        "of the run (seed 000 sections 4-5)",
            "Timeline": "Seed 002's project phases as dates; the full-training phase takes the "
                        "computed run, the others are inputs",
        }
        for title in CALC_SHEETS:
            self.calc_sheet(title, subtitles[title])
        self.summary()
        self.change_log()
        self.properties()
        buffer = io.BytesIO()
        self.wb.save(buffer)
        self.result.data = normalise_xlsx(buffer.getvalue())
        return self.result


TIMELINE_PHASES = ("data_prep", "validation", "scaling", "training", "evaluation", "deployment")


def candidate_columns(model) -> tuple[list[str], list[str]]:
    """(layout inputs and key outputs, every other layout-dependent item they need)."""
    layout_inputs = [name for name, _, _ in LAYOUT_COLUMNS]
    needed = model.closure(CANDIDATE_KEYS)
    working = [n for n in model.affected_by(set(layout_inputs)) if n in needed and n not in CANDIDATE_KEYS]
    return layout_inputs + list(CANDIDATE_KEYS), working


def _candidate_label(layout, n: int) -> str:
    if layout.search is None:
        return "pinned by the scenario"
    if n >= layout.rejected_from:
        return "faster, does not fit"
    return "1: chosen" if n == 0 else str(n + 1)


SUMMARY_BLOCKS = (
    ("Checks", ("master_check",)),
    ("How many accelerators", ("accelerator_name", "gpu_count", "layout_label", "memory_per_gpu_gb",
                               "usable_hbm_gb", "check_memory_fits", "min_gpus_for_memory")),
    ("For how long", ("train_flops", "effective_tflops", "gpu_hours", "gpu_days", "train_days",
                      "stretched_training_days", "goodput", "non_training_days", "run_days",
                      "start_date", "training_start", "training_end", "project_end", "project_weeks")),
    ("For how much", ("rental_cost", "billed_rental_cost", "experiment_cost", "network_cost",
                      "storage_cost", "staffing_cost", "subtotal_cost", "buffer_cost", "total_cost")),
)
SUMMARY_LABELS = {
    "check_memory_fits": "Memory does not fit (1) / fits (0)",
    "layout_label": "Layout TP × PP × DP",
    "train_days": "Training days (pure compute)",
}


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def write_workbook(plan: Plan) -> WorkbookResult:
    return _Writer(plan).build()
