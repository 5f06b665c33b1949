"""Quality runs: every layer trains for the same wall-clock time, with exact test perplexity
measured at fixed fractions of it."""

from __future__ import annotations

from tiny_quality import tiny_quality

from bigvocab.bench import BenchConfig
from bigvocab.bench.quality import PROBE_STEPS, corpus_side_data, new_row, quality_tasks, train_and_evaluate
from bigvocab.bench.rows import QualityRow
from bigvocab.bench.selection import candidate_by_label
from bigvocab.data.corpora import load_corpus


def config(budget_seconds: float) -> BenchConfig:
    quality = tiny_quality(train_tokens=2_000, batch_size=32, budget_seconds=budget_seconds)
    return BenchConfig.quick(quality=quality, progress=False, out=None)


def run(budget_seconds: float) -> QualityRow:
    cfg = config(budget_seconds)
    corpus = load_corpus(quality_tasks(cfg)[0].spec, progress=False)
    side = corpus_side_data(corpus, seed=0)
    candidate = candidate_by_label("full")
    row = new_row("synthetic", candidate, corpus, corpus.train, cfg)
    train_and_evaluate(row, candidate, corpus, corpus.train, side, cfg)
    return row


def test_training_lasts_the_budget_with_a_point_per_checkpoint():
    row = run(1.0)
    curve = row.curve
    assert [point.budget_seconds for point in curve] == [0.125, 0.25, 0.5, 1.0]
    for point in curve:  # each point is taken once its share of the budget has been trained
        assert point.train_seconds >= point.budget_seconds
    # The budget, not the data, ends training (however fast the machine, it stops within a step
    # of the budget; the bound leaves room for a loaded machine's slowest step).
    assert 1.0 <= row.train_seconds < 5.0
    assert row.epochs_seen > 0 and row.tokens_seen == curve[-1].tokens
    steps = [point.steps for point in curve]
    assert steps == sorted(steps) and steps[0] >= PROBE_STEPS
    # Training helps: the last perplexity is below the first, and both are above the floor.
    assert curve[-1].test_ppl < curve[0].test_ppl
    assert row.test_ppl == curve[-1].test_ppl and row.ppl_ratio > 1.0
    assert row.ppl_ratio == curve[-1].ppl_ratio == row.test_ppl / row.floor_ppl


def test_a_tiny_budget_still_measures_every_checkpoint_after_the_probe():
    row = run(1e-9)
    assert [point.steps for point in row.curve] == [PROBE_STEPS] * 4
    assert row.tokens_seen == PROBE_STEPS * 32 and row.test_ppl > 0


def test_tasks_are_small_and_large_synthetic_and_brown_when_given(tmp_path):
    cfg = config(1.0)
    names = [task.name for task in quality_tasks(cfg)]
    assert names == ["synthetic V=100", "synthetic V=200"]
    cfg.brown = tmp_path
    assert quality_tasks(cfg)[-1].spec == f"brown-bengio:{tmp_path}"
