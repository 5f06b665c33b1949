"""``adaptive`` vocabulary-parallel: head replicated, every tail cluster's rows split over ranks.

Adaptive softmax (Grave et al. 2017) puts the frequent words and one token per cluster in a small
head that every example scores, and the rare words in tail clusters scored only for the examples
whose target lies there. The head (``shortlist + clusters`` rows) and the projections
(H -> h_i) are small, so every rank holds them whole and computes them alike; the clusters'
output matrices (|V_i|, h_i) hold almost all of the parameters, so each is split evenly over the
ranks (:func:`~bigvocab.distributed.rows.even_rows`): every rank holds ~1/P of every cluster, so
each rank's share of the memory and of a step's work is ~1/P whichever clusters the batch's
targets fall in (splitting whole clusters would leave a rank idle when none of its clusters is hit).

Within a cluster the softmax is the sharded linear softmax of ``full``
(:mod:`~bigvocab.outputs.parallel.functional`, Megatron-LM's vocab-parallel cross-entropy scheme,
Shoeybi et al. 2019): per cluster hit by the batch, each rank streams its rows into a partial
log-normaliser, an all-reduce of the maximum and one of the sum of exponentials give the
cluster's log Z, and an all-reduce of the target scores (zero where another rank owns the row).
Per step, for each cluster with targets in the batch (n_i of them): three all-reduces of n_i
numbers forward and one of n_i x h_i backward (the projected states' gradient). ``log_softmax``
gathers each cluster's (N, |V_i|) scores; ``topk`` merges per-rank top-k lists per cluster.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn

from bigvocab.distributed.rows import RowLayout, RowSharded, even_rows
from bigvocab.errors import ConfigError
from bigvocab.outputs.adaptive import AdaptiveSoftmax
from bigvocab.outputs.base import OutputLayer
from bigvocab.outputs.parallel.functional import sharded_log_normaliser, sharded_logits, sharded_topk


class VocabParallelAdaptive(RowSharded, AdaptiveSoftmax):
    """This rank's part of a one-process :class:`AdaptiveSoftmax` split over ``group``.

    The head and projections are the one-process layer's modules (replicated); ``tail[i][1].weight``
    holds rows ``[shards[i].start, shards[i].stop)`` of cluster i (ids within the cluster).
    """

    def __init__(self, layer: AdaptiveSoftmax, group: Any) -> None:
        # The one-process layer is built already (same seed on every rank): take its modules and
        # cut the cluster rows, rather than build and draw a second full set of parameters.
        if isinstance(layer, VocabParallelAdaptive):
            raise ConfigError("this layer is already vocabulary-parallel")
        OutputLayer.__init__(self, layer.in_features, layer.num_classes)
        for name in ("cutoffs", "div_value", "max_chunk_elements", "edges", "shortlist_size"):
            setattr(self, name, getattr(layer, name))
        self.head = layer.head
        self.tail = layer.tail
        # Every cluster's split is checked before any is cut, so a refusal leaves the layer whole.
        self.shards = [
            even_rows(output.weight.shape[0], group, what=f"adaptive's cluster {i}")
            for i, (_, output) in enumerate(self._clusters())
        ]
        for (_, output), shard in zip(self._clusters(), self.shards):
            rows = output.weight.detach()[shard.start : shard.stop].clone()
            output.weight = nn.Parameter(rows, requires_grad=output.weight.requires_grad)

    def sharded_rows(self) -> dict[str, RowLayout]:
        return {f"tail.{i}.1.weight": RowLayout.contiguous(shard) for i, shard in enumerate(self.shards)}

    def _cluster_log_prob(self, cluster: int, x: Tensor, target: Tensor) -> Tensor:
        log_z, logit = sharded_log_normaliser(
            x,
            self._clusters()[cluster][1].weight,
            None,
            target,
            self.shards[cluster],
            max_chunk_elements=self.max_chunk_elements,
        )
        return logit - log_z

    def _cluster_log_softmax(self, cluster: int, x: Tensor) -> Tensor:
        logits = sharded_logits(x, self._clusters()[cluster][1].weight, None, self.shards[cluster])
        return logits.log_softmax(dim=1)

    def _cluster_topk(self, cluster: int, x: Tensor, k: int) -> tuple[Tensor, Tensor]:
        return sharded_topk(
            x,
            self._clusters()[cluster][1].weight,
            None,
            k,
            self.shards[cluster],
            max_chunk_elements=self.max_chunk_elements,
        )

    def extra_repr(self) -> str:
        parts = ", ".join(f"[{s.start}, {s.stop})" for s in self.shards)
        rank = self.shards[0].rank
        return super().extra_repr() + f", cluster rows {parts} on rank {rank} of {self.shards[0].partition.world_size}"
