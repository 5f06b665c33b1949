"""Argument checks shared by layers, samplers, models and the CLI."""

from __future__ import annotations

import math

from bigvocab.errors import ConfigError


def check_positive_int(name: str, value: object) -> int:
    """``value`` as an int >= 1, or a :class:`ConfigError` naming the argument."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}")
    return value


def check_flag(name: str, value: object) -> bool:
    """A boolean option as a bool; 0 and 1 are accepted too (gensim spells ``cbow_mean=1``),
    anything else is a :class:`ConfigError` naming the argument."""
    if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
        return bool(value)
    raise ConfigError(f"{name} must be True or False (or 1 or 0), got {value!r}")


def check_nonnegative_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{name} must be a non-negative integer, got {value!r}")
    return value


def check_probability(name: str, value: float, *, allow_zero: bool = True, allow_one: bool = True) -> float:
    """A float in [0, 1] (ends included or not as asked)."""
    ok = isinstance(value, (int, float)) and math.isfinite(value)
    ok = ok and (value > 0 or (allow_zero and value == 0)) and (value < 1 or (allow_one and value == 1))
    if not ok:
        lo = "[0" if allow_zero else "(0"
        hi = "1]" if allow_one else "1)"
        raise ConfigError(f"{name} must lie in {lo}, {hi}, got {value!r}")
    return float(value)


def check_positive_float(name: str, value: float) -> float:
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def check_nonnegative_float(name: str, value: object) -> float:
    """A finite number >= 0 as a float, or a :class:`ConfigError` naming the argument."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ConfigError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def check_finite_float(name: str, value: object) -> float:
    """A finite number as a float, or a :class:`ConfigError` naming the argument."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def check_num_samples(num_samples: object, num_classes: int, *, default: int | None = None) -> int:
    """k must satisfy 1 <= k < V: drawing V or more negatives is the full softmax done badly.
    None means ``default`` capped at V - 1 (every sampling layer reads None so)."""
    if num_samples is None and default is not None:
        num_samples = min(default, num_classes - 1)
    k = check_positive_int("num_samples", num_samples)
    if k >= num_classes:
        raise ConfigError(
            f"num_samples={k} must be smaller than the number of classes ({num_classes}); "
            "to normalise over every class, use an exact output layer instead of a sampled one"
        )
    return k
