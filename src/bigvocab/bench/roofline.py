"""The roofline of a training step: the arithmetic it must do, the arithmetic it does, and the
machine's dense matrix-multiply rate measured in the same run.

``required`` flops (and bytes) are the layer's own declaration, ``layer.train_cost(target)``
(:mod:`bigvocab.outputs.cost`): the multiply-adds of the method's forward pass, times three,
because the backward of a product ``Y = X W`` costs two more products of the same size -- the
standard 1 + 2 accounting of Kaplan et al. (2020), section 2.1. ``counted`` flops are what the
step actually executes in matrix products, counted by
:class:`torch.utils.flop_counter.FlopCounterMode`; a layer without a cost model reports its
counted flops (and says so), so every row still gets a fraction of the limit.

A softmax layer's training step is, at best, a few dense products; the best rate the machine
reaches on products of the same shapes is therefore the limit any layer can approach, and each
layer's achieved rate (required flops / step time) is reported as a fraction of it.
"""

from __future__ import annotations

from typing import Callable, Optional

import torch
from torch import Tensor

from bigvocab.bench.timing import inner_loop_size, seconds_per_call
from bigvocab.outputs.base import OutputLayer
from bigvocab.outputs.cost import Cost

#: Columns of the skinny products: one chunk of the vocabulary, as the chunked softmax uses.
CHUNK = 16_384


def matmul_shapes(hidden: int, batch: int, *, square: int = 2048) -> list[tuple[int, int, int]]:
    """(m, k, n) products like those of a softmax step over a vocabulary chunk of width C:
    logits (N x H)(H x C), weight gradient (C x N)(N x H), hidden gradient (N x C)(C x H),
    plus one square product, which is usually the fastest a BLAS gets."""
    return [
        (square, square, square),
        (batch, hidden, CHUNK),
        (CHUNK, batch, hidden),
        (batch, CHUNK, hidden),
    ]


def measure_matmul_rate(
    shapes: list[tuple[int, int, int]], device: torch.device, *, repeats: int = 3, min_time: float = 0.05, seed: int = 0
) -> dict:
    """Best GFLOP/s (2·m·k·n flops per product, float32) over ``shapes``, each timed ``repeats``
    times after a warm-up; returns ``{"best_gflops", "shapes": [{m, k, n, gflops}]}``."""
    generator = torch.Generator().manual_seed(seed)
    measured = []
    for m, k, n in shapes:
        left = torch.randn(m, k, generator=generator).to(device)
        right = torch.randn(k, n, generator=generator).to(device)

        def product() -> torch.Tensor:
            return left @ right

        inner = inner_loop_size(seconds_per_call(product, 1, device), min_time)
        best = min(seconds_per_call(product, inner, device) for _ in range(repeats))
        measured.append({"m": m, "k": k, "n": n, "gflops": 2.0 * m * k * n / best / 1e9})
    return {"best_gflops": max(row["gflops"] for row in measured), "shapes": measured}


def required_train_cost(layer: OutputLayer, target: Tensor) -> tuple[Optional[Cost], str]:
    """(cost, source) from the layer's cost model; (None, reason) when it declares none."""
    cost = layer.train_cost(target)
    return (None, "no cost model") if cost is None else (cost, "formula")


def counted_flops(step: Callable[[], object]) -> Optional[float]:
    """Matrix-product flops that ``step()`` executes (forward and backward), or None when the
    step runs no product the counter knows."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        step()
    total = counter.get_total_flops()
    return float(total) if total else None
