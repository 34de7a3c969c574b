"""Options round trip: `import` reads the Compare sheet back into `options:` (issue 29, item 6).

Given a scenario with options, its workbook imported gives a scenario whose options are the
original's (the same names, and each option's plan has the same inputs and the same figures:
the importer writes only the keys that differ from the base, the base's layout pinned, so the
YAML text may differ where the search chose). A reviewer's edit of an option's cell on the
Compare sheet is carried into that option's overrides, and the regenerated book shows it; after
LibreOffice recalculates both, the edited book and the regenerated one agree on the Inputs and
Compare sheets.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import openpyxl
import pytest
import yaml

from budget.inputs.importer import WorkbookError, import_workbook
from budget.plan.options import build_option_plans, plan_file
from budget.sheets.book import write_workbook
from support import SCENARIOS, raw, require_soffice

OPTIONS = SCENARIOS / "gpt3-175b-options.yaml"
SEARCHED = SCENARIOS / "gpt3-175b-h100-searched.yaml"     # the bundled example: one option
TOLERANCE = 1e-9


def _book(path: Path, catalog) -> bytes:
    return write_workbook(plan_file(path, catalog)).data


def _imported(data: bytes, tmp_path: Path, catalog, name: str = "book.xlsx"):
    book = tmp_path / name
    book.write_bytes(data)
    return import_workbook(book, catalog)


def _close(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=TOLERANCE, abs_tol=1e-12)
    return a == b


def _scenario_inputs(plan) -> dict:
    """The plan's inputs that a scenario sets (not the figures the search recorded)."""
    return {d.name: plan.values[d.name] for d in plan.model.inputs.values()
            if d.path is not None and not d.kind.startswith("generated")}


def _same_plans(original: list, imported: list) -> list[str]:
    """Where the imported scenario's plans differ from the original's: names, inputs, figures."""
    out = []
    assert [n for n, _ in imported] == [n for n, _ in original]
    for (name, want), (_, got) in zip(original, imported):
        wanted, gotten = _scenario_inputs(want), _scenario_inputs(got)
        out += [f"{name}: input {k} {gotten[k]!r} != {v!r}" for k, v in wanted.items() if not _close(gotten[k], v)]
        for k in ("gpu_count", "tp_size", "pp_size", "dp_size", "train_days", "gpu_hours", "total_cost",
                  "memory_per_gpu_gb", "master_check"):
            if not _close(got.values[k], want.values[k]):
                out.append(f"{name}: {k} {got.values[k]!r} != {want.values[k]!r}")
    return out


@pytest.mark.parametrize("path", [OPTIONS, SEARCHED], ids=lambda p: p.stem)
def test_import_reads_every_option_back(path, catalog, tmp_path):
    """Given the options example (four options) and the bundled example (one), the imported
    scenario has the same options, in order, and each plans to the original option's inputs and
    figures."""
    imported = _imported(_book(path, catalog), tmp_path, catalog)
    options = imported.data["options"]
    assert [o["name"] for o in options] == [o["name"] for o in raw(path)["options"]]
    assert yaml.safe_load(imported.text)["options"] == options      # the file says what the data says
    assert _same_plans(build_option_plans(path, catalog), build_option_plans(imported.data, catalog)) == []


def test_imported_options_hold_only_what_differs_from_the_base(catalog, tmp_path):
    """Given the options example, the 256-GPU option is `hardware: {gpu_count: 256}` alone, as the
    scenario had it; the A100 option drops the base's H100 peak (null), as the scenario did."""
    options = _imported(_book(OPTIONS, catalog), tmp_path, catalog).data["options"]
    assert options[0] == {"name": "256 H100 (TP 4 x PP 8 x DP 8)", "hardware": {"gpu_count": 256}}
    assert options[1] == {"name": "1,024 H100 (TP 4 x PP 16 x DP 16)", "hardware": {"gpu_count": 1024},
                          "parallelism": {"pp": 16}}
    a100 = options[2]
    assert a100["hardware"] == {"accelerator": "nvidia_a100_80gb_sxm", "gpu_count": 1024,
                                "effective_tflops": 140, "peak_tflops": None}
    assert a100["prices"] == {"per_gpu_hour": 1.79}


