"""Walker alias tables: the table encodes the distribution exactly, and draws from it are
distributed like torch.multinomial's."""

from __future__ import annotations

import pytest
import torch

from bigvocab.errors import ConfigError
from bigvocab.samplers.alias import AliasTable, build_alias_table


def implied_probs(accept: torch.Tensor, alias: torch.Tensor) -> torch.Tensor:
    """P(i) = (accept_i + Σ_{b: alias_b = i} (1 - accept_b)) / V, what a draw from the table gives."""
    return accept.clone().index_add_(0, alias, 1 - accept) / accept.numel()


WEIGHTS = {
    "random": torch.rand(1000, generator=torch.Generator().manual_seed(0)),
    "zipf": 1 / torch.arange(1, 5001, dtype=torch.float64),
    "heavy_tail": torch.rand(300, generator=torch.Generator().manual_seed(1)) ** 12,
    "uniform": torch.ones(77),
    "one_hot": torch.nn.functional.one_hot(torch.tensor(3), 10).double(),
    "with_zeros": torch.tensor([0.0, 5.0, 0.0, 1.0, 0.0, 0.25, 3.0]),
    "thirds": torch.full((3,), 1 / 3),
    "single": torch.tensor([2.0]),
}


@pytest.mark.parametrize("name", list(WEIGHTS))
def test_table_encodes_the_distribution_exactly(name):
    weights = WEIGHTS[name]
    accept, alias = build_alias_table(weights)
    assert accept.dtype == torch.float64 and alias.dtype == torch.long
    assert bool(((accept >= 0) & (accept <= 1)).all())
    assert int(alias.min()) >= 0 and int(alias.max()) < weights.numel()
    torch.testing.assert_close(
        implied_probs(accept, alias), weights.double() / weights.double().sum(), atol=1e-12, rtol=0
    )


def test_zero_weight_classes_are_never_drawn():
    table = AliasTable(WEIGHTS["with_zeros"])
    draws = table.sample((20_000,))
    assert not torch.isin(draws, torch.tensor([0, 2, 4])).any()


def test_draws_match_torch_multinomial(homogeneity, alpha):
    """Two-sample chi-square (2 x V contingency table) between 60,000 alias draws and 60,000
    torch.multinomial draws from the same heavy-tailed law; fixed seed, level alpha."""
    weights = WEIGHTS["heavy_tail"]
    generator = torch.Generator().manual_seed(42)
    ours = AliasTable(weights).sample((60_000,), generator)
    theirs = torch.multinomial(weights.float(), 60_000, replacement=True, generator=generator)
    assert homogeneity(ours, theirs, weights.numel()) > alpha


def test_draws_match_the_weights(goodness_of_fit, alpha):
    torch.manual_seed(9)
    weights = WEIGHTS["zipf"][:200]
    assert goodness_of_fit(AliasTable(weights).sample((80_000,)), weights) > alpha


def test_homogeneity_test_has_power(homogeneity, alpha):
    generator = torch.Generator().manual_seed(3)
    weights = WEIGHTS["heavy_tail"]
    ours = AliasTable(weights).sample((60_000,), generator)
    flattened = torch.multinomial(weights.float().sqrt(), 60_000, replacement=True, generator=generator)
    assert homogeneity(ours, flattened, weights.numel()) < alpha


def test_log_prob_and_rebuild():
    table = AliasTable(torch.tensor([1.0, 3.0]))
    probs = torch.tensor([0.25, 0.75], dtype=torch.float64)
    torch.testing.assert_close(table.log_prob(torch.tensor([0, 1])).exp(), probs)
    table.set_weights(torch.tensor([3.0, 1.0]))
    torch.testing.assert_close(table.log_prob(torch.tensor([0, 1])).exp(), probs.flip(0))
    torch.testing.assert_close(
        implied_probs(table.accept, table.alias), torch.tensor([0.75, 0.25], dtype=torch.float64)
    )


@pytest.mark.parametrize("weights", [torch.zeros(4), torch.tensor([1.0, -1.0, 2.0]), torch.tensor([1.0, float("nan")])])
def test_bad_weights_are_refused(weights):
    with pytest.raises(ConfigError, match="non-negative"):
        build_alias_table(weights)


def test_large_table_builds_exactly():
    """V = 200,000 Zipfian weights: the vectorised sweep stays exact up to float64 rounding.

    Each bucket's mass comes from differences of prefix sums over up to V terms, each <= 1 in the
    scaled units (mean weight 1), so rounding drifts by about sqrt(V) * eps * V scaled units at
    worst-typical, i.e. sqrt(V) * eps = 5e-14 in probability; we allow 1e-13.
    """
    weights = 1 / torch.arange(1, 200_001, dtype=torch.float64) ** 1.1
    accept, alias = build_alias_table(weights)
    torch.testing.assert_close(implied_probs(accept, alias), weights / weights.sum(), atol=1e-13, rtol=0)


def test_every_buffer_is_built_on_the_device_asked_for(monkeypatch):
    """A table built for another device keeps all three buffers there: an ``alias`` left on the
    CPU broke every unigram-sampled layer built with ``device="cuda"`` (found on a lent H100,
    2026-11-26). The "meta" device stands in for a GPU; the O(V) build needs values, so it is
    skipped, and only where the buffers live is checked."""
    monkeypatch.setattr(AliasTable, "set_weights", lambda self, weights: None)
    table = AliasTable(torch.ones(5), device=torch.device("meta"))
    assert {name: buffer.device.type for name, buffer in table.named_buffers()} == dict.fromkeys(
        ["probs", "accept", "alias"], "meta"
    )
