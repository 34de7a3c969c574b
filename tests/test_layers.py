"""The house's rules, checked: budget's layers import only downwards (import-linter's contracts in
pyproject.toml, imports inside functions included), nothing imports by name at run time, and no
sheet or report module writes a formula as text or reaches into the formula runtime's privates."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUDGET = ROOT / "budget"
LINT = ("import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True))")


def lint(tree: Path) -> subprocess.CompletedProcess:
    """import-linter over the `budget` package found in `tree`, with `tree`'s pyproject.toml."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    return subprocess.run([sys.executable, "-c", LINT], cwd=tree, env=env, capture_output=True, text=True)


def test_every_layer_imports_only_the_layers_below_it():
    done = lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_upward_import_inside_a_function_breaks_the_contract(tmp_path):
    shutil.copytree(BUDGET, tmp_path / "budget", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    errors = tmp_path / "budget" / "core" / "errors.py"
    errors.write_text(errors.read_text(encoding="utf-8") +
                      "\n\ndef _planted():\n    from ..sheets import book  # noqa: F401\n", encoding="utf-8")
    done = lint(tmp_path)
    assert done.returncode != 0
    assert "budget.core.errors -> budget.sheets.book" in done.stdout
    assert "budget.core is not allowed to import budget.sheets" in done.stdout


def _modules(*layers: str) -> list[Path]:
    return sorted(p for layer in layers for p in (BUDGET / layer).rglob("*.py"))


@pytest.mark.parametrize("path", _modules("."), ids=lambda p: p.relative_to(BUDGET).as_posix())
def test_no_module_imports_by_a_name_computed_at_run_time(path):
    """importlib.import_module and __import__ would hide an import from the contract."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            assert name not in {"import_module", "__import__"}, f"{path}:{node.lineno}"


# What formula text looks like: a spreadsheet function applied (SUM(), a leading "=", or an
# operator beside a value put into the text ({}+7, $B{}<>$G{}, {}*{}). Cell addresses alone are
# not formulas: a sheet names cells for its panes, merges and print areas.
FORMULA_TEXT = re.compile(r"\b[A-Z][A-Z0-9.]*\(|^=.|\{\}(?:<>|<=|>=|[-+*/<>=&^])|(?:<>|<=|>=|[-+*/<>=&^])\$?[A-Z]*\$?\{\}")


NOT_FORMULA = "not formula text"     # a line's comment says so: XML the writer serialises, a file name


def _strings(tree: ast.AST):
    """Every string literal but docstrings, with f-strings' literal parts joined by a marker."""
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            yield node.lineno, "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.lineno, node.value


@pytest.mark.parametrize("path", _modules("sheets", "render"), ids=lambda p: p.relative_to(BUDGET).as_posix())
def test_no_sheet_or_report_module_writes_formula_text(path):
    """Formulas are expressions of the formula tree, rendered; a sheet module holds no formula text
    (a function call like SUM( or a cell address like B12) and no private runtime function."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    tree = ast.parse(source)
    found = [(line, text) for line, text in _strings(tree)
             if FORMULA_TEXT.search(text) and NOT_FORMULA not in lines[line - 1].partition("#")[2]]
    assert not found, f"formula text in {path.relative_to(ROOT)}: {found}"
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and "formula" in (node.module or ""):
            private = [a.name for a in node.names if a.name.startswith("_")]
            assert not private, f"{path.relative_to(ROOT)}:{node.lineno} imports the runtime's {private}"
            # budget.formula.runtime holds only privates (the functions compiled code calls)
            runtime = (node.module or "").endswith("formula.runtime") or any(a.name == "runtime" for a in node.names)
            assert not runtime, f"{path.relative_to(ROOT)}:{node.lineno} imports budget.formula.runtime"
        if isinstance(node, ast.Import):
            runtime = [a.name for a in node.names if a.name.endswith("formula.runtime")]
            assert not runtime, f"{path.relative_to(ROOT)}:{node.lineno} imports {runtime}"


def test_the_formula_text_pattern_finds_what_it_should():
    for text in ('IF({}="","",{})', "SUM({}:{})", "{}{}+7", "$B{}<>$G{}", "{}*{}", "=B12", "{}{}/$C${}"):
        assert FORMULA_TEXT.search(text), text
    for text in ("#,##0", "0.00E+00", "yyyy-mm-dd", "workbook.cashflow.lines.total", "A:D", "1:4", "{}:{}",
                 "Calibri", "FFF2CC", "GPU-hours", "H100", "B5", "A{}:C{}", "${}${}:${}${}", "=", "{}!{}"):
        assert not FORMULA_TEXT.search(text), text


def test_the_names_scripts_use_still_import():
    """The entry points kept when the modules moved into layers (issue 24)."""
    import budget.calibrate
    import budget.cli
    from budget.catalog import load_catalog
    from budget.plan import Plan, build_plan
    from budget.scenario import load_scenario, parse_scenario

    catalog = load_catalog()
    plan = build_plan(load_scenario(ROOT / "scenarios" / "gpt3-175b-h100.yaml", catalog), catalog)
    assert isinstance(plan, Plan) and plan.gpu_count == 512
    assert callable(parse_scenario) and callable(budget.cli.main) and callable(budget.calibrate.main)


@pytest.mark.slow
@pytest.mark.parametrize("command", [["-m", "budget.cli", "--version"], ["generate.py", "--version"],
                                     ["-m", "budget.calibrate", "--help"]])
def test_the_commands_scripts_use_still_run(command):
    done = subprocess.run([sys.executable, *command], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()


def test_the_writer_refuses_formula_text():
    """The writer's formula() takes an expression and renders it; text is refused."""
    from budget.catalog import load_catalog
    from budget.formula.expr import Ref
    from budget.plan import build_plan
    from budget.scenario import load_scenario
    from budget.sheets.book import sheet_titles
    from budget.sheets.writer import Writer

    catalog = load_catalog()
    plan = build_plan(load_scenario(ROOT / "scenarios" / "gpt3-175b-a100.yaml", catalog), catalog)
    w = Writer(plan, sheet_titles(plan))
    ws = w.wb["Summary"]
    with pytest.raises(TypeError, match="an expression, not str"):
        w.formula(ws, 40, 2, "SUM(A1:A3)", 0.0, None)
    cell = w.formula(ws, 40, 2, Ref("total_cost") * 2, 0.0, None)
    assert cell.value == "=total_cost*2"


def test_no_import_circle_inside_a_layer_either():
    """import-linter orders the layers; a circle between two modules of one layer (core/errors.py
    and core/reading.py once) is the shared circle check's to find."""
    tool = ROOT.parent / "shared" / "tools" / "import_circles.py"
    if not tool.exists():
        pytest.skip("../shared/tools/import_circles.py is not beside this checkout")
    done = subprocess.run([sys.executable, str(tool)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


# openpyxl's private attributes and modules: a cell's _value/_style, a sheet's _cells, a
# descriptor's __dict__, an import from a private module (openpyxl.cell._writer) or of a private name
_PRIVATE_ATTRIBUTES = {"_value", "_style", "_cells", "_fonts", "_alignments", "_fills", "_borders",
                       "_protections", "_number_formats", "_cell_styles", "_differential_styles", "__dict__"}


@pytest.mark.parametrize("path", [p for p in _modules(".") if "xlsx" not in p.relative_to(BUDGET).parts],
                         ids=lambda p: p.relative_to(BUDGET).as_posix())
def test_openpyxl_internals_are_touched_only_in_budget_xlsx(path):
    """Issue 26: the fast paths that reach into openpyxl live in budget/xlsx/ (cells.py, save.py,
    wrap.py), each checked against the openpyxl versions it names; the sheets use its functions."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    uses_openpyxl = any(isinstance(n, ast.ImportFrom) and (n.module or "").startswith("openpyxl")
                        or isinstance(n, ast.Import) and any(a.name.startswith("openpyxl") for a in n.names)
                        for n in ast.walk(tree)) or "sheets" in path.relative_to(BUDGET).parts
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("openpyxl"):
            assert not any(part.startswith("_") for part in node.module.split(".")), f"{path}:{node.lineno}"
            assert not any(a.name.startswith("_") for a in node.names), f"{path}:{node.lineno}"
        if uses_openpyxl and isinstance(node, ast.Attribute):
            assert node.attr not in _PRIVATE_ATTRIBUTES, f"{path}:{node.lineno}: .{node.attr}"
