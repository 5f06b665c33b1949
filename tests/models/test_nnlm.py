"""``nnlm``: Bengio et al. (2003) against its formula y = b + W x + U tanh(d + H x)."""

from __future__ import annotations

import pytest
import torch

import bigvocab
from bigvocab.errors import ConfigError
from bigvocab.models import NNLM, build_model

V = 11


def _model(output="full", **options):
    return build_model("nnlm", V, output, model_kwargs={"context": 3, "embedding_dim": 4, "hidden_dim": 5, **options})


@pytest.mark.parametrize(
    "options, features",
    [({}, 5 + 3 * 4), ({"direct": False}, 5), ({"hidden_dim": 0}, 3 * 4)],
)
def test_output_features_follow_direct_connections(options, features):
    kwargs = {"context": 3, "embedding_dim": 4, "hidden_dim": 5, **options}
    assert NNLM.output_features(**kwargs) == features
    model = _model(**options)
    batch = next(model.batches(torch.arange(V), 4, train=False))
    assert model.output.in_features == features
    assert model.features(batch).shape == (4, features)


def test_eval_batches_are_every_ngram_in_order():
    model = _model()
    ids = torch.tensor([3, 1, 4, 1, 5, 9, 2, 6])
    batches = list(model.batches(ids, 3, train=False))
    contexts = torch.cat([b["context"] for b in batches])
    targets = torch.cat([b["target"] for b in batches])
    assert targets.tolist() == ids[1:].tolist()
    pad = model.pad_id
    assert pad == V
    for row, t in enumerate(range(1, len(ids))):
        expected = [ids[i].item() if i >= 0 else pad for i in range(t - 3, t)]
        assert contexts[row].tolist() == expected


def test_train_batches_shuffle_the_same_examples_reproducibly():
    model = _model()
    ids = torch.randint(0, V, (50,))

    def rows(train, seed=0):
        batches = model.batches(ids, 7, train=train, generator=torch.Generator().manual_seed(seed))
        return [tuple(c.tolist()) + (t.item(),) for b in batches for c, t in zip(b["context"], b["target"])]

    assert sorted(rows(True)) == sorted(rows(False))
    assert rows(True) != rows(False)
    assert rows(True) == rows(True)
    assert rows(True, seed=0) != rows(True, seed=1)


@pytest.mark.parametrize("direct", [True, False])
def test_log_prob_matches_bengio_formula(direct):
    torch.manual_seed(0)
    model = _model(direct=direct).double()
    torch.nn.init.normal_(model.output.bias)
    batch = next(model.batches(torch.randint(0, V, (20,)), 19, train=False))
    x = model.embedding.weight[batch["context"]].flatten(1)  # (N, n*m)
    hidden = torch.tanh(model.hidden.bias + x @ model.hidden.weight.t())
    U = model.output.weight[:, :5]
    y = model.output.bias + hidden @ U.t()
    if direct:
        W = model.output.weight[:, 5:]
        y = y + x @ W.t()
    expected = torch.log_softmax(y, dim=1).gather(1, batch["target"].unsqueeze(1)).squeeze(1)
    torch.testing.assert_close(model.log_prob(batch), expected)


def test_embedding_gradient_is_sparse_and_listed():
    model = _model()
    assert model.sparse_parameters() == [model.embedding.weight]
    model.loss(next(model.batches(torch.arange(V), 4, train=False))).backward()
    assert model.embedding.weight.grad.is_sparse
    dense = _model(sparse=False)
    assert dense.sparse_parameters() == []


def test_word_vectors_exclude_the_padding_row():
    model = _model()
    vectors = model.word_vectors()
    assert vectors.shape == (V, 4)
    assert torch.equal(vectors, model.embedding.weight[:V])


@pytest.mark.parametrize(
    "options, match",
    [
        ({"context": 0}, "context must be a positive integer"),
        ({"embedding_dim": -3}, "embedding_dim"),
        ({"hidden_dim": -1}, "hidden_dim must be a non-negative integer"),
        ({"hidden_dim": 0, "direct": False}, "hidden_dim=0 needs direct=True"),
        ({"direct": "yes"}, "direct must be True or False"),
        ({"contxt": 2}, "did you mean 'context'"),
    ],
)
def test_bad_configuration_is_a_config_error(options, match):
    with pytest.raises(ConfigError, match=match):
        NNLM.output_features(**options)


def test_mismatched_output_layer_is_a_config_error():
    with pytest.raises(ConfigError, match="in_features=16 but this configuration feeds it 17"):
        NNLM(V, bigvocab.create_output("full", 16, V), context=3, embedding_dim=4, hidden_dim=5)
    with pytest.raises(ConfigError, match="num_classes=12 but the vocabulary has 11"):
        NNLM(V, bigvocab.create_output("full", 17, 12), context=3, embedding_dim=4, hidden_dim=5)
    with pytest.raises(ConfigError, match="needs an output layer"):
        NNLM(V, None)


def test_batches_reject_bad_streams():
    model = _model()
    with pytest.raises(bigvocab.DataError, match="outside the vocabulary"):
        next(model.batches(torch.tensor([0, V]), 4, train=False))
    with pytest.raises(ConfigError, match="batch_size"):
        next(model.batches(torch.arange(V), 0, train=False))


def test_works_with_any_output_layer(two_layer_softmax, train_a_little, repetitive_stream):
    model = NNLM(6, two_layer_softmax(4 + 2 * 3, 6), context=2, embedding_dim=3, hidden_dim=4)
    before, after = train_a_little(model, repetitive_stream, epochs=40)
    assert after < 0.5 * before


def test_sgd_reduces_the_loss(train_a_little, repetitive_stream):
    model = build_model("nnlm", 6, "full", model_kwargs={"context": 2, "embedding_dim": 4, "hidden_dim": 8})
    before, after = train_a_little(model, repetitive_stream)
    assert before > 1.5 and after < 0.3 * before
