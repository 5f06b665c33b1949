"""Yi et al.'s streaming frequency estimator against the exact rates of synthetic streams: each id
occurs in each step independently with a known probability, so its gaps are geometric and the
estimator's mean and variance after n gaps are known exactly (the module docstring's formula), or
once per epoch of a stream read in epochs; the tolerances below are those standard deviations,
not tuned. Fixed seeds."""

from __future__ import annotations

import math

import pytest
import torch

from bigvocab.errors import ConfigError
from bigvocab.samplers import StreamingFrequency


def run_stream(estimator: StreamingFrequency, rates: torch.Tensor, seed: int) -> torch.Tensor:
    """Feed steps in which id y occurs with probability rates[step, y]; returns the occurrence
    counts (steps, V) as bools."""
    present = torch.rand(rates.shape, generator=torch.Generator().manual_seed(seed)) < rates
    for row in present:
        estimator.update(row.nonzero().squeeze(1))
    return present


def gap_sd(p: torch.Tensor, occurrences: torch.Tensor, alpha: float) -> torch.Tensor:
    """Standard deviation of B after ``occurrences`` of an id with per-step probability p: the mean
    of the first m = ⌊1/α⌋ gaps, then a moving average at rate α."""
    gaps = (occurrences - 1).double()
    m = math.floor(1 / alpha)
    decay = (1 - alpha) ** (2 * (gaps - m).clamp(min=0))
    variance = torch.where(gaps <= m, 1 / gaps, decay / m + alpha / (2 - alpha) * (1 - decay))
    return torch.sqrt((1 - p) / p**2 * variance)


def z_bound(p: torch.Tensor, alpha: float, z: float = 4.5) -> torch.Tensor:
    """|z| bound of B at the normal 4.5 sigma widened by the Cornish-Fisher term of B's skewness:
    a geometric gap's skewness (2 - p)/sqrt(1 - p) times Σw³ / (Σw²)^1.5 of the average's
    stationary weights α (1 - α)^j (0.21 at α = 0.05), so the bound is 5.9-6.0 here."""
    weights3 = alpha**3 / (1 - (1 - alpha) ** 3)
    weights2 = alpha / (2 - alpha)
    skewness = (2 - p) / torch.sqrt(1 - p) * weights3 / weights2**1.5
    return z + skewness * (z**2 - 1) / 6


@pytest.mark.slow
def test_stationary_rates_are_estimated_within_the_estimators_own_spread():
    """40 ids with rates from 0.05 to 0.6, 4000 steps, α = 0.05: every gap estimate B within
    :func:`z_bound` standard deviations of 1/p, the mean z-score within 4.5 standard errors of 0
    (B is unbiased), the mean squared z-score within 4 standard errors of 1 (sqrt(2/40) for normal
    z), and p̂ = 1/B within the same bound in relative standard deviations of p."""
    alpha = 0.05
    p = torch.linspace(0.05, 0.6, 40, dtype=torch.float64)
    estimator = StreamingFrequency(40, alpha=alpha)
    present = run_stream(estimator, p.expand(4000, -1), seed=3)
    n = present.sum(0)
    z = (estimator.gap[0] - 1 / p) / gap_sd(p, n, alpha)
    assert bool((z.abs() < z_bound(p, alpha)).all()), z
    assert abs(float(z.mean())) < 4.5 / math.sqrt(40)
    assert abs(float(z.square().mean()) - 1) < 4 * math.sqrt(2 / 40), float(z.square().mean())
    relative = (estimator.probability(torch.arange(40)) / p - 1).abs()
    assert bool((relative < z_bound(p, alpha) * gap_sd(p, n, alpha) * p).all()), relative


@pytest.mark.slow
def test_a_drifting_rate_is_followed_where_counting_lags():
    """Ids switch rates halfway (0.1 -> 0.4 and 0.4 -> 0.1, 30 ids each). Just before the switch
    the estimate tracks the old rate; 3000 steps after it (at least ~250 occurrences at the new
    rate, so the old gaps weigh (1 - α)^n < 3e-6) it tracks the new one within the estimator's
    spread, while the exact frequency of the whole stream sits halfway (0.25), more than 3 of the
    estimator's standard deviations from the new rate for every id."""
    alpha = 0.05
    before = torch.tensor([0.1] * 30 + [0.4] * 30, dtype=torch.float64)
    after = before.flip(0)
    estimator = StreamingFrequency(60, alpha=alpha)
    first = run_stream(estimator, before.expand(3000, -1), seed=4)
    z_before = (estimator.gap[0] - 1 / before) / gap_sd(before, first.sum(0), alpha)
    assert bool((z_before.abs() < z_bound(before, alpha)).all()), z_before
    second = run_stream(estimator, after.expand(3000, -1), seed=5)
    n_after = second.sum(0)
    assert int(n_after.min()) > 250
    z_after = (estimator.gap[0] - 1 / after) / gap_sd(after, n_after, alpha)
    assert bool((z_after.abs() < z_bound(after, alpha)).all()), z_after
    for group in (slice(0, 30), slice(30, 60)):  # unbiased: the mean z of 30 ids is N(0, 1/30)
        assert abs(float(z_after[group].mean())) < 4.5 / math.sqrt(30)
    # Counting the whole stream, 1/frequency is 4 standard deviations of the estimator off.
    exact_frequency = torch.cat([first, second]).double().mean(0)
    z_counting = (1 / exact_frequency - 1 / after) / gap_sd(after, n_after, alpha)
    assert float(z_counting.abs().min()) > 3, z_counting


