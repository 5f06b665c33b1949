"""The compiled top-down pass of ``hsm``'s exact ``log_softmax`` (``tree_kernels``) at V = 1M on a
balanced tree, n rows, its rows on one thread or split over two, alternating, median of 20.

    python results/kernel-threads/tree_pass_threads.py
"""
import statistics
import time

import torch

from bigvocab.factory import create_output
from bigvocab.outputs import kernel_threads
from bigvocab.outputs.tree_kernels import binary_leaf_log_probs

torch.set_num_threads(2)
V = 1_000_000
layer = create_output("hsm", 8, V, tree="balanced")
children = layer._children.view(-1, 2)
for rows in (1, 4, 16, 64):
    logits = torch.randn(rows, V - 1)
    times = {1: [], 2: []}
    for round_ in range(22):
        for threads, least in ((1, float("inf")), (2, 1)):
            kernel_threads.MIN_WORK_PER_THREAD = least
            start = time.perf_counter()
            binary_leaf_log_probs(logits, children, threads=2)
            if round_ >= 2:
                times[threads].append(time.perf_counter() - start)
    one, two = (statistics.median(times[t]) * 1e3 for t in (1, 2))
    print(f"rows {rows:>3}: one thread {one:.1f} ms, two {two:.1f} ms ({one / two:.2f}x)", flush=True)
