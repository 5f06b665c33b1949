"""The learned unigram: counts of the targets seen, an alias snapshot rebuilt on a geometric
schedule, and log_q that always describes the snapshot being sampled."""

from __future__ import annotations

import pytest
import torch

import bigvocab
from bigvocab.errors import ConfigError


def test_counts_are_prior_plus_targets_seen():
    sampler = bigvocab.create_sampler("learned", 6, prior=0.5)
    targets = torch.tensor([0, 0, 5, 2, 0, 5])
    sampler.update(targets)
    torch.testing.assert_close(sampler.counts, 0.5 + torch.bincount(targets, minlength=6).double())
    assert float(sampler.mass) == pytest.approx(6 * 0.5 + 6)


def test_snapshot_changes_only_on_schedule():
    """Prior mass 10; refresh=0.5: the table is rebuilt once 5 new targets have arrived."""
    sampler = bigvocab.create_sampler("learned", 10, refresh=0.5)
    uniform = torch.full((10,), 0.1, dtype=torch.float64)
    sampler.update(torch.tensor([3, 3, 3, 3]))
    torch.testing.assert_close(sampler.log_q(torch.arange(10)).double().exp(), uniform, rtol=1e-6, atol=0)
    sampler.update(torch.tensor([3]))
    expected = torch.ones(10, dtype=torch.float64)
    expected[3] += 5
    torch.testing.assert_close(
        sampler.log_q(torch.arange(10)).double().exp(), expected / expected.sum(), rtol=1e-6, atol=0
    )


def test_draws_follow_the_snapshot(goodness_of_fit, alpha):
    torch.manual_seed(0)
    sampler = bigvocab.create_sampler("learned", 20)
    sampler.update(torch.randint(0, 4, (400,)))
    sampler.refresh()
    assert goodness_of_fit(sampler.sample(30_000), sampler.counts) > alpha


def test_initial_counts_and_errors():
    sampler = bigvocab.create_sampler("learned", 3, counts=[4, 0, 1], prior=0.0)
    torch.testing.assert_close(
        sampler.log_q(torch.arange(3)).double().exp(), torch.tensor([0.8, 0.0, 0.2], dtype=torch.float64)
    )
    with pytest.raises(ConfigError, match="prior"):
        bigvocab.create_sampler("learned", 3, prior=-1.0)
    with pytest.raises(ConfigError, match="prior=0"):
        bigvocab.create_sampler("learned", 3, prior=0.0)
    with pytest.raises(ConfigError, match="refresh"):
        bigvocab.create_sampler("learned", 3, refresh=0)