def test_a_step_counts_each_id_once_and_unseen_ids_get_one_over_the_next_step():
    estimator = StreamingFrequency(5, alpha=0.4)
    estimator.update(torch.tensor([3, 3, 3]))  # step 1: first sight, a wait of 1
    estimator.update(torch.tensor([1]))  # step 2: first sight, a wait of 2
    assert estimator.gap[0].tolist() == [0.0, 2.0, 0.0, 1.0, 0.0]
    estimator.update(torch.tensor([3, 1, 3]))  # step 3: the first gaps replace the waits: 2 for 3, 1 for 1
    estimator.update(torch.tensor([3]))  # step 4: id 3's second gap, 1: the plain mean of ⌊1/α⌋ = 2 gaps
    estimator.update(torch.tensor([3]))  # step 5: a third gap, 1, blended at rate α
    assert estimator.gap[0].tolist() == [0.0, 1.0, 0.0, 1.5 + 0.4 * (1 - 1.5), 0.0]
    assert estimator.last_seen[0].tolist() == [0, 3, 0, 5, 0]
    assert estimator.gaps_seen[0].tolist() == [0, 1, 0, 3, 0]
    torch.testing.assert_close(
        estimator.probability(torch.tensor([[1, 0], [2, 4]])),
        torch.tensor([[1.0, 1 / 6], [1 / 6, 1 / 6]], dtype=torch.float64),
    )


def test_a_stream_read_in_epochs_is_estimated_at_its_true_rate():
    """400 ids, each once per epoch of E = 20 steps at a uniformly random step (a training set
    read in a new order each epoch), 6 epochs: the true per-step rate is exactly 1/E. After 5 gaps
    B = E + (U_6 - U_1)/5 for the positions U of the first and last occurrence, so the mean B of
    400 ids has standard deviation sqrt(2 (E² - 1)/12)/5/sqrt(400) = 0.08 around E. Blending the
    wait before the first occurrence (uniform in [1, E], mean 10.5) into B at α = 0.01 would leave
    it at about 11."""
    epoch, ids, epochs = 20, 400, 6
    estimator = StreamingFrequency(ids, alpha=0.01)
    generator = torch.Generator().manual_seed(11)
    for _ in range(epochs):
        for step in torch.randperm(ids, generator=generator).reshape(epoch, -1):
            estimator.update(step)
    gaps = estimator.gap[0]
    assert abs(float(gaps.mean()) - epoch) < 4.5 * math.sqrt(2 * (epoch**2 - 1) / 12) / 5 / math.sqrt(ids)
    assert float(gaps.min()) >= epoch - (epoch - 1) / 5 and float(gaps.max()) <= epoch + (epoch - 1) / 5


def test_hashed_buckets_take_the_largest_gap_over_the_hash_functions():
    estimator = StreamingFrequency(1000, alpha=0.3, buckets=16, num_hashes=3, seed=7)
    generator = torch.Generator().manual_seed(8)
    for _ in range(50):
        estimator.update(torch.randint(0, 1000, (6,), generator=generator))
    ids = torch.arange(0, 1000, 37)
    buckets = estimator.bucket_of(ids)
    assert buckets.shape == (3, ids.numel()) and int(buckets.max()) < 16
    largest = torch.stack([estimator.gap[j, buckets[j]] for j in range(3)]).amax(0)
    seen = torch.stack([estimator.last_seen[j, buckets[j]] > 0 for j in range(3)]).all(0)
    expected = torch.where(seen, 1 / largest, torch.full_like(largest, 1 / 51))
    torch.testing.assert_close(estimator.probability(ids), expected)
    # The hash functions come from the seed, not from the state dict.
    again = StreamingFrequency(1000, alpha=0.3, buckets=16, num_hashes=3, seed=7)
    again.load_state_dict(estimator.state_dict())
    torch.testing.assert_close(again.probability(ids), estimator.probability(ids))
    assert "hash_a" not in estimator.state_dict()


def test_a_restored_estimator_continues_exactly():
    generator = torch.Generator().manual_seed(9)
    steps = [torch.randint(0, 30, (5,), generator=generator) for _ in range(40)]
    straight = StreamingFrequency(30, alpha=0.1)
    for ids in steps:
        straight.update(ids)
    half = StreamingFrequency(30, alpha=0.1)
    for ids in steps[:20]:
        half.update(ids)
    resumed = StreamingFrequency(30, alpha=0.1)
    resumed.load_state_dict(half.state_dict())
    for ids in steps[20:]:
        resumed.update(ids)
    for key, value in straight.state_dict().items():
        assert torch.equal(value, resumed.state_dict()[key]), key


def test_a_state_saved_without_gaps_seen_continues_its_moving_average():
    estimator = StreamingFrequency(4, alpha=0.25)
    for ids in ([0, 1], [0], [1, 2]):
        estimator.update(torch.tensor(ids))
    old = {key: value for key, value in estimator.state_dict().items() if key != "gaps_seen"}
    restored = StreamingFrequency(4, alpha=0.25)
    restored.load_state_dict(old)
    assert restored.gaps_seen[0].tolist() == [4, 4, 4, 0]
    restored.update(torch.tensor([0]))  # a gap of 2, blended at rate α
    assert restored.gap[0, 0].item() == 1.0 + 0.25 * (2 - 1.0)


@pytest.mark.parametrize(
    "options, match",
    [
        ({"alpha": 0.0}, "alpha must lie in"),
        ({"alpha": 1.5}, "alpha must lie in"),
        ({"num_hashes": 2}, "num_hashes > 1 needs buckets="),
        ({"buckets": 0}, "buckets must be a positive integer"),
    ],
)
def test_bad_options_are_named(options, match):
    with pytest.raises(ConfigError, match=match):
        StreamingFrequency(10, **options)
