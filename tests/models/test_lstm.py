"""``lstm``: truncated BPTT with state carried across batches equals running whole sequences."""

from __future__ import annotations

import pytest
import torch

import bigvocab
from bigvocab.errors import ConfigError
from bigvocab.models import LSTMLM, build_model

V = 13


def _model(output="full", **options):
    kwargs = {"embedding_dim": 5, "hidden_dim": 6, "num_layers": 2, "bptt": 4, **options}
    model = build_model("lstm", V, output, model_kwargs=kwargs).double()
    return model.eval()


def _whole_sequence_log_prob(model, inputs, targets):
    """Log-probs of one row run from a zero state in one go (no "stream": nothing carried)."""
    return model.log_prob({"input": inputs.unsqueeze(0), "target": targets.unsqueeze(0)}).squeeze(0)


@pytest.mark.parametrize("length, batch_size", [(42, 3), (40, 1), (23, 5)])
def test_carried_state_matches_whole_sequences(length, batch_size):
    torch.manual_seed(0)
    model = _model()
    ids = torch.randint(0, V, (length,))
    rows = min(batch_size, length - 1)
    columns = (length - 1) // rows
    pieces = [[] for _ in range(rows)]
    for batch in model.batches(ids, batch_size, train=False):
        lp = model.log_prob(batch)
        assert lp.shape == batch["target"].shape
        first = rows - lp.shape[0]  # the leftover tail continues the last row
        for r in range(lp.shape[0]):
            pieces[first + r].append(lp[r])
    for r in range(rows):
        start = r * columns
        stop = (r + 1) * columns if r < rows - 1 else length - 1
        expected = _whole_sequence_log_prob(model, ids[start:stop], ids[start + 1 : stop + 1])
        torch.testing.assert_close(torch.cat(pieces[r]), expected)


def test_eval_targets_are_every_token_once():
    model = _model()
    ids = torch.randint(0, V, (31,))
    targets = sorted(t for b in model.batches(ids, 4, train=False) for t in b["target"].flatten().tolist())
    assert targets == sorted(ids[1:].tolist())
    train = [b["target"] for b in model.batches(ids, 4, train=True)]
    evaluation = [b["target"] for b in model.batches(ids, 4, train=False)]
    assert all(torch.equal(a, b) for a, b in zip(train, evaluation))


def test_state_resets_per_pass_and_survives_interleaving():
    torch.manual_seed(1)
    model = _model()
    ids = torch.randint(0, V, (30,))

    def full_pass():
        return [model.log_prob(b) for b in model.batches(ids, 2, train=False)]

    reference = full_pass()
    assert all(torch.equal(a, b) for a, b in zip(reference, full_pass()))
    # Interrupt a pass with another full pass, process one batch twice (loss, then log_prob).
    interrupted = model.batches(ids, 2, train=False)
    first = next(interrupted)
    results = [model.log_prob(first)]
    other = full_pass()
    for batch in interrupted:
        model.loss(batch)
        results.append(model.log_prob(batch))
    assert all(torch.equal(a, b) for a, b in zip(reference, results))
    assert all(torch.equal(a, b) for a, b in zip(reference, other))


def test_state_is_detached_between_batches():
    model = _model()
    batches = model.batches(torch.randint(0, V, (30,)), 2, train=True)
    model.loss(next(batches)).backward()
    model.loss(next(batches)).backward()  # would fail if the graph reached the freed first batch


def test_hidden_reaches_the_output_as_batch_time_features():
    model = _model()
    batch = next(model.batches(torch.randint(0, V, (30,)), 3, train=False))
    assert batch["input"].shape == (3, 4)
    assert model.features(batch).shape == (3, 4, 6)


def test_weight_tying_shares_the_parameter():
    model = _model(tie_weights=True)
    assert LSTMLM.output_features(embedding_dim=5, hidden_dim=6, tie_weights=True) == 5
    assert model.output.weight is model.embedding.weight
    assert model.projection is not None and model.projection.out_features == 5
    names = [name for name, _ in model.named_parameters()]
    assert sum("weight" in n and ("embedding" in n or "output" in n) for n in names) == 1
    batch = next(model.batches(torch.randint(0, V, (30,)), 3, train=False))
    model.loss(batch).backward()
    assert model.embedding.weight.grad is not None
    same_size = _model(tie_weights=True, hidden_dim=5)
    assert same_size.projection is None and same_size.output.in_features == 5


def test_tying_needs_a_layer_that_can_tie(two_layer_softmax):
    with pytest.raises(ConfigError, match="TwoLayerSoftmax cannot share its weight"):
        LSTMLM(V, two_layer_softmax(5, V), embedding_dim=5, hidden_dim=6, tie_weights=True)
    with pytest.raises(ConfigError, match="shares its dense weight gradient; set sparse=False"):
        _model(tie_weights=True, sparse=True)


def test_sparse_embedding_gradient():
    model = _model(sparse=True)
    assert model.sparse_parameters() == [model.embedding.weight]
    model.loss(next(model.batches(torch.randint(0, V, (30,)), 3, train=True))).backward()
    assert model.embedding.weight.grad.is_sparse
    assert _model().sparse_parameters() == []


@pytest.mark.parametrize(
    "options, match",
    [
        ({"hidden_dim": 0}, "hidden_dim must be a positive integer"),
        ({"num_layers": -1}, "num_layers"),
        ({"dropout": 1.0}, "dropout must lie in"),
        ({"bptt": 0}, "bptt"),
        ({"tie_weight": True}, "did you mean 'tie_weights'"),
    ],
)
def test_bad_configuration_is_a_config_error(options, match):
    with pytest.raises(ConfigError, match=match):
        LSTMLM.output_features(**options)


def test_mismatched_output_is_a_config_error():
    with pytest.raises(ConfigError, match="in_features=5 but this configuration feeds it 6"):
        LSTMLM(V, bigvocab.create_output("full", 5, V), embedding_dim=5, hidden_dim=6)


def test_works_with_any_output_layer(two_layer_softmax, train_a_little, repetitive_stream):
    model = LSTMLM(6, two_layer_softmax(8, 6), embedding_dim=4, hidden_dim=8, num_layers=1, bptt=5)
    before, after = train_a_little(model, repetitive_stream, epochs=40, lr=1.0, batch_size=2)
    assert after < 0.5 * before


def test_sgd_reduces_the_loss(train_a_little, repetitive_stream):
    model = build_model(
        "lstm",
        6,
        "full",
        model_kwargs={"embedding_dim": 6, "hidden_dim": 8, "num_layers": 1, "bptt": 5, "dropout": 0.1},
    )
    before, after = train_a_little(model, repetitive_stream, lr=1.0, batch_size=2)
    assert before > 1.5 and after < 0.3 * before
