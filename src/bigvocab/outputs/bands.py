"""Frequency bands of a vocabulary whose ids are sorted by decreasing frequency.

The differentiated softmax (Chen, Grangier & Auli 2015) gives each band its own section of the
hidden state, and the adaptive softmax (Grave et al. 2017) its own cluster; both cut the ids at
the same edges here, as Grave et al. did when they compared the two (section 5), and so does the
bench's PyTorch ``AdaptiveLogSoftmaxWithLoss`` peer.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from bigvocab.errors import ConfigError
from bigvocab.samplers.base import required_counts

#: Default band edges: the most frequent words holding 80% of the tokens, then up to 95%, then the rest.
DEFAULT_BAND_MASSES = (0.8, 0.95)


def resolve_cutoffs(cutoffs: Sequence[int] | None, num_classes: int, counts=None, *, owner: str) -> list[int]:
    """Validated band edges (ids ``[0, c_1)``, ``[c_1, c_2)``, ..., ``[c_last, V)``).

    Given ``cutoffs`` must be strictly increasing integers in [1, V - 1]. Without them the edges are
    where the cumulative token mass of the frequency-sorted ids reaches :data:`DEFAULT_BAND_MASSES`,
    which needs ``counts``.
    """
    if cutoffs is None:
        weights = required_counts(counts, num_classes, owner, "give the band edges as cutoffs=")
        mass = torch.cumsum(weights, 0) / weights.sum()
        found = torch.searchsorted(mass, torch.tensor(DEFAULT_BAND_MASSES, dtype=mass.dtype)) + 1
        return sorted(set(found.clamp(1, num_classes - 1).tolist()))
    try:
        edges = [int(c) for c in cutoffs]
    except (TypeError, ValueError):
        raise ConfigError(f"{owner}: cutoffs must be a sequence of integers, got {cutoffs!r}") from None
    if any(int(c) != c for c in cutoffs):
        raise ConfigError(f"{owner}: cutoffs must be integers, got {list(cutoffs)!r}")
    if any(b <= a for a, b in zip(edges, edges[1:])) or (edges and (edges[0] < 1 or edges[-1] > num_classes - 1)):
        raise ConfigError(
            f"{owner}: cutoffs must be strictly increasing integers in [1, {num_classes - 1}] "
            f"(num_classes={num_classes}), got {edges}"
        )
    return edges
