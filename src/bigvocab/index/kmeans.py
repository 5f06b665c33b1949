"""Lloyd's k-means in torch, and nearest centroids by blocks: the cells of the inverted file and
the context clusters of learned screening."""

from __future__ import annotations

import torch
from torch import Tensor

#: Scores (points x centroids) held at once while assigning.
_BLOCK_ELEMENTS = 1 << 24


def nearest_centroids(points: Tensor, centroids: Tensor, count: int = 1) -> Tensor:
    """points (n, D), centroids (K, D) -> (n, count) ids of the ``count`` nearest centroids in
    Euclidean distance, nearest first: the largest 2 x·c - |c|², in blocks of points."""
    offset = centroids.pow(2).sum(1)
    block = max(1, _BLOCK_ELEMENTS // max(1, centroids.shape[0]))
    return torch.cat([(2 * part @ centroids.t() - offset).topk(count, dim=1).indices for part in points.split(block)])


def kmeans(points: Tensor, clusters: int, *, iterations: int, seed: int) -> Tensor:
    """points (n, D) float32, n >= clusters -> (clusters, D) centroids after ``iterations`` Lloyd
    steps from ``clusters`` distinct points drawn under ``seed``. A cluster left empty keeps its
    centroid (it may win points back on the next step)."""
    generator = torch.Generator().manual_seed(seed)
    centroids = points[torch.randperm(points.shape[0], generator=generator)[:clusters]].clone()
    for _ in range(iterations):
        assigned = nearest_centroids(points, centroids).flatten()
        sizes = torch.bincount(assigned, minlength=clusters)
        sums = torch.zeros_like(centroids).index_add_(0, assigned, points)
        filled = sizes > 0
        centroids[filled] = sums[filled] / sizes[filled, None].to(points.dtype)
    return centroids
