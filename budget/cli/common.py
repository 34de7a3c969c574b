"""What the trainbudget commands share: exit codes, the language a command line asks for, the
outputs of one plan, warnings and errors printed as messages, and writing a run's files."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING

from .. import __version__
from ..core.errors import InputError, Msg, Problem, located
from ..core.i18n import DEFAULT_LANG, fmt
from .output import Interrupted, Output, OutputError, write_outputs

if TYPE_CHECKING:
    from ..plan.plan import Plan

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT = 0, 1, 2
# --fail-on-checks: every file was written, and at least one plan has a failing check (NOT APPROVABLE).
EXIT_FAILING_CHECKS = 3


def requested_lang(argv: list[str]) -> str:
    """The language a --lang on the command line asks for (before parsing, for the help texts);
    English when there is none or it names no catalog."""
    from ..core.i18n import languages
    for i, arg in enumerate(argv):
        if arg == "--lang" and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith("--lang="):
            value = arg.partition("=")[2]
        else:
            continue
        return value if value in languages() else DEFAULT_LANG
    return DEFAULT_LANG


def _help(key: str, lang: str, **figures) -> str:
    """A help text for argparse, which %-formats it."""
    return fmt(key, lang, **figures).replace("%", "%%")


def add_lang_argument(p: argparse.ArgumentParser, lang: str = DEFAULT_LANG,
                      help_key: str = "cli.args.lang") -> None:
    from ..core.i18n import languages
    p.add_argument("--lang", choices=languages(), default=None, metavar="LANG",
                   help=_help(help_key, lang, languages=", ".join(languages())))


def render(plan: Plan) -> list[Output]:
    """The workbook and the timeline report (Markdown and HTML) of one plan."""
    from ..render.report import render_html, render_markdown
    from ..sheets.book import write_workbook

    stem = plan.scenario_id
    return [Output(Path(f"{stem}.xlsx"), write_workbook(plan).data),
            Output(Path(f"{stem}.md"), render_markdown(plan).encode("utf-8")),
            Output(Path(f"{stem}.html"), render_html(plan).encode("utf-8"))]


def print_warnings(plan: Plan, lang: str | None = None) -> None:
    """The plan's failing checks and warnings, one line each, on stderr, in the plan's language."""
    for warning in plan.warnings:
        print(terminal_safe(fmt("cli.warning", lang or plan.lang, file=plan.scenario_id, warning=warning)),
              file=sys.stderr)


def failing_check_labels(plan: Plan) -> list[str]:
    """The labels of the plan's failing checks (what makes it NOT APPROVABLE), in its language."""
    failing = set(plan.failing_checks)
    if plan.model is None:
        return sorted(failing)
    return [c.label for c in plan.model.checks() if c.name in failing]


def report_failing_checks(failing: list[tuple[object, list[str]]], total: int, lang: str) -> int:
    """--fail-on-checks: each plan with failing checks named on stderr, then the exit status
    (EXIT_FAILING_CHECKS when any plan fails one, else EXIT_OK). `failing` holds
    (scenario, its failing checks' labels) for every plan of the run."""
    bad = [(name, labels) for name, labels in failing if labels]
    for name, labels in bad:
        print(terminal_safe(fmt("cli.failing_checks", lang, file=name,
                                checks="; ".join(labels))), file=sys.stderr)  # i18n: not text
    if not bad:
        return EXIT_OK
    print(terminal_safe(fmt("cli.failing_exit", lang, count=len(bad), total=total)), file=sys.stderr)
    return EXIT_FAILING_CHECKS


def terminal_safe(text: object) -> str:
    """Text for a terminal: control characters, line and paragraph separators, format and
    unassigned characters and lone surrogates shown as escapes (\\x1b, \\u2028), never raw."""
    return "".join(ch.encode("unicode_escape").decode("ascii")
                   if unicodedata.category(ch) in {"Cc", "Cf", "Cs", "Cn", "Zl", "Zp"} else ch
                   for ch in str(text))


def write_reporting(outdir: Path, outputs, force: bool, written_id: str, lang: str | None = None):
    """Write a run's files (budget/output.py); the result, or the exit status after printing why
    nothing (or everything, before a signal) was written. `written_id` is the whole sentence
    printed when a signal arrives after every file was written ({folder}, {signal})."""
    lang = lang or DEFAULT_LANG
    try:
        result = write_outputs(outdir, outputs, force=force, version=__version__)
    except OutputError as err:
        for one in err.each():
            _print_error(one, lang)
        return EXIT_BAD_INPUT
    except Interrupted as stop:
        name = signal.Signals(stop.signum).name
        if stop.written:
            print(terminal_safe(fmt(written_id, lang, folder=outdir, signal=name)), file=sys.stderr)
        else:
            _print_error(InputError(outdir, [Problem("", Msg("errors.run.interrupted.message", signal=name),
                                                     Msg("errors.run.interrupted.fix"))]), lang)
        return 128 + stop.signum
    for path in result.overwritten:
        print(terminal_safe(fmt("cli.overwritten", lang, file=path)), file=sys.stderr)
    return result


def _print_error(err: InputError, lang: str | None = None) -> None:
    """Each problem as an 'error:' line and a '  fix:' line, in `lang`, else in the language of
    the input the error is about, else in English."""
    lang = lang or err.lang or DEFAULT_LANG
    for problem in err.problems:
        print(terminal_safe(located(err.file, problem, lang, at_path="cli.error.at_path",
                                    at_file="cli.error.at_file")), file=sys.stderr)
        print(terminal_safe(fmt("cli.error.fix", lang, fix=problem.fix_in(lang))), file=sys.stderr)


def write_one_file(path, write, command: str, lang: str) -> int:
    """`write()` a command's one file at `path` (the starter of `new`, the scenario of `import`):
    "wrote PATH" on success, else one message naming the file and the system's reason (the
    catalog's errors.<command>.write), exit 2."""
    try:
        write()
    except OSError as err:
        _print_error(InputError(path, [Problem(
            "", Msg(f"errors.{command}.write.message", reason=err.strerror or str(err)),
            Msg(f"errors.{command}.write.fix"))]), lang)
        return EXIT_BAD_INPUT
    print(fmt("cli.wrote", lang, file=path))
    return EXIT_OK


@contextlib.contextmanager
def fewer_collections():
    """Collect cyclic garbage less often while scenarios are built: a workbook is ~12,000
    openpyxl cells and styles, and the collector's default (a pass every 700 new objects) cost
    ~10% of a scenario's CPU. What is loaded by then (the libraries, the catalog, the messages)
    is frozen out of the passes, which also keeps a forked worker from copying those pages when
    a pass would touch them. Garbage is still collected, in larger batches; the collector is as
    it was afterwards (tests run main() many times in one process)."""
    import gc

    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(100_000, 50, 100)
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()
