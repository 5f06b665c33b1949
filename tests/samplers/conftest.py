"""Goodness-of-fit machinery for the sampler tests.

Every statistical test here uses a fixed seed and the fixed significance level ``ALPHA``: with a
correct sampler the p-value is uniform on [0, 1], so a given seed fails with probability ALPHA;
with a wrong one (see ``test_chi_square_has_power``) the p-value collapses to ~0.
Bins whose expected count is below 5 are pooled, the usual validity condition of the chi-square
approximation. The p-value is the chi-square survival function, computed as the regularised upper
incomplete gamma Q(df/2, x/2) so that no scipy is needed.
"""

from __future__ import annotations

import pytest
import torch

ALPHA = 1e-3


def _pool(expected: torch.Tensor, *observed: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Keep bins with expected >= 5, pool the rest into one bin (dropped if still empty)."""
    keep = expected >= 5
    out = []
    for counts in (expected, *observed):
        pooled = torch.cat([counts[keep], counts[~keep].sum().reshape(1)])
        out.append(pooled)
    if out[0][-1] < 1e-12:
        out = [c[:-1] for c in out]
    return tuple(out)


def chi_square_pvalue(samples: torch.Tensor, probs: torch.Tensor) -> float:
    """Pearson's goodness-of-fit p-value of integer ``samples`` against ``probs`` (V,)."""
    probs = probs.double() / probs.double().sum()
    observed = torch.bincount(samples.reshape(-1), minlength=probs.numel()).double()
    expected = probs * samples.numel()
    expected, observed = _pool(expected, observed)
    statistic = ((observed - expected) ** 2 / expected).sum()
    df = expected.numel() - 1
    return float(torch.special.gammaincc(torch.tensor(df / 2, dtype=torch.float64), statistic / 2))


def two_sample_pvalue(first: torch.Tensor, second: torch.Tensor, num_classes: int) -> float:
    """Chi-square test of homogeneity of two samples of ids (a 2 x V contingency table)."""
    a = torch.bincount(first, minlength=num_classes).double()
    b = torch.bincount(second, minlength=num_classes).double()
    total = a + b
    expected_a = total * first.numel() / (first.numel() + second.numel())
    expected_b = total * second.numel() / (first.numel() + second.numel())
    keep = torch.minimum(expected_a, expected_b) >= 5
    pooled = [torch.cat([x[keep], x[~keep].sum().reshape(1)]) for x in (a, b, expected_a, expected_b)]
    a, b, expected_a, expected_b = (x[:-1] if pooled[2][-1] < 1e-12 else x for x in pooled)
    statistic = ((a - expected_a) ** 2 / expected_a).sum() + ((b - expected_b) ** 2 / expected_b).sum()
    df = a.numel() - 1
    return float(torch.special.gammaincc(torch.tensor(df / 2, dtype=torch.float64), statistic / 2))


@pytest.fixture
def goodness_of_fit():
    """``goodness_of_fit(samples, probs) -> p-value``."""
    return chi_square_pvalue


@pytest.fixture
def homogeneity():
    """``homogeneity(first, second, num_classes) -> p-value``."""
    return two_sample_pvalue


@pytest.fixture
def alpha() -> float:
    return ALPHA


@pytest.fixture
def zipf_counts():
    """Zipfian training counts for V = 60 classes, ids sorted by decreasing frequency."""
    ranks = torch.arange(1, 61, dtype=torch.float64)
    return (5000 / ranks).round()
