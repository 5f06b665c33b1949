"""``faiss-ivf`` -- an inverted file over k-means cells (faiss ``IndexIVFFlat``; Jégou et al. 2011).

k-means splits the lifted rows into ``nlist`` cells; a query scans the rows of its ``nprobe``
nearest cells exhaustively and keeps the nearest ``candidates``. The work per query is about
nprobe·V/nlist rows instead of V, which pays when trained weights cluster (words of one kind
point one way); on structureless Gaussian weights the nearest rows scatter over many cells and
recall falls. Needs ``faiss-cpu`` (``pip install 'bigvocab[ann]'``).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from bigvocab.index.neighbours import NeighbourIndex
from bigvocab.index.optional import require
from bigvocab.registry import INDEXES
from bigvocab.validation import check_positive_int


@INDEXES.register("faiss-ivf")
class FaissIVF(NeighbourIndex):
    """Args:
    rows: (V, D) lifted rows.
    nlist: number of cells (default 4·sqrt(V), faiss's rule of thumb).
    train_size: rows sampled to train k-means (default 40 per cell, the fewest faiss accepts
        without a warning).
    kmeans_iterations: Lloyd iterations (faiss's default is 25; cells need not be optimal,
        only coherent, and this is most of the build time).
    nprobe: cells scanned per query (search option).
    candidates: neighbours returned per query before rescoring (search option).
    seed: of the k-means sample and initialisation.
    """

    SEARCH_OPTIONS = ("nprobe", "candidates")

    def __init__(
        self,
        rows: Tensor,
        *,
        nlist: int | None = None,
        train_size: int | None = None,
        kmeans_iterations: int = 10,
        nprobe: int = 8,
        candidates: int = 10,
        seed: int = 0,
    ) -> None:
        faiss = require("faiss", "faiss-ivf")
        num_rows, dim = rows.shape
        nlist = check_positive_int("nlist", nlist if nlist is not None else max(1, int(4 * math.sqrt(num_rows))))
        train_size = min(
            num_rows, check_positive_int("train_size", train_size if train_size is not None else 40 * nlist)
        )
        self.build_options = {
            "nlist": nlist,
            "train_size": train_size,
            "kmeans_iterations": check_positive_int("kmeans_iterations", kmeans_iterations),
            "seed": seed,
        }
        faiss.omp_set_num_threads(torch.get_num_threads())
        data = rows.contiguous().numpy()
        quantiser = faiss.IndexFlatL2(dim)
        self.index = faiss.IndexIVFFlat(quantiser, dim, nlist, faiss.METRIC_L2)
        self.index.cp.seed = seed
        self.index.cp.niter = kmeans_iterations
        sample = np.random.default_rng(seed).choice(num_rows, size=train_size, replace=False)
        self.index.train(data[np.sort(sample)])
        self.index.add(data)
        self._quantiser = quantiser  # faiss does not own it: keep it alive as long as the index
        self.tune(nprobe=nprobe, candidates=candidates)

    def _set_search_option(self, name: str, value: int) -> None:
        super()._set_search_option(name, value)
        if name == "nprobe":
            self.index.nprobe = value

    def _search(self, queries: np.ndarray, count: int) -> np.ndarray:
        require("faiss", "faiss-ivf").omp_set_num_threads(torch.get_num_threads())
        return self.index.search(queries, count)[1]

    def memory_bytes(self) -> int:
        return int(require("faiss", "faiss-ivf").serialize_index(self.index).nbytes)
