"""A finance reviewer edits the bundled workbooks (issue 7, first "Done when").

Each edit is made with openpyxl, which, like a paste, bypasses data validation; every edited
copy is recalculated in ONE LibreOffice call (module fixture `reviewed`) and each test reads
what the Summary, the checks and the totals then show. Where an edit has an equivalent scenario,
the recalculated book is held against the Python plan of that scenario (relative 1e-9).

The books:
- seed: scenarios/gpt3-175b-h100.yaml, its layout pinned and NOT fitting (the memory check fails
  on purpose), staffing months typed 6 (with a warning: the project runs longer);
- searched: the same scenario with the layout, the effective TFLOPS and the activations left to
  the planner's search;
- deadline: scenarios/llama3-70b-h100-deadline.yaml, sized for a deadline, staffing and storage
  months blank (they follow the project).
"""

from __future__ import annotations

import datetime as dt
import math
import re
import shutil
import subprocess
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import openpyxl
import pytest
from openpyxl.utils.datetime import to_excel
from openpyxl.utils.cell import column_index_from_string, coordinate_from_string

from budget.xlsx.recalc import is_error, read_values, recalculate
from budget.sheets.book import write_workbook
from support import SCENARIOS, SEED_H100, plan_of, raw, require_soffice, require_tool, with_changes

# Every test reads books LibreOffice recalculated (two, Gnumeric's too).
pytestmark = pytest.mark.office

TOLERANCE = 1e-9
DEADLINE = SCENARIOS / "llama3-70b-h100-deadline.yaml"
OPTIONS = SCENARIOS / "gpt3-175b-options.yaml"
SEARCHED = {"parallelism": {}, "sources": {}, "hardware.effective_tflops": None,
            "hardware.peak_tflops": None, "memory.activation_gb_per_microbatch": None}
BASES = {
    "seed": (SEED_H100, {}),
    "searched": (SEED_H100, SEARCHED),
    "deadline": (DEADLINE, {}),
    "options": (OPTIONS, {}),      # the seed with options: the Compare sheet (issue 29)
}
LONGER_SCHEDULE = {"evaluation_weeks": 30, "queue_days": 60}
SCHEDULE_CHANGES = {f"schedule.{name}": value for name, value in LONGER_SCHEDULE.items()}
NEW_ROLE = ("Finance controller", 1, 10000, 3)      # role, headcount, monthly cost, months
NEW_SHAPE = {"hidden_size": 8192, "model_layers": 64}
MY_GPU_HBM = 192


# --- cells by defined name ---------------------------------------------------------------------
def _target(wb, name: str) -> tuple[str, str]:
    """(sheet, "A1" or "A1:B9") of a workbook-scope defined name, as the file says."""
    text = wb.defined_names[name].attr_text
    sheet, ref = text.rsplit("!", 1)
    return sheet.strip("'"), ref.replace("$", "")


def _cells(wb, name: str) -> list:
    """The cells of a name, top to bottom (a single cell is a list of one)."""
    sheet, ref = _target(wb, name)
    first, _, last = ref.partition(":")
    ws = wb[sheet]
    if not last:
        return [ws[first]]
    return [row[0] for row in ws[f"{first}:{last}"]]


def _set(wb, name: str, value) -> None:
    _cells(wb, name)[0].value = value


def _row_of(cells, value) -> int:
    return next(c.row for c in cells if c.value == value)


def _first_blank_row(wb, name: str) -> int:
    return next(c.row for c in _cells(wb, name) if c.value in (None, ""))


def _column(wb, name: str) -> int:
    return column_index_from_string(coordinate_from_string(_target(wb, name)[1].split(":")[0])[0])


def _put_row(wb, names: list[str], row: int, values) -> None:
    """Type `values` into `row` of the columns of the range names."""
    for name, value in zip(names, values):
        wb[_target(wb, name)[0]].cell(row, _column(wb, name), value)


STAFF_COLUMNS = ["staff_role", "staff_headcount", "staff_monthly_cost", "staff_months"]


# --- the reviewer's edits: base book, then a function changing the loaded workbook ----------------
def edit_mfu_zero(wb):
    _set(wb, "mfu", 0)
    _set(wb, "effective_tflops_given", None)     # so the MFU, not the seed's 450 TFLOPS, is used


def edit_delete_buffer_row(wb):
    """Excel, on deleting the row, turns the name into #REF! (openpyxl's delete_rows would shift
    the cells without updating any name or formula, so the deletion is simulated as Excel does)."""
    row = _cells(wb, "buffer_rate")[0].row
    ws = wb["Inputs"]
    for cell in ws[row]:
        cell.value = None
    wb.defined_names["buffer_rate"].attr_text = "#REF!"


def edit_gpu(gpu_id):
    def edit(wb):
        _set(wb, "gpu_type", gpu_id)
    return edit


def edit_shape(blank_override: bool):
    def edit(wb):
        for name, value in NEW_SHAPE.items():
            _set(wb, name, value)
        if blank_override:
            _set(wb, "params_override", None)
    return edit


def edit_longer_schedule(wb):
    for name, value in LONGER_SCHEDULE.items():
        _set(wb, name, value)


def edit_role_in_spare_row(wb):
    _put_row(wb, STAFF_COLUMNS, _first_blank_row(wb, "staff_role"), NEW_ROLE)


