"""Training steps with the step buffers pooled (the library) or allocated afresh each step (the
code before), alternating in one process.

    THP_MEM_ALLOC_ENABLE=1 python results/step-buffers/ab.py 1000000 'nce,neg,hsm[balanced],hsm[huffman],ais'

The bench's workload (H = 256, N = 1024, Zipf counts and targets, SGD) for each layer named;
first one step of each variant from the same parameters and seed, whose losses and gradients must
agree exactly; then the bench's own paired timing (``bench.timing``): 20 repetitions of 5 steps
per variant, order alternating. Prints each variant's median time per step and the median (and
quartiles) of the repetitions' ratios (above 1: the pool faster).
"""
from __future__ import annotations

import copy
import sys
from pathlib import Path

import torch

from bigvocab.bench.operations import make_optimizer
from bigvocab.outputs.step_buffers import MIN_BYTES, STEP_BUFFERS

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ab_steps import bench_layer, paired_steps  # noqa: E402  (results/ab_steps.py)


def use(variant: str) -> None:
    STEP_BUFFERS.min_bytes = MIN_BYTES if variant == "pooled" else 1 << 62


def gradients(layer: torch.nn.Module, work, variant: str) -> list[torch.Tensor]:
    """Loss and parameter gradients of one step of a copy of ``layer``, with the same seed."""
    use(variant)
    layer = copy.deepcopy(layer)
    torch.manual_seed(1)
    loss = layer.loss(work.hidden, work.target)
    loss.backward()
    grads = [p.grad.to_dense() if p.grad.is_sparse else p.grad for p in layer.parameters() if p.grad is not None]
    return [loss.detach(), *grads]


def main() -> None:
    vocab, names = int(sys.argv[1]), sys.argv[2].split(",")
    for name in names:
        layer, work = bench_layer(name, vocab)
        for fresh, pooled in zip(gradients(layer, work, "fresh"), gradients(layer, work, "pooled")):
            assert torch.equal(fresh, pooled), f"{name}: the two variants must compute the same step"
        summary = paired_steps(layer, make_optimizer(layer), work, use, "fresh", "pooled")
        print(f"V={vocab} {name}: fresh {summary.reference_seconds * 1e3:.2f} ms, pooled "
              f"{summary.candidate_seconds * 1e3:.2f} ms, paired ratio {summary.median:.3f} "
              f"[{summary.q1:.3f}-{summary.q3:.3f}]", flush=True)
        use("pooled")


if __name__ == "__main__":
    main()
