"""Timing primitives: synchronised wall-clock calls, calibrated inner loops, paired repetitions."""

from __future__ import annotations

import math
import time
from typing import Callable

import torch


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
) -> tuple[list[float], list[float]]:
    """``repeats`` pairs of timings (reference, candidate) taken back to back.

    The order alternates between repetitions so that neither side always runs on a cache warmed
    (or a clock throttled) by the other.
    """
    reference_times: list[float] = []
    candidate_times: list[float] = []
    for repetition in range(repeats):
        if repetition % 2 == 0:
            reference_times.append(seconds_per_call(reference, reference_inner, device))
            candidate_times.append(seconds_per_call(candidate, candidate_inner, device))
        else:
            candidate_times.append(seconds_per_call(candidate, candidate_inner, device))
            reference_times.append(seconds_per_call(reference, reference_inner, device))
    return reference_times, candidate_times