def edit_role_below_table(wb):
    _put_row(wb, STAFF_COLUMNS, _cells(wb, "staff_rows_below")[0].row, NEW_ROLE)


def edit_new_catalog_row(wb):
    """The H100 row copied into the Catalog's first spare row as "My GPU", with 192 GB of HBM."""
    columns = sorted((n for n in wb.defined_names if n.startswith("acc_")),
                     key=lambda n: _column(wb, n))
    ws = wb[_target(wb, "acc_id")[0]]
    h100 = _row_of(_cells(wb, "acc_id"), "nvidia_h100_sxm")
    figures = {n: ws.cell(h100, _column(wb, n)).value for n in columns}
    figures.update(acc_id="my_gpu", acc_name="My GPU", acc_hbm_gb=MY_GPU_HBM)
    spare = _first_blank_row(wb, "acc_id")
    _put_row(wb, columns, spare, [figures[n] for n in columns])
    ws.cell(spare, _column(wb, columns[-1]) + 1, "a reviewer's row: the H100's figures, 192 GB")
    _set(wb, "gpu_type", "my_gpu")


def edit_currency(wb):
    _set(wb, "currency", "EUR")


def edit_reference_model(wb):
    _set(wb, "efficiency_model", "reference")


# issue 29: what the importer refuses, typed or pasted past the data validation
def edit_blank(name):
    def edit(wb):
        _set(wb, name, None)
    return edit


def edit_typed(name, value):
    def edit(wb):
        _set(wb, name, value)
    return edit


def _insert_row(wb, sheet: str, row: int) -> None:
    """A row inserted above `row` of `sheet`, as Excel and LibreOffice insert it: the cells move
    down, and so does every defined name on the sheet at or below it (a range spanning the row
    grows). openpyxl moves the cells alone; the names are moved here (no formula on the Cost
    sheet refers to a cell by its address)."""
    wb[sheet].insert_rows(row)
    for name, dn in list(wb.defined_names.items()):
        where, _, ref = dn.attr_text.rpartition("!")
        if where.strip("'") != sheet:
            continue
        def moved(m):
            r = int(m.group(2))
            return f"{m.group(1)}{r + 1 if r >= row else r}"
        dn.attr_text = where + "!" + CELL_REF.sub(moved, ref)


CELL_REF = re.compile(r"(\$?[A-Z]+\$?)(\d+)")
EXTRA_COST = ("Software licences", 250000)


def edit_cost_row_inserted(wb):
    """A row inserted inside the Cost sheet's lines, just below the network line, with an amount."""
    row = _cells(wb, "network_cost")[0].row + 1
    _insert_row(wb, "Cost", row)
    wb["Cost"].cell(row, 1, EXTRA_COST[0])
    wb["Cost"].cell(row, 2, EXTRA_COST[1])


def edit_cost_figure_below(wb):
    """An amount typed two rows below the Cost sheet's last line."""
    ws = wb["Cost"]
    last = max(c.row for name in wb.defined_names if _target(wb, name)[0] == "Cost"
               for c in _cells(wb, name) if not name.startswith("cost_sheet"))
    ws.cell(last + 2, 1, EXTRA_COST[0])
    ws.cell(last + 2, 2, EXTRA_COST[1])


def edit_cost_line_overwritten(wb):
    """The storage line overwritten with a figure (the total adds it as it stands)."""
    _set(wb, "storage_cost", EXTRA_COST[1])


def edit_option_column_pasted(wb):
    """The last option's column of the Compare sheet copied to the column right of it, titled
    as a new option (a reviewer comparing one more GPU price)."""
    from openpyxl.formula.translate import Translator
    ws = wb["Compare"]
    last = max(c.column for c in _cells_of_row(wb, "compare_option_names"))
    for row in ws.iter_rows(min_col=last, max_col=last):
        cell = row[0]
        value = cell.value
        if isinstance(value, str) and value.startswith("="):
            value = Translator(value, origin=cell.coordinate).translate_formula(
                f"{openpyxl.utils.get_column_letter(last + 1)}{cell.row}")
        ws.cell(cell.row, last + 1, value)
    ws.cell(_cells_of_row(wb, "compare_option_names")[0].row, last + 1, PASTED_OPTION)


PASTED_OPTION = "1,024 H100 at a reviewer's price"


def _cells_of_row(wb, name: str) -> list:
    sheet, ref = _target(wb, name)
    return list(wb[sheet][ref][0])


def edit_staff_text(name, value):
    """The first staffing row's `name` typed as text (a headcount of "four", a cost of "12,000")."""
    def edit(wb):
        _cells(wb, name)[0].value = value
    return edit


