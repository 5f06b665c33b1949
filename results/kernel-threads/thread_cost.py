"""Where a second thread starts to pay in the pair kernels: forward and backward of
``flat_pair_dots`` (H = 256, N = 1024 examples, P pairs spread evenly over P / 4 rows) with the
kernels on one thread and on two, alternating in one process, median of the rounds.

    python results/kernel-threads/thread_cost.py [ROUNDS]

Each call of a kernel does P x H multiply-adds; the break-even P x H sets
``kernel_threads.MIN_WORK_PER_THREAD``.
"""
import statistics
import sys
import time

import torch

from bigvocab.outputs import kernel_threads
from bigvocab.outputs.pair_kernels import flat_pair_dots

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 200
torch.set_num_threads(2)
H, N = 256, 1024
generator = torch.Generator().manual_seed(0)
print(f"{'pairs':>7} {'MACs/call':>10} {'1 thread us':>12} {'2 threads us':>13} {'1/2':>6}")
for pairs in [int(p) for p in sys.argv[2].split(",")] if len(sys.argv) > 2 else [16, 256, 1024, 2048, 4096, 8192, 16384, 32768, 65536]:
    hidden = torch.randn(N, H, generator=generator, requires_grad=True)
    table = torch.randn(max(1, pairs // 4), H, generator=generator, requires_grad=True)
    example = torch.randint(0, N, (pairs,), generator=generator)
    row = torch.randint(0, table.shape[0], (pairs,), generator=generator)
    upstream = torch.randn(pairs, generator=generator)
    times = {1: [], 2: []}
    for round_ in range(rounds + 5):
        for threads, minimum in ((1, float("inf")), (2, 1)):
            kernel_threads.MIN_WORK_PER_THREAD = minimum
            start = time.perf_counter()
            torch.autograd.grad(flat_pair_dots(hidden, table, example, row), (hidden, table), upstream)
            if round_ >= 5:
                times[threads].append(time.perf_counter() - start)
    one, two = (statistics.median(times[t]) * 1e6 for t in (1, 2))
    print(f"{pairs:>7} {pairs * H:>10} {one:>12.1f} {two:>13.1f} {one / two:>6.2f}", flush=True)
