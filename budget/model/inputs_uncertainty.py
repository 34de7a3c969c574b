"""The inputs the plan is judged by: the contingency and the ask's percentile, the plausibility
bounds the warnings hold it to, and the uncertain inputs' spreads (UNCERTAIN: the Sensitivity
sheet's what-ifs and the range)."""

from __future__ import annotations

from collections.abc import Mapping

from ..core.i18n import text
from .declare import Declare


# The uncertain inputs of the Sensitivity sheet: key -> (the input it moves, how the spread
# applies to the base value, default low and high). Low and high are read as the input's P10
# and P90 for the range (P10/P50/P90 of the total). Each one's label and citation are the
# messages uncertain.<key>.label and uncertain.<key>.cite. A default of None is the catalog's:
# the model error's low and high are the P10 and P90 of the planner's held-out step-time errors
# (catalogs/model_error.yaml, issue 25), bound by budget/inputs/bind.py.
UNCERTAIN_SPREADS = {
    "model_error": ("model_error_factor", "factor", None, None),
    "price_per_gpu_hour": ("price_per_gpu_hour", "factor", 0.85, 1.35),
    "train_tokens": ("train_tokens", "factor", 0.9, 1.1),
    "interruption_rate": ("interruption_rate_per_gpu_hour", "factor", 0.5, 2.0),
    "queue_days": ("queue_days", "factor", 0.5, 3.0),
    "setup_days": ("setup_days", "factor", 0.5, 2.0),
    "staffing": ("staffing_factor", "factor", 0.9, 1.3),
    "storage_price": ("price_per_gb_month", "factor", 0.5, 1.5),
}


class _Uncertain(Mapping):
    """key -> (input it moves, label, spread, low, high, citation): UNCERTAIN_SPREADS with the
    English label and citation, read from the message catalog when first asked for."""

    def __getitem__(self, key: str) -> tuple:
        target, spread, low, high = UNCERTAIN_SPREADS[key]
        return (target, text(f"uncertain.{key}.label"), spread, low, high, text(f"uncertain.{key}.cite"))

    def __iter__(self):
        return iter(UNCERTAIN_SPREADS)

    def __len__(self) -> int:
        return len(UNCERTAIN_SPREADS)


UNCERTAIN = _Uncertain()


def contingency(d: Declare) -> None:
    """The flat buffer and the percentile the ask is."""
    b, add = d.b, d.add
    b.input_section("contingency")
    add("buffer_rate", "fraction of total", kind="fraction", minimum=0, maximum=1, path="buffer_rate")
    # issue 25: the ask is this percentile of the total (the range's lognormal, Sensitivity sheet);
    # the flat buffer is shown as the percentile it would cover, not added
    add("approval_percentile", "percentile", minimum=50, maximum=95, path="approval.percentile")


def plausibility(d: Declare) -> None:
    """The bounds of the plausibility warnings."""
    b, add = d.b, d.add
    b.input_section("plausibility")
    add("tokens_per_param_low", "tokens/parameter", minimum=0, path="plausibility.tokens_per_param_low")
    add("tokens_per_param_high", "tokens/parameter", minimum=0, path="plausibility.tokens_per_param_high")
    add("plausibility_currency", "ISO 4217 code", kind="text", codec="text")
    add("cost_per_gpu_hour_low", "currency/GPU-hour", minimum=0, path="plausibility.cost_per_gpu_hour_low",
        codec="money", currency="plausibility_currency")
    add("cost_per_gpu_hour_high", "currency/GPU-hour", minimum=0, path="plausibility.cost_per_gpu_hour_high",
        codec="money", currency="plausibility_currency")
    add("params_tolerance", "fraction", kind="fraction", minimum=0, maximum=1,
        path="plausibility.params_tolerance")


def uncertainty(d: Declare) -> None:
    """Each uncertain input's low and high (UNCERTAIN_SPREADS)."""
    b, add = d.b, d.add
    b.input_section("uncertainty")
    add("staffing_factor", "×", minimum=0, path="uncertainty.staffing_factor")
    for key, (target, spread, low, high) in UNCERTAIN_SPREADS.items():
        unit = "points" if spread == "points" else "× base"
        kind = "fraction" if spread == "points" else "number"
        label, cite = b.text(f"uncertain.{key}.label"), b.text(f"uncertain.{key}.cite")
        for end, value in (("low", low), ("high", high)):
            # A spread in points is stored as a fraction (0.10) and read as percentage points.
            figure = f"{value * 100:+g}" if spread == "points" else f"{value:g}" if value is not None else None
            add(f"unc_{key}_{end}", unit, kind=kind, minimum=-1 if spread == "points" else 0, maximum=10,
                path=f"uncertainty.{key}.{end}",
                label=b.text(f"uncertain.input.label_{spread}").format(
                    label, b.text(f"uncertain.input.{end}")),
                cite=(b.text(f"uncertain.input.cite_{spread}").format(figure, cite) if figure is not None
                      else b.text("uncertain.input.cite_catalog").format(cite)))
