"""CNN-softmax: exactness against word-by-word embeddings, the sampled loss, and the cache."""

from __future__ import annotations

import math

import pytest
import torch
from reference_checks import assert_matches_reference, assert_topk_is_exact

import bigvocab
from bigvocab.errors import BigvocabError
from bigvocab.samplers.base import Sampler

V, H = 24, 6
WORDS = ["the", "of", "a", "cat", "cats", "dog", "dogs", "run", "ran", "running", "x", "", "é", "naïve"] + [
    f"w{i}{'z' * (i % 5)}" for i in range(10)
]
SMALL = {"char_dim": 4, "filters": ((1, 3), (2, 3), (4, 2)), "highway_layers": 1}


def _layer(name: str = "cnn", **options) -> bigvocab.OutputLayer:
    torch.manual_seed(0)
    layer = bigvocab.create_output(name, H, V, words=WORDS, **{**SMALL, **options}).double()
    with torch.no_grad():
        for param in layer.parameters():
            param.add_(torch.randn_like(param) * 0.3)
    return layer


def _word_by_word(layer) -> torch.Tensor:
    """Each word embedded alone, from its own unpadded spelling: (V, H)."""
    index = {c: i + 3 for i, c in enumerate(layer.alphabet)}
    rows = []
    for w, word in enumerate(WORDS):
        chars = torch.tensor([[1, *(index[c] for c in word), 2]])
        row = layer.cnn(chars, torch.tensor([len(word) + 2]))[0]
        if layer.correction is not None:
            row = row + layer.correction_projection(layer.correction[w])
        rows.append(row)
    return torch.stack(rows)


@pytest.mark.parametrize("correction_dim", [0, 3])
@pytest.mark.parametrize("bias", [True, False])
def test_exact_loss_matches_word_by_word_softmax(correction_dim, bias):
    layer = _layer("full", scorer="cnn", correction_dim=correction_dim, bias=bias)
    assert not layer.sparse_grad
    hidden = torch.randn(5, H, dtype=torch.float64, requires_grad=True)
    target = torch.tensor([0, 23, 9, 11, 12])
    logits = hidden @ _word_by_word(layer).t() + (layer.bias if bias else 0)
    reference = torch.log_softmax(logits, 1)
    torch.testing.assert_close(layer.log_softmax(hidden), reference, atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(layer.log_prob(hidden, target), reference.gather(1, target[:, None]).squeeze(1))
    ours = layer.loss(hidden, target, reduction="sum")
    assert_matches_reference(ours, -reference.gather(1, target[:, None]).sum(), [hidden, *layer.parameters()])


@pytest.mark.parametrize("k", [1, 5, V])
def test_topk_is_exact(k):
    layer = _layer()
    hidden = torch.randn(4, H, dtype=torch.float64) * 3
    assert_topk_is_exact(layer, hidden, k)


def test_embedding_does_not_depend_on_the_batch():
    layer = _layer()
    alone = torch.cat([layer.embed(torch.tensor([w])) for w in range(V)])
    together = layer.embed(torch.arange(V))
    torch.testing.assert_close(alone, together, atol=1e-12, rtol=1e-12)


class _FixedSampler(Sampler):
    """A known proposal that returns the ids it was given."""

    def __init__(self, draws: list[int]) -> None:
        super().__init__(V)
        self.draws = torch.tensor(draws)
        self.q = torch.linspace(1, 2, V, dtype=torch.float64)
        self.q /= self.q.sum()

    def sample(self, num_samples, *, context=None, generator=None):
        return self.draws[:num_samples]

    def log_q(self, ids, *, context=None):
        return self.q.log()[ids]


def test_sampled_loss_is_the_corrected_softmax_over_target_and_samples():
    draws = [3, 3, 7, 0, 19]
    sampler = _FixedSampler(draws)
    layer = _layer(correction_dim=2, num_samples=5, sampler=sampler)
    assert layer.sparse_grad
    hidden = torch.randn(4, H, dtype=torch.float64, requires_grad=True)
    target = torch.tensor([3, 10, 0, 19])
    embeddings = _word_by_word(layer)
    rows = []
    for i, t in enumerate(target.tolist()):
        # Candidates: the target, then every draw (repeats included) except accidental hits.
        ids = [t] + [d for d in draws if d != t]
        scores = torch.stack([hidden[i] @ embeddings[j] + layer.bias[j] - math.log(5 * sampler.q[j]) for j in ids])
        rows.append(torch.logsumexp(scores, 0) - scores[0])
    reference = torch.stack(rows)
    assert_matches_reference(layer.loss(hidden, target, reduction="none"), reference, [hidden, *layer.parameters()])
    # Only the targets' and samples' correction rows are touched.
    layer.zero_grad()
    layer.loss(hidden, target).backward()
    touched = set(layer.correction.grad.coalesce().indices()[0].tolist())
    assert touched == set(draws) | set(target.tolist())


def test_sampled_step_embeds_only_targets_and_samples():
    layer = _layer(num_samples=4)
    assert layer.sampler.__class__.__name__ == "LogUniformSampler"
    seen = []
    layer.cnn.register_forward_hook(lambda module, args, out: seen.append(args[0].shape[0]))
    layer.train()
    layer.loss(torch.randn(3, H, dtype=torch.float64), torch.tensor([1, 2, 2])).backward()
    assert len(seen) == 1 and seen[0] <= 2 + 4


def test_embeddings_are_cached_in_eval_until_parameters_change():
    layer = _layer()
    layer.eval()
    with torch.no_grad():
        first = layer.embeddings()
        assert layer.embeddings() is first
        layer.cnn.projection.bias.add_(1.0)
        second = layer.embeddings()
        assert second is not first and not torch.allclose(second, first)
        layer.eval()  # e.g. every evaluation call of a decoder: the table stays
        assert layer.embeddings() is second
    # With gradients recorded, or in training, nothing is cached.
    assert layer.embeddings().requires_grad
    layer.train()
    assert layer._cache is None
    with torch.no_grad():
        assert layer.embeddings() is not layer.embeddings()


def test_parameters_grow_with_the_correction_not_with_h():
    full = bigvocab.create_output("full", H, V)
    plain = bigvocab.create_output("cnn", H, V, words=WORDS, correction_dim=0, **SMALL)
    corrected = bigvocab.create_output("cnn", H, V, words=WORDS, correction_dim=3, **SMALL)

    def count(module):
        return sum(p.numel() for p in module.parameters())

    assert count(corrected) - count(plain) == V * 3 + 3 * H
    assert count(full) == V * H + V


def test_num_samples_is_checked_like_every_sampling_layer():
    assert _layer(num_samples=3).num_samples == 3
    assert _layer(num_samples=None).num_samples == V - 1  # the default 1024, capped at V - 1
    with pytest.raises(BigvocabError, match="smaller than the number of classes"):
        _layer(num_samples=V)


@pytest.mark.parametrize(
    "options, match",
    [
        ({"words": None}, "needs words="),
        ({"words": WORDS[:-1]}, f"sequence of {V} strings"),
        ({"words": "abc"}, "sequence of"),
        ({"num_samples": 0}, "num_samples"),
        ({"correction_dim": -1}, "correction_dim"),
        ({"filters": ()}, "at least one"),
        ({"num_samples": 3, "sampler": "nope"}, "unknown sampler"),
        ({"num_samples": 3, "sampler": 5}, "sampler must be"),
    ],
)
def test_bad_options_are_named(options, match):
    with pytest.raises(BigvocabError, match=match):
        bigvocab.create_output("cnn", H, V, **{"words": WORDS, **options})
