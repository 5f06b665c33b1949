"""``infreq`` -- infrequent normalisation (Andreas & Klein 2015, "When and why are log-linear
models self-normalizing?").

Self-normalisation's penalty is needed only on a sample of the data: a random fraction γ of each
batch pays for log Z, the rest are trained on their unnormalised score alone:

    loss_n = -s_{t_n} + [n ∈ H] (α / γ) (log Z_n)²,   H a random subset of the batch.

Here H has m = max(1, round(γN)) examples drawn uniformly without replacement and the scale is
α N / m (α / γ when γN is whole), so every example is in H with probability m / N and the
expected penalty is exactly Devlin et al.'s α (log Z_n)². Only the m chosen rows cost O(V).

**α and γ.** Raising the score of the target by 1 per example is balanced by the penalty's
gradient 2α log Z when log Z = 1 / (2α), so log Z settles near 1 / (2α) (5 at α = 0.1), and there
the expected gradient equals the maximum-likelihood one up to how much log Z varies between
contexts. Measured on the synthetic language (V = 5,000, 200k tokens, NNLM, 2 epochs, exact test
perplexity; ``full`` 564; ``docs/design/sampling-objective-defaults.md``), with Adam: α = 0.1 gives 702 at
γ = 0.1, 610 at γ = 0.5, 582 at γ = 1; α = 0.5 and 1 give 940 and 970 at γ = 0.1 (log Z 1.0 and
0.5). With SGD (lr 0.5; ``full`` 900) γ = 0.1 and γ = 1 give the same 1011 and 1010: the
expected gradient does not depend on γ, so the cost of a small γ comes with Adam (most likely
the variance of the 1/γ-weighted penalty in its per-parameter step size). The defaults stay α = 0.1, γ = 0.1: the ten-fold saving that
Andreas & Klein report.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from bigvocab.outputs.functional import fill_padding
from bigvocab.outputs.selfnorm import SelfNormalised
from bigvocab.registry import OUTPUTS
from bigvocab.validation import check_probability


@OUTPUTS.register("infreq")
class InfrequentNormalisation(SelfNormalised):
    """Self-normalisation with the normaliser computed on a fraction γ of the examples.

    Args:
        alpha: penalty weight α.
        gamma: fraction of each batch whose log Z is computed, in (0, 1].
        scorer, bias, max_chunk_elements, device, dtype, **scorer_options: as for ``full``.
    """

    def __init__(
        self, in_features: int, num_classes: int, *, alpha: float = 0.1, gamma: float = 0.1, **scorer_options: Any
    ) -> None:
        super().__init__(in_features, num_classes, alpha=alpha, **scorer_options)
        self.gamma = check_probability("gamma", gamma, allow_zero=False)

    def _loss(self, hidden: Tensor, target: Tensor, context: Tensor | None) -> Tensor:
        return self._penalised(hidden, -self.target_logits(hidden, target), target)

    def _multi_label_loss(self, hidden: Tensor, target: Tensor, context: Tensor | None) -> Tensor:
        """-(1/T_i) Σ_j s_ij, and the penalty on a fraction γ of the rows (one log Z per row)."""
        filled = fill_padding(target)
        unnormalised = -self._mean_positive_score(self.class_logits(hidden, filled), target)
        return self._penalised(hidden, unnormalised, filled[:, 0])

    def _penalised(self, hidden: Tensor, loss: Tensor, target: Tensor) -> Tensor:
        """``loss`` (N,) plus (α N / m)(log Z)² on m = max(1, round(γN)) rows drawn uniformly
        without replacement (``target`` (N,): a class of each row, for the normaliser's call)."""
        batch_size = hidden.shape[0]
        if batch_size == 0:
            return loss
        chosen = max(1, round(self.gamma * batch_size))
        subset = torch.randperm(batch_size, device=hidden.device)[:chosen]
        log_z, _ = self.log_normaliser(hidden[subset], target[subset])
        return loss.index_add(0, subset, (self.alpha * batch_size / chosen) * log_z.square())

    def _train_scores(self, target: Tensor) -> tuple[float, float]:
        """Every example scores its target; m = max(1, round(γN)) of them pay the whole normaliser."""
        rows = target.numel()
        chosen = max(1, round(self.gamma * rows))
        return float(rows + chosen * self.num_classes), float(self.num_classes)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", gamma={self.gamma}"
