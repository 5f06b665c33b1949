"""``bigvocab.train.clip_grad_norm`` on the gradients of one ``nce`` training step at V = 1M (the
bench's workload): coalescing every sparse gradient (the code before) or using one whose rows
are distinct and sorted as it is (``outputs/sparse_grads.rows_are_distinct``). Each round runs a
fresh backward before each variant's call and times the call alone; ten rounds, order
alternating; the clipped gradients must agree. Measured at 2e6bd31: since the layers mark their
gradients after accumulation (``outputs/sparse_grads.mark_distinct_rows``) both variants skip the
copy here.

    THP_MEM_ALLOC_ENABLE=1 python results/coalesced-gradients/clip.py   # clip.log
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import torch

from bigvocab.train import optimizers

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ab_steps import bench_layer  # noqa: E402  (results/ab_steps.py)

LIBRARY = optimizers.rows_are_distinct
VARIANTS = {"coalesce always": lambda grad: grad.is_coalesced(), "distinct rows as they are": LIBRARY}


def clipped(layer, work, variant: str) -> tuple[float, list[torch.Tensor]]:
    layer.zero_grad(set_to_none=True)
    layer.loss(work.hidden, work.target).backward()
    optimizers.rows_are_distinct = VARIANTS[variant]
    start = time.perf_counter()
    optimizers.clip_grad_norm(layer.parameters(), 1e-3)
    seconds = time.perf_counter() - start
    optimizers.rows_are_distinct = LIBRARY
    return seconds, [p.grad.to_dense() for p in layer.parameters()]


def main() -> None:
    layer, work = bench_layer("nce", 1_000_000)
    times = {variant: [] for variant in VARIANTS}
    for round_ in range(10):
        order = list(VARIANTS) if round_ % 2 == 0 else list(VARIANTS)[::-1]
        results = {}
        for variant in order:
            torch.manual_seed(round_)
            seconds, grads = clipped(layer, work, variant)
            times[variant].append(seconds)
            results[variant] = grads
        for a, b in zip(*results.values()):
            torch.testing.assert_close(a, b)
    for variant, seconds in times.items():
        print(f"{variant}: median {statistics.median(seconds) * 1e3:.2f} ms "
              f"[{min(seconds) * 1e3:.2f}-{max(seconds) * 1e3:.2f}] over {len(seconds)} calls")


if __name__ == "__main__":
    main()
