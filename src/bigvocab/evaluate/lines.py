"""Reading the evaluation files (analogy questions, word pairs) line by line, with errors that
name the file and the line."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from bigvocab.errors import DataError


def numbered_lines(path: str | os.PathLike, what: str) -> Iterator[tuple[int, str]]:
    """``(line number, stripped text)`` for every line of the UTF-8 file ``path``.

    Raises:
        DataError: the file is missing, or a line is not UTF-8 (``what`` names the file's role,
            e.g. "analogy file").
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(
            f"{what} {str(path)!r} does not exist" if not path.exists() else f"{what} {str(path)!r} is not a file"
        )
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise DataError(
                    f"{what} {str(path)!r} line {number} is not UTF-8 text (byte {raw[error.start]:#04x} "
                    f"at column {error.start + 1}); convert it, e.g. with iconv -t utf-8"
                ) from None
            yield number, text.strip()
