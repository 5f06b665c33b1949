"""Each driver in benchmarks/ runs, as its README documents it, with tiny settings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
TINY = "synthetic:vocab_size=300,tokens=3000"

pytestmark = pytest.mark.slow


def run(command: list[str], tmp_path: Path, **env: str) -> str:
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHON": sys.executable, **env}
    done = subprocess.run(command, cwd=REPO, env=environment, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_brown_protocol_trains_its_rows_and_writes_the_table(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    command = [sys.executable, "benchmarks/brown/run.py", "unused", str(runs), "--corpus", TINY]
    out = run([*command, "--rows", "full,hsm-huffman", "--seeds", "0", "--train-opt=--epochs=1"], tmp_path)
    assert "| full | nnlm | full | 0 |" in out and "| hsm-huffman | nnlm | hsm | 0 |" in out
    assert (runs / "table.md").read_text().count("(1 seed)") == 2
    assert len((runs / "runs.csv").read_text().splitlines()) == 3


def test_vocab_parallel_protocol_runs_both_layouts(tmp_path: Path) -> None:
    out = run(
        ["bash", "benchmarks/brown/vocab_parallel.sh", "unused", str(tmp_path), "full", "3"], tmp_path, CORPUS=TINY
    )
    assert out.count("test ppl") == 2


def test_parallel_sgd_protocol_runs_every_method(tmp_path: Path) -> None:
    out = run(["bash", "benchmarks/brown/parallel_sgd.sh", "unused", str(tmp_path), "3"], tmp_path, CORPUS=TINY)
    assert all(f"| {name} |" in out for name in ("gradients", "local-sgd", "easgd", "one"))


def test_ann_on_trained_weights_trains_then_measures(tmp_path: Path) -> None:
    out = run(
        ["bash", "benchmarks/ann/trained_1m.sh", str(tmp_path / "run"), str(tmp_path / "ann"), "3"],
        tmp_path,
        CORPUS=TINY,
        SAMPLES="20",
        KINDS="ivf,screening",
    )
    assert "| ivf |" in out and "| screening |" in out
    assert (tmp_path / "ann" / "report.md").is_file()


def test_ab_step_pairs_two_trees(tmp_path: Path) -> None:
    command = [sys.executable, "benchmarks/ab_step.py", "--before", "src", "--after", "src", "--row", "nce"]
    out = run(
        [*command, "--vocab", "2000", "--repeats", "2", "--steps", "1", "--warmup", "1", "--after-threads", "2"],
        tmp_path,
    )
    assert "threads=1/2:" in out and "before/after" in out and "over 2 alternating pairs" in out


def test_profile_step_lists_operators(tmp_path: Path) -> None:
    command = [sys.executable, "benchmarks/profile_step.py", "--row", "hsm[huffman]", "--vocab", "2000"]
    out = run([*command, "--steps", "1", "--warmup", "1", "--top", "3"], tmp_path)
    assert "ms/step" in out


def test_chunk_budget_times_each_budget(tmp_path: Path) -> None:
    command = [sys.executable, "benchmarks/chunk_budget.py", "--vocab", "3000", "--hidden", "8", "--batch", "64"]
    out = run([*command, "--budgets", "0,4096", "--rounds", "1"], tmp_path)
    assert "default" in out and "4096 logits (64 classes)" in out


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the fused cross-entropy peers are timed on a CUDA device")
def test_fused_cross_entropy_peers_run_on_a_small_shape(tmp_path: Path) -> None:
    command = [sys.executable, "benchmarks/fused_ce_peers.py", "--shapes", "64x32x1000", "--modes", "fp32"]
    out = run([*command, "--repeats", "1", "--out", str(tmp_path / "peers.json")], tmp_path)
    assert "bigvocab full" in out


def test_word2vec_unseen_compares_both_libraries_on_a_given_corpus(tmp_path: Path) -> None:
    pytest.importorskip("gensim")
    words = [f"w{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(40)]  # the driver keeps letters only
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(" ".join(words[(i * 7 + j) % 40] for j in range(12)) for i in range(200)) + "\n")
    pairs = "".join(f"{words[i]}\t{words[i + 1]}\t{i % 5}\n" for i in range(0, 30, 2))
    (tmp_path / "wordsim353.tsv").write_text(pairs)
    (tmp_path / "simlex999.txt").write_text(pairs)
    command = [sys.executable, "benchmarks/word2vec_unseen.py", "--eval", str(tmp_path), "--corpus", str(corpus)]
    options = ["--seeds", "2", "--epochs", "1", "--combinations", "CBOW + hs", "--out", str(tmp_path)]
    out = run([*command, *options], tmp_path)
    assert "| corpus.txt | CBOW + hs |" in out and "speed-up, 2 threads" in out
    assert len((tmp_path / "runs.csv").read_text().splitlines()) == 1 + 2 * 2 * 2  # seeds x threads x libraries


def test_retrieval_logq_trains_three_corrections_and_checks_the_estimate(tmp_path: Path) -> None:
    command = [sys.executable, "benchmarks/retrieval_logq.py", "--items", "1000", "--train-rows", "2000"]
    out = run([*command, "--batch", "64", "--steps", "20", "--checkpoints", "2"], tmp_path)
    assert all(f"| {label} |" in out for label in ("log-Q, streaming π", "log-Q, counts' π", "no correction"))
    assert "| [0.5, 1.0) |" in out


def test_fused_step_times_both_paths_and_thread_counts(tmp_path: Path) -> None:
    command = [sys.executable, "benchmarks/fused_step.py", "--rows", "neg[per-example]", "--vocab", "2000"]
    out = run([*command, "--repeats", "2", "--steps", "1"], tmp_path)
    assert "| neg[per-example] |" in out and "torch.optim / fused" in out
