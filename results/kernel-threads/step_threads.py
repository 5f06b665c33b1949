"""A V = 1M training step at two torch threads with the pair kernels' rows split three ways,
alternating in one process: ``rows`` (equal row counts, as before this change, but on the new
pool), ``work`` (equal numbers of pairs) and ``one`` (the kernels on the caller's thread).

    python results/kernel-threads/step_threads.py {hsm,nce,neg,sampled} [ROUNDS]

The layer, workload and optimiser are the bench's (Zipf counts, N = 1024, H = 256, SGD), hsm on
the balanced tree. Prints the median step of each mode.
"""
import statistics
import sys
import time

import torch

from bigvocab.bench.operations import make_optimizer, make_workload, training_step
from bigvocab.factory import create_output
from bigvocab.outputs import kernel_threads

name = sys.argv[1]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 15
torch.set_num_threads(2)
V, N, H = 1_000_000, 1024, 256
counts = [max(1, 10_000_000 // (rank + 1)) for rank in range(V)]
layer = create_output(name, H, V, counts=counts, **({"tree": "balanced"} if name == "hsm" else {}))
work = make_workload(counts, H, N, N, seed=0, device=torch.device("cpu"))
optimizer = make_optimizer(layer)
balanced_bounds, minimum = kernel_threads.range_bounds, kernel_threads.MIN_WORK_PER_THREAD
modes = {
    "rows": (lambda size, parts, work=None: balanced_bounds(size, parts), minimum),
    "work": (balanced_bounds, minimum),
    "one": (balanced_bounds, float("inf")),
}
times = {mode: [] for mode in modes}
for round_ in range(rounds + 2):
    for mode, (bounds, least) in modes.items():
        kernel_threads.range_bounds, kernel_threads.MIN_WORK_PER_THREAD = bounds, least
        start = time.perf_counter()
        training_step(layer, optimizer, work)
        if round_ >= 2:
            times[mode].append(time.perf_counter() - start)
print(name, "  ".join(f"{mode} {statistics.median(t) * 1e3:.1f} ms" for mode, t in times.items()), flush=True)
