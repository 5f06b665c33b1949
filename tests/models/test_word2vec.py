"""``skipgram`` and ``cbow``: examples against brute-force windows, word2vec's window shrinking and
subsampling, its initialisation, and CBOW's mean/sum."""

from __future__ import annotations

import math

import pytest
import torch

from bigvocab.data.batching import subsample_keep_prob
from bigvocab.errors import ConfigError
from bigvocab.models import CBOW, SkipGram, build_model


def _model(name, vocab_size, output="full", counts=None, **options):
    # word2vec_updates=False: these tests train on the mean loss at lr=1 (not word2vec's step per pair)
    kwargs = {"vector_size": 4, "window": 2, "sample": 0, "word2vec_updates": False, **options}
    return build_model(name, vocab_size, output, counts=counts, model_kwargs=kwargs)


def _brute_force_windows(ids, window):
    """[(centre position, [context positions in left-to-right order])] with the full window."""
    n = len(ids)
    return [(i, [j for j in range(i - window, i + window + 1) if j != i and 0 <= j < n]) for i in range(n)]


def test_skipgram_eval_pairs_are_every_pair_in_order():
    ids = torch.tensor([4, 0, 3, 3, 1, 2, 5])
    model = _model("skipgram", 6)
    batches = list(model.batches(ids, 4, train=False))
    assert [b["target"].numel() for b in batches[:-1]] == [4] * (len(batches) - 1)
    centres = torch.cat([b["centre"] for b in batches]).tolist()
    targets = torch.cat([b["target"] for b in batches]).tolist()
    expected = [(ids[i].item(), ids[j].item()) for i, js in _brute_force_windows(ids, 2) for j in js]
    assert list(zip(centres, targets)) == expected


def test_skipgram_hidden_is_the_centre_vector():
    model = _model("skipgram", 6)
    batch = next(model.batches(torch.arange(6), 5, train=False))
    assert torch.equal(model.features(batch), model.embedding.weight[batch["centre"]])
    assert model.features(batch).shape == (5, model.output.in_features)


def test_skipgram_window_shrinking_distribution():
    # Distinct ids, so target - centre is the offset. For an interior centre, offset ±d is used
    # iff its b ~ U{1..W} is >= d: the count over N centres is Binomial(N, (W - d + 1) / W);
    # each count must lie within 5 sd (d = 1 is certain: the count is exactly N).
    window, length = 3, 1500
    model = _model("skipgram", length, window=window)
    counts = {d: 0 for d in (-3, -2, -1, 1, 2, 3)}
    for batch in model.batches(torch.arange(length), 512, train=True, generator=torch.Generator().manual_seed(5)):
        centre, target = batch["centre"], batch["target"]
        interior = (centre >= window) & (centre < length - window)
        for d in counts:
            counts[d] += int(((target - centre)[interior] == d).sum())
    n = length - 2 * window
    for d, seen in counts.items():
        p = (window - abs(d) + 1) / window
        assert abs(seen - n * p) <= 5 * math.sqrt(n * p * (1 - p)), (d, seen, n * p)


def test_training_pairs_are_subsampled_with_word2vec_probabilities():
    counts = [900, 50, 30, 20]
    model = _model("skipgram", 4, counts=counts, sample=0.01, window=1)
    torch.testing.assert_close(model.keep_prob, subsample_keep_prob(counts, 0.01))
    # A stream of word 0 only: each token survives with p = keep[0] < 1, so the number of
    # centres (each with 1 or 2 neighbours) drops; pairs = 2 * (kept - 1) for a run of kept words.
    n = 4000
    p = model.keep_prob[0].item()
    assert p < 0.5
    pairs = sum(b["target"].numel() for b in model.batches(torch.zeros(n, dtype=torch.long), 1000, train=True))
    kept = pairs / 2 + 1
    assert abs(kept - n * p) < 5 * math.sqrt(n * p * (1 - p))
    evaluation = sum(b["target"].numel() for b in model.batches(torch.zeros(n, dtype=torch.long), 1000, train=False))
    assert evaluation == 2 * (n - 1)


def test_initialisation_follows_word2vec():
    model = _model("cbow", 50, vector_size=8)
    weight = model.word_vectors()
    assert weight.shape == (50, 8)
    assert weight.abs().max() <= 0.5 / 8
    # Uniform on (-1/16, 1/16): variance (1/8)^2 / 12; 400 draws give a mean within 5 sd of 0.
    assert abs(weight.mean().item()) < 5 * (1 / 8) / math.sqrt(12 * 400)
    assert weight.std().item() == pytest.approx((1 / 8) / math.sqrt(12), rel=0.2)


