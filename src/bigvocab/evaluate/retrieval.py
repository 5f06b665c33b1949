"""Ranking metrics of retrieval and extreme multi-label classification (XMC): P@k, nDCG@k, PSP@k,
recall@k and MRR, from a model's ranked predictions and the true label sets.

Shapes: ``ranked`` is (N, K) label ids, best first and distinct within a row (what
:meth:`~bigvocab.outputs.base.OutputLayer.topk` returns); ``targets`` is (N, T) true label ids
padded with -1 (the multi-label layout of the output layers), and a single-label (N,) target is
taken as T = 1. Metrics at k read the first k columns of ``ranked``; a row without a true label
counts 0 in every metric, so a test set's rows are never dropped silently.

Definitions (Jain, Prabhu & Varma 2016, "Extreme Multi-label Loss Functions for Recommendation,
Tagging, Ranking & Other Missing Label Applications", KDD; the Extreme Classification
Repository's conventions), with rel_i = 1 when the i-th prediction is a true label:

* P@k = (1/k) Σ_{i≤k} rel_i;
* nDCG@k = Σ_{i≤k} rel_i / log2(i + 1), divided by its best value Σ_{i≤min(k, |y|)} 1 / log2(i + 1);
* PSP@k = Σ_rows Σ_{i≤k} rel_i / p_{r_i}, divided by the same sum for the best ranking (the row's
  true labels in decreasing 1/p order): a ratio of totals over the set, not a mean of per-row
  ratios, as in the repository's tools; p are the propensities of :func:`jain_propensities`;
* recall@k = Σ_{i≤k} rel_i / |y|;
* MRR = 1 / (rank of the first true label in ``ranked``), 0 when none is among the K.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from bigvocab.data.xmc import distinct_labels
from bigvocab.errors import ConfigError, DataError
from bigvocab.evaluate.perplexity import eval_batches

#: Jain et al. (2016)'s propensity parameters for most data sets (A = 0.55, B = 1.5).
JAIN_A = 0.55
JAIN_B = 1.5
#: Rows compared at once, so the (rows, K, T) comparison stays small.
_ROW_CHUNK = 4096


def jain_propensities(
    label_counts: Sequence[int] | Tensor, num_examples: int, *, a: float = JAIN_A, b: float = JAIN_B
) -> Tensor:
    """Jain et al. (2016)'s propensity of each label, p_l = 1 / (1 + C exp(-A log(N_l + B))),
    C = (log N - 1) (B + 1)^A.

    Args:
        label_counts: (L,) N_l, the training examples that carry label l.
        num_examples: N, the training examples.
        a, b: A and B (0.55 and 1.5 for most data sets; 0.6, 2.6 for Amazon; 0.5, 0.4 for Wikipedia).

    Returns (L,) float64 propensities in (0, 1].
    """
    counts = torch.as_tensor(label_counts, dtype=torch.float64)
    if counts.dim() != 1 or bool((counts < 0).any()):
        raise DataError("label_counts must be a 1-D sequence of non-negative counts")
    if num_examples < 2:
        raise ConfigError(f"num_examples must be at least 2, got {num_examples}")
    c = (math.log(num_examples) - 1.0) * (b + 1.0) ** a
    return 1.0 / (1.0 + c * torch.exp(-a * torch.log(counts + b)))


def _as_rows(ranked: Tensor, targets: Tensor, k: int | None) -> tuple[Tensor, Tensor]:
    if ranked.dim() != 2:
        raise DataError(f"ranked must be (N, K) label ids, got shape {tuple(ranked.shape)}")
    if targets.dim() == 1:
        targets = targets.unsqueeze(1)
    if targets.dim() != 2 or targets.shape[0] != ranked.shape[0]:
        raise DataError(
            f"targets must be (N,) or (N, T) with N = {ranked.shape[0]} rows like ranked, got shape {tuple(targets.shape)}"
        )
    if k is not None:
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ConfigError(f"k must be a positive int, got {k!r}")
        if k > ranked.shape[1]:
            raise ConfigError(f"k={k} needs at least {k} ranked predictions per row, got {ranked.shape[1]}")
        ranked = ranked[:, :k]
    return ranked.long(), targets.long()


def relevance(ranked: Tensor, targets: Tensor) -> Tensor:
    """(N, K) bool: whether ``ranked[n, i]`` is one of row n's true labels."""
    ranked, targets = _as_rows(ranked, targets, None)
    parts = []
    for start in range(0, ranked.shape[0], _ROW_CHUNK):
        rows, true = ranked[start : start + _ROW_CHUNK], targets[start : start + _ROW_CHUNK]
        parts.append(((rows.unsqueeze(2) == true.unsqueeze(1)) & (true >= 0).unsqueeze(1)).any(2))
    return torch.cat(parts) if parts else torch.zeros(ranked.shape, dtype=torch.bool)


def _distinct_true_count(targets: Tensor) -> Tensor:
    """(N,) how many distinct true labels each row holds."""
    return distinct_labels(targets)[1].sum(1)


def precision_at_k(ranked: Tensor, targets: Tensor, k: int) -> float:
    """P@k, the mean over rows of the fraction of the first k predictions that are true labels."""
    per_row = precision_per_row(ranked, targets, k)
    return float(per_row.mean()) if per_row.numel() else 0.0


