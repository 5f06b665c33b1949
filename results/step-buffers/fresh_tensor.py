"""A fresh (12,400, 256) float32 tensor (12.1 MiB, nce's gathered rows at V = 1M) against one
reused, in isolation: the median of 30 calls of each, three rounds.

    for thp in 1 0; do THP_MEM_ALLOC_ENABLE=$thp python results/step-buffers/fresh_tensor.py; done   # fresh_tensor.log
"""
import time

import numpy as np
import torch

torch.manual_seed(0)
V, H, U = 1_000_000, 256, 12_400
weight = torch.randn(V, H)
ids = torch.randperm(V)[:U].sort().values
reused = torch.empty(U, H)


def median_ms(call, count: int = 30) -> float:
    times = []
    for _ in range(count):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


for _ in range(3):
    print(f"gather into a fresh output {median_ms(lambda: weight.index_select(0, ids)):.2f} ms, "
          f"into a reused one {median_ms(lambda: torch.index_select(weight, 0, ids, out=reused)):.2f} ms; "
          f"fresh empty + fill {median_ms(lambda: torch.empty(U, H).fill_(1)):.2f} ms, "
          f"reused fill {median_ms(lambda: reused.fill_(1)):.2f} ms", flush=True)
