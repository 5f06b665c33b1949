"""The :class:`Sampler` contract: a proposal distribution Q over class ids.

Sampling-based output layers (``sampled``, ``ais``, ``nce``, ``neg``, ...) take a sampler through
their constructor and use only this interface, so any proposal works with any of them.
Samplers are modules so that learned state (counts, mixture weights) travels in checkpoints.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence, Union

import torch
from torch import Tensor, nn

from bigvocab.errors import ConfigError
from bigvocab.validation import check_positive_int

#: ``sample_unique`` gives up after this many draws (128 MiB of ids): the proposal then puts
#: too little mass on too many classes for ``k`` distinct ids to be found.
MAX_UNIQUE_DRAWS = 1 << 24


class Sampler(nn.Module):
    """A proposal distribution over ``num_classes`` ids.

    Subclasses implement :meth:`sample` and :meth:`log_q`; adaptive ones also :meth:`update`.
    ``context`` is the conditioning information of context-dependent proposals (the previous
    token for ``bigram``) and is ignored by the others.

    ``device`` is where the sampler's tables live and its ids are drawn; ``dtype`` that of the
    log-probabilities :meth:`log_q` returns (the default dtype when None). Both follow
    ``.to(...)``.
    """

    #: True when the proposal depends on ``context``.
    conditional: bool = False

    def __init__(
        self, num_classes: int, *, device: Optional[torch.device] = None, dtype: Optional[torch.dtype] = None
    ) -> None:
        super().__init__()
        self.num_classes = check_positive_int("num_classes", num_classes)
        # Follows ``.to(device)`` / ``.double()`` so that samplers without state draw on the right
        # device and score in the layer's dtype.
        self.register_buffer("_anchor", torch.empty(0, device=device, dtype=dtype), persistent=False)

    @property
    def device(self) -> torch.device:
        return self._anchor.device

    @property
    def dtype(self) -> torch.dtype:
        """The dtype of :meth:`log_q`'s results."""
        return self._anchor.dtype

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

    def sample_unique(self, num_samples: int, *, generator: Optional[torch.Generator] = None) -> tuple[Tensor, int]:
        """``num_samples`` distinct ids and the number of draws ``T`` it took.

        Draws with replacement until ``num_samples`` distinct ids have appeared and keeps them in
        order of first appearance (as TensorFlow's unique candidate samplers do); ``T`` is the
        position of the last kept id's first appearance. Pass ``T`` to
        :func:`log_expected_count` for the log-Q correction. Unconditional samplers only.
        """
        if self.conditional:
            raise ConfigError(
                f"{type(self).__name__} is conditional: unique (shared) sampling needs an unconditional sampler"
            )
        if num_samples > self.num_classes:
            raise ConfigError(f"cannot draw {num_samples} distinct ids from {self.num_classes} classes")
        draws = self.sample(2 * num_samples, generator=generator)
        while True:
            distinct, inverse = torch.unique(draws, return_inverse=True)
            if distinct.numel() >= num_samples:
                positions = torch.arange(draws.numel(), device=draws.device)
                first = torch.full_like(distinct, draws.numel()).scatter_reduce_(0, inverse, positions, "amin")
                order = first.argsort()[:num_samples]
                return distinct[order], int(first[order[-1]]) + 1
            if draws.numel() >= MAX_UNIQUE_DRAWS:
                raise ConfigError(
                    f"{type(self).__name__} found only {distinct.numel()} distinct ids in {draws.numel()} draws, "
                    f"fewer than num_samples={num_samples}: the proposal gives (almost) no mass to enough classes; "
                    "lower num_samples or sample with replacement (unique=False)"
                )
            draws = torch.cat([draws, self.sample(draws.numel(), generator=generator)])

    def extra_repr(self) -> str:
        return f"num_classes={self.num_classes}"


def log_expected_count(log_q: Tensor, num_draws: int, *, unique: bool) -> Tensor:
    """Log of the expected number of times each id is in a candidate set built from ``num_draws``
    independent draws from Q (``log_q`` = log Q(id), any shape); the log-Q correction of sampled
    softmax subtracts it from the logits.

    * With replacement (``unique=False``) the count of id ``i`` in ``T`` draws is Binomial(T, q_i),
      so its expectation is ``T q_i``.
    * Without replacement (``unique=True``, the set of distinct ids among ``T`` draws) the count is
      the indicator that ``i`` was drawn at least once: ``P = 1 - (1 - q_i)^T``. This is exact for a
      fixed ``T``; :meth:`Sampler.sample_unique` stops at a random ``T`` (when ``k`` distinct ids
      have appeared) and, like TensorFlow, plugs that ``T`` in.

    The second form is computed as ``log(-expm1(T log1p(-q)))`` so that it stays accurate for
    q as small as 1e-30 (where it equals ``log T + log q``) and for q close to 1.
    """
    if not unique:
        return log_q + math.log(num_draws)
    return torch.log(-torch.expm1(num_draws * torch.log1p(-torch.exp(log_q))))


def as_counts(counts: Union[Sequence[float], Tensor], num_classes: int, owner: str) -> Tensor:
    """Validated class frequencies as a float64 tensor of shape (num_classes,)."""
    try:
        tensor = torch.as_tensor(counts, dtype=torch.float64).detach().cpu().reshape(-1).clone()
    except (TypeError, ValueError, RuntimeError) as error:
        raise ConfigError(f"{owner}: counts must be a sequence of numbers, got {type(counts).__name__}") from error
    if tensor.numel() != num_classes:
        raise ConfigError(f"{owner}: counts has {tensor.numel()} entries but num_classes={num_classes}")
    if not torch.isfinite(tensor).all() or (tensor < 0).any():
        raise ConfigError(f"{owner}: counts must be finite and non-negative")
    if tensor.sum() <= 0:
        raise ConfigError(f"{owner}: counts must not all be zero")
    return tensor
