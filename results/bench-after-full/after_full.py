"""Does a layer's training step run slower right after a step of ``full`` at the same V, as the
bench's paired timing runs it?

    THP_MEM_ALLOC_ENABLE=1 python results/bench-after-full/after_full.py 1000000 'hsm[balanced],neg,nce'

The bench's workload (H = 256, N = 1024, SGD). For each layer named: 30 steps timed one by one
("warm": the layer alone, after 5 untimed steps), then one training step of ``full`` (its (V, H)
weight and gradient: 2 GiB at V = 1M), then 30 steps of the layer timed one by one ("after
full"); twice. Prints the median of each group and the first steps after ``full``'s.
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from bigvocab.bench.operations import make_optimizer, training_step

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ab_steps import bench_layer, step_times  # noqa: E402  (results/ab_steps.py)

STEPS = 30


def main() -> None:
    vocab, names = int(sys.argv[1]), sys.argv[2].split(",")
    full, full_work = bench_layer("full", vocab)
    full_optimizer = make_optimizer(full)
    for name in names:
        layer, work = bench_layer(name, vocab)
        optimizer = make_optimizer(layer)
        step_times(layer, optimizer, work, 5)
        for round_ in (1, 2):
            warm = step_times(layer, optimizer, work, STEPS)
            start = time.perf_counter()
            training_step(full, full_optimizer, full_work)
            full_seconds = time.perf_counter() - start
            after = step_times(layer, optimizer, work, STEPS)
            first = " ".join(f"{t * 1e3:.1f}" for t in after[:6])
            print(f"V={vocab} {name} round {round_}: warm median {statistics.median(warm) * 1e3:.2f} ms; "
                  f"full's step {full_seconds:.1f} s; after it median {statistics.median(after) * 1e3:.2f} ms, "
                  f"mean {statistics.fmean(after) * 1e3:.2f} ms, first six {first} ms", flush=True)


if __name__ == "__main__":
    main()
