#!/usr/bin/env python3
"""Benchmark whole processes, as a user runs them (issue 14).

Prints, measured in one run on this machine (every case interleaved with the others, so a change
in the machine's load hits them alike; medians):
- one `python generate.py` of the bundled example against the import floor
  (`python -c "import openpyxl, jinja2, pydantic, yaml"`): at least 5 pairs, the median of the
  pairs' ratios (wall clock) and the same ratio in CPU seconds (user + system, robust when other
  programs share the machine);
- beside them, a process that only imports what that generate imports (its trainbudget modules,
  and through them the libraries, the pydantic schemas built as the modules load) and does no
  work: the least any generate can cost with these libraries, as a ratio to the same floor;
- a sweep of 100 scenarios in ONE call (varied models, GPU counts, accelerators, tokens, prices;
  written into a temp folder): seconds, and per scenario;
- the approval package of one scenario with 10 options (a base and 9 alternatives; the workbook
  carries each plan's sensitivity and P10-P90 range): seconds;
- peak memory (max RSS of the process tree's largest process) of a 25- and of the 100-scenario
  sweep: flat (about 1x) when the files go to disk instead of being held;
- the layout search (175B, every dimension free, 1,024 H100), in process, best of 5.

Both save paths are measured: the fast writer (the default) and openpyxl's own
(TRAINBUDGET_XLSX_WRITER=openpyxl, budget/xlsx/save.py), for one generate and for the sweep.

Goals: generate <= 2.5x the floor (issue 26; it was 1.5x, never met, 2.4-2.7x measured since);
100 scenarios < 10 s; the 10-option package < 3 s; memory flat (100 vs 25 scenarios within 1.25x).
One line per goal says met or NOT met.

    python bench/bench_speed.py [--pairs 7] [--sweeps 3] [--tree PATH] [--baseline PATH] [--bytecode]

`--tree` measures another checkout; `--baseline PATH` measures a second checkout (say the code
before a change: `git worktree add /tmp/base <commit>`) interleaved with the first, with the same
scenarios, so two versions compare on one machine in one sitting (its sweep runs --base-sweeps
times, 1 by default: a slow baseline's sweep takes minutes).

Every process runs with PYTHONDONTWRITEBYTECODE=1, so the checkout gets no __pycache__: where it
has none (as here), each run compiles trainbudget's own modules from source while the floor's
libraries load from their installed bytecode. `--bytecode` measures both sides from bytecode, as
an installed package (or a checkout's second run) does: every module's bytecode is written first,
by one warm-up run of each case, into a private cache (PYTHONPYCACHEPREFIX in a temp folder, the
checkout untouched), and every measured process reads it.
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
FLOOR = "import openpyxl, jinja2, pydantic, yaml"
# One run of the bundled example that prints the trainbudget modules it loaded: the "imports
# only" case then loads exactly those (and, through them, openpyxl, jinja2, pydantic and yaml as
# a run does: numpy and Pillow refused) and does no work -- the least a run can cost with these
# libraries and these schemas, whatever the planner and the writers do.
MODULES_OF_A_RUN = """
import sys
from budget.cli.app import main
main(["-q", "-f", "-o", sys.argv[1]])
print(" ".join(sorted(m for m in sys.modules if m == "budget" or m.startswith("budget."))))
"""
ACCELERATORS = ("nvidia_h100_sxm", "nvidia_a100_80gb_sxm", "nvidia_h800_sxm", "nvidia_h200_sxm",
                "amd_mi300x")
MODELS = (("llama3-8b", "1T"), ("gpt3-6.7b", "0.3T"), ("llama2-70b", "2T"), ("llama3-70b", "5T"),
          ("gpt3-175b", "3T"))
SEARCH = """
import time
from budget.inputs.catalog import load_catalog
from budget.plan.plan import build_plan
from budget.inputs.options import parse_scenario
catalog = load_catalog()
data = {"name": "bench 175B", "model": {"preset": "gpt3-175b"}, "data": {"train_tokens": "3T"},
        "hardware": {"accelerator": "nvidia_h100_sxm", "gpu_count": 1024}, "prices": {"per_gpu_hour": 2.0}}
