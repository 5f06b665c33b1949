"""``run_bench`` keeps a journal of finished rows: a run killed between rows goes on with
``resume=True`` measuring only what it lacks, and ends with the rows an uninterrupted run has;
the journal refuses settings that differ, a missing or corrupt file, and a fresh run over it."""

from __future__ import annotations

import json
import re
import types

import pytest
from test_bench_end_to_end import tiny_config

from bigvocab.bench import run_bench, runner
from bigvocab.bench.harness import journal as journal_module
from bigvocab.bench.harness.journal import JOURNAL_NAME, BenchJournal
from bigvocab.bench.harness.rows import CurvePoint, OperationTiming, QualityRow, SpeedRow
from bigvocab.bench.harness.selection import select_candidates
from bigvocab.bench.suites import quality, speed
from bigvocab.errors import ConfigError

pytestmark = pytest.mark.slow

OUTPUTS = ["full", "sampled", "hsm?huffman?"]
LABELS = [candidate.label for candidate in select_candidates(OUTPUTS)]


class Killed(BaseException):
    """Stands for the process being killed: nothing in the bench catches it."""


def counting(monkeypatch, module, name: str, *, kill_at: int | None = None) -> list:
    """Wrap ``module.name`` so each call is counted; call number ``kill_at`` (0-based) raises Killed."""
    calls: list = []
    original = getattr(module, name)

    def wrapped(*args, **kwargs):
        calls.append(args)
        if kill_at is not None and len(calls) - 1 == kill_at:
            raise Killed
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapped)
    return calls


def test_a_row_survives_the_journal_as_it_was():
    timing = OperationTiming(2.0, 1.5, 2.5, 1.0, 3.0, 0.1, 0.2, 3)
    speed_row = SpeedRow("sampled", "sampled", "layer", 300, 8, 16, 16, timings={"train": timing}, params=10)
    point = CurvePoint(0.5, 0.49, 1000, 10, 42.0, 1.5)
    quality_row = QualityRow("synthetic V=100", "full", "full", "layer", 100, 1000, 100, 28.0, 1, curve=[point])
    journal = BenchJournal(None, {"speed": [], "quality": [], "phase_seconds": {}, "pieces": [{}]})
    journal.add_speed_row(speed_row)
    journal.add_quality_row(quality_row)
    state = json.loads(json.dumps(journal.state))  # what a later piece reads back from disk
    again = BenchJournal(None, state)
    assert again.speed_rows(300) == {"sampled": speed_row}
    assert again.quality_rows("synthetic V=100") == {"full": quality_row}
    assert again.speed_rows(301) == {} and again.quality_rows("other") == {}


def test_a_killed_run_resumes_with_only_the_missing_rows_and_the_journal_goes_at_the_end(tmp_path, monkeypatch):
    config = tiny_config(tmp_path, outputs=OUTPUTS)
    # Killed while training the second quality row of the first corpus: all speed rows and one
    # quality row are in the journal.
    counting(monkeypatch, quality, "train_and_evaluate", kill_at=1)
    with pytest.raises(Killed):
        run_bench(config)
    stored = json.loads((tmp_path / JOURNAL_NAME).read_text())
    assert [r["approach"] for r in stored["speed"]] == LABELS
    assert [r["approach"] for r in stored["quality"]] == ["full"]
    assert not (tmp_path / "results.json").exists()

    timed = counting(monkeypatch, speed, "time_operations")
    trained = counting(monkeypatch, quality, "train_and_evaluate")
    probed = counting(monkeypatch, runner, "measure_matmul_rate") + counting(monkeypatch, runner, "measure_bandwidth")
    results = run_bench(config, resume=True)
    assert timed == []  # no speed row is measured twice
    # nor are the limits: this piece's machine measured none of the rows they divide
    assert probed == [] and results["matmul"] == stored["matmul"] and results["bandwidth"] == stored["bandwidth"]
    assert [args[1].label for args in trained] == LABELS[1:] + LABELS
    assert [r.approach for r in results["speed"]] == LABELS
    assert [(r.dataset, r.approach) for r in results["quality"]] == [
        (dataset, label) for dataset in ("synthetic V=100", "synthetic V=200") for label in LABELS
    ]
    assert results["quality"][0] == QualityRow.from_dict(stored["quality"][0])
    assert results["speed"][1].timings == SpeedRow.from_dict(stored["speed"][1]).timings
    assert len(results["pieces"]) == 2 and results["wall_seconds"] >= results["pieces"][0]["seconds"]
    assert results["phase_seconds"]["quality synthetic V=100"] > 0
    assert any("measured in 2 pieces" in note for note in results["notes"])
    assert "measured in 2 pieces" in (tmp_path / "report.md").read_text()
    assert not (tmp_path / JOURNAL_NAME).exists()


