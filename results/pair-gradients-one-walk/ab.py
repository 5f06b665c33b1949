"""Training steps with the pair kernels' backward as one walk by table row (58f962c, the code on
PYTHONPATH) or as two walks, the hidden states' gradient by example (ccd225d, at BEFORE_SRC),
alternating in one process.

    git worktree add --detach /tmp/before ccd225d
    git worktree add --detach /tmp/after 58f962c
    THP_MEM_ALLOC_ENABLE=1 PYTHONPATH=/tmp/after/src python results/pair-gradients-one-walk/ab.py \
        /tmp/before/src 1000000 'hsm[balanced],hsm[huffman],nce,neg,neg[shared]'   # ab-1m.log; 100000: ab-100k.log

The bench's workload (H = 256, N = 1024, Zipf counts and targets, plain SGD, torch's threads):
for each layer, first the two versions' gradients on one batch (weights drawn normal, so that
``neg``'s zero start does not hide them), then 20 rounds of 5 steps per version, the order
alternating (the bench's paired timing, ``bench.timing``: each timing the mean of 5 steps); prints
each version's median time per step and the median (and quartiles) of the rounds' ratios (above 1:
one walk faster).
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import torch

from bigvocab.bench.operations import make_optimizer
from bigvocab.outputs import pair_kernels

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ab_steps import bench_layer, paired_steps  # noqa: E402  (results/ab_steps.py)

ROUNDS, STEPS = 20, 5


def load_before(src: str):
    spec = importlib.util.spec_from_file_location("pair_kernels_before", Path(src) / "bigvocab/outputs/pair_kernels.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # numba's cache of its kernels finds the module by name
    spec.loader.exec_module(module)
    return module


def use(module) -> None:
    """The layers import these two functions at call time, so setting them switches the version."""
    pair_kernels.pair_dots, pair_kernels.flat_pair_dots = module.pair_dots, module.flat_pair_dots


def gradients(layer, work, seed: int) -> list[torch.Tensor]:
    torch.manual_seed(seed)
    layer.zero_grad(set_to_none=True)
    work.hidden.grad = None
    layer.loss(work.hidden, work.target).backward()
    grads = [work.hidden.grad.clone()] + [p.grad.to_dense().clone() for p in layer.parameters() if p.grad is not None]
    return grads


def main() -> None:
    before_src, vocab, specs = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
    # The checkout's own functions, kept aside: use() overwrites the module's names.
    one_walk = SimpleNamespace(pair_dots=pair_kernels.pair_dots, flat_pair_dots=pair_kernels.flat_pair_dots)
    versions = {"one walk": one_walk, "two walks": load_before(before_src)}
    for spec in specs:
        layer, work = bench_layer(spec, vocab)
        with torch.no_grad():
            for param in layer.parameters():
                param.normal_(0.0, 0.1)
        compared = []
        for label in versions:
            use(versions[label])
            compared.append(gradients(layer, work, seed=1))
        worst = max(float((a - b).abs().max() / b.abs().max().clamp_min(1e-30)) for a, b in zip(*compared))
        summary = paired_steps(layer, make_optimizer(layer), work, lambda label: use(versions[label]),
                               "two walks", "one walk", repeats=ROUNDS, steps=STEPS)
        print(
            f"V={vocab} {spec}: two walks {summary.reference_seconds * 1e3:.2f} ms, "
            f"one walk {summary.candidate_seconds * 1e3:.2f} ms, paired ratio {summary.median:.3f} "
            f"[{summary.q1:.3f}-{summary.q3:.3f}] (gradients agree to {worst:.1e} of their largest element)",
            flush=True,
        )
        use(versions["one walk"])


if __name__ == "__main__":
    main()
