"""gensim's features of ``bigvocab.Word2Vec``, each against a brute-force reference or gensim's rule:
online vocabulary growth, trim rules, vocabulary limits, per-key attributes, locked vectors, the
training loss, callbacks, predict_output_word, score, 3CosMul, vocabulary files, class-only load."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

pytest.importorskip("numba")

from bigvocab import CheckpointError, Word2Vec
from bigvocab.word2vec.corpus import RULE_DEFAULT, RULE_DISCARD, RULE_KEEP
from bigvocab.word2vec.keyed_vectors import KeyedVectors

QUIET = dict(progress=False, workers=1)
TEXTS = [
    ["human", "interface", "computer"],
    ["survey", "user", "computer", "system", "response", "time"],
    ["eps", "user", "interface", "system"],
    ["system", "human", "system", "eps"],
    ["user", "response", "time"],
    ["trees"],
    ["graph", "trees"],
    ["graph", "minors", "trees"],
    ["graph", "minors", "survey"],
]
NEW = [["computer", "artificial", "intelligence"], ["artificial", "trees"], ["artificial", "intelligence", "system"]]


@pytest.mark.parametrize("hs", [0, 1])
def test_online_growth_merges_counts_keeps_rows_and_trains_on(hs):
    model = Word2Vec(TEXTS * 5, vector_size=8, min_count=1, hs=hs, negative=0 if hs else 3, **QUIET)
    vectors, size = model.wv.vectors.copy(), len(model.wv)
    output = None if hs else model.syn1neg.copy()
    model.build_vocab(NEW, update=True)
    assert len(model.wv) == size + 2 and model.wv.index_to_key[-2:] == ["artificial", "intelligence"]
    assert model.wv.get_vecattr("computer", "count") == 5 * 2 + 1
    assert model.wv.get_vecattr("artificial", "count") == 3
    np.testing.assert_array_equal(model.wv.vectors[:size], vectors)  # trained rows kept
    if hs:
        assert model.syn1.shape == (size + 2, 8) and not model.syn1.any()  # another tree: nodes restart
        assert len(model.wv.get_vecattr("artificial", "code")) > 0
    else:
        np.testing.assert_array_equal(model.syn1neg[:size], output)
        assert not model.syn1neg[size:].any()
    new_row = model.wv["artificial"].copy()
    model.train(NEW, total_examples=len(NEW), epochs=5)
    assert not np.array_equal(model.wv["artificial"], new_row)


def test_update_needs_a_vocabulary_first():
    with pytest.raises(RuntimeError, match="online vocabulary-update"):
        Word2Vec(min_count=1, **QUIET).build_vocab(NEW, update=True)


def test_trim_rule_and_min_count():
    def rule(word, count, min_count):
        return {"human": RULE_DISCARD, "minors": RULE_KEEP}.get(word, RULE_DEFAULT)

    model = Word2Vec(min_count=3, **QUIET)
    model.build_vocab(TEXTS, trim_rule=rule)
    assert set(model.wv.index_to_key) == {"system", "user", "graph", "trees", "minors"}


def test_max_vocab_size_prunes_while_counting_as_gensim():
    corpus = [["graph", "system"], ["graph", "system"], ["system", "eps"], ["graph", "system"]]
    model = Word2Vec(corpus + [["minors", "survey", "minors", "survey", "minors"]], min_count=0, max_vocab_size=2,
                     vector_size=8, hs=1, negative=0, **QUIET)  # fmt: skip
    counts = {w: model.wv.get_vecattr(w, "count") for w in model.wv.index_to_key}
    assert counts == {"system": 4, "graph": 3, "minors": 3}


def test_max_final_vocab_raises_min_count_and_reports():
    model = Word2Vec(vector_size=8, max_final_vocab=4, min_count=2, sample=0, **QUIET)
    assert model.scan_vocab(TEXTS) == (29, 9)
    report = model.prepare_vocab()
    assert model.effective_min_count == 3  # the 5th most frequent word occurs twice
    assert report["num_retained_words"] == 4 and report["retain_total"] == 13 and report["drop_unique"] == 8


def test_unsorted_vocabulary_and_null_word():
    model = Word2Vec(TEXTS, vector_size=8, min_count=1, sorted_vocab=0, null_word=1, **QUIET)
    assert model.wv.index_to_key[:3] == ["human", "interface", "computer"]
    assert model.wv.index_to_key[-1] == "\0" and model.wv.get_vecattr("\0", "count") == 1


def test_one_chunk_trains_the_same_on_any_number_of_threads():
    one = Word2Vec(TEXTS, vector_size=8, min_count=1, workers=1, progress=False)
    three = Word2Vec(TEXTS, vector_size=8, min_count=1, workers=3, progress=False)
    np.testing.assert_array_equal(one.wv.vectors, three.wv.vectors)


def test_locked_vectors_do_not_move():
    model = Word2Vec(vector_size=8, min_count=1, **QUIET)
    model.build_vocab(TEXTS)
    before = model.wv.vectors.copy()
    model.wv.vectors_lockf = np.ones(len(model.wv), dtype=np.float32)
    model.wv.vectors_lockf[0] = 0.0
    model.train(TEXTS * 3, total_examples=27, epochs=2)
    np.testing.assert_array_equal(model.wv.vectors[0], before[0])
    assert not np.array_equal(model.wv.vectors[1], before[1])


def test_training_loss_is_a_float_tally_per_train_call_and_callbacks_see_each_epoch():
    seen = []

    class Recorder:
        def on_train_begin(self, model):
            seen.append("begin")

        def on_epoch_end(self, model):
            seen.append(model.get_latest_training_loss())

        def on_train_end(self, model):
            seen.append("end")

    model = Word2Vec(vector_size=8, min_count=1, sg=1, hs=1, negative=0, sample=0, **QUIET)
    model.build_vocab(TEXTS)
    model.train(TEXTS, total_examples=9, epochs=3, compute_loss=True, callbacks=[Recorder()])
    assert seen[0] == "begin" and seen[-1] == "end" and len(seen) == 5
    assert 0 < seen[1] < seen[2] < seen[3] == model.get_latest_training_loss()
    assert isinstance(model.get_latest_training_loss(), float)


def test_predict_output_word_is_the_softmax_over_the_output_vectors():
    model = Word2Vec(TEXTS * 3, vector_size=8, min_count=1, **QUIET)
    context = ["system", "human"]
    hidden = model.wv[context].mean(0).astype(np.float64)
    logits = model.syn1neg.astype(np.float64) @ hidden
    probabilities = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    order = np.argsort(-probabilities)[:3]
    got = model.predict_output_word(context, topn=3)
    assert [w for w, _ in got] == [model.wv.index_to_key[i] for i in order]
    np.testing.assert_allclose([p for _, p in got], probabilities[order], rtol=1e-5)
    assert model.predict_output_word(["unknown"]) is None
    with pytest.raises(RuntimeError, match="syn1neg"):
        Word2Vec(TEXTS, vector_size=8, min_count=1, hs=1, negative=0, **QUIET).predict_output_word(context)


@torch.no_grad()
def test_score_is_the_exact_log_likelihood_of_each_sentence():
    model = Word2Vec(TEXTS, vector_size=8, min_count=1, sg=1, hs=1, negative=0, window=2, **QUIET)
    sentence = TEXTS[1]
    ids = [model.wv.key_to_index[w] for w in sentence]
    weight = model.module.embedding.weight.detach()
    want = 0.0
    for i, word in enumerate(ids):
        for j in range(max(0, i - 2), min(len(ids), i + 3)):
            if j != i:  # log p(word | ids[j]) by the layer's exact log-softmax
                want += float(model.module.output.log_softmax(weight[ids[j]][None])[0, word])
    scores = model.score([sentence, TEXTS[0]], total_sentences=1)
    assert scores.shape == (1,) and scores[0] == pytest.approx(want, rel=1e-5)


def test_cum_table_is_gensims_cumulative_noise_table():
    model = Word2Vec(TEXTS, vector_size=8, min_count=1, ns_exponent=0.75, **QUIET)
    counts = model.wv.expandos["count"].astype(np.float64) ** 0.75
    want = np.round(np.cumsum(counts / counts.sum()) * (2**31 - 1))
    np.testing.assert_allclose(model.cum_table, want, atol=2)
    assert model.cum_table[-1] == 2**31 - 1


def test_similarity_is_n_similarity_of_one_key_to_the_bit_and_cosmul_is_levy_goldberg():
    model = Word2Vec(TEXTS * 3, vector_size=8, min_count=1, **QUIET)
    wv = model.wv
    assert wv.similarity("graph", "trees") == wv.n_similarity(["graph"], ["trees"])
    unit = wv.vectors / np.linalg.norm(wv.vectors, axis=1, keepdims=True)

    def shifted(word):
        return (1 + unit @ unit[wv.key_to_index[word]]) / 2

    scores = shifted("graph") * shifted("trees") / (shifted("user") + 1e-6)
    scores[[wv.key_to_index[w] for w in ("graph", "trees", "user")]] = -math.inf
    got = wv.most_similar_cosmul(positive=["graph", "trees"], negative=["user"], topn=3)
    assert [w for w, _ in got] == [wv.index_to_key[i] for i in np.argsort(-scores)[:3]]
    np.testing.assert_allclose([s for _, s in got], np.sort(scores)[::-1][:3], rtol=1e-5)


def test_word2vec_format_with_a_vocabulary_file(tmp_path):
    model = Word2Vec(TEXTS, vector_size=8, min_count=1, **QUIET)
    model.wv.save_word2vec_format(tmp_path / "v.bin", tmp_path / "vocab.txt", binary=True)
    loaded = KeyedVectors.load_word2vec_format(tmp_path / "v.bin", tmp_path / "vocab.txt", binary=True)
    assert loaded.get_vecattr("system", "count") == model.wv.get_vecattr("system", "count") == 4
    assert (tmp_path / "vocab.txt").read_text().splitlines()[0] == "system 4"


def test_load_is_a_class_method_and_gensim_3_keywords_get_a_hint(tmp_path):
    model = Word2Vec(TEXTS, vector_size=8, min_count=1, **QUIET)
    model.save(tmp_path / "m")
    assert len(Word2Vec.load(tmp_path / "m").wv) == len(model.wv)
    with pytest.raises(AttributeError, match="class method"):
        model.load(tmp_path / "m")
    with pytest.raises(TypeError, match="unexpected keyword"):
        Word2Vec(sentense=TEXTS)
    assert torch.equal(Word2Vec.load(tmp_path / "m").module.embedding.weight, model.module.embedding.weight)
    (tmp_path / "text").write_text("not a model\n")
    pytest.importorskip("gensim")
    with pytest.raises(CheckpointError, match="written neither by bigvocab.Word2Vec.save nor by gensim"):
        Word2Vec.load(tmp_path / "text")
