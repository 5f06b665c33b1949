"""The run directory: which files make a run, when a directory may be written, and its lock.

One run per directory. A run holds an advisory lock (``fcntl.flock`` on ``.lock``, which records
the holder's pid and host) for as long as it writes there. The kernel drops a ``flock`` when its
process exits in any way, kill -9 included, so a lock left by a dead process is never in force:
the next run takes it and overwrites the stale record. A second run in a directory that is in
use is refused with one line naming the holder.

A directory "holds a run" once a checkpoint exists. A run that stopped before its first
checkpoint (a corpus too short for the model, NaN at step 2, Ctrl-C during the first epoch)
leaves only ``config.json`` and perhaps ``metrics.jsonl``; a plain retry replaces them.
"""

from __future__ import annotations

import datetime
import errno
import os
import socket
import warnings
from collections.abc import Mapping
from pathlib import Path

from bigvocab.errors import ConfigError, RunLockedError
from bigvocab.files import remove_stale_temporaries, write_error

try:  # POSIX; elsewhere runs go unlocked
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

#: Files a run writes into its out_dir.
RUN_FILES = ("last.pt", "best.pt", "metrics.jsonl", "config.json", "summary.json")
#: The files whose presence means the directory holds a run that can be resumed or evaluated.
CHECKPOINTS = ("last.pt", "best.pt")
LOCK_FILE = ".lock"

#: How the options are spelled in messages: keyword arguments for Python callers...
PYTHON_SPELLING = {
    "resume": "resume=True",
    "overwrite": "overwrite=True",
    "out": "out_dir",
    "corpus": "corpus",
    "allow_changed_corpus": "allow_changed_corpus=True",
    "workers": "workers",
    "side": "side={{{kind!r}: PATH}}",
}
#: ... and flags for the command line.
CLI_SPELLING = {
    "resume": "--resume",
    "overwrite": "--overwrite",
    "out": "--out",
    "corpus": "--corpus",
    "allow_changed_corpus": "--allow-changed-corpus",
    "workers": "--workers",
    "side": "--side {kind}=PATH",
}

PathLike = str | os.PathLike


def check_out_dir(
    out_dir: PathLike,
    *,
    resume: bool = False,
    overwrite: bool = False,
    spelling: Mapping[str, str] = PYTHON_SPELLING,
) -> list[str]:
    """Refuse to write into a directory that holds a run, unless asked to resume or overwrite.

    Returns the run files present. Raises :class:`ConfigError` before anything is written; the
    message names the options as ``spelling`` writes them.
    """
    out_dir = Path(out_dir)
    if resume and overwrite:
        raise ConfigError(
            f"{spelling['resume']} and {spelling['overwrite']} exclude each other: "
            "resume continues a run, overwrite replaces it"
        )
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"{spelling['out']} {str(out_dir)!r} exists and is not a directory")
    present = [name for name in RUN_FILES if (out_dir / name).exists()]
    if resume and "last.pt" not in present:
        why = (
            f"the run there stopped before its first checkpoint; start it again without {spelling['resume']}"
            if present
            else "it holds no run"
        )
        raise ConfigError(f"nothing to resume in {str(out_dir)!r}: no last.pt ({why})")
    if holds_run(present) and not (resume or overwrite):
        raise ConfigError(
            f"{spelling['out']} {str(out_dir)!r} already holds a training run ({', '.join(present)}); "
            f"continue it with {spelling['resume']} or replace it with {spelling['overwrite']}"
        )
    return present


def holds_run(present: list[str]) -> bool:
    """Whether the run files ``present`` include a checkpoint (else they are a failed start)."""
    return any(name in present for name in CHECKPOINTS)


def clear_run(out_dir: PathLike) -> None:
    """Remove the run files and the temporaries of interrupted writes (overwrite, failed start)."""
    for name in RUN_FILES:
        (Path(out_dir) / name).unlink(missing_ok=True)
    remove_stale_temporaries(out_dir, RUN_FILES)


class RunLock:
    """The advisory lock of one run directory, re-entrant within a process.

    ``with RunLock(path, spelling):`` creates the directory if needed, takes the lock or raises
    :class:`RunLockedError` naming the holder, and releases it (deleting ``.lock``, and the
    directory too when it made it and nothing was written there) on leaving.
    Nested uses in one process share the lock, so the CLI can hold it around a whole command
    while the :class:`~bigvocab.train.Trainer` inside takes it too.
    """

    _held: dict[str, list] = {}  # real path -> [file descriptor, depth, directory made by the lock]

    def __init__(self, out_dir: PathLike, spelling: Mapping[str, str] = PYTHON_SPELLING) -> None:
        self.out_dir = Path(out_dir)
        self.spelling = spelling

    def __enter__(self) -> RunLock:
        key = os.path.realpath(self.out_dir)
        if key in self._held:
            self._held[key][1] += 1
            return self
        made = not self.out_dir.exists()
        try:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            fd = self._lock(Path(key) / LOCK_FILE) if fcntl is not None else -1
        except OSError as error:
            if made:
                _remove_if_empty(Path(key))
            raise write_error(self.out_dir, error) from None
        except BaseException:
            if made:
                _remove_if_empty(Path(key))
            raise
        self._held[key] = [fd, 1, made]
        return self

    def __exit__(self, *exc_info: object) -> None:
        key = os.path.realpath(self.out_dir)
        entry = self._held.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] == 0:
            del self._held[key]
            fd, _, made = entry
            if fd >= 0:
                # unlinked while still locked: a process that opened the old file sees it gone and retries
                (Path(key) / LOCK_FILE).unlink(missing_ok=True)
                os.close(fd)
            if made:
                _remove_if_empty(Path(key))

    def _lock(self, path: Path) -> int:
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as error:
                if error.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                    # a file system without locks (some network mounts): the run goes on unlocked
                    warnings.warn(
                        f"cannot lock {str(path)!r} ({error.strerror}); nothing stops a second run "
                        "from writing into this directory at the same time",
                        stacklevel=4,
                    )
                    break
                holder = _read_holder(fd)
                os.close(fd)
                raise RunLockedError(
                    f"{self.spelling['out']} {str(self.out_dir)!r} is in use by another run ({holder}); "
                    f"wait for it to finish or choose another {self.spelling['out']}"
                ) from None
            try:
                same_file = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same_file = False
            if same_file:  # else the holder released and deleted it between our open and flock
                break
            os.close(fd)
        record = f"pid {os.getpid()} on {socket.gethostname()} since {_now()}\n".encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, record, 0)
        return fd


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:  # not empty: something was written
        pass


def _read_holder(fd: int) -> str:
    text = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
    return text or "a process that has not yet written its pid"


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
