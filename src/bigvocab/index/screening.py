"""``screening`` -- learned screening (L2S; Chen et al. 2018, "Learning to Screen for Fast Softmax
Inference on Large Vocabulary Neural Networks").

Hidden states of one kind of context want the same few words. L2S clusters a sample of training
contexts and gives each cluster a candidate list; at test time a query goes to its cluster and only
that list is scored exactly. Here the clusters are k-means over the contexts (L2S's own
initialisation) and each cluster's list is chosen by a rule that needs no training: every context
of the cluster names its exact top-``cover`` ids, and the list holds the ids named most often,
best first. For a fixed clustering this is the list of a given size that covers the most of its
contexts' (context, top-``cover`` id) pairs -- each pair counts once and an id's pairs are its
count, so taking the highest counts is optimal -- which is the recall term of L2S's objective
under its size penalty; L2S would go on to move the cluster boundaries by Gumbel-softmax, which
this does not.

``budget`` (how much of each list is scored) and ``nprobe`` (how many nearest clusters' lists a
query takes) are search options: the lists are kept whole, in order, so a larger budget needs no
rebuild. A query whose lists hold fewer than k ids gets the exact top-k.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from bigvocab.errors import ConfigError
from bigvocab.index.base import ApproxIndex
from bigvocab.index.kmeans import kmeans, nearest_centroids
from bigvocab.index.mips import lift_queries
from bigvocab.registry import INDEXES
from bigvocab.validation import check_positive_int

#: Context scores (contexts x classes) held at once while finding each context's top ids.
_BLOCK_ELEMENTS = 1 << 24


@INDEXES.register("screening")
class LearnedScreening(ApproxIndex):
    """Args:
    rows: (V, H + 2) lifted rows (see :mod:`bigvocab.index.mips`).
    contexts: (M, H) hidden states from training data (not the queries it will answer).
    beta: the bias scale of the lift (given by :func:`bigvocab.index.build_index`).
    clusters: number of context clusters (default sqrt(M)).
    cover: each context's exact top ids its cluster's list should hold (default 10).
    kmeans_iterations: Lloyd iterations over the contexts.
    budget: ids of each list scored per query (search option).
    nprobe: nearest clusters whose lists a query takes (search option).
    seed: of the k-means initialisation.
    """

    SEARCH_OPTIONS = ("budget", "nprobe")
    budget: int
    nprobe: int

    def __init__(
        self,
        rows: Tensor,
        *,
        contexts: Tensor | None = None,
        beta: float = 1.0,
        clusters: int | None = None,
        cover: int = 10,
        kmeans_iterations: int = 10,
        budget: int = 1000,
        nprobe: int = 1,
        seed: int = 0,
    ) -> None:
        if not isinstance(contexts, Tensor) or contexts.dim() != 2 or contexts.shape[1] != rows.shape[1] - 2:
            raise ConfigError(
                f"index kind 'screening' needs contexts=, a (M, {rows.shape[1] - 2}) tensor of training hidden states"
            )
        num_contexts, num_classes = contexts.shape[0], rows.shape[0]
        clusters = check_positive_int("clusters", clusters if clusters is not None else int(math.sqrt(num_contexts)))
        clusters = min(clusters, num_contexts)
        cover = min(check_positive_int("cover", cover), num_classes)
        self.build_options = {
            "contexts": num_contexts,
            "clusters": clusters,
            "cover": cover,
            "kmeans_iterations": check_positive_int("kmeans_iterations", kmeans_iterations),
            "seed": seed,
        }
        contexts = contexts.detach().float()
        self.centroids = kmeans(contexts, clusters, iterations=kmeans_iterations, seed=seed)
        cluster = nearest_centroids(contexts, self.centroids).flatten()
        lifted = lift_queries(contexts, beta)
        block = max(1, _BLOCK_ELEMENTS // num_classes)
        named = torch.cat([(part @ rows.t()).topk(cover, dim=1).indices for part in lifted.split(block)])
        # One key per (cluster, id) pair; its count is how many of the cluster's contexts name it.
        keys, counts = torch.unique(cluster[:, None] * num_classes + named, return_counts=True)
        list_cluster, list_id = keys // num_classes, keys % num_classes
        order = torch.argsort(counts, descending=True, stable=True)
        order = order[torch.argsort(list_cluster[order], stable=True)]  # by cluster, most named first
        self.lists = list_id[order].contiguous()
        sizes = torch.bincount(list_cluster, minlength=clusters)
        self.offsets = torch.cat([sizes.new_zeros(1), sizes.cumsum(0)])
        self.num_classes = num_classes
        self.tune(budget=budget, nprobe=nprobe)

    def _set_search_option(self, name: str, value: int) -> None:
        setattr(self, name, check_positive_int(name, value))

    def _candidates(self, queries: Tensor, k: int) -> tuple[Tensor, Tensor]:
        hidden = queries[:, : self.centroids.shape[1]]
        probed = nearest_centroids(hidden, self.centroids, min(self.nprobe, self.centroids.shape[0])).flatten()
        starts = self.offsets[probed]
        sizes = (self.offsets[probed + 1] - starts).clamp_max(self.budget)
        total = int(sizes.sum())
        position = torch.arange(total) - torch.repeat_interleave(sizes.cumsum(0) - sizes - starts, sizes)
        query_rows = torch.arange(queries.shape[0]).repeat_interleave(probed.shape[0] // queries.shape[0])
        query_rows = torch.repeat_interleave(query_rows, sizes)
        ids = self.lists[position]
        if self.nprobe > 1:  # lists of several clusters may share ids: rescore each once
            pairs = torch.unique(query_rows * self.num_classes + ids)
            return pairs // self.num_classes, pairs % self.num_classes
        return query_rows, ids

    def memory_bytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.centroids, self.lists, self.offsets))