def precision_per_row(ranked: Tensor, targets: Tensor, k: int) -> Tensor:
    """(N,) float64: each row's fraction of its first k predictions that are true labels -- the
    terms of :func:`precision_at_k`, for paired comparisons of two rankings of the same rows."""
    ranked, targets = _as_rows(ranked, targets, k)
    return relevance(ranked, targets).double().mean(1)


def recall_at_k(ranked: Tensor, targets: Tensor, k: int) -> float:
    """recall@k, the mean over rows of the fraction of the true labels among the first k predictions."""
    ranked, targets = _as_rows(ranked, targets, k)
    hits = relevance(ranked, targets).double().sum(1)
    return _mean(hits / _distinct_true_count(targets).clamp(min=1))


def ndcg_at_k(ranked: Tensor, targets: Tensor, k: int) -> float:
    """nDCG@k with binary gains, the mean over rows."""
    ranked, targets = _as_rows(ranked, targets, k)
    discount = 1.0 / torch.log2(torch.arange(2, k + 2, dtype=torch.float64))
    dcg = (relevance(ranked, targets).double() * discount).sum(1)
    best_count = _distinct_true_count(targets).clamp(max=k)
    ideal = torch.cat([torch.zeros(1, dtype=torch.float64), discount.cumsum(0)])[best_count]
    return _mean(torch.where(best_count > 0, dcg / ideal.clamp(min=1e-300), 0.0))


def psp_at_k(ranked: Tensor, targets: Tensor, k: int, propensities: Tensor) -> float:
    """PSP@k, propensity-scored precision normalised by its best value over the set.

    Args:
        propensities: (L,) p_l for every label id (:func:`jain_propensities`).
    """
    ranked, targets = _as_rows(ranked, targets, k)
    inverse = 1.0 / torch.as_tensor(propensities, dtype=torch.float64)
    if inverse.dim() != 1:
        raise DataError(f"propensities must be (L,), got shape {tuple(inverse.shape)}")
    _check_ids("ranked", ranked, inverse.numel())
    _check_ids("targets", targets, inverse.numel())
    gained = (relevance(ranked, targets).double() * inverse[ranked]).sum()
    # the best ranking puts the row's distinct true labels first, by decreasing 1/p
    ordered, distinct = distinct_labels(targets)
    weights = torch.where(distinct, inverse[ordered.clamp(min=0)], 0.0)
    best = weights.sort(dim=1, descending=True).values[:, :k].sum()
    return float(gained / best) if float(best) > 0 else 0.0


def mean_reciprocal_rank(ranked: Tensor, targets: Tensor) -> float:
    """MRR over the K ranked predictions of each row (0 for a row with no true label among them)."""
    ranked, targets = _as_rows(ranked, targets, None)
    hits = relevance(ranked, targets)
    first = hits.double().argmax(1)
    return _mean(torch.where(hits.any(1), 1.0 / (first + 1).double(), 0.0))


def retrieval_metrics(
    ranked: Tensor, targets: Tensor, ks: Sequence[int] = (1, 3, 5), propensities: Tensor | None = None
) -> dict[str, float]:
    """Every metric at every k in ``ks``: ``P@k``, ``nDCG@k``, ``recall@k``, ``PSP@k`` (when
    ``propensities`` are given) and ``MRR`` (over the K columns of ``ranked``)."""
    metrics: dict[str, float] = {}
    for k in ks:
        metrics[f"P@{k}"] = precision_at_k(ranked, targets, k)
        metrics[f"nDCG@{k}"] = ndcg_at_k(ranked, targets, k)
        metrics[f"recall@{k}"] = recall_at_k(ranked, targets, k)
        if propensities is not None:
            metrics[f"PSP@{k}"] = psp_at_k(ranked, targets, k, propensities)
    metrics["MRR"] = mean_reciprocal_rank(ranked, targets)
    return metrics


def ranked_predictions(model, data: Any, k: int, batch_size: int = 512) -> tuple[Tensor, Tensor]:
    """``(ranked (N, k), targets (N, T))``: the exact top ``k`` of ``model.topk`` and the true
    labels of every example ``model.batches(data, train=False)`` yields (for ``xmc``, the rows
    that carry a label), in eval mode without gradients."""
    ranked, targets = [], []
    for batch in eval_batches(model, data, batch_size, desc="rank"):
        ranked.append(model.topk(batch, k)[1].cpu())
        targets.append(batch["target"].cpu())
    if not ranked:
        raise DataError("no examples to rank: the data give no batch for this model")
    return torch.cat(ranked), torch.cat(targets)


def evaluate_retrieval(
    model,
    data: Any,
    *,
    label_counts: Sequence[int],
    num_examples: int,
    ks: Sequence[int] = (1, 3, 5),
    batch_size: int = 512,
) -> dict[str, float]:
    """:func:`retrieval_metrics` of ``model``'s ranking of ``data`` (:func:`ranked_predictions`),
    PSP@k with :func:`jain_propensities` of the training ``label_counts`` over ``num_examples``
    training examples."""
    ranked, targets = ranked_predictions(model, data, max(ks), batch_size)
    return retrieval_metrics(ranked, targets, ks, jain_propensities(label_counts, num_examples))


def _mean(values: Tensor) -> float:
    return float(values.mean()) if values.numel() else 0.0


def _check_ids(name: str, ids: Tensor, num_labels: int) -> None:
    if ids.numel() and int(ids.max()) >= num_labels:
        raise DataError(f"{name} holds label id {int(ids.max())}, but propensities cover only {num_labels} labels")
