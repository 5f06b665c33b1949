"""How much a fresh 40 MB tensor costs to fill (median ms of 7), before and after the process has
touched and freed a few GiB, and how long the cheap state lasts.

    for thp in 1 0; do THP_MEM_ALLOC_ENABLE=$thp python results/vm-fresh-memory/fresh_after_touch.py; done
"""
import os
import statistics
import time

import torch

torch.set_num_threads(2)


def fresh_fill_ms(rows: int = 1024, cols: int = 10_000, calls: int = 7) -> float:
    times = []
    for _ in range(calls + 1):
        start = time.perf_counter()
        torch.empty(rows, cols).fill_(1.0)
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:]) * 1e3


print(f"THP_MEM_ALLOC_ENABLE={os.environ.get('THP_MEM_ALLOC_ENABLE', '0')}")
print(f"fresh 40 MB, before: {fresh_fill_ms():.2f} ms")
start = time.perf_counter()
touched = torch.ones(4 * 2**30 // 4)
print(f"touching 4 GiB took {time.perf_counter() - start:.2f} s")
del touched
print(f"fresh 40 MB, right after freeing it: {fresh_fill_ms():.2f} ms")
for wait in (1, 2, 4, 8):
    time.sleep(wait)
    print(f"fresh 40 MB, {wait} s later: {fresh_fill_ms():.2f} ms")
