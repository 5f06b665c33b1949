"""The bench's bandwidth probe (``bench.roofline.measure_bandwidth``: rows of 256 float32 gathered
from, and added back into, random rows of a table) on its own 128 MiB table and on a 1 GiB table,
the size of the (V, H) weight the V = 1M layers gather from; alternating, five rounds.

    THP_MEM_ALLOC_ENABLE=1 python results/traffic-1m/probe_table_size.py   # probe_table_size.log
"""
from __future__ import annotations

import statistics

import torch

from bigvocab.bench.roofline import measure_bandwidth

TABLES = {"128 MiB": 1 << 17, "1 GiB": 1 << 20}


def main() -> None:
    device = torch.device("cpu")
    found = {name: [] for name in TABLES}
    for round_ in range(5):
        for name, rows in TABLES.items() if round_ % 2 == 0 else reversed(TABLES.items()):
            measured = measure_bandwidth(device, table_rows=rows)
            found[name].append(measured)
            print(f"round {round_ + 1} {name}: gather {measured['gather_gbps']:.1f} GB/s, scatter "
                  f"{measured['scatter_gbps']:.1f} GB/s, stream {measured['stream_gbps']:.1f} GB/s", flush=True)
    for key in ("gather_gbps", "scatter_gbps"):
        best = {name: max(m[key] for m in found[name]) for name in TABLES}
        ratios = [a[key] / b[key] for a, b in zip(found["128 MiB"], found["1 GiB"])]
        print(f"{key}: best {best['128 MiB']:.1f} (128 MiB) and {best['1 GiB']:.1f} (1 GiB); "
              f"per round 128 MiB / 1 GiB median {statistics.median(ratios):.2f} "
              f"[{min(ratios):.2f}-{max(ratios):.2f}]")


if __name__ == "__main__":
    main()