def test_the_pieces_note_gives_each_piece_its_whole_length(tmp_path, monkeypatch):
    config = tiny_config(tmp_path, outputs=OUTPUTS, skip_quality=True)
    counting(monkeypatch, speed, "time_operations", kill_at=1)
    with pytest.raises(Killed):
        run_bench(config)
    clock = iter(range(0, 10**7, 600))  # every reading of the journal's clock is 10 minutes later
    monkeypatch.setattr(journal_module, "time", types.SimpleNamespace(perf_counter=lambda: next(clock)))
    results = run_bench(config, resume=True)
    written = json.loads((tmp_path / "results.json").read_text())  # as the report was written
    minutes = round(written["pieces"][1]["seconds"] / 60)
    assert minutes > 10 and f"({minutes} min" in next(n for n in results["notes"] if "measured in 2 pieces" in n)


def test_a_run_killed_inside_a_vocabulary_size_measures_the_rest_of_it(tmp_path, monkeypatch):
    config = tiny_config(tmp_path, outputs=OUTPUTS, skip_quality=True)
    counting(monkeypatch, speed, "time_operations", kill_at=2)  # the first two rows are done
    with pytest.raises(Killed):
        run_bench(config)
    timed = counting(monkeypatch, speed, "time_operations")
    results = run_bench(config, resume=True)
    assert len(timed) == 1  # the third row only
    assert [r.approach for r in results["speed"]] == LABELS


def test_each_vocabulary_size_probes_bandwidth_on_a_table_of_its_weights_size(tmp_path, monkeypatch):
    config = tiny_config(tmp_path, outputs=["full", "sampled"], vocab_sizes=(300, 500), skip_quality=True)
    tables = []
    original = runner.measure_bandwidth

    def probe(device, **kwargs):
        tables.append((kwargs["table_rows"], kwargs["width"]))
        return original(device, **kwargs)

    monkeypatch.setattr(runner, "measure_bandwidth", probe)
    results = run_bench(config)
    assert tables == [(300, 8), (300, 8), (500, 8), (500, 8)]  # before and after each V's rows
    assert set(results["bandwidth"]) == {"300", "500"}
    assert all(row.roofline_fraction is not None for row in results["speed"])


def test_the_journal_keeps_the_best_bandwidth_of_each_vocabulary_size():
    journal = BenchJournal(None, {"matmul": None, "bandwidth": None, "phase_seconds": {}, "pieces": [{}]})
    rates = {"stream_gbps": 10.0, "gather_gbps": 4.0, "scatter_gbps": 6.0, "gather_scatter_gbps": 4.0}
    journal.best_limits({"best_gflops": 50.0}, {"10": rates})
    faster = {**rates, "gather_gbps": 5.0, "stream_gbps": 8.0}
    _, bandwidth = journal.best_limits({"best_gflops": 40.0}, {"10": faster, "20": rates})
    assert bandwidth["10"]["gather_gbps"] == 5.0 and bandwidth["10"]["stream_gbps"] == 10.0
    assert bandwidth["20"] == rates
    assert journal.limits() == ({"best_gflops": 50.0}, bandwidth)


def test_resume_refuses_different_settings_and_names_them(tmp_path, monkeypatch):
    counting(monkeypatch, quality, "train_and_evaluate", kill_at=0)
    with pytest.raises(Killed):
        run_bench(tiny_config(tmp_path, outputs=OUTPUTS, skip_speed=True))
    with pytest.raises(ConfigError, match=r"seed: 0 in the run, 1 now"):
        run_bench(tiny_config(tmp_path, outputs=OUTPUTS, skip_speed=True, seed=1), resume=True)


def test_resume_without_a_journal_or_with_a_corrupt_one_says_so(tmp_path):
    config = tiny_config(tmp_path, outputs=["full"], skip_speed=True, skip_quality=True)
    with pytest.raises(ConfigError, match="nothing to resume"):
        run_bench(config, resume=True)
    (tmp_path / JOURNAL_NAME).write_text('{"version": 1, "config": ')
    with pytest.raises(ConfigError, match="cannot read the benchmark journal"):
        run_bench(config, resume=True)
    (tmp_path / JOURNAL_NAME).write_text('{"version": 7}')
    with pytest.raises(ConfigError, match=f"not a version-{journal_module.VERSION} benchmark journal"):
        run_bench(config, resume=True)


