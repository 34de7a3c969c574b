"""The Summary: the answer on one printed page (issue 29). A live title, the scenario's words as
written at generation with the inputs changed since (old -> new), the status and the first
failing checks in words, the ask, the total and its range, the recommendation, the GPUs, days
and dates, and a sign-off block; below the print area, the workings: one fixed row per check and
warning, the answers, the cost lines to the total and the ask as live formulas, the energy, the
details, and the sizing and layout decision in words."""

from __future__ import annotations

from openpyxl.styles import Font
from openpyxl.utils.cell import column_index_from_string, coordinate_from_string

from .. import __version__
from ..core.i18n import Messages

from ..formula.expr import AND, FIXED, IF, IFERROR, INDEX, ISERROR, ISNUMBER, MATCH, ROUND, Area, Cell, Expr, Num, Ref, Text
from ..model.lineitems import Item
from ..model.model import AFTER_SUBTOTAL, COST_LINES, MEMO_LINES
from ..plan.sensitivity import cases, range_figures
from .generated import generated_for, generated_lines
from .writer import (BAD_RULE_FILL, BOLD_FONT, CHECK_FONT, COVER_FONT, DATE_FORMAT, NOTE_FONT, SECTION_FONT,
                     TITLE_FONT, WARNING_FONT, WARNING_HEAD_FONT, WRAP_TOP, flag_fine, formula_rule, live_text,
                     number_format, plural_text, put_text, text_height)

# The ask (issue 25): the Sensitivity sheet's cells under the total, labelled live
# (workbook.summary.<name>): the approval percentile of the total, and where the point estimate
# and the total with the flat buffer sit in the range.
ASK_ROWS = ("total_cost_ask", "point_percentile", "buffer_percentile")
# The Summary's blocks: (id, the names it shows); the heading is workbook.summary.blocks.<id>.
SUMMARY_BLOCKS = (
    ("answer", ("accelerator_name", "gpu_count", "reserved_gpus", "layout_label", "memory_in_words",
                "train_days", "stretched_training_days", "start_date", "project_end")),
    ("cost", (*COST_LINES, "subtotal_cost", *AFTER_SUBTOTAL, "total_cost", *ASK_ROWS)),
    ("energy", ("energy_mwh", "co2_tonnes", "pue", "grid_intensity")),
    ("details", ("ownership", "price_tier", "tier_rate", "train_flops", "effective_tflops", "gpu_hours", "gpu_days",
                 "goodput", "non_training_days", "run_days", "training_start", "training_end", "project_weeks",
                 "memory_per_gpu_gb", "usable_hbm_gb", "min_gpus_for_memory")),
)
# Summary rows with a label of their own (workbook.summary.labels.<name>), not the model's.
SUMMARY_LABELS = ("accelerator_name", "gpu_count", "layout_label", "train_days", "project_end", "start_date")
# The printed page (issue 29): the range of the total (the Sensitivity sheet's cells), then these
# answers; the first PRINTED_LINES failing checks and changed inputs, each found by a running
# count in RANK_COL (outside the print area); the sign-off block's roles, rows SIGN_OFF_HEIGHT high.
RANGE_NAMES = ("total_cost_p10", "total_cost_p50", "total_cost_p90")
PRINTED_NAMES = ("gpu_count", "accelerator_name", "stretched_training_days", "start_date", "project_end")
PRINTED_LINES = 5
RANK_COL = 6
SIGN_OFF_ROLES = ("prepared", "reviewed", "approved")
SIGN_OFF_HEIGHT = 30
# Narrow enough that the portrait page prints at 80% or more where LibreOffice sets Calibri in a
# wider font (tests/test_print.py measures the printed page)
SUMMARY_WIDTHS = (44, 18, 10, 20)


