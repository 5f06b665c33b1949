"""``linear`` -- a free output row per class: s_w = h . W_w + b_w, W (V, H), b (V,).

The scorer of the full softmax and of every sampling- and normalisation-based objective in the
literature; its rows can be tied to an input embedding (Press & Wolf 2017; Inan et al. 2017).
"""

from __future__ import annotations

import math
from typing import Any, cast

import torch
from torch import Tensor, nn

from bigvocab.errors import ConfigError
from bigvocab.outputs.functional import gather_rows
from bigvocab.outputs.scorers.base import Scorer
from bigvocab.outputs.scorers.rows import RowScorer
from bigvocab.registry import SCORERS


@SCORERS.register("linear")
class LinearScorer(RowScorer):
    """Rows ``weight`` (V, H), optional ``bias`` (V,).

    Args:
        in_features: H.
        num_classes: V.
        bias: learn a per-class bias.
        max_chunk_elements: scores held at once by exact whole-vocabulary computations (None:
            2**24, i.e. 64 MiB in float32, or 2**28 on CUDA: ``functional.chunk_budget``; with
            None, ``full``'s training step may also take blocks of whole rows up to the weight's
            size, at most 2**28: ``functional.chunked_logsumexp``).
        device, dtype: where the parameters are created (PyTorch's factory keywords).
    """

    free_rows = True

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        bias: bool = True,
        max_chunk_elements: int | None = None,
        device: torch.device | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(in_features, num_classes, max_chunk_elements=max_chunk_elements)
        factory: dict[str, Any] = {"device": device, "dtype": dtype}
        self.weight = nn.Parameter(torch.empty(num_classes, in_features, **factory))
        self.bias = nn.Parameter(torch.zeros(num_classes, **factory)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.in_features)
        nn.init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def zero_rows_(self) -> None:
        with torch.no_grad():
            self.weight.zero_()

    def tie_weights(self, embedding: nn.Embedding) -> None:
        """Share ``weight`` with an input embedding (Press & Wolf 2017; Inan et al. 2017)."""
        if tuple(embedding.weight.shape) != (self.num_classes, self.in_features):
            raise ConfigError(
                f"cannot tie an embedding of shape {tuple(embedding.weight.shape)} to an output "
                f"weight of shape {(self.num_classes, self.in_features)}"
            )
        self.weight = cast(nn.Parameter, embedding.weight)  # nn.Embedding types its Parameter as a Tensor

    def row_parameters(self) -> int:
        return self.in_features

    def shard_rows(self, group: Any, partition: Any = None) -> Scorer:
        """The rows of a contiguous range of classes per rank (``partition``, balanced by row
        count by default): :class:`~bigvocab.outputs.parallel.scorer.VocabParallelScorer`."""
        from bigvocab.outputs.parallel.scorer import VocabParallelScorer  # torch.distributed loads on a split

        return VocabParallelScorer.from_linear(self, group, partition)

    def rows(self, ids: Tensor) -> Tensor:
        return gather_rows(self.weight, ids, sparse=self.sparse_grad)

    def all_rows(self) -> Tensor:
        return self.weight

    def sparse_parameters(self) -> list[nn.Parameter]:
        return [p for p in (self.weight, self.bias) if p is not None]
