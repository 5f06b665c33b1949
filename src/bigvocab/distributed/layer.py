"""Make a linear-rows output layer vocabulary-parallel, whatever its training objective.

``full``, ``sampled``, ``nce``, ``neg``, ``target``, ``selfnorm``, ``infreq`` and ``ais`` share one
model -- the (V, H) rows of :class:`~bigvocab.outputs.linear.LinearOutput` -- and reach it only
through ``log_normaliser``, ``class_logits`` / ``target_logits``, ``logits`` and ``_topk``. So
:func:`vocab_parallel` keeps each rank's row range and swaps those methods for their sharded forms
(:mod:`bigvocab.distributed.vocab_parallel`); every objective then runs unchanged on every rank and
computes the one-process value, provided that each rank sees the same hidden states and the same
random draws (seed every rank alike; the draws of a sampler are then identical).

Layers with their own structure (trees, clusters, a CharCNN) do not have that shape and are refused.
"""
from __future__ import annotations

import functools
from typing import Any, Optional

from torch import Tensor, nn

from bigvocab.distributed.groups import VocabShard, vocab_shard
from bigvocab.distributed.partition import VocabPartition
from bigvocab.distributed.vocab_parallel import (
    sharded_class_logits,
    sharded_log_normaliser,
    sharded_logits,
    sharded_topk,
)
from bigvocab.errors import CheckpointError, ConfigError
from bigvocab.outputs.base import OutputLayer
from bigvocab.outputs.linear import LinearOutput

#: The parameters split by rows; everything else (a sampler's tables, nce's log Z) is replicated.
SHARDED_PARAMETERS = ("weight", "bias")


class VocabParallelRows:
    """Mixed in before a :class:`LinearOutput` subclass by :func:`vocab_parallel`: ``weight`` and
    ``bias`` hold this rank's rows and the scoring methods are the sharded ones."""

    shard: VocabShard
    weight: nn.Parameter
    bias: Optional[nn.Parameter]
    sparse_grad: bool
    max_chunk_elements: Optional[int]

    def log_normaliser(self, hidden: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
        return sharded_log_normaliser(
            hidden, self.weight, self.bias, target, self.shard, max_chunk_elements=self.max_chunk_elements
        )

    def class_logits(self, hidden: Tensor, ids: Tensor) -> Tensor:
        return sharded_class_logits(hidden, self.weight, self.bias, ids, self.shard, sparse=self.sparse_grad)

    def logits(self, hidden: Tensor) -> Tensor:
        return sharded_logits(hidden, self.weight, self.bias, self.shard)

    def _topk(self, hidden: Tensor, k: int) -> tuple[Tensor, Tensor]:
        return sharded_topk(hidden, self.weight, self.bias, k, self.shard, max_chunk_elements=self.max_chunk_elements)

    def tie_weights(self, embedding: nn.Embedding) -> None:
        raise ConfigError(
            "a vocabulary-parallel output layer cannot tie its rows to a replicated input embedding; "
            "train with tie_weights=False"
        )

    # The partition travels in the state dict, so that a shard never loads into another layout.
    def get_extra_state(self) -> dict[str, Any]:
        return {"vocab_boundaries": list(self.shard.partition.boundaries), "rank": self.shard.rank}

    def set_extra_state(self, state: dict[str, Any]) -> None:
        boundaries = tuple(state.get("vocab_boundaries", ()))
        if boundaries != self.shard.partition.boundaries or state.get("rank") != self.shard.rank:
            raise CheckpointError(
                f"this checkpoint shard was written by rank {state.get('rank')} of {len(boundaries) - 1} "
                f"ranks (class boundaries {list(boundaries)}), but this is rank {self.shard.rank} of "
                f"{self.shard.partition.world_size} (boundaries {list(self.shard.partition.boundaries)}); "
                "resume with the same number of processes, or load the gathered one-process checkpoint"
            )

    def extra_repr(self) -> str:
        return super().extra_repr() + f", classes [{self.shard.start}, {self.shard.stop}) of rank {self.shard.rank}"  # type: ignore[misc]


@functools.lru_cache(maxsize=None)
def _vocab_parallel_class(cls: type) -> type:
    """``cls`` with :class:`VocabParallelRows` in front (one class per layer class, as
    ``torch.nn.utils.parametrize`` does for parametrised modules)."""
    return type(f"VocabParallel{cls.__name__}", (VocabParallelRows, cls), {"__module__": __name__})


def vocab_parallel(layer: OutputLayer, group: Any, *, partition: Optional[VocabPartition] = None) -> OutputLayer:
    """Turn ``layer`` into this rank's part of a vocabulary-parallel layer, in place, and return it.

    ``layer`` is the full one-process layer, built identically on every rank (same seed): this
    rank keeps the rows of its range (``partition``, balanced by row count by default) and frees
    the rest. ``group`` is the process group the layer is split over (never implied).
    """
    if isinstance(layer, VocabParallelRows):
        raise ConfigError("this layer is already vocabulary-parallel")
    if not isinstance(layer, LinearOutput):
        raise ConfigError(
            f"{type(layer).__name__} cannot be made vocabulary-parallel: only layers that score classes "
            "with one (V, H) row each (and a bias) can be split by rows"
        )
    shard = vocab_shard(layer.num_classes, group, partition)
    for name in SHARDED_PARAMETERS:
        param = getattr(layer, name)
        if param is not None:
            rows = param.detach()[shard.start : shard.stop].clone()
            setattr(layer, name, nn.Parameter(rows, requires_grad=param.requires_grad))
    layer.shard = shard
    layer.__class__ = _vocab_parallel_class(type(layer))
    return layer