def write_summary(w) -> None:
    """The answer on one printed page (issue 29): a live title over the inputs; the scenario's
    own words flagged by the inputs changed since generation, listed old -> new; the status and
    the first failing checks in words (only those that fail); the ask, the total and its range,
    the GPUs, days and dates, the recommendation; a sign-off block. The print area ends there
    (one page, fit to it). Below it, the workings: one fixed row per check and warning, the
    answers, the cost lines to the total, the energy, the details and the sentences only
    generation could write."""
    ws, m = w.wb["Summary"], w.m
    s = w.plan.scenario
    w.widths(ws, list(SUMMARY_WIDTHS))
    master = Ref("master_check")
    gpus = Ref("gpu_count")
    title = live_text(m("workbook.summary.title"), gpus=IF(ISNUMBER(gpus), FIXED(gpus, 0), gpus),
                      accelerator=Ref("accelerator_name"))
    cell = w.live(ws, 1, 1, title)
    w.named(cell, "Normal")
    cell.font = COVER_FONT
    written = m("workbook.summary.as_written", name=s.name)
    if s.description:
        written = f"{written}. {s.description}"     # i18n: not text (the two, joined)
    put_text(ws.cell(2, 1), written)
    ws.cell(2, 1).alignment = WRAP_TOP
    ws.cell(2, 1).font = NOTE_FONT
    ws.merge_cells("A2:D2")
    ws.row_dimensions[2].height = text_height(written, sum(SUMMARY_WIDTHS))
    version = m("workbook.summary.version", version=__version__, scenario=w.plan.scenario_id, digest=w.digest)
    put_text(ws.cell(3, 1), version)
    ws.cell(3, 1).font = NOTE_FONT
    ws.cell(3, 1).alignment = WRAP_TOP
    ws.merge_cells("A3:D3")
    ws.row_dimensions[3].height = text_height(version, sum(SUMMARY_WIDTHS))
    status = IF(ISERROR(master), m("workbook.summary.status.cannot"),
                IF(master.eq(0), m("workbook.summary.status.pass"),
                   plural_text(master, m("workbook.summary.status.fail.one"),
                               m("workbook.summary.status.fail.other"))))
    cell = w.live(ws, 5, 1, status)
    w.named(cell, "Normal")
    cell.font = TITLE_FONT
    w.shade_by_flag(ws, "A5:D5", master)
    # The printed page: the status, the warnings' and the changed inputs' counts, the answer and
    # the sign-off; then, at its foot, the failing checks and the changed inputs in words, in
    # rows kept for them (a sheet cannot add rows as they fail), so that when none fails and
    # nothing changed the page ends at the sign-off instead of showing blank rows inside it.
    warnings_line, changed_head, answer = 6, 7, 9
    last = printed_answer(w, ws, answer, master)
    last = sign_off(w, ws, last + 2)
    first_failing = last + 2
    changed_lines = first_failing + PRINTED_LINES + 1
    last = changed_lines + PRINTED_LINES
    ws.print_area = f"A1:D{last}"
    put_text(ws.cell(last + 2, 1), m("workbook.summary.workings"))
    ws.cell(last + 2, 1).font = SECTION_FONT
    row = summary_row(w, ws, last + 3, "master_check", m("workbook.summary.checks_failing"))
    checks_from = row
    for check in w.model.checks():
        flag_line(w, ws, row, check, CHECK_FONT)
        row += 1
    kth_lines(w, ws, first_failing, checks_from, row - 1, CHECK_FONT, m("workbook.summary.checks_more"), master)
    count = Ref("warning_count")
    line = IF(ISERROR(count), m("workbook.summary.warnings.cannot"),
              IF(count.eq(0), m("workbook.summary.warnings.none"),
                 plural_text(count, m("workbook.summary.warnings.some.one"),
                             m("workbook.summary.warnings.some.other"))))
    top = w.live(ws, warnings_line, 1,
                 IF(ISERROR(count), line, IF(count.eq(0), line,
                                             line.concat(". ").concat(m("workbook.summary.warnings.where")))))
    w.named(top, "Normal")
    top.font = WARNING_HEAD_FONT
    cell = w.live(ws, row + 1, 1, line)
    w.named(cell, "Normal")
    cell.font = WARNING_HEAD_FONT
    row = summary_row(w, ws, row + 2, "warning_count", m("workbook.summary.warnings.heading"))
    for warning in w.model.warnings():
        flag_line(w, ws, row, warning, WARNING_FONT)
        row += 1
    changed_inputs(w, ws, changed_head, changed_lines)
    for block, names in SUMMARY_BLOCKS:
        row += 1
        ws.cell(row, 1, m(f"workbook.summary.blocks.{block}")).font = SECTION_FONT
        w.header(ws, row + 1, ["", m("workbook.columns.value"), m("workbook.columns.unit")])
        row += 2
        for name in names:
            if name == "memory_in_words":
                put_text(ws.cell(row, 1), m("workbook.summary.labels.memory_in_words"))
                w.live(ws, row, 2, memory_in_words(m))
                w.shade_by_flag(ws, f"A{row}:C{row}", Ref("check_memory_fits"))
                row += 1
                continue
            if name == "total_cost":    # the label says "indicative" while checks fail
                row = total_row(w, ws, row, master)
                continue
            if name in ASK_ROWS:
                row = ask_row(w, ws, row, name, master)
                continue
            label = m(f"workbook.summary.labels.{name}") if name in SUMMARY_LABELS else None
            row = summary_row(w, ws, row, name, label)
        if block == "cost":
            row += 1
            ws.cell(row, 1, m("workbook.memo_heading")).font = SECTION_FONT
            row += 1
            for name in MEMO_LINES:
                row = summary_row(w, ws, row, name, None)
                ws.cell(row - 1, 1).font = NOTE_FONT
    layout_reasoning(w, ws, row + 1)
    w.page_setup(ws, "1:1")
    ws.page_setup.fitToHeight = 1       # the printed page is one page: fit to it


