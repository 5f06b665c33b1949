"""Median time of the bench's training step of one layer in this process (H = 256, N = 1024,
Zipf workload, SGD, torch's threads): 5 untimed steps, then the median of 30.

    python results/omp-wait-policy/steps.py SPEC V [MIN_WORK_PER_THREAD]

Run by ``compare.py`` under different OpenMP settings, which torch reads once per process.
"""
from __future__ import annotations

import statistics
import sys
from pathlib import Path

from bigvocab.bench.operations import make_optimizer
from bigvocab.outputs import kernel_threads

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ab_steps import bench_layer, step_times  # noqa: E402  (results/ab_steps.py)


def main() -> None:
    spec, vocab = sys.argv[1], int(sys.argv[2])
    if len(sys.argv) > 3:
        kernel_threads.MIN_WORK_PER_THREAD = int(sys.argv[3])
    layer, work = bench_layer(spec, vocab)
    optimizer = make_optimizer(layer)
    step_times(layer, optimizer, work, 5)
    times = step_times(layer, optimizer, work, 30)
    print(f"{statistics.median(times) * 1e3:.3f}")


if __name__ == "__main__":
    main()
