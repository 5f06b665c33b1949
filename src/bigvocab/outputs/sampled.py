"""``sampled`` -- importance sampling / sampled softmax (Bengio & Senécal 2003; Jean et al. 2015),
with in-batch and mixed candidates (Yi et al. 2019; Yang et al. 2020) and hard negatives.

The softmax is computed over the target and the step's candidates, each logit corrected by the
log of its expected count among the candidates (the log-Q correction):

    loss = -log [ exp(s_t - log m_t) / (exp(s_t - log m_t) + Σ_j exp(s_j - log m_j)) ]

with m = k Q(y) for draws with replacement and m = 1 - (1 - Q(y))^T for T draws kept unique
(:func:`~bigvocab.samplers.base.log_expected_count`), the inclusion probability for in-batch
candidates, their sum for mixed ones (:mod:`bigvocab.outputs.candidates`). Candidates equal to the
target ("accidental hits") are dropped. Draws are shared across the batch (Jozefowicz et al. 2016)
or made per example. The gradient is a self-normalised importance-sampling estimate of the exact
one; it reaches the exact gradient when the candidates cover the vocabulary.

With several positives per row (a multi-label target, TensorFlow's ``num_true``) the true logits
are the row's positives, each with its own correction, the softmax's target puts 1/T on each,
and candidates equal to any of them are dropped: as the candidates cover the vocabulary the loss
becomes ``full``'s mixture loss.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import Tensor

from bigvocab.outputs.candidates import CandidateOutput, CandidateScores, FrequencySpec, positive_weights
from bigvocab.outputs.sampling import SamplerSpec, sampled_softmax_loss
from bigvocab.registry import OUTPUTS
from bigvocab.validation import check_flag


@OUTPUTS.register("sampled")
class SampledSoftmax(CandidateOutput):
    """Sampled softmax with log-Q correction; exact evaluation over the same (V, H) weights.

    Args:
        num_samples: k draws from the sampler per step (default min(1024, V - 1)); not with
            ``candidates="in_batch"``.
        sampler: the proposal; default ``unigram`` when ``counts`` are given (Bengio & Senécal
            2003), else ``log_uniform`` (Zipfian over frequency-sorted ids, TensorFlow's default).
        counts: training frequencies of the classes.
        shared: one sample set for the whole batch (default) or one per example.
        unique: draw until k distinct ids have appeared (TensorFlow-style); needs ``shared``, and
            None (the default) means ``shared``: per-example samples are drawn with replacement.
        remove_accidental_hits: drop sampled copies of each example's targets.
        candidates: ``"sampler"`` (default), ``"in_batch"`` (the batch's distinct targets) or
            ``"mixed"`` (both) -- :mod:`bigvocab.outputs.candidates`.
        frequency: the in-batch candidates' inclusion probabilities: ``"counts"``, ``"streaming"``
            (Yi et al. 2019's estimator, saved with the layer) or a
            :class:`~bigvocab.samplers.streaming.StreamingFrequency`; None: counts if given.
        correction: subtract log m from each logit (default); False trains without the log-Q
            correction, which biases the model against frequent classes.
        temperature: τ; the scores are s(h/τ, y), the correction subtracted after.
        scorer, bias, max_chunk_elements, device, dtype, **scorer_options: as for ``full``.

    ``loss(..., negatives=ids)`` adds hard negatives per example (certain candidates, log m = 0).
    """

    #: With and without the log-Q correction, over sampled, in-batch (Yi et al. 2019's streaming
    #: frequency) and mixed candidates (Yang et al. 2020).
    retrieval_variants = {
        "logQ": {},
        "no-logQ": {"correction": False},
        "in_batch": {"candidates": "in_batch", "frequency": "streaming"},
        "in_batch-no-logQ": {"candidates": "in_batch", "correction": False},
        "mixed": {"candidates": "mixed", "frequency": "streaming"},
    }

    #: k when ``num_samples`` is None (at most V - 1).
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
        remove_accidental_hits: bool = True,
        candidates: str = "sampler",
        frequency: FrequencySpec = None,
        correction: bool = True,
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
            default_sampler=self._default_sampler(counts),
            counts=counts,
            shared=shared,
            unique=check_flag("shared", shared) if unique is None else unique,
            remove_accidental_hits=remove_accidental_hits,
            temperature=temperature,
            correction=correction,
            frequency=frequency,
            **scorer_options,
        )

    @staticmethod
    def _default_sampler(counts: Sequence[float] | None) -> tuple[str, dict]:
        return ("unigram", {}) if counts is not None else ("log_uniform", {})

    def _objective(self, scores: CandidateScores) -> Tensor:
        weight = (
            None if scores.positive_valid is None else positive_weights(scores.positives, scores.positive_logit.dtype)
        )
        return sampled_softmax_loss(
            scores.positive_logit,
            scores.candidate_logit,
            scores.positive_log_count,
            scores.candidate_log_count,
            scores.mask,
            weight,
        )

    def extra_repr(self) -> str:
        return super().extra_repr() + f", correction={self.logq_correction}"
