"""Equal rows or equal work per thread for a skewed call of the pair kernels: P pairs whose ids
follow a Zipf law over 50k classes, the table holding the distinct ones, sorted (as a sampling
layer's step gives it: the frequent first), H = 256, N = 8192 examples, two threads, the two
splits and one thread alternating in one process.

    python results/kernel-threads/skewed_split.py [ROUNDS] [PAIRS,...]
"""
import statistics
import sys
import time

import torch

from bigvocab.outputs import kernel_threads
from bigvocab.outputs.pair_kernels import flat_pair_dots

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 30
sizes = [int(p) for p in sys.argv[2].split(",")] if len(sys.argv) > 2 else [65536, 262144]
torch.set_num_threads(2)
H, N, U = 256, 8192, 50_000
generator = torch.Generator().manual_seed(0)
zipf = 1.0 / torch.arange(1, U + 1, dtype=torch.float64)
even = kernel_threads.range_bounds
modes = {
    "rows": (lambda size, parts, work=None: even(size, parts), 1),
    "work": (even, 1),
    "one": (even, float("inf")),
}
print(f"{'pairs':>7} " + " ".join(f"{m + ' ms':>9}" for m in modes))
for pairs in sizes:
    hidden = torch.randn(N, H, generator=generator, requires_grad=True)
    example = torch.randint(0, N, (pairs,), generator=generator)
    distinct, row = torch.unique(torch.multinomial(zipf, pairs, replacement=True, generator=generator), return_inverse=True)
    table = torch.randn(distinct.numel(), H, generator=generator, requires_grad=True)
    upstream = torch.randn(pairs, generator=generator)
    times = {mode: [] for mode in modes}
    for round_ in range(rounds + 2):
        for mode, (bounds, least) in modes.items():
            kernel_threads.range_bounds, kernel_threads.MIN_WORK_PER_THREAD = bounds, least
            start = time.perf_counter()
            torch.autograd.grad(flat_pair_dots(hidden, table, example, row), (hidden, table), upstream)
            if round_ >= 2:
                times[mode].append(time.perf_counter() - start)
    print(f"{pairs:>7} " + " ".join(f"{statistics.median(times[m]) * 1e3:>9.1f}" for m in modes), flush=True)
