"""Helpers of the fault-injection suite: tiny corpora, and the CLI run in a subprocess (for signals,
kills and concurrency). (A uniquely named module rather than conftest.py, so that importing it
is unambiguous next to the other test folders' conftest modules.)"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import torch

SRC = str(Path(__file__).resolve().parents[2] / "src")
#: A tiny NNLM run: about 1 ms a step, so a few thousand steps give signals time to land.
TINY = [
    "--model",
    "nnlm",
    "--output",
    "full",
    "--context",
    "2",
    "--embedding-dim",
    "8",
    "--hidden-dim",
    "8",
    "--batch-size",
    "16",
    "--no-progress",
    "--optimizer",
    "adam",
    "--lr",
    "0.01",
]


def write_corpus(path: Path, lines: int, seed: int = 0, words: int = 40) -> Path:
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(words)]
    path.write_text("".join(" ".join(rng.choice(vocabulary) for _ in range(8)) + "\n" for _ in range(lines)))
    return path


@contextlib.contextmanager
def one_thread():
    """In-process runs at the subprocesses' one thread: a trajectory compared bit for bit with a
    subprocess's must not depend on the test process's thread count (2 threads sum differently)."""
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(saved)


def environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def start_cli(args: list[str], cwd: Path) -> subprocess.Popen:
    """``bigvocab ARGS`` in a subprocess of its own (signals go to it alone)."""
    return subprocess.Popen(
        [sys.executable, "-m", "bigvocab.cli", *args],
        cwd=cwd,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )


def default_sigint() -> None:
    """A shell runs background jobs with SIGINT ignored, and the trainer leaves an ignored signal
    ignored: give the child the default a terminal user has, so the tests do not depend on how
    pytest was started."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def finish(process: subprocess.Popen, timeout: float = 120) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def wait_for(condition, timeout: float = 60, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def logged_steps(folder: Path) -> int:
    path = folder / "metrics.jsonl"
    return path.read_text().count('"event": "step"') if path.exists() else 0


#: The fields of a metrics event that measure wall-clock time, which an interruption changes.
WALL_CLOCK = ("elapsed", "tokens_per_s")


def trajectory(folder: Path) -> list[tuple]:
    """What must not depend on interruptions: every field of every logged event (step and epoch)
    but the wall-clock ones, in order."""
    rows = []
    for line in (folder / "metrics.jsonl").read_text().splitlines():
        event = json.loads(line)
        rows.append(tuple(sorted((key, value) for key, value in event.items() if key not in WALL_CLOCK)))
    return rows


def assert_one_line_error(err: str, status: int, expected_status: int = 2, label: str = "error") -> None:
    """One line on standard error, ``bigvocab: LABEL: ...`` ("interrupted" for a signal the user
    sent, which is not an error), no traceback, and the exit status."""
    assert status == expected_status, err
    *before, last = err.rstrip("\n").split("\n")
    assert last.startswith(f"bigvocab: {label}: ") and err.endswith("\n"), err
    assert all(line.startswith("epoch ") for line in before), err  # at most the run's epoch lines before it
    assert "Traceback" not in err
