"""Random-number state: what a checkpoint stores so that a resumed run draws what the
uninterrupted run would have drawn."""

from __future__ import annotations

import random
from typing import Any, cast

import numpy as np
import torch


def get_rng_state() -> dict[str, Any]:
    """torch, numpy, python (and CUDA) generator states, as tensors and plain values only."""
    # The global generator is MT19937, whose legacy state is this 5-tuple (numpy's stub also allows a dict).
    kind, keys, pos, has_gauss, cached = cast(
        "tuple[str, np.ndarray, int, int, float]", np.random.get_state(legacy=True)
    )
    state = {
        "torch": torch.get_rng_state(),
        "numpy": {
            "kind": kind,
            "keys": torch.from_numpy(keys.astype(np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached),
        },
        "python": random.getstate(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    saved = state["numpy"]
    np.random.set_state(
        (
            saved["kind"],
            saved["keys"].numpy().astype(np.uint32),
            saved["pos"],
            saved["has_gauss"],
            saved["cached_gaussian"],
        )
    )
    random.setstate(state["python"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def seed_everything(seed: int) -> None:
    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)


def epoch_generator(seed: int, epoch: int) -> torch.Generator:
    """The shuffling generator of ``epoch``: a function of (seed, epoch) only, so an epoch can be
    replayed to any position when a run resumes."""
    return torch.Generator().manual_seed(seed * 1_000_003 + epoch)
