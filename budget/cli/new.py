"""`trainbudget new --job MODE [-o FILE]` (issue 28): a commented starter scenario for a job mode.

The scenario's keys and values are the schema's; every comment and the scenario's name come from
the message catalogs (cli.new.*), in the language --lang asks for (the file then names it, so its
workbook is in that language too). Each starter loads and plans as written; the figures in it are
the bundled scenarios' sourced ones (a Llama 3 8B shape, the H100 median rental price), each with
a comment saying what to replace. An existing file is never replaced: exit 2, nothing written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from ..core.errors import InputError, Msg, Problem
from ..core.i18n import DEFAULT_LANG, fmt
from ..inputs.catalog import data_dir
from ..inputs.scenario_schema import SCHEMA_DIR, file_name
from .common import EXIT_BAD_INPUT, EXIT_OK, _help, _print_error, add_lang_argument, requested_lang, write_one_file

JOBS = ("pretraining", "continued_pretraining", "sft", "lora")

# Each mode's starter: (section, key, value, comment key or None), in the file's order. The
# figures: Llama 3 8B (catalogs/models.yaml), H100 at the aimultiple median $2.95 a GPU-hour and S3
# storage (as the bundled scenarios), the Tulu 3 SFT mixture's size (scenarios/llama3-8b-sft-h100.yaml).
_COMMON_TAIL = (
    ("model", "preset", "llama3-8b", "model"),
    ("model", "seq_len", 4096, "seq_len"),
    ("model", "dropout", False, None),
    ("hardware", "accelerator", "nvidia_h100_sxm", "accelerator"),
)
_PRICES = (
    ("prices", "currency", "USD", None),
    ("prices", "per_gpu_hour", 2.95, "per_gpu_hour"),
    ("prices", "storage_per_gb_month", 0.023, None),
    ("prices", "network", "included", None),
)
STARTERS: dict[str, tuple] = {
    "pretraining": (
        ("job", "mode", "pretraining", "mode"),
        *_COMMON_TAIL,
        ("data", "train_tokens", "1T", "train_tokens"),
        ("hardware", "gpu_count", 256, "gpu_count"),
        *_PRICES),
    "continued_pretraining": (
        ("job", "mode", "continued_pretraining", "mode"),
        *_COMMON_TAIL,
        ("data", "train_tokens", "100B", "train_tokens"),
        ("hardware", "gpu_count", 64, "gpu_count"),
        *_PRICES),
    "sft": (
        ("job", "mode", "sft", "mode"),
        ("job", "dataset_tokens", "0.94B", "dataset_tokens"),
        ("job", "epochs", 2, "epochs"),
        *_COMMON_TAIL,
        ("hardware", "gpu_count", 8, "gpu_count"),
        *_PRICES),
    "lora": (
        ("job", "mode", "lora", "mode"),
        ("job", "dataset_tokens", "0.94B", "dataset_tokens"),
        ("job", "epochs", 2, "epochs"),
        ("job", "lora_rank", 16, "lora_rank"),
        ("job", "lora_targets", "attention_qv", "lora_targets"),
        ("job", "base_weights", "bf16", "base_weights"),
        *_COMMON_TAIL,
        ("hardware", "gpu_count", 8, "gpu_count"),
        *_PRICES),
}


def _scalar(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)      # a JSON string is a YAML string


def _comment(text: str, indent: str = "") -> list[str]:
    return [f"{indent}# {line}".rstrip() for line in text.splitlines()]


def schema_reference(lang: str, written_to: Path | None) -> str:
    """The first line an editor's YAML language server reads: the published JSON Schema of the
    scenario in `lang`, relative to the folder the starter is written to (absolute when printed)."""
    schema = data_dir(SCHEMA_DIR).resolve() / file_name(lang)
    if written_to is not None:
        try:
            schema = Path(os.path.relpath(schema, Path(written_to).resolve().parent))
        except ValueError:        # another drive (Windows): the absolute path
            pass
    return f"# yaml-language-server: $schema={schema.as_posix()}"  # i18n: not text (an editor directive)


def starter(job: str, lang: str = DEFAULT_LANG, written_to: Path | None = None) -> str:
    """The commented starter scenario for `job`, in `lang` (its schema named relative to `written_to`)."""
    m = lambda key, **kw: fmt(f"cli.new.{key}", lang, **kw)     # noqa: E731
    lines = [schema_reference(lang, written_to), *_comment(m("header", mode=job)), *_comment(m(f"modes.{job}")), ""]
    lines.append(f"name: {_scalar(m('name', mode=job))}")  # i18n: not text (schema keys)
    lines.append(f"language: {lang}")  # i18n: not text
    sections: dict[str, list] = {}
    for section, key, value, note in STARTERS[job]:
        sections.setdefault(section, []).append((key, value, note))
    for section, rows in sections.items():
        lines += ["", *_comment(m(f"sections.{section}")), f"{section}:"]
        for key, value, note in rows:
            if note is not None:
                lines += _comment(m(f"notes.{note}"), "  ")
            lines.append(f"  {key}: {_scalar(value)}")
    lines += ["", *_comment(m("footer"))]
    return "\n".join(lines) + "\n"


def new_parser(lang: str = DEFAULT_LANG) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(  # i18n: not text (the program's name)
        prog="trainbudget new", description=_help("cli.new.description", lang))
    p.add_argument("--job", choices=JOBS, default="pretraining", metavar="MODE",
                   help=_help("cli.new.job", lang, modes=", ".join(JOBS)))
    p.add_argument("-o", "--output", type=Path, metavar="FILE", help=_help("cli.new.output", lang))
    add_lang_argument(p, lang, "cli.new.lang")
    return p


def new_main(argv: list[str]) -> int:
    args = new_parser(requested_lang(argv)).parse_args(argv)
    lang = args.lang or DEFAULT_LANG
    text = starter(args.job, lang, args.output)
    if args.output is None:
        sys.stdout.write(text)
        return EXIT_OK
    if os.path.lexists(args.output):
        _print_error(InputError(args.output, [Problem("", Msg("errors.new.exists.message"),
                                                      Msg("errors.new.exists.fix"))]), lang)
        return EXIT_BAD_INPUT
    def write() -> None:
        with open(args.output, "x", encoding="utf-8", newline="\n") as f:
            f.write(text)
    return write_one_file(args.output, write, "new", lang)
