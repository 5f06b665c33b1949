"""How many examples draw each block in per-example ``ais`` steps on the speed bench's workload
(V = 10k, H = 256, N = 1024, synthetic unigram targets, untrained layer, SGD as the bench):
the (example, block) rows a step scores, against N x blocks before the change.

    python results/ais-blocks/rows_per_block.py [STEPS]
"""
from __future__ import annotations

import sys

import torch

import bigvocab
from bigvocab.bench.operations import make_optimizer, make_workload, training_step
from bigvocab.bench.side_data import synthetic_side_data

V, H, N = 10_000, 256, 1024


def main(steps: int) -> None:
    torch.manual_seed(0)
    counts = synthetic_side_data(V).counts
    workload = make_workload(counts, H, N, N, seed=0, device=torch.device("cpu"))
    layer = bigvocab.create_output("ais", H, V, counts=counts)
    optimizer = make_optimizer(layer)
    for step in range(steps):
        training_step(layer, optimizer, workload)
        per_block = layer.last_examples_per_block
        print(f"step {step}: examples per block {per_block}: {sum(per_block)} rows scored, "
              f"{N * len(per_block)} before (N x {len(per_block)} blocks)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4)