EDITS = {
    "seed-mfu-zero": ("seed", edit_mfu_zero),
    "seed-buffer-row-deleted": ("seed", edit_delete_buffer_row),
    "searched-mi300x": ("searched", edit_gpu("amd_mi300x")),
    "seed-mi300x": ("seed", edit_gpu("amd_mi300x")),
    "searched-new-shape": ("searched", edit_shape(blank_override=True)),
    "seed-new-shape-override-kept": ("seed", edit_shape(blank_override=False)),
    "seed-longer-schedule": ("seed", edit_longer_schedule),
    "deadline-longer-schedule": ("deadline", edit_longer_schedule),
    "seed-role-in-spare-row": ("seed", edit_role_in_spare_row),
    "seed-role-below-table": ("seed", edit_role_below_table),
    "seed-new-catalog-row": ("seed", edit_new_catalog_row),
    "seed-currency-eur": ("seed", edit_currency),
    "searched-reference-model": ("searched", edit_reference_model),
    "seed-gpu-price-blank": ("seed", edit_blank("price_per_gpu_hour")),
    "seed-headcount-text": ("seed", edit_staff_text("staff_headcount", "four")),
    "seed-monthly-cost-text": ("seed", edit_staff_text("staff_monthly_cost", "12,000")),
    "searched-buffer-20": ("searched", edit_typed("buffer_rate", 20)),
    "searched-pue-pasted-0.5": ("searched", edit_typed("pue", 0.5)),
    "searched-tp-text": ("searched", edit_typed("tp_size", "8 GPUs")),
    "seed-cost-row-inserted": ("seed", edit_cost_row_inserted),
    "seed-cost-figure-below": ("seed", edit_cost_figure_below),
    "seed-cost-line-overwritten": ("seed", edit_cost_line_overwritten),
    "options-column-pasted": ("options", edit_option_column_pasted),
}


@dataclass
class Book:
    name: str
    path: Path                       # as written (and edited), before recalculation
    plan: object                     # the plan of the base scenario
    names: dict                      # defined name -> "Sheet!A1" (as generated)
    values: dict = field(default_factory=dict)     # "Sheet!A1" -> recalculated value
    formulas: dict = field(default_factory=dict)   # "Sheet!A1" -> formula, as written

    def __getitem__(self, name: str):
        return self.values.get(self.names[name])

    def on_summary(self, name: str):
        """What the Summary shows for a named figure: its cell whose formula is `=name`."""
        return self.values.get(_cell_showing(self, name))

    def range(self, name: str) -> list:
        sheet, ref = self.names[name].split("!")
        first, last = ref.split(":")
        col, top = coordinate_from_string(first)
        bottom = coordinate_from_string(last)[1]
        return [self.values.get(f"{sheet}!{col}{r}") for r in range(top, bottom + 1)]


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory, catalog) -> dict[str, Book]:
    """Every base book and every edited copy, recalculated in one LibreOffice call."""
    require_soffice()
    folder = tmp_path_factory.mktemp("reviewer-edits")
    books: dict[str, Book] = {}
    for name, (path, changes) in BASES.items():
        plan = _options_plan(path, catalog) if path == OPTIONS else \
            plan_of(with_changes(raw(path), changes), catalog, path.stem)
        result = write_workbook(plan)
        book = folder / f"{name}.xlsx"
        book.write_bytes(result.data)
        books[name] = Book(name, book, plan, result.names,
                           formulas=_formulas(book, ("Summary", "Parallelism")))
    for name, (base, edit) in EDITS.items():
        wb = openpyxl.load_workbook(books[base].path)
        edit(wb)
        target = folder / f"{name}.xlsx"
        wb.save(target)
        # the edits leave the Summary and Parallelism sheets' formulas as generated
        books[name] = Book(name, target, books[base].plan, books[base].names,
                           formulas=books[base].formulas)
    started = time.perf_counter()
    recalculated = recalculate([b.path for b in books.values()], folder / "recalculated")
    print(f"LibreOffice recalculated {len(books)} books in {time.perf_counter() - started:.1f} s")
    for book in books.values():
        book.values = read_values(recalculated[book.path])
    return books


def _options_plan(path: Path, catalog):
    from dataclasses import replace
    from budget.plan.options import build_option_plans
    plans = build_option_plans(raw(path), catalog, path=path.name, scenario_id=path.stem)
    return replace(plans[0][1], options=tuple(plans[1:]))


def _formulas(path: Path, sheets) -> dict:
    wb = openpyxl.load_workbook(path)
    return {f"{ws.title}!{c.coordinate}": c.value for ws in wb.worksheets if ws.title in sheets
            for row in ws.iter_rows() for c in row if c.data_type == "f"}


def plan_for(catalog, base: str, changes: dict, scenario_id: str = "edited"):
    path, base_changes = BASES[base]
    data = with_changes(with_changes(raw(path), base_changes), changes)
    return plan_of(data, catalog, scenario_id)


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _named_cells(book: Book) -> set:
    """Cells that merely repeat a named figure (=accelerator_name and the like)."""
    return {k for k, f in book.formulas.items() if re.fullmatch(r"=[A-Za-z_][A-Za-z0-9_]*", f)}


def _flag_names(book: Book) -> list[str]:
    return sorted(n for n in book.names if n.startswith(("check_", "warn_"))) + [
        "master_check", "warning_count"]


def _failing_checks(plan) -> int:
    return sum(int(plan.values[c.name]) for c in plan.model.checks())


def _close(got, want) -> bool:
    if isinstance(got, (dt.date, dt.datetime)):
        got = to_excel(got)      # date-formatted results come back as datetimes
    return _is_number(got) and abs(got - want) <= TOLERANCE * max(abs(want), 1e-300)


