"""Peers from PyTorch itself, wrapped as output layers so that they sit in the same table.

* ``torch-adaptive`` -- :class:`torch.nn.AdaptiveLogSoftmaxWithLoss` (PyTorch's implementation of
  Grave et al. 2017), with the cutoffs bigvocab's ``adaptive`` chooses by default (the words
  holding 80 % and 95 % of the training tokens), so the two rows are the same model built twice.
* ``torch-linear`` -- ``nn.Linear`` + ``F.cross_entropy``: the textbook full softmax, which
  materialises the (N, V) logits and their gradient, and is what most code does.

They are not output layers of bigvocab (``list_outputs`` does not show them); they are
registered in :data:`PEERS`, from which the bench builds them like any layer.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from bigvocab.outputs.bands import resolve_cutoffs
from bigvocab.outputs.base import OutputLayer
from bigvocab.outputs.cost import Cost, cluster_cost, dot_cost, hidden_cost
from bigvocab.registry import PEERS


@PEERS.register("torch-adaptive")
class TorchAdaptivePeer(OutputLayer):
    """:class:`torch.nn.AdaptiveLogSoftmaxWithLoss` behind the :class:`OutputLayer` interface.

    Shapes: hidden (N, H), target (N,); ``log_softmax`` (N, V) via ``log_prob``; top-k from it.
    """

    def __init__(
        self, in_features: int, num_classes: int, *, counts: Sequence[int] | None = None, div_value: float = 4.0
    ) -> None:
        super().__init__(in_features, num_classes)
        self.cutoffs = resolve_cutoffs(None, num_classes, counts, owner="torch-adaptive")
        self.inner = nn.AdaptiveLogSoftmaxWithLoss(in_features, num_classes, self.cutoffs, div_value=div_value)

    def _loss(self, hidden: Tensor, target: Tensor, context: Tensor | None) -> Tensor:
        # The module returns only the mean loss and per-example target log-probs; the latter
        # carry the same graph, so the per-example NLL is their negation.
        return -self.inner(hidden, target).output

    def _log_softmax(self, hidden: Tensor) -> Tensor:
        return self.inner.log_prob(hidden)

    def train_cost(self, target: Tensor) -> Cost:
        return cluster_cost(self.inner.head, self.inner.cutoffs, self.inner.tail, target, training=True)

    def log_prob_cost(self, target: Tensor) -> Cost:
        return cluster_cost(self.inner.head, self.inner.cutoffs, self.inner.tail, target, training=False)


@PEERS.register("torch-linear")
class LinearCrossEntropyPeer(OutputLayer):
    """``nn.Linear(H, V)`` + ``F.cross_entropy``: dense (N, V) logits and dense gradients."""

    dense_logits = True

    def __init__(self, in_features: int, num_classes: int) -> None:
        super().__init__(in_features, num_classes)
        self.linear = nn.Linear(in_features, num_classes)

    def _loss(self, hidden: Tensor, target: Tensor, context: Tensor | None) -> Tensor:
        return F.cross_entropy(self.linear(hidden), target, reduction="none")

    def _log_softmax(self, hidden: Tensor) -> Tensor:
        return torch.log_softmax(self.linear(hidden), dim=1)

    def train_cost(self, target: Tensor) -> Cost:
        return self._dense_cost(target, training=True)

    def log_prob_cost(self, target: Tensor) -> Cost:
        return self._dense_cost(target, training=False)

    def _dense_cost(self, target: Tensor, *, training: bool) -> Cost:
        """Every row scored against all V output vectors."""
        rows, size = target.numel(), self.element_size()
        weights = self.num_classes * (self.in_features + 1)
        return dot_cost(rows * self.num_classes, self.in_features, weights, element_size=size, training=training) + (
            hidden_cost(rows, self.in_features, element_size=size, training=training)
        )
