"""bigvocab.Word2Vec behaves as gensim's Word2Vec: data path, two-step training, files, errors."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from bigvocab import ConfigError, DataError, Word2Vec
from bigvocab.word2vec.corpus import DROP, encode, encoding_index, plan_vocabulary, scan

QUIET = dict(progress=False)


def _small(small_corpus, train: bool = True, **kwargs) -> Word2Vec:
    """A model on 300 sentences of the synthetic language (``train=False``: not even a vocabulary)."""
    options = dict(vector_size=16, window=3, min_count=1, epochs=1, workers=1, **QUIET)
    return Word2Vec(small_corpus[0][:300] if train else None, **{**options, **kwargs})


# ---------------------------------------------------------------------- data path
def test_rare_words_are_dropped_and_windows_reach_over_them():
    found = scan([["a", "b", "rare", "a"], ["b", "a"]])
    plan = plan_vocabulary(found, min_count=2)
    words = plan.words
    assert words == ["a", "b"] and plan.counts == [3, 2]
    stream, n = encode([["a", "b", "rare", "a"], ["b", "a"]], encoding_index(found, words))
    assert stream.tolist() == [0, 1, 0, -1, 1, 0, -1] and n == 5


def test_unk_keeps_rare_words_as_one_token():
    found = scan([["a", "b", "rare", "a"], ["odd", "a"]])
    plan = plan_vocabulary(found, min_count=2, unk="<unk>")
    words = plan.words
    assert words == ["a", "<unk>"] and plan.counts == [3, 3]
    stream, _ = encode([["a", "b", "rare", "a"], ["unseen"]], encoding_index(found, words, "<unk>"), unseen=1)
    assert stream.tolist() == [0, 1, 1, 0, -1, 1, -1]
    model = Word2Vec([["a", "b", "rare", "a"], ["odd", "a"]] * 3, min_count=4, unk="<unk>", **QUIET)
    assert model.wv.index_to_key == ["a", "<unk>"]


def test_drop_marker_is_not_a_word_id():
    assert DROP < -1


def test_windows_stop_at_sentence_ends():
    """One-word sentences have no context: if windows crossed sentence ends, "a" and "b" would
    train each other. Nothing may move (neg's output vectors start at zero)."""
    model = Word2Vec([["a"], ["b"]] * 50, min_count=1, sg=1, sample=0, **QUIET)
    untrained = Word2Vec(min_count=1, sg=1, sample=0, **QUIET)
    untrained.build_vocab([["a"], ["b"]] * 50)
    np.testing.assert_array_equal(model.wv.vectors, untrained.wv.vectors)
    assert not model.syn1neg.any()


def test_corpus_file_trains_exactly_as_the_same_sentences(tmp_path, small_corpus):
    sentences, _ = small_corpus
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(" ".join(s) for s in sentences[:300]) + "\n", encoding="utf-8")
    from_file = _small(small_corpus, train=False)
    from_file.build_vocab(corpus_file=str(path))
    from_file.train(corpus_file=str(path), total_examples=from_file.corpus_count, epochs=1)
    from_list = _small(small_corpus)
    assert from_file.wv.index_to_key == from_list.wv.index_to_key
    np.testing.assert_array_equal(from_file.wv.vectors, from_list.wv.vectors)
    # two threads each read their own range of the memory-mapped stream
    Word2Vec(corpus_file=str(path), min_count=1, workers=2, epochs=1, **QUIET)


def test_progress_is_a_bar_on_a_terminal_and_logging_elsewhere(small_corpus, capsys, caplog, monkeypatch):
    with caplog.at_level("INFO", logger="bigvocab.word2vec"):
        _small(small_corpus, progress=True, workers=2)
    assert "words/s" in caplog.text and capsys.readouterr().err == ""
    caplog.clear()
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)
    with caplog.at_level("INFO", logger="bigvocab.word2vec"):
        _small(small_corpus, progress=True, workers=2)
    assert "word/s" in capsys.readouterr().err and "words/s" not in caplog.text
    with caplog.at_level("INFO", logger="bigvocab.word2vec"):
        _small(small_corpus, progress=False)
    assert capsys.readouterr().err == "" and "words/s" not in caplog.text


def test_other_output_layers_train_on_the_torch_path(small_corpus):
    model = _small(small_corpus, output="nce", sg=1)
    assert not model.uses_engine
    untouched = _small(small_corpus, train=False, output="nce", sg=1)
    untouched.build_vocab(small_corpus[0][:300])
    assert not np.array_equal(model.wv.vectors, untouched.wv.vectors)


