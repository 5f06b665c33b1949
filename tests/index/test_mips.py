"""The lift of Bachrach et al. 2014 turns the highest score into the nearest neighbour."""

from __future__ import annotations

import torch

from bigvocab.index.mips import lift_queries, lift_rows


def test_lifted_distances_and_angles_rank_like_the_scores():
    generator = torch.Generator().manual_seed(2)
    weight = torch.randn(300, 8, generator=generator) * torch.rand(300, 1, generator=generator) * 3
    bias = torch.randn(300, generator=generator) * 5
    hidden = torch.randn(20, 8, generator=generator)
    rows, beta = lift_rows(weight, bias)
    queries = lift_queries(hidden, beta)
    norms = rows.norm(dim=1)
    torch.testing.assert_close(norms, norms.max().expand(300))
    scores = hidden @ weight.t() + bias
    torch.testing.assert_close(queries @ rows.t(), scores, atol=1e-4, rtol=1e-5)
    distances = torch.cdist(queries, rows)
    assert torch.equal(distances.argsort(1)[:, :10], scores.argsort(1, descending=True)[:, :10])
