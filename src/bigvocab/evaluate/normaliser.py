"""How self-normalised a model is: statistics of its log normaliser log Z(h) = log Σ_w exp(s_w(h)).

Self-normalisation (Devlin et al. 2014, "Fast and Robust Neural Network Joint Models for
Statistical Machine Translation"; Andreas & Klein 2015, "When and why are log-linear models
self-normalizing?") and NCE with a fixed Z = 1 (Mnih & Teh 2012) train the model so that log Z is
near 0 in every context; then the unnormalised score s_w(h) can stand in for log p(w | h) at
decoding time. What matters is not only the mean of log Z over real contexts but its spread: a
constant offset would cancel in a ranking, a varying one does not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from bigvocab.errors import ConfigError, DataError
from bigvocab.evaluate.perplexity import eval_batches


@dataclass(frozen=True)
class NormaliserStats:
    """log Z over ``count`` contexts: ``mean``, standard deviation ``std``, largest ``max_abs``."""

    mean: float
    std: float
    max_abs: float
    count: int


def check_has_normaliser(model) -> None:
    """A :class:`ConfigError` unless ``model``'s output layer has a single normaliser Z (checked
    before any pass over the data)."""
    if not model.has_distribution:
        raise ConfigError(f"model {type(model).__name__} has no normalised distribution, so no normaliser Z")
    if not hasattr(model.output, "log_normaliser"):
        raise ConfigError(
            f"{type(model.output).__name__} has no single normaliser Z (only the linear-softmax layers have one)"
        )


def log_normaliser_stats(model, ids: Tensor, batch_size: int = 512, *, progress: bool = False) -> NormaliserStats:
    """Exact log Z of ``model``'s output layer in every context of ``ids`` (1-D token ids).

    Needs an output layer with a single softmax over the (V, H) weights (``full`` and every
    sampling and self-normalising layer: they expose ``log_normaliser``); tree- and cluster-based
    layers normalise per node and have no such Z, which is a :class:`ConfigError`.
    """
    check_has_normaliser(model)
    output = model.output
    total = torch.zeros((), dtype=torch.float64)
    squares = torch.zeros((), dtype=torch.float64)
    largest = 0.0
    count = 0
    for batch in eval_batches(model, ids, batch_size, progress=progress, desc="log Z"):
        hidden = model.features(batch)
        target = batch["target"].reshape(-1)
        log_z, _ = output.log_normaliser(hidden.reshape(target.numel(), -1), target)
        log_z = log_z.double().cpu()
        total += log_z.sum()
        squares += log_z.square().sum()
        largest = max(largest, float(log_z.abs().max()))
        count += log_z.numel()
    if count == 0:
        raise DataError(f"no contexts to evaluate: {ids.numel()} tokens give no prediction for this model")
    mean = float(total) / count
    variance = max(0.0, float(squares) / count - mean * mean)
    return NormaliserStats(mean, math.sqrt(variance), largest, count)
