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
        shared: when the proposal ignores the context (an unconditional sampler, or no context
            given), draw each block once for the whole batch: every example still averages k
            draws from the Q its estimate divides by, so each example's estimator is unchanged,
            and a block costs one (N, H) x (H, k) product instead of N·k gathered rows. The
            examples' errors are then correlated (every example pushes down the same few rows),
            which with small k and a large step size can make training unstable, so draws are
            per example by default. Draws that depend on the context are always per example.
        scorer, bias, max_chunk_elements, device, dtype, **scorer_options: as for ``full``.

    Variants: ``per-example`` (the default) and ``shared`` draws.

    After each ``loss`` call, ``last_num_samples`` (most draws any example used) and
    ``last_ess`` (mean ESS) describe the step.
    """

    variants = {"per-example": {}, "shared": {"shared": True}}

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
        shared: bool = False,
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
            shared=shared,
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
        """One block of draws and their log Q: (k,) each when drawn once for the whole batch
        (``shared`` with an unconditional proposal), else (N, k) each, one set per example."""
        if context is not None and self.sampler.conditional:
            ids = self.sampler.sample(self.num_samples, context=context)
        elif self.shared:
            ids = self.sampler.sample(self.num_samples)
            return ids, self.sampler.log_q(ids)
        else:
            ids = self.sampler.sample(batch_size * self.num_samples).reshape(batch_size, self.num_samples)
        return ids, self.sampler.log_q(ids, context=context)

    def _loss(self, hidden: Tensor, target: Tensor, context: Optional[Tensor]) -> Tensor:
        batch_size = hidden.shape[0]
        samples: list[Tensor] = []
        log_qs: list[Tensor] = []
        wanted: list[Tensor] = []  # (N,) per block: the examples that still drew from it
        wanting = torch.ones(batch_size, dtype=torch.bool, device=hidden.device)
        # Running log Σ r and log Σ r² per example: the ESS after each block costs O(N), not a
        # pass over every weight drawn so far.
        log_sum = hidden.new_full((batch_size,), float("-inf"))
        log_sum_sq = hidden.new_full((batch_size,), float("-inf"))
        # The blocks are chosen without autograd; the step's gradient then comes from one scorer
        # call over every draw kept. Gathering with a gradient block by block would accumulate one
        # sparse gradient per block, and torch adds sparse gradients in time quadratic in their
        # number, while the (N, H) rows of every block would stay alive until the backward.
        with torch.no_grad():
            while True:
                ids, log_q = self._block(context, batch_size)
                # Examples whose ESS is already high enough ignore later blocks (weight 0).
                block = (self.class_logits(hidden, ids) - log_q).masked_fill(~wanting.unsqueeze(1), float("-inf"))
                samples.append(ids)
                log_qs.append(log_q)
                wanted.append(wanting)
                log_sum = torch.logaddexp(log_sum, torch.logsumexp(block, dim=1))
                log_sum_sq = torch.logaddexp(log_sum_sq, torch.logsumexp(2 * block, dim=1))
                ess = torch.exp(2 * log_sum - log_sum_sq)
                wanting = wanting & (ess < self.min_ess)
                if not wanting.any() or (len(samples) + 1) * self.num_samples > self.max_samples:
                    break
        all_samples = torch.cat(samples, dim=-1)
        all_kept = torch.stack(wanted, dim=1).repeat_interleave(self.num_samples, dim=1)
        target_logit, sample_logits = self.target_and_class_logits(hidden, target, all_samples)
        all_samples = all_samples.expand(batch_size, -1)
        all_log_weights = (sample_logits - torch.cat(log_qs, dim=-1)).masked_fill(~all_kept, float("-inf"))
        self.last_num_samples = len(samples) * self.num_samples
        self.last_ess = float(ess.mean()) if batch_size else math.nan
        self._observe(target, context=context, samples=all_samples, log_weights=all_log_weights.detach())
        log_z = torch.logsumexp(all_log_weights, dim=1) - torch.log(all_kept.sum(dim=1) * 1.0)
        return log_z - target_logit

    def extra_repr(self) -> str:
        return super().extra_repr() + f", min_ess={self.min_ess}, max_samples={self.max_samples}"
