"""SIGINT / SIGTERM stop an engine run (a real subprocess) within a chunk, not at the epoch's end:
``last.pt`` is saved mid-epoch through the trainer's atomic checkpoint and ``--resume`` reads the
rest of the epoch, each word once."""
from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("numba")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "faults"))
from fault_helpers import assert_one_line_error, finish, start_cli, wait_for  # noqa: E402

from bigvocab.checkpoint import load_checkpoint  # noqa: E402
from bigvocab.cli import main  # noqa: E402
from bigvocab.data.corpora import load_corpus  # noqa: E402

#: About 2.4M training words: an epoch of tens of seconds on one thread, against a chunk of 10k words.
SPEC = "synthetic:vocab_size=2000,num_classes=20,tokens=3000000"
RUN = ["train", "--model", "skipgram", "--output", "neg", "--corpus", SPEC, "--epochs", "1", "--no-progress"]


@pytest.mark.parametrize("number, workers", [(signal.SIGINT, 1), (signal.SIGTERM, 2)])
def test_signal_stops_an_engine_epoch_part_way_and_resume_finishes_it(tmp_path, number, workers):
    out = tmp_path / "run"
    process = start_cli([*RUN, "--workers", str(workers), "--out", str(out)], tmp_path)
    wait_for(lambda: (out / "config.json").exists() or process.poll() is not None, timeout=120, what="the run's start")
    time.sleep(3)  # into the epoch (the corpus is read and the kernels loaded from numba's cache by now)
    process.send_signal(number)
    status, _, err = finish(process)
    assert_one_line_error(err, status, 128 + number)
    assert f"{signal.Signals(number).name} received" in err and "--resume" in err
    words = load_corpus(SPEC, progress=False).train.numel()
    position = load_checkpoint(out / "last.pt")["position"]
    assert position["epoch"] == 0 and 0 < position["tokens"] < words and position["step_in_epoch"] > 0
    assert main(["train", "--out", str(out), "--resume", "--no-progress"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["epochs_completed"] == 1 and summary["tokens"] == words
