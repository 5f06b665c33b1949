"""Distinct ids by the compiled bitmap (``functional.distinct_ids`` on the CPU, this checkout)
against torch's marks or sort (``functional.marked_or_sorted_ids``, the code before), alternating
in one process, 2 threads, 3 rounds.

``alone``: the call alone on N x M Zipf-distributed ids at V (medians of 31).
``steps``: the bench's training step (H = 256, N = 1024, SGD) of layers whose scorers and trees
call it, both ways on the same layer (medians of 15 steps).

    THP_MEM_ALLOC_ENABLE=1 PYTHONPATH=src python results/distinct-ids-bitmap/ab.py alone V:M [V:M ...]
    THP_MEM_ALLOC_ENABLE=1 PYTHONPATH=src python results/distinct-ids-bitmap/ab.py steps V [V ...]
"""
import sys
import time
from pathlib import Path

import numpy as np
import torch

import bigvocab.outputs.hsm as hsm
import bigvocab.outputs.scorers.rows as rows
from bigvocab.bench.operations import make_optimizer, make_workload, training_step
from bigvocab.factory import create_output
from bigvocab.outputs.functional import distinct_ids, marked_or_sorted_ids

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "hsm-1m-log-softmax"))
from hsm_vs_full import median_ms  # noqa: E402  (one warm-up call, then the median)

N, H = 1024, 256
LAYERS = ("nce", "neg", "hsm")
WAYS = (("torch", marked_or_sorted_ids), ("bitmap", distinct_ids))




def alone(spec: str) -> None:
    vocab, per_row = map(int, spec.split(":"))
    weights = 1.0 / np.arange(1, vocab + 1)
    ids = torch.from_numpy(np.random.default_rng(0).choice(vocab, size=(N, per_row), p=weights / weights.sum()))
    for round_ in range(3):
        times = {label: median_ms(lambda: way(ids, vocab), 31) for label, way in WAYS}
        print(f"alone V={vocab} M={N * per_row} round {round_ + 1}: torch {times['torch']:.3f} ms, "
              f"bitmap {times['bitmap']:.3f} ms, {times['torch'] / times['bitmap']:.1f}x", flush=True)


def steps(vocab: int) -> None:
    counts = [max(1, 10_000_000 // (rank + 1)) for rank in range(vocab)]
    work = make_workload(counts, H, N, N, seed=0, device=torch.device("cpu"))
    for name in LAYERS:
        layer = create_output(name, H, vocab, counts=counts)
        optimizer = make_optimizer(layer)
        for round_ in range(3):
            times = {}
            for label, way in WAYS:
                rows.distinct_ids = hsm.distinct_ids = way
                times[label] = median_ms(lambda: training_step(layer, optimizer, work), 15)
            print(f"steps V={vocab} {name} round {round_ + 1}: torch {times['torch']:.2f} ms, bitmap "
                  f"{times['bitmap']:.2f} ms, {times['torch'] / times['bitmap']:.2f}x", flush=True)
        rows.distinct_ids = hsm.distinct_ids = distinct_ids


def main() -> None:
    torch.set_num_threads(2)
    run = {"alone": alone, "steps": lambda argument: steps(int(argument))}[sys.argv[1]]
    for argument in sys.argv[2:]:
        run(argument)


if __name__ == "__main__":
    main()
