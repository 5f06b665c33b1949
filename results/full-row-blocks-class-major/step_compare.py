"""`full`'s default training step before and after class-major row blocks, side by side in one process.

    python results/full-row-blocks-class-major/step_compare.py V [--before REV] [--rounds R]

H = 256, N = 1024, the speed bench's step (SGD, gradients set to None), each layer at its default
budgets (no ``max_chunk_elements``). The "before" variant is ``bigvocab/outputs/functional.py`` as
it was at git revision REV (default 8b8d93c: row-major row blocks within the 64 MiB chunk budget,
so vocabulary chunks at V = 1M), loaded beside the working tree's and swapped into ``full``'s
scorer for its steps. Each round times one step of each, the order alternating; the summary gives
each one's median seconds, GFLOP/s (the 6·N·V·H flops a softmax step must do) and that as a
fraction of the best dense matrix-multiply rate measured at the start.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import torch

from bigvocab.bench.operations import make_optimizer, make_workload, training_step
from bigvocab.bench.roofline import matmul_shapes, measure_matmul_rate
from bigvocab.factory import create_output
from bigvocab.outputs import functional
from bigvocab.outputs.scorers import rows as rows_scorer

HIDDEN, ROWS = 256, 1024
RESULTS = Path(__file__).parents[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("vocab", type=int)
    parser.add_argument("--before", default="8b8d93c")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    class_major = _load(RESULTS / "full-class-major" / "step_compare.py")
    rate = measure_matmul_rate(matmul_shapes(HIDDEN, ROWS), torch.device("cpu"))["best_gflops"]
    print(f"threads {torch.get_num_threads()}  matmul rate {rate:.1f} GFLOP/s  V {args.vocab:,}", flush=True)
    counts = [max(1, 10_000_000 // (rank + 1)) for rank in range(args.vocab)]
    work = make_workload(counts, HIDDEN, ROWS, ROWS, seed=0, device=torch.device("cpu"))
    variants = {f"before ({args.before})": class_major.module_at(args.before), "after (working tree)": functional}
    torch.manual_seed(0)
    layer = create_output("full", HIDDEN, args.vocab)
    optimizer = make_optimizer(layer)

    def swap_in(name: str) -> None:
        rows_scorer.chunked_logsumexp = variants[name].chunked_logsumexp

    times = class_major.timed_rounds(list(variants), swap_in, lambda: training_step(layer, optimizer, work), args.rounds)
    class_major.load_file(RESULTS / "full-row-blocks" / "step_compare.py").print_summary(times, args.vocab, rate)


def _load(path: Path):
    """Another results script as a module (its ``main`` does not run)."""
    spec = importlib.util.spec_from_file_location(path.parent.name.replace("-", "_"), path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    main()
