"""Timing: synchronised wall-clock calls, calibrated inner loops, paired repetitions, and the
paired-ratio statistics of a speed-up.

Timing on a shared machine drifts (other processes, frequency scaling, the allocator): a ratio
of two medians taken minutes apart inherits that drift, while the ratio of two timings taken
back to back does not. So each repetition times ``full`` and the layer next to each other, and
the speed-up is the median of those per-repetition ratios, with quartiles and extremes as spread.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch

from bigvocab.errors import ConfigError


def synchronize(device: torch.device) -> None:
    """Wait for queued GPU work so that the clock measures it (no-op on CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def seconds_per_call(fn: Callable[[], object], inner: int, device: torch.device) -> float:
    """Mean wall-clock seconds of ``inner`` back-to-back calls of ``fn``."""
    synchronize(device)
    start = time.perf_counter()
    for _ in range(inner):
        fn()
    synchronize(device)
    return (time.perf_counter() - start) / inner


def inner_loop_size(first_call_seconds: float, min_time: float, max_inner: int = 1000) -> int:
    """How many calls make one timing last at least ``min_time``: short calls are repeated so
    the clock's resolution and Python's overhead stay small against what is measured."""
    if first_call_seconds <= 0:
        return max_inner
    return max(1, min(max_inner, math.ceil(min_time / first_call_seconds)))


def paired_timings(
    reference: Callable[[], object],
    candidate: Callable[[], object],
    *,
    reference_inner: int,
    candidate_inner: int,
    repeats: int,
    device: torch.device,
    reference_warmup: bool = False,
    candidate_warmup: bool = False,
) -> tuple[list[float], list[float]]:
    """``repeats`` pairs of timings (reference, candidate) taken back to back.

    The order alternates between repetitions so that neither side always runs on a cache warmed
    (or a clock throttled) by the other. A side with ``*_warmup`` makes one untimed call before
    each of its timings: the first call after the other side's work pays for the caches, pages
    and allocator state that work left behind, which a loop calling the same operation again and
    again does not pay.
    """
    sides: dict[str, tuple[Callable[[], object], int, bool, list[float]]] = {
        "reference": (reference, reference_inner, reference_warmup, []),
        "candidate": (candidate, candidate_inner, candidate_warmup, []),
    }
    for repetition in range(repeats):
        for side in ("reference", "candidate") if repetition % 2 == 0 else ("candidate", "reference"):
            fn, inner, warmup, times = sides[side]
            if warmup:
                seconds_per_call(fn, 1, device)
            times.append(seconds_per_call(fn, inner, device))
    return sides["reference"][3], sides["candidate"][3]


@dataclass(frozen=True)
class RatioSummary:
    """Median and spread of per-repetition ratios ``reference_time / candidate_time``.

    A ratio above 1 means the candidate is faster than the reference.
    """

    median: float
    q1: float
    q3: float
    min: float
    max: float
    repeats: int
    #: medians of the raw timings (seconds per call), for the raw tables.
    reference_seconds: float
    candidate_seconds: float

    def to_dict(self) -> dict:
        return asdict(self)


def paired_speedup(reference_seconds: Sequence[float], candidate_seconds: Sequence[float]) -> RatioSummary:
    """Summarise paired timings: ``reference_seconds[i]`` and ``candidate_seconds[i]`` were taken
    in the same repetition ``i``."""
    reference = np.asarray(reference_seconds, dtype=np.float64)
    candidate = np.asarray(candidate_seconds, dtype=np.float64)
    if reference.shape != candidate.shape or reference.ndim != 1 or reference.size == 0:
        raise ConfigError(
            f"paired timings need two equally long non-empty lists, got {reference.size} and {candidate.size}"
        )
    if (reference <= 0).any() or (candidate <= 0).any():
        raise ConfigError("timings must be positive")
    ratios = reference / candidate
    q1, median, q3 = np.percentile(ratios, [25, 50, 75])
    return RatioSummary(
        median=float(median),
        q1=float(q1),
        q3=float(q3),
        min=float(ratios.min()),
        max=float(ratios.max()),
        repeats=int(ratios.size),
        reference_seconds=float(np.median(reference)),
        candidate_seconds=float(np.median(candidate)),
    )