def test_scenario_without_options_imports_without_options(catalog, tmp_path):
    imported = _imported(_book(SCENARIOS / "gpt3-175b-h100.yaml", catalog), tmp_path, catalog)
    assert "options" not in imported.data


def _compare_cell(wb, option: str, name: str):
    """The Compare sheet's workings cell of input `name` in `option`'s column."""
    ws = wb["Compare"]
    column = next(c.column for c in ws[4] if c.value == option)
    row = max(c.row for c in ws["C"] if c.value == name)
    return ws.cell(row, column)


def _edited(data: bytes, edits: dict) -> bytes:
    wb = openpyxl.load_workbook(io.BytesIO(data))
    for (option, name), value in edits.items():
        _compare_cell(wb, option, name).value = value
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


SEED_LAYOUT = "The seed's layout (TP 4 x PP 8, no ZeRO)"
# A reviewer gives the seed's layout option 1,024 GPUs and PP 16 (TP 4 x PP 16 x DP 16, the
# seed's large-scale configuration), typing over the option's GPU-count link and its PP link.
EDITS = {(SEED_LAYOUT, "gpu_count"): 1024, (SEED_LAYOUT, "pp_size"): 16}


@pytest.mark.slow
def test_an_edited_option_cell_is_carried_into_the_option(catalog, tmp_path):
    """Given the bundled example with the option's GPU count and PP typed over on the Compare
    sheet, the imported option carries both, and the regenerated Compare sheet shows them: 1,024
    GPUs in 16 pipeline stages, fewer training days than the 512-GPU original."""
    original = _book(SEARCHED, catalog)
    imported = _imported(_edited(original, EDITS), tmp_path, catalog)
    option = imported.data["options"][0]
    assert option["name"] == SEED_LAYOUT
    assert option["hardware"] == {"gpu_count": 1024}
    assert option["parallelism"]["pp"] == 16
    assert "gpu_count: 1024" in imported.text
    before = dict(build_option_plans(SEARCHED, catalog))[SEED_LAYOUT]
    scenario = tmp_path / "imported.yaml"
    scenario.write_text(imported.text, encoding="utf-8")
    result = write_workbook(plan_file(scenario, catalog))
    wb = openpyxl.load_workbook(io.BytesIO(result.data))
    names = {n: str(d.attr_text) for n, d in wb.defined_names.items()}
    _, ref = names["compare_gpu_count"].split("!")
    column = openpyxl.utils.cell.range_boundaries(ref.replace("$", ""))[0] + 1     # the option's column
    row = lambda name: max(c.row for c in wb["Compare"]["C"] if c.value == name)  # noqa: E731
    at = lambda name: f"Compare!{openpyxl.utils.get_column_letter(column)}{row(name)}"  # noqa: E731
    cell = lambda name: wb["Compare"][at(name).split("!")[1]].value  # noqa: E731
    assert cell("gpu_count") == 1024 and cell("pp_size") == 16       # the option's own inputs
    assert result.expected[f"Compare!{openpyxl.utils.get_column_letter(column)}5"] == 1024   # its key figure
    assert result.expected[at("train_days")] < before.values["train_days"] * 0.6


@pytest.mark.slow
def test_a_typed_formula_in_an_option_cell_is_refused(catalog, tmp_path):
    """A formula other than the link to the Inputs sheet cannot become a scenario value: the
    error names the Compare cell and the input."""
    data = _edited(_book(SEARCHED, catalog), {(SEED_LAYOUT, "gpu_count"): "=2*512"})
    with pytest.raises(WorkbookError) as err:
        _imported(data, tmp_path, catalog)
    assert "Compare!E" in str(err.value) and "(gpu_count)" in str(err.value)


