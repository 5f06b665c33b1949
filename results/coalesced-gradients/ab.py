"""Training steps with the layers' sparse gradients marked coalesced after accumulation when their
rows strictly increase (the library: ``outputs/sparse_grads.mark_distinct_rows``) or never marked
(the code before), alternating in one process.

    THP_MEM_ALLOC_ENABLE=1 python results/coalesced-gradients/ab.py 1000000 sgd 'nce,hsm[balanced],hsm[huffman],neg'       # ab-hook-1m-sgd.log
    THP_MEM_ALLOC_ENABLE=1 python results/coalesced-gradients/ab.py 1000000 adagrad 'nce,hsm[balanced],hsm[huffman],neg'   # ab-hook-1m-adagrad.log

(The copy of this script at eeb492a compared the mark set in ``_GatherRows.backward`` by
``marked-gradients.patch``: ab-1m-sgd.log, ab-1m-adagrad.log.) The bench's workload (H = 256,
N = 1024, Zipf counts and targets) with the bench's SGD or ``torch.optim.Adagrad`` (lr 0.1);
first one step of each variant from the same parameters and seed, whose losses and gradients must
agree exactly; then the bench's paired timing (20 repetitions of the mean of 5 steps, order
alternating). Prints each variant's median time per step and the median (and quartiles) of the
ratios (above 1: marking faster).
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

from bigvocab.bench.operations import make_optimizer
from bigvocab.outputs import sparse_grads

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ab_steps import assert_same_step, bench_layer, paired_steps, print_pair  # noqa: E402  (results/ab_steps.py)

LIBRARY = sparse_grads.rows_are_distinct


def use(variant: str) -> None:
    sparse_grads.rows_are_distinct = LIBRARY if variant == "marked" else (lambda grad: grad.is_coalesced())


def main() -> None:
    vocab, optimizer_name, names = int(sys.argv[1]), sys.argv[2], sys.argv[3].split(",")
    for name in names:
        layer, work = bench_layer(name, vocab)
        assert_same_step(layer, work, use, "unmarked", "marked")
        if optimizer_name == "sgd":
            optimizer = make_optimizer(layer)
        else:
            optimizer = torch.optim.Adagrad([p for p in layer.parameters() if p.requires_grad], lr=0.1)
        summary = paired_steps(layer, optimizer, work, use, "unmarked", "marked")
        print_pair(f"V={vocab} {optimizer_name} {name}", "unmarked", "marked", summary)
        use("marked")


if __name__ == "__main__":
    main()
