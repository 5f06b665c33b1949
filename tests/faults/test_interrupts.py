"""Signals and kills at random moments of a real run (a subprocess), then ``--resume``: the
resumed run must log exactly the losses of a run that was never interrupted."""

from __future__ import annotations

import random
import signal

import pytest
from fault_helpers import (
    TINY,
    assert_one_line_error,
    finish,
    logged_steps,
    one_thread,
    start_cli,
    trajectory,
    wait_for,
)

from bigvocab.checkpoint import load_checkpoint
from bigvocab.cli import main

pytestmark = pytest.mark.slow

#: 270 steps an epoch on the 600-line corpus, a step event every 7 steps (so an interruption
#: usually falls inside a logging window; 270 is not a multiple of 7, so a window also ends with its epoch).
LOG_EVERY = 7
RUN = [*TINY, "--epochs", "2", "--log-every", str(LOG_EVERY), "--patience", "0"]
STEPS_PER_EPOCH = 270
TOTAL_STEPS = 2 * STEPS_PER_EPOCH


@pytest.fixture(scope="module")
def reference(tmp_path_factory, corpus_file):
    out = tmp_path_factory.mktemp("reference") / "run"
    with one_thread():
        assert main(["train", *RUN, "--corpus", f"text:{corpus_file}", "--out", str(out)]) == 0
    rows = trajectory(out)
    assert sum(dict(row)["event"] == "step" for row in rows) == TOTAL_STEPS // LOG_EVERY
    return rows


def resume(out) -> None:
    with one_thread():
        assert main(["train", "--out", str(out), "--resume", "--no-progress"]) == 0


@pytest.mark.parametrize("number, seed", [(signal.SIGINT, 1), (signal.SIGTERM, 2)])
def test_signal_saves_and_resume_gives_the_same_losses(number, seed, reference, corpus_file, tmp_path):
    out = tmp_path / "run"
    moment = random.Random(seed).randint(1, TOTAL_STEPS - 100)
    process = start_cli(["train", *RUN, "--corpus", f"text:{corpus_file}", "--out", str(out)], tmp_path)
    wait_for(lambda: logged_steps(out) * LOG_EVERY >= moment or process.poll() is not None, what=f"step {moment}")
    process.send_signal(number)
    status, _, err = finish(process)
    assert_one_line_error(err, status, 128 + number, label="interrupted")
    assert f"{signal.Signals(number).name} received" in err and "--resume" in err
    assert f" of {STEPS_PER_EPOCH} in epoch " in err or "the end of epoch" in err  # where in its epoch
    saved = load_checkpoint(out / "last.pt")["position"]["step"]
    assert f"({saved:,} steps in all)" in err and saved >= moment
    resume(out)
    assert trajectory(out) == reference  # the logged averages too: the window before the stop is saved


@pytest.mark.parametrize("seed", [4, 5])
def test_kill_9_during_saves_keeps_a_whole_checkpoint(seed, reference, corpus_file, tmp_path):
    """--checkpoint-every 1 saves at every step, so a kill at a random moment often lands inside a
    save: last.pt must still be the previous whole checkpoint, and the stale lock and temporary
    files must not stop the resume."""
    out = tmp_path / "run"
    moment = random.Random(seed).randint(5, TOTAL_STEPS - 100)
    process = start_cli(
        ["train", *RUN, "--checkpoint-every", "1", "--corpus", f"text:{corpus_file}", "--out", str(out)], tmp_path
    )
    wait_for(lambda: logged_steps(out) * LOG_EVERY >= moment or process.poll() is not None, what=f"step {moment}")
    process.kill()
    finish(process)
    assert f"pid {process.pid} " in (out / ".lock").read_text()  # the dead run's lock record stays...
    load_checkpoint(out / "last.pt")  # ... and last.pt is whole
    resume(out)  # ... and neither stops the resume
    assert trajectory(out) == reference
    assert not list(out.glob(".*.tmp")) and not (out / ".lock").exists()
