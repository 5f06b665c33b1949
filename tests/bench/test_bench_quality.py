"""Quality runs: every layer trains for the same wall-clock time, with exact test perplexity
measured at fixed fractions of it."""

from __future__ import annotations

import dataclasses

from tiny_quality import tiny_quality

from bigvocab.bench import BenchConfig
from bigvocab.bench.harness.rows import QualityRow
from bigvocab.bench.harness.selection import candidate_by_label, select_candidates
from bigvocab.bench.suites import quality as quality_module
from bigvocab.bench.suites.quality import (
    PROBE_STEPS,
    corpus_side_data,
    new_row,
    quality_candidates,
    quality_tasks,
    train_and_evaluate,
    train_on_budget,
)
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
    # Validation is measured beside test at every point, on its own split: close to, not equal to, test.
    assert all(point.valid_ppl is not None and point.valid_ppl != point.test_ppl for point in curve)
    assert curve[-1].valid_ppl < curve[0].valid_ppl


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


class ScriptedTrainer:
    """Steps that last ``seconds_per_step(step)`` on a fake clock, up to ``config.max_steps``."""

    @dataclasses.dataclass
    class Config:
        max_steps: int = 0

    def __init__(self, clock: list, seconds_per_step) -> None:
        self.clock, self.seconds_per_step = clock, seconds_per_step
        self.step = self.tokens = 0
        self.config = self.Config()

    def fit(self) -> None:
        while self.step < self.config.max_steps:
            self.clock[0] += self.seconds_per_step(self.step)
            self.step += 1
            self.tokens += 8


def scripted_curve(monkeypatch, seconds_per_step):
    clock = [0.0]
    monkeypatch.setattr(quality_module.time, "perf_counter", lambda: clock[0])
    trainer = ScriptedTrainer(clock, seconds_per_step)
    return train_on_budget(trainer, 100.0, [0.25, 0.5, 1.0], lambda: (1.0, 2.0))


def test_a_steady_rate_ends_each_point_on_its_budget_with_no_note(monkeypatch):
    curve, slowdowns = scripted_curve(monkeypatch, lambda step: 0.125)
    assert [point.steps for point in curve] == [200, 400, 800]
    assert [point.train_seconds for point in curve] == [25.0, 50.0, 100.0]
    assert slowdowns == []


def test_a_stretch_that_runs_slow_keeps_its_planned_steps_and_is_noted(monkeypatch):
    """From step 400 on each step takes 4x longer (another process took the cores): the last
    stretch still trains the 400 steps the budget allowed at the earlier rate, its point comes at
    250 s rather than 100, and the note says which steps and by how much."""
    curve, slowdowns = scripted_curve(monkeypatch, lambda step: 0.125 if step < 400 else 0.5)
    assert [point.steps for point in curve] == [200, 400, 800]
    assert curve[-1].train_seconds == 250.0
    assert slowdowns == ["steps 400-800 took 200 s, 4.0x the 50 s the earlier rate planned (the machine was busy?)"]


def test_a_users_corpus_replaces_the_synthetic_languages_and_is_named_by_its_file(tmp_path):
    cfg = config(1.0)
    cfg.corpus = f"text:{tmp_path / 'notes.txt'}"
    assert [(task.name, task.spec, task.train_tokens) for task in quality_tasks(cfg)] == [
        ("text:notes.txt", cfg.corpus, None)
    ]
    cfg.quality = dataclasses.replace(cfg.quality, large_vocab=None)
    cfg.corpus = None
    assert [task.name for task in quality_tasks(cfg)] == ["synthetic V=100"]


def test_quality_trains_first_forms_of_the_layers_and_the_reference_again_with_another_seed():
    candidates = select_candidates(None)
    cfg = config(1.0)
    cfg.quality = dataclasses.replace(cfg.quality, all_rows=False, seed_repeats=2)
    cfg.seed = 5
    rows = quality_candidates(candidates, cfg)
    firsts: dict[str, str] = {}
    for candidate in candidates:
        if candidate.kind == "layer" and candidate.method not in firsts:
            firsts[candidate.method] = candidate.label
    assert [c.label for c in rows if not c.repeat] == list(firsts.values())
    assert "hsm[huffman]" in firsts.values() and "hsm[balanced]" not in firsts.values()
    assert [(c.label, c.method, c.repeat) for c in rows if c.repeat] == [
        ("full (seed 6)", "full", 1),
        ("full (seed 7)", "full", 2),
    ]
    cfg.quality = dataclasses.replace(cfg.quality, all_rows=True, seed_repeats=0)
    assert quality_candidates(candidates, cfg) == candidates
    cfg.quality = dataclasses.replace(cfg.quality, all_rows=False)
    cfg.outputs = ["hsm*"]  # rows the user names are all trained
    chosen = select_candidates(cfg.outputs)
    assert quality_candidates(chosen, cfg) == chosen


def test_a_repeated_row_trains_with_its_own_seed():
    cfg = config(0.05)
    corpus = load_corpus(quality_tasks(cfg)[0].spec, progress=False)
    side = corpus_side_data(corpus, seed=0)
    rows = []
    for candidate in (candidate_by_label("full"), dataclasses.replace(candidate_by_label("full"), repeat=1)):
        row = new_row("synthetic", candidate, corpus, corpus.train, cfg)
        train_and_evaluate(row, candidate, corpus, corpus.train, side, cfg)
        rows.append(row)
    assert rows[1].repeat == 1 and rows[0].repeat == 0
    assert rows[0].curve[0].test_ppl != rows[1].curve[0].test_ppl
