"""``xmc``: the bag-of-features encoder against its formula, its batches, and every registered
output layer training it on multi-label rows."""

from __future__ import annotations

import pytest
import torch

import bigvocab
from bigvocab.data import LabelledRows, SyntheticXMC
from bigvocab.errors import ConfigError, DataError
from bigvocab.evaluate import precision_at_k
from bigvocab.models import build_model
from bigvocab.registry import OUTPUTS

L, D = 12, 9
WORDS = [f"label{i}" for i in range(L)]


def _rows() -> LabelledRows:
    generator = torch.Generator().manual_seed(0)
    lengths = torch.randint(1, 4, (20,), generator=generator)
    labels = torch.randint(0, L, (20, 3), generator=generator)
    labels[torch.rand(20, 3, generator=generator) < 0.4] = -1
    labels[:, 0] = labels[:, 0].clamp(min=0)
    labels[5] = -1  # a row with no label
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)])
    ids = torch.randint(0, D, (int(lengths.sum()),), generator=generator)
    return LabelledRows(offsets, ids, torch.rand(ids.numel(), generator=generator), labels, D, L)


def _model(output="full", **options):
    kwargs = (
        {"num_samples": 3} if "num_samples" in (OUTPUTS.get(output).accepted_options({}) or {"num_samples"}) else {}
    )
    counts = _rows().label_counts().tolist()
    return build_model(
        "xmc",
        L,
        output,
        counts=counts,
        words=WORDS,
        model_kwargs={"num_features": D, "embedding_dim": 4, **options},
        output_kwargs=kwargs,
    )


def test_features_are_the_weighted_bag_through_the_hidden_layer():
    rows = _rows()
    model = _model(hidden_dim=5)
    batch = next(model.batches(rows, 4, train=False))
    table = model.embedding.weight
    expected = []
    for n in range(4):
        start, stop = int(rows.feature_offsets[n]), int(rows.feature_offsets[n + 1])
        bag = (rows.feature_values[start:stop, None] * table[rows.feature_ids[start:stop]]).sum(0)
        expected.append(torch.relu(model.hidden(bag)))
    assert torch.allclose(model.features(batch), torch.stack(expected), atol=1e-6)
    assert model.output.in_features == 5


def test_batches_cover_every_labelled_row_once():
    rows = _rows()
    model = _model()
    ordered = torch.cat([b["target"] for b in model.batches(rows, 6, train=False)])
    assert torch.equal(ordered, torch.cat([rows.labels[:5], rows.labels[6:]]))
    shuffled = torch.cat([b["target"] for b in model.batches(rows, 6, train=True, generator=torch.Generator())])
    assert sorted(map(tuple, shuffled.tolist())) == sorted(map(tuple, ordered.tolist()))
    assert model.num_batches(rows, 6) == 4
    with pytest.raises(DataError, match="LabelledRows"):
        next(model.batches(torch.arange(5), 2, train=False))
    with pytest.raises(ConfigError, match="no word vectors"):
        model.word_vectors()


@pytest.mark.parametrize("output", bigvocab.list_outputs())
def test_every_output_layer_trains_xmc(output):
    model = _model(output)
    batch = next(model.batches(_rows(), 8, train=True, generator=torch.Generator().manual_seed(1)))
    loss = model.loss(batch)
    assert loss.dim() == 0 and torch.isfinite(loss)
    loss.backward()
    assert model.embedding.weight.grad is not None and model.embedding.weight.grad.is_sparse
    sparse = {id(p) for p in model.sparse_parameters()}
    for name, param in model.named_parameters():
        if param.grad is not None:
            assert param.grad.is_sparse == (id(param) in sparse), name
    with torch.no_grad():
        log_prob = model.log_prob(batch)
        _, ids = model.topk(batch, 3)
    assert log_prob.shape == batch["target"].shape and (log_prob <= 0).all()
    assert ids.shape == (8, 3)


@pytest.mark.slow
def test_training_approaches_the_bayes_precision():
    task = SyntheticXMC(60, 6, draws=2, signature=2, signature_features=8, noise=1, num_features=12)
    train, _ = task.sample(3000, torch.Generator().manual_seed(0))
    test, _ = task.sample(1000, torch.Generator().manual_seed(1))
    model = build_model("xmc", 60, "full", model_kwargs={"num_features": 12, "embedding_dim": 16, "sparse": False})
    optimiser = torch.optim.Adam(model.parameters(), lr=0.05)
    for _ in range(3):
        for batch in model.batches(train, 64, train=True, generator=torch.Generator().manual_seed(2)):
            optimiser.zero_grad()
            model.loss(batch).backward()
            optimiser.step()
    with torch.no_grad():
        ranked = torch.cat([model.topk(batch, 1)[1] for batch in model.batches(test, 500, train=False)])
    assert precision_at_k(ranked, test.labels, 1) > task.bayes_precision_at_k(1) - 0.05
