"""Every V = 1M speed row of session 29's whole-roster run (``../bench-1m-all-s29``: ``bench
--full --vocab-sizes 1M --skip-quality``) under the declaration of distinct rows: each row's
bytes declared again by today's code for the bench's workload, its step time and the run's own
rates kept. Rows whose declaration did not change (dense, banded and character layers, the
PyTorch peers) come out as they were.

    python results/bench-speed-s30/all_layers.py   # all_layers.log
"""
from __future__ import annotations

import json
from pathlib import Path

from rebased import declared_bytes

from bigvocab.bench.roofline import roofline_seconds

RUN = Path(__file__).resolve().parents[1] / "bench-1m-all-s29" / "results.json"
KEY = "1000000"


def main() -> None:
    run = json.loads(RUN.read_text())
    rows = [row for row in run["speed"] if row["vocab_size"] == int(KEY) and row["roofline_fraction"] is not None]
    declared = declared_bytes({row["approach"] for row in rows}, run["config"], int(KEY))
    limit = {**run["bandwidth"][KEY], "best_gflops": run["matmul"]["best_gflops"]}
    print(f"{RUN.parent.name}: gather {limit['gather_gbps']:.1f} GB/s, stream {limit['stream_gbps']:.1f} GB/s, "
          f"matmul {limit['best_gflops']:.1f} GFLOP/s")
    print(f"  {'row':<18} {'step ms':>10} {'MB before':>10} {'MB now':>10}  % of roofline before -> now")
    for row in rows:
        step = row["roofline_seconds"] / row["roofline_fraction"]
        moved, gathered = declared[row["approach"]]
        fraction = roofline_seconds(row["required_flops"], moved, gathered, limit) / step
        print(f"  {row['approach']:<18} {step * 1e3:10.2f} {row['required_bytes'] / 1e6:10.1f} {moved / 1e6:10.1f}  "
              f"{row['roofline_fraction']:6.1%} -> {fraction:6.1%}")


if __name__ == "__main__":
    main()
