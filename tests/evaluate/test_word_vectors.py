"""WordVectors: cosine neighbours against brute force, and the word2vec formats read by gensim."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bigvocab.errors import DataError
from bigvocab.evaluate.vectors import WordVectors, load_word2vec_format

WORDS = ["the", "of", "paris", "France", "ünïcode", "</s>", "<unk>", "a-b"]


@pytest.fixture
def vectors() -> WordVectors:
    generator = torch.Generator().manual_seed(5)
    return WordVectors(WORDS, torch.randn(len(WORDS), 6, generator=generator))


def brute_neighbours(vectors: WordVectors, query: torch.Tensor, exclude, limit):
    scored = []
    for i in range(limit):
        if i == exclude:
            continue
        row = vectors.vectors[i]
        scored.append((float(row @ query / (row.norm() * query.norm())), vectors.words[i]))
    return [(word, score) for score, word in sorted(scored, reverse=True)]


def test_most_similar_matches_brute_force(vectors):
    for word in WORDS:
        got = vectors.most_similar(word, topn=100)
        expected = brute_neighbours(vectors, vectors[word], vectors.index(word), len(WORDS))
        assert [w for w, _ in got] == [w for w, _ in expected]
        assert [s for _, s in got] == pytest.approx([s for _, s in expected], abs=1e-6)
    query = torch.randn(6)
    got = vectors.most_similar(query, topn=3, restrict_vocab=5)
    expected = brute_neighbours(vectors, query, None, 5)[:3]
    assert [w for w, _ in got] == [w for w, _ in expected]


def test_most_similar_errors(vectors):
    with pytest.raises(DataError, match="not in the vocabulary"):
        vectors.most_similar("missing")
    with pytest.raises(DataError, match="dimensions"):
        vectors.most_similar(torch.ones(3))


def test_construction_errors():
    with pytest.raises(DataError, match="whitespace"):
        WordVectors(["new york"], torch.ones(1, 2))
    with pytest.raises(DataError, match="twice"):
        WordVectors(["a", "a"], torch.ones(2, 2))
    with pytest.raises(DataError, match="matrix"):
        WordVectors(["a", "b"], torch.ones(3, 2))


@pytest.mark.parametrize("binary", [False, True])
def test_round_trip_is_exact(vectors, tmp_path, binary):
    path = tmp_path / "v.bin"
    vectors.save_word2vec_format(path, binary=binary)
    loaded = WordVectors.load_word2vec_format(path, binary=binary)
    assert loaded.words == WORDS
    assert torch.equal(loaded.vectors, vectors.vectors)


def test_binary_layout_is_word2vec_c(tmp_path):
    path = tmp_path / "v.bin"
    WordVectors(["ab", "c"], torch.tensor([[1.0, -2.0], [0.5, 3.0]])).save_word2vec_format(path, binary=True)
    expected = (
        b"2 2\n"
        + b"ab "
        + np.array([1.0, -2.0], "<f4").tobytes()
        + b"\n"
        + b"c "
        + np.array([0.5, 3.0], "<f4").tobytes()
        + b"\n"
    )
    assert path.read_bytes() == expected


@pytest.mark.parametrize("binary", [False, True])
def test_gensim_reads_our_files_and_we_read_gensims(vectors, tmp_path, binary):
    gensim_models = pytest.importorskip("gensim.models")
    ours = tmp_path / "ours"
    vectors.save_word2vec_format(ours, binary=binary)
    keyed = gensim_models.KeyedVectors.load_word2vec_format(str(ours), binary=binary)
    assert list(keyed.index_to_key) == WORDS
    np.testing.assert_array_equal(keyed.vectors, vectors.vectors.numpy())
    theirs = tmp_path / "theirs"
    keyed.save_word2vec_format(str(theirs), binary=binary)
    loaded = load_word2vec_format(theirs, binary=binary)
    assert loaded.words == WORDS
    # gensim's text writer prints 6 decimals
    torch.testing.assert_close(loaded.vectors, vectors.vectors, rtol=0, atol=0 if binary else 1e-6)


def test_malformed_files(tmp_path):
    cases = {
        "header": (b"three 2\n", False, "first line"),
        "short": (b"2 2\na 1 2\n", False, "ends after 1"),
        "values": (b"1 3\na 1 2\n", False, "2 values, expected 3"),
        "number": (b"1 2\na 1 x\n", False, "not a number"),
        "truncated": (b"1 2\na " + b"\x00" * 5, True, "truncated"),
    }
    for name, (data, binary, message) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(DataError, match=message):
            load_word2vec_format(path, binary=binary)
    with pytest.raises(DataError, match="does not exist"):
        load_word2vec_format(tmp_path / "missing")


def test_aligned_to_puts_rows_in_the_given_order_and_fills_gaps_with_the_mean(vectors):
    matrix, missing = vectors.aligned_to(["paris", "nowhere", "the"])
    assert missing == 1
    assert torch.equal(matrix[0], vectors["paris"]) and torch.equal(matrix[2], vectors["the"])
    assert torch.allclose(matrix[1], vectors.vectors.mean(dim=0))
    with pytest.raises(DataError, match="another vocabulary"):
        vectors.aligned_to(["x", "y"])


def test_load_word_vectors_reads_word2vec_text_and_binary(vectors, tmp_path):
    from bigvocab.evaluate import load_word_vectors

    for name, binary in (("v.txt", False), ("v.bin", True)):
        vectors.save_word2vec_format(tmp_path / name, binary=binary)
        loaded = load_word_vectors(tmp_path / name)
        assert loaded.words == vectors.words and torch.allclose(loaded.vectors, vectors.vectors)
