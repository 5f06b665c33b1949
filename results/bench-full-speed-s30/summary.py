"""Every speed row of this folder's run in one table: training speed-up over ``full``, the exact
``log_softmax``'s speed-up, the step time, % of roofline and % of the matmul rate.

    python results/bench-full-speed-s30/summary.py   # summary.log
"""
from __future__ import annotations

import json
from pathlib import Path

RUN = Path(__file__).resolve().parent / "results.json"


def main() -> None:
    run = json.loads(RUN.read_text())
    print(f"{'V':>8} {'row':18s} {'train x':>8} {'lsm x':>6} {'step ms':>10} {'roof%':>6} {'mm%':>6}")
    for row in run["speed"]:
        timings = row["timings"]
        print(f"{row['vocab_size']:8d} {row['approach']:18s} {timings['train']['speedup']:8.2f} "
              f"{timings['log_softmax']['speedup']:6.2f} {timings['train']['seconds'] * 1e3:10.2f} "
              f"{(row['roofline_fraction'] or 0) * 100:6.1f} {(row['matmul_fraction'] or 0) * 100:6.1f}")


if __name__ == "__main__":
    main()
