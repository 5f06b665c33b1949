"""The adaptive bigram proposal (Bengio & Senécal 2008): exact mixture probabilities against a
dense brute-force table, sparse storage, deferred merges, and mixture weights that move towards
the model they track."""

from __future__ import annotations

import math

import pytest
import torch

import bigvocab
from bigvocab.errors import ConfigError

V = 12


def stream() -> torch.Tensor:
    generator = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, V, (400,), generator=generator)
    tokens[1::3] = (tokens[0::3][: tokens[1::3].numel()] + 1) % V  # a strong successor pattern
    tokens[tokens == 11] = 10  # class 11 never occurs, so context 11 is unseen
    return tokens


def dense_pairs(tokens: torch.Tensor) -> torch.Tensor:
    """n(c, w) as a dense (V, V) table."""
    pairs = torch.zeros(V, V, dtype=torch.float64)
    pairs.index_put_((tokens[:-1], tokens[1:]), torch.ones(tokens.numel() - 1, dtype=torch.float64), accumulate=True)
    return pairs


def dense_reference(sampler, tokens: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Q(w | c) for every (c, w) from a dense V x V count table, (V, V)."""
    pairs = dense_pairs(tokens)
    totals = pairs.sum(1, keepdim=True)
    bigram = pairs / totals.clamp(min=1)
    unigram = counts / counts.sum()
    bucket = torch.where(
        totals.squeeze(1) > 0, torch.floor(torch.log2(totals.squeeze(1).clamp(min=1)) / 2).long() + 1, 0
    )
    weight = torch.sigmoid(sampler.mixture_logits[bucket.clamp(max=sampler.num_buckets - 1)])
    weight = torch.where(totals.squeeze(1) > 0, weight, 0.0).unsqueeze(1)
    return weight * bigram + (1 - weight) * unigram


@pytest.fixture
def counts():
    return torch.arange(V, 0, -1, dtype=torch.float64)


def test_log_q_matches_dense_mixture(counts):
    sampler = bigvocab.create_sampler("bigram", V, counts=counts, initial_weight=0.7)
    tokens = stream()
    sampler.fit(tokens)
    reference = dense_reference(sampler, tokens, counts)
    ids = torch.arange(V).expand(V, V)
    ours = sampler.log_q(ids, context=torch.arange(V)).double().exp()
    torch.testing.assert_close(ours, reference, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(ours.sum(1), torch.ones(V, dtype=torch.float64), atol=1e-6, rtol=0)


def test_unseen_context_and_no_context_give_the_unigram(counts):
    sampler = bigvocab.create_sampler("bigram", V, counts=counts)
    sampler.fit(stream())
    unigram = (counts / counts.sum()).float()
    torch.testing.assert_close(sampler.log_q(torch.arange(V), context=torch.full((V,), 11)).exp(), unigram)
    torch.testing.assert_close(sampler.log_q(torch.arange(V)).exp(), unigram)
    assert float(sampler.mixture_weight(torch.tensor([11]))) == 0.0


def test_conditional_draws(counts, goodness_of_fit, alpha):
    """Chi-square of 30,000 draws given context 3 against the dense reference row."""
    sampler = bigvocab.create_sampler("bigram", V, counts=counts)
    tokens = stream()
    sampler.fit(tokens)
    torch.manual_seed(8)
    draws = sampler.sample(30_000, context=torch.tensor([3]))
    assert goodness_of_fit(draws, dense_reference(sampler, tokens, counts)[3]) > alpha


def test_storage_is_sparse():
    sampler = bigvocab.create_sampler("bigram", 1_000_000)
    tokens = torch.randint(0, 1_000_000, (5000,), generator=torch.Generator().manual_seed(1))
    sampler.fit(tokens)
    distinct = torch.unique(tokens[:-1] * 1_000_000 + tokens[1:]).numel()
    assert sampler.num_bigrams == distinct
    assert sampler.keys.numel() == sampler.cumulative.numel() == distinct
    row = sampler.log_q(torch.arange(1_000_000), context=tokens[:1].expand(1_000_000)).double().exp().sum()
    assert abs(float(row) - 1) < 1e-5


def test_updates_wait_for_the_merge_and_checkpoint_includes_them(counts):
    sampler = bigvocab.create_sampler("bigram", V, counts=counts, refresh=10.0)
    sampler.fit(torch.tensor([0, 1, 0, 1]))
    before = sampler.log_q(torch.arange(V), context=torch.zeros(V, dtype=torch.long))
    sampler.update(torch.tensor([2, 2, 2]), context=torch.tensor([0, 0, 0]))
    torch.testing.assert_close(sampler.log_q(torch.arange(V), context=torch.zeros(V, dtype=torch.long)), before)
    state = sampler.state_dict()  # merges first, so nothing pending is lost
    fresh = bigvocab.create_sampler("bigram", V, counts=counts, refresh=10.0)
    fresh.load_state_dict(state)
    assert fresh.num_bigrams == sampler.num_bigrams == 3  # (0,1), (1,0), (0,2)
    row = fresh.log_q(torch.arange(V), context=torch.zeros(V, dtype=torch.long)).double().exp()
    weight = float(fresh.mixture_weight(torch.tensor([0])))
    unigram = counts / counts.sum()
    assert float(row[2]) == pytest.approx(weight * 3 / 5 + (1 - weight) * float(unigram[2]), rel=1e-6)


def test_learned_unigram_without_counts():
    sampler = bigvocab.create_sampler("bigram", V)
    assert isinstance(sampler.unigram, bigvocab.samplers.LearnedSampler)
    sampler.fit(stream())
    assert float(sampler.unigram.mass) == pytest.approx(V + 400)


@pytest.mark.parametrize("model_is_bigram", [True, False])
def test_mixture_weight_moves_towards_the_model(counts, model_is_bigram):
    """If the network's distribution equals the bigram row, minimising CE(P, Q) pushes λ up; if it
    equals the unigram, down. Samples and weights are what the ais layer would pass."""
    sampler = bigvocab.create_sampler("bigram", V, counts=counts, mixture_rate=0.5, refresh=1e9)
    sampler.fit(stream())
    context = torch.full((32,), 3)
    start = float(sampler.mixture_weight(context[:1]))
    torch.manual_seed(0)
    bigram_row = dense_pairs(stream())[3] / dense_pairs(stream())[3].sum()
    model = bigram_row if model_is_bigram else counts / counts.sum()
    for _ in range(20):
        samples = sampler.sample(16, context=context)
        log_weights = model.log()[samples] - sampler.log_q(samples, context=context).double()
        sampler.update(torch.zeros(32, dtype=torch.long), context=context, samples=samples, log_weights=log_weights)
    end = float(sampler.mixture_weight(context[:1]))
    assert (end > start + 0.05) if model_is_bigram else (end < start - 0.05)


def test_bad_options():
    with pytest.raises(ConfigError, match="initial_weight"):
        bigvocab.create_sampler("bigram", V, initial_weight=1.0)
    with pytest.raises(ConfigError, match="num_buckets"):
        bigvocab.create_sampler("bigram", V, num_buckets=1)
    with pytest.raises(ConfigError, match="mixture_rate"):
        bigvocab.create_sampler("bigram", V, mixture_rate=-1)
    assert math.isfinite(
        float(bigvocab.create_sampler("bigram", V).log_q(torch.tensor([0]), context=torch.tensor([1])))
    )
