"""An installed (non-editable) trainbudget carries its catalogs, templates and example."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

from support import ROOT


@pytest.mark.slow
def test_wheel_contains_data_folders(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path),
                    str(ROOT)], check=True, capture_output=True)
    wheel = next(tmp_path.glob("trainbudget-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in ("budget/catalogs/accelerators.yaml", "budget/catalogs/models.yaml",
                     "budget/scenarios/gpt3-175b-h100.yaml", "budget/cli/app.py",
                     "budget/messages/en/cli.yaml", "budget/schemas/scenario.schema.json",
                     "budget/schemas/scenario.schema.zh.json", "budget/cli/catalog.py"):
        assert required in names
    assert any(n.startswith("budget/templates/") for n in names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "trainbudget = budget.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
