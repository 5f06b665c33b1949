"""ais's training step with its blocks of draws scored in place in the (V, H) table (the
default) against the same step with the in-place path switched off (distinct ids and a gathered
copy of the rows, as before), alternating in one process: median ms of 10 steps each, 6 rounds.
H = 256, N = 1024, two threads, the bench's workload and SGD.

    THP_MEM_ALLOC_ENABLE=1 PYTHONPATH=src python results/ais-blocks-in-place/ab.py V
"""
import statistics
import sys
import time

import torch

from bigvocab.bench.operations import make_optimizer, make_workload, training_step
from bigvocab.factory import create_output
from bigvocab.outputs.scorers.rows import RowScorer

N, H = 1024, 256
vocab = int(sys.argv[1])
torch.set_num_threads(2)
counts = [max(1, 10_000_000 // (rank + 1)) for rank in range(vocab)]
layer = create_output("ais", H, vocab, counts=counts)
work = make_workload(counts, H, N, N, seed=0, device=torch.device("cpu"))
optimizer = make_optimizer(layer)
in_place = RowScorer._score_in_place


def median_step_ms(steps: int = 10) -> float:
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        training_step(layer, optimizer, work)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


for _ in range(3):
    training_step(layer, optimizer, work)
for round_ in range(6):
    results = {}
    for name in (("in place", "copied") if round_ % 2 == 0 else ("copied", "in place")):
        RowScorer._score_in_place = in_place if name == "in place" else (lambda self, ids: False)
        results[name] = median_step_ms()
    print(f"V={vocab} round {round_ + 1}: in place {results['in place']:.2f} ms, copied {results['copied']:.2f} ms, "
          f"ratio {results['copied'] / results['in place']:.2f}x")