def _assert_flags_are_numbers(book: Book) -> None:
    """Every check and warning is 0 or 1 and each count a number: never an error value."""
    counts = ("master_check", "warning_count")
    bad = {n: book[n] for n in _flag_names(book)
           if not _is_number(book[n]) or (n not in counts and book[n] not in (0, 1))}
    assert not bad, f"{book.name}: check cells that are not 0/1 numbers: {bad}"


# --- the unedited books ------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(BASES))
def test_unedited_book_counts_the_plans_failing_checks(reviewed, name):
    """Opened and left alone, a bundled book shows in `master_check` exactly as many failing
    checks as the planner counted, and no cell anywhere holds an error value."""
    book = reviewed[name]
    assert book["master_check"] == _failing_checks(book.plan)
    errors = {k: v for k, v in book.values.items() if is_error(v)}
    assert not errors
    _assert_flags_are_numbers(book)


def test_seed_book_fails_its_memory_check_on_purpose(reviewed):
    """The bundled seed example keeps its pinned layout, which does not fit: the reviewer sees the
    memory check fail and a master check above 0, never a green total for an infeasible run."""
    book = reviewed["seed"]
    assert book["check_memory_fits"] == 1
    assert book["memory_per_gpu_gb"] > book["usable_hbm_gb"]
    assert book["master_check"] >= 1


# --- mfu 0 -------------------------------------------------------------------------------------
def test_mfu_zero_fails_closed(reviewed):
    """The reviewer sets `mfu` to 0 (and blanks the effective TFLOPS so the MFU is used): the
    totals cannot be computed, and the book says so: the master check is a number above 0,
    `check_outputs_computable` fails, no check cell is an error value, and the total is no
    number."""
    book = reviewed["seed-mfu-zero"]
    assert _is_number(book["master_check"]) and book["master_check"] > 0
    assert book.on_summary("master_check") == book["master_check"]
    assert book["check_outputs_computable"] == 1
    _assert_flags_are_numbers(book)
    assert not _is_number(book["total_cost"]), book["total_cost"]


# --- a deleted input row -----------------------------------------------------------------------
def test_deleted_input_row_fails_closed(reviewed):
    """The reviewer deletes the contingency-buffer row on Inputs (the name `buffer_rate` becomes
    #REF!, as Excel does): the master check is a number above 0, the headline check fails, no
    check cell is an error value. The buffer is no longer in the total (issue 25), so the total
    stands and the total with the buffer does not."""
    book = reviewed["seed-buffer-row-deleted"]
    seed = reviewed["seed"]
    assert _is_number(book["master_check"]) and book["master_check"] > seed["master_check"]
    assert book.on_summary("master_check") == book["master_check"]
    assert book["check_outputs_computable"] == 1
    _assert_flags_are_numbers(book)
    assert not _is_number(book["buffered_total_cost"]), book["buffered_total_cost"]
    assert _is_number(book["total_cost"])


# --- another accelerator -----------------------------------------------------------------------
def test_other_accelerator_asks_to_regenerate_a_searched_layout(reviewed, catalog):
    """On the book whose layout the search chose, the reviewer picks MI300X in the drop-down: the
    Summary names the MI300X, and the check "chosen for these inputs" fails (regenerate)."""
    book = reviewed["searched-mi300x"]
    assert book["accelerator_name"] == catalog.accelerator("amd_mi300x").name
    assert book.on_summary("accelerator_name") == book["accelerator_name"]
    assert book["search_inputs_changed"] >= 1
    assert book["check_search_inputs_unchanged"] == 1
    assert book["master_check"] >= 1
    _assert_flags_are_numbers(book)


def test_the_deprecated_reference_model_warns_and_asks_to_regenerate(reviewed, catalog):
    """The reviewer picks "reference" in the utilisation model's drop-down of the searched book:
    the utilisation is the reference model's for the same layout (as the planner computes it),
    the deprecation warning turns on, and the search check fails (the layout was the fitted
    model's choice)."""
    book, base = reviewed["searched-reference-model"], reviewed["searched"]
    assert base["fitted_model_used"] == "yes" and base["warn_reference_model"] == 0
    v = base.plan.values
    pinned = {"parallelism.tp": int(v["tp_size"]), "parallelism.pp": int(v["pp_size"]),
              "parallelism.micro_batch_size": int(v["micro_batch_size"]),
              "parallelism.zero_stage": int(v["zero_stage"]), "parallelism.recompute": v["recompute"],
              "parallelism.sequence_parallel": v["sequence_parallel"] == "yes"}
    want = plan_for(catalog, "searched", {**pinned, "efficiency.model": "reference"})
    assert book["fitted_model_used"] == "no"
    assert _close(book["effective_mfu"], want.values["effective_mfu"])
    assert book["warn_reference_model"] == 1 and want.values["warn_reference_model"] == 1
    assert book["check_search_inputs_unchanged"] == 1
    _assert_flags_are_numbers(book)


def test_other_accelerator_on_a_pinned_layout_needs_no_regeneration(reviewed, catalog):
    """On the seed book (layout pinned by the scenario, no search) the same pick changes the
    accelerator but the search check stays 0: nothing was searched."""
    book = reviewed["seed-mi300x"]
    assert book["accelerator_name"] == catalog.accelerator("amd_mi300x").name
    assert book["check_search_inputs_unchanged"] == 0
    _assert_flags_are_numbers(book)


