"""The :class:`Sampler` contract: a proposal distribution Q over class ids.

Sampling-based output layers (``sampled``, ``ais``, ``nce``, ``neg``, ...) take a sampler through
their constructor and use only this interface, so any proposal works with any of them.
Samplers are modules so that learned state (counts, mixture weights) travels in checkpoints.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn

from bigvocab.validation import check_positive_int


class Sampler(nn.Module):
    """A proposal distribution over ``num_classes`` ids.

    Subclasses implement :meth:`sample` and :meth:`log_q`; adaptive ones also :meth:`update`.
    ``context`` is the conditioning information of context-dependent proposals (the previous
    token for ``bigram``) and is ignored by the others.
    """

    #: True when the proposal depends on ``context``.
    conditional: bool = False

    def __init__(self, num_classes: int) -> None:
        super().__init__()
        self.num_classes = check_positive_int("num_classes", num_classes)

    def sample(
        self, num_samples: int, *, context: Optional[Tensor] = None, generator: Optional[torch.Generator] = None
    ) -> Tensor:
        """Draw ``num_samples`` ids with replacement: (num_samples,) long, or (N, num_samples)
        for a conditional sampler given ``context`` of shape (N,)."""
        raise NotImplementedError

    def log_q(self, ids: Tensor, *, context: Optional[Tensor] = None) -> Tensor:
        """Exact log-probability of each id under one draw, same shape as ``ids``."""
        raise NotImplementedError

    def update(self, target: Tensor, *, context: Optional[Tensor] = None, **kwargs) -> None:
        """Adapt to the targets just seen (no-op for fixed proposals)."""

    def extra_repr(self) -> str:
        return f"num_classes={self.num_classes}"
