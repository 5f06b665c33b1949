"""A memory-mapped stream (``corpus_file``) does not stay resident as the engine reads it: the
pages passed are given back every ``RELEASE_BYTES`` and at the end of the epoch."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from bigvocab.word2vec import corpus
from bigvocab.word2vec.corpus import PassedPages

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")


def resident_kib(path: Path) -> int:
    """Resident KiB of this process's mappings of ``path``."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if line[:1].isalnum() and "-" in line.split()[0]:  # a mapping's header line
            inside = line.rstrip().endswith(str(path))
        elif inside and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total


def _mapped_stream(tmp_path: Path, words: int) -> tuple[np.ndarray, Path]:
    path = tmp_path / "stream.i32"
    ids = np.arange(words, dtype=np.int32) % 50
    ids[19::20] = -1  # sentences of 19 words
    ids.tofile(path)
    return np.memmap(path, dtype=np.int32, mode="r", shape=(words,)), path


def test_pages_passed_are_given_back(tmp_path, monkeypatch):
    monkeypatch.setattr(corpus, "RELEASE_BYTES", 1 << 20)
    stream, path = _mapped_stream(tmp_path, 1 << 20)  # 4 MiB
    assert int(np.asarray(stream).sum()) > 0 and resident_kib(path) >= 4000
    pages = PassedPages(stream)
    pages.passed(100_000)  # 0.4 MB: under RELEASE_BYTES, kept
    assert resident_kib(path) >= 4000
    pages.passed(1 << 19)  # 2 MiB
    assert 1900 <= resident_kib(path) <= 2200
    pages.passed(stream.shape[0], everything=True)
    assert resident_kib(path) < 100


def test_an_in_memory_stream_is_left_alone():
    stream = np.ones(1 << 20, dtype=np.int32)
    PassedPages(stream).passed(stream.shape[0], everything=True)
    assert int(stream.sum()) == 1 << 20


def test_the_engine_leaves_no_page_of_the_stream_resident(tmp_path, monkeypatch):
    pytest.importorskip("numba")
    from bigvocab.models import build_model
    from bigvocab.word2vec.engine import Schedule, engine_arrays, train_epoch

    monkeypatch.setattr(corpus, "RELEASE_BYTES", 4 << 20)
    stream, path = _mapped_stream(tmp_path, 4 << 20)  # 16 MiB
    model = build_model(
        "cbow", 50, "neg", counts=list(range(100, 50, -1)), model_kwargs={"vector_size": 4, "sample": 0}
    )
    # a file system may map 2 MiB pages: at most RELEASE_BYTES, the chunks in training and that slack
    done = train_epoch(
        engine_arrays(model),
        stream,
        schedule=Schedule(0.025, 1e-4, 4 << 20),
        words_before=0,
        epoch=0,
        workers=2,
        should_stop=lambda: resident_kib(path) > 10 << 10,
    )
    assert done.position == stream.shape[0] and resident_kib(path) < 100
