"""``bigvocab bench --word2vec`` on a tiny corpus: the rows, the paired ratios and the tables."""

from __future__ import annotations

import pytest

pytest.importorskip("numba")

from bigvocab.bench.suites import word2vec as bench


def test_speed_and_quality_tables(tmp_path, monkeypatch, small_corpus):
    sentences = small_corpus[0][:500]
    monkeypatch.setattr(bench, "SPEED_ROWS", bench.SPEED_ROWS[:2])
    monkeypatch.setattr(bench, "QUALITY_ROWS", bench.QUALITY_ROWS[3:4])
    speed = bench.speed_table(sentences, threads=(1, 2), repeats=2, log=lambda _: None)
    assert [(r["combination"], r["threads"]) for r in speed] == [
        ("sg + neg", 1),
        ("sg + neg", 2),
        ("sg + neg, HogBatch", 1),
        ("sg + neg, HogBatch", 2),
    ]
    assert all(r["bigvocab_words_per_s"] > 0 and len(r["seconds"]["bigvocab"]) == 2 for r in speed)
    eval_dir = tmp_path / "eval"
    eval_dir.mkdir()
    (eval_dir / "wordsim353.tsv").write_text("w1\tw2\t3\nw3\tw4\t1\nw5\tw6\t2\n")
    (eval_dir / "simlex999.txt").write_text("w1\tw7\t3\nw3\tw8\t1\nw5\tw9\t2\n")
    (eval_dir / "questions-words.txt").write_text(": s\nw1 w2 w3 w4\nw5 w6 w7 w8\n")
    quality = bench.quality_table(sentences, eval_dir, seeds=(1, 2), epochs=1, log=lambda _: None)
    assert quality[0]["combination"] == "cbow + neg" and len(quality[0]["bigvocab"]["ws353"]) == 2
    table = bench.markdown(speed, quality)
    assert "| sg + neg, HogBatch | 2 |" in table and "| cbow + neg | bigvocab |" in table
    if bench._gensim_available():
        assert all("speedup" in r for r in speed) and "gensim" in quality[0]


def test_full_bench_has_the_word2vec_rows(tmp_path, monkeypatch):
    from bigvocab.bench.harness.config import BenchConfig
    from bigvocab.bench.runner import run_bench

    assert BenchConfig.full().word2vec and not BenchConfig.quick().word2vec
    calls = []

    def fake(brown, out, repeats, log):
        calls.append((brown, out, repeats))
        return {"speed": [{"combination": "sg + neg"}]}

    monkeypatch.setattr(bench, "run_word2vec_bench", fake)
    config = BenchConfig.quick(
        out=tmp_path,
        skip_speed=True,
        skip_quality=True,
        word2vec=True,
        outputs=["torch-*"],
        progress=False,
        plots=False,
    )
    results = run_bench(config)
    assert calls == [(None, tmp_path, 3)] and results["word2vec"]["speed"][0]["combination"] == "sg + neg"
    assert "word2vec" in results["phase_seconds"]
