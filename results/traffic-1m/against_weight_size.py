"""The memory-bound V = 1M rows of ``results/bench-1m-speed-s27`` with their gathered bytes priced
at a gather bandwidth RATIO times lower than that run's probe (the probe's 128 MiB table against
the 1 GiB weight: ``probe_table_size.log``), the streamed bytes and the step times unchanged.

    python results/traffic-1m/against_weight_size.py 1.37   # against_weight_size.log
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from bigvocab.bench.roofline import roofline_seconds

RUN = Path(__file__).resolve().parents[1] / "bench-1m-speed-s27" / "results.json"
LAYERS = ("hsm[balanced]", "hsm[huffman]", "nce", "neg[per-example]", "neg[shared]")


def main() -> None:
    ratio = float(sys.argv[1])
    run = json.loads(RUN.read_text())
    machine = {"best_gflops": run["matmul"]["best_gflops"], **run["bandwidth"]}
    slower = {**machine, "gather_scatter_gbps": machine["gather_scatter_gbps"] / ratio}
    for row in run["speed"]:
        if row["approach"] not in LAYERS:
            continue
        step = row["roofline_seconds"] / row["roofline_fraction"]
        cost = (row["required_flops"], row["required_bytes"], row["required_gathered_bytes"])
        print(f"{row['approach']}: step {step * 1e3:.1f} ms, {row['roofline_fraction']:.1%} of the run's roofline, "
              f"{roofline_seconds(*cost, slower) / step:.1%} with gathers {ratio}x slower")


if __name__ == "__main__":
    main()
