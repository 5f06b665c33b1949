"""A synthetic retrieval / extreme multi-label task with planted structure, Zipfian item
popularity and a Bayes-optimal P@k known exactly.

The planted distribution:

* L labels with popularity π_l ∝ (l + 1)^(-zipf) (id 0 the most popular), dealt round-robin into
  G groups: label l belongs to group l mod G, so every group has a Zipfian share of the head and
  the tail.
* An example draws a group g with probability P(g) = Σ_{l ∈ g} π_l, then ``draws`` labels i.i.d.
  from π restricted to g, q_l = π_l / P(g); its label set is the distinct draws.
* Its features are g's signature -- ``signature`` distinct ids in [0, signature_features), unique
  to g -- plus ``noise`` ids drawn uniformly from [signature_features, num_features), which carry
  no information; every value is 1.

The signature identifies g exactly, so the Bayes-optimal ranking for P@k (by each label's
probability of being in the set) is g's labels by decreasing q_l, and

    P@k* = Σ_g P(g) (1/k) Σ_{the k most popular l ∈ g} (1 - (1 - q_l)^draws)

(:meth:`SyntheticXMC.bayes_precision_at_k`): no model can do better in expectation. A bag-of-features
encoder must learn which feature combination is which group, and the output layer each group's
label distribution.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from bigvocab.data.xmc import LabelledRows
from bigvocab.errors import ConfigError
from bigvocab.validation import check_positive_int

#: Examples drawn at once, so the (rows, L / G) table of their groups' CDFs stays small.
_ROW_CHUNK = 16384


class SyntheticXMC:
    """The planted task of the module docstring.

    Args:
        num_labels: L.
        num_groups: G <= L.
        zipf: the exponent of the label popularity.
        draws: label draws per example (the label set has at most this many).
        signature: feature ids per group signature.
        signature_features: the ids signatures are drawn from; C(signature_features, signature)
            must be at least G.
        noise: uninformative feature ids per example.
        num_features: D > signature_features when ``noise`` > 0.
        seed: fixes the signatures (the examples' draws take their own generator).
    """

    def __init__(
        self,
        num_labels: int,
        num_groups: int,
        *,
        zipf: float = 1.0,
        draws: int = 3,
        signature: int = 3,
        signature_features: int = 1000,
        noise: int = 2,
        num_features: int = 2000,
        seed: int = 0,
    ) -> None:
        self.num_labels = check_positive_int("num_labels", num_labels)
        self.num_groups = check_positive_int("num_groups", num_groups)
        self.draws = check_positive_int("draws", draws)
        self.signature = check_positive_int("signature", signature)
        self.signature_features = check_positive_int("signature_features", signature_features)
        self.noise = noise
        self.num_features = check_positive_int("num_features", num_features)
        if num_groups > num_labels:
            raise ConfigError(f"num_groups={num_groups} exceeds num_labels={num_labels}: every group needs a label")
        if math.comb(signature_features, signature) < num_groups:
            raise ConfigError(
                f"signature_features={signature_features} cannot give {num_groups} groups distinct "
                f"signatures of {signature} ids"
            )
        if noise < 0 or (noise and num_features <= signature_features):
            raise ConfigError(f"noise={noise} needs num_features > signature_features={signature_features}")
        if zipf < 0:
            raise ConfigError(f"zipf must be non-negative, got {zipf}")
        generator = torch.Generator().manual_seed(seed)
        popularity = torch.arange(1, num_labels + 1, dtype=torch.float64) ** -zipf
        self.popularity = popularity / popularity.sum()
        self.group_prior = torch.zeros(num_groups, dtype=torch.float64).index_add_(0, self.label_group, self.popularity)
        self.signatures = _distinct_signatures(num_groups, signature, signature_features, generator)

    @property
    def label_group(self) -> Tensor:
        """(L,) the group of each label."""
        return torch.arange(self.num_labels) % self.num_groups

    def within_group(self) -> Tensor:
        """(L,) q_l = π_l / P(group of l)."""
        return self.popularity / self.group_prior[self.label_group]

    def bayes_precision_at_k(self, k: int) -> float:
        """The exact P@k of the Bayes-optimal ranking (module docstring)."""
        check_positive_int("k", k)
        inclusion = 1.0 - (1.0 - self.within_group()) ** self.draws
        # label g + j G is group g's (j+1)-th most popular: its first k are the ids below k G
        top = torch.arange(min(k * self.num_groups, self.num_labels))
        return float((self.group_prior[self.label_group[top]] * inclusion[top]).sum() / k)

    def bayes_ranking(self, groups: Tensor, k: int) -> Tensor:
        """(N, k) the Bayes-optimal top k of examples of ``groups`` (N,): g, g + G, g + 2G, ...;
        ids past L (a group with fewer than k labels) are -1."""
        ranked = groups.unsqueeze(1) + self.num_groups * torch.arange(k)
        return ranked.masked_fill(ranked >= self.num_labels, -1)

    def sample(self, num_rows: int, generator: torch.Generator) -> tuple[LabelledRows, Tensor]:
        """``num_rows`` examples and the (N,) group each was drawn from."""
        check_positive_int("num_rows", num_rows)
        groups = torch.multinomial(self.popularity, num_rows, replacement=True, generator=generator) % self.num_groups
        # inverse CDF over each group's members g, g + G, ... (laid out as a (G, ceil(L/G)) table)
        width = -(-self.num_labels // self.num_groups)
        members = torch.arange(self.num_groups).unsqueeze(1) + self.num_groups * torch.arange(width)
        table = torch.where(members < self.num_labels, self.within_group()[members.clamp(max=self.num_labels - 1)], 0.0)
        cdf = table.cumsum(1)
        u = torch.rand(num_rows, self.draws, generator=generator, dtype=torch.float64)
        slot = torch.cat(
            [
                torch.searchsorted(cdf[chunk], u[start : start + _ROW_CHUNK] * cdf[chunk, -1:])
                for start, chunk in (
                    (start, groups[start : start + _ROW_CHUNK]) for start in range(0, num_rows, _ROW_CHUNK)
                )
            ]
        ).clamp(max=width - 1)
        labels = (groups.unsqueeze(1) + self.num_groups * slot).sort(dim=1).values
        repeated = torch.zeros_like(labels, dtype=torch.bool)
        repeated[:, 1:] = labels[:, 1:] == labels[:, :-1]
        labels = labels.masked_fill(repeated, -1).sort(dim=1, descending=True).values
        features = [self.signatures[groups]]
        if self.noise:
            span = self.num_features - self.signature_features
            noise = torch.randint(0, span, (num_rows, self.noise), generator=generator)
            features.append(self.signature_features + noise)
        flat = torch.cat(features, dim=1)
        width_features = flat.shape[1]
        offsets = torch.arange(0, (num_rows + 1) * width_features, width_features)
        rows = LabelledRows(
            offsets, flat.reshape(-1), torch.ones(flat.numel()), labels, self.num_features, self.num_labels
        )
        return rows, groups


def _distinct_signatures(num_groups: int, size: int, pool: int, generator: torch.Generator) -> Tensor:
    """(G, size) int64: for each group ``size`` distinct ids in [0, pool), no two groups the same set."""
    signatures = torch.randint(0, pool, (num_groups, size), generator=generator).sort(dim=1).values
    while True:
        repeated = (signatures[:, 1:] == signatures[:, :-1]).any(1)
        _, inverse = torch.unique(signatures, dim=0, return_inverse=True)
        first = torch.full((num_groups,), num_groups, dtype=torch.long).scatter_reduce(
            0, inverse, torch.arange(num_groups), reduce="amin"
        )
        redraw = repeated | (first[inverse] != torch.arange(num_groups))
        if not bool(redraw.any()):
            return signatures
        fresh = torch.randint(0, pool, (int(redraw.sum()), size), generator=generator)
        signatures[redraw] = fresh.sort(dim=1).values
