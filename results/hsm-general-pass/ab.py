"""The exact ``log_softmax`` of ``hsm`` over a tree that is not binary (``class``: two levels,
about sqrt(V) classes) by the compiled pass (the library since session 30) or by the torch
level-by-level pass (the code before), alternating in one process, and each against ``full``'s,
as the bench times it.

    THP_MEM_ALLOC_ENABLE=1 python results/hsm-general-pass/ab.py 10000     # ab-10k.log
    THP_MEM_ALLOC_ENABLE=1 python results/hsm-general-pass/ab.py 100000    # ab-100k.log
    THP_MEM_ALLOC_ENABLE=1 python results/hsm-general-pass/ab.py 1000000   # ab-1m.log

The bench's layers and test-time rows (H = 256, N' = min(1024, 2**22 // V) rows), each call under
``torch.no_grad``. First the two passes' outputs must agree to float32 rounding; then the bench's
paired timing (``ab_steps.paired_calls``: 20 repetitions of the mean of 3 calls, order
alternating, one untimed call before each timing): before / after, and ``full`` / each pass (the
bench's log_softmax speed-up), medians [quartiles].
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

from bigvocab.bench.operations import evaluation_rows

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ab_steps import bench_layer, compare_calls  # noqa: E402  (results/ab_steps.py)

CAP = 1 << 22


def compiled(layer: torch.nn.Module, hidden: torch.Tensor):
    def call() -> torch.Tensor:
        with torch.no_grad():
            return layer.log_softmax(hidden)

    return call


def torch_levels(layer: torch.nn.Module, hidden: torch.Tensor):
    """The pass before: node-major logits and ``_general_levels``, in the row chunks
    ``_log_softmax`` takes."""
    per_row = 2 * (layer._num_nodes + layer.num_classes)
    rows_per_chunk = max(16, layer.max_chunk_elements // per_row, hidden.shape[0] // 4)

    def call() -> torch.Tensor:
        with torch.no_grad():
            out = hidden.new_empty(hidden.shape[0], layer.num_classes)
            for start in range(0, hidden.shape[0], rows_per_chunk):
                h = hidden[start : start + rows_per_chunk]
                out[start : start + rows_per_chunk] = layer._general_levels(layer._node_logits(h)).t()
            return out

    return call


def main() -> None:
    vocab = int(sys.argv[1])
    full, work = bench_layer("full", vocab)
    hidden = work.hidden[: evaluation_rows(work.hidden.shape[0], vocab, CAP)].detach()
    full.eval()
    layer, _ = bench_layer("hsm[class]", vocab)
    layer.eval()
    print(f"V = {vocab:,}, N' = {hidden.shape[0]}, {layer._num_nodes} internal nodes")
    torch.testing.assert_close(compiled(layer, hidden)(), torch_levels(layer, hidden)())
    compare_calls("hsm[class] before / after", torch_levels(layer, hidden), compiled(layer, hidden))
    compare_calls("full / hsm[class] (before)", compiled(full, hidden), torch_levels(layer, hidden))
    compare_calls("full / hsm[class] (after)", compiled(full, hidden), compiled(layer, hidden))


if __name__ == "__main__":
    main()
