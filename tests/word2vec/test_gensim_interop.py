"""Against gensim itself (skipped when gensim is not installed): files both ways, the same answers
on the same vectors, and a gensim tutorial script that runs after changing only its import."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")
gensim_models = pytest.importorskip("gensim.models")

import bigvocab  # noqa: E402
from bigvocab.word2vec import KeyedVectors  # noqa: E402

#: gensim's own toy corpus (gensim.test.utils.common_texts), written out so the test needs no data.
COMMON_TEXTS = [
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


def _tutorial(Word2Vec, tmp_path):
    """gensim's Word2Vec tutorial (models/word2vec.html), verbatim but for the class passed in."""
    model = Word2Vec(sentences=COMMON_TEXTS, vector_size=100, window=5, min_count=1, workers=4)
    model.save(str(tmp_path / "word2vec.model"))
    model = Word2Vec.load(str(tmp_path / "word2vec.model"))
    model.train([["hello", "world"]], total_examples=1, epochs=1)
    vector = model.wv["computer"]
    sims = model.wv.most_similar("computer", topn=10)
    word_vectors = model.wv
    word_vectors.save_word2vec_format(str(tmp_path / "vectors.txt"))
    model2 = Word2Vec(min_count=1)
    model2.build_vocab(COMMON_TEXTS)
    trained = model2.train(COMMON_TEXTS, total_examples=model2.corpus_count, epochs=model2.epochs)
    similarity = model2.wv.similarity("graph", "trees")
    odd = model2.wv.doesnt_match(["human", "computer", "interface", "trees"])
    n_sim = model2.wv.n_similarity(["human", "computer"], ["graph", "trees"])
    top = model2.wv.similar_by_word("graph", topn=3)
    keys = model2.wv.index_to_key[:3]
    return {
        "vector": vector.shape,
        "sims": [type(x) for pair in sims[:1] for x in pair],
        "len_sims": len(sims),
        "trained": len(trained),
        "similarity": isinstance(similarity, (float, np.floating)),
        "odd": type(odd),
        "n_sim": isinstance(n_sim, (float, np.floating)),
        "top": len(top),
        "keys": len(keys),
    }


@pytest.mark.filterwarnings("ignore:the training corpus holds no word")  # gensim only logs it
def test_a_gensim_tutorial_runs_after_changing_only_the_import(tmp_path):
    (tmp_path / "g").mkdir()
    (tmp_path / "b").mkdir()
    assert _tutorial(bigvocab.Word2Vec, tmp_path / "b") == _tutorial(gensim_models.Word2Vec, tmp_path / "g")


@pytest.mark.parametrize("binary", [False, True])
def test_vectors_go_both_ways(tmp_path, small_corpus, binary):
    ours = bigvocab.Word2Vec(small_corpus[0][:300], vector_size=16, min_count=1, epochs=1, progress=False)
    path = tmp_path / "ours.bin"
    ours.wv.save_word2vec_format(str(path), binary=binary)
    theirs = gensim_models.KeyedVectors.load_word2vec_format(str(path), binary=binary)
    assert list(theirs.index_to_key) == ours.wv.index_to_key
    np.testing.assert_array_equal(theirs.vectors, ours.wv.vectors)
    gensim_model = gensim_models.Word2Vec(small_corpus[0][:300], vector_size=16, min_count=1, epochs=1, workers=1)
    gensim_model.wv.save_word2vec_format(str(tmp_path / "theirs"), binary=binary)
    back = KeyedVectors.load_word2vec_format(str(tmp_path / "theirs"), binary=binary)
    assert back.index_to_key == list(gensim_model.wv.index_to_key)
    np.testing.assert_array_equal(back.vectors, gensim_model.wv.vectors)


def test_same_answers_as_gensim_on_the_same_vectors(tmp_path, small_corpus):
    ours = bigvocab.Word2Vec(small_corpus[0], vector_size=16, min_count=1, epochs=2, workers=1, progress=False).wv
    ours.save_word2vec_format(str(tmp_path / "v.txt"))
    theirs = gensim_models.KeyedVectors.load_word2vec_format(str(tmp_path / "v.txt"))
    for got, want in zip(
        ours.most_similar(positive=["w1", "w2"], negative=["w3"], topn=5),
        theirs.most_similar(positive=["w1", "w2"], negative=["w3"], topn=5),
    ):
        assert got[0] == want[0] and got[1] == pytest.approx(want[1], abs=1e-5)
    assert ours.similarity("w1", "w5") == pytest.approx(float(theirs.similarity("w1", "w5")), abs=1e-5)
    assert ours.n_similarity(["w1", "w2"], ["w5"]) == pytest.approx(
        float(theirs.n_similarity(["w1", "w2"], ["w5"])), abs=1e-5
    )
    words = ours.index_to_key
    analogies = tmp_path / "questions.txt"
    lines = [": first"] + [" ".join(words[i : i + 4]) for i in range(0, 40, 4)]
    lines += [": second", f"{words[0]} {words[1]} {words[2]} absent"] + [
        " ".join(words[i : i + 4]) for i in range(1, 40, 3)
    ]
    analogies.write_text("\n".join(lines) + "\n")
    score, sections = ours.evaluate_word_analogies(str(analogies))
    want_score, want_sections = theirs.evaluate_word_analogies(str(analogies))
    assert score == pytest.approx(want_score)
    assert [(s["section"], len(s["correct"]), len(s["incorrect"])) for s in sections] == [
        (s["section"], len(s["correct"]), len(s["incorrect"])) for s in want_sections
    ]
    assert sections[0]["correct"] == want_sections[0]["correct"]
    pairs = tmp_path / "pairs.tsv"
    rng = np.random.default_rng(0)
    pairs.write_text(
        "".join(
            f"{words[i]}\t{words[j]}\t{rng.uniform(0, 10):.2f}\n"
            for i, j in rng.integers(0, 60, size=(40, 2))
            if i != j
        )
        + "absent\tw1\t5.0\n"
    )
    (pearson, _), (spearman, _), oov = ours.evaluate_word_pairs(str(pairs))
    want_pearson, want_spearman, want_oov = theirs.evaluate_word_pairs(str(pairs))
    # cosines in float32 on both sides, summed in a different order: near-equal cosines may swap
    # ranks, and one adjacent swap among ~40 pairs moves Spearman's rho by 6*2/(n(n^2-1)) ~ 2e-4
    assert pearson == pytest.approx(want_pearson[0], abs=1e-4)
    assert spearman == pytest.approx(want_spearman[0], abs=1e-3)
    assert oov == pytest.approx(want_oov)
