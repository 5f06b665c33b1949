"""Walker's alias method (Walker 1977; Vose 1991): O(1) draws from any discrete distribution.

The table has one bucket per class. Bucket ``i`` keeps class ``i`` with probability
``accept[i]`` and otherwise gives ``alias[i]``; a draw picks a bucket uniformly and flips one
biased coin, so it costs O(1) whatever the distribution.

Construction without a Python loop. Scale the probabilities to mean one, ``w = V p``. *Light*
classes (``w < 1``) have a deficit ``1 - w`` and *heavy* ones (``w >= 1``) an excess ``w - 1``; both
sum to the same total. Lay the deficits end to end on a line, in class order, and the excesses
end to end on a second copy of the line. This is the classic sweep (Vose's two stacks, one pass):

* a light bucket's alias is the heavy class whose excess interval holds the *start* of the
  bucket's deficit interval;
* a heavy class ``j`` whose excess ends at ``E_j`` strictly inside a deficit interval ending at
  ``a_j`` has given ``a_j - E_j`` too much: it becomes a bucket with ``accept = 1 - (a_j - E_j)``
  whose alias is the next heavy class; the last heavy class keeps ``accept = 1``.

Mass check for heavy ``j``: it keeps ``1 - (a_j - E_j)``, receives ``a_{j-1} - E_{j-1}`` from
heavy ``j-1``'s bucket and ``a_j - a_{j-1}`` from the light buckets whose deficits start in
``[E_{j-1}, E_j)``; the total is ``1 + E_j - E_{j-1} = w_j``. Both assignments are two
``searchsorted`` calls over prefix sums (a merge of two sorted sequences), so a million classes
build in a fraction of a second in float64.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from bigvocab.errors import ConfigError
from bigvocab.samplers.base import Sampler, uniform_floats, uniform_ids
from bigvocab.validation import check_positive_int


def build_alias_table(weights: Tensor) -> tuple[Tensor, Tensor]:
    """``(accept, alias)`` for the distribution proportional to ``weights`` (V,), non-negative.

    ``accept`` is float64 in [0, 1], ``alias`` int64; both (V,) on ``weights.device``.
    """
    scaled = weights.detach().to(torch.float64)
    total = scaled.sum()
    if not torch.isfinite(total) or total <= 0 or (scaled < 0).any():
        raise ConfigError("alias table weights must be finite, non-negative and not all zero")
    num_classes = scaled.numel()
    scaled = scaled * (num_classes / total)
    accept = scaled.clone()
    alias = torch.arange(num_classes, device=scaled.device)
    is_heavy = scaled >= 1
    # Rounding can leave every scaled weight a hair below one; the largest is heavy regardless.
    is_heavy[scaled.argmax()] = True
    light = torch.nonzero(~is_heavy).squeeze(1)
    heavy = torch.nonzero(is_heavy).squeeze(1)
    if light.numel():
        deficit_end = torch.cumsum(1 - scaled[light], 0)
        deficit_start = deficit_end - (1 - scaled[light])
        excess_end = torch.cumsum(scaled[heavy] - 1, 0)
        # Rounding may push the last starts past the total excess: they belong to the last heavy.
        donor = torch.searchsorted(excess_end, deficit_start, right=True).clamp_(max=heavy.numel() - 1)
        alias[light] = heavy[donor]
        straddled = torch.searchsorted(deficit_end, excess_end)
        ends = deficit_end[straddled.clamp(max=light.numel() - 1)]
        overshoot = torch.where(straddled < light.numel(), ends - excess_end, torch.zeros_like(ends))
        accept[heavy] = 1 - overshoot.clamp_(min=0)
        alias[heavy[:-1]] = heavy[1:]
    accept[heavy[-1]] = 1.0
    return accept.clamp_(0, 1), alias


class AliasTable(nn.Module):
    """An alias table kept in buffers (so it follows ``.to(device)`` and checkpoints).

    Args:
        weights: (V,) non-negative, unnormalised.
        device: where the table is built and kept (default: the weights').

    Buffers: ``probs`` (V,) float64 normalised probabilities, ``accept`` (V,) float64,
    ``alias`` (V,) int64.
    """

    probs: Tensor
    accept: Tensor
    alias: Tensor

    def __init__(self, weights: Tensor, *, device: torch.device | None = None) -> None:
        super().__init__()
        weights = torch.as_tensor(weights, dtype=torch.float64, device=device)
        self.register_buffer("probs", torch.empty_like(weights))
        self.register_buffer("accept", torch.empty_like(weights))
        self.register_buffer("alias", torch.empty(weights.shape, dtype=torch.long, device=weights.device))
        self.set_weights(weights)

    @torch.no_grad()
    def set_weights(self, weights: Tensor) -> None:
        """Rebuild for new (V,) weights in place: O(V), never call it once per training step."""
        weights = weights.to(self.probs.device, torch.float64)
        accept, alias = build_alias_table(weights)
        self.probs.copy_(weights / weights.sum())
        self.accept.copy_(accept)
        self.alias.copy_(alias)

    def sample(self, shape: tuple[int, ...], generator: torch.Generator | None = None) -> Tensor:
        """Ids of the given shape (int64), one uniform bucket and one coin flip each."""
        num_classes = self.probs.numel()
        bucket = uniform_ids(num_classes, shape, generator, self.probs.device)
        coin = uniform_floats(shape, generator, self.probs.device)
        return torch.where(coin < _lookup(self.accept, bucket), bucket, _lookup(self.alias, bucket))

    def log_prob(self, ids: Tensor) -> Tensor:
        """log p(ids) in float64, same shape as ``ids``."""
        return _lookup(self.probs, ids).log()


def _lookup(table: Tensor, ids: Tensor) -> Tensor:
    """``table[ids]`` for a (V,) table, by ``index_select`` rather than torch's advanced indexing:
    ``nce``'s training step (25,600 draws, 26,624 probabilities) ran 1.02-1.06x faster at
    V = 100k and 1M, ``neg``'s 1.02-1.03x (``docs/design/alias-lookups.md``)."""
    return table.index_select(0, ids.reshape(-1)).view(ids.shape)


class AliasSampler(Sampler):
    """An unconditional sampler that draws from its alias table ``table`` and scores with the
    same table, so ``log_q`` always describes the distribution ``sample`` used; subclasses build
    the table (``unigram`` once, ``learned`` again as counts grow)."""

    table: AliasTable

    def sample(
        self, num_samples: int, *, context: Tensor | None = None, generator: torch.Generator | None = None
    ) -> Tensor:
        return self.table.sample((check_positive_int("num_samples", num_samples),), generator)

    def log_q(self, ids: Tensor, *, context: Tensor | None = None) -> Tensor:
        return self.table.log_prob(ids).to(self.dtype)
