"""Annealed Gaussian gradient noise (Neelakantan et al. 2015, "Adding gradient noise improves
learning for very deep networks").

At step t (counted from 0) every gradient element gets independent noise N(0, σ_t²) with

    σ_t² = η / (1 + t)^γ,    γ = 0.55 by default (the paper's choice),

so the noise is large early, when it helps the optimiser leave poor regions, and fades as
training converges. The trainer adds it after clipping, so that σ_t is exactly the schedule's
whatever the clip does. A sparse gradient gets noise on its stored rows only: noise on the rows a
step did not touch would make every step dense, which is what sparse rows exist to avoid (say
``--optimizer`` with dense rows to have it everywhere). The noise of step t is drawn from a
generator seeded by (seed, t), so a resumed run draws the same noise as an uninterrupted one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch
from torch import nn

#: γ of Neelakantan et al. (2015).
DEFAULT_DECAY = 0.55


def noise_std(eta: float, step: int, decay: float = DEFAULT_DECAY) -> float:
    """σ_t = sqrt(η / (1 + t)^γ) at step ``step`` (from 0)."""
    return math.sqrt(eta / (1.0 + step) ** decay)


def add_gradient_noise(
    params: Iterable[nn.Parameter], eta: float, step: int, seed: int, decay: float = DEFAULT_DECAY
) -> None:
    """Add N(0, σ_step²) to every stored element of every gradient of ``params``, in place."""
    std = noise_std(eta, step, decay)
    generators: dict[torch.device, torch.Generator] = {}
    for param in params:
        grad = param.grad
        if grad is None:
            continue
        if grad.device not in generators:
            generators[grad.device] = torch.Generator(device=grad.device).manual_seed(seed * 1_000_003 + step)
        values = grad._values() if grad.is_sparse else grad
        noise = torch.randn(values.shape, generator=generators[grad.device], device=grad.device, dtype=values.dtype)
        values.add_(noise, alpha=std)
