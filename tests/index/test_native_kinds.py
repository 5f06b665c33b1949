"""The kinds that need no optional package (``ivf``, ``svd``, ``screening``) and their compiled
loops, each against a brute-force reference on a small problem."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bigvocab.errors import ConfigError
from bigvocab.index import build_index
from bigvocab.index.kmeans import kmeans, nearest_centroids
from bigvocab.index.mips import lift_queries, lift_rows
from bigvocab.kernels.ivf import scan_cells
from bigvocab.kernels.preview import best_rows


def _problem(rows: int = 500, hidden: int = 12, queries: int = 9, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    weight = torch.randn(rows, hidden, generator=generator)
    bias = torch.randn(rows, generator=generator)
    return weight, bias, torch.randn(queries, hidden, generator=generator)


def _exact_ids(weight, bias, hidden, k):
    return (hidden @ weight.t() + bias).topk(k, dim=1).indices


def _same_sets(a: torch.Tensor, b: torch.Tensor) -> bool:
    return torch.equal(a.sort(1).values, b.sort(1).values)


def test_scan_cells_keeps_the_best_rows_of_the_probed_cells():
    generator = np.random.default_rng(0)
    rows = generator.standard_normal((60, 5)).astype(np.float32)
    queries = generator.standard_normal((4, 5)).astype(np.float32)
    offsets = np.array([0, 10, 10, 35, 60])  # cell 1 is empty
    cells = np.array([[0, 2], [1, 3], [3, 0], [1, 1]])
    positions, scores = scan_cells(queries, rows, offsets, cells, 6)
    for q in range(4):
        scanned = np.concatenate([np.arange(offsets[c], offsets[c + 1]) for c in np.unique(cells[q])])
        want = scanned[np.argsort(-(rows[scanned] @ queries[q]))[:6]]
        got = positions[q][positions[q] >= 0]
        assert sorted(got.tolist()) == sorted(want.tolist())
        np.testing.assert_allclose(np.sort(scores[q][: got.size]), np.sort(rows[got] @ queries[q]), rtol=1e-5)
    assert (positions[3] == -1).all() and np.isinf(scores[3]).all()  # only the empty cell


def test_best_rows_are_the_largest_inner_products():
    generator = np.random.default_rng(1)
    rows = generator.standard_normal((3000, 7)).astype(np.float32)  # several blocks of rows
    queries = generator.standard_normal((5, 7)).astype(np.float32)
    found = best_rows(queries, rows, 40)
    want = np.argsort(-(queries @ rows.T), axis=1)[:, :40]
    assert all(set(f.tolist()) == set(w.tolist()) for f, w in zip(found, want))


def test_nearest_centroids_and_kmeans_find_separated_blobs():
    generator = torch.Generator().manual_seed(2)
    means = torch.tensor([[10.0, 0.0], [0.0, 10.0], [-10.0, -10.0]])
    points = torch.cat([m + torch.randn(50, 2, generator=generator) for m in means])
    distances = torch.cdist(points, means)
    assert torch.equal(nearest_centroids(points, means, 2), distances.topk(2, dim=1, largest=False).indices)
    centroids = kmeans(points, 3, iterations=10, seed=0)
    matched = torch.cdist(means, centroids).argmin(1)
    assert sorted(matched.tolist()) == [0, 1, 2]
    torch.testing.assert_close(centroids[matched], points.reshape(3, 50, 2).mean(1))


def test_ivf_probing_every_cell_is_exact():
    weight, bias, hidden = _problem()
    index = build_index(weight, bias, kind="ivf", nlist=8, nprobe=8)
    _, ids = index.topk(hidden, weight, bias, 10)
    assert _same_sets(ids, _exact_ids(weight, bias, hidden, 10)) and index.last_fallbacks == 0
    assert index.memory_bytes() > weight.numel() * 4  # it holds the rows again, grouped by cell
    assert index.tune(nprobe=1).topk(hidden, weight, bias, 10)[1].shape == (9, 10)


def test_svd_candidates_are_the_best_of_the_low_rank_preview():
    """Shim et al.'s preview: the logits of the rank-r truncation of W, plus the whole bias."""
    weight, bias, hidden = _problem()
    index = build_index(weight, bias, kind="svd", rank=3, candidates=25)
    u, s, vh = torch.linalg.svd(weight.double(), full_matrices=False)
    preview = hidden.double() @ (u[:, :3] * s[:3] @ vh[:3]).t() + bias.double()
    rows, ids = index._candidates(lift_queries(hidden, index.beta), 10)
    assert torch.equal(rows, torch.arange(9).repeat_interleave(25))
    assert _same_sets(ids.reshape(9, 25), preview.topk(25, dim=1).indices)
    index.tune(rank=12, candidates=10)  # the full width: the preview is exact
    assert _same_sets(index.topk(hidden, weight, bias, 10)[1], _exact_ids(weight, bias, hidden, 10))


def test_screening_lists_hold_the_ids_its_contexts_name_most_often():
    weight, bias, _ = _problem()
    contexts = torch.randn(80, 12, generator=torch.Generator().manual_seed(3))
    index = build_index(weight, bias, kind="screening", contexts=contexts, clusters=4, cover=5, budget=7)
    cluster = nearest_centroids(contexts, index.centroids).flatten()
    named = _exact_ids(weight, bias, contexts, 5)
    for c in range(4):
        ids, counts = named[cluster == c].flatten().unique(return_counts=True)
        listed = index.lists[index.offsets[c] : index.offsets[c + 1]]
        assert sorted(listed.tolist()) == sorted(ids.tolist())
        by_id = dict(zip(ids.tolist(), counts.tolist()))
        assert [by_id[i] for i in listed.tolist()] == sorted(counts.tolist(), reverse=True)
    queries = contexts[:6] + 0.01
    rows, ids = index._candidates(lift_queries(queries, index.beta), 3)
    probed = nearest_centroids(queries, index.centroids).flatten()
    for q in range(6):
        assert ids[rows == q].tolist() == index.lists[index.offsets[probed[q]] :][:7].tolist()
    rows, ids = index.tune(nprobe=4, budget=10_000)._candidates(lift_queries(queries, index.beta), 3)
    for q in range(6):  # every list, each id once
        assert sorted(ids[rows == q].tolist()) == index.lists.unique().tolist()


def test_screening_needs_its_contexts():
    weight, bias, _ = _problem()
    with pytest.raises(ConfigError, match="needs contexts="):
        build_index(weight, bias, kind="screening")
    with pytest.raises(ConfigError, match=r"\(M, 12\)"):
        build_index(weight, bias, kind="screening", contexts=torch.randn(5, 3))


def test_the_lift_keeps_every_score():
    weight, bias, hidden = _problem()
    rows, beta = lift_rows(weight, bias)
    torch.testing.assert_close(lift_queries(hidden, beta) @ rows.t(), hidden @ weight.t() + bias, rtol=1e-5, atol=1e-4)
