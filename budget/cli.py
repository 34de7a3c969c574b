"""Command line: the only place where typed errors become messages and exit codes.

    trainbudget                      build the bundled example into out/
    trainbudget A.yaml B.yaml -o DIR build scenarios into DIR
    trainbudget import BOOK.xlsx -o SCENARIO.yaml
                                     a workbook's input cells (as a reviewer left them) back
                                     into a scenario
    trainbudget package A.yaml [B.yaml ...] -o DIR
                                     the approval package: every workbook and report, each
                                     plan as NAME.plan.json (and its JSON Schema), index.html
                                     and SHA256SUMS (see budget/package.py)

Everything is validated and rendered in memory first; files are written only when every
scenario is good, as one set by budget/output.py (staged, locked, recorded in a manifest, and
never over a file a reviewer changed unless --force), so bad input never leaves a half-written
output behind.
"""

from __future__ import annotations

import argparse
import signal
import sys
import unicodedata
from pathlib import Path

from . import __version__
from .catalog import data_dir, load_catalog
from .errors import InputError, Problem, ScenarioError
from .output import Interrupted, Output, OutputError, write_outputs
from .plan import Plan, build_plan
from .scenario import character_problem, load_scenario
from .report import render_html, render_markdown
from .workbook import write_workbook

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT = 0, 1, 2
BUNDLED_EXAMPLE = "gpt3-175b-h100.yaml"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="trainbudget",
        description="Plan an LLM training run: accelerators, duration and cost. Writes, for each "
                    "scenario, an .xlsx workbook of live formulas and a timeline report (.md, .html).",
        epilog="Bad input exits with status 2 and writes nothing. 'trainbudget import BOOK.xlsx "
               "-o SCENARIO.yaml' brings a reviewer's edits back into a scenario.")
    p.add_argument("scenarios", nargs="*", type=Path, metavar="SCENARIO.yaml",
                   help=f"scenario files (default: the bundled example {BUNDLED_EXAMPLE})")
    p.add_argument("-o", "--output-dir", type=Path, default=Path("out"), metavar="DIR",
                   help="where to write the outputs (default: out)")
    p.add_argument("-q", "--quiet", action="store_true", help="print only errors and warnings")
    p.add_argument("-f", "--force", action="store_true",
                   help="overwrite outputs that were changed since trainbudget wrote them, or "
                        "that it did not write (without it such files are left alone and the "
                        "run exits 2)")
    add_lang_argument(p)
    p.add_argument("--version", action="version", version=f"trainbudget {__version__}")
    return p


def add_lang_argument(p: argparse.ArgumentParser) -> None:
    from .i18n import languages
    p.add_argument("--lang", choices=languages(), default=None, metavar="LANG",
                   help="language of the workbook, the reports and the messages: "
                        f"{', '.join(languages())} (default: the scenario's language, else en)")


def render(plan: Plan) -> list[Output]:
    """The workbook and the timeline report (Markdown and HTML) of one plan."""
    stem = plan.scenario_id
    book = write_workbook(plan)
    return [Output(Path(f"{stem}.xlsx"), book.data),
            Output(Path(f"{stem}.md"), render_markdown(plan, book).encode("utf-8")),
            Output(Path(f"{stem}.html"), render_html(plan, book).encode("utf-8"))]


def plan_file(path: Path, catalog, lang: str | None = None) -> Plan:
    name_problem = character_problem(path.name)
    if name_problem:   # the file name reaches the workbook and the reports
        raise ScenarioError(path, [Problem("", f"the file name {name_problem[0]}",
                                           "rename the file: " + name_problem[1])])
    scenario = load_scenario(path, catalog)
    if lang is not None:     # the command line's --lang wins over the scenario's language
        scenario = scenario.model_copy(update={"language": lang})
    try:
        # The outputs cite the bare file name (the same bytes from any folder); messages name
        # the file as given, as the schema's do.
        if scenario.options:     # the base and each option, a plan of its own (Compare sheet)
            from dataclasses import replace

            from .options import build_option_plans
            plans = build_option_plans(scenario, catalog, path=path.name, scenario_id=path.stem)
            return replace(plans[0][1], options=tuple(plans[1:]))
        return build_plan(scenario, catalog, scenario_id=path.stem, scenario_file=path.name)
    except InputError as err:
        raise type(err)(path, err.problems) from None


def print_warnings(plan: Plan) -> None:
    """The plan's failing checks and warnings, one line each, on stderr."""
    for warning in plan.warnings:
        print(terminal_safe(f"warning: {plan.scenario_id}: {warning}"), file=sys.stderr)


def terminal_safe(text: object) -> str:
    """Text for a terminal: control characters, line and paragraph separators, format and
    unassigned characters and lone surrogates shown as escapes (\\x1b, \\u2028), never raw."""
    return "".join(ch.encode("unicode_escape").decode("ascii")
                   if unicodedata.category(ch) in {"Cc", "Cf", "Cs", "Cn", "Zl", "Zp"} else ch
                   for ch in str(text))


