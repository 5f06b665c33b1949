"""Declared bytes of a training step at the bench's shapes, counted per scored pair (sessions
16-29) and per distinct row (session 30), for the tree and sampling layers.

    python results/distinct-row-cost/declared.py [V ...]

The old count is rebuilt here as the old code declared it: a tree layer read one row of
(H + bias) numbers three times per scored (example, node) pair; a sampling layer k + N rows when
its samples are shared, N (k + 1) otherwise; ``target`` already declared its distinct rows.
Prints both byte counts, their ratio, and the seconds the new count takes to declare.
"""

from __future__ import annotations

import sys
import time

import torch

from bigvocab.bench.operations import make_workload
from bigvocab.bench.selection import candidate_by_label
from bigvocab.bench.side_data import build_layer, synthetic_side_data
from bigvocab.outputs.cost import hidden_cost

LABELS = ["hsm[huffman]", "hsm[balanced]", "hsm[class]", "nce", "neg[per-example]", "neg[shared]", "sampled", "ais[per-example]", "ais[shared]", "target"]
H, N, SEED = 256, 1024, 0


def old_rows(label: str, layer, pairs: float) -> float:
    if label.startswith("hsm"):
        return pairs
    if label == "target":
        return pairs / N
    return layer.num_samples + N if layer.shared else pairs


def main(sizes: list[int]) -> None:
    torch.manual_seed(SEED)
    for vocab in sizes:
        side = synthetic_side_data(vocab, seed=SEED)
        target = make_workload(side.counts, H, N, 1, seed=SEED, device=torch.device("cpu")).target
        hidden = hidden_cost(N, H, element_size=4, training=True)
        print(f"V = {vocab:,}, N = {N}, H = {H}")
        print(f"{'layer':18s} {'pairs':>10s} {'old MB':>12s} {'distinct MB':>12s} {'ratio':>6s} {'declare s':>9s}")
        for label in LABELS:
            layer, _ = build_layer(candidate_by_label(label), H, vocab, side, num_samples=None)
            start = time.perf_counter()
            cost = layer.train_cost(target)
            seconds = time.perf_counter() - start
            pairs = cost.flops / (6 * H)
            has_bias = any(name.endswith("bias") for name, _ in layer.named_parameters())
            old = 3 * old_rows(label, layer, pairs) * (H + has_bias) * 4 + hidden.bytes
            print(f"{label:18s} {pairs:10.0f} {old / 1e6:12.1f} {cost.bytes / 1e6:12.1f} {cost.bytes / old:6.3f} {seconds:9.3f}")
        print()


if __name__ == "__main__":
    main([int(v) for v in sys.argv[1:]] or [10_000, 100_000, 1_000_000])
