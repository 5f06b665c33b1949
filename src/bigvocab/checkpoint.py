"""Checkpoint files: atomic writes, validated reads, and rebuilding a model from one.

A checkpoint is a ``torch.save`` dict tagged ``{"format": "bigvocab-checkpoint", "version": 1}``.
Everything in it is a tensor or a plain Python value (RNG states included), so it loads with
``torch.load(weights_only=True)``: opening a checkpoint never runs code from the file.

Writes are atomic (:func:`bigvocab.files.atomic_output`): a crash or a full disk mid-write leaves
the previous file intact, and the error names the checkpoint, not a temporary file.
"""

from __future__ import annotations

import os
import pickle
import re
from pathlib import Path
from typing import Any

import torch

from bigvocab.errors import CheckpointError, DataError
from bigvocab.files import atomic_output, atomic_write_bytes, atomic_write_text  # noqa: F401  (re-exported)

FORMAT = "bigvocab-checkpoint"
VERSION = 1

PathLike = str | os.PathLike

#: The side inputs of an output layer that a run gives from its own vocabulary (the training
#: frequencies and the word strings); any other a layer reads comes from outside (``--side``).
VOCABULARY_SIDE_INPUTS = ("counts", "words")


def save_checkpoint(path: PathLike, payload: dict[str, Any]) -> Path:
    """Atomically save ``payload`` (tensors and plain values only) as a bigvocab checkpoint."""
    with atomic_output(path) as handle:
        torch.save({"format": FORMAT, "version": VERSION, **payload}, handle)
    return Path(path)


def load_checkpoint(path: PathLike, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint`.

    Raises:
        CheckpointError: the file is missing, truncated or corrupt, or is not a bigvocab checkpoint.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(
            f"checkpoint {str(path)!r} does not exist"
            if not path.exists()
            else f"checkpoint {str(path)!r} is not a file"
        )
    try:
        payload = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as error:
        unsafe = re.search(r"Unsupported global: GLOBAL (\S+)", str(error))
        if unsafe is None:
            raise CheckpointError(
                f"cannot read checkpoint {str(path)!r}: truncated or corrupt (not a torch file)"
            ) from None
        raise CheckpointError(
            f"{str(path)!r} is not a bigvocab checkpoint: it holds a Python object ({unsafe.group(1)}), "
            "which is not loaded because unpickling it could run code"
        ) from None
    except OSError as error:
        raise CheckpointError(f"cannot read checkpoint {str(path)!r}: {error.strerror or error}") from None
    except Exception:  # torch raises many types, with long internal messages, for damaged files
        raise CheckpointError(
            f"cannot read checkpoint {str(path)!r}: truncated or corrupt "
            f"({path.stat().st_size:,} bytes, not a complete torch file)"
        ) from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise CheckpointError(f"{str(path)!r} is not a bigvocab checkpoint (no {FORMAT!r} tag)")
    if payload.get("version") != VERSION:
        raise CheckpointError(
            f"checkpoint {str(path)!r} has format version {payload.get('version')!r}; this bigvocab reads {VERSION}"
        )
    return payload


def build_from_meta(meta: dict[str, Any], *, side: dict[str, Any] | None = None):
    """``(model, vocab)`` described by the ``meta`` dict the CLI stores in its checkpoints.

    ``meta`` holds ``model``, ``output``, ``model_kwargs``, ``output_kwargs``, ``vocab`` (from
    ``Vocab.to_dict()``) and ``seed``. The model is built under ``seed`` in a forked RNG, so any
    random structure fixed at construction comes out the same as in the run that wrote it, and
    the caller's RNG stream is left alone. The output layer gets the vocabulary's ``counts`` and
    ``words`` and the other ``side`` inputs (by kind, e.g. ``vectors``), each if it reads it.
    """
    from bigvocab.data.vocab import Vocab
    from bigvocab.models import build_model

    missing = [key for key in ("model", "output", "vocab") if key not in meta]
    if missing:
        raise CheckpointError(f"checkpoint meta lacks {', '.join(missing)}; it was not written by `bigvocab train`")
    vocab = Vocab.from_dict(meta["vocab"])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(meta.get("seed", 0)))
        model = build_model(
            meta["model"],
            len(vocab),
            meta["output"],
            counts=list(vocab.counts),
            words=list(vocab.words),
            model_kwargs=dict(meta.get("model_kwargs") or {}),
            output_kwargs=dict(meta.get("output_kwargs") or {}),
            side=side,
        )
    return model, vocab


def load_model(path: PathLike, device: str | torch.device = "cpu"):
    """``(model, vocab, checkpoint)`` from a checkpoint written by ``bigvocab train``.

    The model is in eval mode on ``device``. A checkpoint whose weights do not fit the model its
    meta describes raises :class:`CheckpointError`.
    """
    checkpoint = load_checkpoint(path)
    meta = checkpoint.get("meta") or {}
    try:
        model, vocab = build_from_meta(meta)
    except DataError as error:
        raise CheckpointError(f"checkpoint {str(path)!r} holds an invalid vocabulary: {error}") from None
    try:
        model.load_state_dict(checkpoint["model"])
    except (KeyError, RuntimeError) as error:
        first = str(error).strip().splitlines()[0]
        raise CheckpointError(f"checkpoint {str(path)!r} does not match its model description: {first}") from None
    return model.to(device).eval(), vocab, checkpoint
