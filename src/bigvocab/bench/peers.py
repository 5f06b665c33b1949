"""Peers from PyTorch itself, wrapped as output layers so that they sit in the same table.

* ``torch-adaptive`` -- :class:`torch.nn.AdaptiveLogSoftmaxWithLoss` (PyTorch's implementation of
  Grave et al. 2017), with the cutoffs bigvocab's ``adaptive`` chooses by default (the words
  holding 80 % and 95 % of the training tokens), so the two rows are the same model built twice.
* ``torch-linear`` -- ``nn.Linear`` + ``F.cross_entropy``: the textbook full softmax, which
  materialises the (N, V) logits and their gradient, and is what most code does.

They are not registered (they are not bigvocab's methods); the bench builds them through
:data:`PEERS`.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from bigvocab.outputs.base import OutputLayer
from bigvocab.outputs.dsoftmax import resolve_cutoffs


class TorchAdaptivePeer(OutputLayer):
    """:class:`torch.nn.AdaptiveLogSoftmaxWithLoss` behind the :class:`OutputLayer` interface.

    Shapes: hidden (N, H), target (N,); ``log_softmax`` (N, V) via ``log_prob``; top-k from it.
    """

    def __init__(
        self, in_features: int, num_classes: int, *, counts: Optional[Sequence[int]] = None, div_value: float = 4.0
    ) -> None:
        super().__init__(in_features, num_classes)
        self.cutoffs = resolve_cutoffs(None, num_classes, counts, owner="torch-adaptive")
        self.inner = nn.AdaptiveLogSoftmaxWithLoss(in_features, num_classes, self.cutoffs, div_value=div_value)

    def _loss(self, hidden: Tensor, target: Tensor, context: Optional[Tensor]) -> Tensor:
        # The module returns only the mean loss and per-example target log-probs; the latter
        # carry the same graph, so the per-example NLL is their negation.
        return -self.inner(hidden, target).output

    def _log_softmax(self, hidden: Tensor) -> Tensor:
        return self.inner.log_prob(hidden)


class LinearCrossEntropyPeer(OutputLayer):
    """``nn.Linear(H, V)`` + ``F.cross_entropy``: dense (N, V) logits and dense gradients."""

    def __init__(self, in_features: int, num_classes: int) -> None:
        super().__init__(in_features, num_classes)
        self.linear = nn.Linear(in_features, num_classes)

    def _loss(self, hidden: Tensor, target: Tensor, context: Optional[Tensor]) -> Tensor:
        return F.cross_entropy(self.linear(hidden), target, reduction="none")

    def _log_softmax(self, hidden: Tensor) -> Tensor:
        return torch.log_softmax(self.linear(hidden), dim=1)


def _adaptive(in_features: int, num_classes: int, counts: Optional[Sequence[int]]) -> OutputLayer:
    return TorchAdaptivePeer(in_features, num_classes, counts=counts)


def _linear(in_features: int, num_classes: int, counts: Optional[Sequence[int]]) -> OutputLayer:
    return LinearCrossEntropyPeer(in_features, num_classes)


#: name -> factory(in_features, num_classes, counts)
PEERS: dict[str, Callable[[int, int, Optional[Sequence[int]]], OutputLayer]] = {
    "torch-adaptive": _adaptive,
    "torch-linear": _linear,
}