def test_a_fresh_run_keeps_an_unfinished_one_unless_told_to_overwrite(tmp_path, monkeypatch):
    config = tiny_config(tmp_path, outputs=["full"], skip_speed=True)
    counting(monkeypatch, quality, "train_and_evaluate", kill_at=0)
    with pytest.raises(Killed):
        run_bench(config)
    before = (tmp_path / JOURNAL_NAME).read_text()
    with pytest.raises(ConfigError, match="unfinished benchmark run"):
        run_bench(config)
    assert (tmp_path / JOURNAL_NAME).read_text() == before
    monkeypatch.undo()
    results = run_bench(config, overwrite=True)
    assert len(results["pieces"]) == 1 and len(results["quality"]) == 2
    assert not (tmp_path / JOURNAL_NAME).exists()


def test_the_cli_passes_resume_and_overwrite(monkeypatch, tmp_path, capsys):
    from bigvocab import cli
    from bigvocab.bench import options

    seen = {}

    def fake_run_bench(config, *, stream=None, resume=False, overwrite=False):
        seen.update(resume=resume, overwrite=overwrite, out=config.out)
        return {"wall_seconds": 0.0, "approaches": [], "summary": []}

    monkeypatch.setattr(options, "run_bench", fake_run_bench)
    monkeypatch.setattr(options, "summary_table", lambda results: "")
    assert cli.main(["bench", "--resume", "--out", str(tmp_path)]) == 0
    assert seen == {"resume": True, "overwrite": False, "out": tmp_path}
    assert cli.main(["bench", "--resume", "--overwrite"]) != 0
    assert "--overwrite: not allowed with argument --resume" in capsys.readouterr().err


def test_a_second_run_into_the_same_directory_is_refused_while_the_first_holds_it(tmp_path):
    import subprocess
    import sys

    from bigvocab.errors import RunLockedError

    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom bigvocab.train.rundir import RunLock\n"
            f"with RunLock({str(tmp_path)!r}):\n    print('held', flush=True)\n    time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunLockedError, match="in use by another run"):
            run_bench(tiny_config(tmp_path, outputs=["full"], skip_speed=True, skip_quality=True))
        assert not (tmp_path / JOURNAL_NAME).exists()
    finally:
        holder.kill()
        holder.wait()


def test_an_interrupted_bench_command_says_where_its_rows_are_and_how_to_go_on(monkeypatch, tmp_path, capsys):
    from bigvocab import cli
    from bigvocab.bench import options

    def interrupted_run_bench(config, **kwargs):
        (config.out / JOURNAL_NAME).write_text("{}")
        raise KeyboardInterrupt

    monkeypatch.setattr(options, "run_bench", interrupted_run_bench)
    assert cli.main(["bench", "--out", str(tmp_path)]) == 130
    error = capsys.readouterr().err
    assert "rows finished so far are kept in" in error and "--resume" in error
    assert "interrupted: interrupted" not in error  # the command labels it once


def _piece(revision: str, date: str, cpu: str = "EPYC", speed: int = 0, quality: int = 0) -> dict:
    machine = {"cpu": cpu, "date": date, "revision": revision}
    return {"started": date, "seconds": 600.0, "machine": machine, "rows_before": {"speed": speed, "quality": quality}}


def test_the_notes_say_which_rows_each_piece_measured_and_with_which_code():
    same = BenchJournal(None, {"pieces": [_piece("aaa", "d1"), _piece("aaa", "d2", speed=63, quality=9)]})
    (note,) = same.notes()  # dates differ, nothing else: no machine note, no code named
    assert "measured in 2 pieces" in note and "piece 2 started d2 (10 min) from speed row 64 and quality row 10" in note
    assert "code" not in note
    changed = BenchJournal(None, {"pieces": [_piece("aaa", "d1"), _piece("bbb+changes", "d2", cpu="Xeon", speed=5)]})
    pieces_note, machine_note = changed.notes()
    assert "(10 min, code aaa) from speed row 1" in pieces_note and "code bbb+changes) from speed row 6" in pieces_note
    assert "describe themselves differently" in machine_note
    assert BenchJournal(None, {"pieces": [_piece("aaa", "d1")]}).notes() == []


def test_the_machine_description_names_the_source_revision_of_a_git_checkout():
    from pathlib import Path

    import bigvocab
    from bigvocab.bench.harness.machine import source_revision

    if not (Path(bigvocab.__file__).resolve().parents[2] / ".git").exists():
        pytest.skip("bigvocab is not imported from a git checkout here")
    assert re.fullmatch(r"[0-9a-f]{12}(\+changes)?", source_revision())
