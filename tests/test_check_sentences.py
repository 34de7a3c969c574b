"""A failing check's sentence names the cause that fails (issue 29, item 7).

Given the seed's rented H100 book, a reviewer's edits that make a cost line an error must not
read as "a cost cell was overwritten", and an owned cluster's price that cannot be converted
must not fail "an owned cluster has a purchase price" on a rented cluster.
"""

from __future__ import annotations

import io

import openpyxl
import pytest

from budget.core.i18n import text
from budget.sheets.book import write_workbook
from budget.xlsx.recalc import read_values, recalculate
from support import require_soffice

OVERWRITTEN = text("items.check_costs_add_up.detail")
NOT_A_NUMBER = text("items.check_costs_add_up.detail_not_number")
OWNED = text("items.check_owned_priced.detail")


def _cell(wb, names: dict, name: str):
    sheet, ref = names[name].split("!")
    return wb[sheet.strip("'")][ref.replace("$", "").split(":")[0]]


def test_the_owned_price_check_reads_no_price_on_a_rented_cluster(seed_h100):
    """The check's condition is an IF over the ownership: a rented cluster never reads the owned
    cluster's price (an error there is the FX check's to name)."""
    result = write_workbook(seed_h100)
    wb = openpyxl.load_workbook(io.BytesIO(result.data))
    formula = _cell(wb, result.names, "check_owned_priced").value
    assert 'IF(ownership="rented",1,node_price_used)>0' in formula
    assert seed_h100.values["check_owned_priced"] == 0 and seed_h100.values["check_costs_add_up"] == 0


@pytest.mark.office
def test_failing_checks_name_the_live_cause(seed_h100, tmp_path):
    """Recalculated by LibreOffice: storage priced as text makes the storage line an error, and
    the costs check says a line is not a number (not that a cell was overwritten); the H100 node
    price in a currency without a rate leaves the rented cluster's owned-price check passing.
    Typing over the total, the sentence says a cell was overwritten."""
    require_soffice()
    result = write_workbook(seed_h100)
    books = {}
    for case, edits in {"text": {"price_per_gb_month": "two cents"},
                        "fx": {("acc_node_price_currency", "nvidia_h100_sxm"): "ZZZ"},
                        "typed": {"total_cost": 1.0}}.items():
        wb = openpyxl.load_workbook(io.BytesIO(result.data))
        for name, value in edits.items():
            if isinstance(name, tuple):
                column, gpu = name
                ids = [c for row in wb["Catalog"][result.names["acc_id"].split("!")[1].replace("$", "")] for c in row]
                row = next(c.row for c in ids if c.value == gpu)
                first = _cell(wb, result.names, column)
                wb["Catalog"].cell(row, first.column).value = value
            else:
                _cell(wb, result.names, name).value = value
        books[case] = tmp_path / f"{case}.xlsx"
        wb.save(books[case])
    done = recalculate(list(books.values()), tmp_path / "recalc")
    values = {case: read_values(done[path]) for case, path in books.items()}
    at = lambda name: result.names[name].replace("$", "").replace("'", "")  # noqa: E731
    shown = {case: set(v for v in vals.values() if isinstance(v, str)) for case, vals in values.items()}
    assert values["text"][at("check_costs_add_up")] == 1
    assert NOT_A_NUMBER in shown["text"] and OVERWRITTEN not in shown["text"]
    assert values["fx"][at("check_owned_priced")] == 0 and OWNED not in shown["fx"]
    assert values["typed"][at("check_costs_add_up")] == 1
    assert OVERWRITTEN in shown["typed"] and NOT_A_NUMBER not in shown["typed"]