def test_cbow_eval_examples_are_every_centre_with_its_window():
    ids = torch.tensor([4, 0, 3, 3, 1, 2, 5])
    model = _model("cbow", 6)
    batches = list(model.batches(ids, 3, train=False))
    assert torch.cat([b["target"] for b in batches]).tolist() == ids.tolist()
    rows = [(c, m) for b in batches for c, m in zip(b["context"], b["mask"])]
    for (context, mask), (_, positions) in zip(rows, _brute_force_windows(ids, 2)):
        assert context[mask].tolist() == ids[positions].tolist()


@pytest.mark.parametrize("cbow_mean", [1, 0])
def test_cbow_mean_and_sum(cbow_mean):
    model = _model("cbow", 6, cbow_mean=cbow_mean)
    ids = torch.tensor([4, 0, 3, 3, 1, 2, 5])
    batch = next(model.batches(ids, 7, train=False))
    hidden = model.features(batch)
    for row, (_, positions) in enumerate(_brute_force_windows(ids, 2)):
        vectors = model.embedding.weight[ids[positions]]
        expected = vectors.mean(0) if cbow_mean else vectors.sum(0)
        torch.testing.assert_close(hidden[row], expected)


def test_cbow_train_examples_have_shrunk_windows():
    model = _model("cbow", 30, window=4)
    batches = list(model.batches(torch.arange(30), 8, train=True, generator=torch.Generator().manual_seed(0)))
    assert torch.cat([b["target"] for b in batches]).tolist() == list(range(30))
    for batch in batches:
        for centre, context, mask in zip(batch["target"], batch["context"], batch["mask"]):
            used = context[mask]
            radius = (used - centre).abs().max()
            # Shrinking keeps a symmetric window of radius b, clipped at the stream's ends.
            expected = [j for j in range(centre - radius, centre + radius + 1) if j != centre and 0 <= j < 30]
            assert used.tolist() == expected


@pytest.mark.parametrize(
    "options, counts, match",
    [
        ({"window": 0}, None, "window must be a positive integer"),
        ({"vector_size": -1}, None, "vector_size"),
        ({"sample": 1.5}, None, "sample must lie in"),
        ({"sample": 1e-3}, None, "needs the training counts"),
        ({"sample": 1e-3}, [5, 3], "counts has 2 entries for 6 words"),
        ({"cbow_mean": 2}, None, "cbow_mean must be True or False"),
        ({"vectorsize": 3}, None, "did you mean 'vector_size'"),
    ],
)
def test_bad_configuration_is_a_config_error(options, counts, match):
    with pytest.raises(ConfigError, match=match):
        _model("cbow", 6, counts=counts, **options)


def test_skipgram_has_no_cbow_mean():
    with pytest.raises(ConfigError, match="unknown skipgram option 'cbow_mean'"):
        SkipGram.output_features(cbow_mean=1)
    assert CBOW.output_features(vector_size=7) == 7


def test_sparse_embedding_gradient():
    model = _model("skipgram", 6)
    assert model.sparse_parameters() == [model.embedding.weight]
    model.loss(next(model.batches(torch.arange(6), 4, train=True))).backward()
    assert model.embedding.weight.grad.is_sparse


@pytest.mark.parametrize("name", ["skipgram", "cbow"])
def test_works_with_any_output_layer(name, two_layer_softmax, train_a_little, repetitive_stream):
    model = (SkipGram if name == "skipgram" else CBOW)(
        6, two_layer_softmax(4, 6), vector_size=4, window=1, sample=0, word2vec_updates=False
    )
    before, after = train_a_little(model, repetitive_stream, epochs=40, lr=1.0)
    assert after < 0.8 * before


@pytest.mark.parametrize("name", ["skipgram", "cbow"])
def test_sgd_reduces_the_loss(name, train_a_little, repetitive_stream):
    # With window 1 on the cycle 0..5, a centre's two neighbours are fixed: skip-gram can reach
    # log 2 (two equally likely context words), CBOW 0 (the pair fixes the centre).
    model = _model(name, 6, window=1, vector_size=8)
    before, after = train_a_little(model, repetitive_stream, epochs=40, lr=1.0)
    assert before == pytest.approx(math.log(6), abs=0.05)
    assert after < (math.log(2) + 0.15 if name == "skipgram" else 0.3)
