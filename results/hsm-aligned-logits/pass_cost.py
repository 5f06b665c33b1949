"""What is left between the two exact passes once the product is the same: ``full``'s
``torch.log_softmax`` over (n, V) logits against ``hsm``'s compiled top-down pass
(``tree_kernels.binary_leaf_log_probs``: softplus and walk) over (n, V - 1) node logits, on
torch's threads.

    THP_MEM_ALLOC_ENABLE=1 python results/hsm-aligned-logits/pass_cost.py   # pass_cost.log

V = 10k (the bench's Huffman tree), n = 419 (the bench's test-time rows) and 1024; median of 7
calls after one untimed call, two rounds; ns per (row, class) and per (row, node) per thread.
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

from bigvocab.outputs.tree_kernels import binary_leaf_log_probs

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ab_steps import bench_layer, median_ms  # noqa: E402  (results/ab_steps.py)

VOCAB, CALLS = 10_000, 7


def main() -> None:
    layer, _ = bench_layer("hsm[huffman]", VOCAB)
    children = layer._children.view(-1, 2)
    threads = torch.get_num_threads()
    torch.manual_seed(0)
    for rows in (419, 1024):
        full_logits = torch.randn(rows, VOCAB)
        node_logits = torch.randn(rows, VOCAB - 1)
        out = torch.empty(rows, VOCAB)
        for round_ in range(2):
            softmax = median_ms(lambda: torch.log_softmax(full_logits, dim=1, out=out), CALLS)
            tree = median_ms(lambda: binary_leaf_log_probs(node_logits, children, threads=threads, out=out), CALLS)
            per = rows * VOCAB / threads / 1e6
            print(f"n = {rows}, round {round_ + 1}: log_softmax {softmax:.2f} ms ({softmax / per:.2f} ns an element "
                  f"a thread), hsm pass {tree:.2f} ms ({tree / per:.2f} ns a node a thread), {tree / softmax:.2f}x",
                  flush=True)


if __name__ == "__main__":
    main()
