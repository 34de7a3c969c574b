"""Command line: the only place where typed errors become messages and exit codes.

    trainbudget                      build the bundled example into out/
    trainbudget A.yaml B.yaml -o DIR build scenarios into DIR
    trainbudget import BOOK.xlsx -o SCENARIO.yaml
                                     a workbook's input cells (as a reviewer left them) back
                                     into a scenario
    trainbudget new --job MODE [-o FILE]
                                     a commented starter scenario for a job mode (budget/cli/new.py)
    trainbudget package A.yaml [B.yaml ...] -o DIR
                                     the approval package: every workbook and report, each
                                     plan as NAME.plan.json (and its JSON Schema), index.html
                                     and SHA256SUMS (see budget/package.py)
    trainbudget catalog accelerators|prices|presets
                                     the ids a scenario can name, with their figures and
                                     sources (budget/cli/catalog.py)

Exit status: 0 done; 2 bad input (nothing written); 3 with --fail-on-checks when a plan has a
failing check (NOT APPROVABLE; the files are written first); 128+N on signal N.

Everything is validated and rendered in memory first; files are written only when every
scenario is good, as one set by budget/output.py (staged, locked, recorded in a manifest, and
never over a file a reviewer changed unless --force), so bad input never leaves a half-written
output behind.

Every message is printed in the run's language: --lang when given; else, for a message about a
scenario (or a workbook), the language it names (`language:`) when it can be read; else English.
The help texts follow a --lang found on the command line.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .. import __version__
from ..core.errors import InputError, Msg, Problem, ScenarioError
from ..core.i18n import DEFAULT_LANG, fmt
from ..core.limits import MAX_YAML_BYTES
from ..inputs.catalog import data_dir, load_catalog
from .common import (EXIT_BAD_INPUT, EXIT_FAILING_CHECKS, EXIT_FAILURE, EXIT_OK, _help,  # noqa: F401
                     _print_error, add_lang_argument, failing_check_labels, fewer_collections, print_warnings,
                     render, report_failing_checks, requested_lang, terminal_safe, write_one_file, write_reporting)
from .output import Output

# The planner, the workbook (openpyxl) and the reports (jinja2) are imported where they are
# used, not here: `--help`, `--version` and `import` need none of them (issue 14).
if TYPE_CHECKING:
    from ..plan.plan import Plan

BUNDLED_EXAMPLE = "gpt3-175b-h100-searched.yaml"


def parser(lang: str = DEFAULT_LANG) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="trainbudget",
        description=_help("cli.args.description", lang),
        epilog=_help("cli.args.epilog", lang))
    p.add_argument("scenarios", nargs="*", type=Path, metavar="SCENARIO.yaml",
                   help=_help("cli.args.scenarios", lang, example=BUNDLED_EXAMPLE))
    p.add_argument("-o", "--output-dir", type=Path, default=Path("out"), metavar="DIR",
                   help=_help("cli.args.output_dir", lang))
    p.add_argument("-q", "--quiet", action="store_true", help=_help("cli.args.quiet", lang))
    p.add_argument("-f", "--force", action="store_true", help=_help("cli.args.force", lang))
    p.add_argument("--fail-on-checks", action="store_true", help=_help("cli.args.fail_on_checks", lang))
    p.add_argument("--curve", action="store_true", help=_help("cli.args.curve", lang))
    add_lang_argument(p, lang)
    p.add_argument("--version", action="version", version=f"trainbudget {__version__}")  # i18n: not text
    return p


def import_parser(lang: str = DEFAULT_LANG) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(  # i18n: not text (the program's name)
        prog="trainbudget import",
        description=_help("cli.import.description", lang),
        epilog=_help("cli.import.epilog", lang))
    p.add_argument("workbook", type=Path, metavar="BOOK.xlsx")
    p.add_argument("-o", "--output", type=Path, metavar="SCENARIO.yaml",
                   help=_help("cli.import.output", lang))
    p.add_argument("-f", "--force", action="store_true", help=_help("cli.import.force", lang))
    add_lang_argument(p, lang, "cli.import.lang")
    return p


def import_main(argv: list[str]) -> int:
    from ..inputs.importer import import_workbook

    args = import_parser(requested_lang(argv)).parse_args(argv)
    try:
        imported = import_workbook(args.workbook, load_catalog(), args.lang)
    except InputError as err:
        _print_error(err, args.lang)
        return EXIT_BAD_INPUT
    lang = args.lang or imported.lang
    for warning in imported.warnings:
        print(terminal_safe(fmt("cli.warning", lang, file=args.workbook, warning=warning)), file=sys.stderr)
    if args.output is None:
        _write_file_text(imported.text)
        return EXIT_OK
    if not args.force and os.path.lexists(args.output) and not os.path.isdir(args.output):
        _print_error(InputError(args.output, [Problem(
            "", Msg("errors.import.exists.message", lost=what_would_be_lost(args.output, imported.data)),
            Msg("errors.import.exists.fix"))]), lang)
        return EXIT_BAD_INPUT
    return write_one_file(args.output, lambda: write_text_atomically(args.output, imported.text), "import", lang)


def what_would_be_lost(path: Path, data: dict):
    """What an existing file holds that a scenario made of `data` would not: its comment lines
    and the values that differ (a few named), or its size when it is not a scenario."""
    from ..core.errors import both, load_yaml

    from ..core.reading import ReadRefused, read_regular

    try:
        text = read_regular(path, MAX_YAML_BYTES).decode("utf-8")
        old = load_yaml(path, InputError)
    except (OSError, UnicodeDecodeError, InputError, ReadRefused):
        text = old = None
    if not isinstance(old, dict):
        size = os.path.getsize(path) if os.path.isfile(path) else 0
        return Msg("errors.import.exists.text", size=size)
    lost = []
    comments = sum(1 for line in text.splitlines() if re.search(r"(^|\s)#", line))
    if comments:
        lost.append(Msg("errors.import.exists.comments", count=comments))
    new = dict(_leaves(data))
    changed = [key for key, value in _leaves(old) if new.get(key, _MISSING) != value]
    if changed:
        paths = ", ".join(changed[:5]) + (", …" if len(changed) > 5 else "")     # i18n: not text
        lost.append(Msg("errors.import.exists.values", count=len(changed), paths=paths))
    if not lost:
        return Msg("errors.import.exists.nothing")
    return lost[0] if len(lost) == 1 else both(*lost)


_MISSING = object()


def _leaves(node, prefix: str = ""):
    """(dotted path, value) of every value under a mapping (a list is one value)."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, node


