"""The log-uniform (Zipfian) sampler: closed-form probabilities and inverse-CDF draws."""

from __future__ import annotations

import math

import torch

import bigvocab


def test_log_q_is_the_closed_form():
    V = 1000
    sampler = bigvocab.create_sampler("log_uniform", V)
    ids = torch.arange(V)
    expected = torch.tensor([math.log((i + 2) / (i + 1)) / math.log(V + 1) for i in range(V)], dtype=torch.float64)
    torch.testing.assert_close(sampler.log_q(ids).double().exp(), expected, rtol=1e-6, atol=0)
    torch.testing.assert_close(sampler.log_q(ids).double().exp().sum(), torch.tensor(1.0, dtype=torch.float64))


def test_head_frequencies_at_a_million_classes():
    """At V = 1e6 the first ids must still get their exact share: id i is drawn with probability
    q_i, so its count in n draws is Binomial(n, q_i); |z| < 4.5 for each of 5 ids bounds the
    family-wise false-alarm rate by 5 * 7e-6."""
    V, n = 1_000_000, 200_000
    sampler = bigvocab.create_sampler("log_uniform", V)
    torch.manual_seed(4)
    draws = sampler.sample(n)
    assert int(draws.min()) >= 0 and int(draws.max()) < V
    q = sampler.log_q(torch.arange(5)).double().exp()
    counts = torch.bincount(draws[draws < 5], minlength=5).double()
    z = (counts - n * q) / (n * q * (1 - q)).sqrt()
    assert bool((z.abs() < 4.5).all()), z


def test_tail_is_reached():
    """P(id >= V/2) = 1 - log(V/2 + 1)/log(V + 1) ~ 5% at V = 1e6: the tail is sampled."""
    V = 1_000_000
    torch.manual_seed(0)
    draws = bigvocab.create_sampler("log_uniform", V).sample(100_000)
    share = float((draws >= V // 2).double().mean())
    expected = 1 - math.log(V // 2 + 1) / math.log(V + 1)
    # Binomial standard error sqrt(p(1-p)/n) ~ 7e-4; 6 of them.
    assert abs(share - expected) < 6 * math.sqrt(expected * (1 - expected) / 100_000)
