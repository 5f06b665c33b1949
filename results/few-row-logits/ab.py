"""Exact ``log_softmax`` and top-10 with the logits of a few rows taken class-major (the library:
``functional.example_logits`` for 2 to ``FEW_ROWS`` rows) or as h Wᵀ for any number of rows (the
code before), alternating in one process.

    THP_MEM_ALLOC_ENABLE=1 python results/few-row-logits/ab.py 1000000 4 'full,hsm[huffman],hsm[balanced]'   # ab-1m.log
    THP_MEM_ALLOC_ENABLE=1 python results/few-row-logits/ab.py 100000 4 'full,hsm[huffman],hsm[balanced]'    # ab-100k.log

The bench's layers at V (H = 256) and the first ROWS of its hidden states (the bench's test-time
rows at V = 1M are 4), each call under ``torch.no_grad``. The two variants' outputs must agree
to float32 rounding; then the bench's paired timing of test-time calls (``ab_steps.paired_calls``):
before / after, median [quartiles]. ``hsm``'s top-10 is a pruned search that takes no product
over every node, so only its ``log_softmax`` is timed.
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

from bigvocab.outputs import functional

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ab_steps import bench_layer, paired_calls  # noqa: E402  (results/ab_steps.py)

LIBRARY = functional.FEW_ROWS
TOP = 10


def use(variant: str) -> None:
    functional.FEW_ROWS = LIBRARY if variant == "class-major" else 0


def operation(layer: torch.nn.Module, hidden: torch.Tensor, name: str, variant: str):
    def call():
        use(variant)
        with torch.no_grad():
            return layer.log_softmax(hidden) if name == "log_softmax" else layer.topk(hidden, TOP)

    return call


def main() -> None:
    vocab, rows, names = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(",")
    print(f"V = {vocab:,}, {rows} rows")
    for name in names:
        layer, work = bench_layer(name, vocab)
        layer.eval()
        hidden = work.hidden[:rows].detach()
        for op in ("log_softmax", "topk") if name == "full" else ("log_softmax",):
            torch.testing.assert_close(operation(layer, hidden, op, "row-major")(),
                                       operation(layer, hidden, op, "class-major")())
            summary = paired_calls(operation(layer, hidden, op, "row-major"), operation(layer, hidden, op, "class-major"))
            print(f"{name} {op}: row-major {summary.reference_seconds * 1e3:.2f} ms, class-major "
                  f"{summary.candidate_seconds * 1e3:.2f} ms, before / after {summary.median:.3f} "
                  f"[{summary.q1:.3f}-{summary.q3:.3f}]", flush=True)
        use("class-major")


if __name__ == "__main__":
    main()
