"""Sampled softmax: the loss against a brute-force loop over the drawn candidates, exactness when
the candidates cover the vocabulary, and gradients that approach the exact softmax gradient as k
grows."""

from __future__ import annotations

import math

import pytest
import torch
from reference_checks import assert_mean_exceeds

import bigvocab
from bigvocab.errors import ConfigError

V, H, N = 30, 4, 6


def zipf_counts(size: int) -> list[float]:
    return [1000.0 / (i + 1) for i in range(size)]


def brute_force(layer, hidden, target, sampled, tries, unique):
    """Per example: softmax over [target] + candidates, each logit minus log(expected count)."""
    q = layer.sampler.log_q(torch.arange(V)).double().exp()
    weight, bias = layer.weight.double(), layer.bias.double()
    losses = []
    for n in range(hidden.shape[0]):
        row = sampled if sampled.dim() == 1 else sampled[n]
        t = int(target[n])
        ids = [t] + [int(y) for y in row if not (layer.remove_accidental_hits and int(y) == t)]
        logits = []
        for i in ids:
            count = 1 - (1 - float(q[i])) ** tries if unique else tries * float(q[i])
            logits.append(float(hidden[n].double() @ weight[i] + bias[i]) - math.log(count))
        logits = torch.tensor(logits, dtype=torch.float64)
        losses.append(float(torch.logsumexp(logits, 0) - logits[0]))
    return torch.tensor(losses, dtype=torch.float64)


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"unique": False},
        {"shared": False},
        {"remove_accidental_hits": False},
        {"unique": False, "remove_accidental_hits": False},
    ],
)
def test_loss_matches_brute_force(options):
    torch.manual_seed(0)
    layer = bigvocab.create_output("sampled", H, V, counts=zipf_counts(V), num_samples=10, **options)
    with torch.no_grad():
        layer.bias.normal_()
    hidden, target = torch.randn(N, H), torch.tensor([0, 0, 1, 2, 7, 29])
    torch.manual_seed(5)
    ours = layer.loss(hidden, target, reduction="none")
    torch.manual_seed(5)  # the layer's first random call is its draw: replay it
    if layer.unique:
        sampled, tries = layer.sampler.sample_unique(10)
    elif layer.shared:
        sampled, tries = layer.sampler.sample(10), 10
    else:
        sampled, tries = layer.sampler.sample(N * 10).reshape(N, 10), 10
    assert (layer.remove_accidental_hits is False) or bool((sampled.reshape(-1) < 3).any())  # hits occur
    torch.testing.assert_close(
        ours.double(), brute_force(layer, hidden, target, sampled, tries, layer.unique), atol=1e-5, rtol=1e-5
    )


def full_gradient(layer, hidden, target):
    layer.zero_grad()
    hidden = hidden.clone().requires_grad_(True)
    layer.loss(hidden, target).backward()
    return torch.cat([layer.weight.grad.to_dense().flatten(), layer.bias.grad.to_dense(), hidden.grad.flatten()])


def test_exact_when_candidates_cover_every_class():
    """With every class drawn exactly once and a uniform proposal, the corrections are one
    constant, the accidental hit removes the target's second copy, and the candidate softmax is
    the full softmax: loss and gradients equal ``full``'s."""
    torch.manual_seed(0)
    full = bigvocab.create_output("full", H, V)
    layer = bigvocab.create_output("sampled", H, V, sampler="uniform", num_samples=V - 1)
    layer.load_state_dict(full.state_dict())
    layer._draw = lambda batch_size, unique=False: (torch.randperm(V), V)
    hidden, target = torch.randn(N, H), torch.randint(0, V, (N,))
    torch.testing.assert_close(
        layer.loss(hidden, target, reduction="none"), full.loss(hidden, target, reduction="none")
    )
    torch.testing.assert_close(full_gradient(layer, hidden, target), full_gradient(full, hidden, target))


def cosine_to_exact(k: int, repetitions: int, num_classes: int = 512) -> torch.Tensor:
    """Cosine between the sampled-softmax gradient (weight, bias, hidden; unigram proposal with
    log-Q correction, shared samples with replacement) and the exact one, per repetition."""
    generator = torch.Generator().manual_seed(0)
    counts = zipf_counts(num_classes)
    full = bigvocab.create_output("full", 16, num_classes)
    layer = bigvocab.create_output("sampled", 16, num_classes, counts=counts, num_samples=k, unique=False)
    with torch.no_grad():
        full.weight.normal_(generator=generator)
        full.bias.copy_(torch.tensor(counts).log())
    layer.load_state_dict(full.state_dict(), strict=False)  # the sampler keeps its own state
    hidden = torch.randn(8, 16, generator=generator) * 0.3
    target = torch.multinomial(torch.tensor(counts), 8, replacement=True, generator=generator)
    exact = full_gradient(full, hidden, target)
    torch.manual_seed(k)
    return torch.stack(
        [
            torch.nn.functional.cosine_similarity(full_gradient(layer, hidden, target), exact, dim=0)
            for _ in range(repetitions)
        ]
    )


def test_gradient_approaches_the_exact_gradient_as_k_grows():
    """Mean cosine over 30 independent repetitions must rise from k = 16 to 64 to 256 (V = 512).
    Each step is a two-sample comparison of means: the rise must exceed 4 standard errors of the
    difference, sqrt(var_a / R + var_b / R) (one-sided normal tail 3e-5 if the means were equal),
    and the largest k must be close to exact (the SNIS bias and variance shrink like 1/k)."""
    repetitions = 30
    cosines = {k: cosine_to_exact(k, repetitions) for k in (16, 64, 256)}
    for small, large in ((16, 64), (64, 256)):
        a, b = cosines[small], cosines[large]
        assert_mean_exceeds(b, a, 4, (small, large, float(a.mean()), float(b.mean())))
    assert float(cosines[256].mean()) > 0.9


def test_default_sampler_and_options():
    assert type(bigvocab.create_output("sampled", H, V).sampler).registered_name == "log_uniform"
    assert type(bigvocab.create_output("sampled", H, V, counts=zipf_counts(V)).sampler).registered_name == "unigram"
    per_example = bigvocab.create_output("sampled", H, V, shared=False)
    assert per_example.unique is False
    with pytest.raises(ConfigError, match="needs shared=True"):
        bigvocab.create_output("sampled", H, V, shared=False, unique=True)
    with pytest.raises(ConfigError, match="unconditional sampler"):
        bigvocab.create_output("sampled", H, V, sampler="bigram")
    assert bigvocab.create_output("sampled", H, V, sampler="bigram", unique=False).unique is False
    with pytest.raises(ConfigError, match="remove_accidental_hits must be True or False"):
        bigvocab.create_output("sampled", H, V, remove_accidental_hits="yes")
