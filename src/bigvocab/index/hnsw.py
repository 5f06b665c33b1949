"""``hnswlib`` -- the HNSW graph of Malkov & Yashunin 2018 in its authors' library.

The same algorithm as ``faiss-hnsw`` (see :mod:`bigvocab.index.faiss_hnsw`), from hnswlib,
whose insertion is usually the faster of the two. Needs ``hnswlib``
(``pip install 'bigvocab[ann]'``).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from bigvocab.index.neighbours import NeighbourIndex
from bigvocab.index.optional import require
from bigvocab.registry import INDEXES
from bigvocab.validation import check_positive_int


@INDEXES.register("hnswlib")
class HnswlibHNSW(NeighbourIndex):
    """Args:
    rows: (V, D) lifted rows.
    M: links per row and layer.
    ef_construction: beam while inserting.
    ef_search: beam while searching (search option; raised to ``candidates`` if smaller).
    candidates: neighbours returned per query before rescoring (search option).
    seed: of the random layer assignment.
    """

    SEARCH_OPTIONS = ("ef_search", "candidates")
    ef_search: int

    def __init__(
        self,
        rows: Tensor,
        *,
        M: int = 16,
        ef_construction: int = 40,
        ef_search: int = 32,
        candidates: int = 10,
        seed: int = 0,
    ) -> None:
        hnswlib = require("hnswlib", "hnswlib")
        self.build_options = {
            "M": check_positive_int("M", M),
            "ef_construction": check_positive_int("ef_construction", ef_construction),
            "seed": seed,
        }
        num_rows, self.dim = rows.shape
        self.index = hnswlib.Index(space="l2", dim=self.dim)
        self.index.init_index(max_elements=num_rows, ef_construction=ef_construction, M=M, random_seed=seed)
        self.index.add_items(rows.contiguous().numpy(), np.arange(num_rows), num_threads=torch.get_num_threads())
        self.tune(ef_search=ef_search, candidates=candidates)

    def _search(self, queries: np.ndarray, count: int) -> np.ndarray:
        self.index.set_ef(max(self.ef_search, count))
        return self.index.knn_query(queries, k=count, num_threads=torch.get_num_threads())[0]

    def memory_bytes(self) -> int:
        # hnswlib's layout: level 0 holds per row the vector, 2M links, a link count and a label;
        # a row reaches the upper levels 1/(M - 1) times on average, M links and a count each.
        links = self.build_options["M"]
        count = self.index.get_current_count()
        level0 = count * (self.dim * 4 + 2 * links * 4 + 4 + 8)
        upper = count / max(1, links - 1) * (links * 4 + 4)
        return int(level0 + upper)