# ---------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        (dict(sentences=[]), DataError, "build vocabulary"),
        (dict(sentences=[["a", "b"]], min_count=5), DataError, "min_count=5"),
        (dict(sentences=[["a", "b"]], min_count=1, negative=0, hs=0), ConfigError, "negative=0 with hs=0"),
        (dict(sentences=[["a", "b"]], min_count=1, workers=0), ConfigError, "workers"),
        (dict(sentences="a b c"), ConfigError, "got a string"),
        (dict(sentences=(s for s in [["a"]])), ConfigError, "generator"),
        (dict(sentences=[["a"]], corpus_file="x"), ConfigError, "not both"),
        (dict(corpus_file="/nonexistent/corpus.txt"), DataError, "does not exist"),
        (dict(output="nec"), Exception, "nce"),
        (dict(hogbatch=True, sg=0), ConfigError, "hogbatch"),
        (dict(size=50), ConfigError, "use vector_size="),
        (dict(iter=3), ConfigError, "use epochs="),
        (dict(sentences=[["a", "b"]], min_count=1, ns_exponent=float("inf")), ConfigError, "ns_exponent"),
    ],
)
def test_bad_input_gets_one_line_error(kwargs, error, words):
    with pytest.raises(error) as info:
        Word2Vec(**kwargs, **QUIET)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_train_needs_counts_and_epochs_as_gensim(small_corpus):
    model = Word2Vec(min_count=1, **QUIET)
    with pytest.raises(DataError, match="build vocabulary"):
        model.train([["a"]], total_examples=1, epochs=1)
    model.build_vocab(small_corpus[0][:50])
    with pytest.raises(ConfigError, match="total_examples"):
        model.train(small_corpus[0][:50], epochs=1)
    with pytest.raises(ConfigError, match="epochs"):
        model.train(small_corpus[0][:50], total_examples=50)


# ---------------------------------------------------------------------- files and queries
def test_save_load_round_trip_and_more_training(tmp_path, small_corpus):
    model = _small(small_corpus, hs=1, negative=0)
    model.save(str(tmp_path / "w2v.model"))
    loaded = Word2Vec.load(str(tmp_path / "w2v.model"))
    np.testing.assert_array_equal(loaded.wv.vectors, model.wv.vectors)
    np.testing.assert_array_equal(loaded.syn1, model.syn1)
    assert loaded.wv.most_similar("w3", topn=3) == model.wv.most_similar("w3", topn=3)
    before = loaded.wv["w3"].copy()
    loaded.train(small_corpus[0][:100], total_examples=100, epochs=1)
    assert not np.array_equal(before, loaded.wv["w3"])


def test_keyed_vectors_queries(small_corpus):
    wv = _small(small_corpus).wv
    unit = wv.vectors / np.linalg.norm(wv.vectors, axis=1, keepdims=True)
    i, j = wv.key_to_index["w1"], wv.key_to_index["w2"]
    assert wv.index_to_key[i] == "w1" and wv["w1"].shape == (16,) and wv[["w1", "w2"]].shape == (2, 16)
    np.testing.assert_allclose(wv.get_vector("w1", norm=True), unit[i], rtol=1e-5)
    assert wv.similarity("w1", "w2") == pytest.approx(float(unit[i] @ unit[j]), rel=1e-5)
    brute = unit @ unit[i]
    brute[i] = -np.inf
    best = [wv.index_to_key[k] for k in np.argsort(-brute)[:5]]
    assert [key for key, _ in wv.most_similar("w1", topn=5)] == best
    assert [key for key, _ in wv.similar_by_word("w1", topn=5)] == best
    assert wv.similar_by_vector(wv["w1"], topn=1)[0][0] == "w1"
    mean1, mean2 = wv[["w1", "w2"]].mean(0), wv[["w3"]].mean(0)
    want = mean1 @ mean2 / np.linalg.norm(mean1) / np.linalg.norm(mean2)
    assert wv.n_similarity(["w1", "w2"], ["w3"]) == pytest.approx(float(want), rel=1e-5)
    with pytest.raises(KeyError):
        wv["not-a-word"]


@pytest.mark.parametrize("hs", [0, 1])
def test_initial_vectors_are_gensims(small_corpus, hs):
    """gensim 4 starts the input vectors uniform in [-1, 1) / vector_size and the output rows at
    zero; ``bigvocab train`` keeps word2vec.c's [-0.5, 0.5) / vector_size."""
    from bigvocab.models import build_model

    model = _small(small_corpus, train=False, hs=hs, negative=0 if hs else 5)
    model.build_vocab(small_corpus[0][:300])
    bound = 1.0 / model.vector_size
    vectors = np.abs(model.wv.vectors)
    assert vectors.max() < bound and vectors.max() > 0.9 * bound and vectors.mean() > 0.4 * bound
    assert not (model.syn1 if hs else model.syn1neg).any()
    cli_model = build_model("skipgram", 50, "neg", counts=list(range(50, 0, -1)), model_kwargs={"vector_size": 16})
    assert cli_model.embedding.weight.abs().max() < 0.5 * bound
