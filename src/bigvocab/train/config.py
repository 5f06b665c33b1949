"""The options of a training run (:class:`TrainConfig`) and the device rules."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import torch

from bigvocab.errors import ConfigError
from bigvocab.registry import CURRICULA, OPTIMIZERS, SCHEDULES, unknown_name_message
from bigvocab.validation import check_nonnegative_int, check_positive_float, check_positive_int

#: How data-parallel ranks combine their work: average gradients every step (one process on the
#: global batch), or models every ``average_every`` steps (:mod:`bigvocab.distributed.averaging`).
AVERAGING = ("gradients", "local-sgd", "easgd")

#: Options that may change when a run is resumed; the rest define the run and stay as they were.
RESUME_OVERRIDES = ("epochs", "max_steps", "progress", "log_every", "device", "patience", "checkpoint_every")


@dataclass
class TrainConfig:
    """Options of a training run; invalid values raise :class:`ConfigError` on construction."""

    epochs: int = 10  # passes over the training ids
    batch_size: int = 256  # examples per step, in the model's own layout (n-grams, segments, pairs)
    optimizer: str = "sgd"  # a registered optimiser; adam and sparse_adam both give SparseAdam to sparse params
    lr: float = 0.1  # initial learning rate
    momentum: float = 0.9  # for "momentum" and "nesterov"
    amsgrad: bool = False  # adam, adamw: AMSGrad's maximum of the second moments (Reddi et al. 2018)
    weight_decay: float = 0.0  # L2 penalty; makes sparse gradients dense (every row decays)
    lr_schedule: str = "plateau"  # a registered schedule
    lr_decay: float = 0.5  # factor of the exponential and plateau schedules
    min_lr: float = 1e-5  # floor of every schedule, and the end point of "linear"
    clip_norm: float | None = None  # clip the global gradient norm to this value (fused rows: each parameter's own)
    gradient_noise: float = 0.0  # η of annealed Gaussian gradient noise, variance η / (1 + t)^0.55 (0: none)
    curriculum: str | None = None  # a curriculum measure (frequency, length): easy units first, growing
    curriculum_epochs: int = 2  # epochs over which the curriculum grows to the whole corpus
    averaging: str = "gradients"  # under torchrun (data parallel): gradients, local-sgd or easgd
    average_every: int = 8  # local-sgd, easgd: steps between model averagings
    elastic_alpha: float | None = None  # easgd: the moving rate α (default 0.9 / processes)
    patience: int | None = 3  # stop after this many epochs without a better valid perplexity
    seed: int = 0  # seeds the shuffling of every epoch and the global RNGs at the start
    device: str = "cpu"  # "cpu", "cuda", "cuda:1", ...
    log_every: int = 100  # steps between metrics.jsonl events
    max_steps: int | None = None  # stop after this many optimiser steps in total
    progress: bool = True  # tqdm progress bar on stderr
    checkpoint_every: int | None = None  # also write last.pt every this many steps
    fused_rows: bool = True  # update the output layer's sparse rows in the backward where it applies

    def __post_init__(self) -> None:
        check_positive_int("epochs", self.epochs)
        check_positive_int("batch_size", self.batch_size)
        check_positive_float("lr", self.lr)
        chosen = [(OPTIMIZERS, self.optimizer), (SCHEDULES, self.lr_schedule)]
        if self.curriculum is not None:
            chosen.append((CURRICULA, self.curriculum))
        for registry, value in chosen:
            if value not in registry:
                raise ConfigError(unknown_name_message(registry.kind, str(value), registry.names()))
        if not (isinstance(self.momentum, (int, float)) and 0 <= self.momentum < 1):
            raise ConfigError(f"momentum must lie in [0, 1), got {self.momentum!r}")
        if not (
            isinstance(self.weight_decay, (int, float)) and math.isfinite(self.weight_decay) and self.weight_decay >= 0
        ):
            raise ConfigError(f"weight_decay must be a finite number >= 0, got {self.weight_decay!r}")
        if not (isinstance(self.lr_decay, (int, float)) and 0 < self.lr_decay <= 1):
            raise ConfigError(f"lr_decay must lie in (0, 1], got {self.lr_decay!r}")
        if not (isinstance(self.min_lr, (int, float)) and 0 <= self.min_lr <= self.lr):
            raise ConfigError(f"min_lr must lie in [0, lr={self.lr}], got {self.min_lr!r}")
        if self.clip_norm is not None:
            check_positive_float("clip_norm", self.clip_norm)
        if not (
            isinstance(self.gradient_noise, (int, float))
            and math.isfinite(self.gradient_noise)
            and self.gradient_noise >= 0
        ):
            raise ConfigError(f"gradient_noise must be a finite number >= 0, got {self.gradient_noise!r}")
        for name in ("amsgrad", "fused_rows"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be True or False, got {getattr(self, name)!r}")
        for name in ("patience", "max_steps", "checkpoint_every"):
            if getattr(self, name) is not None:
                check_positive_int(name, getattr(self, name))
        check_nonnegative_int("seed", self.seed)
        check_positive_int("log_every", self.log_every)
        check_positive_int("curriculum_epochs", self.curriculum_epochs)
        if self.averaging not in AVERAGING:
            raise ConfigError(unknown_name_message("model averaging", str(self.averaging), list(AVERAGING)))
        check_positive_int("average_every", self.average_every)
        if self.elastic_alpha is not None:
            check_positive_float("elastic_alpha", self.elastic_alpha)
        resolve_device(self.device, check_available=False)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> TrainConfig:
        """Rebuild a config (e.g. from a checkpoint); unknown keys raise :class:`ConfigError`."""
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(f"unknown training option(s) {', '.join(unknown)} (valid: {', '.join(sorted(known))})")
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def resolve_device(name: str, *, check_available: bool = True) -> torch.device:
    """``torch.device(name)``, or a :class:`ConfigError` for a malformed name or a missing GPU."""
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError):
        raise ConfigError(f"device {name!r} is not a torch device (e.g. 'cpu', 'cuda', 'cuda:0')") from None
    if check_available and device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"device {name!r} was asked for but CUDA is not available")
    return device
