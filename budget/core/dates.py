"""Dates as spreadsheet serial numbers (days since 1899-12-30, as Excel and LibreOffice count)."""

from __future__ import annotations

import datetime as dt

EXCEL_EPOCH = dt.date(1899, 12, 30)


def excel_serial(day: dt.date) -> float:
    """A date as a spreadsheet serial number (days since 1899-12-30)."""
    return float((day - EXCEL_EPOCH).days)


def from_serial(serial: float) -> dt.date:
    return EXCEL_EPOCH + dt.timedelta(days=int(serial))
