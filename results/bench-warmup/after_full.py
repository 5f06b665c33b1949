"""Step times of small layers alone, then right after a `full` step, at V = 1M, in one process.

    THP_MEM_ALLOC_ENABLE=1 python results/bench-warmup/after_full.py target sampled nce hsm neg   # after_full.log

H = 256, N = 1024, the bench's workload and SGD step, 2 threads. For each layer: 15 steps timed
one by one after 5 untimed ones ("alone"), then twice a `full` step followed by 10 timed steps of
the layer (ms). The first step after `full`'s is the one the bench timed when a layer's single
call was its whole timing (before `WARMUP_BELOW_SECONDS` in bigvocab.bench.speed).
"""
import statistics
import sys
import time

import torch

from bigvocab.bench.operations import make_optimizer, make_workload, training_step
from bigvocab.factory import create_output

torch.set_num_threads(2)
H, N, V = 256, 1024, 1_000_000
counts = [max(1, 10_000_000 // (rank + 1)) for rank in range(V)]
work = make_workload(counts, H, N, N, seed=0, device=torch.device("cpu"))
full = create_output("full", H, V)
full_optimizer = make_optimizer(full)


def timed_steps(layer, optimizer, count: int) -> list[float]:
    times = []
    for _ in range(count):
        start = time.perf_counter()
        training_step(layer, optimizer, work)
        times.append((time.perf_counter() - start) * 1e3)
    return times


for name in sys.argv[1:]:
    layer = create_output(name, H, V, counts=counts)
    optimizer = make_optimizer(layer)
    timed_steps(layer, optimizer, 5)
    alone = timed_steps(layer, optimizer, 15)
    print(f"{name} alone: median {statistics.median(alone):.1f}: " + " ".join(f"{t:.0f}" for t in alone), flush=True)
    for round_ in range(2):
        training_step(full, full_optimizer, work)
        after = timed_steps(layer, optimizer, 10)
        print(f"{name} after full step {round_}: " + " ".join(f"{t:.0f}" for t in after), flush=True)
    del layer, optimizer
