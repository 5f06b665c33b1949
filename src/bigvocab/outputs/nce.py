"""``nce`` -- noise-contrastive estimation (Gutmann & Hyvärinen 2010; Mnih & Teh 2012).

Training becomes logistic regression between the data and k noise samples from Q. With the
model's unnormalised probability p(w) = exp(s_w - log Z) the posterior that w came from the data
is σ(Δ(w)), Δ(w) = s_w - log Z - log(k Q(w)), and the per-example loss is

    -log σ(Δ(target)) - Σ_j log σ(-Δ(y_j)),    y_j ~ Q, with replacement.

Its gradient, -(1 - σ(Δ_t)) ∇s_t + Σ_j σ(Δ_j) ∇s_j, tends as k grows to
-∇s_t + Σ_w exp(s_w - log Z) ∇s_w, the maximum-likelihood gradient when log Z is the true log
normaliser. Mnih & Teh fix Z = 1 (the network learns to self-normalise); ``normaliser="learned"``
makes log Z one trained scalar (Gutmann & Hyvärinen's c). Noise samples may equal the target:
NCE counts them as noise, so there is no accidental-hit removal.

Noise is drawn per example by default, k for each data word as in Mnih & Teh. One set shared by
the batch (``shared=True``, Jozefowicz et al.'s trick for sampled softmax) has the same expected
gradient, but all N examples then push down the same k words: their noise terms are correlated,
so the batch gradient's variance no longer falls like 1/N. Measured on the synthetic language
(V = 5,000, 200k tokens, NNLM, 2 epochs, exact test perplexity; ``docs/design/sampling-objective-defaults.md``):
with Adam, ``full`` 564, shared noise 924 at k = 25 and 727 at k = 100, per-example noise 589 and
582 (shared with a learned log Z: 747); with SGD (lr 0.5), ``full`` 900, shared 1152, per-example
963. On Brown (NNLM, Bengio et al.'s protocol) per-example noise took NCE from 237.4 to 188.1
against ``full``'s 199.2.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from bigvocab.errors import ConfigError
from bigvocab.outputs.sampling import SamplerSpec, SamplingOutput
from bigvocab.registry import OUTPUTS
from bigvocab.samplers.base import log_expected_count
from bigvocab.validation import check_finite_float

NORMALISERS = ("fixed", "learned")


@OUTPUTS.register("nce")
class NoiseContrastiveEstimation(SamplingOutput):
    """NCE with k noise samples per target; exact evaluation over the same (V, H) weights.

    Args:
        num_samples: k noise samples (default min(25, V - 1), Mnih & Teh's choice).
        sampler: the noise distribution; default ``unigram`` (needs ``counts``).
        counts: training frequencies of the classes.
        shared: one noise set for the whole batch, or k per example (default, Mnih & Teh).
        normaliser: ``"fixed"`` (log Z held at ``log_z``) or ``"learned"`` (a trained scalar).
        log_z: the fixed value, or the starting value of the learned one (default 0, i.e. Z = 1).
        scorer, bias, max_chunk_elements, device, dtype, **scorer_options: as for ``full``.

    The bias starts at ``-log V`` (Zoph et al. 2016, "Simple, Fast Noise-Contrastive Estimation
    for Large RNN Vocabularies"), so that the initial unnormalised probabilities sum to about
    Z = 1. From a zero bias every class starts at p = 1, a normaliser V times too large: the
    first steps then push the sampled (frequent) words far below the rest, and the exact
    distribution takes many steps to recover from it.
    """

    retrieval_variants = {"": {}}

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        num_samples: int | None = None,
        sampler: SamplerSpec = None,
        counts: Sequence[float] | None = None,
        shared: bool = False,
        normaliser: str = "fixed",
        log_z: float = 0.0,
        **scorer_options: Any,
    ) -> None:
        super().__init__(
            in_features,
            num_classes,
            num_samples=num_samples,
            default_num_samples=25,
            sampler=sampler,
            default_sampler=("unigram", {}),
            counts=counts,
            shared=shared,
            **scorer_options,
        )
        if normaliser not in NORMALISERS:
            raise ConfigError(f"normaliser must be one of {NORMALISERS}, got {normaliser!r}")
        log_z = check_finite_float("log_z", log_z)
        self.normaliser = normaliser
        if normaliser == "learned":
            self.log_z = nn.Parameter(torch.tensor(float(log_z), **self.factory_kwargs()))
        else:
            self.register_buffer("log_z", torch.tensor(float(log_z), **self.factory_kwargs()))

    def _reset_objective(self) -> None:
        if self.bias is not None:
            nn.init.constant_(self.bias, -math.log(self.num_classes))

    def _loss(self, hidden: Tensor, target: Tensor, context: Tensor | None) -> Tensor:
        noise, num_draws = self._draw(hidden.shape[0])
        log_kq_target = log_expected_count(self.sampler.log_q(target), num_draws, unique=False)
        log_kq_noise = log_expected_count(self.sampler.log_q(noise), num_draws, unique=False)
        # One scorer call for both: the target and noise rows are gathered together, so the weight
        # receives one sparse gradient a step instead of two that autograd must add.
        target_logit, noise_logit = self.target_and_class_logits(hidden, target, noise)
        delta_target = target_logit - self.log_z - log_kq_target
        delta_noise = noise_logit - self.log_z - log_kq_noise
        self._observe(target)
        # -log σ(x) = softplus(-x) and -log σ(-x) = softplus(x), both stable for large |x|.
        return F.softplus(-delta_target) + F.softplus(delta_noise).sum(dim=1)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", normaliser={self.normaliser!r}"
