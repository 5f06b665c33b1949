"""The unigram sampler (counts ** power) and its errors."""

from __future__ import annotations

import pytest
import torch

import bigvocab
from bigvocab.errors import ConfigError


@pytest.mark.parametrize("power", [1.0, 0.75, 0.0])
def test_log_q_is_normalised_counts_to_the_power(zipf_counts, power):
    sampler = bigvocab.create_sampler("unigram", 60, counts=zipf_counts, power=power)
    weights = zipf_counts**power
    torch.testing.assert_close(
        sampler.log_q(torch.arange(60)).double().exp(), weights / weights.sum(), rtol=1e-6, atol=0
    )


def test_word2vec_flattening(zipf_counts, goodness_of_fit, alpha):
    torch.manual_seed(3)
    sampler = bigvocab.create_sampler("unigram", 60, counts=zipf_counts, power=0.75)
    assert goodness_of_fit(sampler.sample(50_000), zipf_counts**0.75) > alpha


def test_counts_are_required():
    with pytest.raises(ConfigError, match="needs counts="):
        bigvocab.create_sampler("unigram", 10)


@pytest.mark.parametrize(
    "counts, match",
    [([1, 2, 3], "3 entries"), ([1] * 9 + [-1], "non-negative"), ([0] * 10, "all be zero"), ("abc", "sequence")],
)
def test_bad_counts_are_named(counts, match):
    with pytest.raises(ConfigError, match=match):
        bigvocab.create_sampler("unigram", 10, counts=counts)


@pytest.mark.parametrize("power", [float("inf"), "x"])
def test_bad_power(power):
    with pytest.raises(ConfigError, match="power"):
        bigvocab.create_sampler("unigram", 3, counts=[1, 2, 3], power=power)


def test_negative_power_favours_rare_classes():
    """gensim's ns_exponent=-1: Q(i) proportional to 1 / counts[i]."""
    sampler = bigvocab.create_sampler("unigram", 3, counts=[1, 2, 4], power=-1.0)
    want = torch.tensor([4.0, 2.0, 1.0]) / 7
    torch.testing.assert_close(sampler.log_q(torch.arange(3)).exp().float(), want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ConfigError, match="count 0"):
        bigvocab.create_sampler("unigram", 3, counts=[1, 0, 4], power=-1.0)


def test_zero_counts_never_drawn():
    sampler = bigvocab.create_sampler("unigram", 4, counts=[5, 0, 3, 0])
    assert not torch.isin(sampler.sample(5000), torch.tensor([1, 3])).any()
    assert torch.isinf(sampler.log_q(torch.tensor([1]))).all()
