"""`trainbudget catalog accelerators|prices|presets`: the ids a scenario can name, with their key
figures and sources, as an aligned text table (or `--format json`) on stdout.

    trainbudget catalog accelerators     hardware.accelerator: HBM, peak dense BF16 and FP8, TDP
    trainbudget catalog prices           prices.catalog: accelerator, price per GPU-hour, tier, as of
    trainbudget catalog presets          model.preset: parameters, layers, hidden size, heads, sequence

Every word of the headings comes from the message catalogs (cli.catalog.*); every text cell from a
catalog file goes through terminal_safe, so nothing in catalogs/*.yaml reaches the terminal as an
escape sequence. A kind that is not one of the three exits 2 with one message.
"""

from __future__ import annotations

import argparse
import json
import sys
import unicodedata

from ..core.errors import InputError, Msg, Problem
from ..core.i18n import DEFAULT_LANG, fmt
from ..inputs.catalog import Catalog, load_catalog
from .common import EXIT_BAD_INPUT, EXIT_OK, _help, _print_error, add_lang_argument, requested_lang, terminal_safe

KINDS = ("accelerators", "prices", "presets")
FORMATS = ("text", "json")


def parser(lang: str = DEFAULT_LANG) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="trainbudget catalog",  # i18n: not text (the command)
                                description=_help("cli.catalog.description", lang),
                                epilog=_help("cli.catalog.epilog", lang))
    # No `choices=`: argparse's own refusal is English and lists nothing useful; a bad kind is
    # refused below with one message in the run's language.
    p.add_argument("kind", metavar="|".join(KINDS), help=_help("cli.catalog.kind", lang))
    p.add_argument("--format", choices=FORMATS, default="text", help=_help("cli.catalog.format", lang))
    add_lang_argument(p, lang, "cli.catalog.lang")
    return p


def _number(value: float | None, decimals: int | None = None) -> str:
    if value is None:
        return ""
    if decimals is not None:
        return f"{value:,.{decimals}f}"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,}"


def _value(fig):
    return None if fig is None else fig.value


def _sources(*figures) -> str:
    keys = []
    for fig in figures:
        if fig is not None and fig.source not in keys:
            keys.append(fig.source)
    return ", ".join(keys)      # i18n: not text


def rows(kind: str, catalog: Catalog) -> list[dict]:
    """The rows of one kind: each a mapping of column id to a value (a number, text or None)."""
    if kind == "accelerators":
        return [{"id": a.id, "name": a.name, "hbm_gb": a.hbm_gb.value,
                 "peak_bf16_tflops": a.peak_bf16_tflops.value, "peak_fp8_tflops": _value(a.peak_fp8_tflops),
                 "tdp_w": _value(a.tdp_w),
                 "source": _sources(a.peak_bf16_tflops, a.hbm_gb, a.peak_fp8_tflops, a.tdp_w)}
                for a in catalog.accelerators]
    if kind == "prices":
        out = []
        for r in (catalog.prices.rental if catalog.prices is not None else ()):
            fig = r.per_gpu_hour
            out.append({"id": r.id, "accelerator": r.accelerator, "per_gpu_hour": fig.value,
                        "currency": fig.currency, "tier": r.tier,
                        "as_of": fig.as_of.isoformat() if fig.as_of else None, "source": fig.source})
        return out
    return [{"id": m.id, "name": m.name, "params": m.params, "active_params": m.active_params,
             "layers": m.layers, "hidden_size": m.hidden_size, "attention_heads": m.attention_heads,
             "seq_len": m.seq_len, "as_of": m.as_of.isoformat(), "source": m.source}
            for m in catalog.models]


# The columns of each kind, in order: (column id, right-aligned, how a value is shown).
def _params(value: float | None) -> str:
    if value is None:
        return ""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M")):      # i18n: not text (count suffixes)
        if value >= scale:
            return f"{value / scale:,.4g}{suffix}"
    return f"{value:,.0f}"


COLUMNS = {
    "accelerators": [("id", False, str), ("name", False, str), ("hbm_gb", True, _number),
                     ("peak_bf16_tflops", True, _number), ("peak_fp8_tflops", True, _number),
                     ("tdp_w", True, _number), ("source", False, str)],
    "prices": [("id", False, str), ("accelerator", False, str),
               ("per_gpu_hour", True, lambda v: _number(v, 2)), ("currency", False, str),
               ("tier", False, str), ("as_of", False, lambda v: v or ""), ("source", False, str)],
    "presets": [("id", False, str), ("name", False, str), ("params", True, _params),
                ("active_params", True, _params), ("layers", True, _number), ("hidden_size", True, _number),
                ("attention_heads", True, _number), ("seq_len", True, _number), ("as_of", False, str),
                ("source", False, str)],
}


def width(text: str) -> int:
    """Columns a terminal gives `text`: two for a wide (CJK) character."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _pad(text: str, size: int, right: bool) -> str:
    gap = " " * (size - width(text))
    return gap + text if right else text + gap


def table(kind: str, catalog: Catalog, lang: str) -> str:
    """The aligned table: a heading line, a rule, a line per row; the last column is not padded."""
    columns = COLUMNS[kind]
    head = [fmt(f"cli.catalog.columns.{kind}.{name}", lang) for name, _, _ in columns]
    body = [[terminal_safe(show(row[name])) for name, _, show in columns] for row in rows(kind, catalog)]
    sizes = [max(width(cell) for cell in column) for column in zip(head, *body)]
    lines = []
    for cells in (head, ["-" * s for s in sizes], *body):
        padded = [_pad(c, s, right) if i < len(cells) - 1 else c
                  for i, (c, s, (_, right, _)) in enumerate(zip(cells, sizes, columns))]
        lines.append("  ".join(padded).rstrip())
    lines.append(fmt(f"cli.catalog.footer.{kind}", lang, count=len(body)))
    return "\n".join(lines) + "\n"


def catalog_main(argv: list[str]) -> int:
    args = parser(requested_lang(argv)).parse_args(argv)
    lang = args.lang or DEFAULT_LANG
    if args.kind not in KINDS:
        _print_error(InputError("catalog", [Problem(  # i18n: not text (the command's name)
            "", Msg("errors.run.catalog_kind.message", kind=repr(args.kind)),
            Msg("errors.run.catalog_kind.fix", kinds=", ".join(KINDS)))]), lang)
        return EXIT_BAD_INPUT
    try:
        catalog = load_catalog()
    except InputError as err:
        _print_error(err, lang)
        return EXIT_BAD_INPUT
    if args.format == "json":
        text = json.dumps(rows(args.kind, catalog), ensure_ascii=True, indent=1) + "\n"
    else:
        text = table(args.kind, catalog, lang)
    sys.stdout.write(text)
    return EXIT_OK

