"""The Sampler contract over every registered sampler: valid ids, an exact ``log_q`` that sums to
one, draws whose frequencies match exp(log_q) (chi-square at a fixed level), unique draws and
checkpoint round trips. A sampler is tested the moment it is registered."""

from __future__ import annotations

import pytest
import torch

import bigvocab
from bigvocab.errors import ConfigError, UnknownNameError

V = 60


def build(name: str, counts: torch.Tensor) -> bigvocab.Sampler:
    sampler = bigvocab.create_sampler(name, V, counts=counts)
    if name == "bigram":
        # A stream with strong, sparse successor structure so that the bigram part matters.
        generator = torch.Generator().manual_seed(1)
        stream = torch.multinomial(counts / counts.sum(), 3000, replacement=True, generator=generator)
        stream[1::2] = (stream[0::2] * 7 + 3) % V
        sampler.fit(stream)
    if name == "learned":
        sampler.update(torch.randint(0, 5, (500,), generator=torch.Generator().manual_seed(2)))
        sampler.refresh()
    return sampler


@pytest.fixture(params=bigvocab.list_samplers())
def sampler(request, zipf_counts):
    return build(request.param, zipf_counts)


CONTEXTS = torch.tensor([0, 3, 17, 59])


def _contexts(sampler):
    return [None] + ([c.reshape(1) for c in CONTEXTS] if sampler.conditional else [])


def test_all_names_listed():
    assert bigvocab.list_samplers() == ["uniform", "unigram", "log_uniform", "learned", "bigram"]


def test_unknown_name_suggests_closest():
    with pytest.raises(UnknownNameError, match="did you mean 'unigram'"):
        bigvocab.create_sampler("unigam", V)


def test_samples_are_valid_ids(sampler):
    ids = sampler.sample(500)
    assert ids.shape == (500,) and ids.dtype == torch.long
    assert int(ids.min()) >= 0 and int(ids.max()) < V
    if sampler.conditional:
        rows = sampler.sample(7, context=CONTEXTS)
        assert rows.shape == (len(CONTEXTS), 7) and rows.dtype == torch.long
        assert int(rows.min()) >= 0 and int(rows.max()) < V


def test_log_q_sums_to_one(sampler):
    everything = torch.arange(V)
    for context in _contexts(sampler):
        total = sampler.log_q(everything.unsqueeze(0), context=context).double().exp().sum()
        torch.testing.assert_close(total, torch.tensor(1.0, dtype=torch.float64), atol=1e-6, rtol=0)


def test_frequencies_match_exp_log_q(sampler, goodness_of_fit, alpha):
    """Pearson chi-square of 40,000 draws per context against exp(log_q); see conftest."""
    torch.manual_seed(123)
    everything = torch.arange(V)
    for context in _contexts(sampler):
        probs = sampler.log_q(everything.unsqueeze(0), context=context).double().exp().reshape(-1)
        draws = sampler.sample(40_000, context=context)
        assert goodness_of_fit(draws, probs) > alpha


def test_log_q_broadcasts_context_over_trailing_dims(sampler):
    ids = torch.randint(0, V, (len(CONTEXTS), 5))
    rows = sampler.log_q(ids, context=CONTEXTS if sampler.conditional else None)
    assert rows.shape == ids.shape
    if sampler.conditional:
        for i, context in enumerate(CONTEXTS):
            torch.testing.assert_close(rows[i], sampler.log_q(ids[i], context=context.expand(5)))


def test_unique_draws_are_distinct(sampler):
    if sampler.conditional:
        with pytest.raises(ConfigError, match="conditional"):
            sampler.sample_unique(10)
        return
    ids, tries = sampler.sample_unique(25)
    assert ids.shape == (25,) and torch.unique(ids).numel() == 25
    assert tries >= 25


def test_state_dict_round_trip(sampler, zipf_counts):
    name = type(sampler).registered_name
    fresh = bigvocab.create_sampler(name, V, counts=zipf_counts)
    fresh.load_state_dict(sampler.state_dict())
    ids = torch.arange(V).unsqueeze(0).expand(len(CONTEXTS), V)
    context = CONTEXTS if sampler.conditional else None
    torch.testing.assert_close(fresh.log_q(ids, context=context), sampler.log_q(ids, context=context))
    torch.manual_seed(5)
    first = sampler.sample(100)
    torch.manual_seed(5)
    assert torch.equal(fresh.sample(100), first)


def test_chi_square_has_power(goodness_of_fit, alpha):
    """The test above can fail: log-uniform draws are rejected against the uniform law."""
    torch.manual_seed(0)
    draws = bigvocab.create_sampler("log_uniform", V).sample(40_000)
    assert goodness_of_fit(draws, torch.ones(V)) < alpha
