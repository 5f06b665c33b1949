"""The training loop shared by every model and output layer.

The :class:`Trainer` knows nothing about a particular method: it asks the model for its batches
and its loss, and keeps sparse gradients sparse by giving ``model.sparse_parameters()`` an optimiser
that accepts them (see :mod:`bigvocab.train.optimizers`). Runs are reproducible and resumable bit
for bit (see :class:`Trainer` for the one exception): every epoch shuffles with its own generator
seeded from ``(seed, epoch)``, and checkpoints hold the model, the optimisers, the schedule, the
RNG states and the position inside the epoch.

A run with an ``out_dir`` holds that directory's lock while it trains (:mod:`bigvocab.train.rundir`)
and saves on SIGINT and SIGTERM: the step under way finishes, ``last.pt`` is written, and
:class:`~bigvocab.errors.TrainingInterrupted` says where; :meth:`Trainer.resume` then goes on with
the losses the uninterrupted run would have had.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import math
import signal
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast, overload

import torch
from torch import Tensor
from tqdm.auto import tqdm

from bigvocab.checkpoint import load_checkpoint, save_checkpoint
from bigvocab.data.xmc import LabelledRows
from bigvocab.distributed.training import DistributedTraining
from bigvocab.errors import CheckpointError, ConfigError, DataError, NonFiniteError, TrainingInterrupted
from bigvocab.evaluate.perplexity import batch_to, perplexity
from bigvocab.files import PathLike, append_json_line, atomic_write_text, remove_stale_temporaries, strict_json
from bigvocab.registry import SCHEDULES
from bigvocab.train.config import RESUME_OVERRIDES, TrainConfig, resolve_device
from bigvocab.train.curriculum import Curriculum
from bigvocab.train.gradient_noise import add_gradient_noise
from bigvocab.train.optimizers import build_optimizers, clip_grad_norm
from bigvocab.train.rundir import RUN_FILES, RunLock, check_out_dir, clear_run, holds_run
from bigvocab.train.schedules import LRSchedule, make_schedule
from bigvocab.train.state import epoch_generator, get_rng_state, seed_everything, set_rng_state

if TYPE_CHECKING:
    from bigvocab.models.base import WordModel

#: The signals after which a run saves and stops: Ctrl-C, and what schedulers and ``docker stop`` send.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: A logged loss above DIVERGENCE_FACTOR x the first one + DIVERGENCE_MARGIN (nats) is divergence.
DIVERGENCE_FACTOR = 2.0
DIVERGENCE_MARGIN = 1.0


class DivergenceWarning(UserWarning):
    """The training loss grew far past where it started, or validation perplexity became infinite."""


#: What a model trains on: a stream of token ids, or labelled rows (the ``xmc`` model's examples).
TrainingData = Tensor | LabelledRows


@overload
def _check_ids(name: str, ids: TrainingData | None, *, required: Literal[True]) -> TrainingData: ...
@overload
def _check_ids(name: str, ids: TrainingData | None, *, required: Literal[False]) -> TrainingData | None: ...
def _check_ids(name: str, ids: TrainingData | None, *, required: bool) -> TrainingData | None:
    """``ids`` checked to be a 1-D LongTensor or :class:`LabelledRows`; an absent or empty
    optional split becomes None."""
    if ids is None:
        if required:
            raise DataError(f"{name} is required")
        return None
    if not isinstance(ids, LabelledRows) and (not isinstance(ids, Tensor) or ids.dim() != 1 or ids.dtype != torch.long):
        raise DataError(f"{name} must be a 1-D LongTensor of token ids or LabelledRows")
    if len(ids) == 0:
        if required:
            raise DataError(f"{name} is empty")
        return None
    return ids


logger = logging.getLogger("bigvocab.train")


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
        model: a :class:`bigvocab.models.base.WordModel` (``batches``, ``loss``, ``sparse_parameters``,
            ``has_distribution``; ``log_prob`` when it has a distribution).
        train_ids: (N,) token ids of the training split, or the :class:`LabelledRows` of a model
            that reads them (``xmc``).
        valid_ids: (M,) token ids (or labelled rows) for validation perplexity, or None (then there is no best.pt,
            no early stopping, and the plateau schedule is refused).
        config: a :class:`TrainConfig`.
        out_dir: where ``last.pt``, ``best.pt``, ``metrics.jsonl`` and ``config.json`` go; None
            keeps nothing on disk.
        meta: stored verbatim in every checkpoint (the CLI puts the model description there).
        overwrite: replace a run already in ``out_dir`` (otherwise that is refused).
        distributed: this process's part in a data- or vocabulary-parallel run
            (:class:`bigvocab.distributed.training.DistributedTraining`), or None.

    A run resumed with :meth:`resume` follows the uninterrupted run bit for bit (same device and
    thread count) from any epoch boundary, and from any step for models whose batches carry no
    state from one step to the next. A stateful model (the LSTM's carried hidden state) restarts
    that state at a mid-epoch resume point.
    """

    def __init__(
        self,
        model: WordModel,
        train_ids: TrainingData,
        valid_ids: TrainingData | None = None,
        config: TrainConfig | None = None,
        out_dir: PathLike | None = None,
        meta: dict[str, Any] | None = None,
        *,
        overwrite: bool = False,
        distributed: DistributedTraining | None = None,
        sentence_end: int | None = None,
    ) -> None:
        self.config = config if config is not None else TrainConfig()
        self.distributed = distributed
        self._writes = distributed is None or distributed.writes  # rank 0 alone writes files and progress
        self.device = resolve_device(self.config.device)
        self.train_ids = _check_ids("train_ids", train_ids, required=True)
        self.valid_ids = _check_ids("valid_ids", valid_ids, required=False)
        if self.config.curriculum is not None and isinstance(self.train_ids, LabelledRows):
            raise ConfigError("curriculum orders a stream of words; labelled rows have none")
        self.curriculum = (
            Curriculum(
                self.config.curriculum, self.config.curriculum_epochs, cast(Tensor, self.train_ids), sentence_end
            )
            if self.config.curriculum is not None
            else None
        )
        # Models without a normalised distribution (the C&W ranking model) have no perplexity.
        self.can_validate = self.valid_ids is not None and model.has_distribution
        if SCHEDULES.get(self.config.lr_schedule).needs_validation and not self.can_validate:
            others = ", ".join(name for name in SCHEDULES.names() if not SCHEDULES.get(name).needs_validation)
            raise ConfigError(
                f"lr_schedule {self.config.lr_schedule!r} follows validation perplexity, which this run does not "
                f"have (no valid ids, or a model without a normalised distribution); choose {others}"
            )
        self.out_dir = Path(out_dir) if out_dir is not None else None
        self.overwrite = overwrite
        if self.out_dir is not None and self._writes:
            check_out_dir(self.out_dir, overwrite=overwrite)
        self.meta = dict(meta or {})
        self.model = model.to(self.device)
        if distributed is not None:
            if distributed.vocab_parallel and self.config.clip_norm is not None:
                raise ConfigError(
                    "clip_norm is not supported with a vocabulary-parallel output layer (its gradient "
                    "norm spans the ranks); train without clip_norm"
                )
            distributed.prepare(self.model)
            if self.config.averaging != "gradients":
                distributed.average_models(
                    self.config.averaging, self.config.average_every, self.model, self.config.elastic_alpha
                )
        elif self.config.averaging != "gradients":
            raise ConfigError(
                f"averaging={self.config.averaging!r} averages the models of several processes: run under torchrun "
                "(e.g. torchrun --standalone --nproc_per_node 2 -m bigvocab.cli train ...)"
            )
        # Fused rows update in the backward: not under gradient noise (added after the backward) or
        # data parallelism (the gradients are averaged across processes first).
        fuse = distributed is None and not self.config.gradient_noise
        self.optimizers, self._dense_params = build_optimizers(self.model, self.config, fuse=fuse)
        declared = self.model.sparse_parameters()
        self._undeclared = {id(p) for p in self._dense_params} - {id(p) for p in declared}
        # position and history (everything a checkpoint must restore)
        self.epoch = 0  # completed epochs
        self.step_in_epoch = 0
        self.step = 0
        self.tokens = 0
        self.epoch_loss_sum = 0.0
        self.epoch_targets = 0
        # the loss summed over the steps since the last logged step event, and their targets: a
        # resumed run logs the same averages as an uninterrupted one
        self.window_loss_sum = 0.0
        self.window_targets = 0
        self.steps_per_epoch: int | None = None
        self.best_ppl: float | None = None
        self.best_epoch: int | None = None
        self.bad_epochs = 0
        self.stopped_early = False
        self.history: list[dict[str, Any]] = []
        self.elapsed = 0.0
        self.schedule: LRSchedule | None = None
        self._resumed_rng: dict[str, Any] | None = None
        self._started = False
        self._tokens_per_s = 0.0  # training speed of the last (part of an) epoch, for its log event
        self._stop_signal: int | None = None  # SIGINT or SIGTERM received during fit()
        self._resumed_file: tuple[int, int] | None = None  # (mtime_ns, size) of the last.pt resumed
        self._first_loss: float | None = None  # the first logged loss, for the divergence warning
        self._warned_divergence = False

    # ------------------------------------------------------------------ resume
    @classmethod
    def resume(
        cls,
        out_dir: PathLike,
        model: WordModel,
        train_ids: TrainingData,
        valid_ids: TrainingData | None = None,
        *,
        checkpoint: dict[str, Any] | None = None,
        distributed: DistributedTraining | None = None,
        sentence_end: int | None = None,
        **overrides: Any,
    ) -> Trainer:
        """Continue the run in ``out_dir`` from its ``last.pt``, exactly where it stopped.

        ``model`` must be built as for the original run (its weights are replaced). Only the
        options in ``RESUME_OVERRIDES`` may change (e.g. ``epochs=20`` to train longer).
        ``checkpoint`` is ``last.pt`` when the caller has already read it.
        """
        check_out_dir(out_dir, resume=True)
        bad = sorted(set(overrides) - set(RESUME_OVERRIDES))
        if bad:
            raise ConfigError(
                f"cannot change {', '.join(bad)} when resuming; only {', '.join(RESUME_OVERRIDES)} may change"
            )
        if checkpoint is None:
            checkpoint = load_checkpoint(Path(out_dir) / "last.pt")
        try:
            # a run from before fused rows existed stepped its rows with torch.optim, and goes on so
            config = TrainConfig.from_dict({"fused_rows": False, **checkpoint["config"], **overrides})
        except KeyError:
            raise CheckpointError(f"{str(Path(out_dir) / 'last.pt')!r} holds no training state") from None
        trainer = cls(
            model,
            train_ids,
            valid_ids,
            config,
            meta=checkpoint.get("meta"),
            distributed=distributed,
            sentence_end=sentence_end,
        )
        trainer.out_dir = Path(out_dir)
        trainer._load_state(checkpoint)
        stat = (Path(out_dir) / "last.pt").stat()
        trainer._resumed_file = (stat.st_mtime_ns, stat.st_size)
        return trainer

    def _load_state(self, checkpoint: dict[str, Any]) -> None:
        path = self._run_dir / "last.pt"
        try:
            states = checkpoint["optimizers"]
            if len(states) != len(self.optimizers):
                raise ValueError(f"{len(states)} optimiser states for {len(self.optimizers)} optimisers")
            self.load_model_state(checkpoint["model"])
            for optimizer, state in zip(self.optimizers, states):
                if self.distributed is None:
                    optimizer.load_state_dict(state)
                else:
                    self.distributed.load_optimizer_state(optimizer, self.model, state)
            position, trainer = checkpoint["position"], checkpoint["trainer"]
            self.epoch, self.step_in_epoch = position["epoch"], position["step_in_epoch"]
            self.step, self.tokens = position["step"], position["tokens"]
            self.epoch_loss_sum, self.epoch_targets = position["epoch_loss_sum"], position["epoch_targets"]
            self.window_loss_sum = position.get("window_loss_sum", 0.0)
            self.window_targets = position.get("window_targets", 0)
            self._first_loss = trainer.get("first_logged_loss")
            self.steps_per_epoch = trainer["steps_per_epoch"]
            self.best_ppl, self.best_epoch = trainer["best_ppl"], trainer["best_epoch"]
            self.bad_epochs = trainer["bad_epochs"]
            # recomputed, so that a run resumed with a larger patience (or none) goes on
            self.stopped_early = self.config.patience is not None and self.bad_epochs >= self.config.patience
            self.history, self.elapsed = list(trainer["history"]), trainer["elapsed"]
            if self.distributed is not None:
                self.distributed.load_replica(self.model, self.optimizers, checkpoint.get("replicas"))
            self._resumed_rng = checkpoint["rng"]
            self.schedule = self._make_schedule()
            self.schedule.load_state_dict(checkpoint["schedule"])
        except (KeyError, ValueError, RuntimeError) as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise CheckpointError(f"cannot resume from {str(path)!r}: {first}") from None
        if self._writes:
            self._truncate_metrics()
        self._started = True

    # ------------------------------------------------------------------ public
    def fit(self) -> dict[str, Any]:
        """Train until ``epochs``, ``max_steps`` or early stopping; returns :meth:`result`."""
        lock = RunLock(self.out_dir) if self.out_dir is not None and self._writes else contextlib.nullcontext()
        with lock, self._saving_on_signals():
            if not self._started:
                self._start()
            elif self._resumed_file is not None and self._writes:
                self._claim_resumed_run()
            self._clock = time.perf_counter() - self.elapsed
            config = self.config
            while self.epoch < config.epochs and not self.stopped_early and not self._step_limit_reached():
                if self._train_epoch():
                    self._finish_epoch()
                self._stop_if_signalled(self._agreed_signal())
        return self.result()

    def load_model_state(self, state: dict[str, Any]) -> None:
        """Load a checkpoint's (one-process) model state; a distributed rank takes its part."""
        if self.distributed is None:
            self.model.load_state_dict(state)
        else:
            self.distributed.load_model_state(self.model, state)

    def evaluate(self, ids: TrainingData) -> float:
        """Exact perplexity of the current model on ``ids`` (under model averaging, of the ranks'
        consensus, the same on every rank; every rank calls it then)."""
        if self.distributed is None or self.distributed.averaging is None:
            return perplexity(self.model, ids, self.config.batch_size)
        with self.distributed.consensus_weights(self.model):
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

    # ------------------------------------------------------------------ signals
    @contextlib.contextmanager
    def _saving_on_signals(self) -> Iterator[None]:
        """While training into an ``out_dir`` from the main thread, SIGINT and SIGTERM only ask the
        loop to stop after the step under way; a second signal interrupts at once (the atomic
        save in progress, if any, is abandoned and the previous checkpoint stays)."""
        if self.out_dir is None or threading.current_thread() is not threading.main_thread():
            yield
            return

        def ask_to_stop(number: int, frame: object) -> None:
            if self._stop_signal is not None:
                raise KeyboardInterrupt
            self._stop_signal = number

        # a signal the process was started to ignore (nohup, a background job) stays ignored
        previous = {
            number: signal.signal(number, ask_to_stop)
            for number in STOP_SIGNALS
            if signal.getsignal(number) is not signal.SIG_IGN
        }
        try:
            yield
        except KeyboardInterrupt as error:
            raise type(error)(
                f"stopped at once (a second signal does not wait for the save); "
                f"{str(self.out_dir / 'last.pt')!r} holds the last checkpoint finished before it, "
                "if any"
            ) from None
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)

    def _agreed_signal(self) -> int | None:
        """The signal after which the run stops now, or None. Under torchrun every rank must stop at
        the same step (saving is a collective, and a rank left stepping would wait at the next one
        for ever), and a signal may reach one rank only (``kill PID``) or the ranks a step apart
        (Ctrl-C, torchrun forwarding SIGTERM): so the ranks agree, with one small all-reduce per
        step, and any rank's signal stops them all."""
        number = self._stop_signal
        if self.distributed is not None and self.out_dir is not None:
            number = self.distributed.max(number or 0, self.device) or None
        return number

    def _stop_if_signalled(self, number: int | None) -> None:
        """After the signal ``number`` (from :meth:`_agreed_signal`): the run is saved (the caller
        wrote last.pt); say so and where."""
        if number is None:
            return
        self._stop_signal = None
        path = self._run_dir / "last.pt"
        where = self.position()
        raise TrainingInterrupted(
            f"{signal.Signals(number).name} received: stopped after step {self.step} ({where}) and saved "
            f"{str(path)!r}; Trainer.resume(out_dir, ...) continues the run",
            signal_number=number,
            checkpoint=path,
            step=self.step,
            position=where,
        )

    #: Whether a step is a whole pass over the data (word2vec's engine) rather than a minibatch.
    steps_are_passes = False

    def position(self) -> str:
        """Where the run stands, in the words of its epochs: "step 45 of 270 in epoch 2" (the
        epoch's length where it is known), or "the end of epoch 3"."""
        if not self.step_in_epoch:
            return f"the end of epoch {self.epoch}"
        total = (self.steps_per_epoch if self._whole_epoch(self.epoch) else None) or self._num_batches()
        of = f" of {total:,}" if total else ""
        return f"step {self.step_in_epoch:,}{of} in epoch {self.epoch + 1}"

    # ------------------------------------------------------------------ run structure
    def _start(self) -> None:
        """A fresh run: seed, clear a run being overwritten, write config.json."""
        seed_everything(self.config.seed)
        if self.config.lr_schedule == "linear":
            self.steps_per_epoch = self._count_steps()
        self.schedule = self._make_schedule()
        if self.out_dir is not None and self._writes:
            # checked again under the lock: another run may have finished here since __init__
            present = check_out_dir(self.out_dir, overwrite=self.overwrite)
            if self.overwrite or not holds_run(present):  # replacing a run, or the leftovers of a failed start
                clear_run(self.out_dir)
            self._write_config()
        self._started = True

    def _claim_resumed_run(self) -> None:
        """Under the lock: the last.pt this trainer resumed from is still the directory's newest,
        and stale temporaries of a killed save go."""
        try:
            stat = (self._run_dir / "last.pt").stat()
            current = (stat.st_mtime_ns, stat.st_size)
        except FileNotFoundError:
            current = None
        if current != self._resumed_file:
            raise CheckpointError(
                f"{str(self._run_dir / 'last.pt')!r} changed after it was read (another run wrote it); resume again"
            )
        self._resumed_file = None
        remove_stale_temporaries(self._run_dir, RUN_FILES)
        self._write_config()

    def _write_config(self) -> None:
        atomic_write_text(self._run_dir / "config.json", strict_json(self.config.to_dict(), indent=2) + "\n")

    @property
    def _lr_schedule(self) -> LRSchedule:
        """The schedule of a started or resumed run."""
        if self.schedule is None:
            raise RuntimeError("the run has no learning-rate schedule before fit() starts it")
        return self.schedule

    def _make_schedule(self) -> LRSchedule:
        config = self.config
        total = None
        if config.lr_schedule == "linear" and self.steps_per_epoch is not None:
            total = self.steps_per_epoch * config.epochs
            if self.curriculum is not None:  # its first epochs are shorter
                grown = min(config.epochs, self.curriculum.epochs)
                total += sum(self._count_steps(epoch) - self.steps_per_epoch for epoch in range(grown))
            total = min(total, config.max_steps) if config.max_steps else total
        return make_schedule(
            config.lr_schedule,
            config.lr,
            decay=config.lr_decay,
            min_lr=config.min_lr,
            total_steps=max(1, total) if total is not None else None,
        )

    def _count_steps(self, epoch: int | None = None) -> int:
        """Batches in one training pass over all the data (the first epoch's, replayed with its own
        generator), or in epoch ``epoch`` as the curriculum cuts it."""
        batches = self._batches(0, ids=self.train_ids) if epoch is None else self._batches(epoch)
        count = sum(1 for _ in batches)
        if count == 0:
            raise DataError(self._no_batches_message())
        return count

    def _no_batches_message(self) -> str:
        return (
            f"the training data ({len(self.train_ids)} tokens or rows) give no batch for this model; "
            "the corpus is too short for its context"
        )

    def _step_limit_reached(self) -> bool:
        return self.config.max_steps is not None and self.step >= self.config.max_steps

    def _train_epoch(self) -> bool:
        """Run (the rest of) one epoch; False when ``max_steps`` stopped it part-way."""
        config = self.config
        batches = self._batches(self.epoch)
        # A resumed epoch replays its shuffle up to where the checkpoint was taken; the global
        # RNG states are restored only afterwards, in case producing batches draws from them.
        for _ in itertools.islice(batches, self.step_in_epoch):
            pass
        if self._resumed_rng is not None:
            set_rng_state(self._resumed_rng)
            self._resumed_rng = None
        self.model.train()
        bar = tqdm(
            total=(self.steps_per_epoch if self._whole_epoch(self.epoch) else None) or self._num_batches(),
            initial=self.step_in_epoch,
            unit="batch",
            leave=False,
            desc=f"epoch {self.epoch + 1}/{config.epochs}",
            disable=not (config.progress and self._writes),
            file=sys.stderr,
            dynamic_ncols=True,
            mininterval=0.5,
        )
        window_started = started = time.perf_counter()
        window_tokens = tokens_before = self.tokens
        try:
            for batch in batches:
                loss, targets = self._train_step(batch)
                self.window_loss_sum += loss * targets
                self.window_targets += targets
                bar.update(1)
                if self.step % config.log_every == 0:
                    self._log_window(self.tokens - window_tokens, time.perf_counter() - window_started, bar)
                    window_started, window_tokens = time.perf_counter(), self.tokens
                if config.checkpoint_every and self.step % config.checkpoint_every == 0:
                    self._save("last.pt")
                stop = self._agreed_signal()
                if stop is not None:
                    self._save("last.pt")
                    self._stop_if_signalled(stop)
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

    def _epoch_ids(self, epoch: int) -> TrainingData:
        """The training ids of ``epoch``: all of them, or the curriculum's part."""
        return self.curriculum.epoch_ids(epoch) if self.curriculum is not None else self.train_ids

    def _batches(self, epoch: int, ids: TrainingData | None = None) -> Iterator[dict[str, Any]]:
        """The batches of ``epoch`` this process steps on (every P-th when data parallel)."""
        ids = self._epoch_ids(epoch) if ids is None else ids
        batches = iter(
            self.model.batches(
                ids, self.config.batch_size, train=True, generator=epoch_generator(self.config.seed, epoch)
            )
        )
        return self.distributed.batches(batches) if self.distributed is not None else batches

    def _whole_epoch(self, epoch: int) -> bool:
        """Whether epoch ``epoch`` trains on all the data (no curriculum cuts it)."""
        return self.curriculum is None or epoch >= self.curriculum.epochs

    def _num_batches(self) -> int | None:
        """Steps in this epoch of this process when the model can count its batches without drawing them."""
        total = self.model.num_batches(self._epoch_ids(self.epoch), self.config.batch_size)
        return self.distributed.num_batches(total) if self.distributed is not None and total is not None else total

    def _train_step(self, batch: dict[str, Any]) -> tuple[float, int]:
        batch = batch_to(batch, self.device)
        targets = int((batch["target"] >= 0).sum())  # -1 pads multi-label rows
        lr = self._lr_schedule.at_step(self.step)
        for optimizer in self.optimizers:
            for group in optimizer.param_groups:
                group["lr"] = lr
            optimizer.zero_grad(set_to_none=True)
        loss = self.model.loss(batch)
        value = float(loss.detach())
        if self.distributed is not None:  # every rank sees the same value, so all stop together
            value = self.distributed.mean(value, self.device)
            targets = self.distributed.targets_per_step(targets)
        if not math.isfinite(value):
            raise self._non_finite("loss", batch)
        loss.backward()
        if self.distributed is not None:
            self.distributed.reduce_gradients(self.model)
        self._densify()
        if self.config.clip_norm is not None:
            norm = clip_grad_norm(self.model.parameters(), self.config.clip_norm)
            if not math.isfinite(norm):
                raise self._non_finite("gradient norm", batch)
        if self.config.gradient_noise:
            add_gradient_noise(self.model.parameters(), self.config.gradient_noise, self.step, self.config.seed)
        for optimizer in self.optimizers:
            optimizer.step()
        self.step += 1
        if self.distributed is not None:
            self.distributed.after_step(self.model, self.step)
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
                    warnings.warn(
                        f"parameter {name!r} received a sparse gradient but is not in "
                        "model.sparse_parameters(); it is trained with dense updates",
                        stacklevel=2,
                    )
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
        if self._whole_epoch(self.epoch - 1):
            self.steps_per_epoch = self.steps_per_epoch or self.step_in_epoch
        self.step_in_epoch, self.epoch_loss_sum, self.epoch_targets = 0, 0.0, 0
        self.window_loss_sum, self.window_targets = 0.0, 0  # a window ends with its epoch
        valid_ppl = self.evaluate(self.valid_ids) if self.can_validate and self.valid_ids is not None else None
        self._watch_divergence(epoch_loss, f"training loss of epoch {self.epoch}")
        if valid_ppl is not None and not math.isfinite(valid_ppl):
            self._warn_divergence(f"validation perplexity after epoch {self.epoch} is {valid_ppl}")
        improved = valid_ppl is not None and (self.best_ppl is None or valid_ppl < self.best_ppl)
        if improved:
            self.best_ppl, self.best_epoch, self.bad_epochs = valid_ppl, self.epoch, 0
        elif valid_ppl is not None:
            self.bad_epochs += 1
        lr = self._lr_schedule.lr
        next_lr = self._lr_schedule.end_of_epoch(improved)
        if config.patience is not None and self.bad_epochs >= config.patience:
            self.stopped_early = True
        self.elapsed = time.perf_counter() - self._clock
        record = {
            "epoch": self.epoch,
            "train_loss": epoch_loss,
            "valid_ppl": valid_ppl,
            "lr": lr,
            "next_lr": next_lr,
            "steps": self.step,
            "tokens": self.tokens,
            "elapsed": self.elapsed,
        }
        self.history.append(record)
        self._log(
            {
                "event": "epoch",
                "epoch": self.epoch,
                "step": self.step,
                "tokens": self.tokens,
                "loss": epoch_loss,
                "lr": lr,
                "next_lr": next_lr,
                "tokens_per_s": self._tokens_per_s,
                "valid_ppl": valid_ppl,
                "best_valid_ppl": self.best_ppl,
                "elapsed": self.elapsed,
            }
        )
        if self._writes:
            shown = f"{valid_ppl:.2f}" if valid_ppl is not None else "n/a"
            line = f"epoch {self.epoch}: train loss {epoch_loss:.4f}, valid ppl {shown}, lr {lr:.3g}"
            if config.progress:
                tqdm.write(line, file=sys.stderr)
            else:  # no bar: the line goes to logging (the CLI shows it; a library user opts in)
                logger.info(line)
        self._save("last.pt")
        if improved:
            self._save("best.pt")

    # ------------------------------------------------------------------ logging and files
    def _log_window(self, tokens: int, seconds: float, bar: tqdm) -> None:
        """The step event of the steps since the last one. Its loss averages the whole window, a
        part before a resume included; its tokens/s (wall clock) the ``tokens`` this process
        trained in ``seconds``."""
        now = time.perf_counter()
        loss = self.window_loss_sum / max(1, self.window_targets)
        tokens_per_s = tokens / max(seconds, 1e-9)
        self.elapsed = now - self._clock
        self._watch_divergence(loss, f"training loss at step {self.step}")
        lr = self._lr_schedule.lr
        self._log(
            {
                "event": "step",
                "epoch": self.epoch + 1,
                "step": self.step,
                "tokens": self.tokens,
                "loss": loss,
                "lr": lr,
                "tokens_per_s": tokens_per_s,
                "elapsed": self.elapsed,
            }
        )
        bar.set_postfix_str(f"loss {loss:.4f} | {tokens_per_s:,.0f} tok/s | lr {lr:.3g}", refresh=False)
        self.window_loss_sum, self.window_targets = 0.0, 0

    def _watch_divergence(self, loss: float, what: str) -> None:
        """Warn (once) when the loss exceeds DIVERGENCE_FACTOR times the first one logged."""
        if self._first_loss is None:
            self._first_loss = loss
        elif loss > DIVERGENCE_FACTOR * self._first_loss + DIVERGENCE_MARGIN:
            self._warn_divergence(f"{what} is {loss:.4g}, up from {self._first_loss:.4g} at the start")

    def _warn_divergence(self, what: str) -> None:
        if not self._warned_divergence:
            self._warned_divergence = True
            warnings.warn(
                f"the run is diverging: {what}; a lower learning rate (now {self._lr_schedule.lr:.3g}) "
                "or clip_norm usually helps",
                DivergenceWarning,
                stacklevel=4,
            )

    def _log(self, event: dict[str, Any]) -> None:
        if self.out_dir is not None and self._writes:
            append_json_line(self.out_dir / "metrics.jsonl", event)

    def _truncate_metrics(self) -> None:
        """Drop events logged after the checkpoint being resumed; the resumed run logs them again."""
        path = self._run_dir / "metrics.jsonl"
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

    @property
    def _run_dir(self) -> Path:
        """``out_dir``, for the steps that only a run with one takes (saving, resuming, signals)."""
        if self.out_dir is None:
            raise RuntimeError("this step needs the trainer's out_dir, and it has none")
        return self.out_dir

    def _path(self, name: str) -> Path | None:
        if self.out_dir is None:
            return None
        path = self.out_dir / name
        return path if path.exists() else None

    def _save(self, name: str) -> None:
        if self.out_dir is None:
            return
        self.elapsed = time.perf_counter() - self._clock
        if self.distributed is None:
            model_state: dict[str, Any] | None = self.model.state_dict()
            optimizer_states: list[dict[str, Any] | None] = [optimizer.state_dict() for optimizer in self.optimizers]
        else:  # every rank takes part in gathering the one-process state; rank 0 writes it
            model_state = self.distributed.model_state(self.model)
            optimizer_states = [
                self.distributed.optimizer_state(optimizer, self.model) for optimizer in self.optimizers
            ]
        replicas = self.distributed.replica_states(self.model, self.optimizers) if self.distributed else None
        if self._writes:  # the writing rank holds every gathered state
            self._write_checkpoint(
                name, cast("dict[str, Any]", model_state), cast("list[dict[str, Any]]", optimizer_states), replicas
            )
        if self.distributed is not None:  # no rank goes on (to read it, to resume) before the file exists
            self.distributed.barrier()

    def _write_checkpoint(
        self,
        name: str,
        model_state: dict[str, Any],
        optimizer_states: list[dict[str, Any]],
        replicas: dict[str, Any] | None = None,
    ) -> None:
        extra = {"replicas": replicas} if replicas is not None else {}
        save_checkpoint(
            self._run_dir / name,
            {
                **extra,
                "model": model_state,
                "optimizers": optimizer_states,
                "schedule": self._lr_schedule.state_dict(),
                "rng": get_rng_state(),
                "position": {
                    "epoch": self.epoch,
                    "step_in_epoch": self.step_in_epoch,
                    "step": self.step,
                    "tokens": self.tokens,
                    "epoch_loss_sum": self.epoch_loss_sum,
                    "epoch_targets": self.epoch_targets,
                    "window_loss_sum": self.window_loss_sum,
                    "window_targets": self.window_targets,
                },
                "trainer": {
                    "steps_per_epoch": self.steps_per_epoch,
                    "best_ppl": self.best_ppl,
                    "best_epoch": self.best_epoch,
                    "bad_epochs": self.bad_epochs,
                    "stopped_early": self.stopped_early,
                    "history": self.history,
                    "elapsed": self.elapsed,
                    "first_logged_loss": self._first_loss,
                },
                "config": self.config.to_dict(),
                "meta": self.meta,
            },
        )
