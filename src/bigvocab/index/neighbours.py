"""What the library-backed kinds share: a k-nearest-neighbour search over the lifted rows.

faiss and hnswlib answer "the C nearest lifted rows" as a (N, C) id matrix padded with -1; that is
turned into (query, id) pairs here once for every such kind. ``candidates`` is C, the number of
neighbours asked for per query (never fewer than the k requested): asking for more than k lets
the exact rescoring repair the order of near-ties, at the price of C·H more work a query.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from bigvocab.index.base import ApproxIndex
from bigvocab.validation import check_positive_int


class NeighbourIndex(ApproxIndex):
    """Base of the kinds whose library returns a (N, C) matrix of nearest ids."""

    candidates: int  # a search option each kind declares, set by tune

    def _set_search_option(self, name: str, value: int) -> None:
        setattr(self, name, check_positive_int(name, value))

    def _candidates(self, queries: Tensor, k: int) -> tuple[Tensor, Tensor]:
        found = torch.from_numpy(self._search(queries.contiguous().numpy(), max(k, self.candidates)).astype(np.int64))
        rows, columns = (found >= 0).nonzero(as_tuple=True)
        return rows, found[rows, columns]

    def _search(self, queries: np.ndarray, count: int) -> np.ndarray:
        """(N, D) float32 -> (N, count) int ids, -1 where fewer were found."""
        raise NotImplementedError
