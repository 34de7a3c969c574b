#!/usr/bin/env python3
"""Benchmark whole processes, as a user runs them (issue 14).

Prints, measured in one run on this machine:
- one `python generate.py` of the bundled example against the import floor
  (`python -c "import openpyxl, jinja2, pydantic, yaml"`): interleaved pairs, medians, the ratio;
- a sweep of 100 scenarios in ONE call (varied GPU counts, accelerators, tokens, prices; written
  into a temp folder): seconds, and per scenario;
- the approval package of one scenario with 10 options (a base and 9 alternatives, each with
  its sensitivity and range): seconds;
- peak memory (max RSS) of each, and of a 25-scenario sweep beside the 100 (flat means the
  outputs stream to disk instead of being held);
- the layout search, in process (bench/bench_search.py has the details).

Goals: generate <= 1.5x the floor; 100 scenarios < 10 s; the 10-option package < 3 s.

    python bench/bench_speed.py [--pairs 7] [--tree PATH]

`--tree` measures another checkout (say, a baseline: `git worktree add /tmp/base <commit>`)
with the same scenarios, so two versions compare on one machine in one sitting.
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
ACCELERATORS = ("nvidia_h100_sxm", "nvidia_a100_80gb_sxm", "nvidia_h800_sxm", "nvidia_h200_sxm",
                "amd_mi300x")
MODELS = (("llama3-8b", "1T"), ("gpt3-6.7b", "0.3T"), ("llama2-70b", "2T"), ("llama3-70b", "5T"),
          ("gpt3-175b", "3T"))


def run(cmd: list[str], cwd: Path) -> tuple[float, int]:
    """(wall seconds, max RSS in MB) of one process; fails loudly on a non-zero exit."""
    env = dict(os.environ, PYTHONPATH=str(cwd), PYTHONDONTWRITEBYTECODE="1")
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode("utf-8", "replace")
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{err[-2000:]}")
    return wall, usage.ru_maxrss / 1024


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
    """The seed's options example widened to a base and 9 alternatives."""
    data = yaml.safe_load((ROOT / "scenarios" / "gpt3-175b-options.yaml").read_text(encoding="utf-8"))
    given = data.get("options", [])
    extra = []
    for i, (gpus, pp) in enumerate(((768, 8), (1536, 16), (2048, 16), (384, 8), (640, 8), (896, 8),
                                    (1280, 16), (1792, 16), (128, 8))):
        extra.append({"name": f"{gpus} H100", "hardware": {"gpu_count": gpus}, "parallelism": {"pp": pp}})
    data["options"] = (copy.deepcopy(given) + extra)[:9]
    path = folder / "ten-options.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def medians(samples: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(s[0] for s in samples), max(s[1] for s in samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=7, help="interleaved runs of each (at least 5)")
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout to measure")
    args = parser.parse_args()
    tree, py = args.tree.resolve(), sys.executable
    pairs = max(args.pairs, 5)
    with tempfile.TemporaryDirectory(prefix="trainbudget-bench-") as tmp:
        tmp = Path(tmp)
        (tmp / "in").mkdir()
        sweep = sweep_scenarios(tmp / "in", 100)
        ten = options_scenario(tmp / "in")
        floor, single, hundred, quarter, package = [], [], [], [], []
        for k in range(pairs):   # interleaved, so drift in the machine's speed hits all alike
            floor.append(run([py, "-c", FLOOR], tree))
            single.append(run([py, "generate.py", "-q", "-f", "-o", str(tmp / f"one{k}")], tree))
            if k < 3:
                hundred.append(run([py, "generate.py", "-q", "-f", "-o", str(tmp / f"sweep{k}"),
                                    *map(str, sweep)], tree))
                quarter.append(run([py, "generate.py", "-q", "-f", "-o", str(tmp / f"quarter{k}"),
                                    *map(str, sweep[:25])], tree))
            package.append(run([py, "generate.py", "package", "-q", "-f", "-o", str(tmp / f"pkg{k}"),
                                str(ten)], tree))
        f, f_mb = medians(floor)
        g, g_mb = medians(single)
        h, h_mb = medians(hundred)
        q, q_mb = medians(quarter)
        p, p_mb = medians(package)
        ratios = [b[0] / a[0] for a, b in zip(floor, single)]
        print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; tree {tree}")
        print(f"{'case':44} {'median s':>9} {'peak MB':>8}  goal")
        print(f"{'import floor (openpyxl, jinja2, pydantic, yaml)':44} {f:9.3f} {f_mb:8.0f}")
        print(f"{'generate, bundled example':44} {g:9.3f} {g_mb:8.0f}  "
              f"{g / f:.2f}x the floor (median of pair ratios {statistics.median(ratios):.2f}x; goal <= 1.5x)")
        print(f"{'100 scenarios, one call':44} {h:9.3f} {h_mb:8.0f}  "
              f"{h / 100 * 1000:.0f} ms per scenario (goal < 10 s)")
        print(f"{'25 scenarios, one call':44} {q:9.3f} {q_mb:8.0f}  "
              f"peak memory 100 vs 25: {h_mb / q_mb:.2f}x (flat is ~1x)")
        print(f"{'package, 1 scenario with 10 options':44} {p:9.3f} {p_mb:8.0f}  (goal < 3 s)")
    print("layout search: python bench/bench_search.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