def write_reporting(outdir: Path, outputs, force: bool, what: str):
    """Write a run's files (budget/output.py); the result, or the exit status after printing why
    nothing (or everything, before a signal) was written. `what` names the set in messages."""
    try:
        result = write_outputs(outdir, outputs, force=force, version=__version__)
    except OutputError as err:
        for one in err.each():
            _print_error(one)
        return EXIT_BAD_INPUT
    except Interrupted as stop:
        name = signal.Signals(stop.signum).name
        if stop.written:
            print(terminal_safe(f"warning: {outdir}: {name} received; {what} written completely first"),
                  file=sys.stderr)
        else:
            print(terminal_safe(f"error: {outdir}: interrupted by {name}; nothing was written"),
                  file=sys.stderr)
            print("  fix: run the command again", file=sys.stderr)
        return 128 + stop.signum
    for path in result.overwritten:
        print(terminal_safe(f"warning: {path}: overwritten (--force); it differed from what "
                            "trainbudget wrote"), file=sys.stderr)
    return result


def _print_error(err: InputError) -> None:
    for problem in err.problems:
        where = f"{err.file}: {problem.path}: " if problem.path else f"{err.file}: "
        print(terminal_safe(f"error: {where}{problem.message}"), file=sys.stderr)
        print(terminal_safe(f"  fix: {problem.fix}"), file=sys.stderr)


def import_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="trainbudget import",
        description="Read a trainbudget workbook — as generated or as a reviewer edited it in "
                    "Excel or LibreOffice — and write the scenario that reproduces its input cells.",
        epilog="A cell that holds text where a number belongs, or a value outside its validation, "
               "exits with status 2 and writes nothing.")
    p.add_argument("workbook", type=Path, metavar="BOOK.xlsx")
    p.add_argument("-o", "--output", type=Path, metavar="SCENARIO.yaml",
                   help="where to write the scenario (default: print it)")
    return p


def import_main(argv: list[str]) -> int:
    from .importer import import_workbook

    args = import_parser().parse_args(argv)
    try:
        imported = import_workbook(args.workbook, load_catalog())
    except InputError as err:
        _print_error(err)
        return EXIT_BAD_INPUT
    for warning in imported.warnings:
        print(terminal_safe(f"warning: {args.workbook}: {warning}"), file=sys.stderr)
    if args.output is None:
        sys.stdout.write(imported.text)
        return EXIT_OK
    try:
        write_text_atomically(args.output, imported.text)
    except OSError as err:
        print(terminal_safe(f"error: {args.output}: cannot write the scenario ({err.strerror or err})"),
              file=sys.stderr)
        print("  fix: choose a writable path with -o", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(f"  wrote {args.output}")
    return EXIT_OK


def write_text_atomically(path: Path, text: str) -> None:
    import os
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=path.suffix, dir=path.parent or Path("."))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # `import` is a command unless a scenario file of that name is meant.
    if argv and argv[0] == "import" and not Path("import").is_file():
        return import_main(argv[1:])
    if argv and argv[0] == "package" and not Path("package").is_file():
        from .package import package_main
        return package_main(argv[1:])
    args = parser().parse_args(argv)
    paths = args.scenarios or [data_dir("scenarios") / BUNDLED_EXAMPLE]
    stems = [p.stem for p in paths]
    duplicates = sorted({s for s in stems if stems.count(s) > 1})
    if duplicates:
        _print_error(ScenarioError(duplicates[0], [Problem(
            "", "two scenarios share this file name, so their outputs would overwrite each other",
            "rename one of the files")]))
        return EXIT_BAD_INPUT
    try:
        catalog = load_catalog()
        plans = [plan_file(p, catalog, args.lang) for p in paths]
        outputs = [out for plan in plans for out in render(plan)]
    except InputError as err:
        _print_error(err)
        return EXIT_BAD_INPUT
    result = write_reporting(args.output_dir, outputs, args.force, "the outputs were")
    if isinstance(result, int):
        return result
    written = result.paths
    for plan in plans:
        print_warnings(plan)
        if not args.quiet:
            print(_headline(plan))
            if plan.layout is not None:
                print(f"  layout: {plan.layout.explanation}")
            for title, option in plan.options:
                print(terminal_safe(f"  option {title}: " + _headline(option).split(": ", 1)[1]))
    if not args.quiet:
        for path in written:
            print(f"  wrote {path}")
    return EXIT_OK


def _headline(plan: Plan) -> str:
    v, cur = plan.values, plan.scenario.prices.currency
    return (f"{plan.scenario_id}: {plan.gpu_count:,} x {v['accelerator_name']} "
            f"({v['layout_label']}), {plan.train_days:,.1f} training days, "
            f"{plan.gpu_hours:,.0f} GPU-hours, total {plan.total_cost:,.0f} {cur}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
