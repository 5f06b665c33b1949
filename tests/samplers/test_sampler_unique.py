"""Candidate sets without replacement and the expected counts of the log-Q correction.

Derivation tested here: among T independent draws from Q, class i appears at least once with
probability 1 - (1 - q_i)^T, and its expected number of appearances with replacement is T q_i.
"""

from __future__ import annotations

import math

import pytest
import torch

import bigvocab
import bigvocab.samplers.base as sampler_base
from bigvocab.errors import ConfigError
from bigvocab.samplers.base import Sampler, inclusion_probabilities, log_expected_count


class Scripted(Sampler):
    """Returns a fixed sequence of ids, to check the bookkeeping of ``sample_unique``."""

    def __init__(self, num_classes: int, sequence: list[int]) -> None:
        super().__init__(num_classes)
        self.sequence = torch.tensor(sequence)
        self.position = 0

    def sample(self, num_samples, *, context=None, generator=None):
        out = self.sequence[self.position : self.position + num_samples]
        self.position += num_samples
        return out

    def log_q(self, ids, *, context=None):
        return torch.full(ids.shape, -math.log(self.num_classes))


def test_first_k_distinct_in_order_and_the_tries():
    # 2k = 6 draws first: [4 4 1 4 1 1] has 2 distinct, so 6 more: [7 1 9 2 2 2].
    sampler = Scripted(10, [4, 4, 1, 4, 1, 1, 7, 1, 9, 2, 2, 2])
    ids, tries = sampler.sample_unique(3)
    assert ids.tolist() == [4, 1, 7]
    assert tries == 7  # 7 first appeared at draw 7


def test_with_replacement_count_is_t_q():
    log_q = torch.log(torch.tensor([0.5, 0.25, 1e-9]))
    torch.testing.assert_close(log_expected_count(log_q, 8, unique=False), torch.log(8 * log_q.exp()))


def test_unique_count_is_exact_inclusion_probability_for_fixed_draws(zipf_counts):
    """R = 4,000 repetitions of T = 20 draws: class i appears in Binomial(R, π_i) of them with
    π_i = 1 - (1 - q_i)^T. z-scores of the classes with R π(1-π) >= 10 (normal approximation
    valid) must lie within ±4.5: two-sided 6.8e-6 each, under 4e-4 for the family."""
    sampler = bigvocab.create_sampler("unigram", 60, counts=zipf_counts)
    repetitions, draws = 4000, 20
    torch.manual_seed(6)
    ids = sampler.sample(repetitions * draws).reshape(repetitions, draws)
    present = torch.zeros(repetitions, 60, dtype=torch.bool).scatter_(1, ids, True)
    observed = present.sum(0).double()
    inclusion = log_expected_count(sampler.log_q(torch.arange(60)).double(), draws, unique=True).exp()
    variance = repetitions * inclusion * (1 - inclusion)
    testable = variance >= 10
    assert testable.sum() >= 40
    z = (observed - repetitions * inclusion)[testable] / variance[testable].sqrt()
    assert bool((z.abs() < 4.5).all()), z


def test_unique_count_is_stable_at_the_extremes():
    tiny = log_expected_count(torch.tensor([math.log(1e-30)], dtype=torch.float64), 1000, unique=True)
    assert float(tiny) == pytest.approx(math.log(1000) + math.log(1e-30), abs=1e-9)
    assert float(log_expected_count(torch.tensor([0.0]), 3, unique=True)) == 0.0
    zero = log_expected_count(torch.tensor([float("-inf")]), 3, unique=True)
    assert float(zero) == float("-inf")


def test_uniform_can_cover_all_but_one_class():
    ids, tries = bigvocab.create_sampler("uniform", 50).sample_unique(49)
    assert torch.unique(ids).numel() == 49 and tries >= 49


def test_impossible_requests_are_refused(monkeypatch):
    with pytest.raises(ConfigError, match="distinct ids from 5"):
        bigvocab.create_sampler("uniform", 5).sample_unique(6)
    monkeypatch.setattr(sampler_base, "MAX_UNIQUE_DRAWS", 1024)
    sparse = bigvocab.create_sampler("unigram", 10, counts=[5, 1] + [0] * 8)
    with pytest.raises(ConfigError, match="found only 2 distinct ids"):
        sparse.sample_unique(3)


def test_inclusion_probabilities_with_replacement_are_the_at_least_once_form(zipf_counts):
    sampler = bigvocab.create_sampler("unigram", 60, counts=zipf_counts)
    q = sampler.log_q(torch.arange(60)).double().exp()
    torch.testing.assert_close(inclusion_probabilities(sampler, 20, unique=False), 1 - (1 - q) ** 20)


@pytest.mark.parametrize("k", [1, 7, 59])
def test_unique_inclusion_probabilities_sum_to_k(zipf_counts, k):
    sampler = bigvocab.create_sampler("unigram", 60, counts=zipf_counts)
    inclusion = inclusion_probabilities(sampler, k, unique=True)
    assert float(inclusion.sum()) == pytest.approx(k, rel=1e-9)
    assert bool(((inclusion >= 0) & (inclusion <= 1)).all())


def test_unique_inclusion_refuses_more_ids_than_the_proposal_reaches(monkeypatch):
    monkeypatch.setattr(sampler_base, "MAX_UNIQUE_DRAWS", 1024)
    sparse = bigvocab.create_sampler("unigram", 10, counts=[5, 1] + [0] * 8)
    with pytest.raises(ConfigError, match="3 distinct ids are not expected within 1024 draws"):
        inclusion_probabilities(sparse, 3, unique=True)
