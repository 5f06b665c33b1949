"""``ais`` -- adaptive importance sampling (Bengio & Senécal 2008).

The gradient of log p(t | h) is ∇s_t - E_P[∇s]. The expectation is estimated by *biased*
(self-normalised) importance sampling with samples y_j ~ Q(. | c) from an adaptive n-gram proposal
that tracks the network (the ``bigram`` sampler, c the previous token):

    r_j = exp(s_{y_j}) / Q(y_j | c),     E_P[∇s] ≈ Σ_j r_j ∇s_{y_j} / Σ_j r_j,

which is the gradient of the per-example loss log[(1/K) Σ_j r_j] - s_t (the first term estimates
log Z, so the loss value estimates the cross-entropy). As in the paper the quality of the sample is
watched through its effective sample size ESS = (Σ_j r_j)² / Σ_j r_j²: while an example's ESS is
below ``min_ess`` another block of ``num_samples`` draws is taken for it, up to ``max_samples``.
A later block is drawn for, and scored on, those examples only, so a step scores Σ_n K_n draws
(K_n those example n needed), not N times the most any example needed: under a poor proposal a few
examples need 16 blocks while most stop after one or two.
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
from collections.abc import Sequence
from typing import Any

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

    After each ``loss`` call, ``last_num_samples`` (most draws any example used), ``last_ess``
    (mean ESS), ``last_examples_per_block`` (how many examples drew each block) and
    ``last_draws_shared`` (whether each block was drawn once for the batch) describe the step; the
    cost model (:meth:`train_cost`) counts the blocks they record.
    """

    variants = {"per-example": {}, "shared": {"shared": True}}

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        num_samples: int | None = None,
        sampler: SamplerSpec = None,
        counts: Sequence[float] | None = None,
        min_ess: float | None = None,
        max_samples: int | None = None,
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
        self.last_examples_per_block: list[int] = []
        self.last_draws_shared = False

    def _block(self, context: Tensor | None, batch_size: int) -> tuple[Tensor, Tensor]:
        """One block of draws and their log Q for ``batch_size`` examples (their ``context``):
        (batch_size, k) each, one set per example, or (k,) each when drawn once for the batch
        (``shared`` with an unconditional proposal)."""
        if context is not None and self.sampler.conditional:
            ids = self.sampler.sample(self.num_samples, context=context)
        elif self.shared:
            ids = self.sampler.sample(self.num_samples)
            return ids, self.sampler.log_q(ids)
        else:
            ids = self.sampler.sample(batch_size * self.num_samples).reshape(batch_size, self.num_samples)
        return ids, self.sampler.log_q(ids, context=context)

    def _loss(self, hidden: Tensor, target: Tensor, context: Tensor | None) -> Tensor:
        batch_size = hidden.shape[0]
        # Block b is drawn for, and scored on, the examples whose ESS was still below min_ess
        # after block b - 1 only (``owners[b]``): the work follows the draws the examples need,
        # not the batch size times the most any one example needed.
        owners: list[Tensor] = []
        samples: list[Tensor] = []
        log_qs: list[Tensor] = []
        wanting = torch.arange(batch_size, device=hidden.device)
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
                ids, log_q = self._block(None if context is None else context[wanting], wanting.numel())
                block = self.class_logits(hidden[wanting], ids) - log_q
                owners.append(wanting)
                samples.append(ids)
                log_qs.append(log_q)
                log_sum[wanting] = torch.logaddexp(log_sum[wanting], torch.logsumexp(block, dim=1))
                log_sum_sq[wanting] = torch.logaddexp(log_sum_sq[wanting], torch.logsumexp(2 * block, dim=1))
                ess = torch.exp(2 * log_sum - log_sum_sq)
                wanting = wanting[ess[wanting] < self.min_ess]
                if not wanting.numel() or (len(samples) + 1) * self.num_samples > self.max_samples:
                    break
        # Every (example, block) pair is one row of the (R, k) log weights; the first N rows are
        # block 0, one per example, in order.
        owner = torch.cat(owners)
        if samples[0].dim() == 1:
            # Shared blocks: one product over every block's draws, then each row's block of it.
            target_logits, scores = self.target_and_class_logits(hidden, target, torch.cat(samples))
            block_of_row = torch.cat([torch.full_like(rows, index) for index, rows in enumerate(owners)])
            scores = scores.view(batch_size, len(samples), self.num_samples)[owner, block_of_row]
            log_weights = scores - torch.stack(log_qs)[block_of_row]
        else:
            rows_hidden = torch.cat([hidden, hidden.index_select(0, owner[batch_size:])])
            target_logits, scores = self.target_and_class_logits(rows_hidden, target[owner], torch.cat(samples))
            target_logits = target_logits[:batch_size]
            log_weights = scores - torch.cat(log_qs)
        self.last_num_samples = len(samples) * self.num_samples
        self.last_ess = float(ess.mean()) if batch_size else math.nan
        self.last_examples_per_block = [rows.numel() for rows in owners]
        self.last_draws_shared = samples[0].dim() == 1
        learned_from: dict[str, Tensor] = {}
        if self.training and context is not None and self.sampler.conditional:
            # Only a context-conditional proposal adapts its mixture from the draws and their
            # weights (per example, block by block); any other learns from the targets alone.
            per_block = log_weights.detach().split(self.last_examples_per_block)
            learned_from = {
                "samples": self._per_example(owners, samples, 0),
                "log_weights": self._per_example(owners, per_block, float("-inf")),
            }
        self._observe(target, context=context, **learned_from)
        row_log_sum = torch.logsumexp(log_weights, dim=1)
        peak = row_log_sum.new_full((batch_size,), float("-inf"))
        peak = peak.scatter_reduce(0, owner, row_log_sum.detach(), "amax")
        total = torch.zeros_like(peak).index_add(0, owner, torch.exp(row_log_sum - peak[owner]))
        draws = torch.bincount(owner, minlength=batch_size) * float(self.num_samples)
        log_z = peak + torch.log(total) - torch.log(draws)
        return log_z - target_logits

    def _train_scores(self, target: Tensor) -> tuple[float, float]:
        """The scores and rows of the blocks that the last ``loss`` call on as many examples drew:
        how many blocks an example needs is decided by the ESS rule from the model and the proposal
        as they stand, so it is known from a step, not from the layer's shape. Each example's
        target and the k draws of each block it drew, forward and backward; the rows are the
        distinct ids among the targets and every draw (a shared block's k once). Neither the
        selection pass, which scores a block before the next is drawn, nor the scores of a shared
        block for examples that did not draw it are counted: they are this implementation's.
        Before any such call, one block: a lower bound."""
        blocks = self.last_examples_per_block
        rows = target.numel()
        if not blocks or blocks[0] != rows:
            return super()._train_scores(target)
        scored = sum(blocks) * self.num_samples
        draws = len(blocks) * self.num_samples if self.last_draws_shared else scored
        return float(rows + scored), self._rows_touched(target, draws)

    def _per_example(self, owners: list[Tensor], blocks: Sequence[Tensor], fill: float) -> Tensor:
        """(N, blocks·k): each example's draws (or weights) block by block, ``fill`` where an
        example had stopped drawing -- the per-example layout the adaptive proposal learns from."""
        out = blocks[0].new_full((owners[0].numel(), len(owners), self.num_samples), fill)
        for index, (rows, values) in enumerate(zip(owners, blocks)):
            out[rows, index] = values
        return out.reshape(owners[0].numel(), -1)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", min_ess={self.min_ess}, max_samples={self.max_samples}"
