"""Curriculum learning (Bengio et al. 2009): the first epochs train on the easiest part of the
corpus only, a growing part each epoch, and from epoch ``curriculum_epochs`` on on all of it.

The corpus is cut into units -- sentences where the stream marks their ends, otherwise segments
of :data:`SEGMENT` tokens -- and a registered *measure* scores each unit's difficulty:

* ``frequency``: the rarest word of the unit. Ids are ranks by descending training frequency, so
  this is the unit's largest id; keeping the easiest units first is Bengio et al.'s language-model
  curriculum, whose vocabulary grows from the most frequent words each pass.
* ``length``: the unit's length in tokens (short sentences first); it needs sentence ends.

Epoch e < E = ``curriculum_epochs`` keeps the easiest (e + 1) / (E + 1) of the units (ties broken
by position), in corpus order; the model's batching then shuffles their examples as in any epoch, and
from epoch E on every unit is used. The selection depends on the epoch alone, so a resumed run
sees the same data as an uninterrupted one.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from bigvocab.errors import ConfigError
from bigvocab.registry import CURRICULA

#: Tokens per unit when the stream has no sentence ends.
SEGMENT = 32

Measure = Callable[[list[Tensor]], Tensor]


@CURRICULA.register("frequency")
def rarest_word(units: list[Tensor]) -> Tensor:
    """The unit's rarest word: its largest id (ids rank words by descending frequency)."""
    return torch.stack([unit.max() for unit in units])


rarest_word.needs_sentences = False  # type: ignore[attr-defined]


@CURRICULA.register("length")
def unit_length(units: list[Tensor]) -> Tensor:
    """The unit's length in tokens."""
    return torch.tensor([unit.numel() for unit in units])


unit_length.needs_sentences = True  # type: ignore[attr-defined]


def split_units(ids: Tensor, sentence_end: int | None) -> list[Tensor]:
    """Sentences (each with its end mark) where ``sentence_end`` occurs in ``ids``, else segments."""
    if sentence_end is not None:
        ends = (ids == sentence_end).nonzero().flatten() + 1
        if ends.numel():
            bounds = [0, *ends.tolist()]
            if bounds[-1] < ids.numel():
                bounds.append(ids.numel())
            return [ids[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]
    return list(torch.split(ids, SEGMENT))


class Curriculum:
    """The training ids of each epoch under the curriculum ``measure`` over ``epochs`` epochs."""

    def __init__(self, measure: str, epochs: int, ids: Tensor, sentence_end: int | None = None) -> None:
        score = CURRICULA.get(measure)
        self.units = split_units(ids, sentence_end)
        has_sentences = sentence_end is not None and bool((ids == sentence_end).any())
        if score.needs_sentences and not has_sentences:
            usable = [name for name in CURRICULA.names() if not CURRICULA.get(name).needs_sentences]
            raise ConfigError(
                f"curriculum {measure!r} measures sentences, and this corpus marks no sentence ends; "
                f"use {', '.join(usable)}"
            )
        difficulty = score(self.units).double()
        # stable: equally hard units keep their corpus order
        self.order = torch.sort(difficulty, stable=True).indices
        self.epochs = epochs
        self.ids = ids

    def epoch_ids(self, epoch: int) -> Tensor:
        """The ids epoch ``epoch`` (from 0) trains on."""
        if epoch >= self.epochs:
            return self.ids
        kept = max(1, round(len(self.units) * (epoch + 1) / (self.epochs + 1)))
        chosen = torch.sort(self.order[:kept]).values  # back in corpus order
        return torch.cat([self.units[i] for i in chosen.tolist()])
