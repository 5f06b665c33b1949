"""``faiss-hnsw`` -- a hierarchical navigable small-world graph (faiss ``IndexHNSWFlat``;
Malkov & Yashunin 2018).

Each lifted row links to about ``M`` near rows on each of a few layers; a query walks the graph
greedily from the top layer down, keeping a beam of ``ef_search`` rows on the last. Work per query
grows with M·ef_search·log V rather than V. Building inserts every row (the slow part:
``ef_construction`` sets its beam). Needs ``faiss-cpu`` (``pip install 'bigvocab[ann]'``).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from bigvocab.index.neighbours import NeighbourIndex
from bigvocab.index.optional import require
from bigvocab.registry import INDEXES
from bigvocab.validation import check_positive_int


@INDEXES.register("faiss-hnsw")
class FaissHNSW(NeighbourIndex):
    """Args:
    rows: (V, D) lifted rows.
    M: links per row and layer.
    ef_construction: beam while inserting.
    ef_search: beam while searching (search option; raised to ``candidates`` if smaller).
    candidates: neighbours returned per query before rescoring (search option).
    """

    SEARCH_OPTIONS = ("ef_search", "candidates")
    ef_search: int

    def __init__(
        self, rows: Tensor, *, M: int = 16, ef_construction: int = 40, ef_search: int = 32, candidates: int = 10
    ) -> None:
        faiss = require("faiss", "faiss-hnsw")
        self.build_options = {
            "M": check_positive_int("M", M),
            "ef_construction": check_positive_int("ef_construction", ef_construction),
        }
        faiss.omp_set_num_threads(torch.get_num_threads())
        self.index = faiss.IndexHNSWFlat(rows.shape[1], M, faiss.METRIC_L2)
        self.index.hnsw.efConstruction = ef_construction
        self.index.add(rows.contiguous().numpy())
        self.tune(ef_search=ef_search, candidates=candidates)

    def _set_search_option(self, name: str, value: int) -> None:
        super()._set_search_option(name, value)
        if name == "ef_search":
            self.index.hnsw.efSearch = value

    def _search(self, queries: np.ndarray, count: int) -> np.ndarray:
        require("faiss", "faiss-hnsw").omp_set_num_threads(torch.get_num_threads())
        self.index.hnsw.efSearch = max(self.ef_search, count)
        return self.index.search(queries, count)[1]

    def memory_bytes(self) -> int:
        return int(require("faiss", "faiss-hnsw").serialize_index(self.index).nbytes)