def total_row(w, ws, row: int, master: Expr) -> int:
    """The total, its label "indicative" while checks fail; returns the next row."""
    m = w.m
    indicative = m("workbook.summary.total_indicative")
    label = w.live(ws, row, 1, IF(ISERROR(master), indicative,
                                  IF(master.eq(0), m("workbook.summary.total"), indicative)))
    w.named(label, "Normal")
    label.font = BOLD_FONT
    row = summary_row(w, ws, row, "total_cost", None)
    ws.cell(row - 1, 2).font = BOLD_FONT
    return row


def printed_answer(w, ws, row: int, master: Expr) -> int:
    """The printed page's answer: the ask at its percentile, the total and its range, the
    recommendation (with options), the GPUs, the accelerator, the days and the dates. Returns
    the last row written."""
    m = w.m
    ws.cell(row, 1, m("workbook.summary.blocks.printed")).font = SECTION_FONT
    w.header(ws, row + 1, ["", m("workbook.columns.value"), m("workbook.columns.unit")])
    row = ask_row(w, ws, row + 2, "total_cost_ask", master)
    row = total_row(w, ws, row, master)
    rng = range_figures(w.plan, cases(w.plan))
    for name in RANGE_NAMES:
        put_text(ws.cell(row, 1), m(f"workbook.summary.labels.{name}"))
        w.formula(ws, row, 2, Ref(name), rng[name], number_format("currency"))
        w.unit_cell(ws, row, 3, "currency")
        row += 1
    if "compare_recommendation" in w.result.names:
        put_text(ws.cell(row, 1), m("workbook.summary.labels.recommended"))
        sheet, coord = w.result.names["compare_recommendation"].split("!")
        cell = w.formula(ws, row, 2, Ref("compare_recommendation"), w.cached[sheet][_rc(coord)], None)
        cell.font = BOLD_FONT
        row += 1
    for name in PRINTED_NAMES:
        label = m(f"workbook.summary.labels.{name}") if name in (*SUMMARY_LABELS, "stretched_training_days") else None
        row = summary_row(w, ws, row, name, label)
    if w.plan.values.get("deadline_date") is not None:
        row = deadline_rows(w, ws, row)
    return row - 1


def deadline_rows(w, ws, row: int) -> int:
    """A plan with a deadline date: the date, and the end it applies to at the approval
    percentile of the training days, shaded red while check_meets_deadline_date fails; returns
    the next row."""
    m = w.m
    row = summary_row(w, ws, row, "deadline_date", m("workbook.summary.labels.deadline_date"))
    pct = Ref("approval_percentile")
    label = IF(Ref("deadline_applies_to").eq("project_end"),
               live_text(m("workbook.summary.labels.deadline_end_project"), percentile=pct),
               live_text(m("workbook.summary.labels.deadline_end_training"), percentile=pct))
    w.named(w.live(ws, row, 1, label), "Normal")
    w.shade_by_flag(ws, f"A{row}:C{row}", Ref("check_meets_deadline_date"), green=False)
    return summary_row(w, ws, row, "deadline_end_at_approval", None)