def test_other_accelerator_leaves_no_contradicting_sentence(reviewed):
    """The MI300X pick makes the seed's pinned layout fit. The Summary and the Parallelism sheet
    may not still say, in text fixed at generation, that it does NOT fit, unless a warning
    computed by formula on that sheet has turned on (the "generated for" block of issue 7)."""
    book, base = reviewed["seed-mi300x"], reviewed["seed"]
    assert book["check_memory_fits"] == 0
    for sheet in ("Summary", "Parallelism"):
        stale = [k for k, v in book.values.items() if k.startswith(sheet + "!")
                 and k not in book.formulas and isinstance(v, str) and "does NOT fit" in v]
        # a warning that turned on: text now, blank in the book as generated
        live = [k for k in book.formulas if k.startswith(sheet + "!")
                and isinstance(book.values.get(k), str) and book.values.get(k)
                and base.values.get(k) in (None, "") and k not in _named_cells(book)]
        assert not stale or live, f"{sheet}: {stale} contradict the live memory check"


# --- another model shape -----------------------------------------------------------------------
def _shape_params(book: Book) -> float:
    L, h = book["model_layers"], book["hidden_size"]
    return 12 * L * h * h + (book["vocab_size"] + book["seq_len"]) * h


def test_new_shape_moves_the_parameter_count(reviewed):
    """The reviewer sets hidden size 8192 and 64 layers and blanks the parameter override: the
    parameter count is 12·L·h² + (V + s)·h of the new shape, and the searched layout is
    flagged."""
    book = reviewed["searched-new-shape"]
    assert (book["hidden_size"], book["model_layers"]) == (8192, 64)
    want = _shape_params(book)
    assert _close(book["params_from_shape"], want)
    assert _close(book["model_params"], want)
    assert book["model_params"] != reviewed["searched"]["model_params"]
    assert book["check_search_inputs_unchanged"] == 1
    assert book["master_check"] >= 1
    _assert_flags_are_numbers(book)


def test_new_shape_with_the_override_kept_warns(reviewed):
    """With the published 175B count left in the override, the new shape disagrees with it: the
    count stays the override's and the warning "parameter count matches the shape" turns on."""
    book = reviewed["seed-new-shape-override-kept"]
    assert book["model_params"] == reviewed["seed"]["model_params"]
    assert _close(book["params_from_shape"], _shape_params(book))
    assert book["warn_params_match_shape"] == 1
    assert book["warning_count"] >= reviewed["seed"]["warning_count"] + 1


# --- a longer schedule -------------------------------------------------------------------------
def test_longer_schedule_deadline_durations_follow(reviewed, catalog):
    """On the deadline example (staffing and storage months blank) the reviewer sets 30 weeks of
    evaluation and 60 days in the queue: the project ends later, and person-months, staffing and
    storage follow the longer project, as the plan of the same scenario says."""
    book, base = reviewed["deadline-longer-schedule"], reviewed["deadline"]
    assert book["project_end"] > base["project_end"]
    assert book["project_months"] > base["project_months"]
    months = book["project_months"]
    heads = [h for h in book.range("staff_headcount") if h is not None]
    costs = [c for c in book.range("staff_monthly_cost") if c is not None]
    assert _close(book["staff_person_months"], sum(heads) * months)
    assert _close(book["staffing_cost"], sum(h * c * months for h, c in zip(heads, costs)))
    assert _close(book["storage_months_used"], months)
    assert book["warn_staff_months"] == 0 and book["warn_storage_months"] == 0
    assert book["storage_cost"] > base["storage_cost"]
    plan = plan_for(catalog, "deadline", SCHEDULE_CHANGES)
    assert plan.values["gpu_count"] == base["gpu_count"], "premise: the same GPU count"
    for name in ("project_months", "staff_person_months", "staffing_cost", "storage_cost",
                 "total_cost"):
        assert _close(book[name], plan.values[name]), (name, book[name], plan.values[name])
    assert book["check_timeline_fits"] == 0
    _assert_flags_are_numbers(book)


def test_longer_schedule_seed_keeps_typed_months_and_warns(reviewed, catalog):
    """On the seed example the typed 6 staffing months stay, and the warning that they no longer
    cover the project is on."""
    book, base = reviewed["seed-longer-schedule"], reviewed["seed"]
    assert book["project_end"] > base["project_end"]
    assert book["staff_person_months"] == base["staff_person_months"] == 4 * 6
    assert book["staffing_cost"] == base["staffing_cost"]
    assert book["warn_staff_months"] == 1
    plan = plan_for(catalog, "seed", SCHEDULE_CHANGES)
    for name in ("project_end", "project_months", "staffing_cost", "total_cost"):
        assert _close(book[name], plan.values[name]), (name, book[name], plan.values[name])


