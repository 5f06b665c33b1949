"""Learning-rate schedules by name.

The classic recipes: ``linear`` decays to ``min_lr`` over the run (word2vec's
``alpha -> min_alpha``, Mikolov et al. 2013), ``exponential`` multiplies by ``decay`` every epoch,
and ``plateau`` multiplies by ``decay`` whenever validation perplexity fails to improve (Mikolov
et al. 2010's RNNLM halves its rate when validation entropy stops improving). Every schedule has
the floor ``min_lr``.
"""

from __future__ import annotations

from typing import Any

from bigvocab.errors import ConfigError
from bigvocab.registry import SCHEDULES


class LRSchedule:
    """A constant rate; the registered kinds override :meth:`at_step` or :meth:`end_of_epoch`.

    Args:
        lr: the initial rate.
        decay: factor of ``exponential`` and ``plateau``.
        min_lr: floor of every kind and the end point of ``linear``.
        total_steps: length of the run in steps (``linear`` only).
    """

    #: whether the schedule follows validation perplexity (then a run needs validation data)
    needs_validation = False

    def __init__(self, lr: float, *, decay: float, min_lr: float, total_steps: int | None = None) -> None:
        self.base_lr, self.decay, self.min_lr = lr, decay, min_lr
        self.total_steps = total_steps
        self.lr = lr

    def at_step(self, step: int) -> float:
        """The rate for global step ``step`` (0-based)."""
        return self.lr

    def end_of_epoch(self, improved: bool) -> float:
        """The rate for the next epoch, given whether validation perplexity improved."""
        return self.lr

    def state_dict(self) -> dict[str, Any]:
        return {"lr": self.lr}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.lr = float(state["lr"])


@SCHEDULES.register("none")
class ConstantSchedule(LRSchedule):
    """The initial rate throughout."""


@SCHEDULES.register("linear")
class LinearSchedule(LRSchedule):
    """From lr down to min_lr in a straight line over the run's steps (word2vec's alpha)."""

    total_steps: int  # required here

    def __init__(self, lr: float, *, decay: float, min_lr: float, total_steps: int | None = None) -> None:
        if not total_steps:
            raise ConfigError("the linear schedule needs the number of steps in the run")
        super().__init__(lr, decay=decay, min_lr=min_lr, total_steps=total_steps)

    def at_step(self, step: int) -> float:
        fraction = min(1.0, step / self.total_steps)
        self.lr = self.base_lr - (self.base_lr - self.min_lr) * fraction
        return self.lr


@SCHEDULES.register("exponential")
class ExponentialSchedule(LRSchedule):
    """Times lr_decay after every epoch, down to min_lr."""

    def end_of_epoch(self, improved: bool) -> float:
        self.lr = max(self.min_lr, self.lr * self.decay)
        return self.lr


@SCHEDULES.register("plateau")
class PlateauSchedule(LRSchedule):
    """Times lr_decay after every epoch whose validation perplexity did not improve (Mikolov et al. 2010)."""

    needs_validation = True

    def end_of_epoch(self, improved: bool) -> float:
        if not improved:
            self.lr = max(self.min_lr, self.lr * self.decay)
        return self.lr


def make_schedule(kind: str, lr: float, *, decay: float, min_lr: float, total_steps: int | None = None) -> LRSchedule:
    """The registered schedule ``kind`` (see the module docstring)."""
    return SCHEDULES.create(kind, lr, decay=decay, min_lr=min_lr, total_steps=total_steps)
