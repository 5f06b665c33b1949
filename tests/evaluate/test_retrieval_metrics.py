"""P@k, nDCG@k, PSP@k, recall@k and MRR against a brute-force loop over rows."""

from __future__ import annotations

import math

import pytest
import torch

from bigvocab.errors import ConfigError, DataError
from bigvocab.evaluate import (
    jain_propensities,
    mean_reciprocal_rank,
    ndcg_at_k,
    precision_at_k,
    psp_at_k,
    recall_at_k,
    retrieval_metrics,
)


def random_problem(seed: int, rows: int = 40, labels: int = 12, ranked: int = 6, true: int = 4):
    """Distinct ranked ids per row; true labels with repeats, -1 padding and some empty rows."""
    generator = torch.Generator().manual_seed(seed)
    predictions = torch.stack([torch.randperm(labels, generator=generator)[:ranked] for _ in range(rows)])
    targets = torch.randint(0, labels, (rows, true), generator=generator)
    targets[torch.rand(rows, true, generator=generator) < 0.3] = -1
    targets[:3] = -1
    return predictions, targets


def true_sets(targets):
    return [{int(t) for t in row if t >= 0} for row in targets]


def brute(predictions, targets, k, inverse_propensity):
    """Every metric from its definition, one row at a time."""
    p = r = n = m = gained = best = 0.0
    for row, truth in zip(predictions.tolist(), true_sets(targets)):
        top = row[:k]
        hits = [label in truth for label in top]
        p += sum(hits) / k
        r += sum(hits) / len(truth) if truth else 0.0
        ideal = sum(1 / math.log2(i + 2) for i in range(min(k, len(truth))))
        n += sum(h / math.log2(i + 2) for i, h in enumerate(hits)) / ideal if truth else 0.0
        ranks = [i for i, label in enumerate(row) if label in truth]
        m += 1 / (ranks[0] + 1) if ranks else 0.0
        gained += sum(inverse_propensity[label] for label, h in zip(top, hits) if h)
        best += sum(sorted((inverse_propensity[label] for label in truth), reverse=True)[:k])
    rows = len(predictions)
    return {"P": p / rows, "recall": r / rows, "nDCG": n / rows, "MRR": m / rows, "PSP": gained / best}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k", [1, 3, 5])
def test_metrics_match_brute_force(seed, k):
    predictions, targets = random_problem(seed)
    counts = torch.randint(0, 50, (12,), generator=torch.Generator().manual_seed(seed))
    propensities = jain_propensities(counts, 200)
    expected = brute(predictions, targets, k, (1 / propensities).tolist())
    assert precision_at_k(predictions, targets, k) == pytest.approx(expected["P"], abs=1e-12)
    assert recall_at_k(predictions, targets, k) == pytest.approx(expected["recall"], abs=1e-12)
    assert ndcg_at_k(predictions, targets, k) == pytest.approx(expected["nDCG"], abs=1e-12)
    assert psp_at_k(predictions, targets, k, propensities) == pytest.approx(expected["PSP"], abs=1e-12)
    assert mean_reciprocal_rank(predictions, targets) == pytest.approx(expected["MRR"], abs=1e-12)
    metrics = retrieval_metrics(predictions, targets, ks=(k,), propensities=propensities)
    assert metrics[f"P@{k}"] == precision_at_k(predictions, targets, k)
    assert set(metrics) == {f"P@{k}", f"nDCG@{k}", f"recall@{k}", f"PSP@{k}", "MRR"}


def test_perfect_ranking_scores_one_and_single_label_targets():
    targets = torch.tensor([[3, 1, -1], [2, -1, -1]])
    ranked = torch.tensor([[1, 3, 0], [2, 0, 1]])
    assert ndcg_at_k(ranked, targets, 3) == pytest.approx(1.0)
    assert recall_at_k(ranked, targets, 2) == pytest.approx(1.0)
    assert psp_at_k(ranked, targets, 2, torch.tensor([0.5, 0.2, 0.9, 0.4])) == pytest.approx(1.0)
    assert precision_at_k(ranked, targets, 2) == pytest.approx(0.75)
    assert precision_at_k(ranked, torch.tensor([1, 0]), 1) == pytest.approx(0.5)


def test_jain_propensities_formula():
    counts = torch.tensor([0, 1, 10, 1000])
    c = (math.log(5000) - 1) * 2.5**0.55
    expected = [1 / (1 + c * (n + 1.5) ** -0.55) for n in counts.tolist()]
    assert jain_propensities(counts, 5000).tolist() == pytest.approx(expected, rel=1e-12)
    assert jain_propensities(counts, 5000, a=0.6, b=2.6)[0] == pytest.approx(
        1 / (1 + (math.log(5000) - 1) * 3.6**0.6 * 2.6**-0.6)
    )


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: precision_at_k(torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 1), 4), ConfigError, "k=4"),
        (lambda: precision_at_k(torch.zeros(2, 3, dtype=torch.long), torch.zeros(3, 1), 1), DataError, "targets"),
        (lambda: precision_at_k(torch.zeros(3, dtype=torch.long), torch.zeros(3), 1), DataError, "ranked"),
        (lambda: psp_at_k(torch.full((1, 2), 5), torch.zeros(1, 1), 1, torch.ones(3)), DataError, "label id 5"),
        (lambda: jain_propensities([-1, 2], 10), DataError, "label_counts"),
    ],
)
def test_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()
