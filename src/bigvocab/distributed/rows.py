"""Parameters whose rows are split over ranks, and the modules that hold them.

Every vocabulary-parallel layer keeps some parameters whole on every rank (replicated) and holds
only some rows of others: the linear rows of a range of the vocabulary, or whatever rows a layer
with its own structure keeps when it splits itself (its ``shard_vocabulary``; the sharded forms
are in :mod:`bigvocab.outputs.parallel`). A :class:`RowLayout` says which
rows of the one-process parameter each rank holds, in its local order, so one piece of code
gathers a shard into the one-process tensor and cuts it back (checkpoints, optimiser state) for
every layer: each layer declares its layouts (:meth:`RowSharded.sharded_rows`) and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from bigvocab.distributed.groups import VocabShard, gather_blocks, vocab_shard
from bigvocab.errors import CheckpointError, ConfigError


def even_rows(num_rows: int, group: Any, *, what: str) -> VocabShard:
    """This rank's contiguous share of a matrix's ``num_rows`` rows, split evenly over ``group``
    (sizes differ by at most one); ``what`` names the matrix in the error when it cannot be."""
    try:
        return vocab_shard(num_rows, group)
    except ConfigError as error:
        raise ConfigError(f"{what}: {error}") from None


@dataclass(frozen=True)
class RowLayout:
    """Which rows of a one-process (R, ...) parameter each rank of ``group`` holds.

    ``rows[r]`` lists the one-process row indices rank r holds, in its local order; a row may be
    held by several ranks (replicated rows, equal everywhere).
    """

    group: Any
    rank: int
    rows: tuple[Tensor, ...]
    total: int

    @classmethod
    def contiguous(cls, shard: VocabShard) -> RowLayout:
        """The rows ``[start, stop)`` of each rank of ``shard``'s partition."""
        bounds = shard.partition.boundaries
        rows = tuple(torch.arange(a, b) for a, b in zip(bounds, bounds[1:]))
        return cls(shard.group, shard.rank, rows, shard.partition.num_classes)

    @property
    def local_size(self) -> int:
        return self.rows[self.rank].numel()

    def gather(self, local: Tensor, *, dst: int | None) -> Tensor | None:
        """The one-process tensor from every rank's ``local`` rows: on rank ``dst`` of the group
        (None elsewhere), or on every rank with ``dst=None``. Every rank must call it."""
        blocks = gather_blocks(local, [r.numel() for r in self.rows], self.group, self.rank, dim=0, dst=dst)
        if blocks is None:
            return None
        full = local.new_empty(self.total, *local.shape[1:])
        for rows, block in zip(self.rows, blocks):
            full[rows.to(full.device)] = block
        return full

    def cut(self, full: Tensor, *, key: str) -> Tensor:
        """This rank's rows of the one-process tensor ``full`` (``key`` names it in the error)."""
        if full.shape[0] != self.total:
            raise CheckpointError(
                f"{key} has {full.shape[0]} rows but the vocabulary-parallel layer splits {self.total}"
            )
        return full.index_select(0, self.rows[self.rank].to(full.device))


class RowSharded:
    """Mixin of a module holding row-split parameters: it declares their layouts, and its state
    dict carries the layout it was written under, so a shard never loads into another one."""

    def sharded_rows(self) -> dict[str, RowLayout]:
        """Parameter name (relative to this module) -> its layout, for each row-split parameter."""
        raise NotImplementedError

    def layout_description(self) -> dict[str, Any]:
        """What identifies this rank's layout: equal descriptions hold the same rows."""
        layouts = self.sharded_rows()
        any_layout = next(iter(layouts.values()))
        return {
            "rank": any_layout.rank,
            "world_size": len(any_layout.rows),
            "rows": {name: [r.numel() for r in layout.rows] for name, layout in layouts.items()},
        }

    def get_extra_state(self) -> dict[str, Any]:
        return self.layout_description()

    def set_extra_state(self, state: dict[str, Any]) -> None:
        ours = self.layout_description()
        if state != ours:
            raise CheckpointError(
                f"this checkpoint shard was written by rank {state.get('rank')} of {state.get('world_size')} "
                f"ranks (rows per rank {state.get('rows')}), but this is rank {ours['rank']} of "
                f"{ours['world_size']} (rows per rank {ours['rows']}); resume with the same number of "
                "processes, or load the gathered one-process checkpoint"
            )