def sign_off(w, ws, row: int) -> int:
    """Prepared, reviewed and approved by: name, date and signature in blank input cells.
    Returns the last row written."""
    m = w.m
    ws.cell(row, 1, m("workbook.summary.blocks.signoff")).font = SECTION_FONT
    w.header(ws, row + 1, [m(f"workbook.summary.signoff.{k}") for k in ("role", "name", "date", "signature")])
    row += 1
    for role in SIGN_OFF_ROLES:
        row += 1
        put_text(ws.cell(row, 1), m(f"workbook.summary.signoff.{role}"))
        ws.cell(row, 1).font = BOLD_FONT
        for col in (2, 3, 4):
            w.styled(ws.cell(row, col), "Input", DATE_FORMAT if col == 3 else None)
        ws.row_dimensions[row].height = SIGN_OFF_HEIGHT
    return row


def kth_lines(w, ws, top: int, first: int, last: int, font: Font, template: str, count: Expr) -> None:
    """PRINTED_LINES rows from `top`: the k-th non-blank line of column A's rows first..last
    (each row's running count of non-blank lines in RANK_COL finds it), blank when there are
    fewer; then a line saying how many more there are (`template`, its {count} live), blank
    when none."""
    before = None
    values = []
    for r in range(first, last + 1):
        here = IF(Cell(r, 1).eq(""), 0, 1)
        text = w.cached[ws.title].get((r, 1), "")
        values.append(text)
        cell = w.formula(ws, r, RANK_COL, here if before is None else here + Cell(r - 1, RANK_COL),
                         sum(1 for v in values if v != ""), "0")
        cell.font = NOTE_FONT
        before = r
    shown = [v for v in values if v != ""]
    lines = Area(Cell(first, 1, True, True), Cell(last, 1, True, True))
    ranks = Area(Cell(first, RANK_COL, True, True), Cell(last, RANK_COL, True, True))
    for k in range(PRINTED_LINES):
        r = top + k
        rank = w.formula(ws, r, RANK_COL, Num(1) if k == 0 else Cell(r - 1, RANK_COL) + 1, k + 1, "0")
        rank.font = NOTE_FONT
        at = MATCH(Cell(r, RANK_COL), ranks)
        cell = w.formula(ws, r, 1, IFERROR(INDEX(lines, at), ""), shown[k] if k < len(shown) else "", None)
        w.named(cell, "Normal")
        cell.font = font
    extra = count - Cell(top + PRINTED_LINES - 1, RANK_COL)
    more = live_text(template, count=extra)
    over = int(w.value_of(count)) - PRINTED_LINES if not isinstance(w.value_of(count), str) else 0
    cell = w.formula(ws, top + PRINTED_LINES, 1, IF(ISERROR(extra), "", IF(extra > 0, more, "")),
                     template.format(count=over) if over > 0 else "", None)
    w.named(cell, "Normal")
    cell.font = font


def changed_inputs(w, ws, top: int, lines_top: int) -> None:
    """How many inputs differ from their value at generation (row `top`), and the first
    PRINTED_LINES of them from row `lines_top`, label: old -> new, live over the Inputs sheet's
    columns A, B, G and H (its running count); at generation none has."""
    m = w.m
    if w.changed_rows is None:
        return
    first, last = w.changed_rows
    count = Cell(last, 8, True, True, sheet="Inputs")
    head = IF(ISERROR(count), m("workbook.summary.changed.cannot"),
              IF(count.eq(0), m("workbook.summary.changed.none"),
                 plural_text(count, m("workbook.summary.changed.some.one"), m("workbook.summary.changed.some.other"))))
    cell = w.formula(ws, top, 1, head, m("workbook.summary.changed.none"), None)
    w.named(cell, "Normal")
    cell.font = WARNING_HEAD_FONT
    changed = AND(ISNUMBER(count), count > 0)
    ws.conditional_formatting.add(f"A{top}:D{top}", formula_rule(changed, BAD_RULE_FILL))
    column = lambda c: Area(Cell(first, c, True, True, sheet="Inputs"), Cell(last, c, True, True, sheet="Inputs"))  # noqa: E731
    for k in range(PRINTED_LINES):
        r = lines_top + k
        rank = w.formula(ws, r, RANK_COL, Num(1) if k == 0 else Cell(r - 1, RANK_COL) + 1, k + 1, "0")
        rank.font = NOTE_FONT
        at = MATCH(Cell(r, RANK_COL), column(8))
        line = live_text(m("workbook.summary.changed.line"), label=INDEX(column(1), at), old=INDEX(column(7), at),
                         new=INDEX(column(2), at))
        cell = w.formula(ws, r, 1, IFERROR(line, ""), "", None)
        w.named(cell, "Normal")
        cell.font = WARNING_FONT
    extra = count - Cell(lines_top + PRINTED_LINES - 1, RANK_COL)
    more = live_text(m("workbook.summary.changed.more"), count=extra)
    cell = w.formula(ws, lines_top + PRINTED_LINES, 1, IF(ISERROR(extra), "", IF(extra > 0, more, "")), "", None)
    w.named(cell, "Normal")
    cell.font = WARNING_FONT


