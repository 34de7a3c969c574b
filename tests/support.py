"""Helpers shared by the tests: scenarios, variants, and the recalculation oracle's cases."""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from budget.inputs.catalog import Catalog
from budget.plan.plan import Plan, build_plan
from budget.inputs.options import parse_scenario

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"

# Randomised and sampled tests at full size (mutants, property examples, Monte Carlo draws, the
# import fuzzer's 2,000 cases) when TRAINBUDGET_FUZZ=full, as CI's .ci/run sets; a seeded smaller
# share of the same tests otherwise, so that the fast tier (README, "Two commands") stays fast.
FULL_SIZE = os.environ.get("TRAINBUDGET_FUZZ") == "full"


def sized(full: int, fast: int) -> int:
    """A randomised test's size: `full` under TRAINBUDGET_FUZZ=full, else `fast`."""
    return full if FULL_SIZE else fast
SEED_H100 = SCENARIOS / "gpt3-175b-h100.yaml"
SEED_A100 = SCENARIOS / "gpt3-175b-a100.yaml"


def raw(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def with_changes(data: dict, changes: dict) -> dict:
    """A deep copy of scenario data with dotted-path changes; None removes a key."""
    out = copy.deepcopy(data)
    for path, value in changes.items():
        node = out
        *parents, last = path.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        if value is None:
            node.pop(last, None)
        else:
            node[last] = copy.deepcopy(value)
    return out


def plan_of(data: dict, catalog: Catalog, scenario_id: str = "test") -> Plan:
    scenario = parse_scenario(data, f"{scenario_id}.yaml", catalog)
    return build_plan(scenario, catalog, scenario_id=scenario_id)


def seed_plan(catalog: Catalog, **changes) -> Plan:
    return plan_of(with_changes(raw(SEED_H100), changes), catalog, "gpt3-175b-h100")


# Llama 3 405B's pre-training on 16,384 H100 (Llama Team 2024, Table 4): the seed with the 405B
# shape at 8,192 tokens, 15.6T tokens, 2,048 sequences a step and 41% MFU. Meta's TP 8 x PP 16
# needs one layer fewer on the first and last stage; TP 8 x PP 2 with ZeRO-3 stands in for it (the
# failure model sees the layout only in what each GPU copies to host memory at a checkpoint).
LLAMA3_405B_16K = {
    "model.preset": "llama3-405b", "model.seq_len": 8192, "data.train_tokens": "15.6T",
    "data.global_batch_sequences": 2048, "hardware.gpu_count": 16384, "hardware.peak_tflops": None,
    "hardware.effective_tflops": None, "hardware.mfu": 0.41, "parallelism.tp": 8, "parallelism.pp": 2,
    "parallelism.zero_stage": 3, "parallelism.recompute": "full",
    "memory.activation_gb_per_microbatch": None, "storage.checkpoint_gb": None, "sources": {}}


# --- the office tier ---------------------------------------------------------------------------
# A test that starts LibreOffice, Gnumeric or Chromium (or poppler on what they print) carries
# @pytest.mark.office, so `pytest -m "not office"` runs on a machine with Python alone. conftest.py
# records the running test here, from before its fixtures are set up (a session fixture such as
# the oracle is set up inside the setup of the first test that asks for it) until its teardown;
# the helpers below, and an audit hook on every subprocess the tests start, fail an unmarked test.
OFFICE_PROGRAMS = frozenset({"soffice", "soffice.bin", "libreoffice", "ssconvert", "gnumeric", "chromium",
                             "chromium-browser", "google-chrome", "chrome", "pdftoppm", "pdftotext"})
_running: tuple[str, bool] | None = None       # (node id, marked office) of the running test


def running_test(nodeid: str | None, office: bool = False) -> None:
    global _running
    _running = None if nodeid is None else (nodeid, office)


def current_test() -> tuple[str, bool] | None:
    return _running


def office_program(what: str) -> None:
    """Fail the running test unless it is marked office: it is about to start `what`."""
    if _running is not None and not _running[1]:
        pytest.fail(f"{_running[0]}: this test starts {what}; mark it @pytest.mark.office "
                    "(the tier `pytest -m 'not office'` leaves out)", pytrace=False)


def guard_subprocesses(event: str, args: tuple) -> None:
    """An audit hook (sys.addaudithook): a subprocess that runs an office program is
    office_program() too, however the test starts it."""
    if event != "subprocess.Popen":
        return
    try:
        name = os.path.basename(os.fsdecode(args[0]))
    except (TypeError, ValueError, IndexError):
        return
    if name in OFFICE_PROGRAMS:
        office_program(name)


def require_soffice() -> None:
    """Skip loudly without LibreOffice; under CI a skip would hide a broken install, so fail."""
    from budget.xlsx.recalc import soffice_path

    require_tool(soffice_path(), "LibreOffice (soffice), the recalculation oracle,",
                 "apt-get install -y libreoffice-calc-nogui")


def require_tool(found: str | None, what: str, install: str) -> str:
    """Skip loudly when a tool is missing; under CI=true a skip would hide a broken install.
    Only an office test asks for one (see office_program)."""
    office_program(what.rstrip(","))
    if found:
        return found
    reason = f"{what} is not installed, so this test cannot run: {install}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def chromium() -> str:
    import shutil
    found = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")
                  if shutil.which(n)), None)
    return require_tool(found, "Chromium", "apt-get install -y chromium")


@dataclass
class OracleCase:
    """A workbook handed to LibreOffice and the Python plan its values must equal."""
    name: str
    path: Path
    plan: Plan
    expected: dict          # "Sheet!A1" -> value, for books written from `plan`
    names: dict             # defined name -> "Sheet!A1"
    values: dict | None = None


def named_cells(wb, name: str) -> list:
    """The cells of a defined name (a row, a column or one cell) of an openpyxl workbook."""
    sheet, ref = wb.defined_names[name].attr_text.rsplit("!", 1)
    ws = wb[sheet.strip("'")]
    first, _, last = ref.replace("$", "").partition(":")
    return [c for row in ws[f"{first}:{last or first}"] for c in row]
