"""Training loop shared by every model and output layer.

The :class:`Trainer` knows nothing about a particular method: it asks the model for its batches
and its loss, and keeps sparse gradients sparse by giving ``model.sparse_parameters()`` an optimiser
that accepts them (plain SGD, Adagrad, or ``SparseAdam`` -- the "lazy" Adam that updates only the
rows a step touched). Runs are reproducible and resumable bit for bit (see :class:`Trainer` for
the one exception): every epoch shuffles with its own generator seeded from ``(seed, epoch)``,
and checkpoints hold the model, the optimisers, the schedule, the RNG states and the position
inside the epoch.

Learning-rate schedules follow the classic recipes: ``linear`` decays to ``min_lr`` over the run
(word2vec's ``alpha -> min_alpha``, Mikolov et al. 2013), ``exponential`` multiplies by
``lr_decay`` every epoch, and ``plateau`` multiplies by ``lr_decay`` whenever validation
perplexity fails to improve (Mikolov et al. 2010's RNNLM halves its rate when validation
entropy stops improving).
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import math
import random
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Optional, Union

import numpy as np
import torch
from torch import Tensor, nn
from tqdm.auto import tqdm

from bigvocab.checkpoint import atomic_write_text, load_checkpoint, save_checkpoint
from bigvocab.errors import CheckpointError, ConfigError, DataError, NonFiniteError
from bigvocab.evaluate.perplexity import batch_to, perplexity
from bigvocab.registry import unknown_name_message
from bigvocab.validation import check_nonnegative_int, check_positive_float, check_positive_int

OPTIMIZERS = ("sgd", "momentum", "nesterov", "adagrad", "adadelta", "rmsprop", "adam", "sparse_adam")
LR_SCHEDULES = ("none", "linear", "exponential", "plateau")
#: Files a run writes into its out_dir; a directory holding any of them holds a run.
RUN_FILES = ("last.pt", "best.pt", "metrics.jsonl", "config.json", "summary.json")
#: Options that may change when a run is resumed; the rest define the run and stay as they were.
RESUME_OVERRIDES = ("epochs", "max_steps", "progress", "log_every", "device", "patience", "checkpoint_every")


@dataclass
class TrainConfig:
    """Options of a training run; invalid values raise :class:`ConfigError` on construction."""

    epochs: int = 10  # passes over the training ids
    batch_size: int = 256  # examples per step, in the model's own layout (n-grams, segments, pairs)
    optimizer: str = "sgd"  # one of OPTIMIZERS; adam and sparse_adam both give SparseAdam to sparse params
    lr: float = 0.1  # initial learning rate
    momentum: float = 0.9  # for "momentum" and "nesterov"
    weight_decay: float = 0.0  # L2 penalty; makes sparse gradients dense (every row decays)
    lr_schedule: str = "plateau"  # one of LR_SCHEDULES
    lr_decay: float = 0.5  # factor of the exponential and plateau schedules
    min_lr: float = 1e-5  # floor of every schedule, and the end point of "linear"
    clip_norm: Optional[float] = None  # clip the global gradient norm to this value
    patience: Optional[int] = 3  # stop after this many epochs without a better valid perplexity
    seed: int = 0  # seeds the shuffling of every epoch and the global RNGs at the start
    device: str = "cpu"  # "cpu", "cuda", "cuda:1", ...
    log_every: int = 100  # steps between metrics.jsonl events
    max_steps: Optional[int] = None  # stop after this many optimiser steps in total
    progress: bool = True  # tqdm progress bar on stderr
    checkpoint_every: Optional[int] = None  # also write last.pt every this many steps

    def __post_init__(self) -> None:
        check_positive_int("epochs", self.epochs)
        check_positive_int("batch_size", self.batch_size)
        check_positive_float("lr", self.lr)
        if self.optimizer not in OPTIMIZERS:
            raise ConfigError(unknown_name_message("optimizer", str(self.optimizer), list(OPTIMIZERS)))
        if self.lr_schedule not in LR_SCHEDULES:
            raise ConfigError(unknown_name_message("lr schedule", str(self.lr_schedule), list(LR_SCHEDULES)))
        if not (isinstance(self.momentum, (int, float)) and 0 <= self.momentum < 1):
            raise ConfigError(f"momentum must lie in [0, 1), got {self.momentum!r}")
        if not (isinstance(self.weight_decay, (int, float)) and math.isfinite(self.weight_decay)
                and self.weight_decay >= 0):
            raise ConfigError(f"weight_decay must be a finite number >= 0, got {self.weight_decay!r}")
        if not (isinstance(self.lr_decay, (int, float)) and 0 < self.lr_decay <= 1):
            raise ConfigError(f"lr_decay must lie in (0, 1], got {self.lr_decay!r}")
        if not (isinstance(self.min_lr, (int, float)) and 0 <= self.min_lr <= self.lr):
            raise ConfigError(f"min_lr must lie in [0, lr={self.lr}], got {self.min_lr!r}")
        if self.clip_norm is not None:
            check_positive_float("clip_norm", self.clip_norm)
        for name in ("patience", "max_steps", "checkpoint_every"):
            if getattr(self, name) is not None:
                check_positive_int(name, getattr(self, name))
        check_nonnegative_int("seed", self.seed)
        check_positive_int("log_every", self.log_every)
        resolve_device(self.device, check_available=False)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> "TrainConfig":
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


# ---------------------------------------------------------------------------------- optimisers
def _dense_optimizer(params: list[nn.Parameter], config: TrainConfig) -> torch.optim.Optimizer:
    lr, decay, momentum = config.lr, config.weight_decay, config.momentum
    name = config.optimizer
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, weight_decay=decay)
    if name in ("momentum", "nesterov"):
        return torch.optim.SGD(params, lr=lr, momentum=momentum, nesterov=name == "nesterov", weight_decay=decay)
    if name == "adagrad":
        return torch.optim.Adagrad(params, lr=lr, weight_decay=decay)
    if name == "adadelta":
        return torch.optim.Adadelta(params, lr=lr, weight_decay=decay)
    if name == "rmsprop":
        return torch.optim.RMSprop(params, lr=lr, weight_decay=decay)
    return torch.optim.Adam(params, lr=lr, weight_decay=decay)


def _sparse_optimizer(params: list[nn.Parameter], config: TrainConfig) -> Optional[torch.optim.Optimizer]:
    """An optimiser that updates only the rows a sparse gradient touches, or None where the
    chosen method has none. Weight decay touches every row, so it has none either."""
    if config.weight_decay:
        return None
    if config.optimizer == "sgd":
        return torch.optim.SGD(params, lr=config.lr)
    if config.optimizer == "adagrad":
        return torch.optim.Adagrad(params, lr=config.lr)
    if config.optimizer in ("adam", "sparse_adam"):
        return torch.optim.SparseAdam(params, lr=config.lr)
    return None


def build_optimizers(model: nn.Module, config: TrainConfig) -> tuple[list[torch.optim.Optimizer], list[nn.Parameter]]:
    """``(optimisers, dense_params)`` for ``model`` under ``config``.

    Parameters in ``model.sparse_parameters()`` get the sparse-capable variant of the chosen method.
    Momentum, Nesterov, RMSprop and Adadelta keep a running state that changes every row at every
    step, and weight decay shrinks every row, so for them a sparse gradient cannot save work: those
    parameters join the dense optimiser, their gradients are made dense each step (the exact
    update of the method), and a warning names the cost. ``dense_params`` are the parameters whose
    sparse gradients the trainer densifies before stepping.
    """
    params = [p for p in model.parameters() if p.requires_grad]
    declared = getattr(model, "sparse_parameters", lambda: [])()
    sparse_ids = {id(p) for p in declared if p.requires_grad}
    sparse = [p for p in params if id(p) in sparse_ids]
    dense = [p for p in params if id(p) not in sparse_ids]
    optimizers = []
    sparse_optimizer = _sparse_optimizer(sparse, config) if sparse else None
    if sparse and sparse_optimizer is None:
        elements = sum(p.numel() for p in sparse)
        reason = "weight decay" if config.weight_decay else f"optimizer {config.optimizer!r}"
        warnings.warn(
            f"{reason} does not support sparse gradients: the sparse gradients of {len(sparse)} parameter(s) "
            f"({elements:,} elements) are made dense every step; use sgd, adagrad or adam without weight "
            "decay to keep steps sparse",
            stacklevel=3,
        )
        dense = dense + sparse
    if dense:
        optimizers.append(_dense_optimizer(dense, config))
    if sparse_optimizer is not None:
        optimizers.append(sparse_optimizer)
    if not optimizers:
        raise ConfigError("the model has no trainable parameters")
    return optimizers, dense


def clip_grad_norm(params: Iterable[nn.Parameter], max_norm: float) -> float:
    """Scale gradients in place so that their global L2 norm is at most ``max_norm``; returns the
    norm before clipping.

    Works with sparse gradients: an uncoalesced COO gradient may list a row several times (one
    entry per occurrence in the batch), and its norm is that of the *summed* rows, so sparse
    gradients are coalesced before their values enter the norm.
    """
    grads = []
    for param in params:
        if param.grad is None:
            continue
        if param.grad.is_sparse:
            param.grad = param.grad.coalesce()
            grads.append(param.grad._values())
        else:
            grads.append(param.grad)
    if not grads:
        return 0.0
    norm = float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g.float()) for g in grads])))
    if math.isfinite(norm) and norm > max_norm:
        scale = max_norm / (norm + 1e-6)
        for grad in grads:
            grad.mul_(scale)
    return norm


# ---------------------------------------------------------------------------------- schedule
class LRSchedule:
    """The learning rate over a run (see the module docstring for the four kinds).

    Args:
        kind: one of ``LR_SCHEDULES``.
        lr: the initial rate.
        decay: factor of ``exponential`` and ``plateau``.
        min_lr: floor of every kind and the end point of ``linear``.
        total_steps: length of the run in steps (``linear`` only).
    """

    def __init__(self, kind: str, lr: float, *, decay: float, min_lr: float, total_steps: Optional[int] = None) -> None:
        if kind == "linear" and not total_steps:
            raise ConfigError("the linear schedule needs the number of steps in the run")
        self.kind, self.base_lr, self.decay, self.min_lr = kind, lr, decay, min_lr
        self.total_steps = total_steps
        self.lr = lr

    def at_step(self, step: int) -> float:
        """The rate for global step ``step`` (0-based)."""
        if self.kind == "linear":
            fraction = min(1.0, step / self.total_steps)
            self.lr = self.base_lr - (self.base_lr - self.min_lr) * fraction
        return self.lr

    def end_of_epoch(self, improved: bool) -> float:
        """The rate for the next epoch, given whether validation perplexity improved."""
        if self.kind == "exponential" or (self.kind == "plateau" and not improved):
            self.lr = max(self.min_lr, self.lr * self.decay)
        return self.lr

    def state_dict(self) -> dict[str, Any]:
        return {"lr": self.lr}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.lr = float(state["lr"])


# ---------------------------------------------------------------------------------- RNG states
def get_rng_state() -> dict[str, Any]:
    """torch, numpy, python (and CUDA) generator states, as tensors and plain values only."""
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    state = {
        "torch": torch.get_rng_state(),
        "numpy": {"kind": kind, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                  "has_gauss": int(has_gauss), "cached_gaussian": float(cached)},
        "python": random.getstate(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    saved = state["numpy"]
    np.random.set_state((saved["kind"], saved["keys"].numpy().astype(np.uint32), saved["pos"],
                         saved["has_gauss"], saved["cached_gaussian"]))
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


# ---------------------------------------------------------------------------------- out_dir
def check_out_dir(out_dir: Union[str, Path], *, resume: bool = False, overwrite: bool = False) -> list[str]:
    """Refuse to write into a directory that holds a run, unless asked to resume or overwrite.

    Returns the run files present. Raises :class:`ConfigError` before anything is written.
    """
    out_dir = Path(out_dir)
    if resume and overwrite:
        raise ConfigError("resume and overwrite exclude each other: resume continues a run, overwrite replaces it")
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"out_dir {str(out_dir)!r} exists and is not a directory")
    present = [name for name in RUN_FILES if (out_dir / name).exists()]
    if resume and "last.pt" not in present:
        raise ConfigError(f"nothing to resume in {str(out_dir)!r}: it holds no last.pt")
    if present and not (resume or overwrite):
        raise ConfigError(
            f"out_dir {str(out_dir)!r} already holds a training run ({', '.join(present)}); "
            "continue it with resume (--resume) or replace it with overwrite (--overwrite)"
        )
    return present


def _check_ids(name: str, ids: Optional[Tensor], *, required: bool) -> Optional[Tensor]:
    """``ids`` checked to be a 1-D LongTensor; an absent or empty optional split becomes None."""
    if ids is None:
        if required:
            raise DataError(f"{name} is required")
        return None
    if not isinstance(ids, Tensor) or ids.dim() != 1 or ids.dtype != torch.long:
        raise DataError(f"{name} must be a 1-D LongTensor of token ids")
    if ids.numel() == 0:
        if required:
            raise DataError(f"{name} is empty")
        return None
    return ids


def _batch_start(batch: dict[str, Any], batch_number: int, targets_before: int) -> str:
    """Where a batch starts: its corpus position when the model reports one (``"position"``),
    else its place in the epoch (shuffled batches have no single corpus position)."""
    position = batch.get("position")
    if isinstance(position, Tensor) and position.numel():
        return f"batch starting at token {int(position.reshape(-1)[0])}"
    return f"batch {batch_number} of the epoch, after {targets_before} targets"


# ---------------------------------------------------------------------------------- trainer
class Trainer:
    """Trains ``model`` on ``train_ids`` and validates on ``valid_ids`` once per epoch.

    Args:
        model: a :class:`bigvocab.models.base.LanguageModel` (``batches``, ``loss``, ``log_prob``,
            ``sparse_parameters``).
        train_ids: (N,) token ids of the training split.
        valid_ids: (M,) token ids for validation perplexity, or None (then there is no best.pt,
            no early stopping, and the plateau schedule is refused).
        config: a :class:`TrainConfig`.
        out_dir: where ``last.pt``, ``best.pt``, ``metrics.jsonl`` and ``config.json`` go; None
            keeps nothing on disk.
        meta: stored verbatim in every checkpoint (the CLI puts the model description there).
        overwrite: replace a run already in ``out_dir`` (otherwise that is refused).

    A run resumed with :meth:`resume` follows the uninterrupted run bit for bit (same device and
    thread count) from any epoch boundary, and from any step for models whose batches carry no
    state from one step to the next. A stateful model (the LSTM's carried hidden state) restarts
    that state at a mid-epoch resume point.
    """

    def __init__(
        self,
        model: nn.Module,
        train_ids: Tensor,
        valid_ids: Optional[Tensor] = None,
        config: Optional[TrainConfig] = None,
        out_dir: Union[str, Path, None] = None,
        meta: Optional[dict[str, Any]] = None,
        *,
        overwrite: bool = False,
    ) -> None:
        self.config = config if config is not None else TrainConfig()
        self.device = resolve_device(self.config.device)
        self.train_ids = _check_ids("train_ids", train_ids, required=True)
        self.valid_ids = _check_ids("valid_ids", valid_ids, required=False)
        # Models without an output layer (the C&W ranking model) have no perplexity.
        self.can_validate = self.valid_ids is not None and getattr(model, "output", True) is not None
        if self.config.lr_schedule == "plateau" and not self.can_validate:
            raise ConfigError(
                "lr_schedule 'plateau' follows validation perplexity, which this run does not have "
                "(no valid ids, or a model without an output layer); choose none, linear or exponential"
            )
        self.out_dir = Path(out_dir) if out_dir is not None else None
        self.overwrite = overwrite
        if self.out_dir is not None:
            check_out_dir(self.out_dir, overwrite=overwrite)
        self.meta = dict(meta or {})
        self.model = model.to(self.device)
        self.optimizers, self._dense_params = build_optimizers(self.model, self.config)
        declared = getattr(self.model, "sparse_parameters", lambda: [])()
        self._undeclared = {id(p) for p in self._dense_params} - {id(p) for p in declared}
        # position and history (everything a checkpoint must restore)
        self.epoch = 0  # completed epochs
        self.step_in_epoch = 0
        self.step = 0
        self.tokens = 0
        self.epoch_loss_sum = 0.0
        self.epoch_targets = 0
        self.steps_per_epoch: Optional[int] = None
        self.best_ppl: Optional[float] = None
        self.best_epoch: Optional[int] = None
        self.bad_epochs = 0
        self.stopped_early = False
        self.history: list[dict[str, Any]] = []
        self.elapsed = 0.0
        self.schedule: Optional[LRSchedule] = None
        self._resumed_rng: Optional[dict[str, Any]] = None
        self._started = False
        self._tokens_per_s = 0.0  # training speed of the last (part of an) epoch, for its log event

    # ------------------------------------------------------------------ resume
    @classmethod
    def resume(
        cls,
        out_dir: Union[str, Path],
        model: nn.Module,
        train_ids: Tensor,
        valid_ids: Optional[Tensor] = None,
        **overrides: Any,
    ) -> "Trainer":
        """Continue the run in ``out_dir`` from its ``last.pt``, exactly where it stopped.

        ``model`` must be built as for the original run (its weights are replaced). Only the
        options in ``RESUME_OVERRIDES`` may change (e.g. ``epochs=20`` to train longer).
        """
        check_out_dir(out_dir, resume=True)
        bad = sorted(set(overrides) - set(RESUME_OVERRIDES))
        if bad:
            raise ConfigError(
                f"cannot change {', '.join(bad)} when resuming; only {', '.join(RESUME_OVERRIDES)} may change"
            )
        checkpoint = load_checkpoint(Path(out_dir) / "last.pt")
        try:
            config = TrainConfig.from_dict({**checkpoint["config"], **overrides})
        except KeyError:
            raise CheckpointError(f"{str(Path(out_dir) / 'last.pt')!r} holds no training state") from None
        trainer = cls(model, train_ids, valid_ids, config, meta=checkpoint.get("meta"))
        trainer.out_dir = Path(out_dir)
        trainer._load_state(checkpoint)
        atomic_write_text(trainer.out_dir / "config.json", json.dumps(config.to_dict(), indent=2) + "\n")
        return trainer

    def _load_state(self, checkpoint: dict[str, Any]) -> None:
        path = self.out_dir / "last.pt"
        try:
            self.model.load_state_dict(checkpoint["model"])
            states = checkpoint["optimizers"]
            if len(states) != len(self.optimizers):
                raise ValueError(f"{len(states)} optimiser states for {len(self.optimizers)} optimisers")
            for optimizer, state in zip(self.optimizers, states):
                optimizer.load_state_dict(state)
            position, trainer = checkpoint["position"], checkpoint["trainer"]
            self.epoch, self.step_in_epoch = position["epoch"], position["step_in_epoch"]
            self.step, self.tokens = position["step"], position["tokens"]
            self.epoch_loss_sum, self.epoch_targets = position["epoch_loss_sum"], position["epoch_targets"]
            self.steps_per_epoch = trainer["steps_per_epoch"]
            self.best_ppl, self.best_epoch = trainer["best_ppl"], trainer["best_epoch"]
            self.bad_epochs = trainer["bad_epochs"]
            # recomputed, so that a run resumed with a larger patience (or none) goes on
            self.stopped_early = self.config.patience is not None and self.bad_epochs >= self.config.patience
            self.history, self.elapsed = list(trainer["history"]), trainer["elapsed"]
            self._resumed_rng = checkpoint["rng"]
            self.schedule = self._make_schedule()
            self.schedule.load_state_dict(checkpoint["schedule"])
        except (KeyError, ValueError, RuntimeError) as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise CheckpointError(f"cannot resume from {str(path)!r}: {first}") from None
        self._truncate_metrics()
        self._started = True

    # ------------------------------------------------------------------ public
    def fit(self) -> dict[str, Any]:
        """Train until ``epochs``, ``max_steps`` or early stopping; returns :meth:`result`."""
        if not self._started:
            self._start()
        self._clock = time.perf_counter() - self.elapsed
        config = self.config
        while self.epoch < config.epochs and not self.stopped_early and not self._step_limit_reached():
            if self._train_epoch():
                self._finish_epoch()
        return self.result()

    def evaluate(self, ids: Tensor) -> float:
        """Exact perplexity of the current model on ``ids``."""
        return perplexity(self.model, ids, self.config.batch_size)

    def result(self) -> dict[str, Any]:
        """Where the run stands: history, best validation perplexity, paths, counts."""
        return {
            "history": list(self.history),
            "best_valid_ppl": self.best_ppl,
            "best_epoch": self.best_epoch,
            "best_path": self._path("best.pt") if self.best_epoch is not None else None,
            "last_path": self._path("last.pt"),
            "epochs_completed": self.epoch,
            "steps": self.step,
            "tokens": self.tokens,
            "stopped_early": self.stopped_early,
            "elapsed": self.elapsed,
            "lr": self.schedule.lr if self.schedule else self.config.lr,
        }

    # ------------------------------------------------------------------ run structure
    def _start(self) -> None:
        """A fresh run: seed, clear a run being overwritten, write config.json."""
        seed_everything(self.config.seed)
        if self.config.lr_schedule == "linear":
            self.steps_per_epoch = self._count_steps()
        self.schedule = self._make_schedule()
        if self.out_dir is not None:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            if self.overwrite:
                for name in RUN_FILES:
                    (self.out_dir / name).unlink(missing_ok=True)
            atomic_write_text(self.out_dir / "config.json", json.dumps(self.config.to_dict(), indent=2) + "\n")
        self._started = True

    def _make_schedule(self) -> LRSchedule:
        config = self.config
        total = None
        if config.lr_schedule == "linear":
            total = self.steps_per_epoch * config.epochs
            total = min(total, config.max_steps) if config.max_steps else total
        return LRSchedule(config.lr_schedule, config.lr, decay=config.lr_decay, min_lr=config.min_lr,
                          total_steps=max(1, total) if total is not None else None)

    def _count_steps(self) -> int:
        """Batches in one training pass (the first epoch's, replayed with its own generator)."""
        batches = self.model.batches(self.train_ids, self.config.batch_size, train=True,
                                     generator=epoch_generator(self.config.seed, 0))
        count = sum(1 for _ in batches)
        if count == 0:
            raise DataError(self._no_batches_message())
        return count

    def _no_batches_message(self) -> str:
        return (f"the training ids ({self.train_ids.numel()} tokens) give no batch for this model; "
                "the corpus is too short for its context")

    def _step_limit_reached(self) -> bool:
        return self.config.max_steps is not None and self.step >= self.config.max_steps

    def _train_epoch(self) -> bool:
        """Run (the rest of) one epoch; False when ``max_steps`` stopped it part-way."""
        config = self.config
        batches = iter(self.model.batches(self.train_ids, config.batch_size, train=True,
                                          generator=epoch_generator(config.seed, self.epoch)))
        # A resumed epoch replays its shuffle up to where the checkpoint was taken; the global
        # RNG states are restored only afterwards, in case producing batches draws from them.
        for _ in itertools.islice(batches, self.step_in_epoch):
            pass
        if self._resumed_rng is not None:
            set_rng_state(self._resumed_rng)
            self._resumed_rng = None
        self.model.train()
        bar = tqdm(total=self.steps_per_epoch, initial=self.step_in_epoch, unit="batch", leave=False,
                   desc=f"epoch {self.epoch + 1}/{config.epochs}", disable=not config.progress,
                   file=sys.stderr, dynamic_ncols=True, mininterval=0.5)
        window = {"loss": 0.0, "targets": 0, "time": time.perf_counter()}
        started, tokens_before = window["time"], self.tokens
        try:
            for batch in batches:
                loss, targets = self._train_step(batch)
                window["loss"] += loss * targets
                window["targets"] += targets
                bar.update(1)
                if self.step % config.log_every == 0:
                    self._log_window(window, bar)
                if config.checkpoint_every and self.step % config.checkpoint_every == 0:
                    self._save("last.pt")
                if self._step_limit_reached():
                    if next(batches, None) is None:  # the limit fell on the epoch's last batch
                        break
                    self._save("last.pt")
                    return False
        finally:
            bar.close()
            self._tokens_per_s = (self.tokens - tokens_before) / max(time.perf_counter() - started, 1e-9)
        if self.step_in_epoch == 0:
            raise DataError(self._no_batches_message())
        return True

    def _train_step(self, batch: dict[str, Any]) -> tuple[float, int]:
        batch = batch_to(batch, self.device)
        targets = int(batch["target"].numel())
        lr = self.schedule.at_step(self.step)
        for optimizer in self.optimizers:
            for group in optimizer.param_groups:
                group["lr"] = lr
            optimizer.zero_grad(set_to_none=True)
        loss = self.model.loss(batch)
        value = float(loss.detach())
        if not math.isfinite(value):
            raise self._non_finite("loss", batch)
        loss.backward()
        self._densify()
        if self.config.clip_norm is not None:
            norm = clip_grad_norm(self.model.parameters(), self.config.clip_norm)
            if not math.isfinite(norm):
                raise self._non_finite("gradient norm", batch)
        for optimizer in self.optimizers:
            optimizer.step()
        self.step += 1
        self.step_in_epoch += 1
        self.tokens += targets
        self.epoch_loss_sum += value * targets
        self.epoch_targets += targets
        return value, targets

    def _densify(self) -> None:
        """Dense optimisers get dense gradients (see :func:`build_optimizers`). A sparse gradient
        on a parameter the model did not declare in ``sparse_parameters()`` is a model bug that costs
        speed, not correctness: it is densified and reported once."""
        for param in self._dense_params:
            if param.grad is not None and param.grad.is_sparse:
                if id(param) in self._undeclared:
                    self._undeclared.discard(id(param))
                    name = next(n for n, p in self.model.named_parameters() if p is param)
                    warnings.warn(f"parameter {name!r} received a sparse gradient but is not in "
                                  "model.sparse_parameters(); it is trained with dense updates", stacklevel=2)
                param.grad = param.grad.to_dense()

    def _non_finite(self, what: str, batch: dict[str, Any]) -> NonFiniteError:
        last = self._path("last.pt")
        where = _batch_start(batch, self.step_in_epoch + 1, self.epoch_targets)
        return NonFiniteError(
            f"non-finite {what} at epoch {self.epoch + 1} step {self.step + 1} ({where}); "
            f"last good checkpoint: {last if last is not None else 'none written yet'}"
        )

    def _finish_epoch(self) -> None:
        config = self.config
        epoch_loss = self.epoch_loss_sum / max(1, self.epoch_targets)
        self.epoch += 1
        self.steps_per_epoch = self.steps_per_epoch or self.step_in_epoch
        self.step_in_epoch, self.epoch_loss_sum, self.epoch_targets = 0, 0.0, 0
        valid_ppl = self.evaluate(self.valid_ids) if self.can_validate else None
        improved = valid_ppl is not None and (self.best_ppl is None or valid_ppl < self.best_ppl)
        if improved:
            self.best_ppl, self.best_epoch, self.bad_epochs = valid_ppl, self.epoch, 0
        elif valid_ppl is not None:
            self.bad_epochs += 1
        lr = self.schedule.lr
        next_lr = self.schedule.end_of_epoch(improved)
        if config.patience is not None and self.bad_epochs >= config.patience:
            self.stopped_early = True
        self.elapsed = time.perf_counter() - self._clock
        record = {"epoch": self.epoch, "train_loss": epoch_loss, "valid_ppl": valid_ppl, "lr": lr,
                  "next_lr": next_lr, "steps": self.step, "tokens": self.tokens, "elapsed": self.elapsed}
        self.history.append(record)
        self._log({"event": "epoch", "epoch": self.epoch, "step": self.step, "tokens": self.tokens,
                   "loss": epoch_loss, "lr": lr, "next_lr": next_lr, "tokens_per_s": self._tokens_per_s,
                   "valid_ppl": valid_ppl,
                   "best_valid_ppl": self.best_ppl, "elapsed": self.elapsed})
        if config.progress:
            shown = f"{valid_ppl:.2f}" if valid_ppl is not None else "n/a"
            tqdm.write(f"epoch {self.epoch}: train loss {epoch_loss:.4f}, valid ppl {shown}, lr {lr:.3g}",
                       file=sys.stderr)
        self._save("last.pt")
        if improved:
            self._save("best.pt")

    # ------------------------------------------------------------------ logging and files
    def _log_window(self, window: dict[str, float], bar: tqdm) -> None:
        now = time.perf_counter()
        seconds = max(now - window["time"], 1e-9)
        loss = window["loss"] / max(1, window["targets"])
        tokens_per_s = window["targets"] / seconds
        self.elapsed = now - self._clock
        lr = self.schedule.lr
        self._log({"event": "step", "epoch": self.epoch + 1, "step": self.step, "tokens": self.tokens,
                   "loss": loss, "lr": lr, "tokens_per_s": tokens_per_s, "elapsed": self.elapsed})
        bar.set_postfix_str(f"loss {loss:.4f} | {tokens_per_s:,.0f} tok/s | lr {lr:.3g}", refresh=False)
        window.update(loss=0.0, targets=0, time=now)

    def _log(self, event: dict[str, Any]) -> None:
        if self.out_dir is None:
            return
        with open(self.out_dir / "metrics.jsonl", "a", encoding="utf-8") as handle:
            handle.write(json.dumps(event) + "\n")

    def _truncate_metrics(self) -> None:
        """Drop events logged after the checkpoint being resumed; the resumed run logs them again."""
        path = self.out_dir / "metrics.jsonl"
        if not path.exists():
            return
        kept = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                if json.loads(line).get("step", 0) <= self.step:
                    kept.append(line)
            except json.JSONDecodeError:
                continue
        atomic_write_text(path, "".join(line + "\n" for line in kept))

    def _path(self, name: str) -> Optional[Path]:
        if self.out_dir is None:
            return None
        path = self.out_dir / name
        return path if path.exists() else None

    def _save(self, name: str) -> None:
        if self.out_dir is None:
            return
        self.elapsed = time.perf_counter() - self._clock
        save_checkpoint(self.out_dir / name, {
            "model": self.model.state_dict(),
            "optimizers": [optimizer.state_dict() for optimizer in self.optimizers],
            "schedule": self.schedule.state_dict(),
            "rng": get_rng_state(),
            "position": {"epoch": self.epoch, "step_in_epoch": self.step_in_epoch, "step": self.step,
                         "tokens": self.tokens, "epoch_loss_sum": self.epoch_loss_sum,
                         "epoch_targets": self.epoch_targets},
            "trainer": {"steps_per_epoch": self.steps_per_epoch, "best_ppl": self.best_ppl,
                        "best_epoch": self.best_epoch, "bad_epochs": self.bad_epochs,
                        "stopped_early": self.stopped_early, "history": self.history, "elapsed": self.elapsed},
            "config": self.config.to_dict(),
            "meta": self.meta,
        })