def _write_file_text(text: str) -> None:
    """A file's text on stdout as the file holds it, UTF-8, whatever the terminal's encoding."""
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        sys.stdout.write(text)
        return
    sys.stdout.flush()
    buffer.write(text.encode("utf-8"))
    buffer.flush()


def _messages_never_fail() -> None:
    """A message the terminal's encoding cannot show (Chinese under a Latin-1 locale) is
    written with escapes rather than stopping the run (stderr does so already)."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if callable(reconfigure) and (sys.stdout.encoding or "").lower().replace("-", "") != "utf8":
        try:
            reconfigure(errors="backslashreplace")
        except (ValueError, OSError):
            pass


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


class _OpenpyxlWithoutNumpy:
    """An import finder that answers openpyxl's optional imports of numpy and Pillow with "not
    installed".

    openpyxl imports numpy, when it is installed, only to accept numpy scalars as cell values
    (openpyxl.compat.numbers), and Pillow only to embed images (openpyxl.drawing.image);
    trainbudget hands it Python numbers and no image, and the two imports were about a third of
    a `generate.py` run's start-up (numpy ~0.1 s, Pillow ~15 ms). Only those imports are refused,
    while openpyxl's module that asks runs: the finder steps aside once both have run, and an
    import of numpy or Pillow from anywhere else (budget.calibrate, the tests) is left alone.
    Installed by the command line only, so a program that imports trainbudget as a library
    keeps openpyxl as it always is."""

    REFUSED = {"openpyxl.compat.numbers": "numpy", "openpyxl.drawing.image": "PIL"}  # i18n: not text

    def find_spec(self, name, path=None, target=None):
        done = 0
        for asking, refused in self.REFUSED.items():
            module = sys.modules.get(asking)
            if module is None:
                continue
            if getattr(module, "__spec__", None) is not None and _initialised(module):
                done += 1
            elif name == refused:                       # asked while that module runs
                raise ModuleNotFoundError(name=name)
        if done == len(self.REFUSED):                   # both checks have run: step aside
            with contextlib.suppress(ValueError):
                sys.meta_path.remove(self)
        return None

    @classmethod
    def install(cls) -> None:
        if not any(m in sys.modules for m in ("openpyxl", *cls.REFUSED.values())) \
                and not any(isinstance(f, cls) for f in sys.meta_path):
            sys.meta_path.insert(0, cls())


def _initialised(module) -> bool:
    """Whether a module has finished running (a module still being imported is marked so)."""
    return not getattr(module.__spec__, "_initializing", False)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    _OpenpyxlWithoutNumpy.install()
    _messages_never_fail()
    # `import` is a command unless a scenario file of that name is meant.
    if argv and argv[0] == "import" and not Path("import").is_file():
        return import_main(argv[1:])
    if argv and argv[0] == "new" and not Path("new").is_file():     # issue 28: a starter scenario
        from .new import new_main
        return new_main(argv[1:])
    if argv and argv[0] == "package" and not Path("package").is_file():
        from .package import package_main
        return package_main(argv[1:])
    if argv and argv[0] == "catalog" and not Path("catalog").is_file():
        from .catalog import catalog_main
        return catalog_main(argv[1:])
    args = parser(requested_lang(argv)).parse_args(argv)
    paths = args.scenarios or [data_dir("scenarios") / BUNDLED_EXAMPLE]
    stems = [p.stem for p in paths]
    duplicates = sorted({s for s in stems if stems.count(s) > 1})
    if duplicates:
        _print_error(ScenarioError(duplicates[0], [Problem(
            "", Msg("errors.run.same_name.message"), Msg("errors.run.same_name.fix"))]), args.lang)
        return EXIT_BAD_INPUT
    try:
        catalog = load_catalog()
    except InputError as err:
        _print_error(err, args.lang)
        return EXIT_BAD_INPUT
    # Several scenarios: rendered by a pool of processes (both cores), each file spooled to a
    # private temporary folder as it is made, so a sweep holds no scenario's files in memory.
    with (tempfile.TemporaryDirectory(prefix="trainbudget-spool-") if len(paths) > 1
          else contextlib.nullcontext()) as spool, fewer_collections():
        built = build_all(paths, catalog, args.lang, Path(spool) if spool else None, args.curve)
        try:
            raise_first_failure(built, paths, catalog, args.lang)
        except InputError as err:
            _print_error(err, args.lang)
            return EXIT_BAD_INPUT
        outputs = [out for one in built for out in one.outputs]
        lang = args.lang or run_language(built)
        result = write_reporting(args.output_dir, outputs, args.force, "cli.interrupted.written", lang)
    if isinstance(result, int):
        return result
    written = result.paths
    for one in built:
        for line in one.warnings:
            print(line, file=sys.stderr)
        if not args.quiet:
            for line in one.lines:
                print(line)
    if not args.quiet:
        for path in written:
            print(fmt("cli.wrote", lang, file=path))
    if args.fail_on_checks:
        return report_failing_checks([(p.name, one.failing) for one, p in zip(built, paths)], len(built), lang)
    return EXIT_OK


@dataclass
class Built:
    """One scenario of a run, without its Plan (a worker process hands it back): its language,
    its files, the warning lines (stderr) and the headline lines (stdout) printed about it, or
    the stage that failed ("plan" or "render"; the files are then empty)."""
    lang: str
    outputs: list
    warnings: list[str]
    lines: list[str]
    failed: str | None = None
    failing: list[str] = field(default_factory=list)    # the failing checks' labels (--fail-on-checks)


def build_one(path: Path, catalog, lang: str | None, spool: Path | None = None, curve: bool = False) -> Built:
    """Plan and render one scenario; with `spool`, its files go there and are read back only
    when written into the output folder; with `curve`, its lines end with the days-against-GPUs
    curve (--curve)."""
    from ..plan.options import plan_file
    try:
        plan = plan_file(path, catalog, lang)
    except InputError:
        return Built(lang or DEFAULT_LANG, [], [], [], failed="plan")
    try:
        outputs = render(plan)
    except InputError:
        return Built(plan.lang, [], [], [], failed="render")
    if spool is not None:
        outputs = [spooled(spool, out) for out in outputs]
    warnings = [terminal_safe(fmt("cli.warning", plan.lang, file=plan.scenario_id, warning=warning))
                for warning in plan.warnings]
    lines = [_headline(plan)]
    if plan.layout is not None:
        lines.append(fmt("cli.layout", plan.lang, explanation=plan.layout.explanation))
    for title, option in plan.options:
        lines.append(terminal_safe(fmt("cli.option", plan.lang, option=title, summary=_summary(option))))
    if curve:
        lines += curve_lines(plan)
    return Built(plan.lang, outputs, warnings, lines, failing=failing_check_labels(plan))


def curve_lines(plan) -> list[str]:
    """The days-against-GPUs curve as the reports give it: its sentences, then one line per point."""
    from ..render.report import curve_context
    from ..render.words import Words

    words = Words(plan.lang)
    shown = curve_context(plan, words)
    if shown is None:
        return []
    lines = [fmt("cli.curve.sentence", plan.lang, text=s) for s in shown["sentences"]]
    if shown["points"]:
        lines.append(fmt("cli.curve.row", plan.lang, **{k: words(f"report.curve.columns.{k}")
                                                         for k in ("gpus", "layout", "days", "total", "marks")}))
    for p in shown["points"]:
        lines.append(fmt("cli.curve.row", plan.lang, gpus=p["gpus"], layout=p["layout"], days=p["days"],
                         total=p["total"], marks=p["marks"]))
    return [terminal_safe(line) for line in lines]


_POOL_JOB: dict = {}     # the catalog, language and spool a forked worker inherits


def _build_in_worker(path: Path) -> Built:
    return build_one(path, _POOL_JOB["catalog"], _POOL_JOB["lang"], _POOL_JOB["spool"], _POOL_JOB["curve"])


def workers(count: int) -> int:
    """Processes for `count` scenarios: one per usable core (a fork each), at most one per
    scenario; 1 (this process) where fork is not available."""
    if count < 2:           # one scenario: no pool, and no import of multiprocessing (~2-6 ms)
        return 1
    import multiprocessing
    import os

    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, count))


def build_all(paths: list[Path], catalog, lang: str | None, spool: Path | None, curve: bool = False) -> list[Built]:
    """Every scenario built, in the order given (the pool's order is the input's, so outputs
    and messages are the same as one process gives)."""
    n = workers(len(paths))
    if n == 1:
        return [build_one(p, catalog, lang, spool, curve) for p in paths]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    _POOL_JOB.update(catalog=catalog, lang=lang, spool=spool, curve=curve)
    try:
        with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork")) as pool:
            return list(pool.map(_build_in_worker, paths))
    finally:
        _POOL_JOB.clear()


def raise_first_failure(built: list[Built], paths: list[Path], catalog, lang: str | None) -> None:
    """The error one process would have stopped at: the first scenario that cannot be planned,
    else the first that cannot be rendered, redone here so the InputError (and its message) is
    exactly what a serial run raises."""
    from ..plan.options import plan_file
    for stage in ("plan", "render"):
        for one, path in zip(built, paths):
            if one.failed == stage:
                plan = plan_file(path, catalog, lang)
                render(plan)
                raise RuntimeError(f"{path}: failed in a worker, not here")  # i18n: not text


def spooled(spool: Path, out: Output) -> "SpooledOutput":
    file = spool / Path(out.path).name
    file.write_bytes(out.data)
    return SpooledOutput(out.path, file)


class SpooledOutput:
    """An Output whose bytes wait in a spool file until the output folder's set is written."""

    def __init__(self, path: Path, file: Path):
        self.path, self.file = path, file

    @property
    def data(self) -> bytes:
        return self.file.read_bytes()


