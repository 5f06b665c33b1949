"""Median training step (ms) of a layer at V = 1M (H = 256, N = 1024, the bench's workload and
SGD step, 2 threads; 3 warm-up steps, then the median of 15), printed with the huge-page setting.

    for round in 1 2; do for name in neg nce hsm target sampled; do for thp in 0 1; do
        THP_MEM_ALLOC_ENABLE=$thp python results/thp-mid-size/steps.py $name; done; done; done   # steps.log

One process per (layer, setting), alternating the setting, since PyTorch reads it once.
"""
import os
import statistics
import sys
import time

import torch

from bigvocab.bench.operations import make_optimizer, make_workload, training_step
from bigvocab.factory import create_output

torch.set_num_threads(2)
H, N, V = 256, 1024, 1_000_000
name = sys.argv[1]
counts = [max(1, 10_000_000 // (rank + 1)) for rank in range(V)]
layer = create_output(name, H, V, counts=counts)
work = make_workload(counts, H, N, N, seed=0, device=torch.device("cpu"))
optimizer = make_optimizer(layer)
for _ in range(3):
    training_step(layer, optimizer, work)
times = []
for _ in range(15):
    start = time.perf_counter()
    training_step(layer, optimizer, work)
    times.append((time.perf_counter() - start) * 1e3)
print(f"THP_MEM_ALLOC_ENABLE={os.environ.get('THP_MEM_ALLOC_ENABLE', '')} {name}: median {statistics.median(times):.2f} ms")
