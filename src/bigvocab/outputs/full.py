"""``full`` -- the exact softmax, memory-bounded.

The loss is ``log Z - s_target`` with log Z accumulated over blocks of the logits and a
hand-written backward (see :func:`bigvocab.outputs.functional.chunked_logsumexp`), so a training
step at V = 1M never holds more than the weights, their gradient and one block of logits: a
vocabulary chunk within ``max_chunk_elements``, or, when no budget is given, blocks of whole rows
no larger than the weight matrix (at most 2**28 logits), which need three products a step
instead of four.
"""

from __future__ import annotations

from torch import Tensor

from bigvocab.outputs.objective import ScoredOutput
from bigvocab.registry import OUTPUTS


@OUTPUTS.register("full")
class FullSoftmax(ScoredOutput):
    """The exact softmax p(w|h) = exp(s_w) / Σ_v exp(s_v) over any scorer (linear rows by default).

    With the linear scorer s_w = h·W_w + b_w.

    Cost per example is O(V·H) in time and O(chunk) in extra memory.

    Args: those of :class:`~bigvocab.outputs.objective.ScoredOutput` (``scorer``, ``bias``,
    ``max_chunk_elements``, ``device``, ``dtype`` and the scorer's options).
    """

    retrieval_variants = {"": {}}

    reference = True

    def _loss(self, hidden: Tensor, target: Tensor, context: Tensor | None) -> Tensor:
        # The loss is reduced by a mean or sum (``OutputLayer.loss``): every row weighs alike.
        log_z, target_logit = self.log_normaliser(hidden, target, equal_row_weights=True)
        return log_z - target_logit

    def _multi_label_loss(self, hidden: Tensor, target: Tensor, context: Tensor | None) -> Tensor:
        """log Z - (1/T_i) Σ_j s_ij: the uniform mixture with one pass over V per row."""
        log_z, scores = self.multi_label_scores(hidden, target, equal_row_weights=True)
        return log_z - self._mean_positive_score(scores, target)
