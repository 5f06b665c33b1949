"""``bigram`` -- the adaptive n-gram proposal of Bengio & Senécal (2008), at order two.

Q(w | c) = λ(c) B(w | c) + (1 - λ(c)) U(w), with c the previous token:

* U is a unigram: the given ``counts`` (fixed) or, without them, a :class:`LearnedSampler`
  estimated from the targets seen.
* B(w | c) = n(c, w) / n(c) is the bigram relative frequency, counted from the (previous token,
  target) pairs given to :meth:`update` (or :meth:`fit` on a token stream).
* λ(c) depends on c only through its *frequency class*, the bucket of log4 n(c), as the mixture
  weights of an interpolated n-gram do (bucket 0, contexts never seen, has λ = 0). The weights
  are adapted to *track the model*, the point of the paper: each :meth:`update` that carries the
  layer's samples y_j ~ Q(. | c) and their log importance weights log r_j = s(y_j) - log Q(y_j | c)
  takes one gradient step on the cross-entropy -Σ_w P(w | c) log Q(w | c) between the network's
  distribution P and Q, estimated by self-normalised importance sampling:

      ∂/∂λ ≈ -Σ_j r̃_j (B(y_j | c) - U(y_j)) / Q(y_j | c),   r̃_j = r_j / Σ_i r_i,

  averaged over the contexts of each bucket and applied to the bucket's logit θ (λ = σ(θ)).

Storage scales with the number of distinct bigrams, not V²: the table is a sorted COO list of
keys ``c * V + w`` with the running sum of their counts. A row's total is two binary searches; a
draw from B(. | c) is one binary search in the running sum (uniform offset inside the row's span),
so sampling and log_q cost O(log nnz) per id and nothing is O(V). New pairs wait in a pending list
and are merged (a sort, O(nnz log nnz)) on the geometric schedule of :func:`refresh_due`, before a
checkpoint is written, or on :meth:`refresh`; sampling and ``log_q`` always use the merged table,
so they agree exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from bigvocab.errors import ConfigError
from bigvocab.registry import SAMPLERS
from bigvocab.samplers.base import Sampler, uniform_floats
from bigvocab.samplers.learned import LearnedSampler, refresh_due
from bigvocab.samplers.unigram import UnigramSampler
from bigvocab.validation import check_nonnegative_float, check_positive_float, check_positive_int, check_probability


def _merge_before_saving(module: BigramSampler, prefix: str, keep_vars: bool) -> None:
    """State-dict pre-hook (a module-level function so that the module stays picklable)."""
    module.refresh()


@SAMPLERS.register("bigram")
class BigramSampler(Sampler):
    """Mixture of a bigram conditioned on the previous token and a unigram (Bengio & Senécal 2008).

    Args:
        num_classes: V.
        counts: (V,) training frequencies for the unigram part; without them it is learned.
        num_buckets: frequency classes of contexts, each with its own mixture weight.
        initial_weight: starting λ of every seen-context bucket, in (0, 1).
        mixture_rate: step size of the mixture-weight adaptation (0 keeps λ fixed).
        refresh: merge pending bigram counts once they reach this fraction of those merged.
        device, dtype: see :class:`~bigvocab.samplers.base.Sampler`.

    ``context`` (previous token ids) of shape (N,) makes :meth:`sample` return (N, k) and
    :meth:`log_q` read one context per leading index of ``ids``; without context the proposal
    is the unigram alone.
    """

    conditional = True

    # Buffers: λ's logit per context bucket; the sorted bigram keys c * V + w and their running counts.
    mixture_logits: Tensor
    keys: Tensor
    cumulative: Tensor

    def __init__(
        self,
        num_classes: int,
        *,
        counts: Sequence[float] | Tensor | None = None,
        num_buckets: int = 8,
        initial_weight: float = 0.5,
        mixture_rate: float = 0.05,
        refresh: float = 0.1,
        device: torch.device | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(num_classes, device=device, dtype=dtype)
        if num_classes > 3_000_000_000:
            raise ConfigError(f"bigram sampler keys c * V + w overflow int64 for num_classes={num_classes}")
        self.num_buckets = check_positive_int("num_buckets", num_buckets)
        if num_buckets < 2:
            raise ConfigError(f"num_buckets must be at least 2 (bucket 0 is for unseen contexts), got {num_buckets}")
        check_probability("initial_weight", initial_weight, allow_zero=False, allow_one=False)
        self.mixture_rate = check_nonnegative_float("mixture_rate", mixture_rate)
        self.refresh_fraction = check_positive_float("refresh", refresh)
        factory: dict[str, Any] = {"device": device, "dtype": dtype}
        self.unigram: Sampler = (
            UnigramSampler(num_classes, counts=counts, **factory)
            if counts is not None
            else LearnedSampler(num_classes, **factory)
        )
        logit = math.log(initial_weight / (1 - initial_weight))
        self.register_buffer("mixture_logits", torch.full((num_buckets,), logit, dtype=torch.float64, device=device))
        self.register_buffer("keys", torch.empty(0, dtype=torch.long, device=device))
        self.register_buffer("cumulative", torch.empty(0, dtype=torch.float64, device=device))
        self._pending: list[Tensor] = []
        self._pending_count = 0
        self._merged_count = 0.0
        self.register_state_dict_pre_hook(_merge_before_saving)

    # ------------------------------------------------------------------ the table
    @property
    def num_bigrams(self) -> int:
        """Distinct (context, target) pairs stored."""
        return self.keys.numel()

    def _row_span(self, context: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """For contexts (M,): first and one-past-last entry of each row, the running count before
        the row and the row total n(c), all (M,)."""
        start_key = context * self.num_classes
        low = torch.searchsorted(self.keys, start_key)
        high = torch.searchsorted(self.keys, start_key + self.num_classes)
        if self.keys.numel() == 0:
            zero = torch.zeros(context.shape, dtype=torch.float64, device=context.device)
            return low, high, zero, zero
        before = torch.where(low > 0, self.cumulative[(low - 1).clamp(min=0)], 0.0)
        end = torch.where(high > 0, self.cumulative[(high - 1).clamp(min=0)], 0.0)
        return low, high, before, end - before

    def _bucket(self, total: Tensor) -> Tensor:
        """Frequency class of a context seen ``total`` times: 0 if never, else 1 + floor(log4 n)."""
        classes = torch.floor(torch.log2(total.clamp(min=1)) / 2).long() + 1
        return torch.where(total > 0, classes.clamp(max=self.num_buckets - 1), torch.zeros_like(classes))

    def _weight(self, total: Tensor) -> Tensor:
        """λ of contexts whose rows hold ``total`` counts (0 for unseen contexts), float64."""
        weight = torch.sigmoid(self.mixture_logits[self._bucket(total)])
        return torch.where(total > 0, weight, torch.zeros_like(weight))

    def mixture_weight(self, context: Tensor) -> Tensor:
        """λ(c) for contexts of any shape (float64, same shape)."""
        flat = context.reshape(-1).to(self.keys.device).long()
        return self._weight(self._row_span(flat)[3]).reshape(context.shape)

    def _log_bigram(self, context: Tensor, ids: Tensor, total: Tensor) -> Tensor:
        """log B(ids | context) for equal-shape flat tensors (float64, -inf where unseen)."""
        if self.keys.numel() == 0:
            return torch.full(ids.shape, float("-inf"), dtype=torch.float64, device=ids.device)
        key = context * self.num_classes + ids
        index = torch.searchsorted(self.keys, key).clamp_(max=self.keys.numel() - 1)
        found = self.keys[index] == key
        before = torch.where(index > 0, self.cumulative[(index - 1).clamp(min=0)], 0.0)
        count = torch.where(found, self.cumulative[index] - before, 0.0)
        return torch.where(total > 0, torch.log(count) - torch.log(total), float("-inf"))

    # ------------------------------------------------------------------ Sampler interface
    def sample(
        self, num_samples: int, *, context: Tensor | None = None, generator: torch.Generator | None = None
    ) -> Tensor:
        check_positive_int("num_samples", num_samples)
        if context is None:
            return self.unigram.sample(num_samples, generator=generator)
        flat = context.reshape(-1).to(self.keys.device).long()
        shape = (flat.numel(), num_samples)
        unigram = self.unigram.sample(flat.numel() * num_samples, generator=generator).reshape(shape)
        if self.keys.numel() == 0:
            return unigram
        low, high, before, total = self._row_span(flat)
        offset = uniform_floats(shape, generator, flat.device)
        position = torch.searchsorted(self.cumulative, before[:, None] + offset * total[:, None], right=True)
        position = torch.maximum(torch.minimum(position, high[:, None] - 1), low[:, None]).clamp_(
            0, self.keys.numel() - 1
        )
        bigram = self.keys[position] - flat[:, None] * self.num_classes
        weight = self._weight(total)
        coin = uniform_floats(shape, generator, flat.device)
        return torch.where(coin < weight[:, None], bigram, unigram)

    def log_q(self, ids: Tensor, *, context: Tensor | None = None) -> Tensor:
        """log Q(ids | context); ``context`` has the leading shape of ``ids`` (or equals it)."""
        log_unigram = self.unigram.log_q(ids).to(torch.float64)
        if context is None:
            return log_unigram.to(self.dtype)
        context = context.to(ids.device).long()
        context = context.reshape(context.shape + (1,) * (ids.dim() - context.dim())).expand(ids.shape)
        flat_context, flat_ids = context.reshape(-1), ids.reshape(-1)
        total = self._row_span(flat_context)[3]
        weight = self._weight(total)
        log_mix = torch.logaddexp(
            torch.log(weight) + self._log_bigram(flat_context, flat_ids, total),
            torch.log1p(-weight) + log_unigram.reshape(-1),
        )
        return log_mix.reshape(ids.shape).to(self.dtype)

    @torch.no_grad()
    def update(
        self,
        target: Tensor,
        *,
        context: Tensor | None = None,
        samples: Tensor | None = None,
        log_weights: Tensor | None = None,
        **kwargs,
    ) -> None:
        """Count the (context, target) pairs and the targets; with ``samples`` (N, k) drawn for the
        contexts (N,) and their ``log_weights`` (N, k), adapt the mixture weights (see module doc)."""
        self.unigram.update(target)
        if context is None:
            return
        flat_context = context.reshape(-1).to(self.keys.device).long()
        flat_target = target.reshape(-1).to(self.keys.device).long()
        if samples is not None and log_weights is not None and self.mixture_rate > 0:
            self._adapt_mixture(flat_context, samples.to(self.keys.device), log_weights.to(self.keys.device))
        self._pending.append(flat_context * self.num_classes + flat_target)
        self._pending_count += flat_target.numel()
        if refresh_due(self._pending_count, self._merged_count, self.refresh_fraction):
            self.refresh()

    def _adapt_mixture(self, context: Tensor, samples: Tensor, log_weights: Tensor) -> None:
        """One step on each bucket's logit along the self-normalised IS estimate of
        ∂ CE(P, Q) / ∂λ (module doc), averaged over the bucket's contexts."""
        total = self._row_span(context)[3]
        # Unseen contexts have no λ; rows with no finite weight carry no information about P.
        keep = (total > 0) & torch.isfinite(log_weights).any(dim=1)
        if not keep.any():
            return
        context, samples, total = context[keep], samples[keep], total[keep]
        shape = samples.shape
        bigram = torch.exp(
            self._log_bigram(
                context[:, None].expand(shape).reshape(-1),
                samples.reshape(-1),
                total[:, None].expand(shape).reshape(-1),
            )
        ).reshape(shape)
        unigram = torch.exp(self.unigram.log_q(samples).double())
        weight = self._weight(total)[:, None]
        mixture = weight * bigram + (1 - weight) * unigram
        posterior = torch.softmax(log_weights[keep].double(), dim=1)
        grad_weight = -(posterior * (bigram - unigram) / mixture).sum(dim=1)
        grad_logit = grad_weight * (weight * (1 - weight)).squeeze(1)
        bucket = self._bucket(total)
        sums = torch.zeros_like(self.mixture_logits).index_add_(0, bucket, grad_logit)
        rows = torch.zeros_like(self.mixture_logits).index_add_(0, bucket, torch.ones_like(grad_logit))
        self.mixture_logits -= self.mixture_rate * sums / rows.clamp(min=1)

    @torch.no_grad()
    def fit(self, tokens: Tensor) -> None:
        """Count every consecutive pair of a 1-D token stream at once (e.g. the training corpus)."""
        tokens = tokens.reshape(-1).long()
        if tokens.numel() >= 2:
            self._pending.append(tokens[:-1].to(self.keys.device) * self.num_classes + tokens[1:].to(self.keys.device))
            self._pending_count += tokens.numel() - 1
        self.unigram.update(tokens)
        self.refresh()

    @torch.no_grad()
    def refresh(self) -> None:
        """Merge the pending pairs into the table now (one sort of the stored and new keys)."""
        if not self._pending:
            return
        counts = torch.diff(self.cumulative, prepend=self.cumulative.new_zeros(1))
        new_keys = torch.cat(self._pending)
        keys, inverse = torch.unique(torch.cat([self.keys, new_keys]), return_inverse=True)
        merged = torch.zeros(keys.shape, dtype=torch.float64, device=keys.device)
        merged.index_add_(
            0, inverse, torch.cat([counts, torch.ones(new_keys.shape, dtype=torch.float64, device=keys.device)])
        )
        self.keys = keys
        self.cumulative = torch.cumsum(merged, 0)
        self._pending, self._pending_count = [], 0
        self._merged_count = float(self.cumulative[-1])

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ):
        # The table's size changes as it grows: take the stored sizes before copying.
        for name in ("keys", "cumulative"):
            stored = state_dict.get(prefix + name)
            if stored is not None:
                setattr(self, name, torch.empty_like(stored, device=getattr(self, name).device))
        self._pending, self._pending_count = [], 0
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )
        self._merged_count = float(self.cumulative[-1]) if self.cumulative.numel() else 0.0

    def extra_repr(self) -> str:
        return super().extra_repr() + f", num_buckets={self.num_buckets}, bigrams={self.num_bigrams}"
