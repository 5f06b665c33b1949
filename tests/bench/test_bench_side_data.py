"""Side data for the layers: word vectors that know the classes, and the generic builder that
passes words / vectors / num_samples only to layers whose constructor names them."""

from __future__ import annotations

import pytest
import torch

from bigvocab.bench.harness.selection import Candidate
from bigvocab.bench.harness.side_data import SideData, build_layer, class_vectors, context_vectors, synthetic_side_data
from bigvocab.data.synthetic import SyntheticLanguage
from bigvocab.outputs.full import FullSoftmax
from bigvocab.registry import OUTPUTS


def nearest_neighbour_same_class(vectors: torch.Tensor, word_class: torch.Tensor) -> float:
    unit = torch.nn.functional.normalize(vectors, dim=1)
    similarity = unit @ unit.t()
    similarity.fill_diagonal_(-2.0)
    neighbour = similarity.argmax(1)
    return float((word_class == word_class[neighbour]).double().mean())


def test_context_vectors_recover_the_synthetic_classes():
    language = SyntheticLanguage(vocab_size=200, num_classes=10, seed=1)
    ids = language.sample(50_000, torch.Generator().manual_seed(0))
    vectors = context_vectors(ids, 200, seed=0)
    assert vectors.shape == (200, 16) and torch.isfinite(vectors).all()
    frequent = (torch.bincount(ids, minlength=200) >= 20).nonzero().squeeze(1)
    # With 10 classes a random neighbour shares the class about 1 time in 10; words seen 20+ times
    # have neighbour counts close enough to their class's to be found (0.98 with this seed). Half
    # is five times chance, a margin no lucky draw reaches with ~100 words.
    assert nearest_neighbour_same_class(vectors[frequent], language.word_class[frequent]) >= 0.5


def test_class_vectors_put_words_of_a_class_together():
    word_class = torch.arange(300) % 12
    vectors = class_vectors(word_class, seed=0)
    assert nearest_neighbour_same_class(vectors, word_class) >= 0.9


def test_synthetic_side_data_is_sorted_counts_words_and_lazy_vectors():
    side = synthetic_side_data(500, num_classes=10, seed=0)
    assert len(side.counts) == len(side.words) == 500
    assert side.counts == sorted(side.counts, reverse=True) and min(side.counts) >= 1
    assert side._vectors is None
    assert side.vectors().shape == (500, 16) and side.vectors() is side.vectors()


class Picky(FullSoftmax):
    """Takes words and num_samples but not vectors, and records what it was given."""

    def __init__(self, in_features, num_classes, *, words=None, num_samples=None, counts=None):
        super().__init__(in_features, num_classes)
        self.given = {"words": words, "num_samples": num_samples, "counts": counts}
        self.num_samples = 7 if num_samples is None else num_samples


@pytest.fixture
def picky(monkeypatch):
    monkeypatch.setitem(OUTPUTS._factories, "picky-test-layer", Picky)


def side_for(vocab: int) -> SideData:
    def no_vectors():
        raise AssertionError("vectors computed for a layer that does not take them")

    return SideData(list(range(vocab, 0, -1)), [f"w{i}" for i in range(vocab)], no_vectors, "none")


def test_builder_passes_only_what_the_constructor_names(picky):
    layer, shown = build_layer(Candidate("picky-test-layer", "picky-test-layer"), 4, 10, side_for(10), num_samples=3)
    assert layer.given["words"] == [f"w{i}" for i in range(10)]
    assert layer.given["num_samples"] == 3
    assert list(layer.given["counts"]) == list(range(10, 0, -1))
    assert shown == {"words": "<10 strings>", "num_samples": 3}


def test_without_a_bench_k_the_layer_default_is_used_and_recorded(picky):
    layer, shown = build_layer(Candidate("picky-test-layer", "picky-test-layer"), 4, 10, side_for(10), num_samples=None)
    assert layer.given["num_samples"] is None
    assert shown["num_samples"] == 7


def test_builder_gives_full_neither_words_nor_samples():
    layer, shown = build_layer(Candidate("full", "full"), 4, 10, side_for(10), num_samples=3)
    assert isinstance(layer, FullSoftmax) and shown == {}
