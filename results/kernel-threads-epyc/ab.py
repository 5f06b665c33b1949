"""Training steps with the pair and tree kernels' threshold for a second thread at the library's
value (``MIN_WORK_PER_THREAD`` = 2**23 multiply-adds, so a V = 1M step's calls stay on one thread)
or at 2**20 (its calls split over both cores), alternating in one process.

    THP_MEM_ALLOC_ENABLE=1 python results/kernel-threads-epyc/ab.py 1000000 'nce,neg,hsm[balanced],hsm[huffman]'   # ab-1m.log

The bench's workload (H = 256, N = 1024, Zipf counts and targets, SGD) and its paired timing (20
repetitions of the mean of 5 steps, order alternating). Prints each variant's median time per
step and the median (and quartiles) of the ratios (above 1: the lower threshold faster).
"""
from __future__ import annotations

import sys
from pathlib import Path

from bigvocab.bench.operations import make_optimizer
from bigvocab.outputs import kernel_threads

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ab_steps import bench_layer, paired_steps, print_pair  # noqa: E402  (results/ab_steps.py)

THRESHOLDS = {"2**23": 2**23, "2**20": 2**20}


def use(variant: str) -> None:
    kernel_threads.MIN_WORK_PER_THREAD = THRESHOLDS[variant]


def main() -> None:
    vocab, names = int(sys.argv[1]), sys.argv[2].split(",")
    for name in names:
        layer, work = bench_layer(name, vocab)
        summary = paired_steps(layer, make_optimizer(layer), work, use, "2**23", "2**20")
        print_pair(f"V={vocab} {name}", "2**23", "2**20", summary)
        use("2**23")


if __name__ == "__main__":
    main()
