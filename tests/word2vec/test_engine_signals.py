"""SIGINT / SIGTERM stop an engine run (a real subprocess) within a chunk, not at the epoch's end:
``last.pt`` is saved mid-epoch through the trainer's atomic checkpoint and ``--resume`` reads the
rest of the epoch, each word once."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "faults"))
from fault_helpers import assert_one_line_error, default_sigint, environment, wait_for

from bigvocab.checkpoint import load_checkpoint
from bigvocab.cli import main
from bigvocab.data.corpora import load_corpus

pytestmark = pytest.mark.slow

#: 3M training words: an epoch of seconds on one thread, against a chunk of 10k words; small
#: valid and test splits, because exact evaluation over the vocabulary is not what is tested.
SPEC = "synthetic:vocab_size=2000,num_classes=20,tokens=3000000,valid_tokens=2000,test_tokens=2000"
RUN = ["train", "--model", "skipgram", "--output", "neg", "--corpus", SPEC, "--epochs", "1"]
#: The engine's progress line (logged: standard error is a file here) once it has counted some
#: words: the signal then lands inside the epoch whatever the machine's load (a fixed sleep could
#: land before the corpus is even read).
UNDER_WAY = re.compile(r"epoch 1/1 - PROGRESS: at [1-9]")


@pytest.mark.parametrize("number, workers", [(signal.SIGINT, 1), (signal.SIGTERM, 2)])
def test_signal_stops_an_engine_epoch_part_way_and_resume_finishes_it(tmp_path, number, workers):
    out, log = tmp_path / "run", tmp_path / "stderr.txt"
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "bigvocab.cli", *RUN, "--workers", str(workers), "--out", str(out)],
            cwd=tmp_path,
            env=environment(),
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            text=True,
            preexec_fn=default_sigint,
        )
        wait_for(
            lambda: UNDER_WAY.search(log.read_text()) or process.poll() is not None,
            timeout=600,
            what="the engine's epoch to be under way",
        )
        process.send_signal(number)
        status = process.wait(timeout=120)
    err = log.read_text().rstrip("\n").rsplit("\n", 1)[-1] + "\n"  # the error is the last line
    assert_one_line_error(err, status, 128 + number, label="interrupted")
    assert f"{signal.Signals(number).name} received" in err and "--resume" in err
    words = load_corpus(SPEC, progress=False).train.numel()
    position = load_checkpoint(out / "last.pt")["position"]
    assert position["epoch"] == 0 and 0 < position["tokens"] < words and position["step_in_epoch"] > 0
    assert f"word {position['step_in_epoch']:,} of {words:,} in epoch 1" in err  # where, in words
    assert main(["train", "--out", str(out), "--resume", "--no-progress"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["epochs_completed"] == 1 and summary["tokens"] == words
