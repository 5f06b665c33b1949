"""Paired-ratio statistics: the speed-up of a layer over ``full`` within each repetition.

Timing on a shared machine drifts (other processes, frequency scaling, the allocator): a ratio
of two medians taken minutes apart inherits that drift, while the ratio of two timings taken
back to back does not. So each repetition times ``full`` and the layer next to each other, and
the speed-up is the median of those per-repetition ratios, with quartiles and extremes as spread.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

from bigvocab.errors import ConfigError


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
