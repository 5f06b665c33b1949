"""``ais`` -- adaptive importance sampling (Bengio & Senécal 2008).

The gradient of log p(t | h) is ∇s_t - E_P[∇s]. The expectation is estimated by *biased*
(self-normalised) importance sampling with samples y_j ~ Q(. | c) from an adaptive n-gram proposal
that tracks the network (the ``bigram`` sampler, c the previous token):

    r_j = exp(s_{y_j}) / Q(y_j | c),     E_P[∇s] ≈ Σ_j r_j ∇s_{y_j} / Σ_j r_j,

which is the gradient of the per-example loss log[(1/K) Σ_j r_j] - s_t (the first term estimates
log Z, so the loss value estimates the cross-entropy). As in the paper the quality of the sample is
watched through its effective sample size ESS = (Σ_j r_j)² / Σ_j r_j²: while an example's ESS is
below ``min_ess`` another block of ``num_samples`` draws is taken for it, up to ``max_samples``.
After the step the proposal learns from it: bigram counts from (previous token, target) and the
mixture weights from the samples and their importance weights (see
:class:`~bigvocab.samplers.bigram.BigramSampler`).

**Context.** Language models pass the token before each target as ``loss(..., context=...)``; the
base class validates it and passes it to ``_loss`` as an argument. Without it the
proposal is the mixture's unigram part alone, which is still a valid (if less efficient) importance
sampler: the estimator only needs Q to be the distribution the samples came from.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import torch
from torch import Tensor

from bigvocab.errors import ConfigError
from bigvocab.outputs.sampling import SamplerSpec, SamplingOutput
from bigvocab.registry import OUTPUTS
from bigvocab.validation import check_positive_float, check_positive_int


def effective_sample_size(log_weights: Tensor) -> Tensor:
    """(Σ r)² / Σ r² per row of log importance weights (N, K) -> (N,); -inf weights count as 0."""
    return torch.exp(2 * torch.logsumexp(log_weights, dim=1) - torch.logsumexp(2 * log_weights, dim=1))


@OUTPUTS.register("ais")
class AdaptiveImportanceSampling(SamplingOutput):
    """Adaptive importance sampling with an adaptive bigram proposal; exact evaluation.

    Args:
        num_samples: draws per block and per example (default min(64, V - 1)).
        sampler: the proposal; default ``bigram`` (unigram part from ``counts`` when given,
            learned otherwise). Any sampler works; unconditional ones ignore the context.
        counts: training frequencies of the classes.
        min_ess: draw more blocks for an example while its ESS is below this (default
            ``num_samples / 4``).
        max_samples: at most this many draws per example and step (default 16 blocks).
        scorer, bias, max_chunk_elements, device, dtype, **scorer_options: as for ``full``.

    After each ``loss`` call, ``last_num_samples`` (most draws any example used) and
    ``last_ess`` (mean ESS) describe the step.
    """

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        num_samples: Optional[int] = None,
        sampler: SamplerSpec = None,
        counts: Optional[Sequence[float]] = None,
        min_ess: Optional[float] = None,
        max_samples: Optional[int] = None,
        **scorer_options: Any,
    ) -> None:
        super().__init__(
            in_features,
            num_classes,
            num_samples=num_samples,
            default_num_samples=64,
            sampler=sampler,
            default_sampler=("bigram", {}),
            counts=counts,
            shared=False,
            **scorer_options,
        )
        self.min_ess = check_positive_float("min_ess", self.num_samples / 4 if min_ess is None else min_ess)
        self.max_samples = check_positive_int(
            "max_samples", 16 * self.num_samples if max_samples is None else max_samples
        )
        if self.max_samples < self.num_samples:
            raise ConfigError(f"max_samples={self.max_samples} is smaller than num_samples={self.num_samples}")
        self.last_num_samples = 0
        self.last_ess = math.nan

    def _block(self, context: Optional[Tensor], batch_size: int) -> tuple[Tensor, Tensor]:
        """(N, k) draws and their log Q."""
        if context is not None and self.sampler.conditional:
            ids = self.sampler.sample(self.num_samples, context=context)
        else:
            ids = self.sampler.sample(batch_size * self.num_samples).reshape(batch_size, self.num_samples)
        return ids, self.sampler.log_q(ids, context=context)

    def _loss(self, hidden: Tensor, target: Tensor, context: Optional[Tensor]) -> Tensor:
        batch_size = hidden.shape[0]
        samples: list[Tensor] = []
        log_weights: list[Tensor] = []
        wanting = torch.ones(batch_size, dtype=torch.bool, device=hidden.device)
        blocks = torch.zeros(batch_size, device=hidden.device)
        while True:
            ids, log_q = self._block(context, batch_size)
            # Examples whose ESS is already high enough ignore later blocks (weight 0).
            block = (self.class_logits(hidden, ids) - log_q).masked_fill(~wanting.unsqueeze(1), float("-inf"))
            samples.append(ids)
            log_weights.append(block)
            blocks += wanting
            with torch.no_grad():
                ess = effective_sample_size(torch.cat(log_weights, dim=1))
                wanting &= ess < self.min_ess
            if not wanting.any() or (len(samples) + 1) * self.num_samples > self.max_samples:
                break
        all_log_weights = torch.cat(log_weights, dim=1)
        self.last_num_samples = len(samples) * self.num_samples
        self.last_ess = float(ess.mean()) if batch_size else math.nan
        self._observe(target, context=context, samples=torch.cat(samples, dim=1), log_weights=all_log_weights.detach())
        log_z = torch.logsumexp(all_log_weights, dim=1) - torch.log(blocks * self.num_samples)
        return log_z - self.target_logits(hidden, target)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", min_ess={self.min_ess}, max_samples={self.max_samples}"
