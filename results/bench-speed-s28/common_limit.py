"""The V = 1M rows of this folder's three runs held to one limit: the best matrix-multiply rate and
the best of each bandwidth (on the 977 MiB table) that any of the three measured, so that a run
whose probe happened to read slow memory does not get a longer roofline than the others.

    python results/bench-speed-s28/common_limit.py   # common_limit.log

(``report`` also serves ``../bench-speed-s29/common_limit.py``.)
"""
from __future__ import annotations

import json
from pathlib import Path

from held_to import rows_held_to

HERE = Path(__file__).resolve().parent
RUNS = {"first (d34ad39)": HERE / "results.json", "second (d34ad39)": HERE / "second-1m" / "results.json",
        "after the hook (870b968)": HERE / "after-hook-1m" / "results.json"}
KEY = "1000000"


def report(paths: dict[str, Path]) -> None:
    """Print each run's V = 1M rows held to its own limit and to the best rates of all of them."""
    runs = {name: json.loads(path.read_text()) for name, path in paths.items()}
    rates = [run["bandwidth"][KEY] for run in runs.values()]
    best = {key: max(r[key] for r in rates) for key in rates[0]}
    machine = {"best_gflops": max(run["matmul"]["best_gflops"] for run in runs.values()), **best}
    print("common limit: " + ", ".join(f"{k} {v:.1f}" for k, v in machine.items()))
    for name, run in runs.items():
        own = run["bandwidth"][KEY]
        print(f"\n{name}: its own limit gather {own['gather_gbps']:.1f} GB/s, matmul {run['matmul']['best_gflops']:.1f} GFLOP/s")
        for row, step, fraction in rows_held_to(run, machine, int(KEY)):
            print(f"  {row['approach']:<18} step {step * 1e3:9.2f} ms  {row['roofline_fraction']:6.1%} of its own "
                  f"limit, {fraction:6.1%} of the common one")


def main() -> None:
    report(RUNS)

if __name__ == "__main__":
    main()
