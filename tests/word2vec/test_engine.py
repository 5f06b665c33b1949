"""The engine end to end: reproducible for a seed on one thread, as good as the torch path."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from bigvocab import Word2Vec
from bigvocab.word2vec.engine import chunk_end

COMBINATIONS = [(sg, hs) for sg in (1, 0) for hs in (0, 1)]


def _train(sentences, **kwargs) -> Word2Vec:
    options = dict(vector_size=20, window=3, min_count=1, epochs=3, workers=1, progress=False, sample=1e-3)
    return Word2Vec(sentences, **{**options, **kwargs})


@pytest.mark.parametrize("sg,hs", COMBINATIONS)
def test_single_thread_run_is_deterministic(small_corpus, sg, hs):
    sentences, _ = small_corpus
    first = _train(sentences[:500], sg=sg, hs=hs, negative=0 if hs else 5, seed=3)
    again = _train(sentences[:500], sg=sg, hs=hs, negative=0 if hs else 5, seed=3)
    other = _train(sentences[:500], sg=sg, hs=hs, negative=0 if hs else 5, seed=4)
    assert first.uses_engine
    np.testing.assert_array_equal(first.wv.vectors, again.wv.vectors)
    assert not np.array_equal(first.wv.vectors, other.wv.vectors)


@pytest.mark.parametrize("sg,hs", COMBINATIONS)
def test_engine_learns_as_well_as_the_torch_path(small_corpus, same_class_rate, sg, hs):
    """Share of words whose nearest neighbour is in their class, mean over 3 seeds. Measured over
    4 seeds per path (tests/word2vec, Nov 2026): per-seed values spread with a standard deviation
    of 0.03-0.08, so a mean of 3 has about 0.05 and a difference of two means about 0.06; the
    engine may trail the torch path by at most 0.15 (2.5 sigma), and both must be far above chance
    (about 0.1 with 10 classes; the worst mean measured, torch CBOW + neg, was 0.50)."""
    sentences, language = small_corpus
    options = dict(sg=sg, hs=hs, negative=0 if hs else 5)
    rates = {}
    for engine in (True, False):
        models = [_train(sentences, engine=engine, seed=seed, **options) for seed in (1, 2, 3)]
        assert all(model.uses_engine == engine for model in models)
        rates[engine] = np.mean([same_class_rate(model.wv, language) for model in models])
    assert rates[False] > 0.35 and rates[True] > 0.35, rates
    assert rates[True] > rates[False] - 0.15, rates


@pytest.mark.parametrize("sg,hs", COMBINATIONS)
def test_two_threads_learn_too(small_corpus, same_class_rate, sg, hs):
    """Two threads; with a tree, each moves its own copies of the top rows and merges them. The
    bound is 3 standard deviations under the mean of the weakest combination (CBOW + neg on two
    threads: 0.58 +- 0.06 over seeds 1-5), since two threads are not reproducible."""
    sentences, language = small_corpus
    model = _train(sentences, sg=sg, hs=hs, negative=0 if hs else 5, workers=2, seed=1)
    assert same_class_rate(model.wv, language) > 0.4


def test_hogbatch_learns(small_corpus, same_class_rate):
    sentences, language = small_corpus
    model = _train(sentences, sg=1, hogbatch=True, seed=1)
    assert same_class_rate(model.wv, language) > 0.5


def test_chunks_end_at_sentence_ends():
    stream = np.array([1, 2, -1, 3, 4, 5, -1, 6, -1, 7, 8, 9, 10, -1], dtype=np.int32)
    assert [chunk_end(stream, at) for at in (1, 2, 3, 4, 8, 9, 10, 14, 20)] == [3, 3, 3, 7, 9, 9, 14, 14, 14]


def test_a_sentence_longer_than_max_sentence_is_cut_where_the_chunk_reaches():
    from bigvocab.kernels.word2vec import MAX_SENTENCE

    stream = np.append(np.arange(3 * MAX_SENTENCE, dtype=np.int32), -1)
    assert chunk_end(stream, 5) == 5 and chunk_end(stream, 2 * MAX_SENTENCE + 5) == stream.size


def test_two_threads_share_the_chunks_of_an_epoch():
    """Every word is read once whatever the threads' speeds, and ``should_stop`` ends the epoch at
    a chunk boundary from which the rest of the epoch resumes."""
    from bigvocab.models import build_model
    from bigvocab.word2vec.engine import Schedule, engine_arrays, train_epoch

    stream = np.tile(np.append(np.arange(10, dtype=np.int32), -1), 2000)
    words = int((stream >= 0).sum())
    model = build_model(
        "skipgram",
        10,
        "neg",
        counts=list(range(20, 10, -1)),
        model_kwargs={"vector_size": 8, "sample": 0},
        output_kwargs={"num_samples": 3},
    )
    arrays, schedule = engine_arrays(model), Schedule(0.025, 1e-4, words)
    full = train_epoch(arrays, stream, schedule=schedule, words_before=0, epoch=0, workers=2, chunk_words=100)
    assert (full.read, full.position) == (words, stream.size)
    stopped = train_epoch(
        arrays, stream, schedule=schedule, words_before=0, epoch=0, workers=2, start=550, should_stop=lambda: True
    )
    assert (stopped.read, stopped.position) == (0, 550)
    rest = train_epoch(
        arrays, stream, schedule=schedule, words_before=0, epoch=0, workers=2, chunk_words=100, start=550
    )
    assert (rest.read, rest.position) == (words - 500, stream.size)


@pytest.mark.parametrize("by_examples", [True, False])
def test_each_chunks_learning_rate_is_gensims(monkeypatch, by_examples):
    """gensim gives a job alpha - (alpha - min_alpha) (epoch + p) / epochs, with p the share of
    the epoch's sentences before it when ``train`` is given ``total_examples`` and its share of the
    words otherwise. Long sentences first, short ones after, so the two shares differ."""
    import bigvocab.kernels.word2vec as kernels

    sentences = [[f"w{(i + j) % 7}" for j in range(40 if i < 10 else 4)] for i in range(60)]
    seen: list[tuple[int, float]] = []
    real = kernels.train_chunk

    def recording(stream, start, end, *rest):
        seen.append((start, rest[14]))  # the chunk's first position and its alpha
        return real(stream, start, end, *rest)

    monkeypatch.setattr(kernels, "train_chunk", recording)
    model = Word2Vec(vector_size=8, min_count=1, workers=1, batch_words=50, progress=False, alpha=0.03, min_alpha=0.01)
    model.build_vocab(sentences)
    total = {"total_examples": model.corpus_count} if by_examples else {"total_words": model.corpus_total_words}
    model.train(sentences, epochs=2, **total)
    lengths = np.array([len(s) + 1 for s in sentences])  # a sentence and its end in the stream
    ends = np.cumsum(lengths)
    assert len(seen) > 10
    for i, (start, alpha) in enumerate(seen):
        epoch = i // (len(seen) // 2)
        done = int(np.searchsorted(ends, start, side="right"))  # sentences before the chunk
        share = done / len(sentences) if by_examples else (start - done) / (ends[-1] - len(sentences))
        assert alpha == pytest.approx(0.03 - 0.02 * (epoch + share) / 2, rel=1e-12)