s = parse_scenario(data, "bench.yaml", catalog)
build_plan(s, catalog, "bench")
best = float("inf")
for _ in range(5):
    start = time.perf_counter()
    build_plan(s, catalog, "bench")
    best = min(best, time.perf_counter() - start)
print(best)
"""


class Sample:
    """One process: wall seconds, CPU seconds (user + system, its children included), max RSS MB."""

    def __init__(self, wall: float, cpu: float, mb: float):
        self.wall, self.cpu, self.mb = wall, cpu, mb


ENV: dict[str, str] = {}    # --bytecode: PYTHONPYCACHEPREFIX
GENERATE_GOAL = 2.5         # one generate against the import floor, wall


# The plain writer path (budget/xlsx/save.py): every book saved through openpyxl's own writer.
PLAIN_WRITER = {"TRAINBUDGET_XLSX_WRITER": "openpyxl"}


def run(cmd: list[str], cwd: Path, write_bytecode: bool = False, extra: dict | None = None) -> Sample:
    """One process, its output discarded; fails loudly on a non-zero exit."""
    env = dict(os.environ, PYTHONPATH=str(cwd), PYTHONDONTWRITEBYTECODE="1", **ENV, **(extra or {}))
    if write_bytecode:
        del env["PYTHONDONTWRITEBYTECODE"]
    before = os.times()
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read()             # drained while it runs: a full pipe would stall it
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    after = os.times()
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{err.decode('utf-8', 'replace')[-2000:]}")
    # the child's own CPU (rusage) plus its workers' (reaped by it, so in os.times' children)
    cpu = max(usage.ru_utime + usage.ru_stime,
              (after.children_user - before.children_user) + (after.children_system - before.children_system))
    return Sample(wall, cpu, usage.ru_maxrss / 1024)


def sweep_scenarios(folder: Path, count: int) -> list[Path]:
    """`count` valid scenarios, varied deterministically over model, accelerator, GPUs, price."""
    paths = []
    for i in range(count):
        preset, tokens = MODELS[i % len(MODELS)]
        big = preset.endswith(("70b", "175b"))
        gpus = (256, 512, 1024, 2048)[i % 4] if big else (16, 32, 64, 128)[i % 4]
        data = {
            "name": f"sweep {i:03d}",
            "model": {"preset": preset},
            "data": {"train_tokens": tokens},
            "hardware": {"accelerator": ACCELERATORS[(i // 5) % len(ACCELERATORS)], "gpu_count": gpus},
            "prices": {"per_gpu_hour": round(1.5 + 0.05 * (i % 50), 2)},
            "staffing": [{"role": "ML engineer", "headcount": 1 + i % 4, "monthly_cost": 15000}],
        }
        path = folder / f"sweep-{i:03d}.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        paths.append(path)
    return paths


def options_scenario(folder: Path) -> Path:
    """The bundled options example widened to a base and 9 alternatives."""
    data = yaml.safe_load((ROOT / "scenarios" / "gpt3-175b-options.yaml").read_text(encoding="utf-8"))
    given = data.get("options", [])
    extra = []
    for gpus, pp in ((768, 8), (1536, 16), (2048, 16), (384, 8), (640, 8), (896, 8),
                     (1280, 16), (1792, 16), (128, 8)):
        extra.append({"name": f"{gpus} H100", "hardware": {"gpu_count": gpus}, "parallelism": {"pp": pp}})
    data["options"] = (copy.deepcopy(given) + extra)[:9]
    path = folder / "ten-options.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def imports_only(tree: Path, out: Path) -> str:
    """The `python -c` program that imports what a generate of the bundled example imports."""
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1", **ENV)
    modules = subprocess.run([sys.executable, "-c", MODULES_OF_A_RUN, str(out)], cwd=tree, env=env,
                             check=True, capture_output=True, text=True).stdout.split()
    return "import budget.cli.app as cli; cli._OpenpyxlWithoutNumpy.install(); import " + ", ".join(modules)


def med(samples: list[Sample], key: str) -> float:
    return statistics.median(getattr(s, key) for s in samples)


def verdict(ok: bool) -> str:
    return "goal met" if ok else "goal NOT met"


def measure(trees: list[Path], pairs: int, sweeps: list[int], tmp: Path) -> dict:
    """Every case of every tree, interleaved round by round."""
    py = sys.executable
    sweep = sweep_scenarios(tmp / "in", 100)
    ten = options_scenario(tmp / "in")
    got = {t: {k: [] for k in ("floor", "imports", "single", "single_plain", "hundred", "hundred_plain", "quarter",
                               "package")} for t in trees}
    imports = {tree: imports_only(tree, tmp / f"t{n}" / "modules") for n, tree in enumerate(trees)}
    if ENV:     # --bytecode: one unmeasured run of each case writes every module's bytecode
        for n, tree in enumerate(trees):
            out = tmp / f"t{n}" / "warm"
            for cmd in ([py, "-c", FLOOR], [py, "-c", imports[tree]], [py, "generate.py", "-q", "-f", "-o", str(out / "one")],
                        [py, "generate.py", "-q", "-f", "-o", str(out / "two"), *map(str, sweep[:2])],
                        [py, "generate.py", "package", "-q", "-f", "-o", str(out / "pkg"), str(ten)],
                        [py, "-c", SEARCH]):
                run(cmd, tree, write_bytecode=True)
    for k in range(pairs):
        for n, tree in enumerate(trees):
            out = tmp / f"t{n}"
            got[tree]["floor"].append(run([py, "-c", FLOOR], tree))
            got[tree]["imports"].append(run([py, "-c", imports[tree]], tree))
            got[tree]["single"].append(run([py, "generate.py", "-q", "-f", "-o", str(out / f"one{k}")], tree))
            got[tree]["single_plain"].append(run([py, "generate.py", "-q", "-f", "-o", str(out / f"plain{k}")], tree,
                                                 extra=PLAIN_WRITER))
            if k < sweeps[n]:
                got[tree]["hundred"].append(run([py, "generate.py", "-q", "-f", "-o", str(out / f"sweep{k}"),
                                                 *map(str, sweep)], tree))
                got[tree]["hundred_plain"].append(run([py, "generate.py", "-q", "-f", "-o",
                                                       str(out / f"sweep-plain{k}"), *map(str, sweep)], tree,
                                                      extra=PLAIN_WRITER))
                got[tree]["quarter"].append(run([py, "generate.py", "-q", "-f", "-o", str(out / f"quarter{k}"),
                                                 *map(str, sweep[:25])], tree))
            got[tree]["package"].append(run([py, "generate.py", "package", "-q", "-f", "-o",
                                             str(out / f"pkg{k}"), str(ten)], tree))
        print(f"  round {k + 1}/{pairs} done", file=sys.stderr, flush=True)
    for tree in trees:
        env = dict(os.environ, PYTHONPATH=str(tree), **ENV)
        got[tree]["search"] = float(subprocess.run([py, "-c", SEARCH], cwd=tree, env=env, check=True,
                                                   capture_output=True, text=True).stdout.split()[-1])
    return got


def report(tree: Path, r: dict) -> dict:
    floor, single, hundred, quarter, package = (r[k] for k in ("floor", "single", "hundred", "quarter", "package"))
    ratio = statistics.median(b.wall / a.wall for a, b in zip(floor, single))
    bound = statistics.median(b.wall / a.wall for a, b in zip(floor, r["imports"]))
    cpu_ratio = statistics.median(b.cpu / a.cpu for a, b in zip(floor, single))
    h, q, p = med(hundred, "wall"), med(quarter, "wall"), med(package, "wall")
    h_mb, q_mb = max(s.mb for s in hundred), max(s.mb for s in quarter)
    print(f"\n{tree}")
    print(f"  {'case':46} {'wall s':>8} {'CPU s':>7} {'peak MB':>8}")
    for label, samples in (("import floor (openpyxl, jinja2, pydantic, yaml)", floor),
                           ("imports of a generate only, no work", r["imports"]),
                           ("generate, bundled example", single),
                           ("  the same, openpyxl's own writer", r["single_plain"]),
                           ("100 scenarios, one call", hundred),
                           ("  the same, openpyxl's own writer", r["hundred_plain"]),
                           ("25 scenarios, one call", quarter),
                           ("package, 1 scenario with 10 options", package)):
        print(f"  {label:46} {med(samples, 'wall'):8.3f} {med(samples, 'cpu'):7.3f} "
              f"{max(s.mb for s in samples):8.0f}   (median of {len(samples)})")
    print(f"  {'layout search, 175B on 1,024 H100 (in process)':46} {r['search']:8.3f}")
    print(f"  generate / floor: {ratio:.2f}x wall (median of {len(single)} pair ratios), "
          f"{cpu_ratio:.2f}x CPU  -> {verdict(ratio <= GENERATE_GOAL)} (<= {GENERATE_GOAL}x)")
    plain_ratio = statistics.median(b.wall / a.wall for a, b in zip(floor, r["single_plain"]))
    print(f"  generate with openpyxl's own writer / floor: {plain_ratio:.2f}x wall; 100 scenarios with it: "
          f"{med(r['hundred_plain'], 'wall'):.1f} s (what the fast writer buys)")
    print(f"  imports of a generate, no work / floor: {bound:.2f}x wall (the least a run costs with "
          f"openpyxl writing the workbook and the schemas pydantic builds)")
    print(f"  100 scenarios: {h:.1f} s, {h / 100 * 1000:.0f} ms per scenario  -> {verdict(h < 10)} (< 10 s)")
    print(f"  10-option package: {p:.2f} s  -> {verdict(p < 3)} (< 3 s)")
    print(f"  peak memory, 100 vs 25 scenarios: {h_mb:.0f} / {q_mb:.0f} MB = {h_mb / q_mb:.2f}x  "
          f"-> {verdict(h_mb / q_mb <= 1.25)} (flat: <= 1.25x)")
    return {"ratio": ratio, "cpu_ratio": cpu_ratio, "bound": bound, "hundred": h, "package": p, "search": r["search"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=7, help="interleaved rounds (at least 5)")
    parser.add_argument("--sweeps", type=int, default=3, help="rounds that also run the sweeps")
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout to measure")
    parser.add_argument("--baseline", type=Path, default=None, help="a second checkout, measured alongside")
    parser.add_argument("--base-sweeps", type=int, default=1, help="rounds that run the baseline's sweeps")
    parser.add_argument("--bytecode", action="store_true",
                        help="every module loaded from bytecode, written first into a private cache")
    args = parser.parse_args()
    pairs = max(args.pairs, 5)
    trees = [args.tree.resolve()] + ([args.baseline.resolve()] if args.baseline else [])
    sweeps = [max(1, min(args.sweeps, pairs)), max(1, min(args.base_sweeps, pairs))]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="trainbudget-bench-") as tmp:
        (Path(tmp) / "in").mkdir()
        if args.bytecode:
            ENV["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        got = measure(trees, pairs, sweeps, Path(tmp))
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}, "
          f"load average {os.getloadavg()[0]:.1f} at the end; {time.perf_counter() - start:.0f} s in all; "
          + ("every module from bytecode (--bytecode)" if args.bytecode
             else "trainbudget's modules compiled from source where the checkout has no bytecode"))
    results = [report(tree, got[tree]) for tree in trees]
    if len(results) == 2:
        now, base = results
        print(f"\nbaseline -> now: generate/floor {base['ratio']:.2f}x -> {now['ratio']:.2f}x "
              f"(CPU {base['cpu_ratio']:.2f}x -> {now['cpu_ratio']:.2f}x); 100 scenarios "
              f"{base['hundred']:.1f} -> {now['hundred']:.1f} s; package {base['package']:.2f} -> "
              f"{now['package']:.2f} s; search {base['search']:.3f} -> {now['search']:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
