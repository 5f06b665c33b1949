"""The rows of this run held to the bandwidth probe of the code before (one 128 MiB table for
every V), next to the fractions the run reports (a table of each V's weight size).

    THP_MEM_ALLOC_ENABLE=1 python results/bench-speed-s28/old_probe.py   # old_probe.log

Measures the old probe (``measure_bandwidth`` at its default table) three times, right after the
run on the same machine, keeps the best of each rate (as the bench keeps the best), and prints,
for every memory- or compute-bound speed row, its step time and both fractions.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

from bigvocab.bench.roofline import measure_bandwidth
from held_to import rows_held_to

RUN = Path(__file__).resolve().parent / "results.json"


def main() -> None:
    run = json.loads(RUN.read_text())
    probes = [measure_bandwidth(torch.device("cpu")) for _ in range(3)]
    old = {key: max(probe[key] for probe in probes) for key in probes[0]}
    print("old probe (128 MiB table), best of 3: " + ", ".join(f"{k} {v:.1f}" for k, v in old.items()))
    for vocab, rates in run["bandwidth"].items():
        print(f"this run's probe at V={int(vocab):,}: " + ", ".join(f"{k} {v:.1f}" for k, v in rates.items()))
    machine = {"best_gflops": run["matmul"]["best_gflops"], **old}
    for row, step, fraction in rows_held_to(run, machine):
        print(f"V={row['vocab_size']:>9,} {row['approach']:<18} step {step * 1e3:9.2f} ms: "
              f"{row['roofline_fraction']:6.1%} of the roofline (this run), {fraction:6.1%} with the old probe")

if __name__ == "__main__":
    main()
