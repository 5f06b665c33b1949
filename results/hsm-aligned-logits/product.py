"""The node-logit product of the exact ``hsm`` pass written into rows of V - 1 (odd) columns, or
into the same columns of rows padded to a multiple of 16, alternating.

    THP_MEM_ALLOC_ENABLE=1 python results/hsm-aligned-logits/product.py   # product.log

torch.addmm(bias, h, W^T) with h (n, 256), W (V - 1, 256), as ``hsm._example_logits`` runs it,
for the n the bench's ``log_softmax`` timing uses (N' = 419, 41, 4 at V = 10k, 100k, 1M) and
for n = 1024; median of 7 calls after one untimed call, two rounds. Also checks that the two
products agree (to float32 rounding: the blocking may differ).
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

from bigvocab.outputs.tree_kernels import aligned_width

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ab_steps import median_ms  # noqa: E402  (results/ab_steps.py)

HIDDEN = 256
CALLS = 7


def main() -> None:
    torch.manual_seed(0)
    for vocab, rows_list in ((10_000, (419, 1024)), (100_000, (41, 1024)), (1_000_000, (4, 64))):
        nodes = vocab - 1
        weight, bias = torch.randn(nodes, HIDDEN), torch.randn(nodes)
        for rows in rows_list:
            hidden = torch.randn(rows, HIDDEN)
            odd = torch.empty(rows, nodes)
            padded = torch.empty(rows, aligned_width(nodes))[:, :nodes]
            for round_ in range(2):
                before = median_ms(lambda: torch.addmm(bias, hidden, weight.t(), out=odd), CALLS)
                after = median_ms(lambda: torch.addmm(bias, hidden, weight.t(), out=padded), CALLS)
                print(f"V - 1 = {nodes:,}, n = {rows}, round {round_ + 1}: rows of {nodes:,} {before:.2f} ms, "
                      f"padded to {aligned_width(nodes):,} {after:.2f} ms, {before / after:.2f}x", flush=True)
            torch.testing.assert_close(odd, padded)


if __name__ == "__main__":
    main()
