"""The Summary: what a CFO reads in 30 seconds, on one page. The status and, one fixed row per
check and warning, what fails in words; the answers, the cost lines to the total and the ask
as live formulas; the energy; the details; and the sizing and layout decision in words."""

from __future__ import annotations

from openpyxl.formatting.rule import FormulaRule
from openpyxl.styles import Font

from .. import __version__
from ..core.i18n import Messages
from ..formula.expr import AND, IF, ISERROR, ISNUMBER, NOT, ROUND, Expr, Ref, Text
from ..model.lineitems import Item
from ..model.model import AFTER_SUBTOTAL, COST_LINES, MEMO_LINES
from ..plan.sensitivity import cases, range_figures
from .generated import generated_for, generated_lines
from .writer import (BAD_RULE_FILL, BOLD_FONT, CHECK_FONT, COVER_FONT, NOTE_FONT, OK_RULE_FILL, SECTION_FONT,
                     TITLE_FONT, WARNING_FONT, WARNING_HEAD_FONT, WRAP_TOP, excel, has_wide, line_height,
                     live_text, number_format, plural_text, put_text, wrapped_lines)

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


def write_summary(w) -> None:
    """What a CFO reads in 30 seconds: the status and, one fixed row per check and warning,
    what fails in words (blank when it passes: no TEXTJOIN in Excel 2016); the answers as live
    formulas; the cost lines to the total (labelled indicative while checks fail); the memo
    lines not in the total; and the sentences only generation could write, under their own
    heading with a warning that turns on when the inputs move."""
    ws, m = w.wb["Summary"], w.m
    s = w.plan.scenario
    w.widths(ws, [46, 20, 16, 24])
    put_text(ws.cell(1, 1), s.name)
    ws.cell(1, 1).font = COVER_FONT
    if s.description:
        put_text(ws.cell(2, 1), s.description)
        ws.cell(2, 1).alignment = WRAP_TOP
        ws.merge_cells("A2:D2")
        ws.row_dimensions[2].height = (line_height(True) * wrapped_lines(s.description, 120 / 1.1)
                                       if has_wide(s.description)
                                       else 15 * (1 + int(len(s.description) * 1.1 // 120)))
    put_text(ws.cell(3, 1), m("workbook.summary.version", version=__version__,
                              scenario=w.plan.scenario_id, digest=w.digest))
    ws.cell(3, 1).font = NOTE_FONT
    master = Ref("master_check")
    status = IF(ISERROR(master), m("workbook.summary.status.cannot"),
                IF(master.eq(0), m("workbook.summary.status.pass"),
                   plural_text(master, m("workbook.summary.status.fail.one"),
                               m("workbook.summary.status.fail.other"))))
    cell = w.live(ws, 5, 1, status)
    w.named(cell, "Normal")
    cell.font = TITLE_FONT
    fine = AND(ISNUMBER(master), master.eq(0))
    ws.conditional_formatting.add("A5:D5", FormulaRule(formula=[excel(fine)], fill=OK_RULE_FILL))
    ws.conditional_formatting.add("A5:D5", FormulaRule(formula=[excel(NOT(fine))], fill=BAD_RULE_FILL))
    row = summary_row(w, ws, 6, "master_check", m("workbook.summary.checks_failing"))
    for check in w.model.checks():
        flag_line(w, ws, row, check, CHECK_FONT)
        row += 1
    count = Ref("warning_count")
    line = IF(ISERROR(count), m("workbook.summary.warnings.cannot"),
              IF(count.eq(0), m("workbook.summary.warnings.none"),
                 plural_text(count, m("workbook.summary.warnings.some.one"),
                             m("workbook.summary.warnings.some.other"))))
    cell = w.live(ws, row + 1, 1, line)
    w.named(cell, "Normal")
    cell.font = WARNING_HEAD_FONT
    row = summary_row(w, ws, row + 2, "warning_count", m("workbook.summary.warnings.heading"))
    for warning in w.model.warnings():
        flag_line(w, ws, row, warning, WARNING_FONT)
        row += 1
    for block, names in SUMMARY_BLOCKS:
        row += 1
        ws.cell(row, 1, m(f"workbook.summary.blocks.{block}")).font = SECTION_FONT
        w.header(ws, row + 1, ["", m("workbook.columns.value"), m("workbook.columns.unit")])
        row += 2
        for name in names:
            if name == "memory_in_words":
                put_text(ws.cell(row, 1), m("workbook.summary.labels.memory_in_words"))
                w.live(ws, row, 2, memory_in_words(m))
                fits = Ref("check_memory_fits")
                fine = AND(ISNUMBER(fits), fits.eq(0))
                ws.conditional_formatting.add(f"A{row}:C{row}", FormulaRule(formula=[excel(fine)],
                                                                              fill=OK_RULE_FILL))
                ws.conditional_formatting.add(f"A{row}:C{row}", FormulaRule(formula=[excel(NOT(fine))],
                                                                              fill=BAD_RULE_FILL))
                row += 1
                continue
            if name == "total_cost":    # the label says "indicative" while checks fail
                indicative = m("workbook.summary.total_indicative")
                label = w.live(ws, row, 1, IF(ISERROR(master), indicative,
                                                 IF(master.eq(0), m("workbook.summary.total"), indicative)))
                w.named(label, "Normal")
                label.font = BOLD_FONT
                row = summary_row(w, ws, row, name, None)
                ws.cell(row - 1, 2).font = BOLD_FONT
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


def ask_row(w, ws, row: int, name: str, master: Expr) -> int:
    """One of ASK_ROWS: a live label (the percentile asked, the buffer's rate) and the
    Sensitivity sheet's cell of that name; returns the next row."""
    m = w.m
    rng = range_figures(w.plan, cases(w.plan))
    figures = {"percentile": Ref("approval_percentile"), "rate": ROUND(Ref("buffer_rate") * 100, 1)}
    text = live_text(m(f"workbook.summary.{name}"), **figures)
    if name == "total_cost_ask":       # indicative while checks fail, as the total
        text = IF(AND(ISNUMBER(master), master.eq(0)), text,
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
                                    IF(flag.eq(0), "", IF(ISERROR(detail), cannot, detail))))
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
