"""``bench`` on the user's own data: ``corpus`` replaces the synthetic language, every corpus is
checked before the first phase, ``--resume`` takes the same files in another place, and a
finished run's directory is kept unless ``overwrite``."""

from __future__ import annotations

import random
import shutil

import pytest
from test_bench_end_to_end import tiny_config
from test_bench_resume import Killed, counting

from bigvocab.bench import run_bench, runner
from bigvocab.bench.harness.plots import PLOT_FILES
from bigvocab.bench.suites import quality
from bigvocab.errors import ConfigError, DataError, UnknownNameError


def write_text(path, lines: int = 120, seed: int = 0):
    """A small text corpus: ``lines`` sentences of words drawn from forty."""
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(" ".join(f"w{rng.randrange(40)}" for _ in range(8)) for _ in range(lines)) + "\n")
    return path


@pytest.fixture
def no_phase(monkeypatch):
    """Fails the test if the first phase (the matmul probe) or a quality run starts."""

    def started(*args, **kwargs):
        raise AssertionError("a phase started before the input was checked")

    monkeypatch.setattr(runner, "measure_matmul_rate", started)
    monkeypatch.setattr(quality, "train_and_evaluate", started)


@pytest.mark.parametrize(
    ("overrides", "error", "message"),
    [
        ({"corpus": "text:{tmp}/missing.txt"}, DataError, "missing.txt' does not exist"),
        ({"corpus": "dir:{tmp}"}, DataError, "has no train file"),
        ({"corpus": "texts:{tmp}/a.txt"}, UnknownNameError, "unknown corpus kind 'texts'"),
        ({"corpus": "synthetic:vocab=3"}, ConfigError, "unknown synthetic option 'vocab'"),
        ({"brown": "{tmp}"}, DataError, "holds no Brown corpus files"),
    ],
)
def test_a_wrong_corpus_fails_before_any_phase(tmp_path, no_phase, overrides, error, message):
    settings = {key: value.format(tmp=tmp_path) for key, value in overrides.items()}
    with pytest.raises(error, match=message):
        run_bench(tiny_config(tmp_path / "out", outputs=["full"], **settings))
    assert not (tmp_path / "out").exists()


def test_a_finished_run_is_kept_unless_overwrite_which_also_removes_its_old_plots(tmp_path, no_phase):
    config = tiny_config(tmp_path, outputs=["full"], skip_speed=True, skip_quality=True)
    run_bench(config)
    report = (tmp_path / "report.md").read_text()
    (tmp_path / PLOT_FILES[1]).write_text("a plot of an older run")
    with pytest.raises(ConfigError, match=r"holds a finished benchmark run \(report.md\); pass --overwrite"):
        run_bench(config)
    assert (tmp_path / "report.md").read_text() == report
    run_bench(config, overwrite=True)
    assert not (tmp_path / PLOT_FILES[1]).exists()


@pytest.mark.slow
def test_resume_takes_the_same_corpus_in_another_place_and_refuses_other_files(tmp_path, monkeypatch):
    first = write_text(tmp_path / "a" / "notes.txt")
    config = tiny_config(tmp_path / "out", outputs=["full"], skip_speed=True, corpus=f"text:{first}")
    counting(monkeypatch, quality, "train_and_evaluate", kill_at=0)
    with pytest.raises(Killed):
        run_bench(config)
    monkeypatch.undo()
    moved = tmp_path / "b" / "notes.txt"
    moved.parent.mkdir()
    shutil.move(first, moved)
    write_text(first, seed=1)  # other words at the first place
    with pytest.raises(ConfigError, match=r"corpus: the files are not the run.s \(notes.txt has [0-9,]+ bytes, not"):
        run_bench(tiny_config(tmp_path / "out", outputs=["full"], skip_speed=True, corpus=f"text:{first}"), resume=True)
    config.corpus = f"text:{moved}"
    results = run_bench(config, resume=True)
    assert [(row.dataset, row.status) for row in results["quality"]] == [("text:notes.txt", "ok")]
    assert results["recommendation"][0]["dataset"] == "text:notes.txt"
    assert "--corpus" in (tmp_path / "out" / "report.md").read_text()
