"""Fresh mid-size and GiB tensors under one C-allocator policy (see step_time.py for POLICY).

    for policy in default heap32 heap; do for thp in 0 1; do
        THP_MEM_ALLOC_ENABLE=$thp python results/malloc-reuse/fresh_tensor.py $policy; done; done

12,500 rows gathered from a (1M, 256) float32 table (12.2 MiB) into a fresh and into a reused
output, the same size made afresh and filled, and a fresh 1 GiB tensor filled; medians of 20 (5).
"""
import ctypes
import sys
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from step_time import POLICIES  # noqa: E402

policy = sys.argv[1]
libc = ctypes.CDLL("libc.so.6")
for parameter, value in POLICIES[policy]:
    assert libc.mallopt(parameter, value) == 1

import os  # noqa: E402

import torch  # noqa: E402

table = torch.randn(1_000_000, 256)
ids = torch.randint(0, 1_000_000, (12_500,)).sort().values
out = torch.empty(12_500, 256)


def median_ms(operation, repeats=20):
    operation()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        operation()
        times.append(time.perf_counter() - start)
    return sorted(times)[repeats // 2] * 1e3


print(f"{policy:8s} THP={os.environ.get('THP_MEM_ALLOC_ENABLE', '0')}: "
      f"gather fresh {median_ms(lambda: table.index_select(0, ids)):.2f} ms, "
      f"reused {median_ms(lambda: torch.index_select(table, 0, ids, out=out)):.2f} ms, "
      f"empty+fill 12 MiB {median_ms(lambda: torch.empty(12_500, 256).fill_(0)):.2f} ms, "
      f"1 GiB {median_ms(lambda: torch.empty(1 << 28).fill_(0), 5):.1f} ms", flush=True)
