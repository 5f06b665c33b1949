"""`full`'s training step with row-major and class-major vocabulary chunks, side by side in one process.

    python results/full-class-major/step_compare.py V [--before REV] [--budget B] [--rounds R]

H = 256, N = 1024, the speed bench's step (SGD, gradients set to None), the vocabulary-chunked
pass (the row-blocked pass switched off in both, so that both run the path that changed; with
``--row-blocks`` a third variant runs the working tree's default path, row blocks where they fit). The
"before" variant is ``bigvocab/outputs/functional.py`` as it was at git revision REV (default
10b1c92, the last commit with row-major chunks), loaded beside the working tree's and swapped
into ``full``'s scorer for its steps. Each round times one step of each variant, the order
alternating; the script prints each one's median seconds, GFLOP/s (the 6·N·V·H flops a softmax
step must do) and that as a fraction of the best dense matrix-multiply rate measured at the start.
"""
from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from bigvocab.bench.operations import make_optimizer, make_workload, training_step
from bigvocab.bench.roofline import matmul_shapes, measure_matmul_rate
from bigvocab.factory import create_output
from bigvocab.outputs import functional
from bigvocab.outputs.scorers import rows as rows_scorer

HIDDEN, ROWS = 256, 1024


def load_file(path: Path):
    """The Python file at ``path`` as a module named after it."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def module_at(revision: str):
    """``bigvocab.outputs.functional`` as it was at ``revision``, as a separate module."""
    source = subprocess.run(
        ["git", "show", f"{revision}:src/bigvocab/outputs/functional.py"], check=True, capture_output=True, text=True
    ).stdout
    path = Path(tempfile.mkdtemp()) / f"functional_{revision}.py"
    path.write_text(source)
    return load_file(path)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("vocab", type=int)
    parser.add_argument("--before", default="10b1c92")
    parser.add_argument("--budget", type=int, default=functional.DEFAULT_CHUNK_ELEMENTS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--row-blocks", action="store_true")
    args = parser.parse_args()
    rate = measure_matmul_rate(matmul_shapes(HIDDEN, ROWS), torch.device("cpu"))["best_gflops"]
    print(f"threads {torch.get_num_threads()}  matmul rate {rate:.1f} GFLOP/s  V {args.vocab:,}", flush=True)
    counts = [max(1, 10_000_000 // (rank + 1)) for rank in range(args.vocab)]
    work = make_workload(counts, HIDDEN, ROWS, ROWS, seed=0, device=torch.device("cpu"))
    before, no_row_blocks = module_at(args.before), 1 << 62
    variants = {"row-major (before)": (before, no_row_blocks), "class-major (after)": (functional, no_row_blocks)}
    if args.row_blocks:
        variants["default path (after)"] = (functional, functional.MIN_ROW_BLOCK)
    torch.manual_seed(0)
    layer = create_output("full", HIDDEN, args.vocab, max_chunk_elements=args.budget)
    optimizer = make_optimizer(layer)

    def swap_in(name: str) -> None:
        module, module.MIN_ROW_BLOCK = variants[name]
        rows_scorer.chunked_logsumexp = module.chunked_logsumexp

    times = timed_rounds(list(variants), swap_in, lambda: training_step(layer, optimizer, work), args.rounds)
    load_file(Path(__file__).parents[1] / "full-row-blocks" / "step_compare.py").print_summary(times, args.vocab, rate)


def timed_rounds(names: list[str], swap_in, step, rounds: int) -> dict[str, list[float]]:
    """Seconds of ``step()`` for each variant in ``rounds`` rounds after a warm-up round, the
    order alternating from round to round; ``swap_in(name)`` makes that variant the live one."""
    times: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(rounds + 1):  # round 0 warms up
        for name in names if round_index % 2 == 0 else names[::-1]:
            swap_in(name)
            start = time.perf_counter()
            step()
            elapsed = time.perf_counter() - start
            if round_index:
                times[name].append(elapsed)
                print(f"  round {round_index} {name}: {elapsed:.3f} s", flush=True)
    return times


if __name__ == "__main__":
    main()
