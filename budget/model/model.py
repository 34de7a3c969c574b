"""The planning model: every input and every derived line item, defined once.

Definition order is dependency order; each item names the sheet it is shown on (Memory,
Parallelism, Compute, Cost, Checks). Each `item` is one row and one live formula; the planner runs
the same definitions compiled to Python. Sources for the formulas are in the notes and in
../shared/reference/formulas.md.

The items are defined by quantity group, one module each, and `_build` assembles them in order:
tables.py (the Catalog sheet's tables), inputs.py and inputs_*.py (every input), shape.py (the
accelerator, parameters, FLOPs and baseline utilisation), efficiency.py (the layout, step time and
fitted step-time model), memory.py, calibration.py (a measured pilot), stages.py (a multi-stage
run), schedule.py (training compute, failures, the schedule and timeline), cost.py, checks.py
(checks, warnings and their sentences), reference.py (published runs) and cashflow.py.
"""

from __future__ import annotations

from functools import lru_cache

from ..core.i18n import DEFAULT_LANG, Messages
from .calibration import PILOT_VALUES, calibration
from .cashflow import build_cashflow
from .checks import checks_and_warnings, sentence, words
from .cost import AFTER_SUBTOTAL, COST_LINES, MEMO_LINES, cost
from .declare import FITTED_COEFFICIENTS, RECOMPUTE_MODES
from .efficiency import layout, step_time
from .inputs import SEARCH_INPUTS, SEARCH_ITEMS, declare_inputs, generated
from .inputs_uncertainty import UNCERTAIN, UNCERTAIN_SPREADS
from .lineitems import Model, ModelBuilder
from .memory import memory
from .reference import REFERENCE_ROWS, REFERENCE_VALUES, reference_runs
from .schedule import schedule, timeline, training_compute
from .shape import accelerator
from .stages import STAGE_CHECKS, STAGE_VALUES
from .tables import ACCELERATOR_TABLE, ACTIVATION_TABLE, ARCHITECTURE_TABLE, FX_TABLE, catalog_tables

# The names other modules import from here (budget.plan, budget.inputs, budget.sheets, budget.render,
# tests and bench), kept importable where they were before the groups moved out.
__all__ = ["ACCELERATOR_TABLE", "ACTIVATION_TABLE", "AFTER_SUBTOTAL", "ARCHITECTURE_TABLE", "COST_LINES",
           "FITTED_COEFFICIENTS", "FX_TABLE", "MEMO_LINES", "Model", "PILOT_VALUES", "RECOMPUTE_MODES",
           "REFERENCE_ROWS", "REFERENCE_VALUES", "SEARCH_INPUTS", "SEARCH_ITEMS", "STAGE_CHECKS", "STAGE_VALUES",
           "UNCERTAIN", "UNCERTAIN_SPREADS", "build_model", "message_keys", "sentence", "words"]


def build_model(lang: str = DEFAULT_LANG) -> Model:
    """The model, its texts from the message catalog budget/messages/<lang>.yaml."""
    return _model_in(lang)


@lru_cache(maxsize=None)
def _model_in(lang: str) -> Model:
    # one cache key per language: lru_cache alone keys build_model() and build_model("en") apart
    # and built the English model twice in a run (~50 ms)
    return _build(Messages(lang))


def message_keys(lang: str = DEFAULT_LANG) -> set[str]:
    """Every message id the model asks for (tests/test_messages.py)."""
    texts = Messages(lang)
    _build(texts)
    return texts.used


def _build(texts: Messages) -> Model:
    b = ModelBuilder(texts)
    catalog_tables(b)
    inp = declare_inputs(b)
    accelerator(b, inp)
    layout(b, inp)
    memory(b, inp)
    step_time(b, inp)
    calibration(b, inp)
    training_compute(b, inp)
    schedule(b, inp)
    timeline(b, inp)
    cost(b, inp)
    generated(b)
    checks_and_warnings(b, inp)
    reference_runs(b, inp)
    build_cashflow(b, inp, COST_LINES)
    return b.model
