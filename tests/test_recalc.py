"""The recalculation oracle: LibreOffice computes every workbook; its numbers are the plan's.

All workbooks of the session are recalculated in one LibreOffice call (conftest.oracle).
"""

from __future__ import annotations

import pytest

from budget.model.model import build_model
from budget.xlsx.recalc import formula_cells, is_error, relative_difference
from conftest import EDIT_CASES, PLAIN_CASES

pytestmark = pytest.mark.office      # every test reads the oracle

TOLERANCE = 1e-9
ISSUE_NAMES = ["gpu_type", "gpu_count", "model_params", "train_tokens", "mfu",
               "price_per_gpu_hour", "buffer_rate", "tp_size", "pp_size", "train_flops",
               "effective_tflops", "gpu_hours", "gpu_days", "train_days", "dp_size",
               "memory_per_gpu_gb", "rental_cost", "storage_cost", "staffing_cost",
               "subtotal_cost", "buffer_cost", "total_cost"]


def _value_at(case, name):
    return case.values.get(case.names[name])


@pytest.mark.parametrize("name", sorted(PLAIN_CASES))
def test_every_formula_cell_equals_the_plan(oracle, name):
    case = oracle[name]
    written = formula_cells(case.path)
    assert sorted(written) == sorted(case.expected), "every formula cell has a Python value"
    worst = max(relative_difference(case.values.get(k), v) for k, v in case.expected.items())
    bad = {k: (case.values.get(k), v) for k, v in case.expected.items()
           if relative_difference(case.values.get(k), v) > TOLERANCE}
    assert not bad, f"LibreOffice disagrees with Python (worst {worst:.3g}): {bad}"


@pytest.mark.parametrize("name", sorted(PLAIN_CASES) + sorted(EDIT_CASES))
def test_no_formula_evaluates_to_an_error(oracle, name):
    case = oracle[name]
    errors = {k: case.values.get(k) for k in formula_cells(case.path) if is_error(case.values.get(k))}
    assert not errors


@pytest.mark.parametrize("name", sorted(PLAIN_CASES) + sorted(EDIT_CASES))
def test_named_cells_equal_the_plan(oracle, name):
    """Cells are found by defined name, not position; every input and item is covered."""
    case = oracle[name]
    model = build_model()
    single = [*(n for n, it in model.items.items() if it.kind != "rows"),
              *(n for n, d in model.inputs.items() if not d.is_range and d.kind != "structure")]
    assert set(ISSUE_NAMES) <= set(case.names)
    if name in EDIT_CASES:   # an edited book keeps what it was generated for; the plan is the new one
        generated = {"search_inputs_changed", "inert_recompute", "inert_compute_precision"}
        single = [n for n in single if not n.startswith("gen_") and n not in generated]
    for n in single:
        want = case.plan.values[n]
        got = _value_at(case, n)
        if want is None:            # an optional input left blank
            assert got is None, n
            continue
        assert relative_difference(got, want) <= TOLERANCE, f"{n}: workbook {got!r}, plan {want!r}"


def test_live_edit_recomputes_the_whole_book(oracle):
    """A reviewer sets 1,024 GPUs, the A100 row and a 30% buffer: the book follows the plan."""
    case = oracle["edit-1024-a100-buffer30"]
    base = oracle["seed-h100"]
    assert _value_at(case, "accelerator_name") == "NVIDIA A100 80GB SXM4"
    assert _value_at(case, "peak_tflops") == 312
    assert _value_at(case, "dp_size") == 32
    assert _value_at(case, "buffer_cost") == pytest.approx(0.30 * _value_at(case, "total_cost"))
    assert _value_at(case, "train_days") == pytest.approx(case.plan.train_days, rel=TOLERANCE)
    assert _value_at(case, "total_cost") != pytest.approx(_value_at(base, "total_cost"))


def test_live_layout_edit_moves_memory(oracle):
    case = oracle["edit-layout-and-prices"]
    assert _value_at(case, "activation_mode") == "full/yes"
    assert _value_at(case, "memory_per_gpu_gb") == pytest.approx(case.plan.memory_per_gpu_gb,
                                                                 rel=TOLERANCE)
    assert _value_at(case, "rental_cost") == pytest.approx(case.plan.gpu_hours * 2.49, rel=TOLERANCE)


def test_fp8_book_on_an_accelerator_without_fp8_fails_its_check(oracle, tmp_path):
    """A reviewer who switches an FP8 workbook to the A100 (no FP8: a blank Catalog cell) sees
    check_precision_peak fail and the master check count it: never "fine" over a blank peak."""
    from budget.xlsx.recalc import read_values, recalculate
    from conftest import _edit_book
    case = oracle["fp8-deepseek-memory-no-master"]
    assert _value_at(case, "check_precision_peak") == 0
    book = tmp_path / "fp8-on-a100.xlsx"
    _edit_book(case.path, book, case.names, {"gpu_type": "nvidia_a100_80gb_sxm"})
    values = read_values(recalculate([book], tmp_path / "recalculated")[book])
    assert values.get(case.names["check_precision_peak"]) == 1
    assert values.get(case.names["master_check"]) >= 1


def test_the_bundled_example_passes_every_check_after_recalculation(oracle):
    """Issue 27: a newcomer's first run is approvable in LibreOffice as in the plan."""
    case = oracle["bundled-example"]
    assert case.plan.values["master_check"] == 0
    assert _value_at(case, "master_check") == 0


def test_oracle_covers_many_cells(oracle):
    """The oracle is not vacuous: it compares hundreds of recomputed formula cells."""
    total = sum(len(c.expected) for c in oracle.values())
    assert total > 1000
