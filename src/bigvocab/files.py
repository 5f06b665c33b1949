"""Files the project writes: atomic replacement, permissions that follow the umask, strict JSON.

Writes go to a temporary file in the target's directory, are flushed to disk, and replace the
target with :func:`os.replace`, so a crash or a full disk mid-write leaves the previous file
intact. ``tempfile.mkstemp`` creates its file readable by its owner only; the finished file gets
the mode ``open()`` would have given it (``0o666`` less the umask), so an exported ``vectors.txt``
can be shared like any other file. Every failure is a :class:`WriteError` that names the file the
user asked for, never the temporary one.

JSON written here is strict (RFC 8259): a NaN or infinite float becomes ``null``, since
``json.dumps``'s default ``NaN``/``Infinity`` literals are rejected by most other parsers.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from bigvocab.errors import WriteError

PathLike = str | os.PathLike


def current_umask() -> int:
    """The process's umask (read by setting it and putting it back: there is no getter)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_error(path: PathLike, error: OSError) -> WriteError:
    """One line naming ``path`` (the user's file) and the system's reason."""
    return WriteError(f"cannot write {str(path)!r}: {error.strerror or error}")


@contextlib.contextmanager
def atomic_output(path: PathLike) -> Iterator[BinaryIO]:
    """A binary handle whose content replaces ``path`` atomically when the block ends without error.

    Raises:
        WriteError: the directory cannot be created or written, or the disk is full; ``path``
            is left as it was and no temporary file remains.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as error:
        raise write_error(path, error) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, path)
    except OSError as error:
        Path(tmp).unlink(missing_ok=True)
        raise write_error(path, error) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` so that readers see either the old file or the whole new one."""
    with atomic_output(path) as handle:
        handle.write(data)
    return Path(path)


def atomic_write_text(path: PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def remove_stale_temporaries(folder: PathLike, names: Iterable[str]) -> list[Path]:
    """Delete the temporary files :func:`atomic_output` left for ``names`` in ``folder`` when its
    process was killed mid-write (``.last.pt.k2j3.tmp``); returns what was removed."""
    removed = []
    for name in names:
        for stale in Path(folder).glob(f".{name}.*.tmp"):
            stale.unlink(missing_ok=True)
            removed.append(stale)
    return removed


def finite_or_none(value: Any) -> Any:
    """``value`` with every NaN or infinite float (in dicts, lists, tuples) replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite_or_none(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_none(item) for item in value]
    return value


def strict_json(value: Any, **options: Any) -> str:
    """``json.dumps`` that never writes ``NaN`` or ``Infinity`` (they become ``null``)."""
    return json.dumps(finite_or_none(value), allow_nan=False, **options)


def write_json(path: PathLike, value: Any) -> Path:
    """Atomically write ``value`` as indented strict JSON."""
    return atomic_write_text(path, strict_json(value, indent=2) + "\n")


def append_json_line(path: PathLike, value: Any) -> None:
    """Append ``value`` as one strict JSON line (``metrics.jsonl``)."""
    try:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(strict_json(value) + "\n")
    except OSError as error:
        raise write_error(path, error) from None
