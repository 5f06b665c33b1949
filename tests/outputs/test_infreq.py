"""Infrequent normalisation (Andreas & Klein 2015): the penalty on a random fraction γ of the
batch, scaled so that its expectation is self-normalisation's α log²Z."""

from __future__ import annotations

import math

import pytest
import torch

import bigvocab
from bigvocab.errors import ConfigError

V, H, N = 40, 5, 10


def layer_with_offset(**options):
    torch.manual_seed(0)
    layer = bigvocab.create_output("infreq", H, V, **options).double()
    with torch.no_grad():
        layer.bias.normal_(2.0, 1.0)
    return layer


def log_normaliser(layer, hidden):
    return torch.logsumexp(hidden @ layer.weight.t() + layer.bias, dim=1)


def test_penalty_lands_on_the_chosen_examples_with_weight_alpha_over_gamma():
    """γ = 0.3, N = 10: m = 3 examples carry (α N / m) log²Z = (α / γ) log²Z; the others only -s_t."""
    layer = layer_with_offset(alpha=0.2, gamma=0.3)
    hidden, target = torch.randn(N, H, dtype=torch.float64), torch.randint(0, V, (N,))
    torch.manual_seed(7)
    ours = layer.loss(hidden, target, reduction="none").detach()
    torch.manual_seed(7)
    chosen = torch.randperm(N)[:3]
    score = (hidden @ layer.weight.t() + layer.bias).gather(1, target[:, None]).squeeze(1).detach()
    expected = -score
    expected[chosen] += (0.2 / 0.3) * log_normaliser(layer, hidden[chosen]).detach() ** 2
    torch.testing.assert_close(ours, expected)


def test_gradient_matches_dense_reference():
    layer = layer_with_offset(alpha=0.5, gamma=0.5)
    hidden = torch.randn(N, H, dtype=torch.float64, requires_grad=True)
    target = torch.randint(0, V, (N,))
    torch.manual_seed(3)
    ours = layer.loss(hidden, target, reduction="sum")
    torch.manual_seed(3)
    chosen = torch.randperm(N)[:5]
    logits = hidden @ layer.weight.t() + layer.bias
    reference = -logits.gather(1, target[:, None]).sum() + (0.5 / 0.5) * (torch.logsumexp(logits[chosen], 1) ** 2).sum()
    params = [hidden, layer.weight, layer.bias]
    for got, want in zip(torch.autograd.grad(ours, params), torch.autograd.grad(reference, params)):
        torch.testing.assert_close(got, want)


def test_expected_penalty_is_selfnorms():
    """Over R = 400 draws each example is penalised Binomial(R, m/N) times, m = round(γN) = 2,
    always with the same value (α N / m) log²Z_n; so the mean penalty is α log²Z_n times
    hits / (R m / N). Per example |z| of the hit count < 4.5 (two-sided 7e-6, family 7e-5),
    i.e. the average matches selfnorm's α log²Z_n within 4.5 sqrt((1 - p) / (R p))."""
    alpha, gamma, repetitions = 0.1, 0.2, 400
    layer = layer_with_offset(alpha=alpha, gamma=gamma)
    selfnorm = bigvocab.create_output("selfnorm", H, V, alpha=alpha).double()
    selfnorm.load_state_dict(layer.state_dict())
    hidden, target = torch.randn(N, H, dtype=torch.float64), torch.randint(0, V, (N,))
    with torch.no_grad():
        score = selfnorm.score(hidden, target)
        log_z = log_normaliser(layer, hidden)
        selfnorm_penalty = selfnorm.loss(hidden, target, reduction="none") - (log_z - score)
        torch.manual_seed(1)
        penalties = torch.stack([layer.loss(hidden, target, reduction="none") + score for _ in range(repetitions)])
    torch.testing.assert_close(selfnorm_penalty, alpha * log_z**2)
    p = 2 / N
    hits = (penalties > 0).sum(0).double()
    nonzero = penalties.clamp(min=0).max(0).values
    torch.testing.assert_close(nonzero, (alpha / p) * log_z**2)
    z = (hits - repetitions * p) / math.sqrt(repetitions * p * (1 - p))
    assert bool((z.abs() < 4.5).all()), z
    mean_penalty = penalties.mean(0)
    tolerance = 4.5 * math.sqrt((1 - p) / (repetitions * p))
    assert bool(((mean_penalty / selfnorm_penalty - 1).abs() < tolerance).all())


def test_gamma_one_is_self_normalisation_without_log_z_in_the_likelihood():
    layer = layer_with_offset(alpha=0.3, gamma=1.0)
    hidden, target = torch.randn(N, H, dtype=torch.float64), torch.randint(0, V, (N,))
    logits = hidden @ layer.weight.t() + layer.bias
    expected = -logits.gather(1, target[:, None]).squeeze(1) + 0.3 * torch.logsumexp(logits, 1) ** 2
    torch.testing.assert_close(layer.loss(hidden, target, reduction="none"), expected)


def test_at_least_one_example_is_normalised_and_options_checked():
    layer = layer_with_offset(alpha=0.1, gamma=0.01)
    hidden, target = torch.randn(3, H, dtype=torch.float64), torch.randint(0, V, (3,))
    penalised = layer.loss(hidden, target, reduction="none") + layer.score(hidden, target)
    assert int((penalised > 0).sum()) == 1
    for gamma in (0.0, 1.5):
        with pytest.raises(ConfigError, match="gamma"):
            bigvocab.create_output("infreq", H, V, gamma=gamma)