def run_language(plans) -> str:
    """The language of a run's messages that are about no one scenario (the output folder's):
    the scenarios' language when they share one, else English."""
    langs = {plan.lang for plan in plans}
    return langs.pop() if len(langs) == 1 else DEFAULT_LANG


def _summary(plan: Plan, lang: str | None = None) -> str:
    """GPUs, accelerator, layout, days, GPU-hours, total and the ask (issue 25: the approval
    percentile of the total, and the percentile the total sits at) of one plan, in its language.
    An option's range is its own plan's (issue 29: as on the Compare sheet and the decision page)."""
    from ..plan.sensitivity import cases, range_figures
    v = plan.values
    rng = range_figures(plan, cases(plan))
    return fmt("cli.summary", lang or plan.lang, gpus=plan.gpu_count, accelerator=v["accelerator_name"],
               layout=v["layout_label"], days=plan.train_days, gpu_hours=plan.gpu_hours,
               total=plan.total_cost, currency=plan.scenario.prices.currency,
               percentile=v["approval_percentile"],
               ask=rng["total_cost_ask"], point=rng["point_percentile"])


def _headline(plan: Plan, lang: str | None = None) -> str:
    return fmt("cli.headline", lang or plan.lang, scenario=plan.scenario_id, summary=_summary(plan, lang))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
