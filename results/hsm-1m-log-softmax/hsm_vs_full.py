"""Exact ``log_softmax`` of ``hsm`` (Huffman tree) against ``full`` at V = 1M, H = 256, on the 4 rows
the speed bench times there, one thread, median of 5 calls, two rounds; and where ``hsm``'s time
goes: its (4, V - 1) node-logit product, and the compiled top-down pass with its softplus.

    python results/hsm-1m-log-softmax/hsm_vs_full.py
"""
from __future__ import annotations

import time

import torch

import bigvocab
from bigvocab.bench.side_data import synthetic_side_data
from bigvocab.outputs.tree_kernels import binary_leaf_log_probs

V, H, ROWS = 1_000_000, 256, 4


def median_ms(call, repeats: int = 5) -> float:
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return sorted(times)[repeats // 2] * 1e3


def main() -> None:
    torch.set_num_threads(1)
    counts = synthetic_side_data(V).counts
    full = bigvocab.create_output("full", H, V).eval()
    hsm = bigvocab.create_output("hsm", H, V, counts=counts, tree="huffman").eval()
    hidden = torch.randn(ROWS, H)
    children = hsm._children.view(-1, 2)  # the tree's own layout, as hsm's log_softmax passes it
    with torch.no_grad():
        node_logits = hsm._example_logits(hidden)
        for _ in range(2):
            full_ms = median_ms(lambda: full.log_softmax(hidden))
            hsm_ms = median_ms(lambda: hsm.log_softmax(hidden))
            product_ms = median_ms(lambda: hsm._example_logits(hidden))
            kernel_ms = median_ms(lambda: binary_leaf_log_probs(node_logits, children, threads=1))
            softplus_ms = median_ms(lambda: torch.nn.functional.softplus(node_logits, threshold=40.0))
            print(f"full {full_ms:.1f} ms  hsm {hsm_ms:.1f} ms  (logits {product_ms:.1f}, kernel+softplus "
                  f"{kernel_ms:.1f}, softplus {softplus_ms:.1f})  ratio {full_ms / hsm_ms:.2f}x")


if __name__ == "__main__":
    main()
