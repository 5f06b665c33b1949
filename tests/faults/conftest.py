"""Fixtures of the fault-injection suite (the helpers live in fault_helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fault_helpers import write_corpus


@pytest.fixture(scope="session")
def corpus_file(tmp_path_factory) -> Path:
    """600 sentences of 8 words over 40 words."""
    return write_corpus(tmp_path_factory.mktemp("corpus") / "c.txt", 600)
