"""The ``sharded`` scorer: linear rows s_w = h . W_w + b_w with the rows split over ranks.

Each rank holds ``weight`` (V_r, H) and ``bias`` (V_r,) for the classes of its
:class:`~bigvocab.distributed.groups.VocabShard` and answers the whole
:class:`~bigvocab.outputs.scorers.base.Scorer` contract through the sharded maths of
:mod:`bigvocab.outputs.parallel.functional`. Every objective (``full``, ``sampled``, ``nce``,
``neg``, ``target``, ``selfnorm``, ``infreq``, ``ais``) is written against that contract, so each
gets its vocabulary-parallel form unchanged -- provided that every rank sees the same hidden
states and makes the same random draws (seed every rank alike: a sampler then draws the same ids
everywhere, and the estimate equals the one-process estimate).

Two ways in:

* ``vocab_parallel(layer, group)`` -- split a built one-process layer (same seed on every rank):
  its rows, so the split layer computes exactly what the one-process layer computes;
* ``create_output(name, H, V, scorer=VocabParallelScorer(H, V, process_group=group))`` -- build
  only this rank's rows (for a V whose rows do not fit one device); they are drawn from the same
  distribution as ``linear``'s, each rank from its own stream.

The scorer is not in the scorer registry: the registry-driven contract suites build every
registered scorer in one ordinary process, and this one needs a process group.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from bigvocab.distributed.groups import vocab_shard
from bigvocab.distributed.partition import VocabPartition
from bigvocab.distributed.rows import RowLayout, RowSharded
from bigvocab.errors import ConfigError
from bigvocab.outputs.base import OutputLayer
from bigvocab.outputs.parallel.functional import (
    sharded_class_logits,
    sharded_log_normaliser,
    sharded_logits,
    sharded_topk,
)
from bigvocab.outputs.scorers.base import Scorer

if TYPE_CHECKING:
    from bigvocab.outputs.scorers.linear import LinearScorer


class VocabParallelScorer(RowSharded, Scorer):
    """This rank's rows of a linear scorer split over ``process_group``.

    Args:
        in_features: H.
        num_classes: V, the whole vocabulary.
        process_group: the group the rows are split over (never implied).
        partition: the class ranges of the ranks (default: contiguous, balanced by row count).
        bias, max_chunk_elements, device, dtype: as for ``linear``.
    """

    free_rows = True

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        process_group: Any,
        partition: VocabPartition | None = None,
        bias: bool = True,
        max_chunk_elements: int | None = None,
        device: torch.device | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(in_features, num_classes, max_chunk_elements=max_chunk_elements)
        self.shard = vocab_shard(num_classes, process_group, partition)
        factory: dict[str, Any] = {"device": device, "dtype": dtype}
        self.weight = nn.Parameter(torch.empty(self.shard.size, in_features, **factory))
        self.bias = nn.Parameter(torch.zeros(self.shard.size, **factory)) if bias else None
        self.reset_parameters()

    @classmethod
    def from_linear(
        cls, scorer: LinearScorer, process_group: Any, partition: VocabPartition | None = None
    ) -> VocabParallelScorer:
        """This rank's rows of a built one-process ``linear`` scorer (copied, so the original
        can be freed)."""
        weight = scorer.weight
        sharded = cls(
            scorer.in_features,
            scorer.num_classes,
            process_group=process_group,
            partition=partition,
            bias=scorer.bias is not None,
            max_chunk_elements=scorer.max_chunk_elements,
            device=torch.device("meta"),  # no second allocation of the rows, filled just below
            dtype=weight.dtype,
        )
        start, stop = sharded.shard.start, sharded.shard.stop
        sharded.weight = nn.Parameter(weight.detach()[start:stop].clone(), requires_grad=weight.requires_grad)
        if scorer.bias is not None:
            sharded.bias = nn.Parameter(
                scorer.bias.detach()[start:stop].clone(), requires_grad=scorer.bias.requires_grad
            )
        sharded.sparse_grad = scorer.sparse_grad
        return sharded

    def reset_parameters(self) -> None:
        if self.weight.is_meta:  # from_linear fills the rows
            return
        # One seed drawn alike on every rank keeps the ranks' global random streams in step (their
        # samplers must draw the same ids); each rank's rows then come from a stream of its own.
        seed = int(torch.randint(1 << 62, (), dtype=torch.long)) + self.shard.rank
        generator = torch.Generator(device=self.weight.device).manual_seed(seed)
        bound = 1.0 / math.sqrt(self.in_features)
        with torch.no_grad():
            self.weight.uniform_(-bound, bound, generator=generator)
            if self.bias is not None:
                self.bias.zero_()

    # ------------------------------------------------------------------ the Scorer contract
    def class_logits(self, hidden: Tensor, ids: Tensor) -> Tensor:
        return sharded_class_logits(hidden, self.weight, self.bias, ids, self.shard, sparse=self.sparse_grad)

    def log_normaliser(
        self, hidden: Tensor, target: Tensor, *, equal_row_weights: bool = False
    ) -> tuple[Tensor, Tensor]:
        # The hint does not reach the shards: each rank's local log Z is weighed per row by its
        # share of the global Z, so its rows are never weighed alike.
        return sharded_log_normaliser(
            hidden, self.weight, self.bias, target, self.shard, max_chunk_elements=self.max_chunk_elements
        )

    def topk(self, hidden: Tensor, k: int) -> tuple[Tensor, Tensor]:
        return sharded_topk(hidden, self.weight, self.bias, k, self.shard, max_chunk_elements=self.max_chunk_elements)

    def logits(self, hidden: Tensor) -> Tensor:
        return sharded_logits(hidden, self.weight, self.bias, self.shard)

    def sparse_parameters(self) -> list[nn.Parameter]:
        return [p for p in (self.weight, self.bias) if p is not None]

    def zero_rows_(self) -> None:
        with torch.no_grad():
            self.weight.zero_()

    def tie_weights(self, embedding: nn.Embedding) -> None:
        raise ConfigError(
            "a vocabulary-parallel output layer cannot tie its rows to a replicated input embedding; "
            "train with tie_weights=False"
        )

    def sharded_rows(self) -> dict[str, RowLayout]:
        layout = RowLayout.contiguous(self.shard)
        return {name: layout for name in ("weight", "bias") if getattr(self, name) is not None}

    def shard_rows(self, group: Any, partition: VocabPartition | None = None) -> Scorer | None:
        raise ConfigError("this layer is already vocabulary-parallel")

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, num_classes={self.num_classes}, bias={self.bias is not None}, "
            f"classes [{self.shard.start}, {self.shard.stop}) on rank {self.shard.rank} of {self.shard.partition.world_size}"
        )


def vocab_parallel(layer: OutputLayer, group: Any, *, partition: VocabPartition | None = None) -> OutputLayer:
    """This rank's part of ``layer`` split over ``group`` (the layer's own
    :meth:`~bigvocab.outputs.base.OutputLayer.shard_vocabulary`); use only the returned layer
    afterwards. ``layer`` is the one-process layer built alike on every rank (same seed), so the
    split layer computes exactly what it computes. Objectives over the ``linear`` scorer keep the
    rows of a contiguous class range (``partition``, balanced by row count by default),
    ``adaptive`` ~1/P of each tail cluster, ``hsm`` whole subtrees; the rest refuse.
    """
    return layer.shard_vocabulary(group, partition=partition)