@pytest.mark.slow
def test_a_blank_option_name_is_refused(catalog, tmp_path):
    wb = openpyxl.load_workbook(io.BytesIO(_book(SEARCHED, catalog)))
    wb["Compare"]["E4"] = None
    out = io.BytesIO()
    wb.save(out)
    with pytest.raises(WorkbookError) as err:
        _imported(out.getvalue(), tmp_path, catalog)
    assert "Compare!E4" in str(err.value)


def _named_inputs(path: Path) -> dict:
    """Every cell that a defined name of the Inputs sheet covers (the inputs and their tables)."""
    wb = openpyxl.load_workbook(path, data_only=True)
    out = {}
    for name, d in wb.defined_names.items():
        for sheet, ref in d.destinations:
            if sheet == "Inputs":
                for row in wb[sheet][ref.replace("$", "")] if ":" in ref else ((wb[sheet][ref.replace("$", "")],),):
                    out.update({f"{c.coordinate} ({name})": c.value for c in row})
    return out


def _compare_values(path: Path) -> dict:
    ws = openpyxl.load_workbook(path, data_only=True)["Compare"]
    return {c.coordinate: c.value for row in ws.iter_rows() for c in row if c.value is not None}


@pytest.mark.office
def test_edited_and_regenerated_books_recalculate_alike(catalog, tmp_path):
    """Given the bundled example with the option's GPU count and PP edited, LibreOffice
    recalculates the edited book and the book regenerated from its import to the same inputs on
    the Inputs sheet and the same values on the Compare sheet. Aside: what the layout search
    recorded (the `gen_*` rows, whether the layout was searched, and the count of search inputs
    changed since, an edit of the GPU count being one): the imported base pins its layout, so
    the regenerated book records no search."""
    from budget.xlsx.recalc import recalculate
    require_soffice()
    edited = tmp_path / "edited.xlsx"
    edited.write_bytes(_edited(_book(SEARCHED, catalog), EDITS))
    imported = import_workbook(edited, catalog)
    scenario = tmp_path / "imported.yaml"
    scenario.write_text(imported.text, encoding="utf-8")
    regenerated = tmp_path / "regenerated.xlsx"
    regenerated.write_bytes(write_workbook(plan_file(scenario, catalog)).data)
    done = recalculate([edited, regenerated], tmp_path / "recalc")
    model = plan_file(scenario, catalog).model
    compare = openpyxl.load_workbook(regenerated)["Compare"]
    searched = {c.row for c in compare["C"]
                if c.value == "search_inputs_changed"
                or (c.value in model.inputs and model.inputs[c.value].kind.startswith("generated"))}
    # the options' what-if rows (issue 29: each option's own range) carry no name: what the search
    # recorded is found there by label, with what it decides (the check it feeds, the count of checks)
    recorded = model.affected_by({n for n, d in model.inputs.items() if d.kind.startswith("generated")}
                                 | {"layout_searched"})
    labels = {model.items[n].label for n in recorded if n in model.items}
    searched |= {c.row for c in compare["A"] if c.value in labels}
    want, got = _named_inputs(done[edited]), _named_inputs(done[regenerated])
    assert len(want) > 300 and set(got) == set(want)
    differ = [f"Inputs!{at}: {got[at]!r} != {v!r}" for at, v in want.items()
              if not _close(got[at], v) and not at.endswith("(layout_searched)")]
    want, got = _compare_values(done[edited]), _compare_values(done[regenerated])
    assert len(want) > 3000
    differ += [f"Compare!{at}: {got.get(at)!r} != {v!r}" for at, v in want.items()
               if openpyxl.utils.cell.coordinate_from_string(at)[1] not in searched and not _close(got.get(at), v)]
    assert differ == []