# --- staffing rows -----------------------------------------------------------------------------
def test_role_in_spare_row_is_counted(reviewed, catalog):
    """The reviewer types a role into the first spare row of the staffing table (1 person at
    10,000 a month for 3 months): staffing rises by exactly 30,000, the tables are closed, and
    the totals equal the plan with that role in `staffing:`."""
    book, base = reviewed["seed-role-in-spare-row"], reviewed["seed"]
    assert book["staffing_cost"] - base["staffing_cost"] == pytest.approx(30000, rel=TOLERANCE)
    assert book.on_summary("staffing_cost") == book["staffing_cost"]
    assert book["check_tables_closed"] == 0
    assert book["master_check"] == base["master_check"]
    role, head, monthly, months = NEW_ROLE
    staffing = raw(SEED_H100)["staffing"] + [{"role": role, "headcount": head,
                                              "monthly_cost": monthly, "months": months}]
    plan = plan_for(catalog, "seed", {"staffing": staffing})
    for name in ("staffing_cost", "staff_person_months", "subtotal_cost", "total_cost"):
        assert _close(book[name], plan.values[name]), (name, book[name], plan.values[name])


def test_role_below_the_table_is_flagged(reviewed):
    """The reviewer types a role in the row just below the staffing table: it is left out of the
    totals, so `check_tables_closed` fails and the master check rises by one."""
    book, base = reviewed["seed-role-below-table"], reviewed["seed"]
    assert book["check_tables_closed"] == 1
    assert book["master_check"] == base["master_check"] + 1
    assert book.on_summary("master_check") == book["master_check"]
    assert book["staffing_cost"] == base["staffing_cost"]
    assert book["total_cost"] == base["total_cost"]


# --- a new catalog row -------------------------------------------------------------------------
def test_new_catalog_row_chosen_in_the_drop_down(reviewed, catalog):
    """The reviewer adds "My GPU" in the Catalog's spare row (the H100's figures, 192 GB of HBM)
    and picks it in `gpu_type`: the Summary names it, the usable HBM is 192 × the usable fraction,
    and the seed's pinned layout now fits, as the plan with that catalog row says."""
    book = reviewed["seed-new-catalog-row"]
    assert book["accelerator_name"] == "My GPU"
    assert book.on_summary("accelerator_name") == "My GPU"
    assert _close(book["usable_hbm_gb"], MY_GPU_HBM * book["usable_memory_fraction"])
    assert book["check_memory_fits"] == 0
    assert book["master_check"] == reviewed["seed"]["master_check"] - 1
    assert book["check_tables_closed"] == 0
    h100 = catalog.accelerator("nvidia_h100_sxm")
    row = {"id": "my_gpu", "name": "My GPU", "vendor": h100.vendor, "hbm_gb": MY_GPU_HBM,
           "source": "a reviewer's row",
           **{f: getattr(h100, f).value for f in ("peak_bf16_tflops", "gpus_per_node",
                                                  "intra_node_gb_per_s", "inter_node_gbit_per_s",
                                                  "typical_mfu")}}
    plan = plan_for(catalog, "seed", {"catalog": {"accelerators": [row]},
                                       "hardware.accelerator": "my_gpu"})
    for name in ("usable_hbm_gb", "memory_per_gpu_gb", "check_memory_fits", "train_days",
                 "total_cost"):
        assert _close(book[name], plan.values[name]), (name, book[name], plan.values[name])


# --- another currency --------------------------------------------------------------------------
PRESENTATION = ("Summary", "Cost", "Inputs")


def _texts(book: Book, sheets) -> dict:
    return {k: v for k, v in book.values.items()
            if isinstance(v, str) and k.split("!")[0] in sheets}


def test_other_currency_converts_the_totals(reviewed):
    """The reviewer types EUR into `currency`: the plan is now in euros. Every amount was typed
    in dollars (its currency cell says USD), so each converts through the FX table's rates
    (dollars per euro, from the catalog); the checks are as before."""
    book, base = reviewed["seed-currency-eur"], reviewed["seed"]
    assert book["currency"] == "EUR" and book["price_currency"] == "USD"
    usd_in_eur = book.range("fx_rate")[book.range("fx_id").index("USD")] / \
        book.range("fx_rate")[book.range("fx_id").index("EUR")]
    assert usd_in_eur == pytest.approx(0.927)          # the catalog's euros per dollar
    for name in ("total_cost", "staffing_cost", "storage_cost", "rental_cost"):
        assert book[name] == pytest.approx(base[name] * usd_in_eur), name
    assert book["master_check"] == base["master_check"]
    assert book.on_summary("total_cost") == book["total_cost"]


def _usd(book: Book, sheets) -> dict:
    """The texts that say USD, but for what generation recorded (issue 29): the inputs' values at
    generation (the Inputs sheet's column G) and the Summary's changed inputs, old → new."""
    return {k: v for k, v in _texts(book, sheets).items()
            if re.search(r"USD", v) and not k.startswith("Inputs!G") and " → " not in v}


def test_other_currency_relabels_the_amounts(reviewed):
    """… the currency labels beside the amounts on the Summary and the Cost sheet say EUR, and
    none of them still says USD."""
    book = reviewed["seed-currency-eur"]
    eur = {k: v for k, v in _texts(book, ("Summary", "Cost")).items() if "EUR" in v}
    assert eur, "no label on the Summary or the Cost sheet follows the currency"
    assert not _usd(book, ("Summary", "Cost"))


