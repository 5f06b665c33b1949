"""Approximate top-k: the returned values are exact, recall is 1 where the answer is unambiguous,
the index notices stale weights, and bad options get one clear error."""

from __future__ import annotations

import sys

import pytest
import torch

import bigvocab
from bigvocab.errors import ConfigError, UnknownNameError
from bigvocab.index import StaleIndexError, build_index, list_index_kinds
from bigvocab.index.optional import installed
from bigvocab.index.ragged import ragged_topk
from bigvocab.outputs.factory import output_side_inputs

#: The library each library-backed kind imports; a kind whose library is not installed (the
#: ``ann`` extra is optional) is skipped, not failed.
LIBRARY = {"faiss-ivf": "faiss", "faiss-hnsw": "faiss", "hnswlib": "hnswlib"}


KINDS = [
    pytest.param(kind, marks=pytest.mark.skipif(not installed(LIBRARY[kind]), reason=f"{LIBRARY[kind]} not installed"))
    if kind in LIBRARY
    else kind
    for kind in list_index_kinds()
]
V, H, GROUP = 600, 16, 5
#: Small-V settings under which each kind searches enough to be sure on the clustered rows below.
SMALL = {
    "ivf": {"nlist": 16, "nprobe": 4},
    "svd": {"rank": H, "candidates": 20},
    "screening": {"clusters": 40, "cover": 10},
    "lsh": {"bits": 8, "tables": 8},
    "faiss-ivf": {"nlist": 16, "nprobe": 4},
    "faiss-hnsw": {},
    "hnswlib": {},
}


def _small(kind: str, layer: bigvocab.OutputLayer) -> dict:
    """SMALL[kind], with training contexts for ``screening``: hidden states like the queries,
    one near each row (so every group has contexts)."""
    if kind != "screening":
        return SMALL[kind]
    generator = torch.Generator().manual_seed(2)
    contexts = 10 * layer.weight.detach() + 0.1 * torch.randn(V, H, generator=generator, dtype=layer.weight.dtype)
    return {**SMALL[kind], "contexts": contexts}


