"""Top-k within groups of a ragged list of scored (group, id) pairs."""

from __future__ import annotations

import torch
from torch import Tensor


def ragged_topk(group: Tensor, ids: Tensor, values: Tensor, num_groups: int, k: int) -> tuple[Tensor, Tensor, Tensor]:
    """The k best ``values`` of each group, best first.

    group, ids, values: (P,) pairs, in any order. Returns (values (G, k), ids (G, k), counts (G,)),
    where counts says how many pairs each group had; a group with fewer than k pairs is padded
    with -inf and id -1. Two stable sorts, O(P log P), so that one crowded group does not pad
    every other group to its width.
    """
    by_value = torch.argsort(values, descending=True, stable=True)
    group, ids, values = group[by_value], ids[by_value], values[by_value]
    by_group = torch.argsort(group, stable=True)
    group, ids, values = group[by_group], ids[by_group], values[by_group]
    counts = torch.bincount(group, minlength=num_groups)
    starts = torch.cumsum(counts, 0) - counts
    rank = torch.arange(group.shape[0], device=group.device) - starts[group]
    keep = rank < k
    best = values.new_full((num_groups, k), float("-inf"))
    best_ids = torch.full((num_groups, k), -1, dtype=torch.long, device=group.device)
    best[group[keep], rank[keep]] = values[keep]
    best_ids[group[keep], rank[keep]] = ids[keep]
    return best, best_ids, counts
