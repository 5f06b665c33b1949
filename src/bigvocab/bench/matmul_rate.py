"""The machine's dense matrix-multiply rate, measured in the same run as the layers.

A softmax layer's training step is, at best, a few dense products; the best rate the machine
reaches on products of the same shapes is therefore the limit any layer can approach, and each
layer's achieved rate is reported as a fraction of it (see :mod:`bigvocab.bench.flops`).
"""

from __future__ import annotations

import torch

from bigvocab.bench.timing import inner_loop_size, seconds_per_call

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