def test_other_currency_leaves_no_usd_text(reviewed):
    """… and no cell on the Summary or Cost sheets still says USD (issue 7 item 7: no "USD"
    typed into cells); on Inputs, USD shows only where an amount is still in dollars: its
    currency cell and the unit beside it, which follows that cell."""
    book = reviewed["seed-currency-eur"]
    from budget.model.model import build_model
    model = build_model()
    dollar = {n for n, d in model.inputs.items() if d.unit == "ISO 4217 code" and book[n] == "USD"}
    rows = {book.names[n] for n in dollar}
    rows |= {book.names[d.name] for d in model.inputs.values() if d.currency in dollar and not d.is_range}
    allowed = {cell for ref in rows for cell in (ref, ref.replace("!B", "!C"))}
    if "staff_currency" in dollar:     # the staffing table's heading "(USD/month)"
        sheet, ref = book.names["staff_monthly_cost"].split("!")
        col, top = coordinate_from_string(ref.split(":")[0])
        allowed.add(f"{sheet}!{col}{top - 1}")
    assert not {k: v for k, v in _usd(book, PRESENTATION).items() if k not in allowed}


# --- the Summary in words --------------------------------------------------------------------
CHECK_NAME = re.compile(r"\b(check_\w+|warn_\w+)\b")


def _summary_lines(book: Book) -> dict[str, str]:
    """check name -> the Summary cell (column A) whose formula speaks of that check alone."""
    out = {}
    for key, formula in book.formulas.items():
        if not key.startswith("Summary!A"):
            continue
        found = set(CHECK_NAME.findall(formula))
        if len(found) == 1:
            out[found.pop()] = key
    return out


def _cell_showing(book: Book, name: str) -> str:
    cells = [k for k, f in book.formulas.items()
             if k.startswith("Summary!") and f.replace(" ", "") == f"={name}"]
    assert cells, f"the Summary does not show {name}"
    return cells[0]


@pytest.mark.parametrize("name", [*BASES, *EDITS])
def test_summary_says_in_words_what_fails(reviewed, name):
    """Whatever the reviewer did, the Summary's first line says "All checks pass" only when the
    master check is 0 and "NOT APPROVABLE: n checks fail" otherwise (never an error value); each
    failing check has its line in words, each passing one a blank line; and while checks fail
    the total is labelled indicative."""
    book, seed = reviewed[name], reviewed["seed"]
    master = book["master_check"]
    status_cell = next((k for k, v in seed.values.items()
                        if k.startswith("Summary!") and isinstance(v, str)
                        and v.startswith(("All checks pass", "NOT APPROVABLE"))), None)
    assert status_cell, "the Summary has no status line"
    status = book.values.get(status_cell)
    assert isinstance(status, str) and not is_error(status), status
    if master == 0:
        assert status.startswith("All checks pass"), status
    else:
        assert status.startswith("NOT APPROVABLE") and str(master) in status, (status, master)
    lines = _summary_lines(book)
    checks = [c.name for c in book.plan.model.checks()]
    assert set(checks) <= set(lines), f"checks without a Summary line: {set(checks) - set(lines)}"
    for check in checks:
        text = book.values.get(lines[check])
        if book[check] == 0:
            assert text in (None, ""), (check, text)
        else:
            assert isinstance(text, str) and text and not is_error(text), (check, text)
    total_row = coordinate_from_string(_cell_showing(book, "total_cost").split("!")[1])[1]
    label = book.values.get(f"Summary!A{total_row}")
    assert isinstance(label, str) and ("indicative" in label) == (master != 0), label


# --- a second engine ---------------------------------------------------------------------------
GNUMERIC_BOOKS = ("seed", "seed-mfu-zero", "seed-gpu-price-blank", "seed-cost-row-inserted")


@pytest.fixture(scope="module")
def gnumeric(reviewed, tmp_path_factory) -> dict[str, dict]:
    ssconvert = require_tool(shutil.which("ssconvert"), "Gnumeric (ssconvert), the second engine,",
                             "apt-get install -y gnumeric")
    folder = tmp_path_factory.mktemp("gnumeric")
    out = {}
    for name in GNUMERIC_BOOKS:
        target = folder / f"{name}.xlsx"
        proc = subprocess.run([ssconvert, "--recalc", str(reviewed[name].path), str(target)],
                              capture_output=True, text=True, timeout=120)
        assert target.exists(), f"ssconvert wrote no {target.name}: {proc.stderr[-500:]}"
        with warnings.catch_warnings():     # Gnumeric writes no default cell style
            warnings.simplefilter("ignore", UserWarning)
            out[name] = read_values(target)
    return out


def test_gnumeric_agrees_on_the_seed_book(reviewed, gnumeric):
    """A second engine (Gnumeric) counts the same failing checks and the same total."""
    book = reviewed["seed"]
    values = gnumeric["seed"]
    assert values[book.names["master_check"]] == book["master_check"]
    assert _close(values[book.names["total_cost"]], book["total_cost"])


def test_gnumeric_fails_closed_on_mfu_zero(reviewed, gnumeric):
    """With `mfu` 0, Gnumeric too shows a master check above 0 (a number) and no total."""
    book = reviewed["seed-mfu-zero"]
    values = gnumeric["seed-mfu-zero"]
    master = values[book.names["master_check"]]
    assert _is_number(master) and master > 0
    assert master == book["master_check"]
    assert not _is_number(values.get(book.names["total_cost"]))


