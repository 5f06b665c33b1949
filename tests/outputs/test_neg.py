"""Negative sampling: the word2vec objective by a brute-force loop, word2vec's update rule, and
its defaults (k = 5 negatives per pair from unigram^0.75, skipping the target)."""

from __future__ import annotations

import math

import pytest
import torch

import bigvocab
from bigvocab.errors import ConfigError
from bigvocab.outputs.scorers.base import Scorer

V, H, N = 25, 4, 6


def zipf_counts(size: int) -> list[float]:
    return [1000.0 / (i + 1) for i in range(size)]


def skip_gram_layer(**options):
    torch.manual_seed(0)
    return bigvocab.create_output("neg", H, V, counts=zipf_counts(V), bias=False, zero_init=False, **options)


def replay_negatives(layer, seed: int):
    torch.manual_seed(seed)
    k = layer.num_samples
    return layer.sampler.sample(k) if layer.shared else layer.sampler.sample(N * k).reshape(N, k)


@pytest.mark.parametrize("options", [{}, {"shared": True, "num_samples": 8}, {"remove_accidental_hits": False}])
def test_loss_is_the_word2vec_objective(options):
    """-log σ(v_c · u_t) - Σ_j log σ(-v_c · u_{y_j}) summed over negatives y_j != t, per pair."""
    layer = skip_gram_layer(**options)
    centre, context = torch.randn(N, H), torch.tensor([0, 0, 1, 1, 2, 3])  # frequent: hits happen
    torch.manual_seed(4)
    ours = layer.loss(centre, context, reduction="none")
    negatives = replay_negatives(layer, 4)
    hits = 0
    for n in range(N):
        row = negatives if negatives.dim() == 1 else negatives[n]
        score = float(centre[n] @ layer.weight[context[n]])
        expected = math.log1p(math.exp(-score))
        for y in row.tolist():
            if layer.remove_accidental_hits and y == int(context[n]):
                hits += 1
                continue
            expected += math.log1p(math.exp(float(centre[n] @ layer.weight[y])))
        assert float(ours[n]) == pytest.approx(expected, rel=1e-5)
    assert hits > 0 or not layer.remove_accidental_hits


def test_gradient_is_word2vecs_update():
    """word2vec (and gensim's train_sg_pair) update with g = (label - σ(v·u)): u += lr g v for the
    target (label 1) and each negative (label 0), and v += lr Σ g u. One SGD step of rate lr on the
    summed loss must do the same, negatives repeated in the list counting once per draw."""
    layer = skip_gram_layer()
    centre, context = torch.randn(N, H), torch.tensor([3, 4, 5, 6, 7, 8])
    hidden = centre.clone().requires_grad_(True)
    torch.manual_seed(9)
    layer.loss(hidden, context, reduction="sum").backward()
    negatives = replay_negatives(layer, 9)
    weight = layer.weight.detach()
    grad_out = torch.zeros(V, H)
    grad_in = torch.zeros(N, H)
    for n in range(N):
        pairs = [(int(context[n]), 1.0)] + [(int(y), 0.0) for y in negatives[n] if int(y) != int(context[n])]
        for word, label in pairs:
            g = label - torch.sigmoid(centre[n] @ weight[word])
            grad_out[word] -= g * centre[n]
            grad_in[n] -= g * weight[word]
    torch.testing.assert_close(layer.weight.grad.to_dense(), grad_out, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(hidden.grad, grad_in, atol=1e-6, rtol=1e-5)


def test_word2vec_defaults():
    layer = bigvocab.create_output("neg", H, V, counts=zipf_counts(V))
    assert layer.num_samples == 5 and layer.shared is False and layer.remove_accidental_hits is True
    assert layer.sampler.power == 0.75
    weights = torch.tensor(zipf_counts(V), dtype=torch.float64) ** 0.75
    torch.testing.assert_close(
        layer.sampler.log_q(torch.arange(V)).double().exp(), weights / weights.sum(), rtol=1e-6, atol=0
    )
    negatives_shape = layer._draw(N)[0].shape
    assert negatives_shape == (N, 5)


def test_zero_init_over_a_scorer_without_free_rows_names_it():
    class UnregisteredScorer(Scorer):
        pass

    with pytest.raises(ConfigError, match="'UnregisteredScorer' scorer has no free output rows"):
        bigvocab.create_output("neg", H, V, counts=zipf_counts(V), scorer=UnregisteredScorer(H, V), zero_init=True)
