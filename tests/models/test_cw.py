"""``cw``: Collobert & Weston window ranking -- windows, scores and the hinge loss by hand."""

from __future__ import annotations

import pytest
import torch

import bigvocab
from bigvocab.errors import ConfigError
from bigvocab.models import CWRanking, LanguageModel, RankingModel, build_model

V = 9


def _model(**options):
    return build_model("cw", V, None, model_kwargs={"window": 1, "embedding_dim": 3, "hidden_dim": 4, **options})


def test_windows_are_every_position_padded_at_the_ends():
    model = _model(window=2)
    ids = torch.tensor([3, 1, 4, 1, 5])
    batches = list(model.batches(ids, 2, train=False))
    windows = torch.cat([b["window"] for b in batches])
    assert torch.cat([b["target"] for b in batches]).tolist() == ids.tolist()
    pad = model.pad_id
    assert pad == V
    for p in range(len(ids)):
        expected = [ids[q].item() if 0 <= q < len(ids) else pad for q in range(p - 2, p + 3)]
        assert windows[p].tolist() == expected
    corrupt = torch.cat([b["corrupt"] for b in batches])
    assert corrupt.min() >= 0 and corrupt.max() < V
    again = torch.cat([b["corrupt"] for b in model.batches(ids, 2, train=False)])
    assert torch.equal(corrupt, again)


def test_corrupting_words_are_uniform_over_the_vocabulary():
    # Each of n draws is uniform on V words: every word's count is Binomial(n, 1/V); 5 sd each.
    model = _model()
    n = 9000
    corrupt = torch.cat([b["corrupt"] for b in model.batches(torch.zeros(n, dtype=torch.long), 1000, train=True)])
    counts = torch.bincount(corrupt, minlength=V).double()
    p = 1 / V
    assert ((counts - n * p).abs() < 5 * (n * p * (1 - p)) ** 0.5).all()


def test_train_batches_shuffle_windows():
    model = _model()
    ids = torch.arange(V).repeat(3)
    train = torch.cat(
        [b["target"] for b in model.batches(ids, 4, train=True, generator=torch.Generator().manual_seed(0))]
    )
    assert sorted(train.tolist()) == sorted(ids.tolist()) and train.tolist() != ids.tolist()


def test_score_matches_the_formula():
    torch.manual_seed(0)
    model = _model().double()
    batch = next(model.batches(torch.randint(0, V, (6,)), 6, train=False))
    x = model.embedding.weight[batch["window"]].flatten(1)
    hidden = torch.clamp(x @ model.hidden.weight.t() + model.hidden.bias, -1, 1)
    expected = hidden @ model.score_layer.weight.squeeze(0) + model.score_layer.bias
    torch.testing.assert_close(model.score(batch["window"]), expected)
    corrupted = model.corrupted(batch)
    assert torch.equal(corrupted[:, 1], batch["corrupt"])
    assert torch.equal(corrupted[:, [0, 2]], batch["window"][:, [0, 2]])
    scores = model.scores(batch)
    torch.testing.assert_close(model.loss(batch), torch.relu(1 - scores[:, 0] + scores[:, 1]).mean())


def _hand_built_model(centre_value: dict[int, float]):
    """One-dimensional words, window 1: s(x) = 3 · hardtanh(e(centre)), so scores are known."""
    model = _model(window=1, embedding_dim=1, hidden_dim=1, sparse=False)
    with torch.no_grad():
        model.embedding.weight.zero_()
        for word, value in centre_value.items():
            model.embedding.weight[word, 0] = value
        model.hidden.weight.copy_(torch.tensor([[0.0, 1.0, 0.0]]))
        model.hidden.bias.zero_()
        model.score_layer.weight.fill_(3.0)
        model.score_layer.bias.fill_(0.25)
    return model


def test_hinge_is_zero_when_the_true_window_wins_by_more_than_one():
    model = _hand_built_model({1: 0.9, 2: 0.2, 3: 0.7})
    window = torch.tensor([[0, 1, 0]])
    # s(true) = 2.7, s(corrupt by 2) = 0.6: margin 2.1 > 1, so no loss.
    assert model.loss({"window": window, "corrupt": torch.tensor([2]), "target": torch.tensor([1])}).item() == 0.0
    # corrupt by 3: s = 2.1, margin 0.6 < 1, loss 1 - 0.6 = 0.4.
    loss = model.loss({"window": window, "corrupt": torch.tensor([3]), "target": torch.tensor([1])})
    assert loss.item() == pytest.approx(0.4, abs=1e-6)
    # the true word as its own corruption: the constant 1.
    same = model.loss({"window": window, "corrupt": torch.tensor([1]), "target": torch.tensor([1])})
    assert same.item() == pytest.approx(1.0)


def test_declared_without_a_distribution():
    """The C&W model declares through its base that it has no normalised distribution: no output
    layer, no log_prob, and nothing to size an output layer with."""
    model = _model()
    assert isinstance(model, RankingModel) and not isinstance(model, LanguageModel)
    assert not model.has_distribution
    assert not hasattr(model, "log_prob") and not hasattr(model, "output")
    assert not hasattr(CWRanking, "output_features")
    with pytest.raises(ConfigError, match="takes no output layer"):
        build_model("cw", V, "full")
    with pytest.raises(ConfigError, match="takes no output layer"):
        CWRanking(V, bigvocab.create_output("full", 4, V))


def test_word_vectors_and_sparse_gradient():
    model = _model()
    assert model.word_vectors().shape == (V, 3)
    assert model.sparse_parameters() == [model.embedding.weight]
    model.loss(next(model.batches(torch.arange(V), 4, train=True))).backward()
    assert model.embedding.weight.grad.is_sparse


@pytest.mark.parametrize(
    "options, match",
    [
        ({"window": 0}, "window must be a positive integer"),
        ({"hidden_dim": -2}, "hidden_dim"),
        ({"windw": 2}, "did you mean 'window'"),
    ],
)
def test_bad_configuration_is_a_config_error(options, match):
    with pytest.raises(ConfigError, match=match):
        _model(**options)


def test_sgd_reduces_the_ranking_loss(train_a_little, repetitive_stream):
    model = build_model("cw", 6, None, model_kwargs={"window": 1, "embedding_dim": 4, "hidden_dim": 8})
    before, after = train_a_little(model, repetitive_stream, epochs=40, lr=0.5)
    assert before > 0.5 and after < 0.5 * before
