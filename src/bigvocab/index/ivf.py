"""``ivf`` -- a native inverted file over k-means cells (Jégou et al. 2011), no dependency.

k-means (:mod:`bigvocab.index.kmeans`) splits the lifted rows into ``nlist`` cells, and the
rows are stored again grouped by cell; a query ranks the cells by the distance of their centroids
and scans the rows of its ``nprobe`` nearest ones with a compiled loop
(:mod:`bigvocab.kernels.ivf`), keeping its ``candidates`` best inner products for exact
rescoring. The work per query is about nprobe·V/nlist rows plus nlist centroids instead of V
rows, which pays when trained rows cluster (words of one kind point one way). The same method as
``faiss-ivf``, in torch and numba, so that the default index needs nothing beyond the core.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from bigvocab.index.base import ApproxIndex
from bigvocab.index.kmeans import kmeans, nearest_centroids
from bigvocab.registry import INDEXES
from bigvocab.validation import check_positive_int


@INDEXES.register("ivf")
class InvertedFile(ApproxIndex):
    """Args:
    rows: (V, D) lifted rows.
    nlist: number of cells (default 4·sqrt(V)).
    train_size: rows sampled to train k-means (default 40 per cell).
    kmeans_iterations: Lloyd iterations (cells need only be coherent, not optimal).
    nprobe: cells scanned per query (search option).
    candidates: best rows kept per query for exact rescoring (search option; at least k).
    seed: of the k-means sample and initialisation.
    """

    SEARCH_OPTIONS = ("nprobe", "candidates")
    nprobe: int
    candidates: int

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
        num_rows = rows.shape[0]
        nlist = check_positive_int("nlist", nlist if nlist is not None else max(1, int(4 * math.sqrt(num_rows))))
        nlist = min(nlist, num_rows)
        train_size = check_positive_int("train_size", train_size if train_size is not None else 40 * nlist)
        train_size = max(nlist, min(num_rows, train_size))
        self.build_options = {
            "nlist": nlist,
            "train_size": train_size,
            "kmeans_iterations": check_positive_int("kmeans_iterations", kmeans_iterations),
            "seed": seed,
        }
        generator = torch.Generator().manual_seed(seed)
        sample = torch.randperm(num_rows, generator=generator)[:train_size].sort().values
        self.centroids = kmeans(rows[sample], nlist, iterations=kmeans_iterations, seed=seed)
        cell = nearest_centroids(rows, self.centroids).flatten()
        self.order = torch.argsort(cell, stable=True)
        self.offsets = torch.cat([cell.new_zeros(1), torch.bincount(cell, minlength=nlist).cumsum(0)])
        self.grouped = rows[self.order].contiguous()
        self.tune(nprobe=nprobe, candidates=candidates)

    def _set_search_option(self, name: str, value: int) -> None:
        setattr(self, name, check_positive_int(name, value))

    def _candidates(self, queries: Tensor, k: int) -> tuple[Tensor, Tensor]:
        from bigvocab.kernels.ivf import scan_cells

        cells = nearest_centroids(queries, self.centroids, min(self.nprobe, self.centroids.shape[0]))
        positions, _ = scan_cells(
            queries.contiguous().numpy(),
            self.grouped.numpy(),
            self.offsets.numpy(),
            cells.numpy(),
            max(k, self.candidates),
        )
        found = torch.from_numpy(positions)
        query_rows, columns = (found >= 0).nonzero(as_tuple=True)
        return query_rows, self.order[found[query_rows, columns]]

    def memory_bytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.centroids, self.order, self.offsets, self.grouped))
