"""Training steps with the pair kernel's dot product summed from a zero of the rows' dtype over
all H terms (the library) or from ``a[0] * b[0]`` over the other H - 1 (the code before),
alternating in one process.

    THP_MEM_ALLOC_ENABLE=1 python results/pair-dot-tail/ab.py 1000000 'nce,neg,hsm[balanced],hsm[huffman]'   # ab-1m.log
    THP_MEM_ALLOC_ENABLE=1 python results/pair-dot-tail/ab.py 100000 'nce,neg,hsm[balanced],hsm[huffman]'    # ab-100k.log

The bench's workload (H = 256, N = 1024, Zipf counts and targets) and SGD. First one step of each
variant from the same parameters and seed, whose losses and gradients must agree to float32
rounding (the sums run in another order); then the bench's paired timing (20 repetitions of the
mean of 5 steps, order alternating). Prints each variant's median time per step and the median
(and quartiles) of the ratios (above 1: the library faster).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from numba import njit

from bigvocab.bench.operations import make_optimizer
from bigvocab.outputs import pair_kernels
from bigvocab.word2vec.kernels import FAST

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ab_steps import assert_same_step, bench_layer, paired_steps, print_pair  # noqa: E402  (results/ab_steps.py)


@njit(nogil=True, fastmath=FAST, inline="always")
def _dot_before(a: np.ndarray, b: np.ndarray) -> float:
    total = a[0] * b[0]
    for d in range(1, a.shape[0]):
        total += a[d] * b[d]
    return total


@njit(nogil=True, fastmath=FAST)
def _dots_before(hidden, table, offsets, order, example, out, lo, hi) -> None:
    for u in range(lo, hi):
        row = table[u]
        for q in range(offsets[u], offsets[u + 1]):
            p = order[q]
            out[p] = _dot_before(hidden[example[p]], row)


LIBRARY = pair_kernels._dots


def use(variant: str) -> None:
    pair_kernels._dots = LIBRARY if variant == "zero start" else _dots_before


def main() -> None:
    vocab, names = int(sys.argv[1]), sys.argv[2].split(",")
    for name in names:
        layer, work = bench_layer(name, vocab)
        assert_same_step(layer, work, use, "first term", "zero start", exact=False)
        summary = paired_steps(layer, make_optimizer(layer), work, use, "first term", "zero start")
        print_pair(f"V={vocab} {name}", "first term", "zero start", summary)
        use("zero start")


if __name__ == "__main__":
    main()
