"""``bigvocab train`` under ``torchrun`` (2 processes, gloo), end to end: a vocabulary-parallel run
reaches the one-process run's test perplexity and writes the same files, which an ordinary
``bigvocab eval`` reads; a data-parallel run trains on both ranks' batches. (The numbers are held
to one process in test_distributed_training.py; here it is the command line and the launcher.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch.distributed as dist

import bigvocab
from bigvocab.cli import main

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs gloo"),
]

TRAIN = [
    "train",
    "--model",
    "nnlm",
    "--corpus",
    "synthetic:vocab_size=60,num_classes=4,tokens=3000,seed=2",
    "--context",
    "2",
    "--embedding-dim",
    "8",
    "--hidden-dim",
    "8",
    "--epochs",
    "1",
    "--batch-size",
    "32",
    "--max-steps",
    "12",
    "--no-progress",
]


def bigvocab_command(*args: str, processes: int = 1) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(Path(bigvocab.__file__).parents[1]))
    launcher = (
        ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(processes)] if processes > 1 else []
    )
    done = subprocess.run(
        [sys.executable, *launcher, "-m", "bigvocab.cli", *args], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, "\n".join(
        line for line in done.stderr.splitlines() if "bigvocab" in line or "Error" in line
    )[-3000:]
    return done


def test_vocab_parallel_training_under_torchrun_equals_one_process(tmp_path):
    layer = ["--output", "sampled", "--num-samples", "10"]
    bigvocab_command(*TRAIN, *layer, "--vocab-parallel", "--out", str(tmp_path / "vp"), processes=2)
    bigvocab_command(*TRAIN, *layer, "--out", str(tmp_path / "one"))
    split = json.loads((tmp_path / "vp" / "summary.json").read_text())
    single = json.loads((tmp_path / "one" / "summary.json").read_text())
    assert split["steps"] == single["steps"] == 12
    assert split["test_ppl"] == pytest.approx(single["test_ppl"], rel=1e-5)  # float32 training
    assert sorted(p.name for p in (tmp_path / "vp").iterdir()) == sorted(p.name for p in (tmp_path / "one").iterdir())
    evaluated = bigvocab_command("eval", "--checkpoint", str(tmp_path / "vp" / "last.pt"), "--no-progress")
    assert f"{split['test_ppl']:.3f}" in evaluated.stdout  # an ordinary process reads the run


def test_data_parallel_training_under_torchrun(tmp_path):
    bigvocab_command(*TRAIN, "--output", "full", "--out", str(tmp_path / "dp"), processes=2)
    summary = json.loads((tmp_path / "dp" / "summary.json").read_text())
    assert summary["steps"] == 12 and summary["tokens"] == 12 * 2 * 32  # two ranks' batches per step
    assert summary["test_ppl"] < 60  # it trained: V = 60, so a uniform guess scores 60


def test_vocab_parallel_in_one_process_is_one_clear_error(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert main([*TRAIN, "--output", "full", "--vocab-parallel", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1 and "--vocab-parallel splits the output layer over the processes of a torchrun launch" in err[0]
    )


@pytest.mark.parametrize("method", ["local-sgd", "easgd"])
def test_model_averaging_under_torchrun_checkpoints_a_model_one_process_evaluates(tmp_path, method):
    out = tmp_path / method
    averaging = ["--averaging", method, "--average-every", "4"]
    bigvocab_command(
        *TRAIN, "--output", "full", "--optimizer", "adam", "--lr", "0.01", *averaging, "--out", str(out), processes=2
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 12 and summary["test_ppl"] < 60
    evaluated = bigvocab_command("eval", "--checkpoint", str(out / "last.pt"), "--no-progress")
    assert f"{summary['test_ppl']:.3f}" in evaluated.stdout  # the consensus, read by one ordinary process
