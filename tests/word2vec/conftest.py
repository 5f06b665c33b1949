"""A small corpus with known word classes: sentences of the synthetic class-bigram language."""

from __future__ import annotations

import pytest

from bigvocab.data.synthetic import SyntheticLanguage


def synthetic_sentences(tokens: int = 60000, vocab_size: int = 200, num_classes: int = 10, length: int = 20):
    """(sentences of ``length`` words "w<id>", the language) -- words of one class share their contexts."""
    language = SyntheticLanguage(vocab_size, num_classes, seed=0)
    words = [f"w{i}" for i in language.sample(tokens).tolist()]
    return [words[i : i + length] for i in range(0, len(words), length)], language


@pytest.fixture(scope="session")
def small_corpus():
    return synthetic_sentences()


@pytest.fixture(scope="session")
def same_class_rate():
    return _same_class_rate


def _same_class_rate(wv, language, top: int = 100) -> float:
    """Share of the ``top`` most frequent words whose nearest neighbour is in their class."""
    word_class = language.word_class
    hits = 0
    for key in wv.index_to_key[:top]:
        neighbour = wv.most_similar(key, topn=1)[0][0]
        hits += int(word_class[int(key[1:])] == word_class[int(neighbour[1:])])
    return hits / top
