"""Around a run: two runs on one directory, file permissions, strict JSON after divergence."""

from __future__ import annotations

import json
import os
import signal
import stat

import pytest
from fault_helpers import TINY, finish, start_cli, wait_for

from bigvocab.checkpoint import load_checkpoint
from bigvocab.cli import main

LONG = [*TINY, "--epochs", "50", "--patience", "0", "--log-every", "1"]


def test_a_second_run_in_a_busy_directory_is_refused(corpus_file, tmp_path, capsys):
    out = tmp_path / "same"
    first = start_cli(["train", *LONG, "--corpus", f"text:{corpus_file}", "--out", str(out)], tmp_path)
    try:
        wait_for(lambda: (out / "last.pt").exists() or first.poll() is not None, what="the first run's last.pt")
        hsm = [*TINY[:3], "hsm", *TINY[4:]]
        for extra in ([], ["--overwrite"]):
            code = main(["train", *hsm, "--epochs", "1", "--corpus", f"text:{corpus_file}", "--out", str(out), *extra])
            err = capsys.readouterr().err
            assert code == 2 and err.count("\n") == 1, err
            assert f"is in use by another run (pid {first.pid} on " in err or "already holds a training run" in err
        code = main(["train", "--out", str(out), "--resume", "--no-progress"])
        assert code == 2 and f"(pid {first.pid} on " in capsys.readouterr().err
    finally:
        first.send_signal(signal.SIGINT)
        status, _, err = finish(first)
    assert status == 128 + signal.SIGINT, err
    # everything in the directory is the first run's
    assert load_checkpoint(out / "last.pt")["meta"]["output"] == "full"
    assert not (out / "summary.json").exists() and not (out / ".lock").exists()


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_files_follow_the_umask(mask, mode, corpus_file, tmp_path, capsys):
    previous = os.umask(mask)
    try:
        out = tmp_path / "run"
        assert main(["train", *TINY, "--epochs", "1", "--corpus", f"text:{corpus_file}", "--out", str(out)]) == 0
        assert main(["train", "--out", str(out), "--resume", "--epochs", "2", "--no-progress"]) == 0
        for binary in ([], ["--binary"]):
            target = tmp_path / f"vectors{len(binary)}"
            assert main(["export", "--checkpoint", str(out / "best.pt"), "--out", str(target), *binary]) == 0
    finally:
        os.umask(previous)
    capsys.readouterr()
    written = sorted(out.iterdir()) + sorted(tmp_path.glob("vectors*"))
    assert {p.name for p in out.iterdir()} == {"last.pt", "best.pt", "config.json", "metrics.jsonl", "summary.json"}
    assert {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in written} == {p.name: oct(mode) for p in written}


def strict(text: str):
    def refuse(constant: str):
        raise ValueError(f"non-standard JSON constant {constant}")

    return json.loads(text, parse_constant=refuse)


def test_divergence_warns_and_json_stays_strict(corpus_file, tmp_path, capsys):
    """A huge rate with clipping: every step stays finite, but the logits grow until some test word
    gets probability 0 and the test perplexity overflows."""
    out = tmp_path / "run"
    args = [*TINY, "--optimizer", "sgd", "--lr", "1000", "--clip-norm", "1", "--epochs", "2", "--log-every", "5"]
    assert main(["train", *args, "--corpus", f"text:{corpus_file}", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "test ppl inf" in captured.out
    warnings = [line for line in captured.err.splitlines() if line.startswith("bigvocab: warning: ")]
    assert any("diverging" in line for line in warnings) and any("test perplexity is inf" in line for line in warnings)
    summary = strict((out / "summary.json").read_text())
    assert summary["test_ppl"] is None and summary["best_valid_ppl"] is None
    for line in (out / "metrics.jsonl").read_text().splitlines():
        strict(line)
    strict((out / "config.json").read_text())
