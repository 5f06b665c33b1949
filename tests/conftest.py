"""Shared fixtures: determinism, and where the optional real data lives."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from bigvocab.errors import DataError

REPO = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """``$BIGVOCAB_DATA`` or ``<repo>/../shared/data``; tests using it skip when it is absent."""
    return Path(os.environ.get("BIGVOCAB_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(autouse=True)
def _seed_and_one_thread():
    """Seed every test; run single-threaded because the tests run thousands of tiny operators,
    for which waking an intra-op thread pool costs more than the work on a small shared machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def data_dir() -> Path:
    path = shared_data_dir()
    if not path.is_dir():
        pytest.skip(f"real data not found at {path} (set BIGVOCAB_DATA)")
    return path


@pytest.fixture
def assert_read_error(tmp_path: Path) -> Callable[..., None]:
    """``assert_read_error(reader, content, message)``: ``reader`` given a file holding ``content``
    (text or bytes; None for a file that does not exist) raises a DataError matching ``message``."""

    def check(reader: Callable[[Path], Any], content: str | bytes | None, message: str) -> None:
        path = tmp_path / "input"
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif content is not None:
            path.write_text(content)
        with pytest.raises(DataError, match=message):
            reader(path)

    return check
