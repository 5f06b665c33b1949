"""Checkpoint files: atomic replacement, and a clear CheckpointError for anything unreadable."""

from __future__ import annotations

import pytest
import torch

from bigvocab import checkpoint as ckpt
from bigvocab.errors import CheckpointError


def test_round_trip_keeps_tensors_and_plain_values(tmp_path):
    payload = {
        "model": {"w": torch.arange(6.0).reshape(2, 3)},
        "meta": {"words": ["a", "b"], "k": 3},
        "rng": {"python": (3, tuple(range(5)), None)},
    }
    ckpt.save_checkpoint(tmp_path / "x.pt", payload)
    loaded = ckpt.load_checkpoint(tmp_path / "x.pt")
    assert loaded["format"] == ckpt.FORMAT and loaded["version"] == ckpt.VERSION
    assert torch.equal(loaded["model"]["w"], payload["model"]["w"])
    assert loaded["meta"] == payload["meta"] and loaded["rng"] == payload["rng"]


def test_failed_write_leaves_the_previous_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "last.pt"
    ckpt.save_checkpoint(path, {"model": {"w": torch.ones(3)}})
    good = path.read_bytes()

    def broken_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ckpt.os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="No space"):
        ckpt.save_checkpoint(path, {"model": {"w": torch.zeros(3)}})
    assert path.read_bytes() == good
    assert [p.name for p in tmp_path.iterdir()] == ["last.pt"]


def test_truncated_checkpoint(tmp_path):
    path = tmp_path / "last.pt"
    ckpt.save_checkpoint(path, {"model": {"w": torch.randn(100, 10)}})
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        ckpt.load_checkpoint(path)


def test_garbage_and_foreign_files(tmp_path):
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"this is not a checkpoint\n" * 10)
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        ckpt.load_checkpoint(garbage)
    foreign = tmp_path / "foreign.pt"
    torch.save({"state_dict": {"w": torch.ones(2)}}, foreign)
    with pytest.raises(CheckpointError, match="not a bigvocab checkpoint"):
        ckpt.load_checkpoint(foreign)
    bare = tmp_path / "tensor.pt"
    torch.save(torch.ones(2), bare)
    with pytest.raises(CheckpointError, match="not a bigvocab checkpoint"):
        ckpt.load_checkpoint(bare)


def test_code_in_a_checkpoint_is_never_run(tmp_path):
    """weights_only loading refuses arbitrary pickled objects instead of executing them."""
    path = tmp_path / "evil.pt"
    torch.save({"format": ckpt.FORMAT, "version": ckpt.VERSION, "x": ValueError("boom")}, path)
    with pytest.raises(CheckpointError, match="ValueError.*could run code"):
        ckpt.load_checkpoint(path)


def test_missing_path_directory_and_version(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist"):
        ckpt.load_checkpoint(tmp_path / "nope.pt")
    with pytest.raises(CheckpointError, match="not a file"):
        ckpt.load_checkpoint(tmp_path)
    path = tmp_path / "future.pt"
    torch.save({"format": ckpt.FORMAT, "version": 99}, path)
    with pytest.raises(CheckpointError, match="version 99"):
        ckpt.load_checkpoint(path)
