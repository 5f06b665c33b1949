"""`full`'s training step with and without the row-blocked pass, side by side in one process.

    python results/full-row-blocks/step_compare.py V [BUDGET ...] [--rounds R]

H = 256, N = 1024, the speed bench's step (SGD, gradients set to None). Each round times one
step of every variant in turn (the order rotating from round to round); the script prints each
variant's median seconds, its GFLOP/s (the 6·N·V·H flops a softmax step must do) and that as a
fraction of the best dense matrix-multiply rate measured at the start (the bench's own shapes).
Variant "chunks@B" is the vocabulary-chunked pass (four products) at a budget of B logits,
"rows@B" the row-blocked pass (three products) at the same budget.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from bigvocab.bench.operations import make_optimizer, make_workload, training_step
from bigvocab.bench.roofline import matmul_shapes, measure_matmul_rate
from bigvocab.factory import create_output
from bigvocab.outputs import functional

HIDDEN, ROWS = 256, 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("vocab", type=int)
    parser.add_argument("budgets", type=int, nargs="*", default=[1 << 24])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rate = measure_matmul_rate(matmul_shapes(HIDDEN, ROWS), torch.device("cpu"))["best_gflops"]
    print(f"threads {torch.get_num_threads()}  matmul rate {rate:.1f} GFLOP/s  V {args.vocab:,}")
    counts = [max(1, 10_000_000 // (rank + 1)) for rank in range(args.vocab)]
    work = make_workload(counts, HIDDEN, ROWS, ROWS, seed=0, device=torch.device("cpu"))
    variants = {}
    for budget in args.budgets:
        for kind in ("chunks", "rows"):
            torch.manual_seed(0)
            layer = create_output("full", HIDDEN, args.vocab, max_chunk_elements=budget)
            variants[f"{kind}@{budget}"] = (kind, layer, make_optimizer(layer))
    times: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for round_index in range(args.rounds + 1):  # round 0 warms up
        order = names[round_index % len(names):] + names[: round_index % len(names)]
        for name in order:
            kind, layer, optimizer = variants[name]
            minimum = functional.MIN_ROW_BLOCK if kind == "rows" else 1 << 62
            saved, functional.MIN_ROW_BLOCK = functional.MIN_ROW_BLOCK, minimum
            try:
                start = time.perf_counter()
                training_step(layer, optimizer, work)
                elapsed = time.perf_counter() - start
            finally:
                functional.MIN_ROW_BLOCK = saved
            if round_index:
                times[name].append(elapsed)
    print_summary(times, args.vocab, rate)


def print_summary(times: dict[str, list[float]], vocab: int, rate: float) -> None:
    """Each variant's median step, its GFLOP/s (the 6·N·V·H flops a softmax step must do), that
    as a fraction of the matmul ``rate``, and the [min-max] of its steps."""
    flops = 6.0 * ROWS * vocab * HIDDEN
    width = max(map(len, times))
    for name, steps in times.items():
        seconds = statistics.median(steps)
        gflops = flops / seconds / 1e9
        print(f"{name:>{width}}  {seconds:8.3f} s  {gflops:6.1f} GFLOP/s  {100 * gflops / rate:5.1f}% of matmul"
              f"  [{min(steps):.3f}-{max(steps):.3f}]")


if __name__ == "__main__":
    main()
