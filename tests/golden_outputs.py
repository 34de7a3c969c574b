#!/usr/bin/env python3
"""Golden outputs: every part of what the tool writes, held to committed digests.

    python tests/golden_outputs.py            build and compare; exit 1 with a diff on a change
    python tests/golden_outputs.py --update   build and record the new digests

What is built (in one temporary folder, by the command line a user runs):
- every bundled scenario, in English and in Chinese (workbook, Markdown, HTML);
- a fixed sample of sweep scenarios (varied models, accelerators, GPU counts, prices);
- the approval package of the bundled options example (workbooks, reports, plan.json, schema,
  index.html, SHA256SUMS).

Each output is split into parts: a workbook into its zip entries (XML canonicalised with C14N,
so that only content counts, not attribute order or the serialiser's quoting), any other file as
it is. Each part's SHA-256 is compared with `tests/golden/outputs.json`. A part that changed is
printed as a unified diff against its recorded text, when this machine has seen it (every
passing or updating run keeps the parts' texts in a local store, outside the repository);
otherwise by name and digest, with the new text's first lines.

A commit that changes a digest says so and why: `--update` rewrites the file, and `git diff
tests/golden/outputs.json` shows which parts moved.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from xml.etree.ElementTree import canonicalize

import yaml

ROOT = Path(__file__).resolve().parent.parent
DIGESTS = ROOT / "tests" / "golden" / "outputs.json"
STORE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "trainbudget-golden"

# The sweep sample: (preset, tokens, accelerator, GPUs, price per GPU-hour, headcount).
SWEEP = (
    ("llama3-8b", "1T", "nvidia_h100_sxm", 16, 1.5, 1),
    ("gpt3-6.7b", "0.3T", "nvidia_a100_80gb_sxm", 32, 1.55, 2),
    ("llama2-70b", "2T", "nvidia_h800_sxm", 512, 1.6, 3),
    ("llama3-70b", "5T", "nvidia_h200_sxm", 1024, 1.65, 4),
    ("gpt3-175b", "3T", "amd_mi300x", 2048, 1.7, 1),
    ("llama3-8b", "1T", "amd_mi300x", 128, 1.75, 2),
    ("llama2-70b", "2T", "nvidia_h100_sxm", 256, 2.2, 1),
    ("gpt3-175b", "3T", "nvidia_a100_80gb_sxm", 1024, 2.5, 2),
)


def sweep_scenarios(folder: Path) -> list[Path]:
    paths = []
    for i, (preset, tokens, accelerator, gpus, price, heads) in enumerate(SWEEP):
        data = {
            "name": f"sweep {i:03d}",
            "model": {"preset": preset},
            "data": {"train_tokens": tokens},
            "hardware": {"accelerator": accelerator, "gpu_count": gpus},
            "prices": {"per_gpu_hour": price},
            "staffing": [{"role": "ML engineer", "headcount": heads, "monthly_cost": 15000}],
        }
        path = folder / f"sweep-{i:03d}.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        paths.append(path)
    return paths


def _run_all(commands: list[list[str]]) -> None:
    """The commands as `trainbudget ARGS`, two processes at a time (the machines have 2 cores)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for pair in (commands[i:i + 2] for i in range(0, len(commands), 2)):
        running = [(args, subprocess.Popen([sys.executable, "-m", "budget.cli", *args], cwd=ROOT, env=env,
                                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
                   for args in pair]
        for args, proc in running:
            _, err = proc.communicate()
            if proc.returncode not in (0, 1):     # 1: a plan with a failing check, still written
                raise RuntimeError(f"trainbudget {' '.join(args)} exited {proc.returncode}:\n{err}")


def build(folder: Path) -> Path:
    """Every golden output under folder/out, by group: en/, zh/, sweep/, package/."""
    bundled = sorted(str(p) for p in (ROOT / "scenarios").glob("*.yaml"))
    out = folder / "out"
    (folder / "in").mkdir()
    sweep = list(map(str, sweep_scenarios(folder / "in")))
    _run_all([["-q", "-o", str(out / "en"), *bundled],
              ["-q", "--lang", "zh", "-o", str(out / "zh"), *bundled],
              ["-q", "-o", str(out / "sweep"), *sweep],
              ["package", "-q", "-o", str(out / "package"), str(ROOT / "scenarios" / "gpt3-175b-options.yaml")]])
    return out


def _lines(xml: bytes) -> str:
    """Canonical XML with one element a line, for a readable diff."""
    text = canonicalize(xml_data=xml.decode("utf-8"))
    return re.sub(r">\s*<", ">\n<", text) + "\n"


def parts(out: Path) -> dict[str, str]:
    """{output/part: text} for every file written (the tool's own bookkeeping files left out)."""
    found: dict[str, str] = {}
    for path in sorted(out.rglob("*")):
        if not path.is_file() or path.name.startswith(".trainbudget"):
            continue
        name = path.relative_to(out).as_posix()
        data = path.read_bytes()
        if path.suffix == ".xlsx":
            with zipfile.ZipFile(io.BytesIO(data)) as book:
                for entry in sorted(book.namelist()):
                    raw = book.read(entry)
                    is_xml = entry.endswith((".xml", ".rels"))
                    found[f"{name}:{entry}"] = _lines(raw) if is_xml else raw.hex() + "\n"
        else:
            found[name] = data.decode("utf-8")
    return found


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _keep(texts: dict[str, str]) -> None:
    """Keep each part's text by digest, so a later change can be shown as a diff."""
    try:
        STORE.mkdir(parents=True, exist_ok=True)
        for text in texts.values():
            path = STORE / digest(text)
            if not path.exists():
                path.write_text(text, encoding="utf-8")
    except OSError:
        pass       # a read-only home: changes are then named, not diffed


def _show(name: str, old: str | None, new: str | None, limit: int) -> str:
    if new is None:
        return f"--- {name}: no longer written\n"
    if old is None:
        return f"+++ {name}: new part\n"
    before = STORE / old
    if not before.exists():
        head = "".join(new.splitlines(keepends=True)[:20])
        return (f"*** {name}: changed (was {old[:12]}, now {digest(new)[:12]}; its old text is not "
                f"in {STORE}: run this script on the commit before to see a diff)\n{head}")
    diff = difflib.unified_diff(before.read_text(encoding="utf-8").splitlines(keepends=True),
                                new.splitlines(keepends=True), f"{name} (recorded)", f"{name} (now)", n=1)
    lines = list(diff)
    cut = f"... {len(lines) - limit} more diff lines\n" if len(lines) > limit else ""
    return "".join(lines[:limit]) + cut


def compare(texts: dict[str, str], recorded: dict[str, str], limit: int = 60) -> list[str]:
    """One report per part that differs from its recorded digest (none: all equal)."""
    reports = []
    for name in sorted(set(texts) | set(recorded)):
        new = texts.get(name)
        old = recorded.get(name)
        if new is not None and old == digest(new):
            continue
        reports.append(_show(name, old, new, limit))
    return reports


def check(update: bool = False, limit: int = 60) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        texts = parts(build(Path(tmp)))
    current = {name: digest(text) for name, text in texts.items()}
    if update:
        DIGESTS.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        _keep(texts)
        return []
    recorded = json.loads(DIGESTS.read_text(encoding="utf-8")) if DIGESTS.exists() else {}
    reports = compare(texts, recorded, limit)
    if not reports:
        _keep(texts)
    return reports


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--update", action="store_true", help="record the new digests")
    parser.add_argument("--limit", type=int, default=60, help="diff lines shown per part")
    args = parser.parse_args()
    reports = check(args.update, args.limit)
    for report in reports:
        print(report)
    if reports:
        print(f"{len(reports)} part(s) differ from {DIGESTS.relative_to(ROOT)}; "
              "if the change is meant, run with --update and say why in the commit")
        return 1
    print("golden outputs: recorded" if args.update else "golden outputs: all parts as recorded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
