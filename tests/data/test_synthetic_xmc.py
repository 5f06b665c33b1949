"""The planted XMC task: its exact Bayes-optimal P@k against a Monte-Carlo estimate."""

from __future__ import annotations

import math

import pytest
import torch

from bigvocab.data.synthetic_xmc import SyntheticXMC
from bigvocab.errors import ConfigError
from bigvocab.evaluate import precision_at_k
from bigvocab.evaluate.retrieval import relevance


@pytest.mark.slow
@pytest.mark.parametrize("k", [1, 3, 5])
def test_bayes_precision_matches_monte_carlo(k):
    task = SyntheticXMC(600, 40, zipf=1.1, draws=4, signature=2, signature_features=60, num_features=90)
    rows, groups = task.sample(20000, torch.Generator().manual_seed(k))
    per_row = relevance(task.bayes_ranking(groups, k), rows.labels).double().mean(1)
    # 5 standard errors of the mean of the rows' precisions
    tolerance = 5 * float(per_row.std()) / math.sqrt(len(per_row))
    assert precision_at_k(task.bayes_ranking(groups, k), rows.labels, k) == pytest.approx(
        task.bayes_precision_at_k(k), abs=tolerance
    )


def test_rows_follow_the_planted_structure():
    task = SyntheticXMC(100, 7, draws=3, signature=3, signature_features=12, noise=2, num_features=30)
    rows, groups = task.sample(500, torch.Generator().manual_seed(0))
    assert len({tuple(s) for s in task.signatures.tolist()}) == 7
    assert all(len(set(s)) == 3 for s in task.signatures.tolist())
    features = rows.feature_ids.view(500, 5)
    assert torch.equal(features[:, :3], task.signatures[groups])
    assert bool((features[:, 3:] >= 12).all())
    valid = rows.labels >= 0
    assert bool((rows.labels[valid] % 7 == groups.unsqueeze(1).expand_as(rows.labels)[valid]).all())
    assert bool(valid[:, 0].all())
    assert task.within_group().sum() == pytest.approx(7.0)
    # a group's most popular label is the Bayes top 1: it is always the group id itself
    assert torch.equal(task.bayes_ranking(groups, 1).squeeze(1), groups)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"num_labels": 5, "num_groups": 6}, "num_groups=6"),
        ({"num_labels": 50, "num_groups": 30, "signature": 1, "signature_features": 20}, "distinct"),
        ({"num_labels": 50, "num_groups": 3, "noise": 2, "num_features": 1000}, "noise=2"),
    ],
)
def test_bad_options(options, message):
    with pytest.raises(ConfigError, match=message):
        SyntheticXMC(**options)
