"""The sections around the ask: what the package asks finance to approve (`approval`), the
spreads of the uncertain inputs (`uncertainty`, the Sensitivity sheet's P10 and P90) and the
plausibility bands the Checks sheet warns outside (`plausibility`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from .base import Section, number
from .prices import Price, PriceIn


class PlausibilitySection(Section):
    """Bands for the warnings that do not block approval (see the Checks sheet)."""
    tokens_per_param_low: number(ge=0, le=1e6) = 5.0
    tokens_per_param_high: number(ge=0, le=1e6) = 2000.0
    cost_per_gpu_hour_low: PriceIn = Price(amount=0.5, currency="USD")
    cost_per_gpu_hour_high: PriceIn = Price(amount=20.0, currency="USD")
    params_tolerance: number(ge=0, le=1) = 0.1


class Spread(Section):
    low: number(ge=-1, le=10)
    high: number(ge=-1, le=10)


class ApprovalSection(Section):
    """What the package asks finance to approve (issue 25): this percentile of the total (P50-P95)."""
    percentile: number(ge=50, le=95) = 80.0


class CatalogSpread(Section):
    """A spread whose low and high default to the catalog's (blank: catalogs/model_error.yaml)."""
    low: number(ge=0, le=10) | None = None
    high: number(ge=0, le=10) | None = None


def _spread(low: float | None, high: float | None):
    if low is None:
        return Annotated[CatalogSpread, Field(default_factory=CatalogSpread)]
    return Annotated[Spread, Field(default_factory=lambda: Spread(low=low, high=high))]


def _uncertainty_section() -> type[Section]:
    """Low and high values of the uncertain inputs (Sensitivity sheet), read as P10 and P90:
    factors on the base value (`model_error` on the step time, its defaults the catalog's). The
    keys and defaults are budget.model.model.UNCERTAIN_SPREADS's, so they are said once (and no
    message catalog is read at import)."""
    from pydantic import create_model

    from ...model.model import UNCERTAIN_SPREADS
    fields = {key: _spread(low, high) for key, (_, _, low, high) in UNCERTAIN_SPREADS.items()}
    return create_model("UncertaintySection", __base__=Section,
                        staffing_factor=(number(ge=0, le=10), 1.0), **fields)


UncertaintySection = _uncertainty_section()