# --- input integrity (issue 29) ----------------------------------------------------------------
# edit -> (the check that fails, words its Summary line and its Checks sentence hold)
INTEGRITY = {
    # the price may be blank for an owned cluster (issue 28): a rented one's blank fails its own check
    "seed-gpu-price-blank": ("check_rented_priced", ["rented", "GPU price on Inputs is blank"]),
    "seed-headcount-text": ("check_inputs_staffing",
                            ["Headcount", "holds text or a number outside its validation",
                             "type a number of at least 0 in every row"]),
    "seed-monthly-cost-text": ("check_inputs_staffing", ["Monthly cost", "holds text"]),
    "searched-buffer-20": ("check_inputs_contingency",
                           ["is 20", "type a number from 0 to 1", "type 0.20 for 20%"]),
    "searched-pue-pasted-0.5": ("check_inputs_energy_and_carbon", ["PUE", "is 0.5", "of at least 1"]),
    "searched-tp-text": ("check_inputs_parallel_layout", ["is 8 GPUs", "type a whole number"]),
}


@pytest.mark.parametrize("name", list(INTEGRITY))
def test_what_the_importer_refuses_fails_a_check_that_names_it(reviewed, name):
    """A blank required input, text in a number cell (a headcount or a monthly cost of a staffing
    row too, which the totals would otherwise drop), a percentage typed as a whole number and a
    value pasted outside its validation: the importer refuses each, and the book now fails closed
    on each, as the importer would. The section's input check fails (one more failing check than
    the book as generated, so never "All checks pass"), and its sentence on the Summary and on the
    Checks sheet names the input, what it holds and what to type instead."""
    book = reviewed[name]
    base = reviewed[EDITS[name][0]]
    check, words = INTEGRITY[name]
    assert base[check] == 0 and book[check] == 1
    assert _is_number(book["master_check"]) and book["master_check"] >= base["master_check"] + 1
    _assert_flags_are_numbers(book)
    line = book.values.get(_summary_lines(book)[check])
    assert isinstance(line, str) and all(w in line for w in words), line
    checks_row = book.names[check].replace("!B", "!E")
    assert book.values.get(checks_row), "the Checks sheet gives no fix"


# --- the Cost sheet reconciles (issue 29) ------------------------------------------------------
COST_EDITS = {
    "seed-cost-row-inserted": ("check_cost_sheet_closed", ["figures where its lines are", "in no total"]),
    "seed-cost-figure-below": ("check_cost_sheet_closed", ["figures where its lines are", "in no total"]),
    "seed-cost-line-overwritten": ("check_cost_lines_live", ["Storage", "where its formula gives"]),
}


@pytest.mark.parametrize("name", list(COST_EDITS))
def test_a_figure_no_total_counts_fails_a_check(reviewed, name):
    """A row inserted inside the Cost sheet's lines with an amount, an amount typed below them, a
    line overwritten with a figure: the total no longer is the sum of what the sheet shows (the
    inserted and typed amounts are in no total; the overwritten line is in it, not what it
    computes), and a check fails that says which: never "All checks pass" over that total."""
    book, base = reviewed[name], reviewed["seed"]
    check, words = COST_EDITS[name]
    assert base[check] == 0 and book[check] == 1
    assert book["master_check"] == base["master_check"] + 1
    line = book.values.get(_summary_lines(book)[check])
    assert isinstance(line, str) and all(w in line for w in words), line
    _assert_flags_are_numbers(book)


def test_an_inserted_cost_row_is_seen_not_added(reviewed):
    """… the inserted row's amount stays out of the total (the total is its lines'), and the
    check counts one figure more than the sheet has lines."""
    book, base = reviewed["seed-cost-row-inserted"], reviewed["seed"]
    sheet, ref = _target(openpyxl.load_workbook(book.path), "total_cost")    # one row down now
    assert (sheet, ref) != tuple(book.names["total_cost"].split("!"))
    assert book.values.get(f"{sheet}!{ref}") == base["total_cost"]
    assert book["check_cost_sheet_closed"] == 1


def test_gnumeric_fails_closed_on_a_blank_price_and_an_inserted_cost_row(reviewed, gnumeric):
    """Gnumeric agrees with LibreOffice: the blank GPU price and the inserted Cost row each fail
    their check, and the master check is the same number."""
    for name, check in (("seed-gpu-price-blank", "check_rented_priced"),
                        ("seed-cost-row-inserted", "check_cost_sheet_closed")):
        book, values = reviewed[name], gnumeric[name]
        assert values[book.names[check]] == 1 == book[check], name
        assert values[book.names["master_check"]] == book["master_check"], name


# --- a column pasted right of the Compare table (issue 29) -------------------------------------
def test_a_pasted_option_column_is_not_recommended_over(reviewed):
    """The reviewer pastes an option's column right of the Compare table and titles it as a new
    option: nothing compares it (the names span the generated options), so the recommendation
    no longer names an option and says that a column was added, and how many."""
    book, base = reviewed["options-column-pasted"], reviewed["options"]
    cell = next(k for k, f in _formulas(base.path, ("Compare",)).items() if "compare_added_columns" in f)
    sheet, coordinate = cell.split("!")
    planned = openpyxl.load_workbook(base.path, data_only=True)[sheet][coordinate].value    # the planner's
    assert base.values.get(cell) == planned and not planned.startswith("None")
    shown = book.values.get(cell)
    assert isinstance(shown, str) and shown.startswith("None: columns added right of the options"), shown
    assert shown.endswith("1"), shown
