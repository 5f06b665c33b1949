"""Quality runs: the same token budget for every layer, cut by the same time cap."""

from __future__ import annotations

from tiny_quality import tiny_quality

from bigvocab.bench import BenchConfig
from bigvocab.bench.quality import PROBE_STEPS, corpus_side_data, quality_tasks, train_and_evaluate
from bigvocab.bench.selection import candidate_by_label
from bigvocab.data.corpora import load_corpus


def config(max_train_seconds: float) -> BenchConfig:
    quality = tiny_quality(train_tokens=2_000, batch_size=32, max_train_seconds=max_train_seconds)
    return BenchConfig.quick(quality=quality, progress=False, out=None)


def run(max_train_seconds: float) -> dict:
    cfg = config(max_train_seconds)
    corpus = load_corpus(quality_tasks(cfg)[0].spec, progress=False)
    side = corpus_side_data(corpus, seed=0)
    return train_and_evaluate(candidate_by_label("full"), corpus, corpus.train, side, cfg)


def test_one_full_pass_within_the_cap():
    row = run(600.0)
    # The NNLM predicts every token after the first: one pass is T - 1 targets.
    assert row["tokens_seen"] == 2_000 - 1 and not row["time_capped"]
    assert row["ppl_ratio"] > 1.0 and row["train_seconds"] > 0


def test_the_time_cap_stops_training_after_the_probe():
    row = run(1e-9)
    assert row["time_capped"]
    assert row["tokens_seen"] == PROBE_STEPS * 32
    assert row["test_ppl"] > 0


def test_tasks_are_small_and_large_synthetic_and_brown_when_given(tmp_path):
    cfg = config(1.0)
    names = [task.name for task in quality_tasks(cfg)]
    assert names == ["synthetic V=100", "synthetic V=200"]
    cfg.brown = tmp_path
    assert quality_tasks(cfg)[-1].spec == f"brown-bengio:{tmp_path}"
