"""One-vs-all logistic objectives over a row's positives and its candidates (``neg``, ``bce``).

Each positive is a binary decision "relevant" and each candidate one "not relevant":

    loss_i = w_i Σ_j softplus(-s_ij) + Σ_c softplus(s_ic),

over the row's valid positives j and its unmasked candidates c (-log σ(s) = softplus(-s) and
-log σ(-s) = softplus(s), both stable for large |s|). There is no log-Q correction: the scores do
not estimate log-probabilities, and exact evaluation (``log_prob``, ``topk``) normalises them by
a softmax over the whole vocabulary like every other layer's. ``w_i`` is 1/T_i for ``neg``
(one target's loss per positive on average, as word2vec's pairs) and 1 for ``bce`` (every
positive its own binary loss, as XMC heads train).
"""

from __future__ import annotations

from typing import ClassVar

import torch.nn.functional as F
from torch import Tensor

from bigvocab.outputs.candidates import CandidateOutput, CandidateScores


class LogisticOutput(CandidateOutput):
    """The logistic loss above over :class:`CandidateOutput`'s candidates; a subclass says how
    its positives weigh (:attr:`positives_averaged`)."""

    #: w_i = 1/T_i (True) or 1 (False).
    positives_averaged: ClassVar[bool] = True

    def _objective(self, scores: CandidateScores) -> Tensor:
        positive_loss = F.softplus(-scores.positive_logit)
        valid = scores.positive_valid
        if valid is not None:
            positive_loss = positive_loss.masked_fill(~valid, 0.0)
        positive_term = positive_loss.sum(dim=1)
        if self.positives_averaged and positive_loss.shape[1] > 1:
            count = positive_loss.shape[1] if valid is None else valid.sum(dim=1).to(positive_term.dtype)
            positive_term = positive_term / count
        negative_loss = F.softplus(scores.candidate_logit)
        if scores.mask is not None:
            negative_loss = negative_loss.masked_fill(scores.mask, 0.0)
        return positive_term + negative_loss.sum(dim=1)
