"""``selfnorm`` -- self-normalisation (Devlin et al. 2014).

The full softmax loss plus a penalty that drives each example's log normaliser to zero:

    loss = log Z - s_t + α (log Z)²,

so that after training the unnormalised score s_t is itself close to log p(t | h) and decoding can
skip Z (:meth:`SelfNormalised.score`). Training still pays O(V) per example for log Z (computed in
memory-bounded chunks); evaluation (``log_prob`` and friends) stays exactly normalised.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor

from bigvocab.outputs.objective import ScoredOutput
from bigvocab.registry import OUTPUTS
from bigvocab.validation import check_positive_float


@OUTPUTS.register("selfnorm")
class SelfNormalised(ScoredOutput):
    """Softmax with an α·log²Z penalty and a fast unnormalised ``score``.

    Args:
        alpha: penalty weight (Devlin et al. use 0.1).
        scorer, bias, max_chunk_elements, device, dtype, **scorer_options: as for ``full``.
    """

    self_normalised = True

    def __init__(self, in_features: int, num_classes: int, *, alpha: float = 0.1, **scorer_options: Any) -> None:
        super().__init__(in_features, num_classes, **scorer_options)
        self.alpha = check_positive_float("alpha", alpha)

    def score(self, hidden: Tensor, target: Tensor) -> Tensor:
        """Unnormalised s_target, shape = target.shape: O(H) per example, for decoding only
        (an approximation of log p once training has made log Z ≈ 0; never for perplexity)."""
        flat_hidden, flat_target, lead = self._flatten(hidden, target)
        return self.target_logits(flat_hidden, flat_target).reshape(lead)

    def _loss(self, hidden: Tensor, target: Tensor, context: Tensor | None) -> Tensor:
        log_z, target_logit = self.log_normaliser(hidden, target)
        return log_z - target_logit + self.alpha * log_z.square()

    def _multi_label_loss(self, hidden: Tensor, target: Tensor, context: Tensor | None) -> Tensor:
        """The mixture over the row's positives, with one log Z (and one penalty) per row."""
        log_z, scores = self.multi_label_scores(hidden, target)
        return log_z - self._mean_positive_score(scores, target) + self.alpha * log_z.square()

    def extra_repr(self) -> str:
        return super().extra_repr() + f", alpha={self.alpha}"
