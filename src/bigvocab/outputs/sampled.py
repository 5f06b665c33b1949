"""``sampled`` -- importance sampling / sampled softmax (Bengio & Senécal 2003; Jean et al. 2015).

The softmax is computed over the target and k classes drawn from a proposal Q, each logit
corrected by the log of its expected count in the candidate set (the log-Q correction):

    loss = -log [ exp(s_t - log m_t) / (exp(s_t - log m_t) + Σ_j exp(s_j - log m_j)) ]

with m = k Q(y) for draws with replacement and m = 1 - (1 - Q(y))^T for T draws kept unique
(:func:`~bigvocab.samplers.base.log_expected_count`). Sampled copies of the target ("accidental
hits") are dropped. Samples are shared across the batch (Jozefowicz et al. 2016) or drawn per
example. The gradient is a self-normalised importance-sampling estimate of the exact one; it
reaches the exact gradient when the candidates cover the vocabulary.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import Tensor

from bigvocab.errors import ConfigError
from bigvocab.outputs.sampling import SamplerSpec, SamplingOutput, accidental_hits, sampled_softmax_loss
from bigvocab.registry import OUTPUTS
from bigvocab.samplers.base import log_expected_count
from bigvocab.validation import check_flag


@OUTPUTS.register("sampled")
class SampledSoftmax(SamplingOutput):
    """Sampled softmax with log-Q correction; exact evaluation over the same (V, H) weights.

    Args:
        num_samples: k negatives per step (default min(1024, V - 1)).
        sampler: the proposal; default ``unigram`` when ``counts`` are given (Bengio & Senécal
            2003), else ``log_uniform`` (Zipfian over frequency-sorted ids, TensorFlow's default).
        counts: training frequencies of the classes.
        shared: one sample set for the whole batch (default) or one per example.
        unique: draw until k distinct ids have appeared (TensorFlow-style); needs ``shared``, and
            None (the default) means ``shared``: per-example samples are drawn with replacement.
        remove_accidental_hits: drop sampled copies of each example's target.
        scorer, bias, max_chunk_elements, device, dtype, **scorer_options: as for ``full``.
    """

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
        **scorer_options: Any,
    ) -> None:
        super().__init__(
            in_features,
            num_classes,
            num_samples=num_samples,
            default_num_samples=self.default_num_samples,
            sampler=sampler,
            default_sampler=self._default_sampler(counts),
            counts=counts,
            shared=shared,
            **scorer_options,
        )
        self.unique = check_flag("unique", self.shared if unique is None else unique)
        self.remove_accidental_hits = check_flag("remove_accidental_hits", remove_accidental_hits)
        if self.unique and not self.shared:
            raise ConfigError("unique=True needs shared=True (per-example samples are drawn with replacement)")
        if self.unique and self.sampler.conditional:
            raise ConfigError(f"unique=True needs an unconditional sampler, not {type(self.sampler).__name__}")

    @staticmethod
    def _default_sampler(counts: Sequence[float] | None) -> tuple[str, dict]:
        return ("unigram", {}) if counts is not None else ("log_uniform", {})

    def _loss(self, hidden: Tensor, target: Tensor, context: Tensor | None) -> Tensor:
        sampled, num_draws = self._draw(hidden.shape[0], unique=self.unique)
        target_logit, sampled_logit = self.target_and_class_logits(hidden, target, sampled)
        loss = sampled_softmax_loss(
            target_logit,
            sampled_logit,
            log_expected_count(self.sampler.log_q(target), num_draws, unique=self.unique),
            log_expected_count(self.sampler.log_q(sampled), num_draws, unique=self.unique),
            accidental_hits(target, sampled) if self.remove_accidental_hits else None,
        )
        self._observe(target)
        return loss

    def extra_repr(self) -> str:
        return super().extra_repr() + f", unique={self.unique}, remove_accidental_hits={self.remove_accidental_hits}"
