"""Gathers and scatters of U rows of a (1M, 256) float32 table, into a fresh or a reused output.

    for thp in 1 0; do THP_MEM_ALLOC_ENABLE=$thp python results/thp-mid-size/fresh_gather.py; done   # fresh_gather.log

2 threads; each figure the mean ms of 40 calls after one untimed call, three rounds. Written to
see whether PyTorch's huge-page switch, which the `bigvocab` command turns on, slows the
mid-size (2-32 MiB) tensors a sampling layer's step allocates afresh.
"""
import os
import time

import torch

torch.set_num_threads(2)
V, H = 1_000_000, 256
table = torch.randn(V, H)


def ms(fn, calls: int = 40) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e3


print(f"THP_MEM_ALLOC_ENABLE={os.environ.get('THP_MEM_ALLOC_ENABLE', '')}")
for rows in (5_700, 20_000):
    ids = torch.unique(torch.randint(0, V, (rows,)))
    values = torch.randn(ids.numel(), H)
    out = torch.empty(ids.numel(), H)
    gradient = torch.sparse_coo_tensor(ids.unsqueeze(0), values, (V, H), check_invariants=False)
    for _ in range(3):
        print(
            f"U={ids.numel():,} ({ids.numel() * H * 4 / 2**20:.1f} MiB):"
            f" index_select fresh {ms(lambda: table.index_select(0, ids)):.2f}"
            f" | into a reused out {ms(lambda: torch.index_select(table, 0, ids, out=out)):.2f}"
            f" | fresh empty+fill {ms(lambda: torch.empty(ids.numel(), H).fill_(1.0)):.2f}"
            f" | table.add_(sparse rows) {ms(lambda: table.add_(gradient, alpha=-0.1)):.2f} ms",
            flush=True,
        )
