"""A run trained from one directory, evaluated and resumed from another; its corpus moved,
renamed, changed; its options repeated on resume."""

from __future__ import annotations

import json
import shutil

from fault_helpers import TINY, write_corpus

from bigvocab.checkpoint import load_checkpoint
from bigvocab.cli import main


def run(capsys, argv, status=0) -> tuple[str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == status, err
    return out, err


def test_run_evaluated_and_resumed_from_another_directory(tmp_path, capsys, monkeypatch):
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    write_corpus(home / "c.txt", 300)
    monkeypatch.chdir(home)
    run(capsys, ["train", *TINY, "--corpus", "text:c.txt", "--epochs", "1", "--out", "run"])  # relative paths
    stored = load_checkpoint(home / "run" / "last.pt")["meta"]
    assert stored["corpus"] == f"text:{home / 'c.txt'}" and stored["corpus_fingerprint"]["files"][0]["name"] == "c.txt"

    monkeypatch.chdir(elsewhere)
    evaluated, _ = run(capsys, ["eval", "--checkpoint", "../home/run/best.pt", "--no-progress"])
    assert evaluated.startswith("test perplexity: ")
    # the stored options repeated with their stored values are accepted
    run(
        capsys,
        [
            "train",
            "--out",
            "../home/run",
            "--resume",
            "--epochs",
            "2",
            "--model",
            "nnlm",
            "--output",
            "full",
            "--context",
            "2",
            "--lr",
            "0.01",
            "--corpus",
            f"text:{home / 'c.txt'}",
            "--no-progress",
        ],
    )
    summary = json.loads((home / "run" / "summary.json").read_text())
    assert summary["epochs_completed"] == 2
    _, err = run(capsys, ["train", "--out", "../home/run", "--resume", "--epochs", "3", "--context", "3"], status=2)
    assert "--context cannot change" in err

    # the corpus moves: the stored path is gone, the same files elsewhere are accepted
    moved = elsewhere / "renamed.txt"
    shutil.move(home / "c.txt", moved)
    _, err = run(capsys, ["train", "--out", "../home/run", "--resume", "--epochs", "3"], status=2)
    assert "does not exist (any more); give its new place with --corpus" in err
    run(
        capsys,
        ["train", "--out", "../home/run", "--resume", "--epochs", "3", "--corpus", "text:renamed.txt", "--no-progress"],
    )
    assert load_checkpoint(home / "run" / "last.pt")["meta"]["corpus"] == f"text:{moved}"
    run(capsys, ["eval", "--checkpoint", str(home / "run" / "last.pt"), "--no-progress"])  # finds it in its new place
    _, err = run(capsys, ["eval", "--checkpoint", str(home / "run" / "best.pt")], status=2)  # written before the move
    assert "does not exist (any more); give its new place with --corpus" in err
    run(
        capsys, ["eval", "--checkpoint", str(home / "run" / "best.pt"), "--corpus", "text:renamed.txt", "--no-progress"]
    )

    # a changed corpus is refused, and accepted when asked for explicitly
    with open(moved, "a") as handle:
        handle.write("w1 w2 w3 w4\n")
    _, err = run(capsys, ["train", "--out", "../home/run", "--resume", "--epochs", "4"], status=2)
    assert "is not the one the run was trained on (renamed.txt has" in err and "--allow-changed-corpus" in err
    _, err = run(capsys, ["eval", "--checkpoint", str(home / "run" / "last.pt"), "--no-progress"])
    assert err.startswith("bigvocab: warning: ") and "changed since training" in err
    run(
        capsys,
        ["train", "--out", "../home/run", "--resume", "--epochs", "4", "--allow-changed-corpus", "--no-progress"],
    )
    assert json.loads((home / "run" / "summary.json").read_text())["epochs_completed"] == 4


def test_failed_start_does_not_block_a_retry(tmp_path, capsys):
    """A run that stops before its first checkpoint (here a NaN loss at step 2) leaves config.json
    and metrics.jsonl; a plain retry replaces them, --resume says why it cannot, and stale
    temporaries go."""
    corpus = write_corpus(tmp_path / "c.txt", 300)
    out = tmp_path / "run"
    nan = ["--optimizer", "sgd", "--lr", "1e38", "--log-every", "1"]
    _, err = run(capsys, ["train", *TINY, *nan, "--corpus", f"text:{corpus}", "--out", str(out)], status=2)
    assert "non-finite loss" in err and "none written yet" in err
    assert (out / "config.json").exists() and not (out / "last.pt").exists()
    (out / ".last.pt.k2j3x.tmp").write_bytes(b"half a checkpoint")
    _, err = run(capsys, ["train", "--out", str(out), "--resume"], status=2)
    assert "stopped before its first checkpoint; start it again without --resume" in err
    run(capsys, ["train", *TINY, "--corpus", f"text:{corpus}", "--epochs", "1", "--out", str(out)])
    assert sorted(p.name for p in out.iterdir()) == [
        "best.pt",
        "config.json",
        "last.pt",
        "metrics.jsonl",
        "summary.json",
    ]
