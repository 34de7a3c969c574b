"""The `staffing` section: the roles the project pays, each a headcount at a monthly cost."""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator

from .base import Headcount, Months, SafeText, Section, number
from .prices import Currency, as_amount


class StaffCost(Section):
    amount: number(ge=0, le=1e12)
    currency: Currency | None = None


class StaffRole(Section):
    role: SafeText
    headcount: Headcount
    monthly_cost: Annotated[StaffCost, BeforeValidator(as_amount)]
    months: Months | None = None           # default: the project's length, live in the workbook
