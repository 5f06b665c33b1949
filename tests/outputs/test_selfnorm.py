"""Self-normalisation (Devlin et al. 2014): loss and gradients against a dense reference,
and the fast unnormalised score."""

from __future__ import annotations

import pytest
import torch

import bigvocab
from bigvocab.errors import ConfigError

V, H, N = 40, 5, 6


def dense_reference(layer, hidden, target, alpha):
    logits = hidden @ layer.weight.t() + layer.bias
    log_z = torch.logsumexp(logits, dim=1)
    return log_z - logits.gather(1, target[:, None]).squeeze(1) + alpha * log_z**2


@pytest.mark.parametrize("alpha", [0.1, 1.0])
def test_loss_and_gradients_match_dense_reference(alpha):
    torch.manual_seed(0)
    layer = bigvocab.create_output("selfnorm", H, V, alpha=alpha, max_chunk_elements=7 * N).double()
    with torch.no_grad():
        layer.bias.normal_(2.0, 1.0)  # log Z far from 0, so the penalty matters
    hidden = torch.randn(N, H, dtype=torch.float64, requires_grad=True)
    target = torch.randint(0, V, (N,))
    ours = layer.loss(hidden, target, reduction="none")
    reference = dense_reference(layer, hidden, target, alpha)
    torch.testing.assert_close(ours, reference)
    params = [hidden, layer.weight, layer.bias]
    for got, want in zip(torch.autograd.grad(ours.sum(), params), torch.autograd.grad(reference.sum(), params)):
        torch.testing.assert_close(got, want)


def test_score_is_the_unnormalised_target_logit():
    torch.manual_seed(0)
    layer = bigvocab.create_output("selfnorm", H, V)
    hidden, target = torch.randn(2, 3, H), torch.randint(0, V, (2, 3))
    expected = (hidden @ layer.weight.t() + layer.bias).gather(2, target.unsqueeze(2)).squeeze(2)
    torch.testing.assert_close(layer.score(hidden, target), expected)
    # With log Z = 0 the score is the exact log-probability.
    with torch.no_grad():
        layer.bias -= torch.logsumexp(layer.bias, 0)
        layer.weight.zero_()
    torch.testing.assert_close(layer.score(hidden, target), layer.log_prob(hidden, target))


def test_alpha_is_checked():
    with pytest.raises(ConfigError, match="alpha"):
        bigvocab.create_output("selfnorm", H, V, alpha=-0.1)
