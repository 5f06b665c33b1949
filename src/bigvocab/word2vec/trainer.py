"""``EngineTrainer``: the :class:`~bigvocab.train.Trainer` whose epochs run on the compiled engine.

:func:`bigvocab.runs.new_run` (and so ``bigvocab train --model skipgram|cbow``) uses it
when the engine applies (see :func:`engine_applies` and :func:`trainer_class`), so a run keeps
everything the trainer gives: ``last.pt`` after every epoch and on SIGINT/SIGTERM (mid-epoch,
``step_in_epoch`` then being the position in the word stream), ``metrics.jsonl``, validation
perplexity, resume, export. An epoch is one trainer step; the learning rate decays linearly with
the words read, from ``lr`` to ``min_lr`` over all epochs (word2vec's schedule). Sentences end at the ``</s>`` token when the
vocabulary has one (windows stop there, and ``</s>`` is not trained as a word); other tokens,
``<unk>`` included, are words as on the torch path.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from bigvocab.errors import ConfigError
from bigvocab.train import PYTHON_SPELLING, TrainConfig, Trainer
from bigvocab.word2vec.engine import Schedule, engine_arrays, engine_unsupported, train_epoch
from bigvocab.word2vec.progress import progress_bar

#: Tokens whose loss is measured after an engine epoch (the engine itself computes no loss).
LOSS_SAMPLE_TOKENS = 20000


def engine_applies(model, config: TrainConfig) -> str | None:
    """Why the engine cannot run this training (None when it can): it needs a model and output
    layer it compiles, the CPU, plain SGD on the linear schedule, and whole epochs."""
    reason = engine_unsupported(model)
    if reason is None and config.device != "cpu":
        reason = "the engine runs on the CPU"
    if reason is None and (config.optimizer != "sgd" or config.lr_schedule != "linear"):
        reason = "the engine trains by SGD with the linear learning-rate schedule"
    if reason is None and (
        config.max_steps or config.checkpoint_every or config.clip_norm or config.gradient_noise or config.curriculum
    ):
        reason = (
            "max_steps, checkpoint_every, clip_norm, gradient_noise and curriculum act on the torch path's "
            "minibatch steps"
        )
    return reason


class EngineTrainer(Trainer):
    """A Trainer whose epochs are engine passes; set :attr:`workers` and :attr:`sentence_end`."""

    #: The engine trains word models on a stream of ids, never on labelled rows.
    train_ids: torch.Tensor
    #: Hogwild! threads.
    workers: int = 1
    #: The id that ends a sentence in the training ids (becomes the engine's -1), or None.
    sentence_end: int | None = None

    #: A step of this trainer is a whole pass of the engine over the corpus.
    steps_are_passes = True

    def _count_steps(self, epoch: int | None = None) -> int:
        return 1

    def position(self) -> str:
        """Where the run stands: "word 120,000 of 928,954 in epoch 2", or "the end of epoch 3"."""
        if not self.step_in_epoch:
            return f"the end of epoch {self.epoch}"
        return f"word {self.step_in_epoch:,} of {self.train_ids.numel():,} in epoch {self.epoch + 1}"

    def _stream(self) -> tuple[np.ndarray, int]:
        stream = self.train_ids.cpu().numpy().astype(np.int32)
        if self.sentence_end is not None:
            stream[stream == self.sentence_end] = -1
        return stream, int((stream >= 0).sum())

    def _train_epoch(self) -> bool:
        """The epoch, or its rest from the stream position ``step_in_epoch`` that a signal's save
        recorded. SIGINT/SIGTERM stop the threads after their chunks (about 10k words) and save
        ``last.pt`` there through the trainer's atomic checkpoint."""
        config = self.config
        stream, words = self._stream()
        schedule = Schedule(config.lr, config.min_lr, words * config.epochs)
        self._lr_schedule.at_step(self.step)  # the lr logged for the epoch: the one it starts with
        self.model.train()
        started = time.perf_counter()
        with progress_bar(
            words,
            config.progress,
            desc=f"epoch {self.epoch + 1}/{config.epochs}",
            initial=self.tokens - self.epoch * words,
        ) as bar:
            done = train_epoch(
                engine_arrays(self.model),
                stream,
                schedule=schedule,
                words_before=self.tokens,
                epoch=self.epoch,
                workers=self.workers,
                seed=config.seed,
                start=self.step_in_epoch,
                should_stop=lambda: self._stop_signal is not None,
                bar=bar,
            )
        self._tokens_per_s = done.read / max(time.perf_counter() - started, 1e-9)
        self.tokens += done.read
        self.step_in_epoch = done.position
        if done.position < stream.shape[0]:  # stopped by a signal part-way
            self._save("last.pt")
            self._stop_if_signalled(self._agreed_signal())
        loss, targets = self._sampled_loss()
        self.step += 1
        self.epoch_loss_sum, self.epoch_targets = loss * targets, targets
        return True

    @torch.no_grad()
    def _sampled_loss(self) -> tuple[float, int]:
        """The training loss after the epoch on the first tokens (the engine computes none)."""
        total, count = 0.0, 0
        ids = self.train_ids[:LOSS_SAMPLE_TOKENS]
        for batch in self.model.batches(ids, max(self.config.batch_size, 1024), train=False):
            total += float(self.model.loss(batch)) * int(batch["target"].numel())
            count += int(batch["target"].numel())
        return (total / count if count else 0.0), count


def trainer_class(
    model, config: TrainConfig, workers: int | None = None, spelling: Mapping[str, str] = PYTHON_SPELLING
) -> type[Trainer]:
    """:class:`EngineTrainer` where the engine can train ``model`` under ``config``, else the torch
    :class:`Trainer`; ``workers`` (engine threads) given for a run the engine cannot train is a
    :class:`ConfigError` that says why (named as ``spelling`` writes it)."""
    reason = engine_applies(model, config)
    if reason is not None and workers is not None:
        raise ConfigError(
            f"{spelling['workers']} sets the threads of the word2vec engine, which cannot train this run: {reason}"
        )
    return Trainer if reason is not None else EngineTrainer


def configure_engine(trainer: Trainer, workers: int | None, vocab: Any) -> None:
    """Give an EngineTrainer its threads and the vocabulary's sentence end (no-op otherwise)."""
    if isinstance(trainer, EngineTrainer):
        trainer.workers = workers or 1
        trainer.sentence_end = vocab.index("</s>") if "</s>" in vocab else None
