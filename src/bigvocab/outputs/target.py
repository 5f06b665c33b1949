"""``target`` -- target sampling (Jean et al. 2015, "On using very large target vocabulary").

Training data are split into partitions; each partition gets a target vocabulary V' of fixed
size τ holding every target of the partition, topped up with the most frequent words, and the
softmax is normalised over V' only. Jean et al. derive it as importance sampling with a proposal
uniform over V' (zero elsewhere): the log-Q corrections are then one constant and cancel, so

    loss = log Σ_{w ∈ V'} exp(s_w) - s_t.

**Partitions.** A layer sees one batch at a time and cannot look ahead, so here a partition is
the batch of one ``loss`` call (consecutive chunks of the training stream, as in the paper; a
larger batch is a larger partition). Its V' is the batch's distinct targets followed by the most
frequent classes not among them, up to τ = ``num_samples``; if the batch has more than τ distinct
targets, V' is exactly those targets (the paper instead cuts partitions where that happens). The
other examples' targets thus serve as each example's negatives, and the frequent words are
pushed down at every step. The cost is one (N, |V'|) block and sparse gradients on |V'| rows.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import torch
from torch import Tensor

from bigvocab.outputs.objective import ScoredOutput
from bigvocab.registry import OUTPUTS
from bigvocab.samplers.base import as_counts
from bigvocab.validation import check_num_samples


@OUTPUTS.register("target")
class TargetSampling(ScoredOutput):
    """Softmax over a per-partition target vocabulary of size τ; exact evaluation.

    Args:
        num_samples: τ, the size of each partition's vocabulary (default min(1024, V - 1)).
        counts: training frequencies, to choose the top-up words; without them ids are taken
            to be sorted by decreasing frequency (id 0 the most frequent).
        scorer, bias, max_chunk_elements, device, dtype, **scorer_options: as for ``full``.
    """

    sparse_grad = True

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        num_samples: Optional[int] = None,
        counts: Optional[Sequence[float]] = None,
        **scorer_options: Any,
    ) -> None:
        super().__init__(in_features, num_classes, **scorer_options)
        self.num_samples = check_num_samples(num_samples, num_classes, default=1024)
        if counts is None:
            frequent = torch.arange(self.num_samples)
        else:
            order = torch.argsort(as_counts(counts, num_classes, "target"), descending=True, stable=True)
            frequent = order[: self.num_samples]
        # Derived from the constructor arguments, so not part of the checkpoint.
        self.register_buffer("frequent", frequent.to(self.factory_kwargs()["device"]), persistent=False)

    def partition_vocabulary(self, target: Tensor) -> tuple[Tensor, Tensor]:
        """V' for a partition with targets (N,): the ids (M,), M = max(τ, distinct targets), and
        the position of each target in it (N,)."""
        distinct, position = torch.unique(target, return_inverse=True)
        missing = self.num_samples - distinct.numel()
        if missing <= 0:
            return distinct, position
        # At most len(distinct) of the τ most frequent are targets, so τ of them always suffice.
        top_up = self.frequent[~torch.isin(self.frequent, distinct)][:missing]
        return torch.cat([distinct, top_up]), position

    def _loss(self, hidden: Tensor, target: Tensor, context: Optional[Tensor]) -> Tensor:
        vocabulary, position = self.partition_vocabulary(target)
        logits = self.class_logits(hidden, vocabulary)
        return torch.logsumexp(logits, dim=1) - logits.gather(1, position.unsqueeze(1)).squeeze(1)

    def _train_scores(self, target: Tensor) -> tuple[float, float]:
        """Every example is scored against the partition's vocabulary V', max(τ, distinct targets)."""
        size = max(self.num_samples, int(torch.unique(target).numel()))
        return float(target.numel() * size), float(size)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", num_samples={self.num_samples}"
