"""Every CLI error path, table-driven: exit status 2, one line, no traceback, nothing overwritten."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from fault_helpers import TINY, assert_one_line_error

from bigvocab.cli import main

HSM = [*TINY[:3], "hsm", *TINY[4:]]


@pytest.fixture(scope="module")
def place(tmp_path_factory, corpus_file):
    """A finished run, an hsm run, and the bad files the cases point at."""
    root = tmp_path_factory.mktemp("errors")
    assert main(["train", *TINY, "--epochs", "1", "--corpus", f"text:{corpus_file}", "--out", str(root / "run")]) == 0
    assert main(["train", *HSM, "--epochs", "1", "--corpus", f"text:{corpus_file}", "--out", str(root / "hsm")]) == 0
    (root / "latin1.txt").write_bytes(": s\nw1 w2 w3 w4\ncaf\xe9 w1 w2 w3\n".encode("latin-1"))
    (root / "latin1.tsv").write_bytes("w1\tw2\t3\nw3\tw4\t1\ncaf\xe9\tw1\t2\n".encode("latin-1"))
    (root / "vectors.bin").write_text("3 2\nw1 0.5 1.5\nw2 1 2\nw3 -1 0.25\n")
    (root / "truncated.pt").write_bytes((root / "run" / "best.pt").read_bytes()[:3000])
    (root / "empty.txt").write_text("")
    (root / "exists.txt").write_text("keep me\n")
    (root / "empty-run").mkdir()
    shutil.copy(corpus_file, root / "c.txt")
    return root


def tree(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(root.rglob("*")) if p.is_file()
    }


CORPUS = "text:{root}/c.txt"
CASES = [
    # train: model, output and options
    (["train", "--out", "{root}/new"], "--model is required"),
    (["train", "--model", "nnln", "--out", "{root}/new"], "did you mean 'nnlm'"),
    (["train", *TINY[:3], "fulll", *TINY[4:], "--corpus", CORPUS, "--out", "{root}/new"], "did you mean 'full'"),
    (["train", "--model", "cw", "--output", "full", "--corpus", CORPUS, "--out", "{root}/new"], "no output layer"),
    (["train", *TINY, "--output-opt", "biass=false", "--corpus", CORPUS, "--out", "{root}/new"], "did you mean 'bias'"),
    (
        ["train", *TINY, "--model-opt", "context=-1", "--corpus", CORPUS, "--out", "{root}/new"],
        "context must be a positive",
    ),
    (["train", *TINY, "--bptt", "5", "--corpus", CORPUS, "--out", "{root}/new"], "bptt"),
    (["train", *TINY, "--cutoffs", "a,b", "--corpus", CORPUS, "--out", "{root}/new"], "comma-separated integers"),
    (["train", *TINY, "--epochs", "0", "--out", "{root}/new"], "--epochs: must be a positive integer"),
    (["train", *TINY, "--lr", "nan", "--out", "{root}/new"], "--lr: must be a positive number"),
    (["train", *TINY, "--batch-size", "-3", "--out", "{root}/new"], "--batch-size: must be a positive integer"),
    (["train", *TINY, "--patience", "-1", "--out", "{root}/new"], "--patience: must be a non-negative integer"),
    (["train", *TINY, "--optimizer", "adamm", "--corpus", CORPUS, "--out", "{root}/new"], "did you mean 'adam'"),
    (["train", *TINY, "--lr-schedule", "plateu", "--corpus", CORPUS, "--out", "{root}/new"], "did you mean 'plateau'"),
    (
        ["train", *TINY, "--lr-schedule", "plateau", "--skip-perplexity", "--corpus", CORPUS, "--out", "{root}/new"],
        "follows validation perplexity",
    ),
    (["train", *TINY, "--min-lr", "5", "--corpus", CORPUS, "--out", "{root}/new"], "min_lr"),
    # corpora
    (["train", *TINY, "--corpus", "text:{root}/missing.txt", "--out", "{root}/new"], "missing.txt' does not exist"),
    (["train", *TINY, "--corpus", "text:{root}/empty.txt", "--out", "{root}/new"], "empty"),
    (["train", *TINY, "--corpus", "txt:{root}/c.txt", "--out", "{root}/new"], "did you mean 'text'"),
    (["train", *TINY, "--corpus", "text:{root}", "--out", "{root}/new"], "is a directory"),
    (["train", *TINY, "--corpus", "synthetic:vocab_size=abc", "--out", "{root}/new"], "not a number"),
    (
        ["train", *TINY, "--corpus", "synthetic:vocab_size=50", "--min-count", "2", "--out", "{root}/new"],
        "do not apply",
    ),
    (["train", *TINY, "--corpus", CORPUS, "--min-count", "100000", "--out", "{root}/new"], "unknown"),
    # trees
    (
        ["train", *HSM, "--tree", "clustered", "--corpus", CORPUS, "--out", "{root}/new"],
        "reads vectors, which the corpus does not give: pass --side vectors=PATH",
    ),
    (
        ["train", *TINY, "--side", "vectors={root}/run/best.pt", "--corpus", CORPUS, "--out", "{root}/new"],
        "does not read vectors (the layers that do: hsm[clustered])",
    ),
    (
        [
            "train",
            *HSM,
            "--tree",
            "clustered",
            "--side",
            "vectors={root}/vectors.bin",
            "--corpus",
            CORPUS,
            "--out",
            "{root}/new",
        ],
        "holds text vectors",
    ),
    (
        [
            "train",
            *HSM,
            "--tree",
            "clustered",
            "--side",
            "vectors={root}/nope.txt",
            "--corpus",
            CORPUS,
            "--out",
            "{root}/new",
        ],
        "nope.txt' does not exist",
    ),
    # run directories
    (["train", *TINY, "--corpus", CORPUS, "--out", "{root}/run"], "already holds a training run"),
    (["train", *TINY, "--corpus", CORPUS, "--out", "{root}/c.txt"], "is not a directory"),
    (["train", "--out", "{root}/run", "--resume", "--lr", "0.5"], "--lr cannot change"),
    (["train", "--out", "{root}/run", "--resume", "--model", "lstm"], "--model cannot change"),
    (["train", "--out", "{root}/empty-run", "--resume"], "nothing to resume"),
    (["train", "--out", "{root}/run", "--resume", "--overwrite"], "not allowed with"),
    (["train", *TINY, "--corpus", CORPUS, "--out", "/proc/bigvocab-run"], "/proc/bigvocab-run"),
    # eval
    (["eval", "--checkpoint", "{root}/nope.pt"], "does not exist"),
    (["eval", "--checkpoint", "{root}/truncated.pt"], "truncated or corrupt"),
    (["eval", "--checkpoint", "{root}/c.txt"], "truncated or corrupt"),
    (["eval", "--checkpoint", "{root}/run/best.pt", "--split", "dev"], "invalid choice"),
    (["eval", "--checkpoint", "{root}/run/best.pt", "--analogy", "{root}/latin1.txt"], "line 3 is not UTF-8"),
    (["eval", "--checkpoint", "{root}/run/best.pt", "--similarity", "{root}/latin1.tsv"], "line 3 is not UTF-8"),
    (["eval", "--checkpoint", "{root}/run/best.pt", "--analogy", "{root}/nope.txt"], "does not exist"),
    (["eval", "--checkpoint", "{root}/run/best.pt", "--skip-perplexity"], "nothing to evaluate"),
    (["eval", "--checkpoint", "{root}/run/best.pt", "--log-normaliser", "--skip-perplexity"], "drop --skip-perplexity"),
    (["eval", "--checkpoint", "{root}/hsm/best.pt", "--log-normaliser"], "no single normaliser"),
    (["eval", "--checkpoint", "{root}/run/best.pt", "--corpus", "text:{root}/missing.txt"], "does not exist"),
    # export
    (["export", "--checkpoint", "{root}/run/best.pt", "--out", "{root}/exists.txt"], "--overwrite"),
    (
        ["export", "--checkpoint", "{root}/run/best.pt", "--out", "/proc/vectors.txt"],
        "cannot write '/proc/vectors.txt'",
    ),
    (["export", "--checkpoint", "{root}/truncated.pt", "--out", "{root}/v.txt"], "truncated or corrupt"),
    # the tool
    (["frobnicate"], "invalid choice"),
    (["train", "--frobnicate", "--out", "{root}/new"], "unrecognized arguments"),
]
if not torch.cuda.is_available():
    CASES.append((["train", *TINY, "--device", "cuda", "--corpus", CORPUS, "--out", "{root}/new"], "CUDA"))


@pytest.mark.parametrize("argv, expected", CASES, ids=[" ".join(c[0][:2]) + f" [{c[1]}]" for c in CASES])
def test_cli_error(argv, expected, place, capsys):
    before = tree(place)
    code = main([arg.replace("{root}", str(place)) for arg in argv])
    err = capsys.readouterr().err
    assert_one_line_error(err, code)
    assert expected in err, err
    assert len(err) < 400, err
    assert tree(place) == before
    assert not (place / "new").exists()
