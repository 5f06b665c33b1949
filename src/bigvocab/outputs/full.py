"""``full`` -- the exact softmax, memory-bounded.

The loss is ``log Z - s_target`` with log Z accumulated over vocabulary chunks and a hand-written
backward (see :func:`bigvocab.outputs.functional.chunked_logsumexp`), so a training step at
V = 1M never holds more than the weights, their gradient and one (N, chunk) block of logits.
"""
from __future__ import annotations

from typing import Optional

from torch import Tensor

from bigvocab.outputs.linear import LinearOutput
from bigvocab.registry import OUTPUTS


@OUTPUTS.register("full")
class FullSoftmax(LinearOutput):
    """The exact softmax ``p(w|h) = exp(h·W_w + b_w) / Σ_v exp(h·W_v + b_v)``.

    Cost per example is O(V·H) in time and O(chunk) in extra memory.

    Args:
        bias: learn a per-class bias.
        max_chunk_elements: logits held at once (default 2**24).
    """

    def __init__(
        self, in_features: int, num_classes: int, *, bias: bool = True, max_chunk_elements: Optional[int] = None
    ) -> None:
        super().__init__(in_features, num_classes, bias=bias, max_chunk_elements=max_chunk_elements)

    def _loss(self, hidden: Tensor, target: Tensor) -> Tensor:
        log_z, target_logit = self.log_normaliser(hidden, target)
        return log_z - target_logit
