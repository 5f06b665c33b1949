"""What the sampling-based layers share: small pure functions and a base class.

Pure functions (tested on their own, composed by ``sampled``, ``nce``, ``neg``, ``bce`` and ``ais``):

* :func:`accidental_hits` -- sampled classes that equal the example's own target (or one of them);
* :func:`sampled_softmax_loss` -- the softmax loss over the targets and their candidates, each
  logit with the log-Q correction, accidental hits dropped, in one pass with a hand-written backward;
* :func:`resolve_sampler`, :func:`draw_candidates` -- a sampler from its spec, and a step's draws.

:class:`SamplingOutput` holds the sampler (a registered name or a :class:`Sampler`), the number
of samples and the shared/per-example choice, and draws the candidates: the base of ``nce`` and
``ais``. (``sampled``, ``neg`` and ``bce`` take their candidates from the batch too:
:class:`~bigvocab.outputs.candidates.CandidateOutput`.) It is a
:class:`~bigvocab.outputs.objective.ScoredOutput`, so it trains any scorer and evaluates exactly;
only the rows a step samples receive (sparse) gradients.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from bigvocab.errors import ConfigError
from bigvocab.outputs.objective import ScoredOutput
from bigvocab.samplers.base import Sampler, inclusion_probabilities
from bigvocab.samplers.factory import create_sampler
from bigvocab.validation import check_flag, check_num_samples

SamplerSpec = str | Sampler | None


def accidental_hits(target: Tensor, sampled: Tensor) -> Tensor:
    """Bool (N, k): sampled id equals the row's target -- one (N,) or any of several (N, T), where
    -1 padding matches nothing. ``sampled`` is (k,) shared or (N, k)."""
    candidates = sampled.unsqueeze(0) if sampled.dim() == 1 else sampled
    if target.dim() == 1:
        return target.unsqueeze(1) == candidates
    hits = target[:, :1] == candidates
    for column in range(1, target.shape[1]):
        hits |= target[:, column : column + 1] == candidates
    return hits


class _SampledSoftmaxLoss(torch.autograd.Function):
    """Forward and backward of :func:`sampled_softmax_loss` by hand: the candidates' probabilities
    are computed in place in one (N, k) buffer and saved, and the backward is one product with
    them. Composed from torch operations (mask, subtract, concatenate, ``logsumexp``, slice) the
    loss of ``sampled`` (N = k = 1024) took 6.3-21.7 ms forward and backward, by hand 1.7-2.1 ms
    (``docs/design/sampled-loss.md``)."""

    @staticmethod
    def forward(ctx, target_logit, sampled_logit, target_log_count, sampled_log_count, hits, target_weight):
        scores = sampled_logit - sampled_log_count
        if hits is not None:
            scores.masked_fill_(hits, float("-inf"))
        target_score = target_logit - target_log_count
        if target_weight is None:
            weight = torch.full_like(target_score, 1.0 / target_score.shape[1])
            weighted_target = target_score[:, 0] if target_score.shape[1] == 1 else target_score.mean(dim=1)
        else:
            weight = target_weight.to(target_score.dtype)
            left_out = target_weight == 0
            weighted_target = (target_score.masked_fill(left_out, 0.0) * weight).sum(dim=1)
            target_score = target_score.masked_fill(left_out, float("-inf"))
        top = torch.maximum(scores.amax(dim=1), target_score.amax(dim=1))
        top = top.masked_fill(torch.isinf(top), 0.0)  # as logsumexp: no inf - inf for a row of -inf
        probability = scores.sub_(top.unsqueeze(1)).exp_()
        target_probability = (target_score - top.unsqueeze(1)).exp_()
        total = probability.sum(dim=1).add_(target_probability.sum(dim=1))
        loss = total.log().add_(top).sub_(weighted_target)
        probability.div_(total.unsqueeze(1))
        ctx.save_for_backward(probability, target_probability.div_(total.unsqueeze(1)).sub_(weight))
        ctx.sampled_count_shape = sampled_log_count.shape
        return loss

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        probability, target_factor = ctx.saved_tensors
        needs = ctx.needs_input_grad
        target_grad = target_factor.mul_(grad.unsqueeze(1))
        sampled_grad = probability * grad.unsqueeze(1) if needs[1] or needs[3] else None
        count_grad = None
        if needs[3] and sampled_grad is not None:
            count_grad = -sampled_grad if len(ctx.sampled_count_shape) == 2 else -sampled_grad.sum(dim=0)
        return (
            target_grad if needs[0] else None,
            sampled_grad if needs[1] else None,
            -target_grad if needs[2] else None,
            count_grad,
            None,
            None,
        )


def sampled_softmax_loss(
    target_logit: Tensor,
    sampled_logit: Tensor,
    target_log_count: Tensor,
    sampled_log_count: Tensor,
    hits: Tensor | None = None,
    target_weight: Tensor | None = None,
) -> Tensor:
    """Per-example loss (N,) of the softmax over the targets and k candidates, each logit minus
    the log of its expected count in the candidate set (the log-Q correction that makes the
    sampled softmax consistent; Bengio & Senécal 2003, Jean et al. 2015). With one target,

        loss_n = logsumexp(t_n - c_n, s_n1 - c_1, ..., s_nk - c_k) - (t_n - c_n);

    with T targets per row (TensorFlow's ``num_true``), the cross-entropy against the weights w_nj
    of the targets (``target_weight`` (N, T), rows summing to 1; None: 1/T each):

        loss_n = logsumexp(t_nj - c_nj for w_nj > 0, s_n1 - c_1, ...) - Σ_j w_nj (t_nj - c_nj).

    The candidates where ``hits`` (N, k) is true (accidental hits, TensorFlow's
    ``remove_accidental_hits``) are left out, and so are the targets of weight 0 (padding, a
    repeat whose weight its first copy carries). Shapes: ``target_logit`` and ``target_log_count``
    (N,) or (N, T), ``sampled_logit`` (N, k), ``sampled_log_count`` (k,) shared or (N, k); the
    counts may also be scalars (0: no correction). Differentiable once in every tensor but
    ``hits`` and ``target_weight``.
    """
    if target_logit.dim() == 1:
        target_logit, target_log_count = target_logit.unsqueeze(1), target_log_count.reshape(-1, 1)
    return _SampledSoftmaxLoss.apply(
        target_logit, sampled_logit, target_log_count, sampled_log_count, hits, target_weight
    )


def resolve_sampler(
    sampler: SamplerSpec,
    num_classes: int,
    counts: Sequence[float] | None,
    default: str,
    *,
    device: torch.device | None = None,
    dtype: torch.dtype | None = None,
    **default_options: Any,
) -> Sampler:
    """A :class:`Sampler` from a registered name, an instance (used as given), or None
    (``default`` built with ``default_options``, the layer's paper default); one built here is
    built on ``device``, scoring in ``dtype``."""
    if isinstance(sampler, Sampler):
        if sampler.num_classes != num_classes:
            raise ConfigError(f"the sampler covers {sampler.num_classes} classes but the layer has {num_classes}")
        return sampler
    if sampler is None:
        return create_sampler(default, num_classes, counts=counts, device=device, dtype=dtype, **default_options)
    if isinstance(sampler, str):
        return create_sampler(sampler, num_classes, counts=counts, device=device, dtype=dtype)
    raise ConfigError(f"sampler must be a registered name or a Sampler instance, got {type(sampler).__name__}")


def draw_candidates(
    sampler: Sampler, num_samples: int, batch_size: int, *, shared: bool, unique: bool
) -> tuple[Tensor, int]:
    """``num_samples`` ids from ``sampler``: (k,) shared by the batch, or (N, k) one set per
    example, or with ``unique`` k distinct shared ids; and the number of draws behind them (k, or
    the tries of a unique draw) for :func:`~bigvocab.samplers.base.log_expected_count`."""
    if unique:
        return sampler.sample_unique(num_samples)
    if shared:
        return sampler.sample(num_samples), num_samples
    return sampler.sample(batch_size * num_samples).reshape(batch_size, num_samples), num_samples


class SamplingOutput(ScoredOutput):
    """A softmax trained on ``num_samples`` classes drawn from ``sampler`` per step.

    Args (shared by the sampling layers):
        num_samples: k, 1 <= k < V; None takes the layer's paper default (at most V - 1).
        sampler: registered sampler name, a :class:`Sampler`, or None for the layer's default.
        counts: training frequencies, read by samplers that need them (``unigram``).
        shared: draw one set of k samples for the whole batch (Jozefowicz et al. 2016) rather
            than k per example; shared sets cost one (k, H) gather instead of (N, k, H).
        scorer, bias, max_chunk_elements, device, dtype, **scorer_options: as for ``full``.
    """

    sparse_grad = True
    #: Candidate sets of k distinct ids (``sampled``'s TensorFlow-style draws) rather than k draws.
    unique = False

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        num_samples: int | None,
        default_num_samples: int,
        sampler: SamplerSpec,
        default_sampler: tuple[str, dict],
        counts: Sequence[float] | None,
        shared: bool,
        **scorer_options: Any,
    ) -> None:
        super().__init__(in_features, num_classes, **scorer_options)
        self.num_samples = check_num_samples(num_samples, num_classes, default=default_num_samples)
        self.shared = check_flag("shared", shared)
        name, options = default_sampler
        self.sampler = resolve_sampler(sampler, num_classes, counts, name, **self.factory_kwargs(), **options)

    def _draw(self, batch_size: int, *, unique: bool = False) -> tuple[Tensor, int]:
        """Candidate ids, (k,) shared or (N, k), and the number of draws behind them
        (:func:`draw_candidates`)."""
        return draw_candidates(self.sampler, self.num_samples, batch_size, shared=self.shared, unique=unique)

    def _train_scores(self, target: Tensor) -> tuple[float, float]:
        """Each example scores its target and k samples: N (k + 1) scores, over the distinct ids
        among the targets and the draws (k shared, N k per example; :meth:`_rows_touched`)."""
        rows = target.numel()
        draws = self.num_samples if self.shared else rows * self.num_samples
        return float(rows * (self.num_samples + 1)), self._rows_touched(target, draws)

    def _rows_touched(self, target: Tensor, draws: int) -> float:
        """Distinct ids among the targets and ``draws`` draws from the proposal, counted in
        expectation under it (:func:`~bigvocab.samplers.base.inclusion_probabilities`): a step
        reads each of those rows once."""
        in_step = inclusion_probabilities(self.sampler, draws, unique=self.unique)
        in_step[target.reshape(-1).to(in_step.device)] = 1.0
        return float(in_step.sum())

    def _observe(self, target: Tensor, **kwargs: Any) -> None:
        """Let an adaptive sampler learn from the step's targets (training mode only, so that
        computing a validation loss never changes the proposal)."""
        if self.training:
            self.sampler.update(target.detach(), **kwargs)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", num_samples={self.num_samples}, shared={self.shared}"
