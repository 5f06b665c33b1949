"""``bce`` -- one-vs-all logistic loss over a row's positives and sampled negatives, as extreme
multi-label classifiers train their heads (LightXML, Jiang et al. 2021; ELMO, Zhang et al. 2023).

Every label is a binary decision. Per row i, with positives j (one, or several: a multi-label
target) and the step's candidates c (sampler draws, the batch's other positives, or both, and
hard negatives per example; :mod:`bigvocab.outputs.candidates`):

    loss_i = Σ_j softplus(-s_ij) + Σ_c softplus(s_ic)

-- summed over the row's positives and its unmasked candidates, not averaged, so a row with more
positives weighs more (each is its own binary loss) and ``reduction="mean"`` averages rows. A
candidate equal to one of the row's positives is never a negative. There is no log-Q
correction: σ(s_y) is trained towards the chance that y is relevant, not a probability
normalised over the labels.

**Exact evaluation.** Like every layer, ``log_prob``, ``log_softmax`` and ``topk`` normalise the
same scores by a softmax over the whole vocabulary. BCE scores are not log-probabilities (as
``neg``'s are not): that softmax ranks the labels as the scores do, so P@k and recall read from
``topk`` are the classifier's, but its values are a normalisation of logits trained one-vs-all,
and its perplexity is not comparable to a softmax layer's.

The bias starts at -log(V - 1), so that σ(b) = 1/V: each label starts rare, as it is (the prior
initialisation of Lin et al. 2017, "Focal loss for dense object detection"). From a zero bias
every label starts at σ = 1/2 and the first steps spend themselves pushing down the negatives.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from torch import nn

from bigvocab.outputs.logistic import LogisticOutput
from bigvocab.outputs.sampling import SamplerSpec
from bigvocab.registry import OUTPUTS
from bigvocab.validation import check_flag


@OUTPUTS.register("bce")
class BinaryCrossEntropy(LogisticOutput):
    """One-vs-all logistic loss over sampled (or in-batch) negatives; exact evaluation over the
    same (V, H) weights.

    Args:
        num_samples: k negatives drawn per step (default min(1024, V - 1)); not with
            ``candidates="in_batch"``.
        sampler: the proposal of the negatives; default ``unigram`` when ``counts`` are given,
            else ``log_uniform``.
        counts: training frequencies of the classes.
        shared: one negative set for the whole batch (default) or one per example.
        unique: draw until k distinct negatives have appeared; needs ``shared``, and None (the
            default) means ``shared``.
        candidates: ``"sampler"`` (default), ``"in_batch"`` (the batch's distinct positives) or
            ``"mixed"`` (both).
        remove_accidental_hits: drop sampled negatives equal to one of the row's positives.
        temperature: τ; the scores are s(h/τ, y).
        scorer, bias, max_chunk_elements, device, dtype, **scorer_options: as for ``full``.

    ``loss(..., negatives=ids)`` adds hard negatives per example.
    """

    retrieval_variants = {"": {}}

    positives_averaged = False
    default_num_samples = 1024

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        num_samples: int | None = None,
        sampler: SamplerSpec = None,
        counts: Sequence[float] | None = None,
        shared: bool = True,
        unique: bool | None = None,
        candidates: str = "sampler",
        remove_accidental_hits: bool = True,
        temperature: float = 1.0,
        **scorer_options: Any,
    ) -> None:
        super().__init__(
            in_features,
            num_classes,
            candidates=candidates,
            num_samples=num_samples,
            default_num_samples=self.default_num_samples,
            sampler=sampler,
            default_sampler=("unigram", {}) if counts is not None else ("log_uniform", {}),
            counts=counts,
            shared=shared,
            unique=check_flag("shared", shared) if unique is None else unique,
            remove_accidental_hits=remove_accidental_hits,
            temperature=temperature,
            correction=False,
            frequency=None,
            **scorer_options,
        )

    def _reset_objective(self) -> None:
        if self.bias is not None:
            nn.init.constant_(self.bias, -math.log(self.num_classes - 1))
