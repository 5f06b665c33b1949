"""The exact ``log_softmax`` of ``hsm`` with its node logits in rows padded to an aligned width
(the library) or in rows of V - 1 columns (the code before), alternating in one process, and
each against ``full``'s, as the bench times it.

    THP_MEM_ALLOC_ENABLE=1 python results/hsm-aligned-logits/ab.py 10000 'hsm[huffman],hsm[balanced]'    # ab-10k.log
    THP_MEM_ALLOC_ENABLE=1 python results/hsm-aligned-logits/ab.py 100000 'hsm[huffman],hsm[balanced]'   # ab-100k.log
    THP_MEM_ALLOC_ENABLE=1 python results/hsm-aligned-logits/ab.py 1000000 'hsm[huffman],hsm[balanced]'  # ab-1m.log

The bench's layers and test-time rows (H = 256, N' = min(1024, 2**22 // V) rows), each call under
``torch.no_grad``. First the two variants' outputs must agree to float32 rounding; then the bench's
paired timing (``ab_steps.paired_calls``: 20 repetitions of the mean of 3 calls, order
alternating, one untimed call before each timing): before / after, and ``full`` / each variant
(the bench's log_softmax speed-up), medians [quartiles].
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

from bigvocab.bench.operations import evaluation_rows
from bigvocab.outputs import tree_kernels

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ab_steps import bench_layer, compare_calls  # noqa: E402  (results/ab_steps.py)

LIBRARY = tree_kernels.aligned_width
CAP = 1 << 22


def use(variant: str) -> None:
    tree_kernels.aligned_width = LIBRARY if variant == "aligned" else (lambda num_nodes: num_nodes)


def log_softmax(layer: torch.nn.Module, hidden: torch.Tensor, variant: str = "aligned"):
    """The layer's exact log_softmax of ``hidden`` under ``variant`` (``full`` has no tree: the
    variant leaves it as it is)."""

    def call() -> torch.Tensor:
        use(variant)
        with torch.no_grad():
            return layer.log_softmax(hidden)

    return call


def main() -> None:
    vocab, names = int(sys.argv[1]), sys.argv[2].split(",")
    full, work = bench_layer("full", vocab)
    hidden = work.hidden[: evaluation_rows(work.hidden.shape[0], vocab, CAP)].detach()
    full.eval()
    print(f"V = {vocab:,}, N' = {hidden.shape[0]}")
    for name in names:
        layer, _ = bench_layer(name, vocab)
        layer.eval()
        odd, aligned = log_softmax(layer, hidden, "odd rows")(), log_softmax(layer, hidden, "aligned")()
        torch.testing.assert_close(odd, aligned)
        compare_calls(f"{name} before / after", log_softmax(layer, hidden, "odd rows"), log_softmax(layer, hidden, "aligned"))
        for variant in ("odd rows", "aligned"):
            compare_calls(f"full / {name} ({variant})", log_softmax(full, hidden), log_softmax(layer, hidden, variant))
        use("aligned")


if __name__ == "__main__":
    main()
