"""Candidates for the objectives that score a row's positives against a few other classes
(``sampled``, ``neg``, ``bce``): where a step's candidates come from, which of them a row leaves
out, and the log-Q correction of every logit. ``docs/design/candidates-and-multilabel.md`` states
the interface.

**Sources** (``candidates=``):

* ``"sampler"`` -- ``num_samples`` draws from the proposal Q (shared by the batch, or per example;
  unique or with replacement), as in Bengio & Senécal 2003 and Jean et al. 2015;
* ``"in_batch"`` -- the batch's distinct positives U, shared by every row (Yi et al. 2019,
  "Sampling-bias-corrected neural modeling for large corpus item recommendations");
* ``"mixed"`` -- U and ``num_samples`` draws from Q (Yang et al. 2020, "Mixed negative sampling
  for learning two-tower neural networks in recommendations");

plus hard negatives given per example (``loss(..., negatives=ids)``, (N, m), -1 for padding).

**Masks.** A row's positives are its true logits and never its negatives: a candidate equal to
any of them is left out (for in-batch candidates always -- U holds the row's own positives -- for
sampler draws when ``remove_accidental_hits``). A hard negative that is -1, repeats an earlier one
of its row or equals a positive is left out, and so is a random candidate equal to one of the
row's hard negatives: each hard negative enters its row once.

**Correction** (``correction=True``, the softmax objective ``sampled``). Each logit -- positives
and candidates alike -- has log m_y subtracted, m_y the expected number of copies of y among the
row's random candidates:

* sampler draws: m_y = k Q(y) for k draws with replacement, 1 - (1 - Q(y))^T for T draws kept
  unique (:func:`~bigvocab.samplers.base.log_expected_count`);
* in-batch: m_y = π_y, the probability that y is among the batch's distinct positives;
* mixed: m_y = π_y + (the sampler's term);
* a hard negative: m = 1 (log m = 0), certainly in its row, once.

*Why the sum for the mixture.* The sampled softmax estimates the normaliser by
Ẑ = Σ_{c ∈ C} exp(s_c) / m_c over the row's candidate multiset C. With n_y the number of copies
of y in C, E[Ẑ] = Σ_y E[n_y] exp(s_y) / m_y, which is Z exactly when m_y = E[n_y]. C is the union
of two independent processes, the batch (n^B_y ∈ {0, 1}, E = π_y) and the sampler (E = k Q(y)),
so E[n_y] = π_y + k Q(y): the mixture's proposal, counted in expected copies. Yang et al. correct
by the mixture distribution q*(y) = (B p(y) + B' Q(y)) / (B + B') for B in-batch and B' sampled
candidates; that is E[n_y] / (B + B') with in-batch counts B p(y), a constant factor per row that
the softmax cannot see, so the two corrections train the same model. (Here U keeps one copy of
each distinct positive, so its term is the inclusion probability π_y = 1 - (1 - p_y)^D for D
positives in the batch rather than the expected count D p_y.) A draw that equals a member of U
is kept: both copies are counted in E[n_y].

*Sign.* The correction lowers the logits of frequent candidates (large m) and raises those of
rare ones: without it a frequent item is a negative in many rows and its score is pushed down in
proportion to its frequency, and the model learns p(y | x) / m_y instead of p(y | x).

**π_y** (in-batch and mixed) comes from ``frequency=``: ``"counts"`` (p_y = counts_y / Σ counts)
or ``"streaming"`` (Yi et al.'s estimator, :class:`~bigvocab.samplers.streaming.StreamingFrequency`,
updated with each training step's distinct positives before the loss reads it; its state is
saved with the layer, so a resumed run continues it exactly).

**Temperature** (``temperature=`` τ, default 1). The layer reads its input as h/τ in every method
-- training and exact evaluation alike -- so its scores are s(h/τ, y) = h·e_y/τ + b_y: the logits
divided by τ for a bias-free scorer (Yi et al.'s two towers; with a bias, the same model with the
bias reparametrised). The division comes before the correction: the model trained is
p ∝ exp(s/τ), and the sampled softmax is consistent for that model when each logit it sees is
the model's logit minus log m_y (Yi et al. 2019 divide the inner product by τ and subtract
log p_j from the result). Dividing after the correction would divide log m_y by τ too -- a
correction for the proposal Q^(1/τ), twenty times too strong at τ = 0.05.

A step scores each row's positives and its candidates in one scorer call, so the rows of the
weight matrix it touches (U, the draws, the hard negatives, the positives) receive one sparse
gradient.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from bigvocab.errors import ConfigError
from bigvocab.outputs.functional import distinct_ids, fill_padding
from bigvocab.outputs.objective import ScoredOutput
from bigvocab.outputs.sampling import SamplerSpec, accidental_hits, draw_candidates, resolve_sampler
from bigvocab.samplers.base import Sampler, as_counts, inclusion_probabilities, log_expected_count
from bigvocab.samplers.streaming import StreamingFrequency
from bigvocab.validation import check_flag, check_num_samples, check_positive_float

#: Where a step's candidates come from.
CANDIDATE_SOURCES = ("sampler", "in_batch", "mixed")
#: Where the in-batch inclusion probabilities come from.
FREQUENCIES = ("counts", "streaming")

FrequencySpec = str | StreamingFrequency | None


@dataclass
class CandidateScores:
    """One step's scores, as the objectives read them (N rows, T positives, K candidates).

    positives: (N, T) the rows' positive ids, -1 at padding.
    positive_logit: (N, T) their scores (padding scored as the row's first positive).
    positive_valid: (N, T) bool, False at padding; None for single-label targets.
    positive_log_count: (N, T) log m of the positives, or a zero scalar without correction.
    candidate_logit: (N, K).
    candidate_log_count: (K,) or (N, K), or a zero scalar without correction.
    mask: (N, K) bool, True where a candidate is left out of its row; None when none is.
    """

    positives: Tensor
    positive_logit: Tensor
    positive_valid: Tensor | None
    positive_log_count: Tensor
    candidate_logit: Tensor
    candidate_log_count: Tensor
    mask: Tensor | None


@dataclass
class _Part:
    """A block of candidate columns: ids (M,) shared or (N, M) per row, their log m (same shape,
    None without correction), and the (N, M) mask or None."""

    ids: Tensor
    log_count: Tensor | None
    mask: Tensor | None


def repeats(ids: Tensor) -> Tensor:
    """(N, M) True where an id repeats one earlier in its row (the first copy is not a repeat)."""
    ordered, order = ids.sort(dim=1, stable=True)
    repeat = torch.zeros_like(ordered, dtype=torch.bool)
    repeat[:, 1:] = ordered[:, 1:] == ordered[:, :-1]
    return torch.zeros_like(repeat).scatter_(1, order, repeat)


def hard_negative_mask(negatives: Tensor, positives: Tensor) -> Tensor:
    """(N, m) True where a hard negative is left out: -1 padding, a repeat of an earlier hard
    negative of its row, or one of the row's positives (N, T)."""
    return repeats(negatives) | (negatives < 0) | accidental_hits(positives, negatives)


def positive_weights(positives: Tensor, dtype: torch.dtype) -> Tensor:
    """(N, T) the uniform mixture over each row's listed positives (-1 padding weighs 0), in ``dtype``, with a
    repeated label's weight moved onto its first copy: a label listed twice weighs 2/T_i and
    enters the normaliser once."""
    valid = (positives >= 0).to(dtype)
    weight = valid / valid.sum(dim=1, keepdim=True)
    ordered, order = positives.sort(dim=1, stable=True)
    first = torch.ones_like(ordered, dtype=torch.bool)
    first[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    group = first.cumsum(dim=1) - 1
    total = torch.zeros_like(weight).scatter_add_(1, group, weight.gather(1, order))
    merged = torch.where(first, total.gather(1, group), torch.zeros_like(weight))
    return torch.zeros_like(weight).scatter_(1, order, merged)


class CandidateOutput(ScoredOutput):
    """Objectives that score each row's positives against a few candidates: the candidates, the
    masks and the log-Q correction (module docstring); the subclass writes :meth:`_objective`.

    Args (shared by ``sampled``, ``neg`` and ``bce``):
        candidates: ``"sampler"``, ``"in_batch"`` or ``"mixed"``.
        num_samples: k draws from the sampler per step (``sampler`` and ``mixed``); None takes the
            layer's default (at most V - 1). ``in_batch`` draws none and refuses it.
        sampler: registered sampler name, a :class:`Sampler`, or None for the layer's default
            (``sampler`` and ``mixed`` only).
        counts: training frequencies, read by samplers that need them and by ``frequency="counts"``.
        shared: one set of draws for the whole batch rather than one per example.
        unique: draws kept distinct (TensorFlow-style, needs ``shared``); None is the layer's default.
        remove_accidental_hits: leave out sampler draws equal to one of the row's positives.
        temperature: τ > 0; the layer reads its input as h/τ (module docstring).
        correction: subtract log m_y from every logit (the softmax objective's log-Q correction).
        frequency: where π_y of the in-batch candidates comes from when ``correction``:
            ``"counts"``, ``"streaming"`` or a :class:`StreamingFrequency`; None is ``"counts"``
            when counts are given, else ``"streaming"``.
        scorer, bias, max_chunk_elements, device, dtype, **scorer_options: as for ``full``.

    Buffers: ``log_frequency`` (V,) log p_y with ``frequency="counts"`` (from the constructor's
    counts, not saved); the :class:`StreamingFrequency` ``frequency``'s, saved.
    """

    sparse_grad = True
    takes_negatives = True
    sampler: Sampler | None
    frequency: StreamingFrequency | None

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        candidates: str,
        num_samples: int | None,
        default_num_samples: int,
        sampler: SamplerSpec,
        default_sampler: tuple[str, dict],
        counts: Sequence[float] | None,
        shared: bool,
        unique: bool,
        remove_accidental_hits: bool,
        temperature: float,
        correction: bool,
        frequency: FrequencySpec,
        **scorer_options: Any,
    ) -> None:
        super().__init__(in_features, num_classes, **scorer_options)
        if candidates not in CANDIDATE_SOURCES:
            raise ConfigError(f"candidates must be one of {CANDIDATE_SOURCES}, got {candidates!r}")
        self.candidates = candidates
        self.shared = check_flag("shared", shared)
        self.remove_accidental_hits = check_flag("remove_accidental_hits", remove_accidental_hits)
        self.temperature = check_positive_float("temperature", temperature)
        self.logq_correction = check_flag("correction", correction)
        self.unique = check_flag("unique", unique)
        if candidates == "in_batch":
            for name, value in (("num_samples", num_samples), ("sampler", sampler)):
                if value is not None:
                    raise ConfigError(
                        f"candidates='in_batch' draws nothing from a sampler; {name}= is for candidates='sampler' "
                        "or 'mixed'"
                    )
            self.num_samples, self.sampler, self.unique = 0, None, False
        else:
            self.num_samples = check_num_samples(num_samples, num_classes, default=default_num_samples)
            name, options = default_sampler
            self.sampler = resolve_sampler(sampler, num_classes, counts, name, **self.factory_kwargs(), **options)
            if self.unique and not self.shared:
                raise ConfigError("unique=True needs shared=True (per-example samples are drawn with replacement)")
            if self.unique and self.sampler.conditional:
                raise ConfigError(f"unique=True needs an unconditional sampler, not {type(self.sampler).__name__}")
        self.frequency = None
        self._build_frequency(frequency, counts)

    def _build_frequency(self, frequency: FrequencySpec, counts: Sequence[float] | None) -> None:
        """The in-batch proposal: a :class:`StreamingFrequency` or the counts' log p (V,)."""
        if frequency is not None and self.candidates == "sampler":
            raise ConfigError(
                "frequency= gives the in-batch candidates' probabilities; candidates='sampler' has none "
                "(its proposal is the sampler's)"
            )
        if self.candidates == "sampler" or not self.logq_correction:
            return
        if frequency is None:
            frequency = "counts" if counts is not None else "streaming"
        if isinstance(frequency, StreamingFrequency):
            if frequency.num_classes != self.num_classes:
                raise ConfigError(
                    f"the StreamingFrequency covers {frequency.num_classes} classes but the layer has {self.num_classes}"
                )
            self.frequency = frequency.to(self.factory_kwargs()["device"])
        elif frequency == "streaming":
            self.frequency = StreamingFrequency(self.num_classes, device=self.factory_kwargs()["device"])
        elif frequency == "counts":
            if counts is None:
                raise ConfigError(
                    "frequency='counts' needs counts= (the training frequency of each class); pass counts, or "
                    "use frequency='streaming' to estimate them during training"
                )
            frequencies = as_counts(counts, self.num_classes, type(self).__name__)
            # A class with no count that turns up as a positive is as rare as the rarest counted:
            # its log π stays finite.
            frequencies = torch.where(frequencies > 0, frequencies, frequencies[frequencies > 0].min())
            log_p = (frequencies / frequencies.sum()).log()
            self.register_buffer("log_frequency", log_p.to(**self.factory_kwargs()), persistent=False)
        else:
            raise ConfigError(f"frequency must be one of {FREQUENCIES} or a StreamingFrequency, got {frequency!r}")

    # ------------------------------------------------------------------ the step
    def _input_hidden(self, hidden: Tensor) -> Tensor:
        return hidden if self.temperature == 1.0 else hidden / self.temperature

    def _batch_loss(self, hidden: Tensor, target: Tensor, context: Tensor | None, negatives: Tensor | None) -> Tensor:
        positives = target.unsqueeze(1) if target.dim() == 1 else target
        scores = self._candidate_scores(hidden, positives, None if target.dim() == 1 else positives >= 0, negatives)
        if self.training and self.sampler is not None:
            # An adaptive sampler learns from the targets (never from a validation loss).
            self.sampler.update(target.detach() if target.dim() == 1 else target[target >= 0].detach())
        return self._objective(scores)

    def _objective(self, scores: CandidateScores) -> Tensor:
        """(N,) per-example loss from the step's scores."""
        raise NotImplementedError

    def _draw(self, batch_size: int, *, unique: bool = False) -> tuple[Tensor, int]:
        """The sampler's draws, (k,) shared or (N, k), and the number of draws behind them."""
        assert self.sampler is not None  # only the sources with draws call it
        return draw_candidates(self.sampler, self.num_samples, batch_size, shared=self.shared, unique=unique)

    def _candidate_scores(
        self, hidden: Tensor, positives: Tensor, valid: Tensor | None, negatives: Tensor | None
    ) -> CandidateScores:
        """The step's scores for hidden (N, H) (already divided by τ), positives (N, T) (-1 where
        ``valid`` (N, T) is False; ``valid`` None when there is no padding) and hard negatives
        (N, m) or None. In training mode a streaming frequency first learns the batch's positives."""
        filled = positives if valid is None else fill_padding(positives)
        # Only the counts' inclusion probability reads the number of positives (a device sync).
        counted = self.candidates != "sampler" and self.frequency is None and self.logq_correction
        draws_in_batch = int(valid.sum()) if counted and valid is not None else positives.numel()
        shared: list[_Part] = []
        per_row: list[_Part] = []
        sampler_draws = 0
        if self.candidates != "sampler":
            in_batch, _ = distinct_ids(filled, self.num_classes)
            if self.training and self.frequency is not None:
                self.frequency.update(in_batch)
            shared.append(_Part(in_batch, None, accidental_hits(positives, in_batch)))
        if self.candidates != "in_batch":
            sampled, sampler_draws = self._draw(hidden.shape[0], unique=self.unique)
            hits = accidental_hits(positives, sampled) if self.remove_accidental_hits else None
            (shared if sampled.dim() == 1 else per_row).append(_Part(sampled, None, hits))
        zero = hidden.new_zeros(())
        if self.logq_correction:
            for part in shared + per_row:
                part.log_count = self._log_count(part.ids, draws_in_batch, sampler_draws)
        if negatives is not None:
            for part in shared + per_row:
                hits = accidental_hits(negatives, part.ids)
                part.mask = hits if part.mask is None else part.mask | hits
            # Padding is scored as the row's first positive: no row beyond those already touched.
            hard = torch.where(negatives >= 0, negatives, filled[:, :1])
            certain = zero.expand(hard.shape) if self.logq_correction else None  # log m = log 1
            per_row.append(_Part(hard, certain, hard_negative_mask(negatives, positives)))
        positive_logit, candidate_logit = self._score(hidden, filled, shared, per_row)
        return CandidateScores(
            positives=positives,
            positive_logit=positive_logit,
            positive_valid=valid,
            positive_log_count=self._log_count(filled, draws_in_batch, sampler_draws) if self.logq_correction else zero,
            candidate_logit=candidate_logit,
            candidate_log_count=self._joined_log_counts(shared, per_row) if self.logq_correction else zero,
            mask=_joined_masks(hidden.shape[0], shared, per_row),
        )

    def _score(
        self, hidden: Tensor, positives: Tensor, shared: list[_Part], per_row: list[_Part]
    ) -> tuple[Tensor, Tensor]:
        """(N, T) scores of the positives and (N, K) of the candidates -- the shared blocks, then
        the per-row ones -- in one scorer call (one sparse gradient for every row touched)."""
        rows = torch.cat([positives, *(part.ids for part in per_row)], dim=1) if per_row else positives
        width = positives.shape[1]
        if not shared:
            logits = self.class_logits(hidden, rows)
            return logits[:, :width], logits[:, width:]
        ids = torch.cat([part.ids for part in shared]) if len(shared) > 1 else shared[0].ids
        own = rows[:, 0] if rows.shape[1] == 1 else rows
        own_logit, shared_logit = self.target_and_class_logits(hidden, own, ids)
        if own_logit.dim() == 1:
            return own_logit.unsqueeze(1), shared_logit
        return own_logit[:, :width], torch.cat([shared_logit, own_logit[:, width:]], dim=1)

    def _log_count(self, ids: Tensor, draws_in_batch: int, sampler_draws: int) -> Tensor:
        """log m of ``ids`` (any shape): log π (in-batch), log of the sampler's expected count, or
        their log-sum for ``mixed``."""
        terms = []
        if self.candidates != "sampler":
            terms.append(self._log_inclusion(ids, draws_in_batch))
        if self.sampler is not None:
            terms.append(log_expected_count(self.sampler.log_q(ids), sampler_draws, unique=self.unique))
        return terms[0] if len(terms) == 1 else torch.logaddexp(terms[0], terms[1])

    def _log_inclusion(self, ids: Tensor, draws_in_batch: int) -> Tensor:
        """log π of ``ids``: that an id is among the batch's distinct positives."""
        if self.frequency is not None:
            return self.frequency.log_probability(ids).to(self.factory_kwargs()["dtype"])
        log_frequency = self.log_frequency.index_select(0, ids.reshape(-1)).reshape(ids.shape)
        return log_expected_count(log_frequency, draws_in_batch, unique=True)

    @staticmethod
    def _joined_log_counts(shared: list[_Part], per_row: list[_Part]) -> Tensor:
        """The candidates' log m in column order: (K,) when every block is shared, else (N, K)."""
        shared_counts = [part.log_count for part in shared if part.log_count is not None]
        row_counts = [part.log_count for part in per_row if part.log_count is not None]
        if not row_counts:
            return shared_counts[0] if len(shared_counts) == 1 else torch.cat(shared_counts)
        rows = row_counts[0].shape[0]
        expanded = [count.unsqueeze(0).expand(rows, -1) for count in shared_counts]
        return torch.cat([*expanded, *row_counts], dim=1)

    # ------------------------------------------------------------------ cost model
    def _train_scores(self, target: Tensor) -> tuple[float, float]:
        """Each example scores its positives and the step's candidates: N (T + |U| + k) scores
        (U the batch's distinct positives for in-batch sources). The classes are the distinct ids
        among the positives and the draws, counted in expectation under the proposal
        (:func:`~bigvocab.samplers.base.inclusion_probabilities`)."""
        rows = target.shape[0]
        positives = target.reshape(rows, -1)
        in_batch = int(torch.unique(positives[positives >= 0]).numel()) if self.candidates != "sampler" else 0
        if self.sampler is None:
            return float(rows * (positives.shape[1] + in_batch)), float(in_batch)
        draws = self.num_samples if self.shared else rows * self.num_samples
        in_step = inclusion_probabilities(self.sampler, draws, unique=self.unique)
        in_step[positives[positives >= 0].to(in_step.device)] = 1.0
        return float(rows * (positives.shape[1] + in_batch + self.num_samples)), float(in_step.sum())

    def extra_repr(self) -> str:
        source = f", candidates={self.candidates!r}"
        draws = (
            f", num_samples={self.num_samples}, shared={self.shared}, unique={self.unique}"
            if self.sampler is not None
            else ""
        )
        tempered = f", temperature={self.temperature}" if self.temperature != 1.0 else ""
        return (
            super().extra_repr() + source + draws + tempered + f", remove_accidental_hits={self.remove_accidental_hits}"
        )


def _joined_masks(num_rows: int, shared: list[_Part], per_row: list[_Part]) -> Tensor | None:
    """The (N, K) mask of the candidate columns, shared blocks first; None when nothing is masked."""
    parts = shared + per_row
    if all(part.mask is None for part in parts):
        return None
    masks = []
    for part in parts:
        width = part.ids.shape[-1]
        if part.mask is None:
            masks.append(torch.zeros(num_rows, width, dtype=torch.bool, device=part.ids.device))
        else:
            masks.append(part.mask)
    return masks[0] if len(masks) == 1 else torch.cat(masks, dim=1)
