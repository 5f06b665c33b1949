"""The Scorer contract, run over every registered scorer against brute force: scores of chosen
ids (shared and per row), their sparse gradients, and the streamed log Z and top-k, each equal
to the same quantity read off the scorer's full (N, V) score matrix."""

from __future__ import annotations

import pytest
import torch
from reference_checks import assert_matches_reference

import bigvocab
from bigvocab.outputs.factory import list_scorers
from bigvocab.registry import SCORERS

V, H, N = 29, 5, 4
WORDS = [f"{chr(97 + i % 26)}{'xy' * (i % 3)}{i}" for i in range(V)]
CNN_SHAPE = {"char_dim": 4, "filters": ((1, 3), (2, 2)), "correction_dim": 3}
OPTIONS = {"cnn": {"words": WORDS, **CNN_SHAPE}}


@pytest.fixture(params=list_scorers())
def scorer(request):
    torch.manual_seed(0)
    built = SCORERS.create(request.param, H, V, max_chunk_elements=3 * N, **OPTIONS.get(request.param, {}))
    built = built.double()
    with torch.no_grad():
        for param in built.parameters():
            param.add_(torch.randn_like(param) * 0.3)
    return built


def _inputs():
    hidden = torch.randn(N, H, dtype=torch.float64, requires_grad=True)
    target = torch.tensor([0, 28, 5, 5])
    return hidden, target


@pytest.mark.parametrize("sparse", [False, True])
def test_chosen_scores_match_the_full_matrix(scorer, sparse):
    scorer.sparse_grad = sparse
    hidden, target = _inputs()
    inputs = [hidden, *scorer.parameters()]
    shared = torch.tensor([3, 0, 3, 17])
    per_row = torch.tensor([[1, 2], [28, 0], [5, 5], [9, 4]])
    assert_matches_reference(scorer.class_logits(hidden, shared), scorer.logits(hidden)[:, shared], inputs)
    assert_matches_reference(scorer.class_logits(hidden, per_row), scorer.logits(hidden).gather(1, per_row), inputs)
    assert_matches_reference(
        scorer.target_logits(hidden, target), scorer.logits(hidden).gather(1, target[:, None]).squeeze(1), inputs
    )
    for ids in (shared, per_row):
        got_target, got = scorer.target_and_class_logits(hidden, target, ids)
        want = torch.cat([scorer.target_logits(hidden, target)[:, None], scorer.class_logits(hidden, ids)], 1)
        assert_matches_reference(torch.cat([got_target[:, None], got], 1), want, inputs)


def test_scores_without_autograd_read_free_rows_in_place(scorer, monkeypatch):
    """Without autograd a free-row scorer scores per-example ids straight from its (V, H) table
    (no distinct ids, no gathered copy); every scorer must still give the full matrix's scores."""
    import bigvocab.outputs.scorers.rows as rows

    hidden, _ = _inputs()
    per_row = torch.tensor([[1], [28], [5], [5]])  # 16 x 1 < V <= 16 x 4: the in-place case
    want = scorer.logits(hidden).gather(1, per_row).detach()
    if scorer.free_rows:

        def no_distinct_ids(*args, **kwargs):
            raise AssertionError("the in-place path takes no distinct ids")

        monkeypatch.setattr(rows, "distinct_ids", no_distinct_ids)
    with torch.no_grad():
        got = scorer.class_logits(hidden, per_row)
    torch.testing.assert_close(got, want)


def test_sparse_gradients_touch_only_the_chosen_rows(scorer):
    scorer.sparse_grad = True
    hidden, _ = _inputs()
    ids = torch.tensor([3, 0, 3, 17])
    scorer.class_logits(hidden, ids).sum().backward()
    assert scorer.sparse_parameters(), "a scorer with per-word rows must name them"
    for param in scorer.sparse_parameters():
        assert param.grad.is_sparse
        assert set(param.grad.coalesce().indices()[0].tolist()) <= {0, 3, 17}


def test_log_normaliser_is_the_streamed_logsumexp(scorer):
    hidden, target = _inputs()
    inputs = [hidden, *scorer.parameters()]
    assert_matches_reference(scorer.log_normaliser(hidden, target)[0], scorer.logits(hidden).logsumexp(1), inputs)
    assert_matches_reference(
        scorer.log_normaliser(hidden, target)[1], scorer.logits(hidden).gather(1, target[:, None]).squeeze(1), inputs
    )


@pytest.mark.parametrize("k", [1, 6, V])
def test_topk_is_the_streamed_exact_topk(scorer, k):
    hidden, _ = _inputs()
    values, ids = scorer.topk(hidden, k)
    ref_values, ref_ids = torch.log_softmax(scorer.logits(hidden), 1).topk(k, dim=1)
    torch.testing.assert_close(values, ref_values, atol=1e-12, rtol=0)
    assert torch.equal(ids, ref_ids)


def test_the_scorer_reads_and_writes_through_the_layer():
    layer = bigvocab.create_output("full", H, V)
    assert layer.weight is layer.scorer.weight and layer.bias is layer.scorer.bias
    with torch.no_grad():
        layer.bias += 1.0  # in place, then assigned back: must land on the scorer's parameter
    assert layer.bias is layer.scorer.bias and torch.equal(layer.scorer.bias, torch.ones(V))
    with pytest.raises(AttributeError, match="and its scorer have no attribute 'nope'"):
        layer.nope  # noqa: B018  (the attribute access is what raises)


def test_a_state_dict_from_before_scorers_still_loads():
    torch.manual_seed(0)
    saved = bigvocab.create_output("cnn", H, V, words=WORDS, **CNN_SHAPE)
    legacy = {key.removeprefix("scorer."): value for key, value in saved.state_dict().items()}
    assert "weight" not in legacy and "correction" in legacy  # the one-class cnn layer's keys
    torch.manual_seed(1)
    fresh = bigvocab.create_output("cnn", H, V, words=WORDS, **CNN_SHAPE)
    fresh.load_state_dict(legacy)
    hidden, target = torch.randn(N, H), torch.tensor([0, 28, 5, 5])
    saved.eval()
    fresh.eval()
    torch.testing.assert_close(fresh.log_prob(hidden, target), saved.log_prob(hidden, target))
