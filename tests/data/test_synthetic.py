"""The synthetic language: exact entropy, exact sampler, ids sorted by probability, determinism."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from bigvocab.data.synthetic import SyntheticLanguage, inverse_cdf, offset_cdfs, walk_chain
from bigvocab.errors import ConfigError


def naive_walk(transition: np.ndarray, start: int, u: np.ndarray) -> np.ndarray:
    """One step at a time: the first state whose cumulative probability exceeds u_t."""
    out, state = [], start
    for ut in u:
        state = int(np.searchsorted(np.cumsum(transition[state]), ut, side="right"))
        state = min(state, len(transition) - 1)
        out.append(state)
    return np.array(out)


def chain_cdf(transition: np.ndarray) -> np.ndarray:
    k = len(transition)
    return offset_cdfs(transition.reshape(-1), np.arange(k + 1) * k)


@pytest.mark.parametrize("block", [None, 1, 7, 64, 10_000])
@pytest.mark.parametrize("mixing", ["fast", "slow"])
def test_walk_chain_equals_the_sequential_walk(block, mixing):
    rng = np.random.default_rng(0)
    k = 5
    if mixing == "fast":
        transition = rng.dirichlet(np.full(k, 0.5), size=k)
    else:  # nearly a cyclic permutation: walks rarely coalesce, forcing many correction rounds
        transition = 0.97 * np.roll(np.eye(k), 1, axis=1) + 0.03 * rng.dirichlet(np.ones(k), size=k)
    u = rng.random(997)
    expected = naive_walk(transition, 3, u)
    assert np.array_equal(walk_chain(chain_cdf(transition), k, 3, u, block), expected)


def test_inverse_cdf_matches_per_segment_search_sorted_and_unsorted():
    rng = np.random.default_rng(1)
    sizes = np.array([1, 4, 2, 9])
    starts = np.concatenate([[0], np.cumsum(sizes)])
    probs = np.concatenate([rng.dirichlet(np.ones(n)) for n in sizes])
    cdf = offset_cdfs(probs, starts)
    for n in (100, 40_000):  # below and above the sorted-search threshold
        segment = rng.integers(0, len(sizes), size=n)
        u = rng.random(n)
        got = inverse_cdf(cdf, starts, segment, u)
        expected = [
            starts[g] + min(np.searchsorted(np.cumsum(probs[starts[g] : starts[g + 1]]), x, side="right"), sizes[g] - 1)
            for g, x in zip(segment, u)
        ]
        assert np.array_equal(got, expected)


def brute_force_entropy(lang: SyntheticLanguage) -> float:
    """-sum_{w, w'} u(w) p(w' | w) log p(w' | w), over every word pair."""
    v = lang.vocab_size
    prev = torch.arange(v).repeat_interleave(v)
    nxt = torch.arange(v).repeat(v)
    log_p = lang.log_prob(prev, nxt).reshape(v, v)
    assert torch.allclose(log_p.exp().sum(1), torch.ones(v, dtype=torch.float64))
    p = log_p.exp()
    return float(-(lang.unigram[:, None] * torch.where(p > 0, p * log_p, 0.0)).sum())


@pytest.mark.parametrize("zipf, concentration", [(1.0, 0.1), (0.0, 1.0), (1.5, 5.0), (1.0, 0.01)])
def test_entropy_matches_the_brute_force_double_sum(zipf, concentration):
    lang = SyntheticLanguage(40, 6, zipf=zipf, concentration=concentration, seed=3)
    assert lang.entropy() == pytest.approx(brute_force_entropy(lang), rel=1e-12)
    assert lang.floor_perplexity() == pytest.approx(math.exp(lang.entropy()), rel=1e-12)


def test_structure_of_the_language():
    lang = SyntheticLanguage(300, 12, seed=5)
    t, prior, classes = lang.transition, lang.class_prior, lang.word_class
    assert torch.allclose(t.sum(1), torch.ones(12, dtype=torch.float64))
    assert torch.allclose(prior @ t, prior, atol=1e-14)
    sizes = torch.bincount(classes, minlength=12)
    assert (sizes >= 1).all() and sizes.max() > 2 * sizes.min()  # classes of varied sizes
    per_class = torch.zeros(12, dtype=torch.float64).index_add_(0, classes, lang.emission)
    assert torch.allclose(per_class, torch.ones(12, dtype=torch.float64))
    assert torch.allclose(lang.unigram, prior[classes] * lang.emission)
    assert (lang.unigram[1:] <= lang.unigram[:-1]).all()  # ids sorted by probability
    assert lang.unigram.sum().item() == pytest.approx(1.0, abs=1e-12)
    assert lang.words[:3] == ["w0", "w1", "w2"] and len(lang.words) == 300


def batch_means(values: torch.Tensor, batches: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and standard error of the mean of a stationary, fast-mixing series.

    Consecutive tokens are dependent (through the class chain), so the naive std/sqrt(n) would
    understate the error. The means of long batches are nearly independent (the chain mixes in a
    few steps, batches hold thousands), so their spread / sqrt(batches) estimates the error of the
    overall mean including the autocorrelation. ``values`` is (n,) or (n, d)."""
    grouped = values[: len(values) // batches * batches].reshape(batches, -1, *values.shape[1:]).double()
    means = grouped.mean(1)
    return means.mean(0), means.std(0) / math.sqrt(batches)


def test_monte_carlo_entropy_agrees_with_the_exact_value():
    lang = SyntheticLanguage(2000, 20, seed=11)
    ids = lang.sample(400_000, torch.Generator().manual_seed(1))
    nll = -lang.log_prob(ids[:-1], ids[1:])
    mean, stderr = batch_means(nll, 100)
    # 5 standard errors: a false alarm has probability below 1e-5 even with the t(99) spread.
    assert abs(mean.item() - lang.entropy()) < 5 * stderr.item()
    assert stderr.item() < 0.01  # the test has power: a 0.05-nat error in H would be caught


def test_empirical_unigram_matches_the_stationary_distribution():
    lang = SyntheticLanguage(500, 10, seed=2)
    ids = lang.sample(400_000, torch.Generator().manual_seed(2))
    # Bins: the 20 most probable words one by one, then the rest in 10 slices of equal mass.
    rest_mass = torch.cumsum(lang.unigram[20:], 0) / lang.unigram[20:].sum()
    bin_of = torch.cat([torch.arange(20), 20 + torch.clamp((rest_mass * 10).ceil().long() - 1, 0, 9)])
    expected = torch.zeros(30, dtype=torch.float64).index_add_(0, bin_of, lang.unigram)
    one_hot = torch.nn.functional.one_hot(bin_of[ids], 30)
    mean, stderr = batch_means(one_hot, 40)
    z = (mean - expected) / stderr
    # 30 bins at 5 standard errors each: family-wise false-alarm probability below 1e-3 with t(39).
    assert z.abs().max() < 5, z
    # Total variation over single words: E|f_w - p_w| <= sd(f_w) = sqrt(tau p_w (1 - p_w) / n), with
    # tau the variance inflation of the chain (batch means measure 1 to 3.5 on the top words; 10
    # is taken), so E[TV] <= 0.5 sum_w sqrt(10 p_w / n) = 0.034. TV is a sum of 500 small nearly
    # independent terms, so it sits close to its mean (about 0.011 for tau = 1.5).
    freq = torch.bincount(ids, minlength=500).double() / len(ids)
    bound = 0.5 * torch.sqrt(10 * lang.unigram / len(ids)).sum()
    assert 0.5 * (freq - lang.unigram).abs().sum() < bound


def test_class_transitions_match_the_matrix():
    lang = SyntheticLanguage(30, 3, concentration=1.0, seed=4)
    classes = lang.word_class[lang.sample(200_000, torch.Generator().manual_seed(3))]
    counts = torch.zeros(3, 3, dtype=torch.float64).index_put_(
        (classes[:-1], classes[1:]), torch.ones(len(classes) - 1, dtype=torch.float64), accumulate=True
    )
    visits = counts.sum(1, keepdim=True)
    t = lang.transition
    # Given the visits to c, its successors are independent draws from T[c, .]: binomial cells.
    z = (counts - visits * t) / torch.sqrt(visits * t * (1 - t))
    assert z.abs().max() < 5, z


def test_determinism_by_seed():
    a, b, c = SyntheticLanguage(200, 5, seed=7), SyntheticLanguage(200, 5, seed=7), SyntheticLanguage(200, 5, seed=8)
    assert torch.equal(a.word_class, b.word_class) and torch.equal(a.transition, b.transition)
    assert not torch.equal(a.transition, c.transition)
    first = a.sample(1000)
    assert torch.equal(first, b.sample(1000))
    assert not torch.equal(first, a.sample(1000))  # the default stream advances
    assert torch.equal(a.sample(500, a.stream_generator(4)), b.sample(500, b.stream_generator(4)))
    assert not torch.equal(a.sample(500, a.stream_generator(4)), a.sample(500, a.stream_generator(5)))


def test_sample_sizes_and_range():
    lang = SyntheticLanguage(50, 4, seed=0)
    assert lang.sample(0).shape == (0,)
    ids = lang.sample(12345)
    assert ids.dtype == torch.long and ids.shape == (12345,)
    assert 0 <= ids.min() and ids.max() < 50


def test_sample_is_the_exact_chain_across_chunks(monkeypatch):
    # Rebuild a sample from the same uniforms with brute-force references (a Python loop over
    # steps for the classes, a per-class CDF search for the words), with chunks of 100 so that the
    # state must carry over every seam (and the last chunk is partial).
    import bigvocab.data.synthetic as synthetic

    monkeypatch.setattr(synthetic, "CHUNK", 100)
    lang = SyntheticLanguage(40, 4, concentration=0.3, seed=1)
    ids = lang.sample(950, torch.Generator().manual_seed(9))
    g = torch.Generator().manual_seed(9)
    first_u = torch.rand(1, generator=g, dtype=torch.float64).item()
    start = int(np.searchsorted(np.cumsum(lang.class_prior.numpy()), first_u))
    class_u, word_u = [], []
    for n in [100] * 9 + [50]:
        class_u.append(torch.rand(n, generator=g, dtype=torch.float64))
        word_u.append(torch.rand(n, generator=g, dtype=torch.float64))
    classes = naive_walk(lang.transition.numpy(), start, torch.cat(class_u).numpy())
    assert np.array_equal(lang.word_class[ids].numpy(), classes)
    for word, c, u in zip(ids.tolist(), classes, torch.cat(word_u).tolist()):
        members = torch.nonzero(lang.word_class == int(c)).flatten()  # ascending id = descending emission
        cdf = torch.cumsum(lang.emission[members], 0)
        assert word == members[min(int(torch.searchsorted(cdf, u, right=True)), len(members) - 1)]


def test_two_million_words():
    lang = SyntheticLanguage(2_000_000, 50, seed=0)
    ids = lang.sample(1_000_000)
    assert ids.max() < 2_000_000
    assert (lang.unigram[1:] <= lang.unigram[:-1]).all()
    assert 0 < lang.entropy() < math.log(2_000_000)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"vocab_size": 0}, "vocab_size"),
        ({"vocab_size": 10, "num_classes": 11}, "num_classes=11 exceeds"),
        ({"num_classes": 0}, "num_classes"),
        ({"zipf": -1.0}, "zipf"),
        ({"zipf": float("nan")}, "zipf"),
        ({"concentration": 0.0}, "concentration"),
        ({"seed": -1}, "seed"),
        ({"vocab_size": 100, "num_classes": 100, "concentration": 1e-5}, "cannot reach every class"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        SyntheticLanguage(**kwargs)
