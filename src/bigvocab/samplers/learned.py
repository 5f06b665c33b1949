"""``learned`` -- a unigram proposal estimated online from the targets seen so far.

Counts are updated in O(N) per batch. The alias table is a snapshot: it is rebuilt (O(V)) only
when the mass added since the last build reaches ``refresh`` times the mass of that build, so
rebuilds happen O(log T) times over T tokens and a training step never pays O(V). ``log_q`` always
describes the snapshot that ``sample`` draws from, so importance weights stay exact.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from bigvocab.errors import ConfigError
from bigvocab.registry import SAMPLERS
from bigvocab.samplers.alias import AliasSampler, AliasTable
from bigvocab.samplers.base import as_counts
from bigvocab.validation import check_nonnegative_float, check_positive_float


def refresh_due(added: float, base: float, fraction: float) -> bool:
    """True when ``added`` new observations reach ``fraction`` of the ``base`` already built in:
    a geometric schedule, so the number of rebuilds grows only logarithmically with the data."""
    return added > 0 and added >= fraction * base


@SAMPLERS.register("learned")
class LearnedSampler(AliasSampler):
    """Q(i) proportional to ``prior + counts[i]`` where counts grow with every :meth:`update`.

    Args:
        num_classes: V.
        counts: optional initial counts (V,), e.g. the training frequencies.
        prior: pseudo-count added to every class (Laplace smoothing) so that no class ever has
            Q = 0, which importance sampling needs.
        refresh: rebuild the alias table once the new mass reaches this fraction of the old.
        device, dtype: see :class:`~bigvocab.samplers.base.Sampler`.

    Buffers: ``counts`` (V,) float64 (prior included), ``mass`` (its sum), ``built_mass``.
    """

    counts: Tensor
    mass: Tensor
    built_mass: Tensor

    def __init__(
        self,
        num_classes: int,
        *,
        counts: Sequence[float] | Tensor | None = None,
        prior: float = 1.0,
        refresh: float = 0.1,
        device: torch.device | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(num_classes, device=device, dtype=dtype)
        check_nonnegative_float("prior", prior)
        self.refresh_fraction = check_positive_float("refresh", refresh)
        initial = torch.full((num_classes,), float(prior), dtype=torch.float64)
        if counts is not None:
            initial += as_counts(counts, num_classes, "learned sampler")
        if initial.sum() <= 0:
            raise ConfigError("learned sampler: with prior=0 it needs counts= that are not all zero")
        initial = initial.to(device)
        self.register_buffer("counts", initial)
        self.register_buffer("mass", initial.sum())
        self.register_buffer("built_mass", initial.sum())
        self.table = AliasTable(initial)

    @torch.no_grad()
    def update(self, target: Tensor, *, context: Tensor | None = None, **kwargs) -> None:
        """Count ``target`` (any shape); rebuild the table when the schedule says so."""
        flat = target.reshape(-1).to(self.counts.device)
        self.counts.index_add_(0, flat, torch.ones(flat.shape, dtype=torch.float64, device=flat.device))
        self.mass += flat.numel()
        if refresh_due(float(self.mass - self.built_mass), float(self.built_mass), self.refresh_fraction):
            self.refresh()

    @torch.no_grad()
    def refresh(self) -> None:
        """Rebuild the alias table from the current counts now (O(V))."""
        self.table.set_weights(self.counts)
        self.built_mass.copy_(self.mass)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", refresh={self.refresh_fraction}"
