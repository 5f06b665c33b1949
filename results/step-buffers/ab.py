"""Training steps with the step buffers pooled (the library) or allocated afresh each step (the
code before), alternating in one process.

    THP_MEM_ALLOC_ENABLE=1 python results/step-buffers/ab.py 1000000 'nce,neg,hsm[balanced],hsm[huffman],ais'

The bench's workload (H = 256, N = 1024, Zipf counts and targets, SGD) for each layer named;
first one step of each variant from the same parameters and seed, whose losses and gradients must
agree exactly; then the bench's own paired timing (``bench.timing``): 20 repetitions of 5 steps
per variant, order alternating. Prints each variant's median time per step and the median (and
quartiles) of the repetitions' ratios (above 1: the pool faster).
"""
from __future__ import annotations

import sys
from pathlib import Path

from bigvocab.bench.operations import make_optimizer
from bigvocab.outputs.step_buffers import MIN_BYTES, STEP_BUFFERS

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ab_steps import assert_same_step, bench_layer, paired_steps, print_pair  # noqa: E402  (results/ab_steps.py)


def use(variant: str) -> None:
    STEP_BUFFERS.min_bytes = MIN_BYTES if variant == "pooled" else 1 << 62


def main() -> None:
    vocab, names = int(sys.argv[1]), sys.argv[2].split(",")
    for name in names:
        layer, work = bench_layer(name, vocab)
        assert_same_step(layer, work, use, "fresh", "pooled")
        summary = paired_steps(layer, make_optimizer(layer), work, use, "fresh", "pooled")
        print_pair(f"V={vocab} {name}", "fresh", "pooled", summary)
        use("pooled")


if __name__ == "__main__":
    main()