def _rc(coord: str) -> tuple[int, int]:
    letters, row = coordinate_from_string(coord)
    return row, column_index_from_string(letters)


def ask_row(w, ws, row: int, name: str, master: Expr) -> int:
    """One of ASK_ROWS: a live label (the percentile asked, the buffer's rate) and the
    Sensitivity sheet's cell of that name; returns the next row."""
    m = w.m
    rng = range_figures(w.plan, cases(w.plan))
    figures = {"percentile": Ref("approval_percentile"), "rate": ROUND(Ref("buffer_rate") * 100, 1)}
    text = live_text(m(f"workbook.summary.{name}"), **figures)
    if name == "total_cost_ask":       # indicative while checks fail, as the total
        text = IF(flag_fine(master), text,
                  live_text(m("workbook.summary.total_cost_ask_indicative"), **figures))
    label = w.live(ws, row, 1, text)
    w.named(label, "Normal")
    money = name == "total_cost_ask"
    cell = w.formula(ws, row, 2, Ref(name), rng[name], number_format("currency") if money else '"P"0')
    if money:
        w.unit_cell(ws, row, 3, "currency")
        label.font = cell.font = BOLD_FONT
    return row + 1


def summary_row(w, ws, row: int, name: str, label: str | None) -> int:
    """label | =name | unit; returns the next row."""
    item = w.model.items.get(name) or w.model.inputs[name]
    if label is not None or ws.cell(row, 1).value is None:
        put_text(ws.cell(row, 1), label or item.label)
    cell = w.formula(ws, row, 2, Ref(name), w.plan.values[name], number_format(item.unit))
    if item.unit not in ("checks", "date"):
        w.unit_cell(ws, row, 3, item.unit)
    if getattr(item, "is_flag", False) or name in ("master_check", "warning_count"):
        w.flag_format(ws, cell.coordinate, getattr(item, "kind", "") == "warning"
                         or name == "warning_count")
    if name == "master_check":
        ws.cell(row, 1).font = BOLD_FONT
        cell.font = BOLD_FONT
    return row + 1


def flag_line(w, ws, row: int, item: Item, font: Font) -> None:
    """One fixed row per check or warning: blank when it passes, the failure in words (live
    over the cells) when not, and "cannot be computed" when its cells hold an error."""
    flag = Ref(item.name)
    detail = item.detail if item.detail is not None else Text(item.label)
    cannot = Text(w.m("workbook.summary.cannot_compute", label=item.label))
    cell = w.live(ws, row, 1, IF(ISERROR(flag), cannot,
                                    IF(flag.eq(0), "", IFERROR(detail, cannot))))
    w.named(cell, "Normal")
    cell.font = font


def layout_reasoning(w, ws, row: int) -> int:
    """The sizing and layout decision in words: only generation can write it, so it sits
    under "Generated for these inputs" with its live warning line."""
    layout = w.plan.layout
    if layout is None:
        return row
    return generated_for(w, ws, row, generated_lines(w), 4) + 2


def memory_in_words(m: Messages) -> Expr:
    """The memory verdict in words, live: "89.1 GB needed of 72 GB usable: does NOT fit"."""
    mem, usable, fits = Ref("memory_per_gpu_gb"), Ref("usable_hbm_gb"), Ref("check_memory_fits")
    verdict = IF(fits.eq(0), m("workbook.summary.memory.fits"), m("workbook.summary.memory.does_not_fit"))
    return IF(ISERROR(mem - usable + fits), m("workbook.summary.memory.cannot"),
              live_text(m("workbook.summary.memory.words"), needed=ROUND(mem, 1), usable=ROUND(usable, 1),
                        verdict=verdict))