def _clustered_layer(dtype=torch.float64) -> tuple[bigvocab.OutputLayer, torch.Tensor]:
    """A ``full`` layer whose rows are V / GROUP tight groups of GROUP near-copies of a random unit
    direction, and queries 10x the directions of some groups: the top-GROUP of each query is its own
    group (score ~10 against at most ~10·cos of two random directions in 16-d, about 7), so any
    search that finds the right neighbourhood must return exactly it."""
    generator = torch.Generator().manual_seed(1)
    directions = torch.nn.functional.normalize(torch.randn(V // GROUP, H, generator=generator, dtype=dtype), dim=1)
    layer = bigvocab.create_output("full", H, V).to(dtype)
    with torch.no_grad():
        layer.weight.copy_(
            directions.repeat_interleave(GROUP, 0) + 1e-3 * torch.randn(V, H, generator=generator, dtype=dtype)
        )
        layer.bias.copy_(1e-3 * torch.randn(V, generator=generator, dtype=dtype))
    queries = 10 * directions[torch.arange(0, V // GROUP, 3)]
    return layer, queries


@pytest.mark.parametrize("kind", KINDS)
def test_recall_is_one_when_the_answer_is_unambiguous(kind):
    layer, queries = _clustered_layer()
    index = layer.build_index(kind=kind, **_small(kind, layer))
    _, ids = layer.topk(queries, GROUP, index=index)
    _, exact_ids = layer.topk(queries, GROUP)
    assert torch.equal(ids.sort(1).values, exact_ids.sort(1).values)
    assert index.last_fallbacks == 0  # found by the index, not by the exact fallback


@pytest.mark.parametrize("kind", KINDS)
def test_values_are_the_exact_log_probs_and_logits_of_the_returned_ids(kind):
    layer, queries = _clustered_layer()
    queries = queries + torch.randn_like(queries)  # make the search imperfect: values must stay exact
    index = layer.build_index(kind=kind, **_small(kind, layer))
    logits, ids = layer.topk(queries, 7, index=index)
    torch.testing.assert_close(logits, layer.logits(queries).gather(1, ids), atol=1e-12, rtol=0)
    values, same_ids = layer.topk(queries, 7, index=index, normalise=True)
    assert torch.equal(same_ids, ids)
    torch.testing.assert_close(values, layer.log_softmax(queries).gather(1, ids), atol=1e-12, rtol=0)
    assert (values[:, :-1] >= values[:, 1:]).all()
    assert all(len(set(row.tolist())) == 7 for row in ids)


def test_queries_with_too_few_candidates_get_the_exact_answer():
    layer, queries = _clustered_layer()
    # 40-bit buckets without probes hold about one row: most queries find fewer than 20 candidates.
    index = layer.build_index(kind="lsh", bits=40, tables=1, probes=0)
    values, ids = layer.topk(queries, 20, index=index, normalise=True)
    exact_values, exact_ids = layer.topk(queries, 20)
    assert index.last_fallbacks > 0
    torch.testing.assert_close(values, exact_values, atol=1e-12, rtol=0)
    assert torch.equal(ids, exact_ids)


@pytest.mark.parametrize(
    "update",
    [
        lambda layer: torch.optim.SGD(layer.parameters(), lr=0.1).step(),
        lambda layer: layer.load_state_dict(layer.state_dict()),
        lambda layer: torch.no_grad()(layer.bias.add_)(1.0),
        lambda layer: layer.float(),
    ],
    ids=["optimiser-step", "load_state_dict", "bias-in-place", "dtype-change"],
)
def test_an_update_makes_the_index_stale_and_a_rebuild_fixes_it(update):
    layer, queries = _clustered_layer()
    index = layer.build_index(kind="lsh", **SMALL["lsh"])
    layer.topk(queries, 3, index=index)
    assert not index.is_stale(layer.weight, layer.bias)
    layer.logits(queries).sum().backward()
    update(layer)
    assert index.is_stale(layer.weight, layer.bias)
    with pytest.raises(StaleIndexError, match="rebuild"):
        layer.topk(queries.to(layer.weight.dtype), 3, index=index)
    rebuilt = layer.build_index(**index.spec)
    assert rebuilt.spec == index.spec and rebuilt.build_seconds >= 0
    layer.topk(queries.to(layer.weight.dtype), 3, index=rebuilt)


def test_reading_the_weights_does_not_make_it_stale():
    layer, queries = _clustered_layer()
    index = layer.build_index(kind="lsh")
    layer.eval()
    layer.log_softmax(queries)
    layer.state_dict()
    assert not index.is_stale(layer.weight, layer.bias)


def test_every_layer_with_free_rows_takes_an_index():
    """Every registered layer with a free (V, H) output matrix supports the index, exactly; the
    others say they have none."""
    counts = [1000 // (i + 1) + 1 for i in range(37)]
    words = [f"w{i}" for i in range(37)]
    hidden = torch.randn(4, 6, dtype=torch.float64)
    covered = 0
    for name in bigvocab.list_outputs():
        side = {"words": words} if "words" in output_side_inputs(name) else {}
        layer = bigvocab.create_output(name, 6, 37, counts=counts, **side).double()
        try:
            index = layer.build_index()
        except ConfigError as error:
            assert "no free (V, H) output matrix" in str(error)
            with pytest.raises(ConfigError, match="no free"):
                layer.topk(hidden, 3, index=object())
            continue
        covered += 1
        with torch.no_grad():
            layer.weight.normal_()
        index = layer.build_index()
        values, ids = layer.topk(hidden, 3, index=index, normalise=True)
        torch.testing.assert_close(values, layer.log_softmax(hidden).gather(1, ids), atol=1e-12, rtol=0)
    assert covered >= 2


def test_search_options_can_be_tuned_without_rebuilding():
    pytest.importorskip("faiss")
    layer, queries = _clustered_layer()
    index = layer.build_index(kind="faiss-ivf", nlist=16, nprobe=1)
    assert index.tune(nprobe=16, candidates=40).search_options() == {"nprobe": 16, "candidates": 40}
    _, ids = layer.topk(queries, GROUP, index=index)  # nprobe = nlist: exhaustive, hence exact
    assert torch.equal(ids.sort(1).values, layer.topk(queries, GROUP)[1].sort(1).values)
    with pytest.raises(ConfigError, match="no search option 'nlist'"):
        index.tune(nlist=4)


def test_bad_names_and_options_are_named():
    layer, _ = _clustered_layer()
    with pytest.raises(UnknownNameError, match="did you mean 'lsh'"):
        layer.build_index(kind="lhs")
    with pytest.raises(ConfigError, match="does not take 'nprobes'; did you mean 'nprobe'"):
        layer.build_index(kind="faiss-ivf", nprobes=3)
    with pytest.raises(ConfigError, match="bits"):
        layer.build_index(kind="lsh", bits=80)
    with pytest.raises(ConfigError, match="bias must be"):
        build_index(layer.weight, layer.bias[:-1], kind="lsh")


@pytest.mark.parametrize("kind, module", LIBRARY.items())
def test_a_missing_library_names_the_extra(kind, module, monkeypatch):
    monkeypatch.setitem(sys.modules, module, None)  # makes ``import module`` fail
    layer, _ = _clustered_layer()
    with pytest.raises(ConfigError, match=r"pip install 'bigvocab\[ann\]'"):
        layer.build_index(kind=kind)


def test_ragged_topk_matches_a_loop():
    generator = torch.Generator().manual_seed(5)
    group = torch.randint(0, 6, (200,), generator=generator)
    ids = torch.randperm(200, generator=generator)
    values = torch.randn(200, generator=generator, dtype=torch.float64)
    best, best_ids, counts = ragged_topk(group, ids, values, 7, 4)
    for g in range(7):
        mine = values[group == g]
        assert counts[g] == mine.numel()
        want, order = mine.sort(descending=True)
        width = min(4, mine.numel())
        torch.testing.assert_close(best[g, :width], want[:width])
        assert torch.equal(best_ids[g, :width], ids[group == g][order[:width]])
        assert (best_ids[g, width:] == -1).all() and torch.isinf(best[g, width:]).all()


def test_the_default_kind_is_faiss_ivf_where_faiss_is_installed_else_the_native_ivf(monkeypatch):
    from bigvocab.index import default_kind, optional

    layer, _ = _clustered_layer()
    assert layer.build_index().kind == default_kind()
    monkeypatch.setattr(optional, "installed", lambda module: False)  # no optional package at all
    assert default_kind() == "ivf" and layer.build_index().kind == "ivf"
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[ann\]'"):
        layer.build_index(kind="hnswlib")
